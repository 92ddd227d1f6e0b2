"""torch 2.13's signatures of scatter (a scalar value, reduce=), all/any over a tuple of dims,
count_nonzero(dim=), cumsum/cumprod(dtype=), where(cond) and nonzero(as_tuple=True), and
Tensor.is_inference() against torch on concrete inputs: values, dtypes, gradients and the
errors for bad input."""
import warnings

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op

IDX = np.array([[0, 1, 0], [1, 1, 0]])


def idx(m):
    return m.tensor(IDX)


@pytest.fixture(autouse=True)
def _quiet_torch():
    # torch warns that scatter's reduce= with a tensor src is deprecated for scatter_reduce.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The reduce argument of torch.scatter", UserWarning)
        yield


# ---- scatter


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_scatter_scalar_value(dtype):
    check(lambda m, x: x.scatter(1, idx(m), 3.5 if dtype == "float32" else 1), arr((2, 3), dtype))
    check(lambda m, x: m.scatter(x, 0, idx(m), value=-2), arr((2, 3), dtype))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_scatter_reduce_argument(reduce, dtype):
    check(lambda m, x, s: x.scatter(0, idx(m), s, reduce=reduce), arr((2, 3), dtype), arr((2, 3), dtype, seed=1))
    check(lambda m, x, s: m.scatter(x, 1, idx(m), s, reduce=reduce), arr((2, 3), dtype), arr((2, 4), dtype, seed=1))
    check(lambda m, x: x.scatter(1, idx(m), 2, reduce=reduce), arr((2, 3), dtype))
    check(lambda m, x: m.scatter(x, 0, idx(m), 1.5, reduce=reduce), arr((2, 3), dtype))


def test_scatter_in_place_forms():
    for call in (lambda m, x: x.scatter_(1, idx(m), 4.0),
                 lambda m, x: x.scatter_(0, idx(m), m.ones(2, 3), reduce="add"),
                 lambda m, x: x.scatter_(0, idx(m), 3.0, reduce="multiply"),
                 lambda m, x: x.scatter_(1, idx(m), x.clone(), reduce="multiply")):
        check(lambda m, x: (call(m, x), x)[1], arr((2, 3)))


def _torch_or_ug(ug_form, torch_form):
    """The reduce= forms against torch's scatter_reduce: torch gives them no derivative."""
    return lambda m, *a: ug_form(m, *a) if m is ug else torch_form(m, *a)


@pytest.mark.parametrize("reduce, torch_reduce", [("add", "sum"), ("multiply", "prod")])
def test_scatter_reduce_gradients(reduce, torch_reduce):
    check_op(_torch_or_ug(lambda m, x, s: x.scatter(0, idx(m), s, reduce=reduce),
                          lambda m, x, s: x.scatter_reduce(0, idx(m), s, torch_reduce)),
             arr((2, 3), low=0.5, high=2), arr((2, 3), low=0.5, high=2, seed=1), only=("vjp", "fd"))
    check_op(_torch_or_ug(lambda m, x: x.scatter(1, idx(m), 1.5, reduce=reduce),
                          lambda m, x: x.scatter_reduce(1, idx(m), m.full((2, 3), 1.5), torch_reduce)),
             arr((2, 3)), only=("vjp", "fd"))
    check_op(lambda m, x: x.scatter(1, idx(m), 2.5), arr((2, 3)), only=("vjp", "fd"))


def test_scatter_refuses_bad_input():
    check(lambda m, x, s: x.scatter(0, idx(m), s, reduce="max"), arr((2, 3)), arr((2, 3), seed=1))
    check(lambda m, x: x.scatter(0, idx(m), 1.0, reduce="mean"), arr((2, 3)))
    check(lambda m, x, s: x.scatter(0, idx(m), s, reduce="add"), arr((2, 3), "int64"), arr((2, 3), seed=1))
    check(lambda m, x, s: x.scatter(0, idx(m), s, reduce="add"), arr((2, 3)), arr((1, 3), seed=1))
    check(lambda m, x: x.scatter(0, idx(m), m.tensor(2.0)), arr((2, 3)))
    with pytest.raises(RuntimeError, match=r"\[scatter\] reduce argument must be either add or multiply, got max"):
        ug.zeros(2, 3).scatter(0, ug.tensor(IDX), 1.0, reduce="max")


def test_scatter_reduce_and_index_reduce_exist_as_torch():
    check(lambda m, x, s: x.scatter_reduce(0, idx(m), s, "amax", include_self=False), arr((2, 3)),
          arr((2, 3), seed=1))
    assert hasattr(ug, "scatter_reduce") and hasattr(ug.Tensor, "scatter_reduce_")


# ---- all / any / count_nonzero


@pytest.mark.parametrize("dim", [(0, 1), (1,), (-1, 0), (), [0, 2]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["bool", "float32", "uint8"])
def test_all_any_over_a_tuple_of_dims(dim, keepdim, dtype):
    a = arr((2, 3, 4), dtype, low=0, high=2) if dtype != "bool" else arr((2, 3, 4), dtype)
    check(lambda m, x: x.all(dim=dim, keepdim=keepdim), a)
    check(lambda m, x: m.any(x, dim, keepdim), a)


def test_all_any_refuse_repeated_or_out_of_range_dims():
    check(lambda m, x: x.all(dim=(0, 0)), arr((2, 3), "bool"))
    check(lambda m, x: x.any(dim=(0, -2)), arr((2, 3), "bool"))
    check(lambda m, x: x.any(dim=(0, 5)), arr((2, 3), "bool"))
    with pytest.raises(RuntimeError, match=r"\[all\] dim 0 appears multiple times"):
        ug.ones(2, 3).all(dim=(0, 0))


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1), (1,), ()])
def test_count_nonzero_with_dims(dim):
    a = Arg(np.array([[7.0, -7.0, 0.0], [1.25, 0.0, 0.0]], np.float32))
    check(lambda m, x: m.count_nonzero(x, dim=dim), a)
    check(lambda m, x: x.count_nonzero(dim), a)
    check(lambda m, x: m.count_nonzero(x, dim), arr((2, 3), "bool"))


def test_count_nonzero_refuses_bad_dims():
    check(lambda m, x: m.count_nonzero(x, (0, 0)), arr((2, 3)))
    check(lambda m, x: m.count_nonzero(x, 2), arr((2, 3)))
    check(lambda m, x: m.count_nonzero(x, 0), Arg(np.float32(3.0)))


# ---- cumsum / cumprod with dtype


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("src, dtype", [("int32", None), ("bool", None), ("int32", "float32"), ("float32", "int32"),
                                        ("float32", "float64"), ("int8", "int8"), ("bool", "int8"),
                                        ("float32", "float16")])
def test_cumsum_cumprod_dtype(op, src, dtype):
    a = arr((3, 4), src, low=-4, high=60) if src != "bool" else arr((3, 4), src)
    check(lambda m, x: getattr(x, op)(0, dtype=dtype and getattr(m, dtype)), a)
    check(lambda m, x: getattr(m, op)(x, 1, dtype=dtype and getattr(m, dtype)), a)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumsum_cumprod_dtype_gradient_and_bool_refused(op):
    check_op(lambda m, x: getattr(x, op)(1, dtype=m.float64), arr((2, 4), low=0.5, high=2), only=("forward", "vjp"))
    check(lambda m, x: getattr(x, op)(1, dtype=m.bool), arr((2, 3)))


# ---- where(cond) / nonzero(as_tuple=True)


@pytest.mark.parametrize("shape", [(2, 3), (5,), (), (0, 2)])
def test_where_one_argument_and_nonzero_as_tuple(shape):
    a = arr(shape, "bool")
    for call in (lambda m, x: m.where(x), lambda m, x: m.nonzero(x, as_tuple=True),
                 lambda m, x: x.nonzero(as_tuple=True), lambda m, x: x.nonzero(as_tuple=False)):
        out = call(ug, a.make(ug))
        want = call(torch, a.make(torch))
        if isinstance(want, torch.Tensor):
            out, want = (out,), (want,)
        assert type(out) is tuple and len(out) == len(want)
        for o, w in zip(out, want):
            assert o.dtype == ug.int64 and o.shape == w.shape and np.array_equal(o.numpy(), w.numpy())


# ---- is_inference


def test_is_inference_follows_torch():
    made = {}
    for m in (torch, ug):
        plain = m.ones(3)
        with m.inference_mode():
            inside, view_of_plain, from_plain = m.ones(3), plain[1:], plain + 1
            on = m.is_inference_mode_enabled()
            with m.inference_mode(False):
                ordinary, grad_on, off = m.ones(1), m.is_grad_enabled(), m.is_inference_mode_enabled()
        with m.no_grad():
            under_no_grad = m.ones(2)
        made[m] = (plain.is_inference(), inside.is_inference(), inside[1:].is_inference(),
                   view_of_plain.is_inference(), from_plain.is_inference(), m.is_inference(inside),
                   ordinary.is_inference(), under_no_grad.is_inference(), on, off, grad_on,
                   m.is_inference_mode_enabled())
    assert made[ug] == made[torch] == (False, True, True, False, True, True, False, False, True, False, True, False)
