"""Attention's sliding windows, external KV cache (nonpad_kv_seqlen), qk_matmul_output_mode 0 to 2
with softcap and softmax_precision beyond the node suite's cases, against onnx's reference (the
source of the suite's expected outputs); gradients through a windowed, padded attention against
torch; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug
from test_onnx_import_ops import node, randn, run_both

F = TensorProto.FLOAT
I64 = TensorProto.INT64

CASES = {
    "window_past_causal_gqa": (
        [node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y0", "y1", "y2"], is_causal=1, left_window_size=2,
              right_window_size=0)],
        {"q": randn(2, 4, 3, 8), "k": randn(2, 2, 3, 8), "v": randn(2, 2, 3, 5), "pk": randn(2, 2, 4, 8),
         "pv": randn(2, 2, 4, 5)}),
    "window_right_only_float_mask": (
        [node("Attention", ["q", "k", "v", "m"], right_window_size=1)],
        {"q": randn(1, 2, 5, 4), "k": randn(1, 2, 6, 4), "v": randn(1, 2, 6, 4), "m": randn(5, 6)}),
    "nonpad_causal_window_3d": (
        [node("Attention", ["q", "k", "v", "", "", "", "n"], q_num_heads=2, kv_num_heads=1, is_causal=1,
              left_window_size=3)],
        {"q": randn(3, 2, 8), "k": randn(3, 7, 4), "v": randn(3, 7, 6), "n": np.array([7, 4, 2], np.int64)}),
    "nonpad_bool_mask": (
        [node("Attention", ["q", "k", "v", "m", "", "", "n"])],
        {"q": randn(2, 2, 3, 4), "k": randn(2, 2, 5, 4), "v": randn(2, 2, 5, 4),
         "m": np.array([[1, 1, 0, 1, 1]], bool), "n": np.array([5, 3], np.int64)}),
}
for mode in range(4):
    CASES[f"qk_output_mode_{mode}_softcap_mask"] = (
        [node("Attention", ["q", "k", "v", "m"], ["y0", "", "", "y1"], softcap=1.5, qk_matmul_output_mode=mode,
              is_causal=1, softmax_precision=TensorProto.DOUBLE)],
        {"q": randn(1, 2, 3, 4), "k": randn(1, 2, 5, 4), "v": randn(1, 2, 5, 4), "m": randn(2, 3, 5)})


@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_matches_the_reference(case):
    nodes, feeds = CASES[case]
    n_out = len([o for o in nodes[0].output if o])
    run_both(nodes, feeds, opset=25 if "window" in case else 24, n_out=n_out, atol=1e-5,
             reference=lambda data: ReferenceEvaluator(data).run(None, feeds))


def test_gradients_through_a_windowed_padded_attention_match_torch():
    q, k, v = randn(2, 2, 4, 8), randn(2, 2, 6, 8), randn(2, 2, 6, 8)
    valid = np.array([6, 5], np.int64)
    g = helper.make_graph([node("Attention", ["q", "k", "v", "", "", "", "n"], left_window_size=1, right_window_size=1)],
                          "g", [helper.make_tensor_value_info(n, F, a.shape) for n, a in (("q", q), ("k", k), ("v", v))]
                          + [helper.make_tensor_value_info("n", I64, [2])], [helper.make_tensor_value_info("y", F, None)])
    m = ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)]).SerializeToString())
    uq, uk, uv = (ug.tensor(a, requires_grad=True) for a in (q, k, v))
    y = m.forward(uq, uk, uv, ug.tensor(valid))
    w = randn(*y.shape)
    (y * ug.tensor(w)).sum().backward()
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    # Query i sits at position i + valid - 4 and sees keys within one of it, among the valid ones.
    pos = torch.arange(4)[None, :, None] + torch.tensor(valid)[:, None, None] - 4
    j = torch.arange(6)[None, None, :]
    mask = ((j - pos).abs() <= 1) & (j < torch.tensor(valid)[:, None, None])
    ty = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask[:, None])
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    for u, t in ((uq, tq), (uk, tk), (uv, tv)):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_attention_refusals():
    feeds = {"q": randn(1, 1, 2, 4), "k": randn(1, 1, 2, 4), "v": randn(1, 1, 2, 4), "pk": randn(1, 1, 1, 4),
             "pv": randn(1, 1, 1, 4), "n": np.array([2], np.int64)}
    with pytest.raises(ValueError, match=r"Attention node .* nonpad_kv_seqlen cannot be combined with past_key"):
        run_both([node("Attention", ["q", "k", "v", "", "pk", "pv", "n"])], feeds, opset=24,
                 reference=lambda data: [np.zeros(())])
    # onnx's shape inference refuses this one too; the importer does not run it.
    g = helper.make_graph([node("Attention", ["q", "k", "v"], left_window_size=-2)], "g",
                          [helper.make_tensor_value_info(n, F, [1, 1, 2, 4]) for n in "qkv"],
                          [helper.make_tensor_value_info("y", F, None)])
    m = ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)]).SerializeToString())
    with pytest.raises(ValueError, match=r"Attention node .* left_window_size \(-2\) and right_window_size"):
        m.forward(*[ug.tensor(feeds[n]) for n in "qkv"])
