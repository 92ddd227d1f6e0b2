"""The importer's Conv -> Relu and Conv -> Add -> Relu fusion (onnx/fuse_conv.cpp, one UgConvRelu
node whose convolution adds the residual and applies relu in its epilogue): the fused run gives
the bits of the three ops run one by one (the same node run where a gradient is wanted, which
composes them) and matches torch; chains whose intermediate is read elsewhere stay unfused;
residuals that broadcast, grouped and dilated convolutions, 1-d convolutions and gradients are
handled. Under UG_CPU_ISA=avx2 or generic the epilogue is the GEMM paths' pass after the
convolution, checked the same way."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from onnx import TensorProto, helper

import unigrad as ug
from reference import assert_close, sum_atol

F = TensorProto.FLOAT


def model(conv_attrs, residual=None, bias=True, extra_outputs=(), extra_nodes=(), add_first=False):
    """x, w[, b][, r] -> Relu(Conv(x, w, b) [+ r]) as an ONNX model the importer loads."""
    names = ["x", "w"] + (["b"] if bias else [])
    nodes = [helper.make_node("Conv", names, ["y"], **conv_attrs)]
    inputs = list(names)
    if residual is not None:
        nodes.append(helper.make_node("Add", ["r", "y"] if add_first else ["y", "r"], ["s"]))
        inputs.append("r")
    nodes.append(helper.make_node("Relu", ["s" if residual is not None else "y"], ["z"]))
    nodes += list(extra_nodes)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, None) for n in inputs],
                          [helper.make_tensor_value_info(n, F, None) for n in ["z", *extra_outputs]])
    return ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def nodes_of(m):
    return int(repr(m).split("nodes=")[1].split(",")[0])


def run(m, arrays, grad=False):
    args = [ug.tensor(a, requires_grad=grad) for a in arrays]
    out = m.forward(*args)
    return [o.detach().numpy() for o in (out if isinstance(out, (list, tuple)) else [out])], args


def torch_ref(arrays, conv_attrs, residual, nd=2):
    x, w, *rest = (torch.tensor(a, dtype=torch.float64) for a in arrays)
    b = rest.pop(0) if len(rest) > (residual is not None) else None
    pads = conv_attrs.get("pads", [0] * 2 * nd)
    conv = TF.conv2d if nd == 2 else TF.conv1d
    y = conv(x, w, b, stride=conv_attrs.get("strides", 1), padding=pads[:nd],
             dilation=conv_attrs.get("dilations", 1), groups=conv_attrs.get("group", 1))
    if residual is not None:
        y = y + rest[0]
    return torch.relu(y).numpy()


CASES = [  # N, C, O, kernel, stride, pad, H, W, group, dilation
    (1, 64, 64, (3, 3), (1, 1), (1, 1), 14, 14, 1, 1),   # ResNet's 3x3: the direct kernel
    (2, 5, 70, (3, 3), (2, 2), (1, 1), 13, 11, 1, 1),    # strided, 64 + 6 output channels
    (1, 32, 16, (1, 1), (2, 2), (0, 0), 9, 10, 1, 1),    # 1x1 strided
    (1, 3, 64, (7, 7), (2, 2), (3, 3), 37, 40, 1, 1),    # a stem
    (1, 3, 1, (3, 3), (1, 1), (1, 1), 8, 8, 1, 1),       # one output channel: OpenBLAS, then the pass
    (2, 8, 16, (3, 3), (1, 1), (1, 1), 10, 10, 2, 1),    # grouped
    (1, 16, 16, (3, 3), (1, 1), (2, 2), 11, 9, 1, 2),    # dilated
    (2, 64, 64, (3, 3), (1, 1), (1, 1), 56, 56, 1, 1),   # a large plane: Winograd, epilogue fused
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_conv_relu_matches_the_ops_and_torch(case, residual, bias):
    N, C, O, k, s, p, H, W, group, dil = case
    attrs = {"strides": list(s), "pads": list(p) * 2, "dilations": [dil, dil], "group": group}
    m = model(attrs, residual=0 if residual else None, bias=bias)
    assert nodes_of(m) == 1
    rng = np.random.default_rng(C + O + residual)
    x = rng.uniform(-1, 1, (N, C, H, W)).astype(np.float32)
    x[0, 0, 1, 1] = np.nan  # relu keeps a NaN, as the Relu op does
    arrays = [x, rng.uniform(-1, 1, (O, C // group) + k).astype(np.float32)]
    if bias:
        arrays.append(rng.uniform(-1, 1, (O,)).astype(np.float32))
    Ho = (H + 2 * p[0] - dil * (k[0] - 1) - 1) // s[0] + 1
    Wo = (W + 2 * p[1] - dil * (k[1] - 1) - 1) // s[1] + 1
    if residual:
        arrays.append(rng.uniform(-1, 1, (N, O, Ho, Wo)).astype(np.float32))
    with ug.profiler.profile() as prof:
        (fused,), _ = run(m, arrays)
    keys = {row.key for row in prof.key_averages()}
    assert "conv2d_relu" in keys and not keys & {"conv", "add", "relu"}  # one kernel
    with ug.profiler.profile() as prof:
        (composed,), _ = run(m, arrays, grad=True)  # a gradient wanted: the three ops, one by one
    assert {"conv", "relu"} <= {row.key for row in prof.key_averages()}
    assert fused.tobytes() == composed.tobytes()
    # each output sums C / group * kh * kw products, the bias and the residual
    n = C // group * k[0] * k[1] + bias + residual
    terms = torch_ref([np.abs(np.nan_to_num(a)) for a in arrays], attrs, 0 if residual else None)
    expected = torch_ref(arrays, attrs, 0 if residual else None)
    assert_close(fused, expected, rtol=1e-6, atol=1e-6 + sum_atol("float32", n, terms))


def test_the_add_may_take_the_convolution_second():
    attrs = {"pads": [1, 1, 1, 1]}
    m = model(attrs, residual=0, add_first=True)
    assert nodes_of(m) == 1
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((1, 16, 6, 6), (32, 16, 3, 3), (32,), (1, 32, 6, 6))]
    (fused,), _ = run(m, arrays)
    (composed,), _ = run(m, arrays, grad=True)
    assert fused.tobytes() == composed.tobytes()


def test_a_residual_that_broadcasts_is_added_by_the_add():
    attrs = {"pads": [1, 1, 1, 1]}
    m = model(attrs, residual=0)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 16, 6, 6), (32, 16, 3, 3), (32,), (1, 32, 1, 6))]
    (fused,), _ = run(m, arrays)
    expected = torch_ref(arrays, attrs, 0)
    assert fused.shape == (2, 32, 6, 6)
    np.testing.assert_allclose(fused, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):  # one that does not broadcast fails as the Add would
        m.forward(*[ug.tensor(a) for a in arrays[:3]], ug.zeros(1, 3, 1, 6))


def test_an_intermediate_read_elsewhere_is_not_fused():
    attrs = {"pads": [1, 1, 1, 1]}
    # the convolution's output is also a graph output; the sum is read by a second node
    assert nodes_of(model(attrs, extra_outputs=["y"])) == 2
    assert nodes_of(model(attrs, residual=0, extra_outputs=["s"])) == 3
    m = model(attrs, residual=0, extra_outputs=["t"], extra_nodes=[helper.make_node("Neg", ["y"], ["t"])])
    assert nodes_of(m) == 4
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 5, 5), (8, 4, 3, 3), (8,), (1, 8, 5, 5))]
    z, t = run(m, arrays)[0]
    expected = torch_ref(arrays, attrs, 0)
    np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-5)


def test_one_dimensional_and_asymmetric_padding_run_the_ops():
    rng = np.random.default_rng(4)
    m = model({"pads": [1, 1]})
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 9), (6, 4, 3), (6,))]
    (z,), _ = run(m, arrays)
    np.testing.assert_allclose(z, torch_ref(arrays, {"pads": [1, 1]}, None, nd=1), rtol=1e-5, atol=1e-5)
    m = model({"pads": [0, 1, 2, 0]})
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 6, 6), (6, 4, 3, 3), (6,))]
    (z,), _ = run(m, arrays)
    xp = np.pad(arrays[0], ((0, 0), (0, 0), (0, 2), (1, 0)))
    np.testing.assert_allclose(z, torch_ref([xp, *arrays[1:]], {}, None), rtol=1e-5, atol=1e-5)


def test_gradients_flow_through_the_fused_node():
    m = model({"pads": [1, 1, 1, 1]}, residual=0)
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 5, 5), (8, 4, 3, 3), (8,), (1, 8, 5, 5))]
    args = [ug.tensor(a, requires_grad=True) for a in arrays]
    m.forward(*args).sum().backward()
    targs = [torch.tensor(a, requires_grad=True) for a in arrays]
    torch.relu(TF.conv2d(targs[0], targs[1], targs[2], padding=1) + targs[3]).sum().backward()
    for u, t in zip(args, targs):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_bad_shapes_name_the_node():
    m = model({"pads": [1, 1, 1, 1]}, residual=0)
    with pytest.raises(ValueError, match="conv2d"):
        m.forward(ug.zeros(1, 3, 5, 5), ug.zeros(8, 4, 3, 3), ug.zeros(8), ug.zeros(1, 8, 5, 5))


@pytest.mark.parametrize("also_output", [False, True])
def test_a_residual_made_in_the_graph_is_written_only_when_it_dies(also_output):
    """A residual the graph computed and reads for the last time takes the result in place;
    one that is also a graph output keeps its value."""
    nodes = [helper.make_node("Neg", ["r0"], ["r"]), helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1] * 4),
             helper.make_node("Add", ["y", "r"], ["s"]), helper.make_node("Relu", ["s"], ["z"])]
    outputs = ["z", "r"] if also_output else ["z"]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, None) for n in ["r0", "x", "w", "b"]],
                          [helper.make_tensor_value_info(n, F, None) for n in outputs])
    m = ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    assert nodes_of(m) == 2
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((1, 8, 5, 5), (1, 4, 5, 5), (8, 4, 3, 3), (8,))]
    with ug.profiler.profile() as prof:
        fused, _ = run(m, arrays)
    assert ("clone" in {row.key for row in prof.key_averages()}) == also_output  # a copy only when kept
    composed, _ = run(m, arrays, grad=True)
    assert [a.tobytes() for a in fused] == [a.tobytes() for a in composed]
    if also_output:
        np.testing.assert_array_equal(fused[1], -arrays[0])
