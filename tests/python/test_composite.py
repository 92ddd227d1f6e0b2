"""torch's conveniences built from other ops (src/ug/ops/composite.h), the NumPy-name aliases,
the new_* factories and finfo / iinfo, against torch 2.13: every transform where the op is
differentiable (check_op: vjp, finite differences, jvp, vmap, ONNX Runtime, jit)."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check, check_op


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-2, 0, 1, 5])
def test_triangles(op, diagonal):
    check_op(lambda m, x: getattr(m, op)(x, diagonal), arr((2, 4, 5)))
    check(lambda m, x: getattr(x, op)(diagonal=diagonal), arr((3, 3), "int64"))
    check(lambda m, x: getattr(x.clone(), op + "_")(diagonal), arr((4, 2)))
    check(lambda m, x: getattr(m, op)(x), arr((4,)))  # too few dims: both refuse


@pytest.mark.parametrize("diagonal", [-2, 0, 1])
def test_diag_both_ways_and_trace(diagonal):
    check_op(lambda m, x: m.diag(x, diagonal), arr((4,)))
    check_op(lambda m, x: m.diag(x, diagonal), arr((4, 5)))
    check_op(lambda m, x: m.trace(x), arr((4, 5)))
    check(lambda m, x: x.diag(diagonal), arr((3,), "int64"))
    check(lambda m, x: m.diag(x), arr((2, 2, 2)))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    def grids(m, a, b, c):
        return m.stack(m.meshgrid(a, b, c, indexing=indexing)).sum(0)

    check_op(grids, arr((3,)), arr((4,), seed=1), arr((2,), seed=2))
    check(lambda m, a, b: m.meshgrid([a, b], indexing=indexing)[1], arr((3,)), arr((4,), seed=1))


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0), (0, 3)])
def test_addmm_and_baddbmm(beta, alpha):
    check_op(lambda m, i, a, b: m.addmm(i, a, b, beta=beta, alpha=alpha), arr((3, 1)), arr((3, 4), seed=1),
             arr((4, 2), seed=2))
    check_op(lambda m, i, a, b: i.baddbmm(a, b, beta=beta, alpha=alpha), arr((2, 3, 2)), arr((2, 3, 4), seed=1),
             arr((2, 4, 2), seed=2))


def test_addmm_with_beta_zero_ignores_nans_in_input_as_torch_does():
    nan = np.full((2, 2), np.nan, np.float32)
    check(lambda m, i, a, b: m.addmm(i, a, b, beta=0), nan, arr((2, 3)), arr((3, 2), seed=1))
    check(lambda m, i, a, b: m.addmm(i, a, b), arr((2,)), arr((2, 3, 1)), arr((3, 2), seed=1))  # 3-d: refused


@pytest.mark.parametrize("value", [1, -0.5])
def test_addcmul_and_addcdiv(value):
    check_op(lambda m, i, a, b: m.addcmul(i, a, b, value=value), arr((3, 4)), arr((4,), seed=1), arr((3, 1), seed=2))
    check_op(lambda m, i, a, b: m.addcdiv(i, a, b, value=value), arr((3, 4)), arr((4,), seed=1),
             arr((3, 1), low=0.5, high=2.0, seed=2))
    # the in-place forms an optimizer written by hand uses (Adam's v.addcmul_(g, g, value=1 - beta2))
    check(lambda m, i, a: i.clone().addcmul_(a, a, value=value), arr((5,)), arr((5,), seed=1))
    check(lambda m, i, a, b: i.clone().addcdiv_(a, b, value=value), arr((5,)), arr((5,), seed=1),
          arr((5,), low=0.5, high=2.0, seed=2))
    check(lambda m, i, a, b: m.addcdiv(i, a, b), arr((3,), "int64"), arr((3,), "int64"), arr((3,), "int64", low=1))


SPECIALS = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, 3e38], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nan_to_num(dtype):
    values = SPECIALS.astype(np.float64)
    check(lambda m, x: m.nan_to_num(x.to(getattr(m, dtype))).float(), values)
    check(lambda m, x: x.to(getattr(m, dtype)).nan_to_num(nan=-1.0, posinf=7.0).float(), values)
    check(lambda m, x: x.clone().nan_to_num_(neginf=-2.0), values.astype(np.float32))
    check(lambda m, x: m.nan_to_num(x), arr((4,), "int64"))


def test_nan_to_num_gradient_is_one_where_the_value_is_kept():
    check_op(lambda m, x: m.nan_to_num(x), arr((3, 4)), off={"onnx": "the export has no NaN inputs to try",
                                                            "fd": "covered by vjp: the identity where finite"})


@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (1, False), ((0, 2), True)])
def test_nansum_and_nanmean(dim, keepdim):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    x[0, 1, 2] = x[2, 3, :] = np.nan

    def kw():
        return {} if dim is None else {"dim": dim}

    check(lambda m, x: m.nansum(x, keepdim=keepdim, **kw()), x)
    check(lambda m, x: m.nanmean(x, keepdim=keepdim, **kw()), x)
    check_op(lambda m, x: m.nansum(x, keepdim=keepdim, **kw()), arr((3, 4, 5)))
    check(lambda m, x: m.nansum(x), arr((3, 4), "int64"))
    check(lambda m, x: m.nanmean(x), arr((3, 4), "int64"))


@pytest.mark.parametrize("name", ["divide", "true_divide", "multiply", "subtract"])
def test_numpy_name_aliases(name):
    check(lambda m, a, b: getattr(m, name)(a, b), arr((3, 4)), arr((4,), low=0.5, high=2.0, seed=1))
    check(lambda m, a: getattr(a, name)(2.5), arr((3,)))


def test_more_aliases():
    check(lambda m, x: m.clip(x, -1, 1), arr((5,)))
    check(lambda m, x: m.absolute(x), arr((5,)))
    check(lambda m, x: m.ravel(x.t()), arr((3, 4)))
    assert ug.numel(ug.ones(3, 4)) == torch.numel(torch.ones(3, 4)) == 12
    assert ug.is_floating_point(ug.ones(2)) and not ug.is_floating_point(ug.ones(2, dtype=ug.int64))


def test_new_factories_take_the_tensors_dtype_unless_told():
    for m in (ug, torch):
        x = m.ones(2, dtype=m.float64)
        assert x.new_zeros(2, 3).dtype == m.float64 and tuple(x.new_zeros((2, 3)).shape) == (2, 3)
        assert x.new_ones(4, dtype=m.int64).dtype == m.int64
        assert x.new_empty(3).shape == (3,)
        np.testing.assert_array_equal(x.new_full((2,), 7).numpy(), [7.0, 7.0])
        t = x.new_tensor([1, 2])
        assert t.dtype == m.float64 and not t.requires_grad
        assert x.new_zeros(2, requires_grad=True).requires_grad
        assert m.ones(2, dtype=m.int64).type_as(x).dtype == m.float64
    src = ug.ones(2, requires_grad=True)
    copy = src.new_tensor(src)
    assert not copy.requires_grad and copy.data_ptr() != src.data_ptr()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(dtype):
    u, t = ug.finfo(getattr(ug, dtype)), torch.finfo(getattr(torch, dtype))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(u, field) == getattr(t, field), field
    assert u.dtype == t.dtype


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(dtype):
    u, t = ug.iinfo(getattr(ug, dtype)), torch.iinfo(getattr(torch, dtype))
    assert (u.bits, u.min, u.max, u.dtype) == (t.bits, t.min, t.max, t.dtype)


def test_finfo_and_iinfo_refuse_the_other_kind_as_torch_does():
    assert ug.finfo().eps == torch.finfo().eps  # the default dtype, float32
    for m in (ug, torch):
        with pytest.raises(TypeError):
            m.finfo(m.int32)
        with pytest.raises(TypeError):
            m.iinfo(m.float32)
        with pytest.raises(TypeError):
            m.iinfo(m.bool)


def test_a_causal_mask_from_finfo_and_triu_as_models_write_it():
    for m in (ug, torch):
        scores = m.zeros(4, 4)
        mask = m.triu(m.ones(4, 4, dtype=m.bool), diagonal=1)
        probs = scores.masked_fill(mask, m.finfo(scores.dtype).min).softmax(-1)
        np.testing.assert_allclose(probs.numpy()[3], [0.25] * 4, rtol=1e-6)
        assert float(probs[0, 1]) == 0.0
