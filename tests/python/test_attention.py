"""scaled_dot_product_attention's fused kernel (src/ug/ops/attention.cpp over
src/ug/backend/cpu/cpu_attention.cpp) against torch 2.13's F.scaled_dot_product_attention:
values and gradients on random inputs of every layout the kernel takes, float64 finite
differences, double backward through the composed form, bfloat16 under autocast, bad inputs.
(The composed form's own tests and the op table's transforms are in test_nn_functional.py.)"""
import numpy as np
import pytest
import torch
from reference import Arg, arr, assert_close, check, check_grad

import unigrad as ug

NEG_INF = -np.inf


def sdpa(m, *args, **kw):
    return m.nn.functional.scaled_dot_product_attention(*args, **kw)


def bool_mask(shape, seed, dead_rows=()):
    keep = np.random.default_rng(seed).random(shape) > 0.3
    for r in dead_rows:  # queries that may attend nothing: zeros, as torch's CPU kernel
        keep[..., r, :] = False
    return Arg(keep)


def additive_mask(shape, seed, dead_rows=()):
    a = np.random.default_rng(seed).uniform(-2, 2, shape)
    a[np.random.default_rng(seed + 1).random(shape) > 0.8] = NEG_INF
    for r in dead_rows:
        a[..., r, :] = NEG_INF
    return a


# (id, q, k, v shapes, mask maker or None, keywords). The block sizes are 64 queries and 256
# keys: "blocks" crosses both, with partial last blocks.
CASES = [
    ("plain", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), None, {}),
    ("scale", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), None, {"scale": 0.3}),
    ("bool mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), lambda dt: bool_mask((5, 7), 3), {}),
    ("bool mask, dead rows", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), lambda dt: bool_mask((2, 1, 5, 7), 4, (1, 3)),
     {}),
    ("additive mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), lambda dt: Arg(additive_mask((3, 1, 7), 5), dt), {}),
    ("additive mask, dead rows", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4),
     lambda dt: Arg(additive_mask((2, 3, 5, 7), 6, (0, 4)), dt), {}),
    ("causal L<S", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), None, {"is_causal": True}),
    ("causal L>S", (2, 3, 9, 8), (2, 3, 4, 8), (2, 3, 4, 6), None, {"is_causal": True}),
    ("gqa", (2, 6, 5, 8), (2, 2, 7, 8), (2, 2, 7, 4), None, {"enable_gqa": True}),
    ("gqa causal masked", (1, 4, 6, 4), (1, 1, 6, 4), (1, 1, 6, 4), None, {"enable_gqa": True, "is_causal": True}),
    ("broadcast batch", (2, 3, 5, 8), (3, 7, 8), (1, 3, 7, 4), lambda dt: bool_mask((2, 1, 1, 7), 7), {}),
    ("2-d", (5, 8), (7, 8), (7, 3), None, {}),
    ("5-d", (2, 2, 3, 5, 4), (2, 1, 3, 7, 4), (1, 2, 3, 7, 4), None, {}),
    ("blocks", (1, 1, 70, 4), (1, 1, 300, 4), (1, 1, 300, 3), lambda dt: Arg(additive_mask((70, 300), 8), dt), {}),
    ("blocks causal", (1, 2, 70, 4), (1, 2, 300, 4), (1, 2, 300, 3), None, {"is_causal": True}),
]


def case_fn(kw, masked):
    if masked:
        return lambda m, q, k, v, mask: sdpa(m, q, k, v, attn_mask=mask, **kw)
    return lambda m, q, k, v: sdpa(m, q, k, v, **kw)


def magnitude_fn(kw, masked):
    """Each output element sums S products p_ij v_j with p >= 0: their magnitudes add up to the
    attention of |v|. (The scores' own sums of E terms move p by ~E eps relative, inside that.)"""
    if masked:
        return lambda m, q, k, v, mask: sdpa(m, q, k, v.abs(), attn_mask=mask, **kw)
    return lambda m, q, k, v: sdpa(m, q, k, v.abs(), **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_against_torch_and_finite_differences(case, dtype):
    _, qs, ks, vs, mask, kw = case
    # q and k in [-1, 1]: softmax's exponentials stay within e^(2 sqrt(E)) of each other.
    args = [arr(qs, dtype, -1, 1), arr(ks, dtype, -1, 1, seed=1), arr(vs, dtype, seed=2)]
    if mask is not None:
        args.append(mask(dtype))
    s_len, e_len = ks[-2], qs[-1]
    check_grad(case_fn(kw, mask is not None), *args, terms=magnitude_fn(kw, mask is not None), n=s_len + e_len)


def test_the_fused_kernel_is_what_runs():
    q, k, v = (ug.randn(2, 3, 5, 4, requires_grad=True) for _ in range(3))
    assert "scaled_dot_product_attentionBackward" in repr(sdpa(ug, q, k, v).grad_fn)
    assert "scaled_dot_product" not in repr(sdpa(ug, q, k, v, dropout_p=0.5).grad_fn)
    mask = ug.zeros(5, 5, requires_grad=True)  # a mask that takes a gradient: the composed form
    out = sdpa(ug, q, k, v, attn_mask=mask)
    assert "scaled_dot_product" not in repr(out.grad_fn)
    out.sum().backward()
    assert mask.grad is not None


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"enable_gqa": True}, {"mask": True}],
                         ids=["plain", "causal", "gqa", "mask"])
def test_double_backward_through_the_composed_rule(kw):
    rng = np.random.default_rng(3)
    heads_kv = 1 if kw.get("enable_gqa") else 2
    q = ug.tensor(rng.normal(size=(1, 2, 4, 3)), requires_grad=True)
    k = ug.tensor(rng.normal(size=(1, heads_kv, 5, 3)), requires_grad=True)
    v = ug.tensor(rng.normal(size=(1, heads_kv, 5, 2)), requires_grad=True)
    kw = dict(kw)
    if kw.pop("mask", False):
        keep = rng.random((4, 5)) > 0.4
        keep[2] = False
        kw["attn_mask"] = ug.tensor(keep)
    assert ug.autograd.gradgradcheck(lambda q, k, v: sdpa(ug, q, k, v, **kw), (q, k, v))


def test_16_bit_inputs_and_bfloat16_autocast():
    """torch's CPU autocast runs scaled_dot_product_attention in bfloat16 (its lower-precision
    list), as unigrad does; both kernels sum in float32 and round the output once."""
    q, k, v = arr((2, 3, 20, 8), low=-1, high=1), arr((2, 3, 30, 8), low=-1, high=1, seed=1), arr((2, 3, 30, 4), seed=2)
    mask = Arg(additive_mask((20, 30), 9).astype(np.float32))

    def f(m, q, k, v, mask):
        with m.autocast("cpu", dtype=m.bfloat16):
            return sdpa(m, q, k, v, attn_mask=mask), sdpa(m, q, k, v, is_causal=True)

    check(f, q, k, v, mask)
    for dtype in ("bfloat16", "float16"):
        check(lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True), arr((2, 20, 8), dtype, -1, 1),
              arr((2, 30, 8), dtype, -1, 1, seed=1), arr((2, 30, 4), dtype, seed=2))
    grads = {}
    for m in (torch, ug):
        ins = [m.tensor(a.array, requires_grad=True) for a in (q, k, v)]
        with m.autocast("cpu", dtype=m.bfloat16):
            out = sdpa(m, *ins, attn_mask=m.tensor(mask.array))
        assert str(out.dtype).endswith("bfloat16")
        (out.float() * m.tensor(np.linspace(-1, 1, 4, dtype=np.float32))).sum().backward()
        grads[m] = [t.grad.numpy() for t in ins]
    for a, e in zip(grads[ug], grads[torch]):
        assert a.dtype == np.float32
        # gradients of bfloat16 values: a few roundings of 2^-8 relative each, on sums whose
        # terms reach the largest gradient's size
        assert_close(a, e, rtol=2e-2, atol=2e-2 * np.abs(e).max())


def test_bad_inputs_raise_naming_the_op():
    q, k, v = ug.randn(2, 3, 5, 4), ug.randn(2, 3, 7, 4), ug.randn(2, 3, 7, 6)
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention.*same embedding size"):
        sdpa(ug, q, ug.randn(2, 3, 7, 5), v)
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention.*same sequence length"):
        sdpa(ug, q, k, ug.randn(2, 3, 6, 6))
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention.*one floating dtype"):
        sdpa(ug, q, k.double(), v)
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention.*attn_mask must be bool"):
        sdpa(ug, q, k, v, attn_mask=ug.zeros(5, 7, dtype=ug.float64))
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention.*attn_mask of shape \[4, 7\]"):
        sdpa(ug, q, k, v, attn_mask=ug.zeros(4, 7))
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention"):  # batch dims that do not broadcast
        sdpa(ug, q, ug.randn(4, 3, 7, 4), ug.randn(4, 3, 7, 6))
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention.*number of heads in key \(2\) must divide"):
        sdpa(ug, q, ug.randn(2, 2, 7, 4), ug.randn(2, 2, 7, 6), enable_gqa=True)
    for m in (torch, ug):  # torch raises too
        with pytest.raises(RuntimeError):
            sdpa(m, m.randn(2, 3, 5, 4), m.randn(2, 3, 7, 4), m.randn(2, 3, 7, 6), attn_mask=m.ones(5, 7, dtype=m.bool),
                 is_causal=True)
