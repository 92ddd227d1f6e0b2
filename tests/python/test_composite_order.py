"""Order statistics, unique, bincount, histc, searchsorted, bucketize, cummax / cummin and
logcumsumexp (src/ug/ops/composite_order.cpp, compositions of sort, gather, scatter and
cumulative sums) against torch 2.13: values and indices, gradients against torch and float64
finite differences, forward mode and vmap. Sorting has no ONNX form (export_table.cpp's
unsupported list), and ug.jit traces through the exporter, so neither applies to the ops that
sort."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op

NO_SORT_EXPORT = {"onnx": "sort has no ONNX export (export_table.cpp: unsupported)",
                  "jit": "ug.jit traces through the exporter, which has no sort"}
READS_VALUES = {"onnx": "the result's size depends on the values (read with item)",
                "jit": "the result's size depends on the values (read with item)"}
NAN = np.nan


def with_nans(shape, where, seed=0):
    """arr's values with NaNs at the given flat positions."""
    a = arr(shape, seed=seed).array.copy()
    a.reshape(-1)[list(where)] = NAN
    return Arg(a)


def ties(shape, values=3, seed=0, dtype="float32"):
    """Values drawn from a few integers: rows with repeated values."""
    return Arg(np.random.default_rng(seed).integers(0, values, size=shape).astype(dtype))


# ---- median, nanmedian, kthvalue, mode ---------------------------------------------------------


@pytest.mark.parametrize("dim, keepdim", [(1, False), (0, True), (-1, True)])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_along_a_dim_is_the_lower_median_with_its_index(op, dim, keepdim):
    for shape in [(4, 6), (5, 7)]:  # even rows: the lower of the two middle values
        check_op(lambda m, x: getattr(m, op)(x, dim, keepdim=keepdim), arr(shape), off=NO_SORT_EXPORT)
    check_ties(lambda m, x, dim: getattr(x, op)(dim=dim, keepdim=keepdim), arr((3, 4), "int64", -5, 5), dim)


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_of_every_element(op):
    check_op(lambda m, x: getattr(m, op)(x), arr((4, 6)), off=NO_SORT_EXPORT)
    check_op(lambda m, x: getattr(x, op)(), arr((5,)), off=NO_SORT_EXPORT)
    check(lambda m, x: getattr(m, op)(x), arr((7,), "int32"))
    check(lambda m, x: getattr(m, op)(x), Arg(np.zeros((0,), np.float32)))  # empty: NaN
    check(lambda m, x: getattr(m, op)(x, 0), arr((1,)).array.reshape(()))  # 0-d along dim 0
    check(lambda m, x: getattr(m, op)(x, 1), Arg(np.zeros((3, 0), np.float32)))  # an empty dim: both refuse
    check(lambda m, x: getattr(m, op)(x, 2), arr((3, 4)))  # no such dim


def test_median_takes_a_rows_nan_and_nanmedian_skips_them():
    x = with_nans((4, 6), [1, 3, 8, 18, 19, 20, 21, 22, 23])  # row 3: all NaN
    for op in ("median", "nanmedian"):
        check(lambda m, x: getattr(m, op)(x[:3], 1), x)
        check(lambda m, x: getattr(m, op)(x), x)
        check(lambda m, x: getattr(m, op)(x[:3]), x)
    check(lambda m, x: m.median(x, 1), x)
    # an all-NaN row: torch's nanmedian index is whichever NaN its selection leaves; ours is a NaN too
    values, indices = ug.nanmedian(ug.tensor(x.array), 1)
    assert np.isnan(values.numpy()[3]) and np.isnan(x.array[3, int(indices[3])])
    check_op(lambda m, x: m.nanmedian(x[:3], 1).values, x, only=("forward", "vjp"))


def check_ties(op, x, *args, **kwargs):
    """A selection among equal values: torch's index is whichever its selection algorithm
    leaves, so the values are compared, and the index must hold the value selected."""
    check(lambda m, x: op(m, x, *args, **kwargs).values, x)
    values, indices = op(ug, ug.tensor(x.array), *args, **kwargs)
    dim = kwargs.get("dim", args[-1] if args else -1)
    picked = np.take_along_axis(x.array, np.expand_dims(indices.numpy(), dim) if values.dim() < x.array.ndim
                                else indices.numpy(), dim)
    np.testing.assert_array_equal(picked.reshape(values.shape), values.numpy())


@pytest.mark.parametrize("k, dim, keepdim", [(1, 1, False), (3, 0, True), (6, -1, False)])
def test_kthvalue(k, dim, keepdim):
    check_op(lambda m, x: m.kthvalue(x, k, dim, keepdim), arr((6, 6)), off=NO_SORT_EXPORT)
    check_ties(lambda m, x, k, dim: x.kthvalue(k, dim=dim), arr((6, 6), "int64", -4, 4), k, dim)
    check(lambda m, x: x.kthvalue(7), arr((6, 6)))  # k out of range: both refuse
    check(lambda m, x: x.kthvalue(0), arr((6, 6)))


@pytest.mark.parametrize("dim, keepdim", [(1, False), (0, True)])
def test_mode_is_the_smallest_most_frequent_value_at_its_last_occurrence(dim, keepdim):
    for seed in range(4):
        check(lambda m, x: m.mode(x, dim, keepdim), ties((5, 9), seed=seed, dtype="int64"))
        check(lambda m, x: x.mode(dim, keepdim=keepdim), ties((6, 7), values=4, seed=seed))
    check_op(lambda m, x: m.mode(x, dim, keepdim), ties((5, 9)), off={
        **NO_SORT_EXPORT, "fd": "a step breaks the ties that make the mode: the derivative is vjp's, checked on torch"})
    check(lambda m, x: m.mode(x), arr((1,)).array.reshape(()))


# ---- quantile, nanquantile ------------------------------------------------------------------------

INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (1, False), (0, True)])
def test_quantile(interpolation, dim, keepdim):
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)  # 0.25 of 6: a rank of 1.25; of 5: exactly 1
    for shape in [(4, 6), (5, 5)]:
        check_op(lambda m, x: m.quantile(x, m.tensor(q, dtype=x.dtype), dim, keepdim, interpolation=interpolation),
                 arr(shape), off=NO_SORT_EXPORT)
        check_op(lambda m, x: x.quantile(0.3, dim=dim, keepdim=keepdim, interpolation=interpolation), arr(shape),
                 off=NO_SORT_EXPORT)
        check(lambda m, x, q: m.nanquantile(x, q, dim, keepdim, interpolation=interpolation), arr(shape), q)


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_with_nans(interpolation):
    x = with_nans((4, 6), [1, 3, 8, 18, 19, 20, 21, 22, 23])
    q = np.array([0.1, 0.5, 0.75], np.float64)
    for op in ("quantile", "nanquantile"):
        check(lambda m, x, q: getattr(m, op)(x.double(), q, 1, interpolation=interpolation), x, q)
        check(lambda m, x: getattr(m, op)(x, 0.4, interpolation=interpolation), x)
    check_op(lambda m, x: m.nanquantile(x[:3], 0.6, 1), x, only=("forward", "vjp"))


def test_quantile_refuses_what_torch_refuses():
    check(lambda m, x: m.quantile(x, 1.5), arr((4,)))
    check(lambda m, x: m.quantile(x, m.tensor([0.5, -0.1])), arr((4,)))
    check(lambda m, x: m.quantile(x, m.tensor([0.5], dtype=m.float64)), arr((4,)))
    check(lambda m, x: m.quantile(x, 0.5), arr((4,), "int64"))
    check(lambda m, x: m.quantile(x, m.tensor([[0.5]])), arr((4,)))
    check(lambda m, x: m.quantile(x[:0], 0.5), arr((4,)))
    check(lambda m, x: m.quantile(x, 0.5, interpolation="cubic"), arr((4,)))


# ---- unique, unique_consecutive, bincount, histc -----------------------------------------------


@pytest.mark.parametrize("return_inverse", [False, True])
@pytest.mark.parametrize("return_counts", [False, True])
def test_unique(return_inverse, return_counts):
    flags = dict(return_inverse=return_inverse, return_counts=return_counts)
    for x in [ties((4, 6), values=5, dtype="int64"), ties((7,)), arr((3, 2)), Arg(np.array([2.0, NAN, 1.0, NAN]))]:
        check(lambda m, x: m.unique(x, **flags), x)
        check(lambda m, x: x.unique_consecutive(**flags), x)
    rows = Arg(np.array([[3, 1, 2], [0, 5, 2], [3, 1, 2], [0, 5, 1], [0, 5, 2]]))
    for dim in (0, 1, -2):
        check(lambda m, x: m.unique(x, dim=dim, **flags), rows)
        check(lambda m, x: m.unique(x.t(), dim=1 - dim % 2, **flags), rows)
        check(lambda m, x: m.unique_consecutive(x, dim=dim, **flags), rows)
    slices = ties((3, 4, 2), values=2, dtype="int64")
    check(lambda m, x: m.unique(x, dim=1, **flags), slices)
    check(lambda m, x: m.unique(x, dim=2, **flags), slices)
    check(lambda m, x: m.unique(x, **flags), Arg(np.zeros((0, 3), np.float32)))


def test_unique_unsorted_holds_the_same_values_and_inverse():
    x = ug.tensor(np.random.default_rng(0).integers(0, 6, size=20))
    values, inverse = ug.unique(x, sorted=False, return_inverse=True)
    np.testing.assert_array_equal(np.sort(values.numpy()), np.unique(x.numpy()))
    np.testing.assert_array_equal(values.numpy()[inverse.numpy()], x.numpy())


def test_unique_refuses_a_missing_dim():
    check(lambda m, x: m.unique(x, dim=2), arr((3, 4)))
    check(lambda m, x: m.unique_consecutive(x, dim=-3), arr((3, 4)))


@pytest.mark.parametrize("minlength", [0, 3, 12])
def test_bincount(minlength):
    x = Arg(np.array([1, 3, 1, 0, 7, 3, 3]))
    check(lambda m, x: m.bincount(x, minlength=minlength), x)
    for weights in [arr((7,)), arr((7,), "float64"), arr((7,), "int64"), arr((7,), "float16")]:
        check(lambda m, x, w: x.bincount(w, minlength=minlength), x, weights)
    check(lambda m, x: m.bincount(x[:0], minlength=minlength), x)
    check(lambda m, x: m.bincount(x.int()), x)


def test_bincount_refuses_what_torch_refuses():
    check(lambda m, x: m.bincount(x), Arg(np.array([1, -1])))
    check(lambda m, x: m.bincount(x), arr((3,)))
    check(lambda m, x: m.bincount(x), Arg(np.array([[1, 2]])))
    check(lambda m, x, w: m.bincount(x, w), Arg(np.array([1, 2])), arr((3,)))
    check(lambda m, x: m.bincount(x, minlength=-1), Arg(np.array([1, 2])))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bins, lo, hi", [(4, 0, 3), (10, 0, 0), (7, -1.5, 2.25), (3, 5, 9)])
def test_histc(dtype, bins, lo, hi):
    x = arr((200,), dtype)
    check(lambda m, x: m.histc(x, bins=bins, min=lo, max=hi), x)
    check(lambda m, x: x.histc(bins, lo, hi), Arg(np.array([0.0, 1.0, 2.0, 3.0, 3.0, -1.0], dtype)))
    check(lambda m, x: m.histc(x, 5), Arg(np.full((4,), 2.0, dtype)))  # one value: the range [1, 3]


def test_histc_refuses_what_torch_refuses():
    check(lambda m, x: m.histc(x, 0), arr((4,)))
    check(lambda m, x: m.histc(x, 4, 2, 1), arr((4,)))
    check(lambda m, x: m.histc(x), arr((4,), "int64"))
    check(lambda m, x: m.histc(x), Arg(np.array([1.0, np.inf], np.float32)))


# ---- searchsorted, bucketize -------------------------------------------------------------------

SEQ = np.array([-2.0, -0.5, -0.5, 0.0, 1.0, 1.0, 1.0, 2.5], np.float32)  # with repeated values


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    values = Arg(np.array([[-3.0, -0.5, 0.2, 1.0], [2.5, 9.0, -2.0, 0.0]], np.float32))
    check(lambda m, s, v: m.searchsorted(s, v, right=right), Arg(SEQ), values)
    check(lambda m, s, v: m.searchsorted(s, v, side="right" if right else "left"), Arg(SEQ), values)
    check(lambda m, s, v: m.searchsorted(s, v, right=right, out_int32=True), Arg(SEQ), values)
    check(lambda m, s: m.searchsorted(s, 1.0, right=right), Arg(SEQ))
    check(lambda m, s, v: m.bucketize(v, s, right=right), Arg(SEQ), values)
    check(lambda m, s, v: m.bucketize(v, s, right=right, out_int32=True), Arg(SEQ), values)
    # a batch of sequences, each row searched by its own values
    rows = np.sort(np.random.default_rng(0).integers(0, 6, size=(3, 8)), axis=1)
    check(lambda m, s, v: m.searchsorted(s, v, right=right), Arg(rows), arr((3, 5), "int64", -1, 7))
    check(lambda m, s, v: m.searchsorted(s, v, right=right), Arg(rows), arr((3, 5), low=-1, high=7))
    # sorter: the order that sorts an unsorted sequence
    shuffled = np.random.default_rng(1).permutation(SEQ)
    check(lambda m, s, v: m.searchsorted(s, v, right=right, sorter=s.argsort(stable=True)), Arg(shuffled), values)
    check_op(lambda m, s, v: m.searchsorted(s, v, right=right), Arg(rows), arr((3, 5), low=-1, high=7),
             only=("forward", "vmap"))


def test_searchsorted_refuses_what_torch_refuses():
    check(lambda m, s, v: m.searchsorted(s, v), arr((2, 4)), arr((3, 4)))
    check(lambda m, s, v: m.searchsorted(s, v, side="middle"), Arg(SEQ), arr((3,)))
    check(lambda m, s, v: m.searchsorted(s, v, side="left", right=True), Arg(SEQ), arr((3,)))
    check(lambda m, s, v: m.bucketize(v, s), arr((2, 4)), arr((3,)))


# ---- cummax, cummin, logcumsumexp ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_and_cummin(op, dim):
    check_op(lambda m, x: getattr(m, op)(x, dim), arr((5, 13)))
    check(lambda m, x: getattr(x, op)(dim), ties((6, 9), seed=2, dtype="int64"))  # ties: the later index
    check(lambda m, x: getattr(m, op)(x, dim), with_nans((5, 13), [3, 20, 21, 40]))
    check(lambda m, x: getattr(m, op)(x, 0), arr((1,)).array.reshape(()))
    check_op(lambda m, x: getattr(m, op)(x, dim), ties((5, 13)), only=("forward", "vjp"))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp(dim):
    check_op(lambda m, x: m.logcumsumexp(x, dim), arr((5, 13)))
    # values of 200, whose float32 roundings of 200·eps reach the gradients: float64
    big = arr((4, 37), "float64", low=-200, high=200)
    check_op(lambda m, x: x.logcumsumexp(dim), big, off={
        "jvp": "torch's forward-mode rule underflows here (tangents of 1e-44 for derivatives near 1): "
               "checked below against torch's reverse-mode Jacobian"})
    tangent = np.random.default_rng(1).uniform(-1, 1, big.array.shape)
    jacobian = torch.autograd.functional.jacobian(lambda a: a.logcumsumexp(dim), torch.tensor(big.array))
    expected = np.einsum("ijkl,kl->ij", jacobian.numpy(), tangent)
    _, actual = ug.jvp(lambda a: a.logcumsumexp(dim), (ug.tensor(big.array),), (ug.tensor(tangent),))
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-10, atol=1e-12)
    check(lambda m, x: m.logcumsumexp(x, 0), arr((1,)).array.reshape(()))
    check(lambda m, x: m.logcumsumexp(x, 0), Arg(np.array([-np.inf, -np.inf, 0.0, np.inf], np.float32)))
    check(lambda m, x: m.logcumsumexp(x, 0), arr((3,), "int64"))
