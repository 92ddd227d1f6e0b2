"""ug.onnx.load's quantization, bit and unsigned-integer rows against onnxruntime, beyond the
node suite's cases: per-axis and blocked scales, int16 and uint16 zero points, per-channel
integer convolutions, uint64 order and wraparound; gradients through DequantizeLinear's scale
(torch); and the clear errors for what is refused."""
import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug

rng = np.random.default_rng(0)
ELEM = {np.dtype(k): v for k, v in {
    np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int64: TensorProto.INT64,
    np.int32: TensorProto.INT32, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8,
    np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16, np.uint32: TensorProto.UINT32,
    np.uint64: TensorProto.UINT64, bool: TensorProto.BOOL}.items()}


def model(nodes, feeds, consts, outputs, opset):
    inputs = [helper.make_tensor_value_info(k, ELEM[v.dtype], v.shape) for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(name, elem, None) for name, elem in outputs]
    graph = helper.make_graph(nodes, "g", inputs, outs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10).SerializeToString()


def run_both(nodes, feeds, consts, outputs, opset=21, integer_products=False):
    """Against onnxruntime, or onnx's reference where onnxruntime has no kernel for the type.
    integer_products: against onnx's reference alone, which multiplies and adds in exact
    integers: onnxruntime's uint8 x int8 products add pairs of products in saturating int16
    (vpmaddubsw) on CPUs without AVX-VNNI, so its MatMulInteger and integer convolutions
    are off by thousands there (seen on an AVX2 EPYC)."""
    data = model(nodes, feeds, consts, outputs, opset)
    try:
        session = ReferenceEvaluator(data) if integer_products else ort.InferenceSession(data)
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        session = ReferenceEvaluator(data)
    expected = session.run(None, feeds)
    actual = ug.onnx.load_bytes(data).forward(*[ug.tensor(v) for v in feeds.values()])
    actual = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(actual, expected):
        assert a.numpy().dtype == e.dtype
        np.testing.assert_array_equal(a.numpy(), e)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


@pytest.mark.parametrize("zp_dtype", [np.uint8, np.int8, np.uint16, np.int16])
def test_quantize_and_dequantize_per_axis(zp_dtype):
    x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    scale = np.array([0.5, 0.25, 1.5], np.float32)
    zp = np.array([3, 0, 7], zp_dtype)
    elem = ELEM[np.dtype(zp_dtype)]
    run_both([node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1), node("DequantizeLinear", ["q", "s", "z"], axis=1)],
             {"x": x}, {"s": scale, "z": zp}, [("y", TensorProto.FLOAT)])
    run_both([node("QuantizeLinear", ["x", "s", "z"], axis=1)], {"x": x}, {"s": scale, "z": zp}, [("y", elem)])


def test_blocked_quantization():
    x = (rng.standard_normal((3, 6)) * 20).astype(np.float32)
    scale = np.abs(rng.standard_normal((3, 2))).astype(np.float32) + 0.1
    zp = rng.integers(-5, 5, (3, 2)).astype(np.int8)
    run_both([node("QuantizeLinear", ["x", "s", "z"], axis=1, block_size=3)], {"x": x}, {"s": scale, "z": zp},
             [("y", TensorProto.INT8)])
    q = rng.integers(-128, 127, (3, 6)).astype(np.int8)
    run_both([node("DequantizeLinear", ["q", "s", "z"], axis=1, block_size=3)], {"q": q}, {"s": scale, "z": zp},
             [("y", TensorProto.FLOAT)])


def test_matmul_integer_with_per_column_zero_points():
    a = rng.integers(0, 255, (2, 4, 5)).astype(np.uint8)
    b = rng.integers(-128, 127, (5, 3)).astype(np.int8)
    run_both([node("MatMulInteger", ["a", "b", "za", "zb"])], {"a": a, "b": b},
             {"za": np.array([7], np.uint8), "zb": np.array([-1, 0, 5], np.int8)}, [("y", TensorProto.INT32)],
             opset=13, integer_products=True)
    with pytest.raises(ValueError, match="zero point of A must be a scalar"):
        load_and_run([node("MatMulInteger", ["a", "b", "za"])], {"a": a[0], "b": b},
                     {"za": np.array([1, 2, 3, 4], np.uint8)}, [("y", TensorProto.INT32)], opset=13)


def test_conv_integer_and_qlinear_conv_per_channel():
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(-100, 100, (3, 2, 3, 3)).astype(np.int8)
    run_both([node("ConvInteger", ["x", "w", "zx"], pads=[1, 1, 1, 1], strides=[2, 1])], {"x": x, "w": w},
             {"zx": np.array(128, np.uint8)}, [("y", TensorProto.INT32)], opset=13, integer_products=True)
    consts = {"xs": np.array(0.02, np.float32), "xz": np.array(120, np.uint8),
              "ws": np.array([0.01, 0.02, 0.005], np.float32), "wz": np.zeros(3, np.int8),
              "ys": np.array(0.05, np.float32), "yz": np.array(10, np.uint8),
              "bias": np.array([100, -200, 0], np.int32)}
    run_both([node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], pads=[1, 1, 1, 1])],
             {"x": x, "w": w}, consts, [("y", TensorProto.UINT8)], opset=13, integer_products=True)


def test_dynamic_quantize_linear_of_an_all_positive_input():
    x = np.abs(rng.standard_normal((3, 4))).astype(np.float32) + 1
    run_both([node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": x}, {},
             [("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8)], opset=13)


@pytest.mark.parametrize("op", ["Less", "GreaterOrEqual", "Max", "Min", "Add", "Mul", "Sub", "BitwiseXor", "Equal"])
def test_uint64_order_and_wraparound_past_two_to_the_63(op):
    a = np.array([0, 1, 2**63, 2**64 - 1, 2**63 - 1, 5], np.uint64)
    b = np.array([2**64 - 1, 1, 2**63 - 1, 3, 2**63, 2**62], np.uint64)
    out = TensorProto.BOOL if op in ("Less", "GreaterOrEqual", "Equal") else TensorProto.UINT64
    run_both([node(op, ["a", "b"])], {"a": a, "b": b}, {}, [("y", out)], opset=18)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
@pytest.mark.parametrize("op", ["Sub", "Mul", "Div", "Mod", "Max"])
def test_uint16_and_uint32_wrap_as_onnxruntime(dtype, op):
    top = np.iinfo(dtype).max
    a = np.array([0, 1, top, top - 3, 70000 % top, 9], dtype)
    b = np.array([1, 3, top, 2, 7, top // 2], dtype)
    run_both([node(op, ["a", "b"])], {"a": a, "b": b}, {}, [("y", ELEM[np.dtype(dtype)])], opset=18)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "Abs", "Where", "Clip"])
def test_unsigned_reductions_abs_where_and_clip_as_onnx_reference(dtype, op):
    a = np.array([[1, 9, np.iinfo(dtype).max // 3], [5, 7, np.iinfo(dtype).max // 2]], dtype)
    feeds = {"a": a}
    inputs = ["a"]
    if op == "Where":
        feeds = {"c": a > 6, "a": a, "b": a[::-1].copy()}
        inputs = ["c", "a", "b"]
    elif op == "Clip":
        feeds = {"a": a, "lo": np.array(6, dtype), "hi": np.array(np.iinfo(dtype).max // 2 - 1, dtype)}
        inputs = ["a", "lo", "hi"]
    data = model([node(op, inputs, **({"keepdims": 0} if op.startswith("Reduce") else {}))], feeds, {},
                 [("y", ELEM[np.dtype(dtype)])], 18)
    expected = ReferenceEvaluator(data).run(None, feeds)[0]
    got = ug.onnx.load_bytes(data).forward(*[ug.tensor(v) for v in feeds.values()]).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_bit_shift_of_unsigned_types():
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        a = np.array([1, 255, 7, 128], dtype)
        b = np.array([1, 3, 0, 7], dtype)
        for direction in ("LEFT", "RIGHT"):
            run_both([node("BitShift", ["a", "b"], direction=direction)], {"a": a, "b": b}, {},
                     [("y", ELEM[np.dtype(dtype)])], opset=18)


def test_gradient_through_dequantize_linear_reaches_the_scale():
    q = rng.integers(-128, 127, (4, 3)).astype(np.int8)
    zp = np.array([1, -2, 3], np.int8)
    data = model([node("DequantizeLinear", ["q", "s", "z"], axis=1)], {"q": q, "s": np.ones(3, np.float32)}, {"z": zp},
                 [("y", TensorProto.FLOAT)], 21)
    m = ug.onnx.load_bytes(data)
    s = ug.tensor([0.5, 0.25, 2.0], requires_grad=True)
    m.forward(ug.tensor(q), s).sum().backward()
    ts = torch.tensor([0.5, 0.25, 2.0], requires_grad=True)
    ((torch.from_numpy(q).float() - torch.from_numpy(zp).float()) * ts).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-6)


def load_and_run(nodes, feeds, consts, outputs, opset=21):
    m = ug.onnx.load_bytes(model(nodes, feeds, consts, outputs, opset))
    return m.forward(*[ug.tensor(v) for v in feeds.values()])


def test_refusals_name_the_node_and_the_reason():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="QuantizeLinear node .*float8|element type FLOAT8"):
        load_and_run([node("QuantizeLinear", ["x", "s"], output_dtype=TensorProto.FLOAT8E4M3FN)], {"x": x},
                     {"s": np.array(1.0, np.float32)}, [("y", TensorProto.FLOAT8E4M3FN)])
    with pytest.raises(ValueError, match="one value per index of axis 1"):
        load_and_run([node("QuantizeLinear", ["x", "s"], axis=1)], {"x": x}, {"s": np.ones(2, np.float32)},
                     [("y", TensorProto.UINT8)])
    with pytest.raises(ValueError, match="direction must be LEFT or RIGHT"):
        load_and_run([node("BitShift", ["a", "a"], direction="UP")], {"a": np.ones(2, np.uint8)}, {},
                     [("y", TensorProto.UINT8)], opset=18)
    with pytest.raises(ValueError, match="2\\^63 or more"):
        big = np.array([2**63 + 5], np.uint64)
        load_and_run([node("Div", ["a", "a"])], {"a": big}, {}, [("y", TensorProto.UINT64)], opset=18)
    with pytest.raises(TypeError, match="same|one bit width"):
        load_and_run([node("BitCast", ["a"], to=TensorProto.INT32)], {"a": np.ones(2, np.int16)}, {},
                     [("y", TensorProto.INT32)], opset=26)
