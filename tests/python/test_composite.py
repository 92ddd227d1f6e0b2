"""torch's conveniences built from other ops (src/ug/ops/composite.h), the NumPy-name aliases,
the new_* factories and finfo / iinfo, against torch 2.13: every transform where the op is
differentiable (check_op: vjp, finite differences, jvp, vmap, ONNX Runtime, jit)."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op


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


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
def test_tensor_of_a_tensor_is_a_copy_out_of_its_graph():
    # torch.tensor(t) is t.detach().clone(): it had kept t's graph (a gradient through the copy).
    for m in (ug, torch):
        src = m.ones(2, requires_grad=True)
        copy = m.tensor(src)
        assert not copy.requires_grad and copy.grad_fn is None and copy.data_ptr() != src.data_ptr()
        assert m.tensor(src, requires_grad=True).grad_fn is None
    x = np.array([1.0, 2.0])
    expected = torch.func.grad(lambda a: (a * torch.tensor(a)).sum())(torch.tensor(x))
    np.testing.assert_array_equal(ug.grad(lambda a: (a * ug.tensor(a)).sum())(ug.tensor(x)).numpy(), expected.numpy())


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


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_and_index_fill(dim):
    index = np.array([2, 0, 2])
    src_shape = (3, 4) if dim == 0 else (4, 3)
    check_op(lambda m, x, s, i: m.index_add(x, dim, i, s, alpha=-1.5), arr((4, 4)), arr(src_shape, seed=1), index,
             off={"onnx": "ScatterElements with repeated indices adds in ONNX Runtime only from opset 16 on: "
                          "covered by test_onnx_export's scatter_add"})
    check(lambda m, x, s, i: x.clone().index_add_(dim, i, s), arr((4, 4)), arr(src_shape, seed=1), index)
    check_op(lambda m, x, i: x.index_fill(dim, i, 7.5), arr((4, 4)), np.array([-1, 1]))
    check(lambda m, x, i: x.clone().index_fill_(dim, i, -2), arr((4, 4), "int64"), np.array([0]))
    check(lambda m, x, i: x.index_fill(dim, i, 1.0), arr((4, 4)), np.array([4]))  # out of range: both refuse


def test_in_place_scatters_and_the_repeat_interleave_method():
    index = np.array([[0, 1, 2, 0], [1, 2, 0, 1]])
    check(lambda m, x, s, i: x.clone().scatter_(0, i, s), arr((3, 4)), arr((2, 4), seed=1), index)
    check(lambda m, x, s, i: x.clone().scatter_add_(0, i, s), arr((3, 4)), arr((2, 4), seed=1), index)
    check(lambda m, x: x.repeat_interleave(3, dim=1), arr((2, 3)))


def test_repeat_interleave_with_a_tensor_of_counts_matches_torch():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for args, kwargs in ((([2, 0, 3],), {"dim": 0}), (([1, 2, 0, 1],), {"dim": 1}), (([2],), {}),
                         (([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3],), {})):
        want = torch.tensor(x).repeat_interleave(torch.tensor(args[0]), **kwargs)
        got = ug.tensor(x).repeat_interleave(ug.tensor(args[0]), **kwargs)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(ug.repeat_interleave(ug.tensor(x), ug.tensor(args[0]), **kwargs).numpy(),
                                      want.numpy())
    np.testing.assert_array_equal(ug.repeat_interleave(ug.tensor([1, 0, 3])).numpy(),
                                  torch.repeat_interleave(torch.tensor([1, 0, 3])).numpy())
    for bad, message in (([1, -1, 1], "must be non-negative"), ([1, 1], r"input's size along dim 0 \(3\), got 2")):
        with pytest.raises(ValueError, match=message):
            ug.repeat_interleave(ug.tensor(x), ug.tensor(bad), dim=0)
    with pytest.raises(ValueError, match="output_size 4 is not the sum of repeats, 5"):
        ug.repeat_interleave(ug.tensor(x), ug.tensor([2, 0, 3]), dim=0, output_size=4)
    # Under ug.jit the length must be given, as jax.numpy.repeat's total_repeat_length.
    with pytest.raises(ValueError, match="depends on the data.*pass output_size"):
        ug.jit(lambda x, r: x.repeat_interleave(r, dim=0))(ug.tensor(x), ug.tensor([2, 0, 3]))
    jitted = ug.jit(lambda x, r: x.repeat_interleave(r, dim=0, output_size=5))
    for counts in ([2, 0, 3], [0, 5, 0], [1, 1, 3]):
        np.testing.assert_array_equal(jitted(ug.tensor(x), ug.tensor(counts)).numpy(),
                                      torch.tensor(x).repeat_interleave(torch.tensor(counts), dim=0).numpy())
    assert jitted.cache_info().traces == 1


def test_put_matches_torch():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    index, source = np.array([[0, -1], [5, 5]]), np.array([[10, 20], [30, 40]], np.float32)
    for m in (ug, torch):
        assert hasattr(m, "put") and hasattr(m.Tensor, "put") and hasattr(m.Tensor, "put_")
    want = torch.tensor(x).put(torch.tensor(index), torch.tensor(source), accumulate=True)
    np.testing.assert_array_equal(ug.tensor(x).put(ug.tensor(index), ug.tensor(source), accumulate=True).numpy(),
                                  want.numpy())
    want = torch.put(torch.tensor(x), torch.tensor([1, -2]), torch.tensor([7.0, 8.0]))
    np.testing.assert_array_equal(ug.put(ug.tensor(x), ug.tensor([1, -2]), ug.tensor([7.0, 8.0])).numpy(), want.numpy())
    t = ug.tensor(x)
    t.put_(ug.tensor([0]), ug.tensor([99.0]))
    assert t[0, 0].item() == 99.0
    with pytest.raises(IndexError, match=r"\[put\] index 12 is out of bounds"):
        ug.tensor(x).put(ug.tensor([12]), ug.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"\[put\] source has 1 elements and index 2"):
        ug.tensor(x).put(ug.tensor([0, 1]), ug.tensor([1.0]))


N = 200_000  # draws per statistic: each bound below is six standard errors, a 1e-9 chance of failing


def _within(measured, expected, standard_error):
    assert abs(measured - expected) < 6 * standard_error, (measured, expected, standard_error)


def test_in_place_draws_follow_their_distributions():
    ug.manual_seed(0)
    x = ug.empty(N)
    x.normal_(1.5, 0.02)
    _within(float(x.mean()), 1.5, 0.02 / N**0.5)
    _within(float(x.std()), 0.02, 0.02 / (2 * N) ** 0.5)
    x.uniform_(-1.0, 3.0)
    assert float(x.min()) >= -1.0 and float(x.max()) < 3.0
    _within(float(x.mean()), 1.0, (16 / 12) ** 0.5 / N**0.5)
    x.exponential_(lambd=4.0)
    assert float(x.min()) > 0
    _within(float(x.mean()), 0.25, 0.25 / N**0.5)
    x.bernoulli_(0.3)
    assert set(np.unique(x.numpy())) <= {0.0, 1.0}
    _within(float(x.mean()), 0.3, (0.3 * 0.7 / N) ** 0.5)
    p = ug.tensor([0.0, 0.25, 1.0]).expand(N, 3)
    _within(float(ug.bernoulli(p)[:, 1].mean()), 0.25, (0.25 * 0.75 / N) ** 0.5)
    assert float(ug.bernoulli(p)[:, 0].max()) == 0.0 and float(ug.bernoulli(p)[:, 2].min()) == 1.0


def test_in_place_draws_are_seeded_and_refuse_a_leaf_that_requires_grad_as_torch_does():
    def draw():
        ug.manual_seed(7)
        return ug.empty(5).normal_().numpy()

    np.testing.assert_array_equal(draw(), draw())
    for m in (ug, torch):
        with pytest.raises(RuntimeError):
            m.ones(2, requires_grad=True).normal_()
        with m.no_grad():
            m.ones(2, requires_grad=True).uniform_(0, 1)


def test_multinomial_draws_in_proportion_to_the_weights():
    ug.manual_seed(1)
    weights = np.array([1.0, 0.0, 3.0, 6.0])
    p = weights / weights.sum()
    with_replacement = ug.multinomial(ug.tensor(weights), N, replacement=True).numpy()
    assert with_replacement.dtype == np.int64 and with_replacement.shape == (N,)
    counts = np.bincount(with_replacement, minlength=4)
    assert counts[1] == 0
    for k in (0, 2, 3):
        _within(counts[k] / N, p[k], (p[k] * (1 - p[k]) / N) ** 0.5)
    # Without replacement: distinct indices in each row, the first drawn as with replacement.
    rows = ug.multinomial(ug.tensor(np.tile(weights, (N // 10, 1))), 3).numpy()
    assert rows.shape == (N // 10, 3) and (np.sort(rows, 1)[:, 1:] != np.sort(rows, 1)[:, :-1]).all()
    assert not (rows == 1).any()
    # torch draws the categories of weight 0 once the others are out; so do we.
    assert (ug.multinomial(ug.tensor([[1.0, 0.0, 2.0, 0.0]]), 3).numpy()[0, 2] in (1, 3))
    first = np.bincount(rows[:, 0], minlength=4) / len(rows)
    for k in (0, 2, 3):
        _within(first[k], p[k], (p[k] * (1 - p[k]) / len(rows)) ** 0.5)


@pytest.mark.parametrize("weights, samples, replacement", [
    ([1.0, -1.0], 1, True),           # a negative weight
    ([0.0, 0.0], 1, True),            # a row that sums to 0
    ([1.0, 1.0], 3, False),           # more samples than categories
])
def test_multinomial_refuses_what_torch_refuses(weights, samples, replacement):
    for m in (ug, torch):
        with pytest.raises(RuntimeError):
            m.multinomial(m.tensor(weights), samples, replacement=replacement)


def test_random_categorical_draws_softmax_of_the_logits_with_jaxs_shapes():
    import jax

    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]], np.float32) + 1e-30)
    for axis, shape in [(-1, None), (-1, (4, 2)), (0, None)]:
        expected = jax.random.categorical(jax.random.key(0), logits, axis=axis, shape=shape).shape
        got = ug.random.categorical(ug.random.key(0), ug.tensor(logits), axis=axis, shape=shape)
        assert got.shape == expected and got.dtype == ug.int64
    draws = ug.random.categorical(ug.random.key(3), ug.tensor(logits), shape=(N // 2, 2)).numpy()
    assert not (draws[:, 1] == 2).any()  # probability 0
    for k, p in enumerate([0.1, 0.2, 0.7]):
        _within((draws[:, 0] == k).mean(), p, (p * (1 - p) / (N // 2)) ** 0.5)
    same = ug.random.categorical(ug.random.key(3), ug.tensor(logits), shape=(N // 2, 2)).numpy()
    np.testing.assert_array_equal(draws, same)  # a key is a draw
    with pytest.raises(ValueError, match="broadcast"):
        ug.random.categorical(ug.random.key(0), ug.tensor(logits), shape=(3,))


def test_logit_xlogy_hypot_and_frac():
    check_op(lambda m, x: m.logit(x), arr((3, 4), low=0.05, high=0.95))
    check_op(lambda m, x: m.logit(x, eps=0.1), arr((3, 4), low=0.0, high=0.5))
    check_op(lambda m, x, y: m.xlogy(x, y), arr((3, 4)), arr((4,), low=0.1, high=3.0, seed=1))
    check(lambda m, x, y: m.xlogy(x, y), np.array([0.0, 0.0, 2.0], np.float32), np.array([0.0, np.nan, 0.5], np.float32))
    check_op(lambda m, a, b: m.hypot(a, b), arr((3, 4)), arr((3, 4), seed=1))
    check(lambda m, a, b: m.hypot(a, b), np.array([3e30, 0.0, 1e-30], np.float32),
          np.array([4e30, 0.0, 1e-30], np.float32))  # squares would overflow, vanish, underflow
    check_op(lambda m, x: m.frac(x), arr((3, 4), low=-5, high=5), off={"fd": "frac jumps at the integers"})


def test_hypot_of_infinities_and_of_16_bit_values_as_torchs():
    """Before: inf - inf inside the scaling gave NaN for infinite operands (IEEE's hypot is inf,
    even beside a NaN), and 16-bit operands were rounded at each step (1.5 ulp off, torch 0.5)."""
    inf, nan = float("inf"), float("nan")
    a, b = np.array([inf, -inf, inf, nan, 3.0], np.float32), np.array([1.0, inf, nan, -inf, 4.0], np.float32)
    for dtype in (ug.float32, ug.float64, ug.bfloat16, ug.float16):
        got = ug.hypot(ug.tensor(a).to(dtype), ug.tensor(b).to(dtype)).float().numpy()
        np.testing.assert_array_equal(got, [inf, inf, inf, inf, 5.0])
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(4096).astype(np.float32) * 4, rng.standard_normal(4096).astype(np.float32) * 4
    for dtype, tdtype, bits in ((ug.bfloat16, torch.bfloat16, 8), (ug.float16, torch.float16, 11)):
        a, b = ug.tensor(x).to(dtype), ug.tensor(y).to(dtype)
        got = ug.hypot(a, b).double().numpy()
        exact = np.hypot(a.double().numpy(), b.double().numpy())
        # float32's hypot (a few float32 ulps) rounded once to the 16-bit dtype: half its ulp
        # and those, as torch's (before: 1.5-1.7 ulps)
        ulp = 2.0 ** (np.floor(np.log2(exact)) - (bits - 1))
        assert np.all(np.abs(got - exact) <= 0.5 * ulp + 4 * 2.0 ** -24 * exact)
        theirs = torch.hypot(torch.tensor(x).to(tdtype), torch.tensor(y).to(tdtype)).double().numpy()
        assert np.all(np.abs(theirs - exact) <= 0.5 * ulp + 4 * 2.0 ** -24 * exact)  # the bound holds for torch


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 6])
def test_rot90(k):
    check_op(lambda m, x: m.rot90(x, k, (0, 2)), arr((2, 3, 4)))
    check(lambda m, x: x.rot90(k, [1, -1]), arr((2, 3, 4), "int64"))


def test_kron_cross_take_along_dim_and_isin():
    check_op(lambda m, a, b: m.kron(a, b), arr((2, 3)), arr((3,), seed=1))
    check_op(lambda m, a, b: m.kron(a, b), arr((2, 1, 3)), arr((2, 2), seed=1))
    check_op(lambda m, a, b: m.cross(a, b, dim=1), arr((4, 3)), arr((4, 3), seed=1))
    check(lambda m, a, b: m.cross(a, b), arr((3, 5)), arr((3, 5), seed=1))  # the first dim of size 3
    check(lambda m, a, b: m.cross(a, b, dim=1), arr((3, 5)), arr((3, 5), seed=1))  # not of size 3: refused
    idx = np.random.default_rng(0).integers(0, 5, (3, 2, 4))
    check_op(lambda m, x, i: m.take_along_dim(x, i, 1), arr((3, 5, 4)), idx)
    check_op(lambda m, x, i: m.take_along_dim(x, i, -1), arr((3, 1, 5)), idx)  # x broadcast over dim 1
    check_op(lambda m, x, i: m.take_along_dim(x, i), arr((3, 5)), np.array([0, 14, 7]))
    check(lambda m, e, t: m.isin(e, t), arr((3, 4), "int64"), np.array([0, 2, -1]))
    check(lambda m, e, t: m.isin(e, t, invert=True), arr((3, 4), "int64"), np.array([[1], [2]]))


@pytest.mark.parametrize("spec", [3, 4, 7, [1, 3], [2, -1], [0, 5, 2], (4,)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_tensor_split(spec, dim):
    check_op(lambda m, x: m.stack([p.sum() for p in m.tensor_split(x, spec, dim)]), arr((5, 5)),
             off={"onnx": "covered by the narrow and sum exports", "jit": "covered by the narrow and sum exports"})
    check(lambda m, x: x.tensor_split(spec, dim=dim), arr((5, 6), "int64"))
    spec_tensor = np.array(spec)
    check(lambda m, x, s: m.tensor_split(x, s, dim), arr((5, 6)), spec_tensor)


def test_tensor_split_refuses_what_torch_refuses():
    check(lambda m, x: m.tensor_split(x, 0), arr((4,)))
    check(lambda m, x: m.tensor_split(x, 2), arr((1,)).array.reshape(()))
    check(lambda m, x: m.tensor_split(x, 2, 2), arr((4, 3)))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, float("inf")])
@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((2, 4, 3), (2, 6, 3)), ((2, 4, 3), (1, 6, 3))])
def test_cdist(p, shapes):
    a, b = shapes
    off = {"onnx": "covered by the exports of the ops it is made of",
           "jit": "covered by the exports of the ops it is made of",
           "jvp": "torch has no forward-mode rule for cdist (fd and vmap check ours)"}
    if p == 0.0:
        off["vjp"] = off["fd"] = "the count of non-zero differences is piecewise constant"
    check_op(lambda m, x, y: m.cdist(x, y, p=p), arr(a), arr(b, seed=1), off=off)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_euclidean_forms_and_a_zero_distance(mode):
    # 30 rows: past torch's 25, where the default takes the matrix-product form
    x, y = arr((30, 4)), arr((27, 4), seed=1)
    check(lambda m, x, y: m.cdist(x, y, compute_mode=mode), x, y, rtol=1e-4, atol=1e-5)
    check_op(lambda m, x, y: m.cdist(x, y, compute_mode=mode), arr((5, 3), "float64"), arr((4, 3), "float64", seed=1),
             only=("forward", "vjp", "fd"))
    # distances of a set to itself: zeros on the diagonal, whose gradient is 0 in torch
    check_op(lambda m, x: m.cdist(x, x, compute_mode=mode), arr((4, 3), "float64"), only=("forward", "vjp"),
             atol=1e-7)


def test_cdist_refuses_what_torch_refuses():
    check(lambda m, x, y: m.cdist(x, y), arr((4, 3)), arr((4, 2)))
    check(lambda m, x, y: m.cdist(x, y), arr((3,)), arr((4, 3)))
    check(lambda m, x, y: m.cdist(x, y, p=-1.0), arr((4, 3)), arr((4, 3)))
    check(lambda m, x, y: m.cdist(x, y), arr((4, 3), "int64"), arr((4, 3), "int64"))


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1)])
def test_masked_scatter(mask_shape):
    mask = arr(mask_shape, "bool", seed=3)
    check_op(lambda m, x, mask, s: m.masked_scatter(x, mask, s), arr((3, 4)), mask, arr((13,), seed=1),
             off={"onnx": "reads the mask's count (item)", "jit": "reads the mask's count (item)"})
    check(lambda m, x, mask, s: x.clone().masked_scatter_(mask, s), arr((3, 4)), mask, arr((2, 7), seed=1))
    check(lambda m, x, mask, s: x.masked_scatter(mask, s), arr((3, 4)), mask, arr((1,), seed=1))  # too short
    check(lambda m, x, s: x.masked_scatter(m.zeros(3, 4, dtype=m.bool), s), arr((3, 4)), arr((0,)))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    rows, cols = np.array([0, 2, -1, 2]), np.array([1, 0, 3, 0])
    off = {"onnx": "reads the indices' range (item)", "jit": "reads the indices' range (item)"}
    if not accumulate:  # repeated positions: which write wins is torch's to choose; keep them distinct
        rows, cols = np.array([0, 2, -2]), np.array([1, 0, 3])
    check_op(lambda m, x, r, c, v: m.index_put(x, (r, c), v, accumulate=accumulate), arr((3, 4)), rows, cols,
             arr((len(rows),), seed=1), off=off)
    check_op(lambda m, x, r, v: x.index_put((r,), v, accumulate=accumulate), arr((3, 4)), rows,
             arr((len(rows), 4), seed=1), off=off)
    check(lambda m, x, r, v: x.clone().index_put_((r,), v, accumulate=accumulate), arr((3, 4)), rows,
          arr((1, 4), seed=1))
    check(lambda m, x, mask, v: x.index_put((mask,), v, accumulate=accumulate), arr((3, 4)), arr((3, 4), "bool"),
          Arg(np.float32(2.5)))
    check(lambda m, x, r: x.index_put((r,), m.ones(1), accumulate=accumulate), arr((3, 4)), np.array([3]))


def test_fmod_has_the_sign_of_the_dividend():
    a, b = arr((3, 4), low=-9, high=9), arr((4,), low=0.5, high=3, seed=1)
    negative_b = Arg(-b.array)
    for divisor in (b, negative_b):
        check_op(lambda m, x, y: m.fmod(x, y), a, divisor,
                 off={"onnx": "remainder has no ONNX export (export_table.cpp: unsupported)",
                      "jit": "ug.jit traces through the exporter, which has no remainder"})
    check(lambda m, x: x.fmod(-2.5), a)
    check(lambda m, x: x.fmod(3), arr((3, 4), "int64", -9, 9))
    check(lambda m, x, y: m.fmod(x, y), arr((3, 4), "int64", -9, 9), arr((4,), "int64", 1, 4, seed=1))
    check(lambda m, x, y: x.clone().fmod_(y), a, negative_b)
    check(lambda m, x: m.fmod(x, 0.0), a)  # NaN, as C's fmod


@pytest.mark.parametrize("op, low, high", [("lgamma", -4.5, 6.0), ("lgamma", 0.1, 40.0), ("digamma", -4.5, 6.0),
                                           ("digamma", 0.1, 60.0), ("erfinv", -0.99, 0.99)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_functions(op, low, high, dtype):
    x = arr((4, 6), dtype, low=low, high=high)
    check_op(lambda m, x: getattr(m, op)(x), x, only=("forward", "vjp") if dtype == "float32" else ("forward",))
    # The formulas' derivatives (of Lanczos's series, of the truncated asymptotic series) are
    # accurate to about 1e-10 relative, not the 1e-15 of their values: float64's rtol of 1e-10
    # is raised to 1e-9 for the derivatives compared in float64.
    check_op(lambda m, x: getattr(m, op)(x), x, only=("vjp", "fd", "jvp", "vmap") if dtype == "float64" else
             ("fd", "jvp", "vmap"), rtol=1e-9)
    check(lambda m, x: getattr(x, op)(), arr((3,), "int64", 1, 4) if op != "erfinv" else arr((3,), "int64", 0, 1))


def test_special_functions_at_their_edges():
    poles = np.array([0.0, -1.0, -3.0, 1.0, 2.0, np.inf], np.float64)
    check(lambda m, x: m.lgamma(x), poles)
    check(lambda m, x: m.digamma(x), poles)
    check(lambda m, x: m.erfinv(x), np.array([-1.0, 1.0, 1.5, -2.0, 0.0], np.float64))
    check(lambda m, x: m.erfinv(x), np.array([0.999, -0.9999, 1e-8], np.float32))


def _exact_16_bit_composites():
    """(name, unigrad's op, torch's op, float64 reference, the magnitude of its terms), on a, b, c."""
    F, TF = ug.nn.functional, torch.nn.functional
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

    def elu(x, a=1.0):
        return np.where(x > 0, x, a * np.expm1(x / a))

    def softplus(x):
        return np.log1p(np.exp(x))

    return [
        ("sinc", lambda m, a, b, c: m.sinc(a), lambda a, b, c: np.sinc(a), lambda a, b, c: 1.0),
        ("lerp", lambda m, a, b, c: m.lerp(a, b, 0.3), lambda a, b, c: a + 0.3 * (b - a),
         lambda a, b, c: abs(a) + abs(b)),
        ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), lambda a, b, c: a + 0.5 * b * c,
         lambda a, b, c: abs(a) + abs(b * c)),
        ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=0.5), lambda a, b, c: a + 0.5 * b / c,
         lambda a, b, c: abs(a) + abs(b / c)),
        ("elu", lambda m, a, b, c: (F if m is ug else TF).elu(a), lambda a, b, c: elu(a), lambda a, b, c: 1 + abs(a)),
        ("celu", lambda m, a, b, c: (F if m is ug else TF).celu(a, 1.5), lambda a, b, c: elu(a, 1.5),
         lambda a, b, c: 1 + abs(a)),
        ("selu", lambda m, a, b, c: (F if m is ug else TF).selu(a), lambda a, b, c: scale * elu(a, 1.0) * np.where(
            a > 0, 1.0, alpha), lambda a, b, c: 2 + 2 * abs(a)),
        ("leaky_relu", lambda m, a, b, c: (F if m is ug else TF).leaky_relu(a, 0.1),
         lambda a, b, c: np.where(a > 0, a, 0.1 * a), lambda a, b, c: abs(a)),
        ("mish", lambda m, a, b, c: (F if m is ug else TF).mish(a), lambda a, b, c: a * np.tanh(softplus(a)),
         lambda a, b, c: 1 + abs(a)),
        ("logsigmoid", lambda m, a, b, c: (F if m is ug else TF).logsigmoid(a), lambda a, b, c: -softplus(-a),
         lambda a, b, c: 1 + abs(a)),
        ("softplus", lambda m, a, b, c: (F if m is ug else TF).softplus(a), lambda a, b, c: softplus(a),
         lambda a, b, c: 1 + abs(a)),
        ("hardsigmoid", lambda m, a, b, c: (F if m is ug else TF).hardsigmoid(a),
         lambda a, b, c: np.clip(a / 6 + 0.5, 0, 1), lambda a, b, c: 1 + abs(a)),
        ("hardswish", lambda m, a, b, c: (F if m is ug else TF).hardswish(a),
         lambda a, b, c: a * np.clip(a + 3, 0, 6) / 6, lambda a, b, c: 1 + abs(a) * abs(a)),
    ]


@pytest.mark.parametrize("name, op, reference, terms", _exact_16_bit_composites(),
                         ids=[c[0] for c in _exact_16_bit_composites()])
def test_16_bit_composites_round_once_as_torchs(name, op, reference, terms):
    """Ops built from several ops compute 16-bit operands in float32 and round the result once
    (torch's opmath); before, each step rounded to 16 bits: sinc was thousands of ulps off near
    its zeros, lerp hundreds, addcmul tens, the activations 1.2-2.7."""
    rng = np.random.default_rng(0)
    x = [rng.uniform(-4, 4, 4096).astype(np.float32) for _ in range(2)] + [rng.uniform(4, 12, 4096).astype(np.float32)]
    for dtype, tdtype, bits, lowest in ((ug.bfloat16, torch.bfloat16, 8, -126), (ug.float16, torch.float16, 11, -14)):
        ours = [ug.tensor(v).to(dtype) for v in x]
        a, b, c = (t.double().numpy() for t in ours)
        exact = reference(a, b, c)
        got = op(ug, *ours).double().numpy()
        theirs = op(torch, *[torch.tensor(v).to(tdtype) for v in x]).double().numpy()
        magnitude = np.abs(exact)
        ulp = 2.0 ** (np.maximum(np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0))), lowest) - (bits - 1))
        # half an ulp of the one rounding, and float32's own error over the terms
        bound = 0.5 * ulp + 8 * 2.0 ** -24 * (magnitude + terms(a, b, c))
        assert np.all(np.abs(theirs - exact) <= bound), (name, dtype, "torch")
        worst = np.argmax(np.abs(got - exact) / bound)
        assert np.all(np.abs(got - exact) <= bound), (name, dtype, a[worst], got[worst], exact[worst], theirs[worst])
