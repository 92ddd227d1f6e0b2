"""Reductions, scans, sorting and matrix products against PyTorch: dims as ints, tuples and
negatives, keepdim, dtypes, empty and 0-d inputs, and results independent of thread count."""
import numpy as np
import pytest

import unigrad as ug
from reference import ABS, arr, assert_close, check

FLOATS = ["float32", "float64", "float16", "bfloat16"]
X = arr((3, 4, 5))


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp", "var", "std", "norm"])
@pytest.mark.parametrize("dim", [0, -1, (0, 2), (1,), (-1, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_dims(name, dim, keepdim):
    check(lambda m, x: getattr(x, name)(dim=dim, keepdim=keepdim), X, rtol=1e-5, atol=1e-5)


# What the 24 terms of a full reduction of a (4, 6) input add up to (see reference.py); max,
# min and their indices are exact.
FULL_TERMS = {
    "sum": ABS, "mean": ABS,
    "prod": lambda m, x: x.prod().abs(),  # one rounding per factor: a relative error
    # Σx²/(N-1) bounds the variance's terms whether it is summed around the mean or not
    "var": lambda m, x: (x * x).sum() / (x.numel() - 1),
    "std": lambda m, x: (x * x).sum() / (x.numel() - 1) / (2 * x.std()),  # d sqrt(v) = dv / (2 sqrt(v))
    "norm": lambda m, x: x.norm(),  # d sqrt(s) = ds / (2 sqrt(s)) with |ds| <= n·eps·s
}


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
                                  "var", "std", "norm", "all", "any"])
@pytest.mark.parametrize("dtype", FLOATS + ["int8", "int16", "int32", "int64", "uint8", "bool"])
def test_full_reductions(name, dtype):
    terms = FULL_TERMS.get(name)
    check(lambda m, x: getattr(x, name)(), arr((4, 6), dtype, low=0, high=3), terms=terms,
          n=24 if terms is not None else None)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_indices(name):
    check(lambda m, x: tuple(getattr(x, name)(dim=1)), X)
    check(lambda m, x: tuple(getattr(x, name)(-1, keepdim=True)), X)
    check(lambda m, x: getattr(x, name)(1).values, arr((3, 4), "int64", low=0, high=2))
    check(lambda m, x: getattr(x, name)(1).indices, arr((3, 4), "int64", low=0, high=2))


@pytest.mark.parametrize("name", ["argmax", "argmin", "cumsum", "cumprod", "softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_dim_ops(name, dim):
    check(lambda m, x: getattr(x, name)(dim), X, rtol=1e-5, atol=1e-5)


def test_reduction_dtypes_and_options():
    check(lambda m, x: x.sum(), arr((3, 4), "int32"))
    check(lambda m, x: x.sum(dtype=m.float64), arr((3, 4), "int32"))
    check(lambda m, x: x.sum(), arr((3, 4), "bool"))
    check(lambda m, x: x.mean(), arr((3, 4), "int64"))
    check(lambda m, x: x.cumsum(0), arr((3, 4), "int32"))
    check(lambda m, x: x.var(1, correction=0), X)
    check(lambda m, x: x.std(dim=(0, 1), unbiased=False), X)
    check(lambda m, x: x.norm(1), X, terms=lambda m, x: x.norm(1), n=60)
    check(lambda m, x: x.norm(float("inf"), dim=1), X)
    check(lambda m, x: x.norm(3, dim=(0, 2)), X, rtol=1e-5)
    check(lambda m, x: x.prod(1), X, rtol=1e-5)
    check(lambda m, x: x.all(1), arr((3, 4), "bool"))
    check(lambda m, x: x.any(0, keepdim=True), arr((3, 4), "bool"))


@pytest.mark.parametrize("shape", [(0,), (0, 3), ()])
def test_reductions_of_empty_and_scalar(shape):
    check(lambda m, x: x.sum(), arr(shape))
    check(lambda m, x: x.prod(), arr(shape))
    check(lambda m, x: x.max(), arr(shape))
    check(lambda m, x: x.mean(), arr(shape))
    check(lambda m, x: x.any(), arr(shape))
    check(lambda m, x: x.argmax(), arr(shape))


def test_reduction_errors():
    check(lambda m, x: x.sum(3), X)
    check(lambda m, x: x.max(dim=5), X)
    check(lambda m, x: x.sum(dim=(0, 0)), X)


def test_nan_and_inf():
    a = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, -np.inf]], dtype=np.float32)
    for fn in (lambda m, x: x.max(), lambda m, x: x.argmax(1), lambda m, x: x.amin(1), lambda m, x: x.sort(1).values,
               lambda m, x: x.logsumexp(1), lambda m, x: x.softmax(1), lambda m, x: x.sum(1)):
        check(fn, a)


def test_large_stable_softmax_and_logsumexp():
    big = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -1002.0]], dtype=np.float32)
    check(lambda m, x: x.softmax(-1), big)
    check(lambda m, x: x.log_softmax(-1), big)
    check(lambda m, x: x.logsumexp(-1), big)


def test_sum_is_thread_count_independent_and_accurate():
    x = ug.randn(3_000_000)
    n = ug.get_num_threads()
    sums = []
    for t in (1, 2, 4):
        ug.set_num_threads(t)
        sums.append((x.sum().item(), x.reshape(3, -1).sum(1).tolist(), x.reshape(-1, 3).sum(0).tolist()))
    ug.set_num_threads(n)
    assert sums[0] == sums[1] == sums[2]
    exact = np.sum(x.numpy().astype(np.float64))
    assert abs(sums[0][0] - exact) < 1e-3 * max(1.0, abs(exact))


@pytest.mark.parametrize("cols", [2, 3, 5, 10, 31, 32])
@pytest.mark.parametrize("rows", [1, 7, 64, 4097, 9000])
def test_column_reductions_of_narrow_rows(rows, cols):
    """Sums, products and extremes down the columns of [rows, cols]: narrow rows are read as
    one stream in groups of whole rows (the rows past the last group, the chunks of 4096 rows
    and the columns' lanes folded in order all count). Against float64 numpy: a sum of `rows`
    terms errs by at most K·rows·eps·Σ|x| (K = 2, reference.py), a product of factors near 1 by
    K·rows·eps relative; extremes are exact, a NaN in a column its result."""
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    t = ug.tensor(x)
    eps = np.finfo(np.float32).eps
    assert np.all(np.abs(t.sum(0).numpy() - x.astype(np.float64).sum(0))
                  <= 2 * rows * eps * np.abs(x.astype(np.float64)).sum(0) + 1e-30)
    near_one = (1 + x / 64).astype(np.float32)
    want = near_one.astype(np.float64).prod(0)
    assert np.all(np.abs(ug.tensor(near_one).prod(0).numpy() - want) <= 2 * rows * eps * np.abs(want))
    assert np.array_equal(t.amax(0).numpy(), x.max(0)) and np.array_equal(t.amin(0).numpy(), x.min(0))
    x[rows // 2, cols - 1] = np.nan
    assert np.isnan(ug.tensor(x).amax(0).numpy()[cols - 1]) and not np.isnan(ug.tensor(x).amax(0).numpy()[0])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
def test_sort(descending, dim):
    check(lambda m, x: tuple(x.sort(dim=dim, descending=descending)), X)
    check(lambda m, x: x.argsort(dim, descending), X)
    check(lambda m, x: tuple(x.sort(dim=dim, descending=descending, stable=True)), arr((6, 5), "int64", low=0, high=3))


def test_topk():
    check(lambda m, x: tuple(x.topk(2)), X)
    check(lambda m, x: tuple(x.topk(3, dim=0, largest=False)), X)
    check(lambda m, x: x.topk(9), X)


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)),
                 ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3,), (2, 3, 4)), ((0, 3), (3, 2)),
                 ((3, 0), (0, 2)), ((1, 64, 65), (65, 33))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int32"])
def test_matmul(shapes, dtype):
    check(lambda m, a, b: a @ b, arr(shapes[0], dtype, seed=1), arr(shapes[1], dtype, seed=2), terms=ABS,
          n=shapes[0][-1])


def test_matmul_transposed_operands_and_errors():
    check(lambda m, a, b: a.t() @ b.t(), arr((5, 4)), arr((3, 5)))
    check(lambda m, a, b: a.mT @ b, arr((2, 5, 4)), arr((2, 5, 3)))
    check(lambda m, a, b: a[:, ::2] @ b, arr((4, 6)), arr((3, 2)))
    check(lambda m, a, b: a @ b, arr((3, 4)), arr((5, 2)))
    check(lambda m, a, b: a @ b, arr(()), arr((3,)))
    check(lambda m, a, b: m.mm(a, b), arr((2, 3, 4)), arr((4, 5)))
    check(lambda m, a, b: m.bmm(a, b), arr((2, 3, 4)), arr((2, 4, 5)))
    check(lambda m, a, b: m.bmm(a, b), arr((2, 3, 4)), arr((3, 4, 5)))
    check(lambda m, a, b: m.dot(a, b), arr((5,)), arr((5,)))
    check(lambda m, a, b: m.outer(a, b), arr((5,)), arr((3,)))
    check(lambda m, a, b: a @ b, arr((3, 4), "float32"), arr((4, 2), "float64"))


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]) if False else ("ij->", [(3, 4)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]), ("ijk->kj", [(2, 3, 4)]), ("ij,jk", [(3, 4), (4, 5)]),
])
def test_einsum(eq, shapes):
    check(lambda m, *xs: m.einsum(eq, *xs), *[arr(s, seed=i) for i, s in enumerate(shapes)], rtol=1e-5, atol=1e-5)


def test_gemm_matches_float64_reference_on_large_sizes():
    a, b = ug.randn(300, 257), ug.randn(257, 129)
    a64, b64 = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    assert_close((a @ b).numpy(), a64 @ b64, "float32", terms=np.abs(a64) @ np.abs(b64), n=257)


@pytest.mark.parametrize("name", ["sum", "mean", "std", "var"])
def test_a_whole_reduction_with_keepdim_keeps_every_dim_as_torch(name):
    check(lambda m, x: getattr(x, name)(dim=None, keepdim=True), arr((2, 3, 4)))


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (1, False), ((0, 2), True)])
def test_std_mean_and_var_mean(name, dim, keepdim):
    check(lambda m, x: getattr(m, name)(x, dim, correction=0, keepdim=keepdim), arr((3, 4, 5)))
    check(lambda m, x: getattr(m, name)(x, dim, keepdim=keepdim), arr((3, 4, 5)))


def _with_nans(a, seed):
    """a with NaNs at a few random places of some rows (floats only)."""
    rng = np.random.default_rng(seed)
    flat = a.reshape(-1).copy()
    flat[rng.choice(flat.size, size=max(1, flat.size // 500), replace=False)] = np.nan
    return flat.reshape(a.shape)


# Lengths around the kernels' blocks (64 values searched at a time, 256 columns, 4096-value
# chunks) and both layouts: reduced dim last (rows) and in the middle (columns).
@pytest.mark.parametrize("shape,dim", [((3, 1), 1), ((2, 63), 1), ((2, 64), 1), ((3, 65), 1), ((2, 4097), 1),
                                       ((1, 10000), 1), ((70, 3), 0), ((5, 300), 0), ((4, 257, 2), 1),
                                       ((2, 5000, 3), 1)])
@pytest.mark.parametrize("dtype,nans", [(d, False) for d in FLOATS + ["int8", "int32", "int64", "uint8", "bool"]]
                         + [(d, True) for d in FLOATS])
def test_extremes_and_their_first_index(shape, dim, dtype, nans):
    """max/min/argmax/argmin (first index of ties; a NaN is the extreme, its first index
    taken) against torch, values drawn from a few levels so that ties are everywhere."""
    x = arr(shape, dtype, low=0, high=4, seed=len(shape) + shape[dim])
    if dtype in FLOATS:
        x.array = np.floor(x.array)
        if nans:
            x.array = _with_nans(x.array, seed=shape[dim])
    for fn in (lambda m, t: t.amax(dim), lambda m, t: t.amin(dim), lambda m, t: t.argmax(dim),
               lambda m, t: t.argmin(dim), lambda m, t: tuple(t.max(dim)), lambda m, t: t.max(),
               lambda m, t: t.min(), lambda m, t: t.argmax()):
        check(fn, x)
