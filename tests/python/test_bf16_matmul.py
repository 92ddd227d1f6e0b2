"""bfloat16 products: matmul, bmm and linear on bfloat16 operands (conv2d: test_bf16_conv.py)
against torch's bf16 CPU kernels and the exact (float64) products. On a CPU with AVX512-BF16 they run on unigrad's
own GEMM, on AMX's tiles where the CPU has them; under UG_CPU_ISA=avx512bf16 on vdpbf16ps alone,
under avx512, avx2 or generic widened to float32 block by block (scripts/test.sh runs this file
with each). All sum exact float32 products (a bf16 product is exact in float32) and round once
to bf16, so the tolerances below follow from that.

Shapes cross the GEMM's blocks (MR = 12 rows, NR = 32 columns, MC = 96, KC = 512, NC = 512; AMX's
32-row, 32-k tiles), odd K (a k-pair half empty), and operands transposed or strided (the
packing's three paths)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import unigrad as ug

U = 2.0 ** -8 / (1 - 2.0 ** -8)  # |rnd(x) - x| <= U·|rnd(x)| for bf16 round-to-nearest
EPS32 = float(np.finfo(np.float32).eps)


def bf16_values(shape, seed, low=-2.0, high=2.0):
    """float32 values that are exactly bfloat16."""
    x = np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)
    return torch.tensor(x).bfloat16().float().numpy()


def both(x):
    """(torch bf16, unigrad bf16) tensors of the float32 array x."""
    return torch.tensor(x).bfloat16(), ug.tensor(x).to(ug.bfloat16)


def values(t):
    return t.detach().float().numpy().astype(np.float64)


def assert_product(actual, expected, exact, terms, n):
    """actual and expected round float32 sums of n exact products to bf16: each is within
    U·|itself| of its float32 sum, and a float32 sum within (n - 1)·eps32/2·terms of the exact
    sum (terms: the sum of the products' magnitudes); the float64 exact sum bounds actual alone."""
    a, e = values(actual), values(expected)
    assert actual.dtype == ug.bfloat16 and a.shape == e.shape
    sums = n * EPS32 * terms
    np.testing.assert_array_less(np.abs(a - e), U * (np.abs(a) + np.abs(e)) + sums + 1e-30)
    np.testing.assert_array_less(np.abs(a - exact), U * np.abs(a) + sums / 2 + 1e-30)


LAYOUTS = ["nn", "tn", "nt", "tt", "strided"]


def operand(shape, seed, layout):
    """(array, torch tensor, unigrad tensor) of `shape`: contiguous ('n'), a transposed view
    of a contiguous tensor ('t'), or every other column of a wider one ('s')."""
    if layout == "t":
        x = bf16_values(shape[:-2] + (shape[-1], shape[-2]), seed)
        t, u = both(x)
        return np.swapaxes(x, -1, -2), t.transpose(-1, -2), u.transpose(-1, -2)
    if layout == "s":
        x = bf16_values(shape[:-1] + (2 * shape[-1],), seed)
        t, u = both(x)
        return x[..., ::2], t[..., ::2], u[..., ::2]
    x = bf16_values(shape, seed)
    t, u = both(x)
    return x, t, u


def check_matmul(a_shape, b_shape, layout, seed=0):
    la, lb = ("s", "s") if layout == "strided" else layout
    a, ta, ua = operand(a_shape, seed, la)
    b, tb, ub = operand(b_shape, seed + 1, lb)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    terms = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    assert_product(ua @ ub, ta @ tb, exact, terms, a_shape[-1])


RNG = np.random.default_rng(16)
EDGES = [1, 2, 11, 12, 13, 31, 32, 33, 95, 96, 97]
RANDOM_SHAPES = [tuple(int(RNG.choice(EDGES + [int(RNG.integers(1, 140))])) for _ in range(3)) for _ in range(10)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mnk", RANDOM_SHAPES + [(1, 1, 1), (13, 33, 7), (100, 40, 257), (30, 530, 20), (200, 70, 600)],
                         ids=str)
def test_matmul_against_torch(mnk, layout):
    m, n, k = mnk
    check_matmul((m, k), (k, n), layout)


@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
@pytest.mark.parametrize("shapes", [((64, 64, 32), (64, 32, 64)), ((5, 13, 50), (5, 50, 9)), ((3, 1, 5), (3, 5, 1)),
                                    ((4, 2, 33, 19), (1, 19, 45))], ids=str)
def test_bmm_and_broadcast_against_torch(shapes, layout):
    check_matmul(*shapes, layout, seed=3)


def test_sums_that_are_exact_round_like_torch():
    """Small integers: every float32 sum is exact whatever its order, so each element is the
    exact product rounded once to bf16, equal to torch's bit for bit; a misplaced element of a
    packed panel or a wrong rounding shows."""
    rng = np.random.default_rng(5)
    for m, n, k in [(37, 70, 300), (12, 32, 2), (97, 33, 513), (5, 600, 3)]:
        a = rng.integers(-8, 9, size=(m, k)).astype(np.float32)
        b = rng.integers(-8, 9, size=(n, k)).astype(np.float32).T
        (ta, ua), (tb, ub) = both(a), both(np.ascontiguousarray(b))
        expected = torch.tensor(a.astype(np.float64) @ b.astype(np.float64)).bfloat16()
        np.testing.assert_array_equal(values(ua @ ub), values(expected))
        np.testing.assert_array_equal(values(ua @ ub), values(ta @ tb))


def test_infinities_and_nan_propagate():
    a = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 0.0], [1.0, 2.0, 3.0]], dtype=np.float32)
    b = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, -1.0]], dtype=np.float32)
    (ta, ua), (tb, ub) = both(a), both(b)
    np.testing.assert_array_equal(values(ua @ ub), values(ta @ tb))


def test_large_values_round_to_infinity_as_torch():
    a = np.full((2, 4), 2.0 ** 126, dtype=np.float32)
    (ta, ua), (tb, ub) = both(a), both(np.full((4, 3), 2.0, dtype=np.float32))
    np.testing.assert_array_equal(values(ua @ ub), values(ta @ tb))


@pytest.mark.parametrize("rows, inp, out", [(64, 128, 512), (7, 33, 13), (130, 300, 70)], ids=str)
def test_linear_forward_and_backward_under_autocast(rows, inp, out):
    """linear under bf16 autocast: y = rnd(rnd(x @ w.t()) + b) in unigrad, and torch's addmm
    adds the bias before its one rounding; the gradients are the products g @ w and g.t() @ x
    rounded once (their operands are bf16), then widened to the float32 parameters."""
    x, w, bias = bf16_values((rows, inp), 1), bf16_values((out, inp), 2), bf16_values((out,), 3)
    g = bf16_values((rows, out), 4)
    results = {}
    for m in (torch, ug):
        tx, tw, tb = (m.tensor(v).requires_grad_() for v in (x, w, bias))
        with m.autocast("cpu", dtype=m.bfloat16):
            y = m.nn.functional.linear(tx, tw, tb)
        y.backward(m.tensor(g).to(m.bfloat16))
        results[m] = [values(t) for t in (y, tx.grad, tw.grad, tb.grad)]
    (ty, tgx, tgw, tgb), (uy, ugx, ugw, ugb) = results[torch], results[ug]
    f64 = np.float64
    prod, terms = x.astype(f64) @ w.T.astype(f64), np.abs(x).astype(f64) @ np.abs(w.T).astype(f64)
    np.testing.assert_array_less(np.abs(uy - ty),
                                 U * (np.abs(uy) + np.abs(ty) + np.abs(prod)) + inp * EPS32 * (terms + np.abs(bias)))
    for u, t, a, b, n in [(ugx, tgx, g, w, out), (ugw, tgw, g.T, x, rows)]:
        exact, mags = a.astype(f64) @ b.astype(f64), np.abs(a).astype(f64) @ np.abs(b).astype(f64)
        np.testing.assert_array_less(np.abs(u - t), U * (np.abs(u) + np.abs(t)) + n * EPS32 * mags + 1e-30)
        np.testing.assert_array_less(np.abs(u - exact), U * np.abs(u) + n * EPS32 * mags / 2 + 1e-30)
    np.testing.assert_allclose(ugb, tgb, rtol=rows * EPS32, atol=rows * EPS32 * np.abs(g).sum(0).max())


@pytest.mark.parametrize("shapes", [((300, 700), (700, 200)), ((64, 64, 32), (64, 32, 64))], ids=str)
def test_the_same_bits_on_any_thread_count(shapes):
    """Row blocks or batch entries go to the threads; each element's sum keeps its order."""
    a = ug.tensor(bf16_values(shapes[0], 9)).to(ug.bfloat16)
    b = ug.tensor(bf16_values(shapes[1], 10)).to(ug.bfloat16)
    threads = ug.get_num_threads()
    try:
        ug.set_num_threads(1)
        one = values(a @ b)
        ug.set_num_threads(2)
        np.testing.assert_array_equal(values(a @ b), one)
    finally:
        ug.set_num_threads(threads)


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return set(next(line for line in f if line.startswith("flags")).split(":", 1)[1].split())


@pytest.mark.parametrize("forced, kernel", [(None, None), ("avx512bf16", "avx512bf16"), ("avx512", "widened")])
def test_the_kernel_follows_the_cpu_and_ug_cpu_isa(forced, kernel):
    flags, env = cpu_flags(), {k: v for k, v in os.environ.items() if k != "UG_CPU_ISA"}
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
    if forced:
        env["UG_CPU_ISA"] = forced
        kernel = kernel if avx512 and "avx512_bf16" in flags else "widened"
    else:
        kernel = ("widened" if not (avx512 and "avx512_bf16" in flags) else
                  "amx" if {"amx_tile", "amx_bf16"} <= flags else "avx512bf16")
    out = subprocess.run([sys.executable, "-c", "import unigrad as ug; print(ug._C._cpu_kernels()[1])"], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == kernel
