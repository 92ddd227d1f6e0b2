"""ug.fft, ug.stft and ug.istft against torch.fft, torch.stft and torch.istft (torch 2.13):
every function and norm, odd, even and prime lengths, n and s padding and trimming, several
dims (negative, unsorted, non-contiguous inputs), float32/float64/complex64/complex128 and
integer inputs; gradients against torch.autograd and central differences; vmap against a
loop, jit against eager, jvp against torch.func.jvp; and the errors.

Tolerance: an output of an N-point FFT sums N terms, each a product with a twiddle factor; an
FFT's error per output is at most about log2(N) roundings of that sum's size, so FFTW and
torch's (MKL in its CPU build) agree within K·log2(N)·eps·Σ|x| (Σ over the signal, times the norm's
scale; a Hermitian input stands for about twice its half)."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug

# torch's advice to pass a window, and its deprecation of return_complex=False, which is tested
pytestmark = [pytest.mark.filterwarnings("ignore:A window was not provided"),
              pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated"),
              pytest.mark.filterwarnings("ignore:The length of signal is shorter than the length parameter")]

EPS = {"float32": 2.0**-23, "complex64": 2.0**-23, "float64": 2.0**-52, "complex128": 2.0**-52}
K = 4
LENGTHS = [1, 2, 7, 8, 13, 97, 128]
NORMS = [None, "backward", "ortho", "forward"]
DTYPES = ["float32", "float64", "complex64", "complex128"]
# torch.fft's functions: whether the transform is forward (its default norm leaves it
# unscaled) and what it takes: a real input, a Hermitian half (c2r) or either.
FORWARD = {"fft": True, "ifft": False, "rfft": True, "irfft": False, "hfft": True, "ihfft": False}
REAL_ONLY = {"rfft", "ihfft"}
HALF_INPUT = {"irfft", "hfft"}


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def tnp(t):
    return t.detach().resolve_conj().numpy()


def both(a):
    return ug.tensor(a), torch.tensor(a)


def scale(norm, forward, n):
    mode = norm or "backward"
    if mode == "ortho":
        return 1 / math.sqrt(n)
    return 1.0 if (mode == "backward") == forward else 1.0 / n


def check(got, want, x, sizes, norm, forward, dims=None):
    """got (ug) within the bound of want (torch) for input x, signal sizes `sizes` over dims."""
    got, want = got.numpy(), tnp(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    n = math.prod(sizes)
    dims = tuple(range(x.ndim)) if dims is None else dims
    total = 2 * np.abs(x.astype(np.complex128)).sum(axis=dims).max() if x.size else 0.0
    eps = EPS[str(x.dtype)] if str(x.dtype) in EPS else EPS["float32"]
    bound = K * math.log2(max(n, 2)) * eps * total * scale(norm, forward, n) + np.finfo(got.dtype).tiny
    err = np.abs(got.astype(np.complex128) - want.astype(np.complex128)).max() if got.size else 0.0
    assert err <= bound, (err, bound)


# ---- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FORWARD))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("norm", NORMS)
def test_1d_as_torch(name, dtype, length, norm):
    if name in REAL_ONLY and dtype.startswith("complex"):
        pytest.skip("a real transform: complex inputs are refused (test_errors)")
    half = name in HALF_INPUT
    x = rand((3, length // 2 + 1 if half else length), dtype, seed=length)
    u, t = both(x)
    kw = {"n": length} if half else {}
    got = getattr(ug.fft, name)(u, norm=norm, **kw)
    want = getattr(torch.fft, name)(t, norm=norm, **kw)
    check(got, want, x, [length], norm, FORWARD[name], dims=(-1,))


@pytest.mark.parametrize("name", list(FORWARD))
@pytest.mark.parametrize("n", [1, 3, 6, 11, 16])
@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_1d_n_pads_or_trims_along_dim(name, n, dim):
    dtype = "float64" if name in REAL_ONLY else "complex128"
    x = rand((5, 6, 4), dtype, seed=n)
    u, t = both(x)
    got = getattr(ug.fft, name)(u, n=n, dim=dim, norm="ortho")
    want = getattr(torch.fft, name)(t, n=n, dim=dim, norm="ortho")
    check(got, want, x, [n], "ortho", FORWARD[name], dims=(dim,))


ND = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
ND_CASES = [  # (s, dim)
    (None, None), ((3, 7), None), (None, (0, 2)), ((4, -1), (-1, 0)), ((2, 3, 9), (1, 2, 0)), ((5,), (-2,)),
    ((6, 6), (2, 1)),
]


@pytest.mark.parametrize("name", ND)
@pytest.mark.parametrize("s,dim", ND_CASES)
@pytest.mark.parametrize("norm", NORMS)
def test_nd_as_torch(name, s, dim, norm):
    base = name[:-1]
    dtype = "float64" if base in REAL_ONLY else "complex128"
    x = rand((4, 5, 6), dtype, seed=3)
    u, t = both(x)
    got = getattr(ug.fft, name)(u, s=s, dim=dim, norm=norm)
    want = getattr(torch.fft, name)(t, s=s, dim=dim, norm=norm)
    sizes = list(got.shape) if dim is None and s is None else [got.shape[d] for d in (dim or range(-len(s), 0))]
    if base in HALF_INPUT:
        sizes = [want.shape[d] for d in (dim if dim is not None else range(-(len(s) if s else 3), 0))]
    check(got, want, x, sizes, norm, FORWARD[base])


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
@pytest.mark.parametrize("s,dim", [(None, (-2, -1)), ((4, 9), (-2, -1)), ((3, 3), (0, 2)), (None, (2, 0))])
def test_2d_as_torch(name, s, dim):
    base = name[:-1]
    dtype = "float32" if base in REAL_ONLY else "complex64"
    x = rand((3, 5, 8), dtype, seed=4)
    u, t = both(x)
    got = getattr(ug.fft, name)(u, s=s, dim=dim)
    want = getattr(torch.fft, name)(t, s=s, dim=dim)
    check(got, want, x, [max(got.shape[d], want.shape[d]) for d in dim], None, FORWARD[base])


def test_defaults_are_torchs():
    x = rand((4, 6, 5), "complex128")
    u, t = both(x)
    for name in ["fft2", "ifft2", "hfft2", "irfft2", "fftn", "ifftn", "hfftn", "irfftn"]:
        check(getattr(ug.fft, name)(u), getattr(torch.fft, name)(t), x, [120], None, FORWARD[name.rstrip("2n")])
    r = rand((4, 6, 5), "float64")
    u, t = both(r)
    for name in ["rfft2", "ihfft2", "rfftn", "ihfftn", "fft", "ifft", "fftn", "ifftn"]:
        check(getattr(ug.fft, name)(u), getattr(torch.fft, name)(t), r, [120], None, FORWARD[name.rstrip("2n")])


@pytest.mark.parametrize("view", ["transpose", "step", "expand", "offset"])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn", "rfft2", "irfftn", "ihfftn"])
def test_non_contiguous_inputs(view, name):
    dtype = "float64" if name.rstrip("2n") in REAL_ONLY else "complex128"
    x = rand((6, 10), dtype, seed=7)
    make = {"transpose": lambda a: a.t(), "step": lambda a: a[:, ::2], "expand": lambda a: a[:1].expand(4, 10),
            "offset": lambda a: a[1:, 3:]}[view]
    u, t = make(ug.tensor(x)), make(torch.tensor(x))
    assert not u.is_contiguous()
    got, want = getattr(ug.fft, name)(u), getattr(torch.fft, name)(t)
    check(got, want, tnp(t).copy(), [60], None, FORWARD[name.rstrip("2n")])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft", "fftn", "rfft2"])
def test_integer_inputs_become_float(dtype, name):
    a = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    got, want = getattr(ug.fft, name)(ug.tensor(a)), getattr(torch.fft, name)(torch.tensor(a))
    check(got, want, a.astype(np.float32), [24], None, FORWARD[name.rstrip("2n")])


def test_empty_batch_and_size_one_signals():
    # torch 2.13's MKL refuses an empty batch; NumPy's shapes are the reference there.
    for name in ["fft", "rfft", "irfft", "fftn"]:
        x = np.zeros((0, 8), np.complex64 if name == "irfft" else np.float32)
        assert getattr(ug.fft, name)(ug.tensor(x), dim=-1).shape == getattr(np.fft, name)(x).shape if name != "fftn" \
            else ug.fft.fftn(ug.tensor(x), dim=(1,)).shape == (0, 8)
    for shape in [(3, 1), (1, 1)]:
        x = rand(shape, "complex64")
        u, t = both(x)
        for name in ["fft", "ifft"]:
            check(getattr(ug.fft, name)(u), getattr(torch.fft, name)(t), x, [1], None, name == "fft", dims=(-1,))


def test_round_trips():
    x = rand((3, 13), "float64")
    u = ug.tensor(x)
    np.testing.assert_allclose(ug.fft.irfft(ug.fft.rfft(u), n=13).numpy(), x, atol=1e-13)
    np.testing.assert_allclose(ug.fft.ifft(ug.fft.fft(u)).numpy().real, x, atol=1e-13)
    np.testing.assert_allclose(ug.fft.hfft(ug.fft.ihfft(u), n=13).numpy(), x, atol=1e-13)
    y = rand((4, 6, 7), "float32")
    np.testing.assert_allclose(ug.fft.irfftn(ug.fft.rfftn(ug.tensor(y)), s=(4, 6, 7)).numpy(), y, atol=1e-5)


# ---- helpers: fftfreq, rfftfreq, fftshift -----------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_as_torch(n, d):
    for name in ["fftfreq", "rfftfreq"]:
        for dtype in [None, "float64"]:
            kw = {"dtype": getattr(ug, dtype)} if dtype else {}
            tkw = {"dtype": getattr(torch, dtype)} if dtype else {}
            got, want = getattr(ug.fft, name)(n, d, **kw), getattr(torch.fft, name)(n, d, **tkw)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
            assert got.numpy().dtype == want.numpy().dtype


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1), [1]])
def test_fftshift_as_torch(dim):
    x = np.arange(35).reshape(5, 7)
    for name in ["fftshift", "ifftshift"]:
        got = getattr(ug.fft, name)(ug.tensor(x), dim=dim)
        want = getattr(torch.fft, name)(torch.tensor(x), dim=dim)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(ug.fft.ifftshift(ug.fft.fftshift(ug.tensor(x))).numpy(), x)


# ---- gradients --------------------------------------------------------------------------------

def loss(m, y, w):
    """A real loss through a complex or real result: |y|, its parts, weighted."""
    if y.is_complex():
        re, im = m.real(y), m.imag(y)
        return (re * w[0]).sum() + (im * w[1]).sum() + (re * re + im * im).sqrt().sum()
    return (y * w[0]).sum() + (y * y).sum() * 0.5


GRAD_CASES = [  # (function, kwargs, input shape, input dtype)
    ("fft", {}, (3, 7), "complex128"), ("fft", {"n": 10}, (3, 7), "float64"), ("ifft", {"n": 4}, (2, 8), "complex128"),
    ("rfft", {}, (3, 8), "float64"), ("rfft", {"n": 5, "dim": 0}, (7, 3), "float64"), ("ihfft", {}, (2, 9), "float64"),
    ("irfft", {}, (3, 5), "complex128"), ("irfft", {"n": 9}, (3, 5), "complex128"), ("irfft", {"n": 3}, (2, 6), "complex128"),
    ("hfft", {}, (2, 4), "complex128"), ("hfft", {"n": 7}, (2, 4), "complex128"), ("irfft", {"n": 6}, (2, 4), "float64"),
    ("fft2", {}, (3, 4, 5), "complex128"), ("rfft2", {"s": (4, 6)}, (3, 5), "float64"),
    ("irfft2", {"s": (3, 7)}, (3, 5), "complex128"), ("hfft2", {}, (3, 4), "complex128"),
    ("ihfft2", {}, (3, 5), "float64"), ("fftn", {"dim": (0, 2)}, (3, 4, 5), "float64"),
    ("ifftn", {"s": (2, 6), "dim": (2, 0)}, (3, 4, 5), "complex128"), ("irfftn", {}, (2, 3, 4), "complex128"),
    ("hfftn", {"dim": (0, 1)}, (3, 4), "complex128"), ("rfftn", {}, (3, 4, 5), "float64"),
]


def grads(m, name, kw, x, norm, w_seed):
    leaf = m.tensor(x, requires_grad=True)
    y = getattr(m.fft, name)(leaf, norm=norm, **kw)
    w = [m.tensor(rand(tuple(y.shape), "float64", seed=w_seed + i)) for i in range(2)]
    loss(m, y, w).backward()
    return leaf.grad


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,kw,shape,dtype", GRAD_CASES)
def test_gradients_as_torch_autograd(name, kw, shape, dtype, norm):
    x = rand(shape, dtype, seed=11)
    got, want = grads(ug, name, kw, x, norm, 5), grads(torch, name, kw, x, norm, 5)
    np.testing.assert_allclose(got.numpy(), tnp(want), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name,kw,shape,dtype", GRAD_CASES[::2])
def test_gradients_against_central_differences(name, kw, shape, dtype):
    x = rand(shape, dtype, seed=12)
    got = grads(ug, name, kw, x, "ortho", 6).numpy()
    w = None

    def f(a):
        nonlocal w
        y = getattr(ug.fft, name)(ug.tensor(a), norm="ortho", **kw)
        w = w or [ug.tensor(rand(tuple(y.shape), "float64", seed=6 + i)) for i in range(2)]
        return loss(ug, y, w).item()

    h = 1e-6
    parts = [1.0, 1j] if dtype.startswith("complex") else [1.0]
    want = np.zeros(shape, dtype=dtype)
    for idx in np.ndindex(*shape):
        for p in parts:
            e = np.zeros(shape, dtype=dtype)
            e[idx] = p * h
            want[idx] += p * (f(x + e) - f(x - e)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_irfft_gradient_of_a_complex_input_counts_the_mirrored_half():
    # irfft reads the imaginary parts of bins 0 and n/2 not at all, and every other bin twice.
    z = rand((8 // 2 + 1,), "complex128", seed=2)
    u = ug.tensor(z, requires_grad=True)
    t = torch.tensor(z, requires_grad=True)
    ug.fft.irfft(u, n=8).sum().backward()
    torch.fft.irfft(t, n=8).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), atol=1e-15)
    g = ug.tensor(rand((8,), "float64", seed=3))
    u.grad = None
    (ug.fft.irfft(u, n=8) * g).sum().backward()
    assert u.grad.numpy()[0].imag == 0 and u.grad.numpy()[4].imag == 0


def test_jvp_as_torch_func():
    x = rand((3, 8), "float64", seed=1)
    v = rand((3, 8), "float64", seed=2)
    ours = ug.jvp(lambda a: ug.view_as_real(ug.fft.rfft(a, norm="ortho")), (ug.tensor(x),), (ug.tensor(v),))
    theirs = torch.func.jvp(lambda a: torch.view_as_real(torch.fft.rfft(a, norm="ortho")), (torch.tensor(x),),
                            (torch.tensor(v),))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-13)
    z = rand((3, 5), "complex128", seed=3)
    dz = rand((3, 5), "complex128", seed=4)
    ours = ug.jvp(lambda a: ug.fft.irfft(a, n=9), (ug.tensor(z),), (ug.tensor(dz),))
    theirs = torch.func.jvp(lambda a: torch.fft.irfft(a, n=9), (torch.tensor(z),), (torch.tensor(dz),))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-13)


# ---- transforms: vmap, jit --------------------------------------------------------------------

VMAP_CASES = [
    ("fft", {"n": 6}, "complex128"), ("rfft", {"dim": 0}, "float64"), ("irfft", {"n": 7}, "complex128"),
    ("hfft", {}, "complex128"), ("ihfft", {"n": 5}, "float64"), ("fft2", {}, "float64"),
    ("irfftn", {"s": (3, 4)}, "complex128"), ("ifftn", {"dim": (-1, 0)}, "complex64"), ("fftshift", {}, "float64"),
]


@pytest.mark.parametrize("in_dim", [0, 1])
@pytest.mark.parametrize("name,kw,dtype", VMAP_CASES)
def test_vmap_equals_a_loop(name, kw, dtype, in_dim):
    x = rand((4, 3, 5, 6), dtype, seed=8)
    f = lambda a: getattr(ug.fft, name)(a, **kw)  # noqa: E731
    got = ug.vmap(f, in_axes=in_dim)(ug.tensor(x)).numpy()
    want = np.stack([f(ug.tensor(np.take(x, i, axis=in_dim).copy())).numpy() for i in range(x.shape[in_dim])])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 if dtype == "complex64" else 1e-12)


def test_vmap_of_grad_equals_a_loop():
    x = rand((4, 9), "float64", seed=9)
    f = lambda a: ug.fft.irfft(ug.fft.rfft(a) * ug.fft.rfft(a), n=9).pow(2).sum()  # noqa: E731
    got = ug.vmap(ug.grad(f))(ug.tensor(x)).numpy()
    want = np.stack([ug.grad(f)(ug.tensor(row)).numpy() for row in x])
    np.testing.assert_allclose(got, want, atol=1e-12)


JIT_CASES = [
    lambda a: ug.view_as_real(ug.fft.rfft(a, norm="ortho")),
    lambda a: ug.fft.irfft(ug.fft.rfft(a, n=12), n=11) * 2.0,
    lambda a: ug.view_as_real(ug.fft.fftn(a, s=(3, 9))),
    lambda a: ug.fft.hfft(ug.view_as_complex(ug.stack([a, a.flip(-1)], -1)), n=9),
    lambda a: ug.fft.fftshift(ug.fft.irfft2(ug.fft.rfft2(a)), dim=-1),
]


@pytest.mark.parametrize("case", range(len(JIT_CASES)))
def test_jit_equals_eager(case):
    f = JIT_CASES[case]
    x = ug.tensor(rand((4, 8), "float32", seed=case))
    np.testing.assert_array_equal(ug.jit(f)(x).numpy(), f(x).numpy())
    g = ug.jit(ug.grad(lambda a: f(a).pow(2).sum()))
    np.testing.assert_allclose(g(x).numpy(), ug.grad(lambda a: f(a).pow(2).sum())(x).numpy(), rtol=1e-6, atol=1e-5)


def test_jit_takes_and_returns_complex_tensors():
    z = ug.tensor(rand((4, 8), "complex64", seed=3))
    for f in [ug.fft.fft, ug.fft.ifft2, lambda t: ug.fft.irfft(t, n=14), lambda t: ug.fft.fftshift(ug.fft.fftn(t))]:
        np.testing.assert_array_equal(ug.jit(f)(z).numpy(), f(z).numpy())


# ---- errors -----------------------------------------------------------------------------------

def test_errors_name_the_function_and_what_was_wrong():
    x, z = ug.tensor(rand((4, 6), "float32")), ug.tensor(rand((4, 6), "complex64"))
    cases = [
        (lambda: ug.fft.fft(x, n=0), ValueError, r"\[fft.fft\] invalid number of data points \(0\)"),
        (lambda: ug.fft.rfft(x, n=-1), ValueError, r"\[fft.rfft\] invalid number of data points \(-1\)"),
        (lambda: ug.fft.irfft(z[:, :1]), ValueError, r"\[fft.irfft\] invalid number of data points \(0\)"),
        (lambda: ug.fft.fft(x, dim=2), IndexError, r"fft.fft"),
        (lambda: ug.fft.fftn(x, dim=(0, -2)), ValueError, r"\[fft.fftn\] FFT dims must be unique"),
        (lambda: ug.fft.rfft2(x, dim=(1, 1)), ValueError, r"\[fft.rfft2\] FFT dims must be unique"),
        (lambda: ug.fft.irfft(z, n=2.5), TypeError, r"\[fft.irfft\] n must be an int or None, got <class 'float'>"),
        (lambda: ug.fft.rfft(z), TypeError, r"\[fft.rfft\] expects a real input tensor, but got complex64"),
        (lambda: ug.fft.ihfftn(z), TypeError, r"\[fft.ihfftn\] expects a real input tensor"),
        (lambda: ug.fft.fft(x, norm="bad"), ValueError, r"\[fft.fft\] invalid normalization mode \"bad\""),
        (lambda: ug.fft.fftn(x, s=(2, 2), dim=(0,)), ValueError, r"\[fft.fftn\] s and dim must have the same length"),
        (lambda: ug.fft.fftn(x, s=(2, 2, 2)), ValueError, r"\[fft.fftn\] s has 3 values but the input has only 2"),
        (lambda: ug.fft.fft(x.to(ug.float16)), TypeError, r"\[fft.fft\] unsupported dtype float16"),
        (lambda: ug.fft.fftn(ug.tensor(1.0)), ValueError, r"\[fft.fftn\] must transform at least one dim"),
    ]
    for fn, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            fn()


# ---- stft, istft ------------------------------------------------------------------------------

STFT_CASES = [  # (n_fft, kwargs)
    (16, {}), (16, {"hop_length": 5, "center": False}), (15, {"win_length": 10, "pad_mode": "constant"}),
    (16, {"window": "hann", "normalized": True}), (16, {"window": "hann", "onesided": False}),
    (8, {"window": "hann", "win_length": 6, "hop_length": 3, "pad_mode": "replicate"}),
    (16, {"window": "hann", "return_complex": False}), (9, {"pad_mode": "circular", "hop_length": 4}),
]


def stft_kw(m, n_fft, kw, dtype="float64"):
    kw = dict(kw)
    if kw.get("window") == "hann":
        w = torch.hann_window(kw.get("win_length", n_fft), dtype=getattr(torch, dtype)).numpy()
        kw["window"] = m.tensor(w)
    kw.setdefault("return_complex", True)
    return kw


@pytest.mark.parametrize("shape", [(100,), (2, 77)])
@pytest.mark.parametrize("n_fft,kw", STFT_CASES)
def test_stft_as_torch(shape, n_fft, kw):
    x = rand(shape, "float64", seed=1)
    got = ug.stft(ug.tensor(x), n_fft, **stft_kw(ug, n_fft, kw))
    want = torch.stft(torch.tensor(x), n_fft, **stft_kw(torch, n_fft, kw))
    check(got, want, x, [n_fft], None, True, dims=(-1,))


def test_stft_of_complex_and_float32_inputs():
    z = rand((2, 50), "complex64", seed=2)
    got = ug.stft(ug.tensor(z), 8, hop_length=3, return_complex=True)
    want = torch.stft(torch.tensor(z), 8, hop_length=3, return_complex=True)
    check(got, want, z, [8], None, True, dims=(-1,))
    x = rand((60,), "float32", seed=3)
    got = ug.stft(ug.tensor(x), 12, window=ug.tensor(np.hanning(12).astype(np.float32)), return_complex=True)
    want = torch.stft(torch.tensor(x), 12, window=torch.tensor(np.hanning(12).astype(np.float32)), return_complex=True)
    check(got, want, x, [12], None, True, dims=(-1,))


ISTFT_CASES = [  # (n_fft, hop, win_length, center, length, onesided); a Hann window, but uncentred: ones,
    # as a Hann window's zero first sample leaves the signal's first sample without an envelope
    (16, 4, None, True, None, None), (16, 4, None, True, 90, None), (16, 5, 12, True, 100, None),
    (15, 4, None, False, None, None), (16, 4, None, True, 120, None), (16, 4, None, True, None, False),
]


@pytest.mark.parametrize("n_fft,hop,win,center,length,onesided", ISTFT_CASES)
def test_istft_as_torch_and_round_trip(n_fft, hop, win, center, length, onesided):
    x = rand((2, 100), "float64", seed=4)
    w = torch.hann_window(win or n_fft, dtype=torch.float64) if center else torch.ones(win or n_fft, dtype=torch.float64)
    kw = dict(hop_length=hop, win_length=win, center=center, onesided=onesided)
    spec = torch.stft(torch.tensor(x), n_fft, window=w, return_complex=True, **kw)
    got = ug.istft(ug.tensor(spec.numpy()), n_fft, window=ug.tensor(w.numpy()), length=length, **kw)
    want = torch.istft(spec, n_fft, window=w, length=length, **kw)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    if center and length in (None, 100):
        ours = ug.stft(ug.tensor(x), n_fft, window=ug.tensor(w.numpy()), return_complex=True, **kw)
        back = ug.istft(ours, n_fft, window=ug.tensor(w.numpy()), length=100, **kw)
        np.testing.assert_allclose(back.numpy(), x, atol=1e-12)


def test_istft_return_complex_as_torch():
    z = rand((70,), "complex128", seed=5)
    spec = torch.stft(torch.tensor(z), 16, return_complex=True)
    got = ug.istft(ug.tensor(spec.numpy()), 16, return_complex=True, length=70)
    want = torch.istft(spec, 16, return_complex=True, length=70)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    np.testing.assert_allclose(got.numpy(), z, atol=1e-12)


def test_stft_and_istft_gradients_as_torch():
    x = rand((2, 64), "float64", seed=6)
    w = np.hanning(16)

    def run(m):
        leaf = m.tensor(x, requires_grad=True)
        win = m.tensor(w)
        spec = m.stft(leaf, 16, hop_length=4, window=win, return_complex=True)
        y = m.istft(spec * 0.5, 16, hop_length=4, window=win, length=60)
        (m.real(spec).pow(2).sum() + m.imag(spec).sum() + (y * y).sum()).backward()
        return leaf.grad.numpy()

    np.testing.assert_allclose(run(ug), run(torch), atol=1e-10)


def test_stft_and_istft_errors():
    x = ug.tensor(rand((40,), "float32"))
    spec = ug.stft(x, 16, return_complex=True)
    cases = [
        (lambda: ug.stft(x, 64, center=False), ValueError, r"\[stft\] expected 0 < n_fft <= 40"),
        (lambda: ug.stft(x, 0), ValueError, r"\[stft\] expected n_fft > 0, but got n_fft=0"),
        (lambda: ug.stft(x, 16, hop_length=0), ValueError, r"\[stft\] expected hop_length > 0"),
        (lambda: ug.stft(x, 16, win_length=20), ValueError, r"\[stft\] expected 0 < win_length <= n_fft"),
        (lambda: ug.stft(x, 16, window=ug.ones(8)), ValueError, r"\[stft\] expected a 1D window tensor of size"),
        (lambda: ug.stft(x.reshape(2, 2, 10), 4), ValueError, r"\[stft\] expected a 1D or 2D input"),
        (lambda: ug.istft(ug.view_as_real(spec), 16), TypeError, r"\[istft\] requires a complex input"),
        (lambda: ug.istft(spec, 20), ValueError, r"\[istft\] expected the frequency dim's size"),
        # a Hann window hop n_fft apart overlaps nowhere: its envelope vanishes at the frame edges
        (lambda: ug.istft(spec, 16, hop_length=16, window=ug.tensor(np.hanning(16))), ValueError,
         r"\[istft\] window overlap add min"),
        (lambda: ug.istft(spec, 16, return_complex=True), ValueError, r"\[istft\] return_complex=True needs a two-sided"),
    ]
    for fn, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            fn()


def test_stft_and_istft_under_vmap_and_jit():
    x = ug.tensor(rand((3, 2, 80), "float64", seed=7))
    w = ug.hann_window(16, dtype=ug.float64)
    spec = lambda a: ug.view_as_real(ug.stft(a, 16, hop_length=4, window=w, return_complex=True))  # noqa: E731
    np.testing.assert_array_equal(ug.vmap(spec)(x).numpy(), np.stack([spec(x[i]).numpy() for i in range(3)]))
    np.testing.assert_array_equal(ug.jit(spec)(x[0]).numpy(), spec(x[0]).numpy())
    back = lambda a: ug.istft(ug.view_as_complex(spec(a)), 16, hop_length=4, window=w, length=80)  # noqa: E731
    np.testing.assert_allclose(ug.vmap(back)(x).numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_array_equal(ug.jit(back)(x[0]).numpy(), back(x[0]).numpy())
