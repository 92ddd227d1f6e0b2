"""Convolutions and poolings against PyTorch: outputs and gradients over a grid of strides,
paddings ('same' and 'valid' too), dilations and groups, float32 and float64, non-contiguous
and unbatched inputs; finite-difference checks (with a second derivative); vmap and jvp;
and the errors for bad shapes and arguments."""
import numpy as np
import pytest
import torch
import torch.func as tf
import torch.nn.functional as TF

import unigrad as ug
import unigrad.nn.functional as UF
from reference import ABS, Arg, arr, assert_same, check, check_grad


def fn_of(m):
    return TF if m is torch else UF


def forward_backward(f, arrays, dtype="float32", seed=1, views=None, n=None):
    """out = f(F, *tensors) in both frameworks: the output and every input's gradient for a
    random cotangent, against torch and finite differences (check_grad). views[i] (if given)
    turns input i into a non-contiguous view before f sees it. n: the sums' lengths (forward,
    then each gradient), whose terms are f's on the magnitudes (see reference.py)."""
    cotangent = (-1.0, 1.0)
    if n is not None and max(n) > 400:
        # Terms of random signs cancel to ~sqrt(n) of their magnitude: past a few hundred the
        # worst-case tolerance would miss a 1e-3 error, so the sums over every output position
        # (the weight's and bias's gradients) get an input and a cotangent of one sign.
        arrays = [np.abs(arrays[0])] + list(arrays[1:])
        cotangent = (0.0, 1.0)
    args = [None if a is None else Arg(np.asarray(a, dtype=dtype), view=None if views is None else views[i])
            for i, a in enumerate(arrays)]
    check_grad(lambda m, *xs: f(fn_of(m), *xs), *args, terms=None if n is None else ABS, n=n, seed=seed,
               cotangent=cotangent)


def conv_sums(f, arrays, groups=1, transposed=False):
    """The lengths of the sums conv f's output and the gradients of its input, weight and bias
    add: an input window per output, an output window per input, every output position (every
    input position, for a transposed conv's weight) per weight and bias element."""
    x, w, b = (None if a is None else torch.tensor(a) for a in arrays)
    out = f(TF, x, w, b)
    window = int(np.prod(w.shape[2:]))
    channel_dim = 1 if x.dim() == w.dim() else 0

    def positions(t):
        return t.numel() // t.shape[channel_dim]
    if transposed:
        sums = (w.shape[0] // groups * window + (b is not None), w.shape[1] * window, positions(x))
    else:
        sums = (w.shape[1] * window + (b is not None), w.shape[0] // groups * window, positions(out))
    return sums + ((positions(out),) if b is not None else ())


def rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


CONV2D_CASES = [  # C, O, kernel, stride, padding, dilation, groups, bias, H, W
    (3, 4, 3, 1, 0, 1, 1, True, 7, 8),
    (3, 4, (3, 2), 2, 1, 1, 1, True, 9, 7),
    (4, 6, 3, (2, 1), (1, 2), (2, 1), 2, False, 10, 9),
    (4, 4, 3, 1, 1, 1, 4, True, 6, 6),           # depthwise
    (2, 6, 1, 1, 0, 1, 1, True, 5, 5),           # 1x1: no column matrix
    (2, 3, 1, 2, 0, 1, 1, False, 5, 6),          # 1x1 strided
    (3, 2, 5, 1, 2, 1, 1, True, 28, 28),         # LeNet's first layer shape
    (6, 4, 2, 3, 1, 2, 2, True, 11, 12),
    (2, 4, 3, 1, "same", 1, 1, True, 6, 7),
    (2, 4, 4, 1, "same", 2, 2, True, 9, 8),      # even effective kernel: asymmetric padding
    (2, 4, (2, 3), 1, "same", 1, 1, False, 5, 6),
    (2, 3, 3, 1, "valid", 1, 1, True, 6, 5),
    # 3x3, unit stride, float32, 16+ channels and 128+ tiles of 2x2 outputs: Winograd's F(2x2, 3x3),
    # forward and input gradient; odd output sizes cut the last tiles
    (16, 24, 3, 1, 1, 1, 1, True, 16, 16),
    (16, 16, 3, 1, 0, 1, 1, False, 19, 18),
    (20, 16, 3, 1, 2, 1, 1, True, 13, 15),
    (16, 17, 3, 1, "same", 1, 1, True, 15, 16),
    (17, 19, 3, 1, 1, 1, 1, False, 16, 16),      # the filter transforms' blocks of 16 filters, with a remainder
]
# One-sample column matrices over 2^18 elements, made a block of output rows at a time (the
# weight gradient's too): a stem-like 7x7 stride 2, whose rows are split by column phase. In
# float64 only: float32's tolerance for the weight gradient's sums of 8,000+ terms would not
# catch a 1e-3 error, and the blocking is the same code in both.
BLOCKED_CASES = [(3, 4, 7, 2, 3, 1, 1, True, 130, 131), (8, 4, 3, 1, 1, 1, 1, False, 64, 64)]


@pytest.mark.parametrize("dtype,case", [(d, c) for d in ("float32", "float64") for c in CONV2D_CASES] +
                         [("float64", c) for c in BLOCKED_CASES], ids=str)
def test_conv2d_matches_torch(case, dtype):
    C, O, k, s, p, d, g, bias, H, W = case
    kh, kw = (k, k) if isinstance(k, int) else k
    arrays = [rand((2, C, H, W)), rand((O, C // g, kh, kw), 1), rand((O,), 2) if bias else None]
    conv = lambda F, x, w, b: F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)  # noqa: E731
    forward_backward(conv, arrays, dtype, n=conv_sums(conv, arrays, g))


@pytest.mark.parametrize("N,size", [(2, 14), (3, 20)], ids=["two_samples_a_block", "two_then_one"])
def test_conv2d_winograd_128_channels(N, size):
    """128 channels on planes down to 14x14: Winograd before the direct kernel, its blocks whole
    images side by side (on 20x20 at batch 3: two samples' tiles in one block's products, the
    last alone in the next). Weights of one sign: the sums of 1,152 terms would otherwise
    cancel below a tolerance that could catch an error."""
    arrays = [rand((N, 128, size, size)), np.abs(rand((128, 128, 3, 3), 1)), None]
    conv = lambda F, x, w, b: F.conv2d(x, w, b, padding=1)  # noqa: E731
    forward_backward(conv, arrays, n=conv_sums(conv, arrays))


def test_conv2d_non_contiguous_and_unbatched():
    x, w, b = rand((2, 3, 6, 7)), rand((4, 3, 3, 3), 1), rand((4,), 2)
    # a transposed input and weight, and a strided (sliced) input
    conv = lambda F, x, w, b: F.conv2d(x, w, b, padding=1)  # noqa: E731
    forward_backward(conv, [x.transpose(0, 1, 3, 2), w, b], views=[lambda t: t.transpose(2, 3),
                     lambda t: t.transpose(2, 3), None], n=conv_sums(conv, [x, w, b]))
    for conv, arrays in [(lambda F, x, w, b: F.conv2d(x[:, :, ::2], w, b), [x, w, b]),
                         (lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=(1, 0)), [x[0], w, b]),
                         (lambda F, x, w, b: F.conv1d(x, w, b, padding="same"), [x[0, :, 0], w[:, :, 0], b])]:
        forward_backward(conv, arrays, n=conv_sums(conv, arrays))


CONV1D_CASES = [  # C, O, k, stride, padding, dilation, groups, bias
    (3, 4, 3, 1, 0, 1, 1, True), (4, 6, 3, 2, 1, 2, 2, False), (2, 4, 4, 1, "same", 1, 2, True),
    (2, 2, 1, 1, "valid", 1, 1, True), (3, 3, 5, 3, 2, 1, 3, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONV1D_CASES, ids=[str(c) for c in CONV1D_CASES])
def test_conv1d_matches_torch(case, dtype):
    C, O, k, s, p, d, g, bias = case
    arrays = [rand((2, C, 11)), rand((O, C // g, k), 1), rand((O,), 2) if bias else None]
    conv = lambda F, x, w, b: F.conv1d(x, w, b, stride=s, padding=p, dilation=d, groups=g)  # noqa: E731
    forward_backward(conv, arrays, dtype, n=conv_sums(conv, arrays, g))


CONV_T_CASES = [  # C_in, C_out, k, stride, padding, output_padding, groups, dilation, bias
    (3, 4, 3, 1, 0, 0, 1, 1, True), (4, 2, 3, 2, 1, 1, 2, 1, True), (2, 4, (3, 2), (2, 3), (1, 0), (0, 2), 1, 1, False),
    (4, 4, 2, 2, 0, 0, 4, 2, True), (2, 3, 3, 3, 1, 1, 1, 2, True),
    # output_padding of at least the stride (allowed below the dilation): trailing outputs no
    # input reaches, and 1x1 kernels whose padding crops the input
    (2, 4, 3, 1, 0, 1, 1, 2, True), (3, 2, 1, 1, 1, 1, 1, 2, True), (4, 4, 3, 2, 1, 2, 2, 3, False),
    (2, 2, (1, 3), 1, (1, 0), (1, 2), 1, 3, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONV_T_CASES, ids=[str(c) for c in CONV_T_CASES])
def test_conv_transpose_matches_torch(case, dtype):
    C, O, k, s, p, op, g, d, bias = case
    kh, kw = (k, k) if isinstance(k, int) else k
    arrays = [rand((2, C, 5, 4)), rand((C, O // g, kh, kw), 1), rand((O,), 2) if bias else None]
    conv = lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=s, padding=p, output_padding=op,  # noqa: E731
                                                 groups=g, dilation=d)
    forward_backward(conv, arrays, dtype, n=conv_sums(conv, arrays, g, transposed=True))
    a1 = [arrays[0][:, :, 0], arrays[1][:, :, 0], arrays[2]]
    s1, p1, op1 = (v if isinstance(v, int) else v[1] for v in (s, p, op))
    conv = lambda F, x, w, b: F.conv_transpose1d(x, w, b, s1, p1, op1, g, d)  # noqa: E731
    forward_backward(conv, a1, dtype, n=conv_sums(conv, a1, g, transposed=True))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_conv_and_pool(dtype):
    x, w = arr((2, 3, 6, 6), dtype, -1, 1), arr((4, 3, 3, 3), dtype, -1, 1, seed=1)
    check(lambda m, x, w: fn_of(m).conv2d(x, w, padding=1), x, w, terms=ABS, n=27)
    check(lambda m, x: fn_of(m).max_pool2d(x, 2), x)
    check(lambda m, x: fn_of(m).avg_pool2d(x, 3, 2, 1), x)


MAX_POOL_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), ((2, 3), (1, 2), (1, 1), 1, True),
    (3, 1, 1, 2, False), (2, 3, 0, 1, True), (3, 2, 0, (2, 1), True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", MAX_POOL_CASES, ids=[str(c) for c in MAX_POOL_CASES])
def test_max_pool_matches_torch(case, dtype):
    k, s, p, d, ceil = case
    forward_backward(lambda F, x: F.max_pool2d(x, k, s, p, d, ceil), [rand((2, 3, 9, 8))], dtype)
    check(lambda m, x: fn_of(m).max_pool2d(x, k, s, p, d, ceil, return_indices=True), arr((2, 3, 9, 8), dtype))
    check(lambda m, x: fn_of(m).max_pool2d(x, k, s, p, d, ceil, True)[1], arr((3, 9, 8), dtype))  # unbatched
    k1, s1, p1, d1 = (v if isinstance(v, int) or v is None else v[0] for v in (k, s, p, d))
    forward_backward(lambda F, x: F.max_pool1d(x, k1, s1, p1, d1, ceil), [rand((2, 3, 9))], dtype)
    check(lambda m, x: fn_of(m).max_pool1d(x, k1, s1, p1, d1, ceil, return_indices=True), arr((3, 9), dtype))


def test_max_pool_ties_infinities_and_nan():
    x = np.array([[[[1.0, 1.0, -np.inf], [1.0, np.nan, 2.0], [-np.inf, -np.inf, 3.0]]]], dtype=np.float32)
    check(lambda m, x: fn_of(m).max_pool2d(x, 2, 1, return_indices=True), x)
    check(lambda m, x: fn_of(m).max_pool2d(x, 2, 1), x)  # values alone (no gradient): no positions kept
    check(lambda m, x: fn_of(m).max_pool2d(x, 3, 1, 1, return_indices=True), np.full((1, 1, 3, 3), -np.inf, np.float32))
    # Windows wider than 2 take the maximum down the columns first, then along the rows: ties
    # across both (small integers) must still pick torch's first position, and a NaN must win.
    # 40 columns: runs of 8+ equal windows, which the values-only pass takes a tap at a time.
    ties, wide = (np.random.default_rng(3).integers(0, 3, (2, 3, 11, w)).astype(np.float32) for w in (12, 40))
    with_nan = ties.copy()
    with_nan[0, 0, 4, 5] = with_nan[1, 2, 0, 0] = with_nan[1, 2, 0, 1] = np.nan
    for x in (ties, with_nan, wide):
        for k, s, p in [(3, 2, 1), (3, 1, 0), ((3, 4), (2, 1), (1, 2))]:
            check(lambda m, x: fn_of(m).max_pool2d(x, k, s, p, return_indices=True), x)
            check(lambda m, x: fn_of(m).max_pool2d(x, k, s, p), x)


AVG_POOL_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, False, False, None),
    (3, 2, 1, True, True, None), (3, 2, 1, True, False, None), ((2, 3), (2, 1), (1, 1), True, False, None),
    (3, 2, 1, False, True, 5), (2, 3, 1, True, True, 3),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", AVG_POOL_CASES, ids=[str(c) for c in AVG_POOL_CASES])
def test_avg_pool_matches_torch(case, dtype):
    k, s, p, ceil, cip, div = case
    forward_backward(lambda F, x: F.avg_pool2d(x, k, s, p, ceil, cip, div), [rand((2, 3, 9, 8))], dtype)
    check(lambda m, x: fn_of(m).avg_pool2d(x, k, s, p, ceil, cip, div), arr((3, 9, 8), dtype))
    k1, s1, p1 = (v if isinstance(v, int) or v is None else v[0] for v in (k, s, p))
    forward_backward(lambda F, x: F.avg_pool1d(x, k1, s1, p1, ceil, cip), [rand((2, 3, 10))], dtype)


@pytest.mark.parametrize("size", [(1, 1), (3, 2), (4, 7), (9, 5), 2])
def test_adaptive_pools_match_torch(size):
    forward_backward(lambda F, x: F.adaptive_avg_pool2d(x, size), [rand((2, 3, 9, 7))])
    forward_backward(lambda F, x: F.adaptive_max_pool2d(x, size), [rand((2, 3, 9, 7))])
    check(lambda m, x: fn_of(m).adaptive_max_pool2d(x, size, return_indices=True), arr((3, 9, 7)))
    n = size if isinstance(size, int) else size[0]
    forward_backward(lambda F, x: F.adaptive_avg_pool1d(x, n), [rand((2, 3, 9))], "float64")
    forward_backward(lambda F, x: F.adaptive_max_pool1d(x, n), [rand((2, 3, 9))], "float64")


def t64(shape, seed):
    return ug.tensor(rand(shape, seed)).requires_grad_()


def test_gradcheck_first_and_second_derivatives():
    x, w, b = t64((2, 4, 5, 6), 0), t64((6, 2, 3, 2), 1), t64((6,), 2)
    conv = lambda x, w, b: UF.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    assert ug.autograd.gradcheck(conv, (x, w, b))
    assert ug.autograd.gradgradcheck(conv, (x, w, b))
    wt = t64((4, 3, 3, 2), 3)
    conv_t = lambda x, w: UF.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))
    assert ug.autograd.gradcheck(conv_t, (x, wt))
    assert ug.autograd.gradgradcheck(conv_t, (x, wt))
    assert ug.autograd.gradcheck(lambda x, w: UF.conv1d(x, w, padding="same"), (t64((2, 4, 7), 4), t64((3, 4, 4), 5)))
    pools = lambda x: (UF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                       UF.max_pool2d(x, 2, 1, 1, dilation=2), UF.adaptive_avg_pool2d(x, (2, 4)))
    assert ug.autograd.gradcheck(pools, (x,))
    assert ug.autograd.gradgradcheck(pools, (x,))


def test_double_backward_matches_torch():
    def second(m):
        x = m.tensor(rand((2, 3, 6, 6))).requires_grad_()
        w = m.tensor(rand((4, 3, 3, 3), 1)).requires_grad_()
        F = fn_of(m)
        y = F.max_pool2d(F.conv2d(x, w, padding=1, stride=1).tanh(), 2)
        (gx,) = m.autograd.grad(F.avg_pool2d(y, 2).pow(2).sum(), x, create_graph=True)
        gx.pow(2).sum().backward()
        return x.grad, w.grad
    assert_same(second(torch), second(ug), 1e-9, 1e-10)


def test_vmap_and_jvp():
    xs, w, b = rand((5, 2, 3, 6, 6)), rand((4, 3, 3, 3), 1), rand((4,), 2)
    f = lambda F: (lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, padding=1).relu(), 2).sum())
    per_t = tf.vmap(tf.grad(f(TF), argnums=(0, 1, 2)), in_dims=(0, None, None))(*map(torch.tensor, (xs, w, b)))
    before = ug._C._functional.vmap_fallbacks()
    y_u = ug.vmap(lambda x: UF.avg_pool2d(UF.conv2d(x, ug.tensor(w), ug.tensor(b), stride=2), 2))(ug.tensor(xs))
    assert ug._C._functional.vmap_fallbacks() == before, "conv or pool fell back to the per-example loop"
    y_t = tf.vmap(lambda x: TF.avg_pool2d(TF.conv2d(x, torch.tensor(w), torch.tensor(b), stride=2), 2))(
        torch.tensor(xs))
    assert_same(y_t, y_u, 1e-10, 1e-12)
    per_u = ug.vmap(ug.grad(f(UF), argnums=(0, 1, 2)), in_axes=(0, None, None))(*map(ug.tensor, (xs, w, b)))
    assert_same(tuple(per_t), tuple(per_u), 1e-9, 1e-10)
    # batched weights too (per-example weights meet per-example inputs)
    ws = rand((5, 4, 3, 3, 3), 3)
    g = lambda F: (lambda x, w: F.conv_transpose2d(F.conv2d(x, w, groups=1), w, stride=1))
    assert_same(tf.vmap(g(TF))(torch.tensor(xs), torch.tensor(ws)), ug.vmap(g(UF))(ug.tensor(xs), ug.tensor(ws)),
                1e-9, 1e-10)
    # forward mode
    tx, tw = rand((2, 3, 6, 6), 4), rand((4, 3, 3, 3), 5)
    h = lambda F: (lambda x, w: F.avg_pool2d(F.conv2d(x, w, stride=2, padding=1), 2, 1))
    out_t = tf.jvp(h(TF), (torch.tensor(xs[0]), torch.tensor(w)), (torch.tensor(tx), torch.tensor(tw)))
    out_u = ug.jvp(h(UF), (ug.tensor(xs[0]), ug.tensor(w)), (ug.tensor(tx), ug.tensor(tw)))
    assert_same(tuple(out_t), tuple(out_u), 1e-9, 1e-10)


def test_results_do_not_depend_on_thread_count():
    x, w = ug.tensor(rand((9, 3, 12, 12)), dtype=ug.float32), ug.tensor(rand((5, 3, 3, 3), 1), dtype=ug.float32)
    runs = []
    old = ug.get_num_threads()
    try:
        for n in (1, 2):
            ug.set_num_threads(n)
            xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
            y = UF.max_pool2d(UF.conv2d(xx, ww, padding=1), 2)
            y.pow(2).sum().backward()
            runs.append([y.numpy(), xx.grad.numpy(), ww.grad.numpy()])
    finally:
        ug.set_num_threads(old)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


BAD_CONV = [
    lambda F, x, w: F.conv2d(x[0, 0], w),                      # 2-d input
    lambda F, x, w: F.conv2d(x, w[:, :2]),                     # channel mismatch
    lambda F, x, w: F.conv2d(x, w, groups=2),                  # 3 channels in 2 groups
    lambda F, x, w: F.conv2d(x, w[:3], groups=3),              # 3 groups but 1-channel weights expected
    lambda F, x, w: F.conv2d(x, w, groups=0),
    lambda F, x, w: F.conv2d(x, w, stride=0),
    lambda F, x, w: F.conv2d(x, w, padding=-1),
    lambda F, x, w: F.conv2d(x, w, dilation=0),
    lambda F, x, w: F.conv2d(x, w, stride=(1, 1, 1)),
    lambda F, x, w: F.conv2d(x, w, padding="same", stride=2),
    lambda F, x, w: F.conv2d(x, w, padding="full"),
    lambda F, x, w: F.conv2d(x[:, :, :2, :2], w),              # kernel larger than the input
    lambda F, x, w: F.conv2d(x, w, x[0, 0, 0, :3]),            # bias of the wrong size
    lambda F, x, w: F.conv2d(x, w[0]),                         # 3-d weight
    lambda F, x, w: F.conv2d(x, w.double()),                   # dtype mismatch
    lambda F, x, w: F.conv1d(x, w),
    lambda F, x, w: F.conv_transpose2d(x, w),                  # 3 input channels vs weight.size(0) = 4
    lambda F, x, w: F.conv_transpose2d(x, w[:3], stride=2, output_padding=2),
    lambda F, x, w: F.max_pool2d(x, 2, padding=2),             # pad over half the kernel
    lambda F, x, w: F.max_pool2d(x, 7),                        # output too small
    lambda F, x, w: F.max_pool2d(x, 0),
    lambda F, x, w: F.max_pool2d(x[0, 0], 2),
    lambda F, x, w: F.avg_pool2d(x, 2, divisor_override=0),
    lambda F, x, w: F.avg_pool2d(x, (2, 2, 2)),
    lambda F, x, w: F.adaptive_avg_pool2d(x, (2, -1)),
]


@pytest.mark.parametrize("i", range(len(BAD_CONV)))
def test_bad_arguments_raise_like_torch(i):
    check(lambda m, x, w: BAD_CONV[i](fn_of(m), x, w), arr((2, 3, 5, 5)), arr((4, 3, 3, 3), seed=1))


def test_error_messages_name_the_problem():
    x, w = ug.zeros((1, 3, 8, 8)), ug.zeros((6, 2, 5, 5))
    with pytest.raises(ug.errors.ValueError, match="expected input.*to have 2 channels, but got 3"):
        UF.conv2d(x, w)
    with pytest.raises(ug.errors.ValueError, match="not supported for strided"):
        UF.conv2d(x, ug.zeros((6, 3, 3, 3)), padding="same", stride=2)
    with pytest.raises(ug.errors.TypeError, match="floating-point"):
        UF.conv2d(x.long(), ug.zeros((6, 3, 3, 3)).long())
    with pytest.raises(ug.errors.ValueError, match="pad should be at most half"):
        UF.max_pool2d(x, 3, padding=2)
