"""CausalConvWithState beyond the node suite's cases: a sequence run in two pieces, the state
carried between them, equals the sequence run at once; outputs and gradients against torch's
depthwise conv1d with SiLU; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

import unigrad as ug

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


def load(names, **attrs):
    g = helper.make_graph([helper.make_node("CausalConvWithState", names, ["y", "state"], **attrs)], "g",
                          [helper.make_tensor_value_info(n, F, None) for n in names if n],
                          [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("state", F, None)])
    return ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)]).SerializeToString())


def test_causal_conv_with_state_matches_torch_and_carries_its_state():
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 9), (3, 1, 4), (3,)))
    m = load(["x", "w", "b"], activation="silu")
    ux, uw, ub = (ug.tensor(a, requires_grad=True) for a in (x, w, b))
    y, state = m.forward(ux, uw, ub)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.silu(torch.nn.functional.conv1d(torch.nn.functional.pad(tx, (3, 0)), tw, tb, groups=3))
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state.numpy(), x[:, :, -3:])
    wy = rng.standard_normal(ty.shape).astype(np.float32)
    (y * ug.tensor(wy)).sum().backward()
    (ty * torch.tensor(wy)).sum().backward()
    for u, t in ((ux, tx), (uw, tw), (ub, tb)):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)

    m = load(["x", "w", "b", "s"], activation="silu")
    first = m.forward(ug.tensor(x[:, :, :5]), ug.tensor(w), ug.tensor(b), ug.zeros(2, 3, 3))
    second = m.forward(ug.tensor(x[:, :, 5:]), ug.tensor(w), ug.tensor(b), first[1])
    np.testing.assert_allclose(np.concatenate([first[0].numpy(), second[0].numpy()], 2), y.numpy(), rtol=1e-6, atol=1e-7)


def test_causal_conv_with_state_refusals():
    m = load(["x", "w"], activation="gelu")
    with pytest.raises(ValueError, match=r"CausalConvWithState node .* activation must be none, silu or swish"):
        m.forward(ug.zeros(1, 2, 3), ug.zeros(2, 1, 2))
    m = load(["x", "w", "", "s"])
    with pytest.raises(ValueError, match=r"CausalConvWithState node .* past_state must be \(1, 2, 1\)"):
        m.forward(ug.zeros(1, 2, 3), ug.zeros(2, 1, 2), ug.zeros(1, 2, 2))
