"""LinearAttention beyond the node suite's cases: per-key-dim decay, per-head beta, grouped query
heads and a past state against onnx's reference; gradients of every input against the same
recurrence in torch; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


def randn(*shape, s=1.0):
    return (rng.standard_normal(shape) * s).astype(np.float32)


def model(feeds, **attrs):
    names = ["q", "k", "v", "s", "g", "beta"]
    g = helper.make_graph([helper.make_node("LinearAttention", [n if n in feeds else "" for n in names], ["y", "state"],
                                            **attrs)], "g",
                          [helper.make_tensor_value_info(n, F, feeds[n].shape) for n in names if n in feeds],
                          [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("state", F, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)], ir_version=11)


def feeds_of():
    return {"q": randn(2, 5, 4 * 3), "k": randn(2, 5, 2 * 3), "v": randn(2, 5, 2 * 4), "s": randn(2, 2, 3, 4),
            "g": randn(2, 5, 2 * 3, s=0.3) - 0.5, "beta": rng.uniform(0, 1, (2, 5, 2)).astype(np.float32)}


def test_linear_attention_matches_the_reference():
    feeds = feeds_of()
    m = model(feeds, q_num_heads=4, kv_num_heads=2, scale=0.7)
    expected = ReferenceEvaluator(m).run(None, feeds)
    actual = ug.onnx.load_bytes(m.SerializeToString()).forward(*[ug.tensor(v) for v in feeds.values()])
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a.numpy(), e, rtol=1e-5, atol=1e-5)


def test_linear_attention_gradients_match_torch():
    feeds = feeds_of()
    m = ug.onnx.load_bytes(model(feeds, q_num_heads=4, kv_num_heads=2).SerializeToString())
    us = {k: ug.tensor(v, requires_grad=True) for k, v in feeds.items()}
    y, state = m.forward(*us.values())
    wy, ws = randn(*y.shape), randn(*state.shape)
    ((y * ug.tensor(wy)).sum() + (state * ug.tensor(ws)).sum()).backward()

    ts = {k: torch.tensor(v, requires_grad=True) for k, v in feeds.items()}
    heads = lambda t, h: t.reshape(2, 5, h, -1).transpose(1, 2)
    q, k, v, g = heads(ts["q"], 4), heads(ts["k"], 2), heads(ts["v"], 2), heads(ts["g"], 2)
    beta = ts["beta"].reshape(2, 5, 2, 1).transpose(1, 2)
    s, outs = ts["s"], []
    for i in range(5):
        s = s * torch.exp(g[:, :, i])[..., None]
        v_t = beta[:, :, i] * (v[:, :, i] - torch.einsum("bhdm,bhd->bhm", s, k[:, :, i]))
        s = s + k[:, :, i][..., None] * v_t[..., None, :]
        outs.append(torch.einsum("bhd,bhdm->bhm", q[:, :, i], s.repeat_interleave(2, 1)) / np.sqrt(3))
    ty = torch.stack(outs, 2).transpose(1, 2).reshape(2, 5, 16)
    ((ty * torch.tensor(wy)).sum() + (s * torch.tensor(ws)).sum()).backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    for name in feeds:
        np.testing.assert_allclose(us[name].grad.numpy(), ts[name].grad.numpy(), rtol=1e-4, atol=1e-5)


def test_linear_attention_refusals():
    feeds = {k: v for k, v in feeds_of().items() if k in "qkv"}
    m = ug.onnx.load_bytes(model(feeds, q_num_heads=4, kv_num_heads=2, update_rule="gated").SerializeToString())
    with pytest.raises(ValueError, match=r"LinearAttention node .* update_rule gated needs decay input"):
        m.forward(*[ug.tensor(v) for v in feeds.values()])
    m = ug.onnx.load_bytes(model(feeds, q_num_heads=3, kv_num_heads=2, update_rule="linear").SerializeToString())
    with pytest.raises(ValueError, match=r"LinearAttention node .* q_num_heads \(3\) must be a positive multiple"):
        m.forward(*[ug.tensor(v) for v in feeds.values()])
