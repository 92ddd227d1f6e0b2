"""Dynamic quantization (ug.ao.quantization.quantize_dynamic) against torch 2.13's on its x86
engine: the same weight integers and scales, the same activation quantization (uint8 from the
input's own range, reduce_range=True: 7 bits, as torch's dynamic Linear asks on x86), so the
outputs agree to float rounding; the int8 GEMM's exact sums on both kernels; ONNX export in
onnxruntime.quantization's form, run by onnxruntime and imported back."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import unigrad as ug

# torch 2.13 deprecates torch.ao.quantization and its quantized tensors; they are the reference.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation:UserWarning")]
tq = torch.ao.quantization


def torch_twin(model):
    """torch's Sequential of Linear / ReLU with model's weights."""
    layers = []
    for m in model.children():
        if isinstance(m, ug.nn.Linear):
            t = torch.nn.Linear(m.in_features, m.out_features)
            t.weight.data = torch.tensor(m.weight.detach().numpy())
            t.bias.data = torch.tensor(m.bias.detach().numpy())
            layers.append(t)
        else:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def mlp(sizes, seed=0):
    ug.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [ug.nn.Linear(a, b)] + ([ug.nn.ReLU()] if i < len(sizes) - 2 else [])
    return ug.nn.Sequential(*layers)


def step_bound(x, q):
    """|quantized - float| for one DynamicQuantizedLinear on x: half an activation step times
    sum|w| plus half a weight step times sum|x| plus the product of the half steps, per entry."""
    x = np.asarray(x, np.float64)
    lo, hi = min(x.min(), 0), max(x.max(), 0)
    sx = (hi - lo) / 127  # reduce_range: [0, 127]
    w = q.weight().numpy().astype(np.float64)
    sw = np.broadcast_to(q.weight_scale().numpy().astype(np.float64), (w.shape[0],))
    k = x.shape[-1]
    return 0.5 * sx * np.abs(w).sum(1) + 0.5 * np.abs(x).sum(-1, keepdims=True) * sw + k * sx * sw / 4 + 1e-5


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_dynamic_matches_torch(per_channel):
    model = mlp([20, 32, 5])
    qconfig = tq.per_channel_dynamic_qconfig if per_channel else tq.default_dynamic_qconfig
    tmodel = tq.quantize_dynamic(torch_twin(model), {torch.nn.Linear: qconfig}, dtype=torch.qint8)
    uq = ug.ao.quantization.per_channel_dynamic_qconfig if per_channel else ug.ao.quantization.default_dynamic_qconfig
    qmodel = ug.ao.quantization.quantize_dynamic(model, {ug.nn.Linear: uq}, dtype=ug.qint8)
    for ql, tl in [(qmodel[0], tmodel[0]), (qmodel[2], tmodel[2])]:
        tw = tl.weight()
        np.testing.assert_array_equal(ql.int_weight().numpy(), tw.int_repr().numpy())
        scales = tw.q_per_channel_scales().numpy() if per_channel else tw.q_scale()
        np.testing.assert_allclose(ql.weight_scale().numpy(), scales, rtol=1e-7)
        np.testing.assert_allclose(ql.weight().numpy(), tw.dequantize().numpy(), rtol=1e-6, atol=0)
    x = np.random.default_rng(1).standard_normal((64, 20)).astype(np.float32) * 3 + 0.5
    y = qmodel(ug.tensor(x)).numpy()
    ty = tmodel(torch.tensor(x)).numpy()
    # The same integers and scales: only the float epilogue's rounding differs.
    np.testing.assert_allclose(y, ty, rtol=1e-5, atol=1e-5)
    # Against the float model, within the steps' bound (first layer alone, where it is exact).
    first = qmodel[0](ug.tensor(x)).numpy()
    exact = model[0](ug.tensor(x)).detach().numpy()
    assert (np.abs(first - exact) <= step_bound(x, qmodel[0])).all()


def test_activation_qparams_are_torchs_with_reduce_range():
    """A one-sided range (all positive), a tiny one (the 6.1e-5 scale floor) and zeros."""
    ug.manual_seed(0)
    lin = ug.nn.Linear(8, 3)
    tl = torch.nn.Linear(8, 3)
    tl.weight.data, tl.bias.data = torch.tensor(lin.weight.detach().numpy()), torch.tensor(lin.bias.detach().numpy())
    q = ug.ao.nn.quantized.dynamic.Linear.from_float(lin)
    tqm = tq.quantize_dynamic(torch.nn.Sequential(tl))[0]
    rng = np.random.default_rng(0)
    for x in [rng.random((4, 8)) * 5, rng.random((4, 8)) * 1e-4 - 2e-5, np.zeros((2, 8)), -rng.random((3, 8))]:
        x = x.astype(np.float32)
        np.testing.assert_allclose(q(ug.tensor(x)).numpy(), tqm(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_int8_gemm_is_exact():
    rng = np.random.default_rng(0)
    for m, n, k in [(1, 1, 1), (7, 33, 130), (64, 512, 784)]:
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(-128, 128, (n, k), dtype=np.int8)
        out = ug._C.quantization._matmul_u8s8(ug.tensor(a), ug.tensor(b)).numpy()
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64).T)


def test_portable_kernel_gives_the_same_integers():
    """UG_CPU_ISA=avx2 keeps the int8 products on the portable loop; its sums and the quantized
    model's outputs are bit-identical to the VNNI kernel's."""
    code = """
import numpy as np, unigrad as ug
rng = np.random.default_rng(0)
a = rng.integers(0, 256, (37, 300), dtype=np.uint8); b = rng.integers(-128, 128, (70, 300), dtype=np.int8)
print(ug._C.quantization._int8_kernel())
ug.manual_seed(0)
q = ug.ao.nn.quantized.dynamic.Linear.from_float(ug.nn.Linear(300, 70))
x = ug.tensor(rng.standard_normal((37, 300)).astype(np.float32))
np.savez(OUT, sums=ug._C.quantization._matmul_u8s8(ug.tensor(a), ug.tensor(b)).numpy(), y=q(x).numpy())
"""
    outs = {}
    for isa in ["", "avx2"]:
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ug_int8_{isa or 'native'}_{os.getpid()}.npz")
        env = dict(os.environ, UG_CPU_ISA=isa)
        r = subprocess.run([sys.executable, "-c", code.replace("OUT", repr(path))], env=env, capture_output=True,
                           text=True, check=True)
        with np.load(path) as f:
            outs[isa] = (r.stdout.strip(), f["sums"], f["y"])
        os.remove(path)
    assert outs["avx2"][0] == "portable"
    np.testing.assert_array_equal(outs[""][1], outs["avx2"][1])
    np.testing.assert_array_equal(outs[""][2], outs["avx2"][2])


def test_quantized_mlp_accuracy_and_size():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((4, 32)) * 2
    labels = rng.integers(0, 4, 2000)
    x = (centers[labels] + rng.standard_normal((2000, 32))).astype(np.float32)
    model = mlp([32, 256, 256, 4])
    opt = ug.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = ug.tensor(x), ug.tensor(labels)
    for i in range(200):
        batch = slice((i * 100) % 2000, (i * 100) % 2000 + 100)
        opt.zero_grad()
        ug.nn.functional.cross_entropy(model(xt[batch]), yt[batch]).backward()
        opt.step()
    qmodel = ug.ao.quantization.quantize_dynamic(model)
    acc = (model(xt).detach().numpy().argmax(1) == labels).mean()
    qacc = (qmodel(xt).numpy().argmax(1) == labels).mean()
    assert acc > 0.9 and abs(acc - qacc) <= 0.01

    def nbytes(m):
        return sum(v.numpy().nbytes for v in m.state_dict().values())

    assert 0.25 <= nbytes(qmodel) / nbytes(model) < 0.27
    assert list(qmodel.parameters()) == []


def test_repr_state_dict_and_errors():
    model = mlp([6, 4, 3])
    q = ug.quantization.quantize_dynamic(model, {ug.nn.Linear}, dtype=ug.int8)
    tmodel = tq.quantize_dynamic(torch_twin(model), {torch.nn.Linear}, dtype=torch.qint8)
    # torch's repr, its dtype and qscheme named as unigrad names them
    assert repr(q) == repr(tmodel).replace("torch.qint8", "unigrad.qint8").replace("torch.per_", "per_")
    assert isinstance(model[0], ug.nn.Linear)  # not inplace: a copy
    fresh = ug.ao.nn.quantized.dynamic.Linear(6, 4)
    fresh.load_state_dict(q[0].state_dict())
    x = ug.randn(5, 6)
    np.testing.assert_array_equal(fresh(x).numpy(), q[0](x).numpy())
    buf = io.BytesIO()
    ug.save(q.state_dict(), buf)
    buf.seek(0)
    q2 = ug.quantization.quantize_dynamic(mlp([6, 4, 3], seed=5))
    q2.load_state_dict(ug.load(buf))
    np.testing.assert_array_equal(q2(x).numpy(), q(x).numpy())
    with pytest.raises(TypeError, match=r"quantize_dynamic.*float16"):
        ug.ao.quantization.quantize_dynamic(model, dtype=ug.float16)
    with pytest.raises(TypeError, match=r"quantize_dynamic.*Conv2d"):
        ug.ao.quantization.quantize_dynamic(model, {ug.nn.Linear, ug.nn.Conv2d})
    with pytest.raises(ValueError, match="DynamicQuantizedLinear.*last dim 6"):
        q[0](ug.randn(2, 5))


def test_nested_custom_modules_are_converted_in_place():
    class Block(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = ug.nn.Sequential(ug.nn.Linear(8, 8), ug.nn.ReLU(), ug.nn.ModuleList([ug.nn.Linear(8, 8)]))
            self.head = ug.nn.Linear(8, 2)
            self.norm = ug.nn.LayerNorm(8)

        def forward(self, x):
            return self.head(self.body[2][0](self.body[1](self.body[0](x))))

    model = Block()
    x = ug.randn(3, 8)
    expected = model(x).detach().numpy()
    out = ug.ao.quantization.quantize_dynamic(model, inplace=True)
    assert out is model
    names = {name: type(m).__name__ for name, m in model.named_modules()}
    assert names["body.0"] == names["body.2.0"] == names["head"] == "DynamicQuantizedLinear"
    assert names["norm"] == "LayerNorm"
    np.testing.assert_allclose(model(x).numpy(), expected, atol=0.05)


def test_quantize_per_tensor_and_channel_match_torch():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32) * 2
    for dtype, tdtype, zp in [(ug.quint8, torch.quint8, 128), (ug.qint8, torch.qint8, -3)]:
        q = ug.quantize_per_tensor(ug.tensor(x), 0.02, zp, dtype)
        t = torch.quantize_per_tensor(torch.tensor(x), 0.02, zp, tdtype)
        np.testing.assert_array_equal(q.numpy(), t.int_repr().numpy())
        np.testing.assert_allclose(ug.dequantize(q, 0.02, zp).numpy(), t.dequantize().numpy(), rtol=1e-6)
    scales, zps = np.array([0.01, 0.02, 0.05, 0.1], np.float64), np.array([0, 1, -2, 3], np.int64)
    q = ug.quantize_per_channel(ug.tensor(x), ug.tensor(scales), ug.tensor(zps), 0, ug.qint8)
    t = torch.quantize_per_channel(torch.tensor(x), torch.tensor(scales), torch.tensor(zps), 0, torch.qint8)
    np.testing.assert_array_equal(q.numpy(), t.int_repr().numpy())
    deq = ug.dequantize(q, ug.tensor(scales), ug.tensor(zps), axis=0)
    np.testing.assert_allclose(deq.numpy(), t.dequantize().numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="quantize_per_tensor.*uint8.*int8.*float32"):
        ug.quantize_per_tensor(ug.tensor(x), 0.1, 0, ug.float32)
    with pytest.raises(ValueError, match="quantize_per_tensor.*zero_point 300"):
        ug.quantize_per_tensor(ug.tensor(x), 0.1, 300, ug.uint8)


def test_jit_runs_the_op_as_eager_and_vmap_refuses():
    q = ug.ao.quantization.quantize_dynamic(mlp([16, 8, 4]))
    x = ug.randn(5, 16)
    np.testing.assert_array_equal(ug.jit(q)(x).numpy(), q(x).numpy())
    with pytest.raises(ValueError, match="quantized_linear_dynamic.*vmap"):
        ug.vmap(q)(x)


def test_onnx_export_in_onnxruntimes_form(tmp_path):
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = mlp([20, 16, 4])
    q = ug.ao.quantization.quantize_dynamic(model)
    path = str(tmp_path / "q.onnx")
    ug.onnx.export(q, ug.randn(1, 20), path, input_names=["input"], output_names=["output"],
                   dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    # The nodes onnxruntime's quantizer writes for the float model.
    float_path, ort_path = str(tmp_path / "f.onnx"), str(tmp_path / "f_quantized.onnx")
    ug.onnx.export(model, ug.randn(1, 20), float_path, input_names=["input"], output_names=["output"],
                   dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    quantize_dynamic(float_path, ort_path, weight_type=QuantType.QInt8)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops == [n.op_type for n in onnx.load(ort_path).graph.node]
    assert ops[:6] == ["DynamicQuantizeLinear", "Mul", "MatMulInteger", "Cast", "Mul", "Add"]
    x = np.random.default_rng(0).standard_normal((7, 20)).astype(np.float32)
    # The graph's values as ONNX defines them: onnx's reference evaluator, exact in integers
    # (onnxruntime's MatMulInteger adds uint8 x int8 product pairs in saturating int16 on CPUs
    # without AVX-VNNI: off by up to 0.19 here on an AVX2 EPYC).
    (y,) = ReferenceEvaluator(path).run(None, {"input": x})
    np.testing.assert_allclose(ug.onnx.load(path)(ug.tensor(x)).numpy(), y, rtol=1e-5, atol=1e-5)
    # Quantizing x over the full 8 bits (no reduce_range, as onnxruntime does), the graph's first
    # layer is within the steps' bound of the float layer, as ug's is.
    one = ug.ao.quantization.quantize_dynamic(ug.nn.Sequential(model[0]))
    path1 = str(tmp_path / "one.onnx")
    ug.onnx.export(one, ug.tensor(x), path1)
    sess = ReferenceEvaluator(path1)
    (y1,) = sess.run(None, {onnx.load(path1).graph.input[0].name: x})
    exact = model[0](ug.tensor(x)).detach().numpy()
    assert (np.abs(y1 - exact) <= step_bound(x, one[0])).all()
    assert (np.abs(one(ug.tensor(x)).numpy() - exact) <= step_bound(x, one[0])).all()


def test_packed_weight_follows_loads_and_in_place_changes():
    # The layer packs its weight once for the GEMM; a loaded or changed weight must be
    # packed again, so the layer agrees with the op on the weight it holds now.
    q = ug.ao.quantization.quantize_dynamic(mlp([40, 24]))[0]
    x = ug.randn(9, 40)
    op = ug._C.quantization.quantized_linear_dynamic

    def check():
        want = op(x, q.int_weight(), q.weight_scale(), q.weight_zero_point(), q.bias())
        np.testing.assert_array_equal(q(x).numpy(), want.numpy())

    check()
    q.load_state_dict(ug.ao.quantization.quantize_dynamic(mlp([40, 24], seed=3))[0].state_dict())
    check()
    with ug.no_grad():
        q.int_weight().copy_(ug.tensor(np.random.default_rng(2).integers(-128, 128, (24, 40)), dtype=ug.int8))
    check()


def test_weight_zero_points_are_subtracted():
    # A state dict may bring a weight with a zero point: (w - zw) must be what multiplies,
    # as with the shifted weight and zero point 0 (integers in range both ways).
    rng = np.random.default_rng(4)
    w = rng.integers(-100, 100, (24, 40)).astype(np.int8)
    x, b = ug.tensor(rng.standard_normal((7, 40)).astype(np.float32)), ug.randn(24)
    op = ug._C.quantization.quantized_linear_dynamic
    for scale, zw in [(ug.tensor(0.03), ug.tensor(-3)),
                      (ug.tensor(rng.uniform(0.01, 0.05, 24).astype(np.float32)), ug.tensor(rng.integers(-5, 5, 24)))]:
        shifted = ug.tensor((w.astype(np.int64) - zw.numpy().reshape(-1, 1)).astype(np.int8))
        want = op(x, shifted, scale, ug.zeros(zw.shape, dtype=ug.int64), b).numpy()
        np.testing.assert_allclose(op(x, ug.tensor(w), scale, zw, b).numpy(), want, rtol=1e-6, atol=1e-6)
