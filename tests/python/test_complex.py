"""Complex tensors against torch 2.13: dtypes and promotion, creation, casts, printing, the
part views, every complex elementwise op, sums and products, and gradients (torch's
convention: dL/dx + i dL/dy for z = x + iy), checked against torch.autograd and against
central differences in complex128.

The complex ops are composed of real ops over view_as_real, not torch's std::complex
kernels (the product, quotient and abs have kernels): each part of a result is a few roundings
away from torch's, so values are compared within K·eps·(|torch| + 1) with K the handful of
roundings in the composed formula."""
import cmath
import math

import numpy as np
import pytest
import torch

import unigrad as ug

DTYPES = [("complex64", np.complex64, 2.0**-23), ("complex128", np.complex128, 2.0**-52)]
REAL_OF = {"complex64": "float32", "complex128": "float64"}
ROUNDINGS = 64  # the composed formulas' roundings, with their conditioning near the test range


def crandn(rng, shape, npdtype, scale=1.0):
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale).astype(npdtype)


def close(got, want, eps, k=ROUNDINGS):
    got = np.asarray(got.numpy() if isinstance(got, ug.Tensor) else got)
    want = np.asarray(want.detach().resolve_conj().numpy() if isinstance(want, torch.Tensor) else want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    bound = k * eps * (np.abs(want) + 1)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
    ok = (err <= bound) | (got == want) | (np.isnan(got) & np.isnan(want))
    assert np.all(ok), (got[~ok], want[~ok])


# ---- dtypes -------------------------------------------------------------------------------

def test_dtype_objects_and_names():
    assert ug.complex64 == ug.cfloat and ug.complex128 == ug.cdouble
    assert ug.complex64.is_complex and not ug.complex64.is_floating_point and ug.complex64.itemsize == 8
    assert ug.complex128.itemsize == 16 and ug.complex128.is_signed
    assert not ug.float32.is_complex
    assert ug.tensor([1j]).is_complex() and not ug.tensor([1.0]).is_complex()


NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]


@pytest.mark.parametrize("a", NAMES)
def test_promote_types_with_complex_as_torch(a):
    for b in ["complex64", "complex128"]:
        want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
        assert str(ug.promote_types(getattr(ug, a), getattr(ug, b))).split(".")[-1] == want, (a, b)
        assert ug.can_cast(getattr(ug, b), getattr(ug, a)) == torch.can_cast(getattr(torch, b), getattr(torch, a))
        assert ug.can_cast(getattr(ug, a), getattr(ug, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64"])
def test_python_complex_scalar_promotes_as_torch(dtype):
    t = torch.ones(2, dtype=getattr(torch, dtype))
    u = ug.ones(2, dtype=getattr(ug, dtype))
    for s in [1j, 2 + 0j]:
        assert str((u * s).dtype).split(".")[-1] == str((t * s).dtype).split(".")[-1]
        assert str((s + u).dtype).split(".")[-1] == str((s + t).dtype).split(".")[-1]
    z = torch.ones((), dtype=torch.complex128)
    assert str((u * ug.ones((), dtype=ug.complex128)).dtype).split(".")[-1] == str((t * z).dtype).split(".")[-1]


# ---- creation, casts, conversion, printing ----------------------------------------------

def test_creation_and_numpy_round_trip():
    a = np.array([[1 + 2j, -3.5 - 0.25j], [0j, 1e-3j]], dtype=np.complex128)
    t = ug.tensor(a)
    assert t.dtype == ug.complex128 and t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(ug.from_numpy(a.astype(np.complex64)).numpy(), a.astype(np.complex64))
    assert ug.tensor([1, 2.5, 3j]).dtype == ug.complex64
    assert ug.tensor([1, 2.5, 3j], dtype=ug.complex128).tolist() == [1, 2.5, 3j]
    assert ug.tensor(1 - 2j).item() == 1 - 2j
    assert ug.zeros(2, dtype=ug.cfloat).tolist() == [0j, 0j]
    assert ug.full((2,), 1 + 1j, dtype=ug.complex64).tolist() == [1 + 1j, 1 + 1j]
    assert ug.tensor(np.complex64(2 - 1j)).item() == 2 - 1j
    assert ug.asarray(a).dtype == ug.complex128


@pytest.mark.parametrize("target", ["float32", "float64", "int64", "bool", "complex64", "complex128"])
def test_casts_as_torch(target):
    a = np.array([1.5 + 2j, -3 - 0j, 0j, 0 + 1j], dtype=np.complex128)
    z = ug.tensor(a)
    if target in ("float32", "float64", "int64"):
        # torch warns and keeps the real part; unigrad asks for the real part explicitly, so that
        # no op computes on the real part of a complex input without saying so
        with pytest.raises(TypeError, match=rf"\[to\] casting complex128 to {target} would discard the imaginary"):
            z.to(getattr(ug, target))
        z = z.real
    want = torch.tensor(a).real if target in ("float32", "float64", "int64") else torch.tensor(a)
    want = want.to(getattr(torch, target))
    np.testing.assert_array_equal(z.to(getattr(ug, target)).numpy(), want.numpy())
    for src in ["float32", "int32", "bool"]:
        x = torch.tensor([1.5, -2, 0]).to(getattr(torch, src))
        if target.startswith("complex"):
            np.testing.assert_array_equal(ug.tensor(x.numpy()).to(getattr(ug, target)).numpy(),
                                          x.to(getattr(torch, target)).numpy())


@pytest.mark.parametrize("values", [
    [1 + 2j, 3 - 4j],
    [0.5 + 1.25j, -0.3 - 0.1j, 2 + 0j],
    [[1e-5 + 1j, 3.0], [1e5j, -2]],
    [float("nan") + 1j, complex(float("inf"), -1)],
    [1j] * 1200,
])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_printing_as_torch(values, dtype):
    # unigrad also names the shape of an elided tensor, which torch leaves out
    got = str(ug.tensor(values, dtype=getattr(ug, dtype))).replace(", shape=(1200,)", "")
    assert got.replace("ug.", "torch.") == str(torch.tensor(values, dtype=getattr(torch, dtype)))


# ---- views ----------------------------------------------------------------------------------

def test_view_as_real_and_complex_share_storage_as_torch():
    a = crandn(np.random.default_rng(0), (3, 4), np.complex64)
    z, tz = ug.tensor(a), torch.tensor(a)
    r, tr = ug.view_as_real(z), torch.view_as_real(tz)
    assert r.shape == tuple(tr.shape) and r.stride() == tr.stride() and r.dtype == ug.float32
    np.testing.assert_array_equal(r.numpy(), tr.numpy())
    t = z.transpose(0, 1)
    assert ug.view_as_real(t).stride() == torch.view_as_real(tz.transpose(0, 1)).stride()
    back = ug.view_as_complex(r)
    assert back.stride() == z.stride()
    r[0, 0, 1] = 7.0  # writes through every view
    assert z[0, 0].item().imag == 7.0 and back[0, 0].item().imag == 7.0
    z.real[1, 1] = -1.0
    assert z[1, 1].item().real == -1.0
    z.imag = ug.zeros(3, 4)
    assert np.all(z.numpy().imag == 0)
    np.testing.assert_array_equal(ug.real(ug.tensor([1.0, 2.0])).numpy(), [1.0, 2.0])


def test_view_errors_name_the_op():
    with pytest.raises(TypeError, match=r"view_as_real.*complex"):
        ug.view_as_real(ug.ones(2))
    with pytest.raises(ValueError, match=r"view_as_complex.*size 2"):
        ug.view_as_complex(ug.ones(2, 3))
    with pytest.raises(ValueError, match=r"view_as_complex.*stride 1"):
        ug.view_as_complex(ug.ones(2, 2).t())
    with pytest.raises(TypeError, match=r"view_as_complex.*float32 and float64"):
        ug.view_as_complex(ug.ones(2, 2, dtype=ug.int64))
    with pytest.raises(TypeError, match=r"imag.*non-complex"):
        ug.imag(ug.ones(2))
    with pytest.raises(TypeError, match=r"complex.*one dtype"):
        ug.complex(ug.ones(2), ug.ones(2, dtype=ug.float64))


def test_complex_polar_angle_conj_as_torch():
    rng = np.random.default_rng(1)
    re, im = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    np.testing.assert_array_equal(ug.complex(ug.tensor(re), ug.tensor(im)).numpy(),
                                  torch.complex(torch.tensor(re), torch.tensor(im)).numpy())
    r, th = np.abs(re), im
    close(ug.polar(ug.tensor(r), ug.tensor(th)), torch.polar(torch.tensor(r), torch.tensor(th)), 2.0**-52)
    a = crandn(rng, (5,), np.complex128)
    np.testing.assert_array_equal(ug.conj(ug.tensor(a)).numpy(), np.conj(a))
    np.testing.assert_array_equal(ug.tensor(a).conj_physical().numpy(), np.conj(a))
    close(ug.angle(ug.tensor(a)), torch.angle(torch.tensor(a)), 2.0**-52)
    x = np.array([-2.0, 0.0, 3.0, float("nan")])
    np.testing.assert_array_equal(ug.angle(ug.tensor(x)).numpy(), torch.angle(torch.tensor(x)).numpy())
    assert not ug.tensor(a).is_conj() and ug.resolve_conj(ug.tensor(a)).tolist() == ug.tensor(a).tolist()


# ---- elementwise ops -----------------------------------------------------------------------

UNARY = ["neg", "abs", "square", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "reciprocal", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid"]
EXPM1_LOG1P_NEAR_ZERO = {"expm1", "log1p"}  # composed as exp(z) - 1 and log(1 + z): absolute error eps


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_unary_as_torch(name, dtype, npdtype, eps):
    a = crandn(np.random.default_rng(2), (4, 33), npdtype)
    a[0, :4] = [0, 1, -1, 1j]  # the branch points' neighbours and exact values
    a[1, :3] = [-2 + 0j, -2 - 1e-30j, 1e-3 + 1e-3j]
    want = getattr(torch, name)(torch.tensor(a))
    close(getattr(ug, name)(ug.tensor(a)), want, eps)


def test_predicates_and_comparisons_as_torch():
    a = np.array([1 + 1j, complex(float("nan"), 0), complex(0, float("inf")), 2j], dtype=np.complex64)
    b = np.array([1 + 1j, 0j, complex(0, float("inf")), 2 + 2j], dtype=np.complex64)
    for name in ["isnan", "isinf", "isfinite"]:
        np.testing.assert_array_equal(getattr(ug, name)(ug.tensor(a)).numpy(),
                                      getattr(torch, name)(torch.tensor(a)).numpy())
    np.testing.assert_array_equal((ug.tensor(a) == ug.tensor(b)).numpy(), (torch.tensor(a) == torch.tensor(b)).numpy())
    np.testing.assert_array_equal((ug.tensor(a) != ug.tensor(b)).numpy(), (torch.tensor(a) != torch.tensor(b)).numpy())


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_binary_as_torch(op, dtype, npdtype, eps):
    rng = np.random.default_rng(3)
    a, b = crandn(rng, (3, 1, 5), npdtype), crandn(rng, (4, 5), npdtype)
    if op == "pow":  # 0^b: 0 for Re(b) > 0 (0^0 is below: torch's is nan)
        a[0, 0, :2] = 0
        b[0, :2] = [1, 2]
    f = getattr(torch, op)
    g = getattr(ug, op)
    close(g(ug.tensor(a), ug.tensor(b)), f(torch.tensor(a), torch.tensor(b)), eps)
    real = rng.standard_normal(5).astype(REAL_OF[dtype])
    close(g(ug.tensor(a), ug.tensor(real)), f(torch.tensor(a), torch.tensor(real)), eps)
    close(g(ug.tensor(real), ug.tensor(b)), f(torch.tensor(real), torch.tensor(b)), eps)
    close(g(ug.tensor(a), 0.5 - 2j), f(torch.tensor(a), 0.5 - 2j), eps)
    close(g(ug.tensor(real), 3j), f(torch.tensor(real), 3j), eps)


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_product_kernel_on_every_layout_as_torch(dtype, npdtype, eps):
    """The product's kernel: contiguous runs long enough to be split between threads, strided
    and transposed views, broadcast rows and scalars, in place (mul_) and square. Each part is
    ar br - ai bi or ar bi + ai br: two products and a sum, a few roundings (a fused
    multiply-add rounds once less) of |ar br| + |ai bi| <= |a| |b|."""
    rng = np.random.default_rng(11)
    a, b = crandn(rng, (300, 257), npdtype), crandn(rng, (257, 300), npdtype)
    cases = [(a, b.T.copy()), (a, b.T), (a[::2, 1::3], b.T[::2, 1::3]), (a, b[0, :257]), (a, np.asarray(b[0, 0]))]
    for x, y in cases:
        want = torch.tensor(x) * torch.tensor(y)
        got = ug.tensor(x) * ug.tensor(y)
        bound = 4 * eps * np.abs(x) * np.abs(y)
        assert got.shape == tuple(want.shape) and got.dtype == getattr(ug, dtype)
        assert np.all(np.abs(got.numpy() - want.numpy()) <= bound)
    z = ug.tensor(a[:4, :5])
    close(z.square(), torch.tensor(a[:4, :5]).square(), eps, k=4)
    z.mul_(ug.tensor(b[:4, :5]))
    close(z, torch.tensor(a[:4, :5]) * torch.tensor(b[:4, :5]), eps, k=4)


def parts(re, im, npdtype):
    """A complex array of these parts (re + 1j * im would turn an infinite part's partner NaN)."""
    z = np.empty(np.broadcast(re, im).shape, npdtype)
    z.real, z.imag = re, im
    return z


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_quotient_and_abs_keep_huge_and_tiny_magnitudes(dtype, npdtype, eps):
    """Magnitudes over 10^+-30 (complex64) or 10^+-300 (complex128), where |b|^2 and |z|^2
    overflow or underflow: Smith's quotient and the scaled abs stay within a few roundings of
    torch's and NumPy's, normwise."""
    rng = np.random.default_rng(13)
    decades, n = (30 if dtype == "complex64" else 300), 4096
    scale = 10.0 ** rng.uniform(-decades, decades, n)
    b = (crandn(rng, n, np.complex128) * scale).astype(npdtype)
    a = (crandn(rng, n, np.complex128) * scale * 10.0 ** rng.uniform(-4, 4, n)).astype(npdtype)
    quotient, magnitude = (ug.tensor(a) / ug.tensor(b)).numpy(), ug.tensor(a).abs().numpy()
    assert quotient.dtype == npdtype and magnitude.dtype == np.dtype(REAL_OF[dtype])
    for want in (a / b, (torch.tensor(a) / torch.tensor(b)).numpy()):
        assert np.all(np.abs(quotient - want) <= 8 * eps * np.abs(want))
    for want in (np.abs(a), torch.tensor(a).abs().numpy()):
        assert np.all(np.abs(magnitude - want) <= 3 * eps * want)


SPECIALS = [0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan]


def same_values(got, want, eps):
    """Equal classes (NaN, +-inf, finite) part by part, finite parts within a few roundings."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)) if np.iscomplexobj(want) else ((got, want),):
        assert np.array_equal(np.isnan(g), np.isnan(w))
        fin = np.isfinite(w)
        assert np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)])
        assert np.all(np.abs(g[fin] - w[fin]) <= 4 * eps * (np.abs(w[fin]) + 1))


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_quotient_and_abs_of_zeros_infinities_and_nans_as_numpy_and_torch(dtype, npdtype, eps):
    """Every pair of parts from 0, -0, finite, +-inf and NaN: as NumPy's Smith division (a zero
    divisor gives each part over |0|) and C's hypot (an infinite part beats a NaN), which torch
    2.13 also gives."""
    re, im = np.meshgrid(SPECIALS, SPECIALS)
    z = parts(re.ravel(), im.ravel(), npdtype)
    a, b = z[:, None], z[None, :]
    with np.errstate(all="ignore"):
        want = a / b
    got = (ug.tensor(a) / ug.tensor(b)).numpy()
    same_values(got, want, eps)
    same_values(got, (torch.tensor(a) / torch.tensor(b)).numpy(), eps)
    same_values(ug.tensor(z).abs().numpy(), np.abs(z), eps)
    same_values(ug.tensor(z).abs().numpy(), torch.tensor(z).abs().numpy(), eps)


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_quotient_and_abs_kernels_on_every_layout_as_torch(dtype, npdtype, eps):
    """Contiguous runs long enough to be split between threads, strided and transposed views,
    broadcast rows and scalars, in place (div_), and a real operand promoted."""
    rng = np.random.default_rng(14)
    a, b = crandn(rng, (300, 257), npdtype), crandn(rng, (257, 300), npdtype)
    cases = [(a, b.T.copy()), (a, b.T), (a[::2, 1::3], b.T[::2, 1::3]), (a, b[0, :257]), (a, np.asarray(b[0, 0]))]
    for x, y in cases:
        got, want = ug.tensor(x) / ug.tensor(y), torch.tensor(x) / torch.tensor(y)
        assert got.shape == tuple(want.shape) and got.dtype == getattr(ug, dtype)
        assert np.all(np.abs(got.numpy() - want.numpy()) <= 8 * eps * np.abs(want.numpy()))
        close(ug.tensor(y).abs(), torch.tensor(y).abs(), eps, k=3)
    close(ug.tensor(b.T).abs(), torch.tensor(b.T).abs(), eps, k=3)
    z = ug.tensor(a[:4, :5])
    z.div_(ug.tensor(b[:4, :5]))
    close(z, torch.tensor(a[:4, :5]) / torch.tensor(b[:4, :5]), eps, k=8)
    real = a[:4, :5].real.copy()
    close(ug.tensor(real) / ug.tensor(b[:4, :5]), torch.tensor(real) / torch.tensor(b[:4, :5]), eps, k=8)
    close(ug.tensor(a[:4, :5]).reciprocal(), torch.tensor(a[:4, :5]).reciprocal(), eps, k=8)


def test_quotient_and_abs_under_jit_vmap_and_jvp():
    rng = np.random.default_rng(15)
    a, b = crandn(rng, (3, 4), np.complex128), crandn(rng, (3, 4), np.complex128)

    def f(z, w):
        return (z / w[0]).abs() * (w / z).real

    want = f(ug.tensor(a), ug.tensor(b)).numpy()
    np.testing.assert_array_equal(ug.jit(f)(ug.tensor(a), ug.tensor(b)).numpy(), want)
    batched = ug.vmap(f)(ug.tensor(np.stack([a, 2 * a])), ug.tensor(np.stack([b, b])))
    np.testing.assert_allclose(batched.numpy(), np.stack([want, f(ug.tensor(2 * a), ug.tensor(b)).numpy()]),
                               rtol=1e-15)
    # forward mode against torch's
    ta, tb = crandn(rng, (3, 4), np.complex128), crandn(rng, (3, 4), np.complex128)
    _, got = ug.func.jvp(f, (ug.tensor(a), ug.tensor(b)), (ug.tensor(ta), ug.tensor(tb)))
    _, expected = torch.func.jvp(f, (torch.tensor(a), torch.tensor(b)), (torch.tensor(ta), torch.tensor(tb)))
    close(got, expected, 2.0**-52, k=1e3)


def test_complex_scatter_sums_as_torch():
    """scatter_add and index_add of complex values (the gradient of indexing a complex tensor
    in a compiled program is one), and the orderless reductions refused."""
    rng = np.random.default_rng(12)
    src = crandn(rng, (6, 3), np.complex64)
    index = np.array([[0, 1, 2], [2, 0, 1], [1, 1, 0], [0, 2, 2], [3, 3, 3], [1, 0, 3]])
    want = torch.zeros(4, 3, dtype=torch.complex64).scatter_add_(0, torch.tensor(index), torch.tensor(src))
    got = ug.zeros(4, 3, dtype=ug.complex64).scatter_add_(0, ug.tensor(index), ug.tensor(src))
    close(got, want, 2.0**-23, k=4)
    want = torch.ones(4, 3, dtype=torch.complex64).scatter_reduce_(0, torch.tensor(index), torch.tensor(src), "prod")
    got = ug.ones(4, 3, dtype=ug.complex64).scatter_reduce_(0, ug.tensor(index), ug.tensor(src), "prod")
    close(got, want, 2.0**-23, k=8)
    with pytest.raises(RuntimeError, match=r"\[scatter\] reducing by max or min is not supported for complex"):
        ug.zeros(4, 3, dtype=ug.complex64).scatter_reduce_(0, ug.tensor(index), ug.tensor(src), "amax")


def test_zero_to_the_zero_is_one_as_python_and_numpy():
    # torch computes exp(0 * log 0) = nan; Python, NumPy and JAX give 1
    assert ug.pow(ug.tensor([0j]), ug.tensor([0j])).tolist() == [0j ** 0j] == [complex(np.complex128(0) ** 0)]


def test_inplace_and_unsupported_ops():
    z = ug.tensor([1 + 1j, 2j])
    z.mul_(1j)
    assert z.tolist() == [-1 + 1j, -2 + 0j]
    z += ug.tensor([1j, 1])
    assert z.tolist() == [-1 + 2j, -1 + 0j]
    for call in [lambda: ug.maximum(z, z), lambda: z < z, lambda: ug.floor(z), lambda: ug.relu(z)]:
        with pytest.raises(TypeError, match="not supported for complex tensors"):
            call()


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_sum_mean_matmul_as_torch(dtype, npdtype, eps):
    rng = np.random.default_rng(4)
    a, b = crandn(rng, (2, 6, 7), npdtype), crandn(rng, (7, 3), npdtype)
    ta, tb = torch.tensor(a), torch.tensor(b)
    close(ug.tensor(a).sum(), ta.sum(), eps, k=4 * 84)
    close(ug.tensor(a).sum((0, -1), keepdim=True), ta.sum((0, -1), keepdim=True), eps, k=4 * 84)
    close(ug.tensor(a).mean(1), ta.mean(1), eps, k=4 * 84)
    close(ug.tensor(a) @ ug.tensor(b), ta @ tb, eps, k=8 * 7 * 4)
    close(ug.matmul(ug.tensor(a[0, 0]), ug.tensor(b)), ta[0, 0] @ tb, eps, k=8 * 7 * 4)


@pytest.mark.parametrize("dtype,npdtype,eps", DTYPES)
def test_products_scans_and_statistics_as_torch(dtype, npdtype, eps):
    rng = np.random.default_rng(6)
    a = crandn(rng, (3, 5, 7), npdtype)
    z, t = ug.tensor(a), torch.tensor(a)
    # the products multiply up to 105 factors of |z| ~ 1 in another order: K·n·eps relative
    close(z.prod(), t.prod(), eps, k=4 * 105)
    for dim in (0, 1, -1):
        close(z.prod(dim), t.prod(dim), eps, k=4 * 7 * 8)
        close(z.prod(dim, keepdim=True), t.prod(dim, keepdim=True), eps, k=4 * 7 * 8)
        close(z.cumsum(dim), t.cumsum(dim), eps, k=4 * 7)
        close(ug.cumprod(z, dim), torch.cumprod(t, dim), eps, k=4 * 7 * 8)
        close(z.var(dim), t.var(dim), eps, k=8 * 7)
        close(z.std(dim, correction=0), t.std(dim, correction=0), eps, k=8 * 7)
    close(z.var(), t.var(), eps, k=8 * 105)
    close(ug.sgn(z), torch.sgn(t), eps, k=8)
    assert ug.sgn(ug.tensor([0j, 3 + 4j], dtype=ug.complex128)).tolist() == [0j, 0.6 + 0.8j]
    close(ug.linalg.vector_norm(z), torch.linalg.vector_norm(t), eps, k=8 * 105)
    close(ug.linalg.vector_norm(z, float("inf"), dim=1), torch.linalg.vector_norm(t, float("inf"), dim=1), eps, k=8)
    close(z.norm(1), t.norm(1), eps, k=8 * 105)
    # empty products are one, a scan of one element is itself, 0-d values pass through
    assert ug.tensor(np.zeros((2, 0), npdtype)).prod(1).tolist() == [1, 1]
    assert ug.tensor(np.zeros((0,), npdtype)).prod().item() == 1
    assert ug.cumprod(z[:, :1], 1).tolist() == z[:, :1].tolist()
    assert ug.tensor(1 + 2j).cumsum(0).item() == 1 + 2j


# ---- gradients ------------------------------------------------------------------------------

GRAD_CASES = {
    "mul": lambda m, z, w: (z * w).abs().sum(),
    "div": lambda m, z, w: (z / w).real.sum() + (z / w).imag.pow(2).sum(),
    "exp_log": lambda m, z, w: (m.exp(z) * m.log(w)).abs().pow(2).sum(),
    "sqrt_sin": lambda m, z, w: m.view_as_real(m.sqrt(z) + m.sin(w)).pow(3).sum(),
    "tanh_reciprocal": lambda m, z, w: (m.tanh(z * 0.3) * w.reciprocal()).angle().sum(),
    "conj_matmul": lambda m, z, w: (z.conj() @ w.transpose(0, 1)).abs().sum(),
    "sum_mean_pow": lambda m, z, w: ((z.sum(0) + w.mean(0)) ** 2).imag.sum(),
    "polar": lambda m, z, w: m.polar(z.abs(), w.angle()).real.sum(),
    "prod_cumprod": lambda m, z, w: (z.prod(1) * w.cumprod(1)[:, -1]).abs().sum() + m.cumprod(z, 1).real.sum(),
    "var_std_cumsum": lambda m, z, w: z.var(0).sum() + w.std(1, correction=0).sum() + z.cumsum(-1).imag.sum(),
    "sgn_norm": lambda m, z, w: (m.sgn(z) * w).real.sum() + m.linalg.vector_norm(w, 3.0, dim=1).sum(),
    "div_abs_broadcast": lambda m, z, w: (z / w[0]).abs().sum() + (w[:, :1] / z).imag.sum() + (z / 2.5).abs().sum(),
}


@pytest.mark.parametrize("case", GRAD_CASES)
def test_gradients_as_torch_and_finite_differences(case):
    f = GRAD_CASES[case]
    rng = np.random.default_rng(5)
    a, b = crandn(rng, (3, 4), np.complex128), crandn(rng, (3, 4), np.complex128)
    tz, tw = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    f(torch, tz, tw).backward()
    z, w = ug.tensor(a, requires_grad=True), ug.tensor(b, requires_grad=True)
    loss = f(ug, z, w)
    loss.backward()
    assert abs(loss.item() - f(torch, torch.tensor(a), torch.tensor(b)).item()) <= 1e-12 * (1 + abs(loss.item()))
    close(z.grad, tz.grad, 2.0**-52, k=1e3)
    close(w.grad, tw.grad, 2.0**-52, k=1e3)
    # central differences along the real and imaginary directions: dL/dx + i dL/dy
    h = 1e-6
    for i in [(0, 0), (1, 2), (2, 3)]:
        numeric = 0j
        for step, part in [(h, 1), (1j * h, 1j)]:
            up, down = a.copy(), a.copy()
            up[i] += step
            down[i] -= step
            numeric += part * (f(ug, ug.tensor(up), ug.tensor(b)).item() -
                               f(ug, ug.tensor(down), ug.tensor(b)).item()) / (2 * h)
        assert abs(z.grad[i].item() - numeric) <= 1e-6 * (1 + abs(numeric)), (i, z.grad[i].item(), numeric)


def test_gradients_through_the_views_take_any_layout():
    # a sum's gradient arrives expanded (strides 0), a transpose's transposed
    z = ug.tensor([[1 + 2j, 3j], [-1 + 0j, 2 - 1j]], requires_grad=True)
    ug.view_as_real(z).sum().backward()
    assert z.grad.tolist() == [[1 + 1j, 1 + 1j], [1 + 1j, 1 + 1j]]
    x = ug.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], requires_grad=True)
    (ug.view_as_complex(x).mT * ug.tensor([[1j, 2], [3, 4j]])).real.sum().backward()
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (torch.view_as_complex(tx).mT * torch.tensor([[1j, 2], [3, 4j]])).real.sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()


def test_real_input_through_complex_gets_a_real_gradient():
    x = ug.tensor([0.5, -1.0, 2.0], dtype=ug.float64, requires_grad=True)
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (x * (1 + 2j)).exp().abs().sum().backward()
    (tx * (1 + 2j)).exp().abs().sum().backward()
    assert x.grad.dtype == ug.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    z = ug.tensor([1 + 1j], requires_grad=True)
    z.real.sum().backward()
    assert z.grad.tolist() == [1 + 0j]


def test_grad_transforms_take_complex_inputs():
    a = crandn(np.random.default_rng(6), (4,), np.complex128)

    def f(z):
        return (z * z.conj()).real.sum()  # |z|^2: gradient 2z in torch's convention

    np.testing.assert_allclose(ug.grad(f)(ug.tensor(a)).numpy(), 2 * a, rtol=1e-14)
    np.testing.assert_allclose(ug.jit(f)(ug.tensor(a)).item(), np.sum(np.abs(a) ** 2), rtol=1e-14)
    batched = ug.vmap(lambda z: (z * 1j).exp().sum())(ug.tensor(np.stack([a, 2 * a])))
    np.testing.assert_allclose(batched.numpy(), [np.exp(a * 1j).sum(), np.exp(2j * a).sum()], rtol=1e-14)


def test_print_scalar_values():
    assert repr(ug.tensor(1 + 2j).item()) == "(1+2j)"
    assert cmath.isclose(ug.tensor([3 + 4j]).abs().item(), 5.0)
    assert math.isclose(ug.angle(ug.tensor(1j)).item(), math.pi / 2, rel_tol=1e-7)


def test_random_complex_draws_as_torch_defines_them():
    ug.manual_seed(0)
    n = 200_000
    z = ug.randn(n, dtype=ug.complex64).numpy()
    assert z.dtype == np.complex64
    # torch's complex normal: each part N(0, 1/2), so E|z|^2 = 1; six standard errors
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 6 / math.sqrt(n)
    assert abs(np.var(z.real) - 0.5) < 6 * math.sqrt(0.5 / n) and abs(np.mean(z.imag)) < 6 * math.sqrt(0.5 / n)
    u = ug.rand(n, dtype=ug.complex128).numpy()
    assert u.dtype == np.complex128 and u.real.min() >= 0 and u.imag.max() < 1
    assert abs(u.imag.mean() - 0.5) < 6 * math.sqrt(1 / 12 / n)


LAYOUT_OPS = {
    "cat": lambda m, z: m.cat([z, z * 2], 1),
    "stack": lambda m, z: m.stack([z, z.conj()], 0),
    "index": lambda m, z: z[1, ::2],
    "advanced_index": lambda m, z: z[m.tensor([2, 0, 2])],
    "mask": lambda m, z: z[z.real > 0],
    "flip_permute": lambda m, z: m.flip(z, [0]).permute(1, 0).contiguous(),
    "reshape_repeat": lambda m, z: z.reshape(4, 3).repeat(2, 1),
    "where": lambda m, z: m.where(z.real > 0, z, m.zeros_like(z)),
    "einsum": lambda m, z: m.einsum("ij,kj->ik", z, z),
    "gather": lambda m, z: m.gather(z, 1, m.tensor([[0, 3], [1, 1], [2, 0]])),
    "roll_diag": lambda m, z: m.roll(z, 1, 1).diagonal(),
    "clone_expand": lambda m, z: z[:1].expand(3, 4).clone(),
}


@pytest.mark.parametrize("name", LAYOUT_OPS)
def test_layout_and_indexing_ops_move_complex_values_as_torch(name):
    a = crandn(np.random.default_rng(7), (3, 4), np.complex128)
    f = LAYOUT_OPS[name]
    close(f(ug, ug.tensor(a)), f(torch, torch.tensor(a)), 2.0**-52, k=16)


def test_allclose_and_save_load(tmp_path):
    a = crandn(np.random.default_rng(8), (2, 3), np.complex64)
    z = ug.tensor(a)
    assert ug.allclose(z, z + 1e-9) and not ug.allclose(z, z + 1e-3j)
    with pytest.raises(TypeError, match=r"no complex dtype \(complex64\); save ug.view_as_real"):
        ug.save({"z": z}, tmp_path / "z.pt")
    ug.save({"z": ug.view_as_real(z)}, tmp_path / "z.pt")
    back = ug.view_as_complex(ug.load(tmp_path / "z.pt")["z"])
    assert back.dtype == ug.complex64
    np.testing.assert_array_equal(back.numpy(), a)
