"""torch's products, matrix builders, statistics, elementwise helpers and scatters built from
other ops (src/ug/ops/composite_math.h) against torch 2.13: every transform where the op is
differentiable (check_op: vjp, finite differences, jvp, vmap, ONNX Runtime, jit), the forward
on several dtypes, and bad input raising as torch does."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_op

# ---- products and matrices


@pytest.mark.parametrize("dims, b_shape", [(0, (3, 2)), (1, (4, 2)), (2, (3, 4, 2)), (([1, 0], [0, 1]), (3, 2, 5)),
                                            (([-1], [0]), (4, 5)), ([[2], [1]], (2, 4, 5))])
def test_tensordot(dims, b_shape):
    check_op(lambda m, a, b: m.tensordot(a, b, dims), arr((2, 3, 4)), arr(b_shape, seed=1))


def test_tensordot_refuses_mismatches():
    check(lambda m, a, b: m.tensordot(a, b, 1), arr((2, 3)), arr((4, 2), seed=1))
    check(lambda m, a, b: m.tensordot(a, b, 1), arr((2, 3)), arr((3, 2), "float64", seed=1))
    with pytest.raises(RuntimeError, match=r"\[tensordot\].*\[2, 3\]"):
        ug.tensordot(ug.ones(2, 3), ug.ones(4, 2), 1)


def test_inner_mv_vdot_chain_matmul():
    check_op(lambda m, a, b: m.inner(a, b), arr((2, 3, 4)), arr((5, 4), seed=1))
    check_op(lambda m, a, b: m.inner(a, b), arr(()), arr((5, 4), seed=1))
    check(lambda m, a, b: a.inner(b), arr((3,), "int64"), arr((3,), "int64", seed=1))
    check(lambda m, a, b: m.inner(a, b), arr((3,)), arr((2,), seed=1))
    check_op(lambda m, a, b: m.mv(a, b), arr((4, 3)), arr((3,), seed=1))
    check(lambda m, a, b: a.mv(b), arr((4, 3)), arr((3,), "float64", seed=1))
    check(lambda m, a, b: a.mv(b), arr((4, 3)), arr((4,), seed=1))
    check_op(lambda m, a, b: m.vdot(a, b), arr((5,)), arr((5,), seed=1))
    check(lambda m, a, b: a.vdot(b), arr((5,), "int64"), arr((5,), seed=1))
    check_op(lambda m, a, b, c: m.chain_matmul(a, b, c), arr((2, 3)), arr((3, 4), seed=1), arr((4, 2), seed=2))
    check(lambda m, a: m.chain_matmul(a), arr((2, 3)))
    check(lambda m, a, b: m.chain_matmul(a, b), arr((2, 3)), arr((3,), seed=1))


@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(2, 3), (3, 4), (4, 2)], [(3,), (3, 4), (4, 5), (5,)],
                                    [(4,), (4, 6)], [(6, 4), (4,)], [(5,), (5,)], [(2, 7), (7, 1), (1, 6), (6, 3), (3, 5)]])
def test_multi_dot(shapes):
    args = [arr(shape, seed=i) for i, shape in enumerate(shapes)]
    check_op(lambda m, *ts: m.linalg.multi_dot(ts), *args)


def test_multi_dot_multiplies_in_the_cheapest_order():
    # left to right would be [100, 2] @ [2, 100] (20,000 multiply-adds) then [100, 100] @ [100, 1]
    # (10,000); the cheapest order is [2, 100] @ [100, 1] (200), then [100, 2] @ [2, 1] (200)
    a, b, c = ug.randn(100, 2, dtype=ug.float64), ug.randn(2, 100, dtype=ug.float64), ug.randn(100, 1, dtype=ug.float64)
    with ug.profiler.profile(record_shapes=True) as prof:
        out = ug.linalg.multi_dot([a, b, c])
    products = [e["input_shapes"] for e in prof.events() if e["name"] == "matmul" and e["depth"] == 0]
    assert products == [[[2, 100], [100, 1]], [[100, 2], [2, 1]]]
    na, nb, nc = (t.numpy() for t in (a, b, c))
    expected = torch.linalg.multi_dot([torch.from_numpy(t) for t in (na, nb, nc)]).numpy()
    # sums of up to 100 terms in another order: 100 eps times the sum of the terms' magnitudes
    bound = 100 * np.finfo(np.float64).eps * (np.abs(na) @ (np.abs(nb) @ np.abs(nc)))
    assert np.all(np.abs(out.numpy() - expected) <= bound)


def test_multi_dot_refuses_what_torch_refuses():
    check(lambda m, a: m.linalg.multi_dot([a]), arr((2, 3)))
    check(lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), arr((2, 3)), arr((3,), seed=1), arr((3, 2), seed=2))
    check(lambda m, a, b: m.linalg.multi_dot([a, b]), arr((2, 3)), arr((3, 2), "float64", seed=1))
    check(lambda m, a, b: m.linalg.multi_dot([a, b]), arr((2, 3)), arr((4, 2), seed=1))
    check(lambda m, a, b: m.linalg.multi_dot([a, b]), arr((2, 3, 4)), arr((4, 2), seed=1))
    with pytest.raises(RuntimeError, match=r"\[linalg.multi_dot\] tensors 0 and 1 cannot be multiplied.*\[2, 3\].*\[4, 2\]"):
        ug.linalg.multi_dot([ug.ones(2, 3), ug.ones(4, 2)])


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0), (0, 3)])
def test_addmv_addr_addbmm(beta, alpha):
    check_op(lambda m, i, a, v: m.addmv(i, a, v, beta=beta, alpha=alpha), arr((3,)), arr((3, 4), seed=1),
             arr((4,), seed=2))
    check_op(lambda m, i, a, v: i.addmv(a, v, beta=beta, alpha=alpha), arr(()), arr((3, 4), seed=1),
             arr((4,), seed=2))
    check_op(lambda m, i, a, b: m.addr(i, a, b, beta=beta, alpha=alpha), arr((3, 1)), arr((3,), seed=1),
             arr((4,), seed=2))
    check_op(lambda m, i, a, b: m.addbmm(i, a, b, beta=beta, alpha=alpha), arr((3, 2)), arr((4, 3, 5), seed=1),
             arr((4, 5, 2), seed=2))


def test_addr_on_integers():
    check(lambda m, i, a, b: m.addr(i, a, b, beta=2, alpha=-3), arr((3, 4), "int64"), arr((3,), "int64"),
          arr((4,), "int64"))


def test_addmv_family_refuses_bad_shapes():
    check(lambda m, i, a, v: m.addmv(i, a, v), arr((3,)), arr((3, 4)), arr((5,)))
    check(lambda m, i, a, b: m.addr(i, a, b), arr((3, 4)), arr((3, 1)), arr((4,)))
    check(lambda m, i, a, b: m.addbmm(i, a, b), arr((3, 2)), arr((4, 3, 5)), arr((3, 5, 2)))
    nan = np.full((3,), np.nan, np.float32)
    check(lambda m, i, a, v: m.addmv(i, a, v, beta=0), nan, arr((3, 4)), arr((4,), seed=1))


def test_block_diag_and_cartesian_prod():
    check_op(lambda m, a, b, c: m.block_diag(a, b, c), arr((2, 3)), arr(()), arr((4,), seed=1))
    check(lambda m, a, b: m.block_diag(a, b), arr((2,), "int64"), arr((1, 3)))
    check(lambda m: m.block_diag())
    check(lambda m, a: m.block_diag(a), arr((2, 2, 2)))
    check_op(lambda m, a, b, c: m.cartesian_prod(a, b, c), arr((3,)), arr((2,), seed=1), arr((2,), seed=2))
    check(lambda m, a: m.cartesian_prod(a), arr((3,), "int64"))
    check(lambda m, a: m.cartesian_prod(a, a), arr((3, 2)))


@pytest.mark.parametrize("offset, dim1, dim2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (0, 1, -1)])
def test_diag_embed(offset, dim1, dim2):
    check_op(lambda m, x: m.diag_embed(x, offset, dim1, dim2), arr((2, 3)))
    check(lambda m, x: x.diag_embed(offset, dim1, dim2), arr((2, 4), "int64"))


def test_diag_embed_refuses_equal_dims():
    check(lambda m, x: m.diag_embed(x, 0, 1, 1), arr((2, 3)))


@pytest.mark.parametrize("offset", [-1, 0, 2])
def test_diagflat(offset):
    check_op(lambda m, x: m.diagflat(x, offset), arr((2, 2)))
    check(lambda m, x: x.diagflat(offset), arr((), "int64"))


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_and_corrcoef(correction):
    # each entry sums 7 products of centred values: the dtype's tolerance covers it
    check_op(lambda m, x: m.cov(x, correction=correction), arr((3, 7)))
    check_op(lambda m, x: x.cov(correction=correction), arr((7,)))
    fw, aw = arr((7,), "int64", 0, 4, seed=1), arr((7,), low=0.1, high=2.0, seed=2)
    check_op(lambda m, x, a: m.cov(x, correction=correction, fweights=fw.make(m), aweights=a), arr((3, 7)), aw)
    check(lambda m, x: m.cov(x, correction=correction, fweights=fw.make(m)), arr((2, 7), "float64"))
    check(lambda m, x: m.cov(x, correction=correction), arr((2, 7), "int64"))
    check_op(lambda m, x: m.corrcoef(x), arr((3, 7)))
    check(lambda m, x: m.corrcoef(x), arr((7,)))
    check(lambda m, x: m.corrcoef(x), arr((3, 7), "int64"))


def test_cov_refuses_bad_weights():
    check(lambda m, x, w: m.cov(x, fweights=w), arr((2, 5)), arr((5,), low=0.1))  # floating fweights
    check(lambda m, x, w: m.cov(x, aweights=w), arr((2, 5)), arr((5,), "int64", 0, 3))  # integer aweights
    check(lambda m, x, w: m.cov(x, fweights=w), arr((2, 5)), arr((4,), "int64", 0, 3))  # wrong length
    check(lambda m, x, w: m.cov(x, fweights=w), arr((2, 5)), arr((5,), "int64", -3, 0))  # negative
    check(lambda m, x: m.cov(x), arr((2, 2, 2)))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.5, math.inf])
def test_dist(p):
    check_op(lambda m, a, b: m.dist(a, b, p), arr((3, 4)), arr((4,), seed=1))
    check(lambda m, a, b: a.dist(b), arr((3,), "int64"), arr((3,), "int64"))


@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("n", [None, 1, 4])
def test_vander(n, increasing):
    def vander(m, x):
        if m is ug:
            return ug.vander(x, N=n, increasing=increasing)
        # torch's vander backward trips on its own in-place cumprod: its powers written out
        powers = torch.arange(x.shape[0] if n is None else n, dtype=x.dtype)
        return x.unsqueeze(1) ** (powers if increasing else powers.flip(0))

    off = {}
    if n == 1:  # only the column of ones
        off.update({t: "the result does not depend on x" for t in ("vjp", "fd", "jvp")})
    check_op(vander, arr((3,)), off=off)
    check(lambda m, x: m.vander(x, n, increasing), arr((4,), "int32", -3, 3))
    check(lambda m, x: m.vander(x, n), arr((2, 2)))


def test_trapezoid():
    check_op(lambda m, y: m.trapezoid(y), arr((3, 5)))
    check_op(lambda m, y: m.trapezoid(y, dx=0.5, dim=0), arr((3, 5)))
    check_op(lambda m, y, x: m.trapezoid(y, x), arr((3, 5)), arr((5,), seed=1))
    check_op(lambda m, y, x: m.trapezoid(y, x, dim=-2), arr((3, 5)), arr((3, 5), seed=1))
    check_op(lambda m, y, x: m.trapz(y, x), arr((3, 5)), arr((5,), seed=1))
    check(lambda m, y: m.trapz(y, dx=2.0, dim=0), arr((3, 5)))
    check(lambda m, y: m.trapezoid(y), arr((4,), "int64"))
    check(lambda m, y: m.trapezoid(y), arr((2, 0)))
    check(lambda m, y, x: m.trapezoid(y, x), arr((3, 5)), arr((4,), seed=1))


@pytest.mark.parametrize("n, dim", [(1, -1), (2, 0), (3, 1), (0, -1)])
def test_diff(n, dim):
    check_op(lambda m, x: m.diff(x, n, dim), arr((4, 5)))
    check_op(lambda m, x, p, a: x.diff(n, dim, p, a), arr((4, 5)), arr((4, 5), seed=1), arr((4, 5), seed=2))
    check(lambda m, x: m.diff(x, n, dim), arr((3, 4), "int64"))
    check(lambda m, x: m.diff(x, n, dim), arr((3, 4), "bool"))


def test_diff_refuses_bad_input():
    check(lambda m, x: m.diff(x), arr(()))
    check(lambda m, x, p: m.diff(x, prepend=p), arr((3, 4)), arr((4,)))


@pytest.mark.parametrize("p, dim, maxnorm", [(2.0, 0, 1.0), (1.0, -1, 2.5), (3.0, 1, 100.0)])
def test_renorm(p, dim, maxnorm):
    check_op(lambda m, x: m.renorm(x, p, dim, maxnorm), arr((3, 4, 2)))
    check(lambda m, x: m.renorm(x, p, dim, maxnorm), arr((3,)))


@pytest.mark.parametrize("r", [0, 1, 2, 3])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(r, with_replacement):
    empty = {t: "r = 0: an empty result, not made from x" for t in ("vjp", "fd", "jvp")}
    check_op(lambda m, x: m.combinations(x, r, with_replacement), arr((4,)), off=empty if r == 0 else None)
    check(lambda m, x: m.combinations(x, r, with_replacement=with_replacement), arr((3,), "int64"))
    check(lambda m, x: m.combinations(x, r, with_replacement), arr((0,)))


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (4, 3, 1), (3, 5, -1), (0, 3, 0), (3, 4, 10)])
def test_triangle_indices(row, col, offset):
    check(lambda m: m.tril_indices(row, col, offset))
    check(lambda m: m.triu_indices(row, col, offset))
    check(lambda m: m.tril_indices(row, col, offset, dtype=m.int32))


def test_unravel_index():
    check(lambda m, i: m.unravel_index(i, (3, 4, 2)), arr((5, 2), "int64", -24, 30))
    check(lambda m, i: m.unravel_index(i, 7), arr((4,), "int32", 0, 7))
    check(lambda m: m.unravel_index(m.tensor(5), (2, 3)))
    check(lambda m, i: m.unravel_index(i, (2, 3)), arr((3,)))


# ---- elementwise


def unary_dtypes(name, low=-3.0, high=3.0):
    for dtype in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"):
        check(lambda m, x: getattr(m, name)(x), arr((3, 4), dtype, low, high, seed=3))


OFF = {"erfc": {"onnx": "ONNX Runtime has no float64 Erf (erfc computes in float64)"},
       "sgn": {t: "torch's derivative is a ZeroTensor the reference cannot read (sign's row checks the zero)"
               for t in ("vjp", "fd", "jvp")}}


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "sinc", "erfc", "sgn"])
def test_float_unaries(name):
    check_op(lambda m, x: getattr(m, name)(x), arr((3, 4)), off=OFF.get(name))
    unary_dtypes(name)
    check(lambda m, x: getattr(x, name)(), arr((5,), "float64"))


def test_sinc_at_zero_and_beyond():
    # removable singularity at 0: the gradient's two terms (~1/x each) cancel, so near 0 only
    # float64 agrees with torch (in float32 at 1e-3 both are ~1% off, differently)
    off = {"fd": "central differences straddle the removed singularity at 0; vjp and jvp check torch's "
                 "derivative there"}
    check_op(lambda m, x: m.sinc(x), Arg(np.array([0.0, 1.0, -2.0, 0.5, 0.1], np.float32)), off=off)
    check_op(lambda m, x: m.sinc(x), Arg(np.array([0.0, 1e-3, -1e-4, 0.5], np.float64)), off=off)
    check(lambda m, x: m.sinc(x), np.array([np.inf, -np.inf, np.nan, 0.0], np.float32))


def test_erfc_is_accurate_far_into_the_tail():
    values = np.concatenate([np.linspace(-6, 27, 331), [2.4999999, 2.5, 2.5000001, 26.5, 30, np.inf, -np.inf,
                                                          np.nan]])
    # torch's own float64 erfc (Cody's rational approximations) to its 1e-10 relative tolerance
    check(lambda m, x: m.erfc(x), values.astype(np.float64))
    check(lambda m, x: m.erfc(x), values.astype(np.float32))
    # the gradient is -2/sqrt(pi) exp(-x^2): the fraction's derivative far into the tail too
    check_op(lambda m, x: m.erfc(x), Arg(np.array([-1.0, 0.3, 2.4, 2.6, 4.0, 9.0], np.float64)),
             off=OFF["erfc"])


def test_signbit():
    values = np.array([-0.0, 0.0, -1.5, 2.0, -np.inf, np.inf], np.float32)
    check(lambda m, x: m.signbit(x), values)
    check(lambda m, x: x.signbit(), values.astype(np.float64))
    unary_dtypes("signbit")
    check(lambda m, x: m.signbit(x), arr((4,), "uint8", 0, 200))


def test_isposinf_isneginf_isreal_is_complex_is_nonzero():
    values = np.array([-np.inf, np.inf, np.nan, 0.0, -2.0], np.float32)
    for name in ("isposinf", "isneginf", "isreal"):
        check(lambda m, x: getattr(m, name)(x), values)
        check(lambda m, x: getattr(x, name)(), arr((3,), "int64"))
        check(lambda m, x: getattr(m, name)(x), arr((3,), "bool"))
    check(lambda m, x: (m.is_complex(x), x.is_complex()), arr((3,)))
    check(lambda m, x: (m.is_nonzero(x), x.is_nonzero()), np.array([0.0], np.float32))
    check(lambda m, x: m.is_nonzero(x), np.array(3, np.int64))
    check(lambda m, x: m.is_nonzero(x), arr((2,)))
    with pytest.raises(RuntimeError, match=r"\[is_nonzero\].*\[2\]"):
        ug.is_nonzero(ug.ones(2))


def test_copysign():
    # b's gradient is zero in torch; unigrad's sign test records none
    check_op(lambda m, a, b: m.copysign(a, b.detach()), arr((3, 4)), arr((4,), seed=1))
    check(lambda m, a: m.copysign(a, np.array([-0.0, 0.0, -1.0, 3.0], np.float32).tolist()[0]), arr((4,)))
    check(lambda m, a, b: a.copysign(b), arr((4,)), np.array([-0.0, 0.0, -np.inf, np.inf], np.float32))
    check(lambda m, a, b: m.copysign(a, b), arr((3,), "int64"), arr((3,), "int64", seed=1))
    check(lambda m, a, b: m.copysign(a, b), arr((3,), "float16"), arr((3,), "float64", seed=1))
    check(lambda m, a: m.copysign(a, -1), arr((3,), "int64"))
    check(lambda m, a, b: m.copysign(a, b), arr((3,)), arr((2,)))


def test_heaviside():
    x = np.array([-1.0, 0.0, 2.0, -0.0, np.nan], np.float32)
    check(lambda m, a, v: m.heaviside(a, v), x, arr((5,), seed=1))
    check(lambda m, a, v: a.heaviside(v), arr((3, 4), "int64", -1, 2), arr((4,), "int64", seed=2))
    check(lambda m, a, v: m.heaviside(a, v), arr((3,), "int64"), arr((3,)))  # dtypes differ


def test_float_power():
    check_op(lambda m, a, b: m.float_power(a, b), arr((3, 4), low=0.2), arr((4,), seed=1))
    check(lambda m, a: m.float_power(a, 2), arr((3,), "int64"))
    check(lambda m, a: a.float_power(0.5), arr((3,), low=0.1))
    check(lambda m, a, b: m.float_power(a, b), arr((3,), "int64", 1, 4), arr((3,), "int32", 0, 3, seed=1))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin(name):
    check_op(lambda m, a, b: getattr(m, name)(a, b), arr((3, 4)), arr((4,), seed=1))
    nans = np.array([np.nan, 1.0, np.nan, -2.0], np.float32)
    check(lambda m, a, b: getattr(m, name)(a, b), nans, np.array([0.5, np.nan, np.nan, 3.0], np.float32))
    check(lambda m, a, b: getattr(a, name)(b), arr((3, 4), "int64"), arr((4,), "int64", seed=1))
    check(lambda m, a, b: getattr(m, name)(a, b), arr((3,)), arr((3,), "float64", seed=1))
    check(lambda m, a, b: getattr(m, name)(a, b), arr((3,)), arr((2,), seed=1))


def test_logaddexp2():
    check_op(lambda m, a, b: m.logaddexp2(a, b), arr((3, 4)), arr((4,), seed=1))
    check(lambda m, a, b: m.logaddexp2(a, b), arr((3,), low=200, high=300), arr((3,), low=-300, high=300, seed=1))
    check(lambda m, a, b: m.logaddexp2(a, b), arr((3,), "int64"), arr((3,), "int64"))


def test_negative_positive():
    check_op(lambda m, x: m.negative(x), arr((3, 4)))
    check_op(lambda m, x: m.positive(x), arr((3, 4)), off={"onnx": "the identity: no op to export"})
    check(lambda m, x: m.positive(x), arr((3,), "int64"))
    check(lambda m, x: m.positive(x), arr((3,), "bool"))


def test_ldexp():
    check_op(lambda m, x, e: m.ldexp(x, e), arr((3, 4)), arr((4,), low=-3, high=4, seed=1))
    check(lambda m, x, e: m.ldexp(x, e), arr((3,), "int64"), arr((3,), "int64", -2, 3))
    check(lambda m, x, e: x.ldexp(e), arr((3,), "float64"), arr((3,), "int32", -2, 3))


@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma(p):
    check_op(lambda m, x: m.mvlgamma(x, p), arr((3, 4), low=2.0, high=6.0))
    check(lambda m, x: x.mvlgamma(p), arr((3,), "int64", 2, 6))
    check(lambda m, x: m.mvlgamma(x, p), arr((3,), low=-1.0, high=1.0))


def test_aminmax():
    check(lambda m, x: tuple(m.aminmax(x)), arr((3, 4)))
    check(lambda m, x: tuple(x.aminmax(dim=-1)), arr((3, 4), "int64"))
    check(lambda m, x: tuple(m.aminmax(x, dim=0, keepdim=True)), arr((3, 4)))
    check(lambda m, x: tuple(m.aminmax(x, keepdim=True)), arr((3, 4)))
    check(lambda m, x: tuple(m.aminmax(x, dim=0)), arr(()))
    check(lambda m, x: tuple(m.aminmax(x)), arr((0, 3)))
    check(lambda m, x: tuple(m.aminmax(x, dim=2)), arr((3, 4)))
    r = ug.aminmax(ug.tensor([3.0, -1.0]))
    assert (r.min.item(), r.max.item()) == (-1.0, 3.0)
    check_op(lambda m, x: m.aminmax(x, dim=1).max, arr((3, 4)))


# ---- shapes and scatters


@pytest.mark.parametrize("name, shape", [("hsplit", (4,)), ("hsplit", (3, 6)), ("vsplit", (6, 2)),
                                         ("dsplit", (2, 3, 6))])
def test_hsplit_vsplit_dsplit(name, shape):
    check_op(lambda m, x: getattr(m, name)(x, 2), arr(shape))
    check(lambda m, x: getattr(x, name)([1, 3]), arr(shape, "int64"))
    check(lambda m, x: getattr(m, name)(x, 5), arr(shape))  # does not divide
    check(lambda m, x: getattr(m, name)(x, 1), arr(()))


def test_column_stack_broadcast_tensors_shapes_msort():
    check_op(lambda m, a, b, c: m.column_stack([a, b, c]), arr((3,)), arr((3, 2), seed=1), arr((3, 1), seed=2))
    check(lambda m, a: m.column_stack([a, a]), arr(()))
    check_op(lambda m, a, b: m.broadcast_tensors(a, b), arr((3, 1)), arr((4,), seed=1))
    check(lambda m, a, b: m.broadcast_tensors(a, b), arr((3, 2)), arr((4,), seed=1))
    assert ug.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    assert ug.broadcast_shapes() == tuple(torch.broadcast_shapes())
    with pytest.raises(RuntimeError, match=r"\[broadcast_shapes\]"):
        ug.broadcast_shapes((2,), (3,))
    check_op(lambda m, x: m.msort(x), arr((4, 3)), off={t: "sort is not exported nor compiled" for t in ("onnx", "jit")})
    check(lambda m, x: x.msort(), arr((5,), "int64"))


@pytest.mark.parametrize("dim, start, end, step", [(0, None, None, 1), (1, 1, 4, 2), (-1, -3, None, 1),
                                                   (0, 2, 100, 3)])
def test_slice_scatter(dim, start, end, step):
    x = arr((5, 6))
    shape = list(torch.zeros(5, 6)[(slice(None),) * (dim % 2) + (slice(start, end, step),)].shape)
    check_op(lambda m, a, s: m.slice_scatter(a, s, dim, start, end, step), x, arr(shape, seed=1))
    check(lambda m, a, s: a.slice_scatter(s, dim=dim, start=start, end=end, step=step), arr((5, 6), "int64"),
          arr(shape, "int64", seed=1))
    check(lambda m, a, s: m.slice_scatter(a, s, dim, start, end, step), x, arr((2, 2), seed=1))


def test_select_scatter_and_index_copy():
    check_op(lambda m, a, s: m.select_scatter(a, s, 1, -2), arr((3, 4, 2)), arr((3, 2), seed=1))
    check(lambda m, a, s: a.select_scatter(s, 0, 7), arr((3, 4)), arr((4,), seed=1))
    check(lambda m, a, s: a.select_scatter(s, 0, 1), arr((3, 4)), arr((3,), seed=1))
    index = np.array([3, 0], np.int64)
    check_op(lambda m, a, s: m.index_copy(a, 1, m.tensor(index), s), arr((3, 4)), arr((3, 2), seed=1))
    check(lambda m, a, s: a.index_copy(-1, m.tensor(index), s), arr((2, 4), "int64"), arr((2, 2), "int64", seed=1))
    check(lambda m, a, s: a.clone().index_copy_(0, m.tensor(index[:1]), s), arr((4, 3)), arr((1, 3), seed=1))
    check(lambda m, a, s: m.index_copy(a, 1, m.tensor(index), s), arr((3, 4)), arr((3, 3), seed=1))
    check(lambda m, a, s: m.index_copy(a, 1, m.tensor(index), s), arr((3, 4)), arr((3, 2), "float64", seed=1))


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    index = arr((4, 3), "int64", 0, 3, seed=5)
    # torch's forward-mode rule for prod gives zeros whatever the tangents (torch 2.13): prod's
    # jvp is checked against torch's double-vjp jvp in the next test instead
    off = {"jvp": "torch.func.jvp of prod gives zeros"} if reduce == "prod" else None
    opset = 18 if reduce in ("prod", "amax", "amin") else 17
    check_op(lambda m, x, s: m.scatter_reduce(x, 0, index.make(m), s, reduce, include_self=include_self),
             arr((3, 3)), arr((4, 3), seed=1), off=off, opset=opset)
    check(lambda m, x, s: x.scatter_reduce(1, index.make(m), s, reduce, include_self=include_self),
          arr((4, 5), "int64", -5, 5), arr((4, 3), "int64", -5, 5, seed=1))
    check(lambda m, x, s: x.scatter_reduce(-1, index.make(m), s, reduce, include_self=include_self),
          arr((4, 5), "float64"), arr((5, 4), "float64", seed=1))  # src larger than index
    check(lambda m, x, s: x.scatter_reduce(1, index.make(m), s, reduce, include_self=include_self),
          arr((4, 5), "bfloat16"), arr((4, 3), "bfloat16", seed=1))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_jvp(include_self):
    rng = np.random.default_rng(3)
    x, src, tx, ts = (rng.uniform(-2, 2, shape) for shape in ((3, 3), (4, 3), (3, 3), (4, 3)))
    src[0, 1] = 0.0  # a zero among the factors
    index = rng.integers(0, 3, (4, 3))

    def f(m):
        return lambda a, b: a.scatter_reduce(0, m.tensor(index), b, "prod", include_self=include_self)
    _, expected = torch.autograd.functional.jvp(f(torch), tuple(map(torch.tensor, (x, src))),
                                                tuple(map(torch.tensor, (tx, ts))))
    _, actual = ug.jvp(f(ug), tuple(map(ug.tensor, (x, src))), tuple(map(ug.tensor, (tx, ts))))
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def _grads_of_scatter_reduce(m, x, src, index, reduce, include_self, dtype):
    x = m.tensor(x, dtype=getattr(m, dtype), requires_grad=True)
    src = m.tensor(src, dtype=getattr(m, dtype), requires_grad=True)
    y = x.scatter_reduce(0, m.tensor(index), src, reduce, include_self=include_self)
    cot = m.tensor(np.arange(1.0, 1.0 + y.numel()).reshape(tuple(y.shape)), dtype=getattr(m, dtype))
    (y * cot).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), src.grad.numpy()


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduce, x, src", [
    # ties: the gradient is shared evenly among the elements equal to the result (x's own
    # value counted even without include_self, as torch counts it)
    ("amax", [0.0, 2.0, 5.0], [2.0, 1.0, 2.0, 0.0, 7.0, 7.0]),
    ("amin", [0.0, -1.0, 5.0], [-1.0, 3.0, -1.0, 0.0, 0.0, 6.0]),
    # zeros: one zero at a place takes the product of the others, two take none
    ("prod", [0.0, 2.0, 3.0], [0.0, 1.5, 0.0, 0.0, -2.0, 4.0]),
    ("prod", [2.0, 0.0, -3.0], [0.5, 0.0, 2.0, 3.0, 0.0, 1.0]),
])
def test_scatter_reduce_gradients_at_ties_and_zeros(reduce, x, src, include_self, dtype):
    index = np.array([0, 0, 1, 1, 2, 2])
    expected = _grads_of_scatter_reduce(torch, x, src, index, reduce, include_self, dtype)
    actual = _grads_of_scatter_reduce(ug, x, src, index, reduce, include_self, dtype)
    for e, a, what in zip(expected, actual, ("result", "x's gradient", "src's gradient")):
        np.testing.assert_array_equal(a, e, err_msg=what)


def test_scatter_reduce_in_place_and_nan():
    for reduce in ("prod", "amax", "amin"):
        check(lambda m, x, s, reduce=reduce: (lambda t: (t.scatter_reduce_(0, m.tensor([[0, 2, 1], [0, 0, 2]]), s,
                                                                           reduce, include_self=False), t)[1])(x.clone()),
              arr((3, 3)), arr((2, 3), seed=1))
        check(lambda m, x, s, reduce=reduce: x.scatter_reduce(0, m.tensor([1, 1, 0]), s, reduce),
              Arg(np.array([1.0, np.nan, 2.0], np.float32)), Arg(np.array([np.nan, 3.0, 4.0], np.float32)))


def test_scatter_reduce_refuses_bad_input():
    with pytest.raises(RuntimeError, match=r"\[scatter_reduce\].*sum, prod, mean, amax or amin, got max"):
        ug.scatter_reduce(ug.zeros(3), 0, ug.tensor([0, 1]), ug.ones(2), "max")
    with pytest.raises(RuntimeError, match=r"\[scatter_reduce\].*float64.*float32"):
        ug.scatter_reduce(ug.zeros(3), 0, ug.tensor([0, 1]), ug.ones(2, dtype=ug.float64), "amax")
    with pytest.raises(IndexError, match=r"\[scatter_reduce\] index 3 is out of bounds for dimension 0 with size 3"):
        ug.scatter_reduce(ug.zeros(3), 0, ug.tensor([0, 3]), ug.ones(2), "prod")
    with pytest.raises(RuntimeError, match=r"\[scatter_reduce\].*same number of dimensions.*\[2, 2\]"):
        ug.scatter_reduce(ug.zeros(3), 0, ug.tensor([[0, 1], [1, 0]]), ug.ones(2, 2), "amin")
    for reduce in ("prod", "amax"):
        check(lambda m, x, s, reduce=reduce: x.scatter_reduce(0, m.tensor([0, 3]), s, reduce), arr((3,)), arr((2,)))
        check(lambda m, x, s, reduce=reduce: x.scatter_reduce(0, m.tensor([0, 1]), s, reduce), arr((3,)),
              arr((2,), "float64"))
        check(lambda m, x, s, reduce=reduce: x.scatter_reduce(1, m.tensor([[0, 1, 0]]), s, reduce), arr((3, 2)),
              arr((1, 3)))


@pytest.mark.parametrize("base", [10.0, 2.0, 0.5])
def test_logspace(base):
    check(lambda m: m.logspace(-2, 3, 7, base))
    check(lambda m: m.logspace(0, 2, 3, base, dtype=m.float64))
    check(lambda m: m.logspace(0, 3, 4, base=base, dtype=m.int64))
    check(lambda m: m.logspace(1, 1, 1, base))


def test_randint_like():
    x = ug.zeros(3, 4, dtype=ug.int32)
    r = ug.randint_like(x, 5)
    assert r.shape == (3, 4) and r.dtype == ug.int32 and 0 <= r.min().item() and r.max().item() < 5
    r = ug.randint_like(x, -3, 2, dtype=ug.float32)
    assert r.dtype == ug.float32 and -3 <= r.min().item() and r.max().item() < 2


# ---- global habits


def test_inference_mode_records_nothing_as_context_and_decorator():
    x = ug.ones(2, requires_grad=True)
    with ug.inference_mode():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @ug.inference_mode()
    def double(a):
        return a * 2

    assert not double(x).requires_grad
    with ug.inference_mode(False):
        assert (x * 2).requires_grad


def test_seed_returns_the_seed_it_set():
    s = ug.seed()
    assert s == ug.initial_seed() and 0 <= s < 2**63
    a = ug.rand(3)
    ug.manual_seed(s)
    assert ug.equal(a, ug.rand(3))


@pytest.fixture
def print_defaults():
    yield
    ug.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


PRINTED = [
    lambda m: m.arange(30),
    lambda m: (m.arange(-24, 24) / 7).reshape(2, 24),  # one division: the same float32 values in both
    lambda m: m.tensor([1.0, 2000.0, 3.0]),
    lambda m: m.tensor([[0.5, -1e-5], [3.25, 1e9]]),
    lambda m: m.tensor([1.0, 2.0, 3.0]),
    lambda m: m.tensor(3.0),
]


@pytest.mark.parametrize("options", [{}, {"precision": 2}, {"precision": 7, "linewidth": 40}, {"sci_mode": True},
                                     {"sci_mode": False, "linewidth": 30}, {"profile": "short"}])
def test_printoptions_print_as_torch(options, print_defaults):
    ug.set_printoptions(**options)
    torch.set_printoptions(**options)
    for make in PRINTED:
        assert repr(make(ug)) == repr(make(torch)), (repr(make(ug)), repr(make(torch)))


def test_printoptions_threshold_and_edgeitems(print_defaults):
    ug.set_printoptions(threshold=5, edgeitems=2)
    torch.set_printoptions(threshold=5, edgeitems=2)
    shown = repr(ug.arange(10.0))
    # unigrad adds the shape of an elided tensor
    assert shown == repr(torch.arange(10.0))[:-1] + ", shape=(10,))", shown
    ug.set_printoptions(threshold=math.inf)
    assert "..." not in repr(ug.zeros(2000))
    with pytest.raises(ValueError, match=r"\[set_printoptions\]"):
        ug.set_printoptions(linewidth=0)
    with pytest.raises(ValueError, match=r"\[set_printoptions\] profile"):
        ug.set_printoptions(profile="long")


IN_PLACE = [
    ("addmv_", lambda m, t: t.addmv_(m.ones(3, 2), m.ones(2), beta=0.5, alpha=2), (3,)),
    ("addr_", lambda m, t: t.addr_(m.ones(3), m.arange(4.0)), (3, 4)),
    ("addbmm_", lambda m, t: t.addbmm_(m.ones(2, 3, 5), m.ones(2, 5, 4)), (3, 4)),
    ("renorm_", lambda m, t: t.renorm_(2, 0, 1.0), (3, 4)),
    ("copysign_", lambda m, t: t.copysign_(-1.0), (3, 4)),
    ("copysign_.tensor", lambda m, t: t.copysign_(m.tensor([-1.0, 0.0, -0.0, 2.0])), (3, 4)),
    ("heaviside_", lambda m, t: t.heaviside_(m.tensor([0.5])), (3, 4)),
    ("float_power_", lambda m, t: t.float_power_(2), (3, 4)),
    ("ldexp_", lambda m, t: t.ldexp_(m.tensor([1.0, -2.0, 0.0, 3.0])), (3, 4)),
    ("mvlgamma_", lambda m, t: t.abs_().add_(2).mvlgamma_(2), (3, 4)),
    ("scatter_reduce_", lambda m, t: t.scatter_reduce_(0, m.tensor([[0, 2, 1, 0]]), m.ones(1, 4), "sum"), (3, 4)),
    ("scatter_reduce_.amax", lambda m, t: t.scatter_reduce_(0, m.tensor([[0, 2, 1, 0]]), m.ones(1, 4) * 2, "amax",
                                                            include_self=False), (3, 4)),
] + [(f"{name}_", lambda m, t, name=name: getattr(t, name + "_")(), (3, 4))
     for name in ("erfc", "deg2rad", "rad2deg", "sgn", "sinc", "negative")]


@pytest.mark.parametrize("name, call, shape", IN_PLACE, ids=[c[0] for c in IN_PLACE])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_in_place_forms(name, call, shape, dtype):
    # the result written into the tensor itself; torch refuses a result its dtype cannot hold
    check(lambda m, x: (lambda t: (call(m, t), t)[1])(x.clone()), arr(shape, dtype, seed=4))


def test_addmv_and_addbmm_need_one_dtype_as_torch():
    check(lambda m, i, a, v: m.addmv(i, a, v), arr((3,), "float64"), arr((3, 2)), arr((2,)))
    check(lambda m, i, a, b: m.addbmm(i, a, b), arr((3, 4)), arr((2, 3, 5)), arr((2, 5, 4), "float64"))
    with pytest.raises(RuntimeError, match=r"\[addmv\].*float64.*float32"):
        ug.addmv(ug.zeros(3, dtype=ug.float64), ug.ones(3, 2), ug.ones(2))
