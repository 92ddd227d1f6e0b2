"""bfloat16 convolutions: conv2d's output, input gradient and weight gradient on bfloat16
operands against torch's bf16 CPU convolution and the exact (float64) convolution of the same
bf16 values. unigrad's kernels (cpu_conv_bf16.cpp) run on the bf16 GEMM where the CPU has
AVX512-BF16 and widen bounded blocks into sgemm elsewhere (scripts/test.sh runs this file under
UG_CPU_ISA=generic, avx2 and avx512 too). Either way each element is a float32 sum of exact
products (a bf16 product is exact in float32), rounded once to bf16, so the tolerances follow:
within U·|result| of its float32 sum, and a float32 sum of n terms within n·eps32/2·Σ|terms| of
the exact one. torch's kernels round their float32 sums once where oneDNN has AVX512-BF16;
elsewhere (an AVX2 EPYC) its gradients are bf16 sums of bf16-rounded partial results, checked
against that many roundings (assert_rounded_sum).

Shapes cover 1x1 (the planes are the column matrix), 3x3 with padding, strided 7x7, dilated,
grouped and depthwise convolutions, and planes large enough to split into column blocks."""
import numpy as np
import pytest
import torch

import unigrad as ug
from test_bf16_matmul import EPS32, U, bf16_values, values

F64 = torch.float64

# (N, C, H, W, O, kernel, stride, padding, dilation, groups, bias)
SHAPES = [
    (2, 8, 9, 9, 5, 1, 1, 0, 1, 1, False),
    (2, 8, 9, 9, 5, 1, 1, 0, 1, 1, True),
    (3, 5, 8, 13, 4, 3, 1, 1, 1, 1, True),
    (2, 3, 20, 18, 16, 7, 2, 3, 1, 1, False),
    (2, 6, 11, 10, 6, 3, 2, 1, 1, 1, True),
    (2, 4, 12, 12, 6, 3, 1, 2, 2, 1, True),
    (2, 6, 10, 9, 9, 3, 1, 1, 1, 3, True),
    (2, 8, 10, 10, 8, 3, 1, 1, 1, 8, False),
    (1, 1, 28, 28, 6, 5, 1, 0, 1, 1, True),
    (1, 64, 40, 40, 13, 3, 1, 1, 1, 1, False),
]


def exact(fn, *arrays):
    """fn of the float64 arrays, and of their magnitudes (the sums' Σ|terms|)."""
    return (fn(*(torch.tensor(a, dtype=F64) for a in arrays)).numpy(),
            fn(*(torch.tensor(np.abs(a), dtype=F64) for a in arrays)).numpy())


def assert_rounded_sum(actual, expected, exact_and_terms, n, torch_roundings=1):
    """actual (unigrad) rounds a float32 sum of n exact products to bf16 once. expected (torch)
    carries at most torch_roundings bf16 roundings of sums of those products, each within
    U·Σ|terms|: one where its kernel rounds a float32 sum once; without AVX512-BF16, its input
    gradient is col2im's bf16 sum of the kernel taps' rounded columns (taps + 1 roundings) and
    its weight gradient a bf16 sum of the samples' rounded products (samples + 1)."""
    want, terms = exact_and_terms
    sums = n * EPS32 * terms
    assert actual.shape == expected.shape == want.shape
    np.testing.assert_array_less(np.abs(actual - want), U * np.abs(actual) + sums / 2 + 1e-30)
    np.testing.assert_array_less(np.abs(expected - want), torch_roundings * U * terms + sums / 2 + 1e-30)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_conv2d_and_its_gradients_against_torch(shape):
    n, c, h, w, o, k, stride, pad, dil, groups, has_bias = shape
    x, wt = bf16_values((n, c, h, w), 1), bf16_values((o, c // groups, k, k), 2)
    b = bf16_values((o,), 3) if has_bias else None
    kw = dict(stride=stride, padding=pad, dilation=dil, groups=groups)
    results = {}
    for m in (torch, ug):
        tx, tw = (m.tensor(v).to(m.bfloat16).requires_grad_() for v in (x, wt))
        tb = m.tensor(b).to(m.bfloat16).requires_grad_() if has_bias else None
        y = m.nn.functional.conv2d(tx, tw, tb, **kw)
        g = bf16_values(tuple(y.shape), 4)
        y.backward(m.tensor(g).to(m.bfloat16))
        assert y.dtype == tx.grad.dtype == tw.grad.dtype == m.bfloat16
        results[m] = [values(t) for t in (y, tx.grad, tw.grad)] + [values(tb.grad) if has_bias else None]
    (ty, tgx, tgw, tgb), (uy, ugx, ugw, ugb) = results[torch], results[ug]
    conv = torch.nn.functional.conv2d
    zero = np.zeros(o) if b is None else b
    assert_rounded_sum(uy, ty, exact(lambda x, w, b: conv(x, w, b, **kw), x, wt, zero), c // groups * k * k + 1)
    grad = torch.nn.grad
    assert_rounded_sum(ugx, tgx, exact(lambda g, w: grad.conv2d_input(x.shape, w, g, **kw), g, wt), o // groups * k * k,
                       torch_roundings=k * k + 1)
    assert_rounded_sum(ugw, tgw, exact(lambda x, g: grad.conv2d_weight(x, wt.shape, g, **kw), x, g),
                       n * g.shape[2] * g.shape[3], torch_roundings=n + 1)
    if has_bias:
        # The bias gradient: unigrad's a float32 sum rounded once; torch's, without AVX512-BF16,
        # a bf16 sum of the samples' rounded sums (samples + 1 roundings).
        count, terms = n * g.shape[2] * g.shape[3], np.abs(g).sum((0, 2, 3))
        want = g.astype(np.float64).sum((0, 2, 3))
        np.testing.assert_array_less(np.abs(ugb - want), U * np.abs(ugb) + count * EPS32 * terms)
        np.testing.assert_array_less(np.abs(tgb - want), (n + 1) * U * terms + count * EPS32 * terms)


def test_conv2d_under_autocast_saves_bfloat16_and_matches_torch():
    """A conv under bf16 autocast runs in bf16 (its output is bf16) and gives float32 gradients
    to float32 parameters, as torch's CPU autocast does."""
    x, wt, b = bf16_values((4, 3, 16, 16), 5), bf16_values((8, 3, 3, 3), 6), bf16_values((8,), 7)
    results = {}
    for m in (torch, ug):
        tx, tw, tb = (m.tensor(v).requires_grad_() for v in (x, wt, b))
        with m.autocast("cpu", dtype=m.bfloat16):
            y = m.nn.functional.conv2d(tx, tw, tb, padding=1)
        assert y.dtype == m.bfloat16
        y.float().sum().backward()
        assert tw.grad.dtype == m.float32
        results[m] = [values(t) for t in (y, tx.grad, tw.grad, tb.grad)]
    for u, t in zip(results[ug], results[torch]):
        np.testing.assert_allclose(u, t, rtol=4 * U, atol=4 * U * np.abs(t).max())


def test_the_same_bits_on_any_thread_count():
    """Samples go to the threads; the weight gradient's partials are fixed by the problem."""
    x = ug.tensor(bf16_values((6, 8, 14, 14), 8)).to(ug.bfloat16).requires_grad_()
    w = ug.tensor(bf16_values((12, 8, 3, 3), 9)).to(ug.bfloat16).requires_grad_()
    g = ug.tensor(bf16_values((6, 12, 14, 14), 10)).to(ug.bfloat16)
    threads = ug.get_num_threads()
    runs = []
    try:
        for t in (1, 2):
            ug.set_num_threads(t)
            x.grad = w.grad = None
            y = ug.nn.functional.conv2d(x, w, padding=1)
            y.backward(g)
            runs.append([values(v) for v in (y, x.grad, w.grad)])
    finally:
        ug.set_num_threads(threads)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(2, 6, 7, 8, 4, 3, 2, 1, 1, 2), (1, 5, 9, 9, 3, 1, 1, 0, 0, 1)], ids=str)
def test_conv_transpose2d_against_torch(shape):
    """conv_transpose2d is the input gradient's kernel; unigrad adds the bias to its rounded
    result in bfloat16 (a second rounding, as linear's bias), torch before its one rounding."""
    n, c, h, w, o, k, stride, pad, out_pad, groups = shape
    x, wt, b = bf16_values((n, c, h, w), 11), bf16_values((c, o // groups, k, k), 12), bf16_values((o,), 13)
    kw = dict(stride=stride, padding=pad, output_padding=out_pad, groups=groups)
    actual, expected = (values(m.nn.functional.conv_transpose2d(*(m.tensor(v).to(m.bfloat16) for v in (x, wt, b)), **kw))
                        for m in (ug, torch))
    want, terms = exact(lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kw), x, wt, b)
    # unigrad: rnd(rnd(s) + b) with s the float32 sum, |rnd(s)| <= (1 + U)·terms; torch: rnd(s + b).
    sums, first = c // groups * k * k * EPS32 * terms, U * (1 + U) * terms
    np.testing.assert_array_less(np.abs(actual - want), U * np.abs(actual) + first + sums / 2 + 1e-30)
    np.testing.assert_array_less(np.abs(actual - expected), U * (np.abs(actual) + np.abs(expected)) + first + sums + 1e-30)
