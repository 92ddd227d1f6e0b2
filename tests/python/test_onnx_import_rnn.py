"""RNN beyond the node suite's cases: both directions, Relu and Sigmoid, clip, uneven
sequence_lens and initial states against onnxruntime; outputs and gradients of a bidirectional
tanh RNN against torch.nn.RNN."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import unigrad as ug
from test_onnx_import_ops import node, randn, run_both

F = TensorProto.FLOAT


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("acts,clip", [("Tanh", None), ("Relu", 0.7), ("Sigmoid", None)])
@pytest.mark.parametrize("lengths", [None, [5, 2, 0]])
def test_rnn_matches_onnxruntime(direction, acts, clip, lengths):
    dirs = 2 if direction == "bidirectional" else 1
    attrs = {"hidden_size": 4, "direction": direction, "activations": [acts] * dirs}
    if clip is not None:
        attrs["clip"] = clip
    feeds = {"x": randn(5, 3, 2)}
    consts = {"w": randn(dirs, 4, 2), "r": randn(dirs, 4, 4), "b": randn(dirs, 8), "h": randn(dirs, 3, 4)}
    inputs = ["x", "w", "r", "b", "", "h"]
    if lengths is not None:
        consts["n"] = np.array(lengths, np.int32)
        inputs[4] = "n"
    run_both([node("RNN", inputs, ["y0", "y1"], **attrs)], feeds, consts, opset=14, n_out=2)


def test_rnn_gradients_match_torch():
    x, h0 = randn(6, 2, 3), randn(2, 2, 4)
    t = torch.nn.RNN(3, 4, bidirectional=True)
    w = np.stack([t.weight_ih_l0.detach().numpy(), t.weight_ih_l0_reverse.detach().numpy()])
    r = np.stack([t.weight_hh_l0.detach().numpy(), t.weight_hh_l0_reverse.detach().numpy()])
    b = np.stack([np.concatenate([t.bias_ih_l0.detach().numpy(), t.bias_hh_l0.detach().numpy()]),
                  np.concatenate([t.bias_ih_l0_reverse.detach().numpy(), t.bias_hh_l0_reverse.detach().numpy()])])
    g = helper.make_graph([node("RNN", ["x", "w", "r", "b", "", "h"], ["y", "y_h"], hidden_size=4,
                                direction="bidirectional")], "g",
                          [helper.make_tensor_value_info("x", F, [6, 2, 3]), helper.make_tensor_value_info("h", F, [2, 2, 4])],
                          [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("y_h", F, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in (("w", w), ("r", r), ("b", b))])
    m = ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString())
    ux, uh = ug.tensor(x, requires_grad=True), ug.tensor(h0, requires_grad=True)
    y, y_h = m.forward(ux, uh)
    tx, th = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    ty, ty_h = t(tx, th)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy().reshape(6, 2, 2, 4).transpose(0, 2, 1, 3), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(y_h.numpy(), ty_h.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y.sum() + (y_h * y_h).sum()).backward()
    (ty.sum() + (ty_h * ty_h).sum()).backward()
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(uh.grad.numpy(), th.grad.numpy(), rtol=1e-4, atol=1e-6)
    expected_w = np.stack([t.weight_ih_l0.grad.numpy(), t.weight_ih_l0_reverse.grad.numpy()])
    np.testing.assert_allclose(m.w.grad.numpy(), expected_w, rtol=1e-4, atol=1e-6)


def test_rnn_refusals():
    feeds = {"x": randn(2, 1, 2)}
    consts = {"w": randn(1, 4, 2), "r": randn(1, 4, 4)}
    with pytest.raises(ValueError, match=r"RNN node .* activation \"Elu\" is not supported"):
        run_both([node("RNN", ["x", "w", "r"], hidden_size=4, activations=["Elu"])], feeds, consts, opset=14,
                 reference=lambda data: [np.zeros(())])
    with pytest.raises(ValueError, match=r"RNN node .* W and R must have shapes \[1, 3, 2\]"):
        run_both([node("RNN", ["x", "w", "r"], hidden_size=3)], feeds, consts, opset=14,
                 reference=lambda data: [np.zeros(())])
