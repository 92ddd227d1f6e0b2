"""torch ops unigrad lacked: index_reduce, diagonal_scatter, as_strided_scatter, histogram,
cumulative_trapezoid and gradient, against torch 2.13 on random inputs (values, and every
transform of check_op where torch differentiates them), and bad arguments raising clear errors."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce:UserWarning")  # torch calls it beta


TORCH_AS_STRIDED_SCATTER = ("torch's gradient in input is wrong: grad where src was written, 0 elsewhere (fd "
                            "checks ours)")


def const(values, dtype=np.int64):
    return Arg(np.array(values, dtype=dtype))


# ---- index_reduce


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    # index 1 twice and 3 once along dim 1; the others keep x's values
    check_op(lambda m, a, i, s: m.index_reduce(a, 1, i, s, reduce, include_self=include_self), arr((3, 4)),
             const([1, 3, 1]), arr((3, 3), seed=1), opset=18,
             off={"jvp": "torch.func.jvp of index_reduce is not implemented"})


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_forms_and_dtypes(reduce):
    check(lambda m, a, i, s: a.index_reduce(0, i, s, reduce), arr((4, 2, 3)), const([3, 0, 3, 3, 2]),
          arr((5, 2, 3), seed=1))
    check(lambda m, a, i, s: a.index_reduce(-1, i, s, reduce, include_self=False), arr((2, 5), "int64", high=9),
          const([4, 0, 4]), arr((2, 3), "int64", high=9, seed=1))
    check(lambda m, a, i, s: a.index_reduce(0, i, s, reduce), arr((3,), "float64"), const([2, 2]),
          arr((2,), "float64", seed=1))

    def in_place(m, a, i, s):
        y = a.clone()
        out = y.index_reduce_(0, i, s, reduce, include_self=False)
        return y, out

    check(in_place, arr((4, 3)), const([1, 1, 0]), arr((3, 3), seed=1))


def test_index_reduce_equal_extremes_share_the_gradient():
    # amax over ties: torch splits a place's gradient evenly among the elements equal to it
    x = np.array([[1.0, 5.0], [2.0, 0.0]], np.float32)
    s = np.array([[5.0, 5.0], [5.0, -1.0]], np.float32)
    grads = []
    for m in (torch, ug):
        a, b = m.tensor(x, requires_grad=True), m.tensor(s, requires_grad=True)
        m.index_reduce(a, 0, m.tensor([0, 0]), b, "amax").sum().backward()
        grads.append((np.asarray(a.grad.tolist()), np.asarray(b.grad.tolist())))
    np.testing.assert_allclose(grads[1][0], grads[0][0])
    np.testing.assert_allclose(grads[1][1], grads[0][1])


def test_index_reduce_refuses_bad_arguments():
    x, s = ug.ones(3, 4), ug.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"\[index_reduce\] reduce must be one of prod, mean, amax or amin, got 'sum'"):
        ug.index_reduce(x, 0, ug.tensor([0, 1]), s, "sum")
    with pytest.raises(IndexError, match=r"\[index_reduce\] source of shape \[2, 3\]"):
        x.index_reduce(0, ug.tensor([0, 1]), ug.ones(2, 3), "prod")
    with pytest.raises(IndexError, match=r"\[index_reduce\] source of shape \[3, 4\] must match x's shape \[3, 4\] "
                                         r"with 2 slices"):
        x.index_reduce(0, ug.tensor([0, 1]), ug.ones(3, 4), "prod")
    with pytest.raises(IndexError, match=r"\[index_reduce\] an index is out of range \[0, 3\)"):
        x.index_reduce(0, ug.tensor([5, 0]), s, "amax")
    with pytest.raises(IndexError, match=r"\[index_reduce\] an index is out of range"):
        x.index_reduce(0, ug.tensor([-1, 0]), s, "amax")  # torch takes no negative indices here
    with pytest.raises(IndexError, match=r"\[index_reduce\] index must be a 0-d or 1-d integer tensor"):
        x.index_reduce(0, ug.tensor([0.0, 1.0]), s, "mean")
    with pytest.raises(RuntimeError, match=r"\[index_reduce\] source's dtype float64 must be x's float32"):
        x.index_reduce(0, ug.tensor([0, 1]), s.double(), "mean")
    # and torch refuses each of them too
    for fn in (lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 1]), m.ones(2, 4), "sum"),
               lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 1]), m.ones(2, 3), "prod"),
               lambda m: m.ones(3, 4).index_reduce(0, m.tensor([5, 0]), m.ones(2, 4), "amax"),
               lambda m: m.ones(3, 4).index_reduce(0, m.tensor([-1, 0]), m.ones(2, 4), "amax"),
               lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 1]), m.ones(2, 4).double(), "mean")):
        check(fn)


# ---- diagonal_scatter and as_strided_scatter


@pytest.mark.parametrize("offset, dim1, dim2, src", [(0, 0, 1, (3,)), (1, 0, 1, (3,)), (-2, 0, 1, (1,)),
                                                      (0, 2, 0, (3, 3)), (-1, -1, 1, (3, 3))])
def test_diagonal_scatter(offset, dim1, dim2, src):
    x_shape = (3, 4) if src in [(3,), (1,)] else (3, 3, 4)
    check_op(lambda m, a, s: m.diagonal_scatter(a, s, offset, dim1, dim2), arr(x_shape), arr(src, seed=1),
             )


def test_diagonal_scatter_method_and_dtypes():
    check(lambda m, a, s: a.diagonal_scatter(s, offset=1), arr((4, 4), "int64"), arr((3,), "int64", seed=1))
    check(lambda m, a, s: a.diagonal_scatter(s), arr((2, 3)), arr((2,), "float64", seed=1))  # src cast to x's
    check(lambda m, a, s: m.diagonal_scatter(a, s, 0, 1, 2), arr((2, 3, 3), view=lambda t: t.transpose(1, 2)), arr((2, 3), seed=1))


@pytest.mark.parametrize("size, stride, offset", [((2, 2), (1, 2), None), ((2, 3), (4, 1), 5), ((3,), (5,), 1),
                                                   ((1, 2), (0, 1), 0), ((), (), 7)])
def test_as_strided_scatter(size, stride, offset):
    check_op(lambda m, a, s: m.as_strided_scatter(a, s, size, stride, offset), arr((3, 4)), arr(size, seed=1),
             off={"vjp": TORCH_AS_STRIDED_SCATTER})


def test_as_strided_scatter_method():
    check(lambda m, a, s: a.as_strided_scatter(s, (2, 2), (3, 1), storage_offset=2), arr((4, 3), "int64"),
          arr((2, 2), "int64", seed=1))
    # torch writes into a copy of x's storage, with x's strides and offset: positions are storage's
    for view in (lambda t: t[:, 1:], lambda t: t[1:], lambda t: t.t(), lambda t: t[:, ::2]):
        check(lambda m, a, s: a.as_strided_scatter(s, (2, 2), (2, 1)), arr((3, 4), view=view), arr((2, 2), seed=1))
        check(lambda m, a, s: a.as_strided_scatter(s, (2, 2), (2, 1), 3), arr((3, 4), view=view), arr((2, 2), seed=1))
    check(lambda m, a, s: a.as_strided_scatter(s, (2,), (3,)), arr((1, 3), view=lambda t: t.expand(2, 3)),
          arr((2,), seed=1))  # an overlapping x is copied contiguous first


def test_scatters_refuse_bad_arguments():
    with pytest.raises(RuntimeError, match=r"\[diagonal_scatter\] src of shape \[4\] must have the diagonal's "
                                           r"shape \[3\]"):
        ug.diagonal_scatter(ug.zeros(3, 4), ug.ones(4))
    with pytest.raises(RuntimeError, match=r"\[diagonal_scatter\] needs at least 2 dims"):
        ug.diagonal_scatter(ug.zeros(3), ug.ones(1))
    with pytest.raises(RuntimeError, match=r"\[as_strided_scatter\] src of shape \[2, 3\] must have the view's "
                                           r"size \[2, 2\]"):
        ug.as_strided_scatter(ug.zeros(3, 4), ug.ones(2, 3), (2, 2), (1, 2))
    with pytest.raises(RuntimeError, match=r"\[as_strided_scatter\] the view .* reaches element 14 of a storage of 12"):
        ug.as_strided_scatter(ug.zeros(3, 4), ug.ones(2, 2), (2, 2), (1, 2), 11)
    with pytest.raises(RuntimeError, match=r"\[as_strided_scatter\] sizes and strides must be non-negative"):
        ug.as_strided_scatter(ug.zeros(3, 4), ug.ones(2, 2), (2, 2), (1, -2), 3)
    with pytest.raises(RuntimeError, match=r"\[as_strided_scatter\] the view of size \[2, 2\] and stride \[0, 1\] "
                                           r"writes some elements more than once"):
        ug.as_strided_scatter(ug.zeros(3, 4), ug.ones(2, 2), (2, 2), (0, 1))
    with pytest.raises(RuntimeError, match=r"\[as_strided_scatter\] size \[2, 2\] and stride \[1\]"):
        ug.as_strided_scatter(ug.zeros(3, 4), ug.ones(2, 2), (2, 2), (1,))
    for fn in (lambda m: m.diagonal_scatter(m.zeros(3, 4), m.ones(4)),
               lambda m: m.diagonal_scatter(m.zeros(3, 4), m.ones(3), 0, 0, 0),
               lambda m: m.as_strided_scatter(m.zeros(3, 4), m.ones(2, 3), (2, 2), (1, 2)),
               lambda m: m.as_strided_scatter(m.zeros(3, 4), m.ones(2, 2), (2, 2), (1, 2), 11),
               lambda m: m.as_strided_scatter(m.zeros(3, 4), m.ones(2, 2), (2, 2), (1, -2), 3),
               lambda m: m.as_strided_scatter(m.zeros(3, 4), m.ones(2, 2), (2, 2), (0, 1))):
        check(fn)


# ---- histogram


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bins, range_", [(1, None), (4, None), (7, None), (5, (-1.0, 2.0)), (3, (1.0, 1.0)),
                                          (6, (-10, 10))])
def test_histogram_equal_bins(dtype, bins, range_):
    for shape in [(40,), (5, 6), (0,)]:
        check(lambda m, a: tuple(m.histogram(a, bins, range=range_)), arr(shape, dtype))
        check(lambda m, a, w: tuple(a.histogram(bins, range=range_, weight=w, density=True)), arr(shape, dtype),
              arr(shape, dtype, low=0.0, high=2.0, seed=1))
    check(lambda m, a: tuple(m.histogram(a, bins)), Arg(np.full((3,), 2.5, dtype)))  # one value: widened by 0.5
    check(lambda m, a: tuple(m.histogram(a, bins)), arr((30,), dtype, low=-1e-3, high=1e-3, seed=2))


def test_histogram_edges_and_names():
    # the right edge in the last bin, values on inner edges in the bin to their right
    x = const([0.0, 1.0, 1.5, 2.0, 10.0, 10.5, -1.0], np.float32)
    edges = const([0.0, 1.5, 2.0, 10.0], np.float32)
    check(lambda m, a, e: tuple(m.histogram(a, e)), x, edges)
    check(lambda m, a, e, w: tuple(m.histogram(a, e, weight=w, density=True)), x, edges, arr((7,), low=0.5, seed=3))
    check(lambda m, a, e: tuple(a.histogram(e)), x, const([3.0, 1.0, 2.0], np.float32))  # unsorted: as torch
    out = ug.histogram(ug.tensor([1.0, 2.0, 1.0, 4.0]), 3)
    assert out.hist.tolist() == [2.0, 1.0, 1.0] and out.bin_edges.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert type(out).__name__ == "histogram"


def test_histogram_refuses_bad_arguments():
    x = ug.tensor([1.0, 2.0, 4.0])
    cases = [
        (lambda m: m.histogram(m.tensor([1, 2]), 2), r"\[histogram\] needs a floating tensor, got int64"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), 0), r"\[histogram\] bins must be > 0, got 0"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), 2, range=(2.0, 1.0)), r"range's min \(2\) must not exceed"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0]).double()),
         r"\[histogram\] bins must be a 1-d tensor of at least 2 edges in the input's dtype float32, got float64"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), m.tensor([1.0])), r"at least 2 edges"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), m.tensor([[1.0, 2.0]])), r"got float32 \[1, 2\]"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), 2, weight=m.ones(3)),
         r"\[histogram\] weight must have the input's shape \[2\] and dtype float32, got float32 \[3\]"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), 2, weight=m.ones(2).double()), r"weight must have"),
        (lambda m: m.histogram(m.tensor([1.0, float("nan")]), 2), r"\[histogram\] range \[nan, nan\] is not finite"),
        (lambda m: m.histogram(m.tensor([1.0, 2.0]), 2, range=(0.0, float("inf"))), r"is not finite"),
    ]
    for fn, message in cases:
        check(fn)  # torch refuses it too
        with pytest.raises(RuntimeError, match=message):
            fn(ug)
    assert x.histogram(2).hist.tolist() == [2.0, 1.0]


# ---- cumulative_trapezoid and gradient


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_cumulative_trapezoid(dim):
    check_op(lambda m, y: m.cumulative_trapezoid(y, dim=dim), arr((3, 4, 5)))
    check_op(lambda m, y: m.cumulative_trapezoid(y, dx=0.5, dim=dim), arr((3, 4, 5)))
    n = (3, 4, 5)[dim]
    check_op(lambda m, y, t: m.cumulative_trapezoid(y, t, dim=dim), arr((3, 4, 5)), arr((n,), seed=1),
             )
    check_op(lambda m, y, t: m.cumulative_trapezoid(y, t, dim=dim), arr((3, 4, 5)), arr((3, 4, 5), seed=1),
             )


def test_cumulative_trapezoid_edge_cases():
    check(lambda m, y: m.cumulative_trapezoid(y), arr((4,), "int64"))
    check(lambda m, y: m.cumulative_trapezoid(y, dx=2), arr((4,), "int64"))
    check(lambda m, y, t: m.cumulative_trapezoid(y, t), arr((4,), "int64"), arr((4,), "int64", seed=1))
    check(lambda m, y, t: m.cumulative_trapezoid(y, t), arr((2, 4)), arr((1, 4), seed=1))  # x broadcasts
    check(lambda m, y: m.cumulative_trapezoid(y), arr((2, 0)))
    check(lambda m, y: m.cumulative_trapezoid(y, dim=0), arr((1, 3)))
    for fn, kind, message in [
        (lambda m: m.cumulative_trapezoid(m.ones(2, 3), m.ones(2)), RuntimeError,
         r"\[cumulative_trapezoid\] x needs one value per sample point: 1-d of length 3"),
        (lambda m: m.cumulative_trapezoid(m.ones(2, 3), m.ones(3), dx=1.0), TypeError, r"takes x or dx, not both"),
        (lambda m: m.cumulative_trapezoid(m.tensor(1.0)), IndexError, r"needs at least 1 dim"),
        (lambda m: m.cumulative_trapezoid(m.ones(2, 3), dim=2), IndexError, r"cumulative_trapezoid"),
    ]:
        check(fn)
        with pytest.raises(kind, match=message):
            fn(ug)


def _gradient(**kw):
    return lambda m, a: m.gradient(a, **kw)


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("kw", [{}, {"spacing": 2.0}, {"dim": 1}, {"dim": [-1, 0], "spacing": [0.5, 3]},
                                {"spacing": (2, 0.25)}, {"dim": 0, "spacing": [1.5]}])
def test_gradient_uniform(edge_order, kw):
    check_op(_gradient(edge_order=edge_order, **kw), arr((4, 5)))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates(edge_order):
    check_op(lambda m, a, c: m.gradient(a, spacing=[c], dim=1, edge_order=edge_order), arr((3, 5)),
             Arg(np.array([0.0, 0.5, 1.75, 2.0, 3.5], np.float32)))
    check_op(lambda m, a, c, d: m.gradient(a, spacing=(c, d), edge_order=edge_order), arr((3, 4)),
             Arg(np.array([-1.0, 0.0, 2.0], np.float32)), Arg(np.array([0.0, 0.5, 1.5, 1.75], np.float32)),
             )


def test_gradient_dtypes_and_shapes():
    check(lambda m, a: m.gradient(a), arr((6,), "int64", high=20))
    check(lambda m, a: m.gradient(a, edge_order=2), arr((6,), "int64", high=20))
    check(lambda m, a: m.gradient(a, spacing=3), arr((3, 2, 4), "float64"))
    check(lambda m, a: m.gradient(a, dim=(2, 0), edge_order=2), arr((3, 2, 4), "float64"))
    assert ug.gradient(ug.tensor(1.0)) == ()


def test_gradient_refuses_bad_arguments():
    y = lambda m: m.arange(6.0).view(2, 3)  # noqa: E731
    cases = [
        (lambda m: m.gradient(y(m), edge_order=3), r"\[gradient\] edge_order must be 1 or 2, got 3"),
        (lambda m: m.gradient(y(m), edge_order=2, dim=0),
         r"\[gradient\] each dim needs at least edge_order \+ 1 = 3 entries, got shape \[2, 3\] along dim 0"),
        (lambda m: m.gradient(y(m), spacing=[1.0, 2.0, 3.0]),
         r"\[gradient\] spacing must be a scalar or have one entry per dim \(2\), got 3"),
        (lambda m: m.gradient(y(m), dim=[0, 0]), r"\[gradient\] dim 0 appears multiple times"),
        (lambda m: m.gradient(y(m), spacing=[m.ones(2, 2)], dim=0),
         r"\[gradient\] coordinates along dim 0 must be 1-d with 2 entries, got shape \[2, 2\]"),
    ]
    for fn, message in cases:
        check(fn)
        with pytest.raises(RuntimeError, match=message):
            fn(ug)
    with pytest.raises(RuntimeError, match=r"coordinates along dim 1 must be 1-d with 3 entries, got shape \[2\]"):
        ug.gradient(y(ug), spacing=[ug.ones(2)], dim=1)  # torch reads past them and gives inf


# ---- nextafter and i0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nextafter(dtype):
    info = np.finfo(dtype)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, np.inf, -np.inf, np.nan, float(info.max), float(info.smallest_subnormal),
             float(info.smallest_normal), 1e-40, 3.0]
    a = np.array([e for e in edges for _ in edges], dtype)
    b = np.array(edges * len(edges), dtype)
    check(lambda m, x, y: m.nextafter(x, y), Arg(a), Arg(b), rtol=0, atol=0)
    check(lambda m, x, y: x.nextafter(y), arr((3, 4), dtype), arr((4,), dtype, seed=1), rtol=0, atol=0)
    check(lambda m, x, y: x.clone().nextafter_(y), arr((3, 4), dtype), arr((4,), dtype, seed=1), rtol=0, atol=0)


def test_nextafter_promotes_and_refuses_integers():
    check(lambda m, x, y: m.nextafter(x, y), arr((5,)), arr((5,), "float64", seed=1), rtol=0, atol=0)
    check(lambda m, x, y: m.nextafter(x, y), arr((5,)), arr((5,), "int64", seed=1), rtol=0, atol=0)
    check(lambda m: m.nextafter(m.tensor([1, 2]), m.tensor([3, 0])))
    with pytest.raises(RuntimeError, match=r"\[nextafter\] needs a floating tensor, got int64 \[2\] and int64"):
        ug.nextafter(ug.tensor([1, 2]), ug.tensor([3, 0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_i0(dtype):
    check_op(lambda m, x: m.i0(x), arr((4, 6), dtype, low=-30.0, high=30.0),
             only=("forward", "vjp", "fd", "jvp", "vmap"), rtol=1e-9 if dtype == "float64" else None)
    x = Arg(np.array([0.0, -0.5, 19.99, 20.0, 20.01, -45.0, 90.0, 700.0, 720.0, np.inf, -np.inf, np.nan], dtype))
    check(lambda m, t: m.i0(t), x, rtol=1e-13 if dtype == "float64" else None)
    check(lambda m, t: m.special.i0(t), x, rtol=1e-13 if dtype == "float64" else None)
    check(lambda m, t: t.i0(), arr((5,), "int64", low=-5, high=5))
    check(lambda m, t: t.clone().i0_(), arr((5,), dtype))
