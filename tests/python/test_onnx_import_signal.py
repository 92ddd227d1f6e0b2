"""DFT, STFT, the windows and MelWeightMatrix beyond the node suite's cases: cut and padded
lengths, other axes, complex inputs, inverse and one-sided forms against NumPy's float64 FFT and
torch.stft, with gradients against torch.fft; the windows and mel matrix against onnx's
reference; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug

F, I64 = TensorProto.FLOAT, TensorProto.INT64
rng = np.random.default_rng(0)


def load(op, inputs, opset=20, consts=None, **attrs):
    g = helper.make_graph([helper.make_node(op, [n for n, _, _ in inputs], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs if n not in (consts or {})],
                          [helper.make_tensor_value_info("y", F, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in (consts or {}).items()])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9).SerializeToString()
    return ug.onnx.load_bytes(data), data


def complex_of(y):
    return y[..., 0] + 1j * y[..., 1] if y.shape[-1] == 2 else y[..., 0]


# Opset 17 takes the axis as an attribute, where -2 and 2 are the same axis of these inputs.
DFT_AXES = [(17, 1), (17, 2), (20, 1), (20, 2), (20, -2)]


@pytest.mark.parametrize("opset,axis", DFT_AXES)
@pytest.mark.parametrize("length", [None, 4, 9])
@pytest.mark.parametrize("form", ["fft", "ifft", "rfft", "irfft", "fft_real"])
def test_dft_matches_numpy(opset, axis, length, form):
    complex_in = form in ("fft", "ifft", "irfft")
    x = rng.standard_normal((2, 6, 5, 2 if complex_in else 1)).astype(np.float32)
    inverse, onesided = form in ("ifft", "irfft"), form in ("rfft", "irfft")
    attrs = {"inverse": int(inverse), "onesided": int(onesided)}
    consts = {} if length is None else {"n": np.array(length, np.int64)}
    if opset == 17:
        attrs["axis"] = axis
        names = ["x"] + ["n"] * ("n" in consts)
    else:
        consts["axis"] = np.array(axis, np.int64)
        names = ["x", "n" if "n" in consts else "", "axis"]
    g = helper.make_graph([helper.make_node("DFT", names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", F, list(x.shape))],
                          [helper.make_tensor_value_info("y", F, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9).SerializeToString()
    y = ug.onnx.load_bytes(data).forward(ug.tensor(x)).numpy()
    c, a = complex_of(x.astype(np.float64)), axis % 4
    fn = {"fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft, "fft_real": np.fft.fft}[form]
    expected = fn(c, n=length, axis=a)
    np.testing.assert_allclose(complex_of(y), expected, rtol=1e-5, atol=1e-5)


def test_dft_and_stft_gradients_match_torch():
    x = rng.standard_normal((2, 8, 2)).astype(np.float32)
    m, _ = load("DFT", [("x", F, [2, 8, 2])], opset=17, axis=1, inverse=1)
    ux = ug.tensor(x, requires_grad=True)
    y = m.forward(ux)
    w = rng.standard_normal(y.shape).astype(np.float32)
    (y * ug.tensor(w)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.view_as_real(torch.fft.ifft(torch.view_as_complex(tx), dim=1))
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)

    signal, window = rng.standard_normal((2, 40, 1)).astype(np.float32), np.hanning(10).astype(np.float32)
    m, _ = load("STFT", [("x", F, [2, 40, 1]), ("step", I64, []), ("w", F, [10])], opset=17,
                consts={"step": np.array(3, np.int64), "w": window})
    ux = ug.tensor(signal, requires_grad=True)
    y = m.forward(ux)
    tx = torch.tensor(signal, requires_grad=True)
    ty = torch.view_as_real(torch.stft(tx[..., 0], 10, 3, window=torch.tensor(window), center=False,
                                       return_complex=True)).transpose(1, 2)
    assert y.shape == tuple(ty.shape) == (2, 11, 6, 2)
    w = rng.standard_normal(y.shape).astype(np.float32)
    (y * ug.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_match_the_reference(op, periodic):
    m, data = load(op, [("n", I64, [])], opset=17, periodic=periodic, output_datatype=TensorProto.DOUBLE)
    n = np.array(11, np.int64)
    np.testing.assert_allclose(m.forward(ug.tensor(n)).numpy(), ReferenceEvaluator(data).run(None, {"n": n})[0],
                               rtol=1e-12, atol=1e-12)


def test_mel_weight_matrix_matches_the_reference():
    feeds = {"mels": np.array(12, np.int64), "dft": np.array(64, np.int64), "rate": np.array(16000, np.int64),
             "low": np.array(30, np.float32), "high": np.array(7000, np.float32)}
    types = {"mels": I64, "dft": I64, "rate": I64, "low": F, "high": F}
    m, data = load("MelWeightMatrix", [(k, types[k], []) for k in feeds], opset=17)
    np.testing.assert_allclose(m.forward(*[ug.tensor(v) for v in feeds.values()]).numpy(),
                               ReferenceEvaluator(data).run(None, feeds)[0], rtol=1e-6)


def test_signal_refusals():
    m, _ = load("DFT", [("x", F, [2, 8, 2])], opset=17, axis=1, onesided=1)
    with pytest.raises(ValueError, match=r"DFT node .* onesided=1 needs a real input"):
        m.forward(ug.zeros(2, 8, 2))
    m, _ = load("DFT", [("x", F, [2, 8, 3])], opset=17, axis=1)
    with pytest.raises(ValueError, match=r"DFT node .* last dim of 1 \(real\) or 2"):
        m.forward(ug.zeros(2, 8, 3))
    m, _ = load("DFT", [("x", F, [2, 8, 1])], opset=17, axis=2)
    with pytest.raises(ValueError, match=r"DFT node .* axis 2 is not a signal axis"):
        m.forward(ug.zeros(2, 8, 1))
