"""ug.nn.functional against torch.nn.functional: values and gradients of every function and
option, numerical stability, float64 gradchecks, and errors for bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad as ug
import unigrad.nn.functional as UF
from reference import Arg, arr, check, check_grad

FLOATS = ("float32", "float64")


def F(m):
    return TF if m is torch else UF


def norm_terms(dims, eps):
    """What the sums of a normalization over `dims` add up to, per output: y = w (x - μ) / σ + b
    errs by |w| (|δμ| + |x - μ| δσ / σ) / σ, with |δμ| <= n·eps·mean|x| and, from δvar <=
    n·eps·mean(x²), δσ <= n·eps·mean(x²) / (2σ). Returns terms(m, x, w=None, b=None)."""
    def terms(m, x, w=None, b=None):
        var = x.var(dims, unbiased=False, keepdim=True) + eps
        t = (x.abs().mean(dims, keepdim=True) + (x - x.mean(dims, keepdim=True)).abs() *
             (x * x).mean(dims, keepdim=True) / (2 * var)) / var.sqrt()
        return t if w is None else t * w.abs()
    return terms


def raises_like_torch(fn, *args):
    """torch rejects the input; unigrad must raise the same class (check does the comparing)."""
    check(fn, *args)


# ---- linear -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
def test_linear(shape, dtype):
    check_grad(lambda m, x, w, b: F(m).linear(x, w, b), arr(shape, dtype), arr((3, 4), dtype, seed=1),
               arr((3,), dtype, seed=2))
    check_grad(lambda m, x, w: F(m).linear(x, w), arr(shape, dtype), arr((3, 4), dtype, seed=1))


def test_linear_layouts_and_errors():
    # transposed input and weight are read in place
    check_grad(lambda m, x, w, b: F(m).linear(x.t(), w.t(), b), arr((4, 6)), arr((4, 3), seed=1), arr((3,), seed=2))
    check_grad(lambda m, x, w: F(m).linear(x, w), arr((2, 4)), arr((4,), seed=1))  # 1-D weight
    raises_like_torch(lambda m, x, w: F(m).linear(x, w), arr((2, 5)), arr((3, 4)))
    raises_like_torch(lambda m, x, w, b: F(m).linear(x, w, b), arr((2, 4)), arr((3, 4)), arr((2,)))


def test_linear_double_backward():
    rng = np.random.default_rng(0)
    x, w, b = (ug.tensor(rng.normal(size=s), requires_grad=True) for s in [(3, 4), (2, 4), (2,)])
    assert ug.autograd.gradgradcheck(lambda x, w, b: UF.linear(x, w, b).tanh(), (x, w, b))


# ---- activations ----------------------------------------------------------------------------------

ACTIVATIONS = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 2.0}), ("gelu", {}), ("gelu", {"approximate": "tanh"}),
    ("silu", {}), ("mish", {}), ("sigmoid", {}), ("tanh", {}), ("logsigmoid", {}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("softsign", {}), ("hardtanh", {}),
    ("hardtanh", {"min_val": -2.0, "max_val": 0.5}), ("hardsigmoid", {}), ("hardswish", {}),
    ("threshold", {"threshold": 0.5, "value": -2.0}), ("hardshrink", {}), ("hardshrink", {"lambd": 1.5}),
    ("softshrink", {}), ("softshrink", {"lambd": 1.5}), ("tanhshrink", {}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,kw", ACTIVATIONS)
def test_activation(name, kw, dtype):
    # torch's hardsigmoid backward multiplies by the float32 constant 1/6 even in float64
    rtol = 1e-7 if name == "hardsigmoid" and dtype == "float64" else None
    check_grad(lambda m, x: getattr(F(m), name)(x, **kw), arr((4, 6), dtype, low=-5, high=5), rtol=rtol)


@pytest.mark.parametrize("name", ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh",
                                  "hardsigmoid", "hardswish", "threshold"])
def test_activation_inplace(name):
    kw = {"threshold": 0.5, "value": -2.0} if name == "threshold" else {}

    def fn(m, x):
        y = x.clone()
        out = getattr(F(m), name)(y, inplace=True, **kw)
        return [y, out]
    check(fn, arr((3, 5), low=-5, high=5))


def test_activations_at_kinks_and_extremes():
    x = Arg(np.array([-1e4, -30.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 30.0, 1e4], dtype=np.float32))
    for name in ["relu", "relu6", "hardtanh", "leaky_relu", "elu", "softplus", "logsigmoid", "hardswish",
                 "hardsigmoid", "silu", "mish", "hardshrink", "softshrink", "tanhshrink"]:
        check_grad(lambda m, x: getattr(F(m), name)(x), x,
                   off={"fd": "inputs on the kinks: a central difference averages the one-sided slopes"})


def test_prelu():
    check_grad(lambda m, x, w: F(m).prelu(x, w), arr((3, 4, 5), low=-5, high=5), arr((4,), seed=1))
    check_grad(lambda m, x, w: F(m).prelu(x, w), arr((3, 4), low=-5, high=5), arr((1,), seed=1))
    check_grad(lambda m, x, w: F(m).prelu(x, w), arr((6,), low=-5, high=5), arr((), seed=1))
    for x_shape, w_shape in [((3, 4), (3,)), ((4,), (4,)), ((3, 4), (4, 1))]:
        raises_like_torch(lambda m, x, w: F(m).prelu(x, w), arr(x_shape), arr(w_shape))


def test_softshrink_rejects_a_negative_lambd():
    raises_like_torch(lambda m, x: F(m).softshrink(x, -1.0), arr((3,)))


def test_glu_softmax_family():
    check_grad(lambda m, x: F(m).glu(x), arr((3, 8)))
    check_grad(lambda m, x: F(m).glu(x, dim=0), arr((4, 3)))
    raises_like_torch(lambda m, x: F(m).glu(x), arr((3, 5)))
    for name in ["softmax", "log_softmax", "softmin"]:
        check_grad(lambda m, x: getattr(F(m), name)(x, dim=1), arr((3, 5, 2)))
        check_grad(lambda m, x: getattr(F(m), name)(x, -1, dtype=m.float64), arr((3, 5)))
        check(lambda m, x: getattr(F(m), name)(x * 1e4, dim=-1), arr((3, 5)))


def test_normalize_and_distances():
    for p in [2.0, 1.0, 3.0, float("inf")]:
        check_grad(lambda m, x: F(m).normalize(x, p=p), arr((3, 4)))
    check_grad(lambda m, x: F(m).normalize(x, dim=0, eps=0.5), arr((3, 4)))
    zero_row = Arg(np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]], dtype=np.float32))
    check_grad(lambda m, x: F(m).normalize(x), zero_row,
               off={"fd": "a zero row is divided by eps = 1e-12: the step leaves that region"})
    check_grad(lambda m, a, b: F(m).cosine_similarity(a, b), arr((4, 5)), arr((4, 5), seed=1))
    check_grad(lambda m, a, b: F(m).cosine_similarity(a, b, dim=-1), arr((2, 3, 5), "float64"),
               arr((3, 5), "float64", seed=1))
    check_grad(lambda m, a, b: F(m).cosine_similarity(a, b, dim=0, eps=1e-3), arr((4, 2)), arr((4, 2), seed=1))
    check_grad(lambda m, a, b: F(m).pairwise_distance(a, b), arr((4, 5)), arr((4, 5), seed=1))
    check_grad(lambda m, a, b: F(m).pairwise_distance(a, b, p=1.0, keepdim=True), arr((4, 5)), arr((4, 5), seed=1))


# ---- losses -----------------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


def targets(shape, classes, seed=3, ignore=None):
    t = np.random.default_rng(seed).integers(0, classes, size=shape)
    if ignore is not None:
        t.flat[::3] = ignore
    return Arg(t.astype(np.int64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("opts", [{}, {"weight": True}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                                  {"weight": True, "ignore_index": 2, "label_smoothing": 0.1}])
def test_cross_entropy_indices(opts, reduction):
    kw = dict(opts, reduction=reduction)
    w = arr((5,), low=0.2, high=2.0, seed=9) if kw.pop("weight", False) else None

    def fn(m, x, t, *w):  # torch does not differentiate the class weights
        return F(m).cross_entropy(x, t, *[v.detach() for v in w], **kw)
    extra = (w,) if w is not None else ()
    ignore = opts.get("ignore_index")
    check_grad(fn, arr((6, 5)), targets((6,), 5, ignore=ignore), *extra)
    check_grad(fn, arr((2, 5, 3, 2)), targets((2, 3, 2), 5, ignore=ignore), *extra)  # K-dim
    check_grad(fn, arr((5,), "float64"), Arg(np.array(3)), *(() if w is None else (Arg(w.array, "float64"),)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(smoothing, reduction):
    probs = Arg(np.random.default_rng(4).dirichlet(np.ones(5), size=6).astype(np.float32))
    check_grad(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction, label_smoothing=smoothing), arr((6, 5)), probs)
    check_grad(lambda m, x, p, w: F(m).cross_entropy(x, p, w.detach(), reduction=reduction, label_smoothing=smoothing),
               arr((6, 5)), probs, arr((5,), low=0.2, high=2, seed=5))
    probs4 = Arg(np.random.default_rng(4).dirichlet(np.ones(3), size=(2, 4)).transpose(0, 2, 1).astype(np.float32))
    check_grad(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction), arr((2, 3, 4)), probs4)


def test_cross_entropy_large_logits_and_legacy_args():
    big = Arg(np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 5e3]], dtype=np.float32))
    check_grad(lambda m, x, t: F(m).cross_entropy(x, t), big, Arg(np.array([1, 1])))
    check_grad(lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=0.1), big, Arg(np.array([0, 2])))
    check(lambda m, x, t: F(m).cross_entropy(x, t, size_average=False), arr((4, 3)), targets((4,), 3))
    check(lambda m, x, t: F(m).cross_entropy(x, t, reduce=False), arr((4, 3)), targets((4,), 3))
    # every target ignored: the weighted mean is 0 / 0
    check(lambda m, x, t: F(m).cross_entropy(x, t, ignore_index=0), arr((2, 3)), Arg(np.array([0, 0])))


def test_cross_entropy_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        UF.cross_entropy(ug.randn(3, 4), ug.tensor([0, 4, 1]))
    with pytest.raises(IndexError):
        UF.nll_loss(ug.randn(3, 4), ug.tensor([0, -1, 1]))
    raises_like_torch(lambda m, x, t: F(m).cross_entropy(x, t), arr((3, 4)), targets((4,), 4))
    raises_like_torch(lambda m, x, t: F(m).cross_entropy(x, t, m.ones(3)), arr((3, 4)), targets((3,), 4))
    raises_like_torch(lambda m, x, t: F(m).cross_entropy(x, t, reduction="avg"), arr((3, 4)), targets((3,), 4))
    raises_like_torch(lambda m, x, t: F(m).cross_entropy(x, t), arr((3, 4)), arr((3, 5)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    check_grad(lambda m, x, t: F(m).nll_loss(x.log_softmax(1), t, reduction=reduction), arr((6, 4)), targets((6,), 4))
    check_grad(lambda m, x, t, w: F(m).nll_loss(x, t, w.detach(), ignore_index=0, reduction=reduction), arr((6, 4)),
               targets((6,), 4), arr((4,), low=0.1, high=1, seed=2))
    check_grad(lambda m, x, t: F(m).nll_loss(x, t, reduction=reduction), arr((2, 4, 3)), targets((2, 3), 4))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("opts", [{}, {"weight": True}, {"ignore_index": 2}, {"weight": True, "ignore_index": 0}])
def test_nll_loss_kernel_matches_composed_ops(opts, reduction, dtype):
    """[N, C] inputs run nll_loss as one kernel; [N, C, 1] ones run the composed ops: the
    values and gradients agree."""
    rng = np.random.default_rng(3)
    data = rng.normal(size=(7, 5)).astype(dtype)
    t = rng.integers(0, 5, size=7)
    t[::3] = opts.get("ignore_index", 0)
    w = ug.tensor(rng.uniform(0.2, 2, size=5).astype(dtype)) if opts.get("weight") else None
    kw = {"reduction": reduction, "ignore_index": opts.get("ignore_index", -100)}
    x2, x3 = ug.tensor(data, requires_grad=True), ug.tensor(data[:, :, None], requires_grad=True)
    t2, t3 = ug.tensor(t), ug.tensor(t[:, None])
    l2 = UF.nll_loss(x2.log_softmax(1), t2, w, **kw)
    l3 = UF.nll_loss(x3.log_softmax(1), t3, w, **kw)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(l2.numpy().ravel(), l3.numpy().ravel(), **tol)
    g = ug.tensor(rng.uniform(0.5, 1.5, size=tuple(l2.shape)).astype(dtype))
    l2.backward(g)
    l3.backward(g.reshape(tuple(l3.shape)))
    np.testing.assert_allclose(x2.grad.numpy(), x3.grad.numpy()[:, :, 0], **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_double_backward(reduction):
    rng = np.random.default_rng(5)
    x = ug.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    w = ug.tensor(rng.uniform(0.5, 2, size=3))
    t = ug.tensor(np.array([0, 2, 1, 2]))
    assert ug.autograd.gradgradcheck(lambda x: UF.cross_entropy(x, t, w, ignore_index=1, reduction=reduction), (x,))
    x1 = ug.tensor(rng.normal(size=3), requires_grad=True)
    assert ug.autograd.gradgradcheck(lambda x: UF.cross_entropy(x, ug.tensor(2), reduction=reduction), (x1,))


def test_nll_loss_kernel_errors_and_target_dtypes():
    with pytest.raises(IndexError, match=r"Target 5 is out of bounds: class indices must be in \[0, 5\)"):
        UF.nll_loss(ug.randn(2, 5), ug.tensor([1, 5]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        UF.nll_loss(ug.randn(5), ug.tensor(-3))
    x = ug.randn(3, 4)
    expected = UF.nll_loss(x, ug.tensor([0, 3, 1]))
    for dtype in (ug.int32, ug.uint8):
        np.testing.assert_allclose(UF.nll_loss(x, ug.tensor([0, 3, 1]).to(dtype)).item(), expected.item(), rtol=1e-6)
    target = ug.tensor([0, 3, 1])
    loss = UF.nll_loss(x.requires_grad_(), target)
    target.add_(0)  # the saved target changed: backward must refuse
    with pytest.raises(RuntimeError, match="modified by an"):
        loss.backward()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    x, t = arr((4, 5)), arr((4, 5), seed=1)
    w = arr((4, 5), low=0.1, high=2, seed=2)
    # the 20 terms of a mean or sum are >= 0: the loss itself is what their magnitudes add up to
    sums = {} if reduction == "none" else {"n": (20,)}
    for name, kw in [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                     ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}), ("huber_loss", {"delta": 2.5})]:
        loss = lambda m, x, t: getattr(F(m), name)(x, t, reduction=reduction, **kw)  # noqa: E731
        check_grad(loss, x, t, **(sums and dict(sums, terms=loss)))
    for name in ["mse_loss", "l1_loss", "huber_loss"]:
        loss = lambda m, x, t, w: getattr(F(m), name)(x, t, reduction=reduction, weight=w)  # noqa: E731
        check_grad(loss, x, t, w, **(sums and dict(sums, terms=loss)))
    check(lambda m, x, t: F(m).mse_loss(x, t, size_average=False), x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p, t = arr((4, 3), low=0.02, high=0.98), arr((4, 3), low=0, high=1, seed=1)
    check_grad(lambda m, p, t: F(m).binary_cross_entropy(p, t, reduction=reduction), p, t)
    check_grad(lambda m, p, t, w: F(m).binary_cross_entropy(p, t, w.detach(), reduction=reduction), p, t,
               arr((4, 3), low=0.1, high=2, seed=2))
    edge = Arg(np.array([0.0, 1.0, 0.5, 1e-30], dtype=np.float32))
    check_grad(lambda m, p, t: F(m).binary_cross_entropy(p, t, reduction=reduction), edge,
               Arg(np.array([0.0, 1.0, 1.0, 0.3], dtype=np.float32)),
               off={"fd": "p = 0 and 1: a central difference leaves [0, 1]"})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, t = arr((4, 3), low=-5, high=5), arr((4, 3), low=0, high=1, seed=1)
    check_grad(lambda m, x, t: F(m).binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t)
    check_grad(lambda m, x, t, w, pw: F(m).binary_cross_entropy_with_logits(x, t, w.detach(), reduction=reduction,
                                                                    pos_weight=pw.detach()),
               x, t, arr((4, 3), low=0.1, high=2, seed=2), arr((3,), low=0.5, high=3, seed=3))
    big = Arg(np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=np.float32))
    check_grad(lambda m, x, t: F(m).binary_cross_entropy_with_logits(x, t, reduction=reduction), big,
               Arg(np.array([1.0, 0.0, 0.5, 1.0, 0.0], dtype=np.float32)))


def test_bce_errors():
    raises_like_torch(lambda m, p, t: F(m).binary_cross_entropy(p, t), arr((3,), low=0.1, high=0.9), arr((3, 1)))
    raises_like_torch(lambda m, x, t: F(m).binary_cross_entropy_with_logits(x, t), arr((3,)), arr((4,)))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        UF.binary_cross_entropy(ug.tensor([0.5, 1.5]), ug.tensor([0.0, 1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div(reduction):
    logp = Arg(np.log(np.random.default_rng(0).dirichlet(np.ones(4), size=3)).astype(np.float32))
    q = np.random.default_rng(1).dirichlet(np.ones(4), size=3).astype(np.float32)
    q[0, 1] = 0.0
    # torch's target gradient is NaN where the target is 0 (xlogy); unigrad's is finite: compare the input's
    check_grad(lambda m, x, t: F(m).kl_div(x, t.detach(), reduction=reduction), logp, Arg(q))
    check_grad(lambda m, x, t: F(m).kl_div(x, t, reduction=reduction, log_target=True), logp,
               Arg(np.log(q + 0.1).astype(np.float32)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss(margin, reduction):
    t = Arg(np.array([1, -1, 1, -1, -1]))
    check_grad(lambda m, a, b, t: F(m).cosine_embedding_loss(a, b, t, margin=margin, reduction=reduction),
               arr((5, 4)), arr((5, 4), seed=1), t)
    check_grad(lambda m, a, b, t: F(m).cosine_embedding_loss(a, b, t, margin, reduction=reduction),
               arr((4,)), arr((4,), seed=1), Arg(np.array(-1)))


# ---- normalization ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,norm", [((6, 8), (8,)), ((2, 3, 16), (16,)), ((2, 3, 4), (3, 4)), ((5, 37), (37,))])
def test_layer_norm(shape, norm, dtype):
    x = arr(shape, dtype)
    w, b = arr(norm, dtype, seed=1), arr(norm, dtype, seed=2)
    dims, n = tuple(range(-len(norm), 0)), int(np.prod(norm))
    terms, terms_eps = norm_terms(dims, 1e-5), norm_terms(dims, 1e-3)
    check_grad(lambda m, x, w, b: F(m).layer_norm(x, norm, w, b), x, w, b, terms=terms, n=n)
    check_grad(lambda m, x, w: F(m).layer_norm(x, norm, w, eps=1e-3), x, w, terms=terms_eps, n=n)
    check_grad(lambda m, x, b: F(m).layer_norm(x, norm, bias=b), x, b, terms=terms, n=n)
    check_grad(lambda m, x: F(m).layer_norm(x, list(norm)), x, terms=terms, n=n)


def test_layer_norm_layouts_stability_and_errors():
    check_grad(lambda m, x, w, b: F(m).layer_norm(x.transpose(0, 1), (5,), w, b), arr((5, 4, 5)),
               arr((5,), seed=1), arr((5,), seed=2))
    check_grad(lambda m, x: F(m).layer_norm(x + 1e4, (16,)), arr((4, 16)), rtol=1e-3, atol=1e-3,  # large offset
               off={"fd": "x + 1e4 rounds the step away: the differences keep ~1e-6 of it"})
    check_grad(lambda m, x: F(m).layer_norm(x, (8,)), arr((512, 8)))  # many rows: the blocked weight sums
    raises_like_torch(lambda m, x: F(m).layer_norm(x, (5,)), arr((3, 4)))
    raises_like_torch(lambda m, x, w: F(m).layer_norm(x, (4,), w), arr((3, 4)), arr((5,)))


def test_layer_norm_double_backward():
    rng = np.random.default_rng(0)
    x, w, b = (ug.tensor(rng.normal(size=s), requires_grad=True) for s in [(3, 5), (5,), (5,)])
    assert ug.autograd.gradcheck(lambda x, w, b: UF.layer_norm(x, (5,), w, b), (x, w, b))
    assert ug.autograd.gradgradcheck(lambda x, w, b: UF.layer_norm(x, (5,), w, b), (x, w, b))
    assert ug.autograd.gradgradcheck(lambda x: UF.group_norm(x, 2), (ug.tensor(rng.normal(size=(2, 4, 3)), requires_grad=True),))


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(dtype):
    check_grad(lambda m, x, w: F(m).rms_norm(x, (6,), w), arr((4, 6), dtype), arr((6,), dtype, seed=1))
    check_grad(lambda m, x: F(m).rms_norm(x, (3, 6)), arr((2, 3, 6), dtype))
    check_grad(lambda m, x: F(m).rms_norm(x * 1e-4, (6,), eps=1e-6), arr((4, 6), dtype))
    check(lambda m, x: F(m).rms_norm(x * 1e-5, (6,)), arr((4, 6), dtype))  # the default eps matters here


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_training_updates_running_stats(shape):
    def fn(m, x, w, b):
        rm, rv = m.zeros(3) + 0.5, m.ones(3) * 2
        y = F(m).batch_norm(x, rm, rv, w, b, training=True, momentum=0.3)
        y2 = F(m).batch_norm(x * 2, rm, rv, training=True)
        return [y, y2, rm, rv]
    dims, n = [d for d in range(len(shape)) if d != 1], int(np.prod(shape)) // 3
    channel = [1, 3] + [1] * (len(shape) - 2)
    normalized, normalized_eps = norm_terms(dims, 1e-5), norm_terms(dims, 1e-3)

    def fn_terms(m, x, w, b):  # the running stats add momentum-weighted means of x and of x²
        return [normalized(m, x, w.reshape(channel)), normalized(m, x * 2), x.abs().mean(dims),
                (x * x).sum(dims) / (n - 1)]
    check(fn, arr(shape), arr((3,), seed=1), arr((3,), seed=2), terms=fn_terms, n=n)
    check_grad(lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True), arr(shape), arr((3,), seed=1),
               arr((3,), seed=2), terms=lambda m, x, w, b: normalized(m, x, w.reshape(channel)), n=n)
    check_grad(lambda m, x: F(m).batch_norm(x, m.zeros(3, dtype=x.dtype), m.ones(3, dtype=x.dtype), training=True,
                                            eps=1e-3), arr(shape, "float64"), terms=normalized_eps, n=n)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (3, 4, 33), (17, 3)])
def test_batch_norm_fused_kernel(shape, dtype):
    """The fused kernel (float32/float64, planes of 16+ elements with a tail, and [N, C]) on an
    offset input, whose mean dominates its spread, and a strided one; the weight's gradient
    alone when the input takes none."""
    c = shape[1]
    dims, n = [d for d in range(len(shape)) if d != 1], int(np.prod(shape)) // c
    channel = [1, c] + [1] * (len(shape) - 2)
    normalized = norm_terms(dims, 1e-5)
    x, w, b = arr(shape, dtype, low=4, high=10), arr((c,), dtype, seed=1), arr((c,), dtype, seed=2)

    def fn(m, x, w, b):
        rm, rv = m.zeros(c, dtype=x.dtype), m.ones(c, dtype=x.dtype)
        return [F(m).batch_norm(x, rm, rv, w, b, training=True, momentum=0.3), rm, rv]

    def fn_terms(m, x, w, b):
        return [normalized(m, x, w.reshape(channel)), x.abs().mean(dims), (x * x).sum(dims) / (n - 1)]
    check_grad(fn, x, w, b, terms=fn_terms, n=n)
    check_grad(lambda m, x: F(m).batch_norm(x, None, None, training=True), x, terms=normalized, n=n)
    check_grad(lambda m, x, w: F(m).batch_norm(x.detach(), None, None, w, training=True), x, w,
               terms=lambda m, x, w: normalized(m, x, w.reshape(channel)), n=n)
    strided = arr(shape[:1] + shape[2:] + shape[1:2], dtype, view=lambda t: t.movedim(-1, 1))
    check_grad(lambda m, x, b: F(m).batch_norm(x, None, None, None, b, training=True), strided, b,
               terms=lambda m, x, b: normalized(m, x), n=n)


def test_batch_norm_double_backward():
    x = ug.tensor(np.random.default_rng(0).normal(size=(3, 2, 5)), requires_grad=True)
    w, b = (ug.tensor(np.random.default_rng(s).normal(size=2), requires_grad=True) for s in (1, 2))
    fn = lambda x, w, b: UF.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert ug.autograd.gradcheck(fn, (x, w, b))
    assert ug.autograd.gradgradcheck(fn, (x, w, b))


def test_batch_norm_eval_and_errors():
    rm, rv = arr((3,), seed=3), arr((3,), low=0.5, high=2, seed=4)
    check_grad(lambda m, x, rm, rv, w, b: F(m).batch_norm(x, rm.detach(), rv.detach(), w, b), arr((4, 3, 2)), rm, rv,
               arr((3,), seed=1), arr((3,), seed=2))
    raises_like_torch(lambda m, x: F(m).batch_norm(x, None, None, training=True), arr((1, 3)))
    raises_like_torch(lambda m, x: F(m).batch_norm(x, m.zeros(4), m.ones(4), training=True), arr((2, 3)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm(dtype):
    x = arr((2, 6, 5), dtype)
    check_grad(lambda m, x, w, b: F(m).group_norm(x, 3, w, b), x, arr((6,), dtype, seed=1), arr((6,), dtype, seed=2))
    check_grad(lambda m, x: F(m).group_norm(x, 2, eps=1e-2), arr((3, 4, 2, 3), dtype))
    check_grad(lambda m, x: F(m).group_norm(x, 1), arr((2, 4), dtype))
    raises_like_torch(lambda m, x: F(m).group_norm(x, 4), arr((2, 6, 5)))
    # one value per group over the whole batch: torch's ValueError (two give a zero output)
    raises_like_torch(lambda m, x: F(m).group_norm(x, 2), arr((1, 2)))
    raises_like_torch(lambda m, x: F(m).group_norm(x, 3), arr((1, 3, 1, 1)))
    check(lambda m, x: F(m).group_norm(x, 2), arr((2, 2)))


def test_instance_norm():
    check_grad(lambda m, x, w, b: F(m).instance_norm(x, weight=w, bias=b), arr((2, 3, 5)), arr((3,), seed=1),
               arr((3,), seed=2))

    def with_running(m, x):
        rm, rv = m.zeros(3), m.ones(3)
        y = F(m).instance_norm(x, rm, rv, momentum=0.2)
        return [y, rm, rv]
    check(with_running, arr((2, 3, 4, 4)))
    check_grad(lambda m, x, rm, rv: F(m).instance_norm(x, rm.detach(), rv.detach(), use_input_stats=False),
               arr((2, 3, 4)), arr((3,), seed=1), arr((3,), low=0.5, high=2, seed=2))


# ---- dropout -----------------------------------------------------------------------------------------

def test_dropout_statistics_gradient_and_seed():
    x = ug.ones(100_000, requires_grad=True)
    ug.manual_seed(3)
    y = UF.dropout(x, p=0.3)
    kept = (y.detach() != 0).numpy()
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy(), rtol=1e-6)
    ug.manual_seed(3)
    np.testing.assert_array_equal(UF.dropout(x.detach(), p=0.3).numpy(), y.detach().numpy())


def test_dropout_identity_cases_and_errors():
    x = ug.randn(4, 5)
    for y in [UF.dropout(x, 0.0), UF.dropout(x, 0.5, training=False), UF.dropout2d(x.reshape(1, 4, 5), training=False),
              UF.alpha_dropout(x, 0.5)]:
        np.testing.assert_array_equal(y.numpy().reshape(4, 5), x.numpy())
    assert (UF.dropout(x, 1.0).numpy() == 0).all()
    for bad in [-0.1, 1.5]:
        raises_like_torch(lambda m, x: F(m).dropout(x, bad), arr((3,)))
    y = ug.ones(3, 4)
    UF.dropout(y, 0.5, inplace=True)
    assert set(np.unique(y.numpy())) <= {0.0, 2.0}


def test_channel_dropout():
    ug.manual_seed(0)
    y = UF.dropout2d(ug.ones(8, 16, 3, 3), p=0.5).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.8
    assert UF.dropout1d(ug.ones(4, 5, 6)).shape == (4, 5, 6)
    assert UF.dropout3d(ug.ones(2, 3, 2, 2, 2)).shape == (2, 3, 2, 2, 2)
    raises_like_torch(lambda m, x: F(m).dropout1d(x), arr((2, 3, 4, 5)))


def test_alpha_dropout_keeps_moments():
    ug.manual_seed(1)
    y = UF.alpha_dropout(ug.randn(200_000), p=0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02


# ---- embedding, one_hot --------------------------------------------------------------------------------

def test_embedding():
    idx = Arg(np.array([[0, 2, 4], [2, 2, 1]]))
    check_grad(lambda m, i, w: F(m).embedding(i, w), idx, arr((5, 3)))
    padding = {"fd": "the padding row's gradient is zero by definition, though the output reads it"}
    check_grad(lambda m, i, w: F(m).embedding(i, w, padding_idx=2), idx, arr((5, 3)), off=padding)
    check_grad(lambda m, i, w: F(m).embedding(i, w, padding_idx=-1), idx, arr((5, 3), "float64"), off=padding)
    check_grad(lambda m, i, w: F(m).embedding(i, w, scale_grad_by_freq=True), idx, arr((5, 3)),
               off={"fd": "scale_grad_by_freq divides the gradient by each index's count: not a derivative"})
    check_grad(lambda m, i, w: F(m).embedding(i.to(m.int32), w), idx, arr((5, 3)))

    def renorm(m, i, w):
        w = w.clone()
        out = F(m).embedding(i, w, max_norm=1.0)
        return [out, w]
    check(renorm, idx, arr((5, 3)))


def test_embedding_errors():
    with pytest.raises(IndexError):
        UF.embedding(ug.tensor([0, 5]), ug.randn(5, 3))
    with pytest.raises(IndexError):
        UF.embedding(ug.tensor([-1]), ug.randn(5, 3))
    raises_like_torch(lambda m, i, w: F(m).embedding(i, w), arr((2,)), arr((5, 3)))
    with pytest.raises(ValueError, match="padding_idx"):  # torch: AssertionError
        UF.embedding(ug.tensor([0]), ug.randn(5, 3), padding_idx=7)


def test_one_hot():
    check(lambda m, t: F(m).one_hot(t), Arg(np.array([[0, 3], [1, 1]])))
    check(lambda m, t: F(m).one_hot(t, 6), Arg(np.array([0, 3, 5])))
    check(lambda m, t: F(m).one_hot(t, num_classes=3), Arg(np.zeros((0,), dtype=np.int64)))
    raises_like_torch(lambda m, t: F(m).one_hot(t, 3), Arg(np.array([0, 3])))
    raises_like_torch(lambda m, t: F(m).one_hot(t), Arg(np.array([-1, 0])))


# ---- attention -------------------------------------------------------------------------------------------

def check_attn(*args):
    """torch's CPU attention kernel blocks its sums differently: float32 differs by ~1e-6."""
    check_grad(*args, atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa(dtype):
    q, k, v = arr((2, 3, 5, 8), dtype), arr((2, 3, 7, 8), dtype, seed=1), arr((2, 3, 7, 4), dtype, seed=2)
    sdpa = lambda m: F(m).scaled_dot_product_attention  # noqa: E731
    check_attn(lambda m, q, k, v: sdpa(m)(q, k, v), q, k, v)
    check_attn(lambda m, q, k, v: sdpa(m)(q, k, v, scale=0.3), q, k, v)
    check_attn(lambda m, q, k, v: sdpa(m)(q, k[..., :5, :], v[..., :5, :], is_causal=True), q, k, v)
    check_attn(lambda m, q, k, v: sdpa(m)(q, k, v[..., :4, :], is_causal=True), arr((2, 4, 4), dtype),
               arr((2, 4, 4), dtype, seed=1), arr((2, 4, 4), dtype, seed=2))
    bool_mask = Arg(np.random.default_rng(5).random((5, 7)) > 0.3)
    check_attn(lambda m, q, k, v, mask: sdpa(m)(q, k, v, attn_mask=mask), q, k, v, bool_mask)
    float_mask = arr((3, 1, 7), dtype, seed=6)
    check_attn(lambda m, q, k, v, mask: sdpa(m)(q, k, v, mask.detach()), q, k, v, float_mask)


def test_sdpa_masked_rows_gqa_errors_and_dropout():
    q, k, v = arr((1, 2, 3, 4)), arr((1, 2, 5, 4), seed=1), arr((1, 2, 5, 4), seed=2)
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # a query that may attend nothing
    check_attn(lambda m, q, k, v, mask: F(m).scaled_dot_product_attention(q, k, v, mask), q, k, v, Arg(mask))
    check_attn(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, enable_gqa=True),
               arr((2, 4, 3, 4)), arr((2, 2, 5, 4), seed=1), arr((2, 2, 5, 4), seed=2))
    raises_like_torch(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v), arr((2, 3, 4)),
                      arr((2, 5, 3)), arr((2, 5, 4)))
    raises_like_torch(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, m.ones(3, 3, dtype=m.bool),
                                                                           is_causal=True), q, k, v)
    qu, ku, vu = (ug.randn(2, 3, 4) for _ in range(3))
    ug.manual_seed(5)
    a = UF.scaled_dot_product_attention(qu, ku, vu, dropout_p=0.5)
    ug.manual_seed(5)
    b = UF.scaled_dot_product_attention(qu, ku, vu, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), UF.scaled_dot_product_attention(qu, ku, vu).numpy())


def test_gradchecks_float64():
    rng = np.random.default_rng(1)
    t = lambda *s: ug.tensor(rng.normal(size=s), requires_grad=True)  # noqa: E731
    y = ug.tensor([0, 2, 1])
    assert ug.autograd.gradgradcheck(lambda x: UF.cross_entropy(x, y, label_smoothing=0.2), (t(3, 4),))
    assert ug.autograd.gradgradcheck(lambda q, k, v: UF.scaled_dot_product_attention(q, k, v, is_causal=True),
                                     (t(2, 3, 4), t(2, 3, 4), t(2, 3, 2)))
    assert ug.autograd.gradgradcheck(lambda x, z: UF.binary_cross_entropy_with_logits(x, z.sigmoid()), (t(4,), t(4,)))
    assert ug.autograd.gradgradcheck(lambda w: UF.embedding(ug.tensor([1, 1, 0]), w, padding_idx=0) ** 2, (t(3, 2),))
    assert ug.autograd.gradcheck(lambda x, w: UF.batch_norm(x, None, None, w, training=True), (t(4, 3), t(3)))


def test_fused_paths_compose_with_vmap_and_jvp():
    rng = np.random.default_rng(2)
    t = lambda *s: ug.tensor(rng.normal(size=s))  # noqa: E731
    x, w, b, W = t(3, 5, 4), t(4), t(4), t(6, 4)
    np.testing.assert_allclose(ug.vmap(lambda v: UF.layer_norm(v, (4,), w, b))(x).numpy(),
                               UF.layer_norm(x, (4,), w, b).numpy(), atol=1e-12)
    np.testing.assert_allclose(ug.vmap(lambda v: UF.linear(v, W))(x).numpy(), UF.linear(x, W).numpy(), atol=1e-12)
    d, eps, b6 = t(3, 5, 4), 1e-6, t(6)
    for f in [lambda v: UF.layer_norm(v, (4,), w, b), lambda v: UF.linear(v, W, b6), lambda v: v.log_softmax(-1)]:
        _, tangent = ug.jvp(f, (x,), (d,))
        numeric = (f(x + eps * d) - f(x - eps * d)) / (2 * eps)
        np.testing.assert_allclose(tangent.numpy(), numeric.numpy(), atol=1e-7)
    per_example = ug.vmap(ug.grad(lambda v: UF.cross_entropy(v, ug.tensor(1))))(t(4, 3))
    assert per_example.shape == (4, 3)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_functional_pad(mode):
    check(lambda m, x: F(m).pad(x, (1, 2, 2, 1), mode=mode), arr((2, 3, 4, 5)))
