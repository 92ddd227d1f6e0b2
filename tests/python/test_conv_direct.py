"""The direct AVX-512 convolution (cpu_conv_direct.cpp: float32, one group, no dilation;
forward, unit-stride input gradients, weight gradients over 128+ output pixels) against torch on the shapes that exercise its parts: every micro-kernel width (1 to 4
vectors of 16 output channels, output counts not a multiple of 16), every tile size (planes split
into tiles of 1 to 6 pixels, as even as fit), the compiled 1x1, 3x3 and 7x7 windows and the general one, strides and paddings on
each axis, input channels past one block of 64, batches, a batch's pixels in runs that cross
from one sample into the next; and its weight cache: a weight changed in place, or another view
of the same storage, is never read stale, and a weight first seen at its version (packed a pass
at a time as the kernel runs) gives the bits of its packed copy made at the second call. Under UG_CPU_ISA=avx2 or
generic the same cases run the GEMM paths, which these tests then check the same way."""
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad as ug
import unigrad.nn.functional as UF
from reference import ABS, Arg, assert_close, check

CASES = [  # N, C, O, (kh, kw), (sh, sw), (ph, pw), H, W
    (1, 3, 64, (7, 7), (2, 2), (3, 3), 37, 40),     # a stem: 7x7 compiled, stride 2
    (2, 5, 70, (3, 3), (1, 1), (1, 1), 13, 11),     # 64 + 6 channels: a 4- and a 1-vector block
    (1, 130, 33, (3, 3), (1, 1), (1, 1), 9, 7),     # input channels in three blocks; 3 vectors
    (3, 17, 40, (1, 1), (2, 2), (0, 0), 9, 10),     # 1x1 strided, no padded copy; 3 vectors
    (1, 16, 32, (1, 1), (1, 1), (0, 0), 5, 5),      # 1x1 unit stride, 25 pixels
    (2, 4, 130, (5, 5), (2, 2), (2, 2), 12, 17),    # the general window
    (1, 3, 16, (3, 3), (1, 1), (0, 0), 5, 5),       # 9 pixels: one tile and a 3-pixel rest
    (2, 8, 48, (2, 5), (1, 3), (1, 2), 7, 16),      # asymmetric window, stride and padding
    (1, 6, 1, (3, 1), (3, 1), (2, 0), 11, 4),       # one output channel: left to OpenBLAS
    (2, 64, 64, (3, 3), (2, 2), (1, 1), 15, 15),    # strided 3x3, odd size
    (1, 256, 20, (3, 3), (1, 1), (1, 1), 4, 4),     # long sums (2,304 terms), 16 pixels
    (1, 16, 16, (3, 3), (1, 1), (17, 18), 5, 20),   # padding past a whole vector of the padded rows
    (2, 16, 20, (3, 3), (1, 1), (0, 0), 3, 3),      # one pixel: a 1-pixel tile
    (1, 20, 16, (3, 3), (1, 1), (1, 1), 1, 2),      # two pixels; 7 = 4 + 3 below
    (1, 16, 16, (1, 1), (1, 1), (0, 0), 1, 7),
    (2, 16, 70, (3, 3), (1, 1), (1, 1), 25, 23),    # 1,150 pixels: packed weights, a run across samples
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_direct_conv_matches_torch(case, bias):
    N, C, O, k, s, p, H, W = case
    rng = np.random.default_rng(sum(case[1:3]))
    # Past a few hundred terms of random signs the sums cancel to ~sqrt(n) of their magnitude and
    # the derived tolerance would miss a 1e-3 error: long sums get inputs of one sign.
    low = 0.0 if C * k[0] * k[1] > 200 else -1.0
    x = Arg(rng.uniform(low, 1, (N, C, H, W)).astype(np.float32))
    w = Arg(rng.uniform(low, 1, (O, C) + k).astype(np.float32))
    b = Arg(rng.uniform(-1, 1, (O,)).astype(np.float32)) if bias else None

    def conv(m, x, w, b):
        with (torch.no_grad() if m is torch else ug.no_grad()):
            return (TF if m is torch else UF).conv2d(x, w, b, stride=s, padding=p)
    # each output sums C * kh * kw products (and the bias)
    check(conv, x, w, b, terms=ABS, n=C * k[0] * k[1] + bias)


@pytest.mark.parametrize("case", [c for c in CASES if c[4] == (1, 1)], ids=str)
def test_direct_input_gradient_matches_torch(case):
    """A unit-stride convolution's input gradient (conv_transpose2d) is the direct kernel's
    convolution by the rotated, transposed weights: against torch's, forward and through
    backward."""
    N, C, O, k, s, p, H, W = case
    rng = np.random.default_rng(C + O)
    Ho, Wo = H + 2 * p[0] - k[0] + 1, W + 2 * p[1] - k[1] + 1
    low = 0.0 if O * k[0] * k[1] > 200 else -1.0
    g = Arg(rng.uniform(low, 1, (N, O, Ho, Wo)).astype(np.float32))
    w = Arg(rng.uniform(low, 1, (O, C) + k).astype(np.float32))
    check(lambda m, g, w: (TF if m is torch else UF).conv_transpose2d(g, w, padding=p), g, w, terms=ABS,
          n=O * k[0] * k[1])
    gu, wu = ug.tensor(g.array), ug.tensor(w.array)  # packed as it runs, then from the cache: the same bits
    with ug.no_grad():
        assert np.array_equal(*(UF.conv_transpose2d(gu, wu, padding=p).numpy() for _ in range(2)))
    x = rng.uniform(-1, 1, (N, C, H, W)).astype(np.float32)
    xu, wu = ug.tensor(x).requires_grad_(), ug.tensor(w.array)
    UF.conv2d(xu, wu, padding=p).backward(ug.tensor(g.array))
    expected = TF.conv_transpose2d(torch.tensor(g.array).double(), torch.tensor(w.array).double(), padding=p)
    terms = TF.conv_transpose2d(torch.tensor(g.array).double().abs(), torch.tensor(w.array).double().abs(), padding=p)
    assert_close(xu.grad.numpy(), expected.float().numpy(), "float32", terms=terms.numpy(), n=O * k[0] * k[1])


WEIGHT_GRAD_CASES = [  # 128+ output pixels in all: the direct weight gradient's shapes
    (1, 3, 64, (7, 7), (2, 2), (3, 3), 37, 40),     # a stem
    (2, 5, 70, (3, 3), (1, 1), (1, 1), 13, 11),     # a 4- and a 1-vector block of channels
    (2, 17, 40, (1, 1), (2, 2), (0, 0), 25, 24),    # 1x1 strided
    (1, 8, 48, (2, 5), (1, 3), (1, 2), 14, 40),     # asymmetric window, stride and padding
    (2, 130, 20, (3, 3), (1, 1), (1, 1), 12, 12),   # 1,170 taps: two runs of taps
    (3, 16, 20, (3, 3), (1, 1), (1, 1), 7, 7),      # 7x7 planes, three samples in one sum
]


@pytest.mark.parametrize("case", WEIGHT_GRAD_CASES, ids=str)
def test_direct_weight_gradient_matches_torch(case):
    """Each weight element sums N·Ho·Wo products (of one sign here, so that the tolerance
    derived for such long sums still catches a 1e-3 error)."""
    N, C, O, k, s, p, H, W = case
    rng = np.random.default_rng(C * O)
    x = rng.uniform(0, 1, (N, C, H, W)).astype(np.float32)
    w = rng.uniform(-1, 1, (O, C) + k).astype(np.float32)
    Ho, Wo = (H + 2 * p[0] - k[0]) // s[0] + 1, (W + 2 * p[1] - k[1]) // s[1] + 1
    g = rng.uniform(0, 1, (N, O, Ho, Wo)).astype(np.float32)
    wu = ug.tensor(w).requires_grad_()
    UF.conv2d(ug.tensor(x), wu, stride=s, padding=p).backward(ug.tensor(g))
    wt = torch.tensor(w).double().requires_grad_()
    TF.conv2d(torch.tensor(x).double(), wt, stride=s, padding=p).backward(torch.tensor(g).double())
    assert_close(wu.grad.numpy(), wt.grad.float().numpy(), "float32", terms=wt.grad.abs().numpy(), n=N * Ho * Wo)


def test_grouped_and_dilated_take_the_gemm_path():
    """Shapes the direct kernel leaves to the GEMM paths, through the same entry point."""
    rng = np.random.default_rng(3)
    x = Arg(rng.uniform(-1, 1, (2, 8, 11, 9)).astype(np.float32))
    for w_shape, kw in [((8, 2, 3, 3), {"groups": 4, "padding": 1}), ((6, 8, 3, 3), {"dilation": 2, "padding": 2})]:
        w = Arg(rng.uniform(-1, 1, w_shape).astype(np.float32))
        check(lambda m, x, w: (TF if m is torch else UF).conv2d(x, w, **kw), x, w, terms=ABS,
              n=w_shape[1] * 9)


def run(x, w, **kw):
    with ug.no_grad():
        return UF.conv2d(x, w, **kw).numpy()


def twice(x, w, **kw):
    """Two calls with one weight: the first packs it as it runs, the second into the cache (or,
    past one run of pixels per block, both read the cache); the same bits either way."""
    first = run(x, w, **kw)
    second = run(x, w, **kw)
    assert np.array_equal(first, second)
    return first


def close(got, x, w, **kw):
    """got against torch's conv2d, within what sums of C·kh·kw terms may differ by."""
    xt, wt = torch.tensor(x.numpy()).double(), torch.tensor(w.numpy()).double()
    terms = TF.conv2d(xt.abs(), wt.abs(), **kw).numpy()
    n = int(np.prod(w.shape[1:]))
    assert_close(got, TF.conv2d(xt, wt, **kw).float().numpy(), "float32", terms=terms, n=n)


@pytest.mark.parametrize("C,size", [(8, 9), (16, 46)], ids=["direct", "winograd"])
def test_weight_changed_in_place_is_packed_again(C, size):
    """The packed weights, and on a plane of 23x23+ tiles Winograd's cached filters."""
    rng = np.random.default_rng(4)
    x = ug.tensor(rng.uniform(-1, 1, (1, C, size, size)).astype(np.float32))
    w = ug.tensor(rng.uniform(-1, 1, (24, C, 3, 3)).astype(np.float32))
    first = twice(x, w, padding=1)
    close(first, x, w, padding=1)
    w.mul_(-0.5)  # in place: the same storage, a new version
    changed = twice(x, w, padding=1)
    assert not np.allclose(changed, first)
    close(changed, x, w, padding=1)
    w[3].fill_(0.25)  # through a view of the weight
    close(twice(x, w, padding=1), x, w, padding=1)
    w.copy_(ug.tensor(rng.uniform(-1, 1, (24, C, 3, 3)).astype(np.float32)))
    close(twice(x, w, padding=1), x, w, padding=1)


def test_views_of_one_storage_are_packed_apart():
    rng = np.random.default_rng(5)
    x = ug.tensor(rng.uniform(-1, 1, (1, 4, 6, 6)).astype(np.float32))
    both = ug.tensor(rng.uniform(-1, 1, (2, 16, 4, 3, 3)).astype(np.float32))
    for w in (both[0], both[1], both[1].transpose(2, 3)):  # other offsets, other strides
        close(run(x, w), x, w)


def test_optimizer_step_reaches_the_next_forward():
    rng = np.random.default_rng(6)
    conv = ug.nn.Conv2d(3, 20, 3, padding=1)
    x = ug.tensor(rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    opt = ug.optim.SGD(conv.parameters(), lr=0.5)
    for _ in range(2):
        with ug.no_grad():
            y = conv(x).numpy()
        close(y, x, conv.weight, bias=torch.tensor(conv.bias.numpy()).double(), padding=1)
        opt.zero_grad()
        conv(x).square().sum().backward()
        opt.step()


def direct_kernel_runs():
    """Whether convolutions here take the direct kernel: an AVX-512 CPU, UG_CPU_ISA not capping it."""
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f " in f.read()
    return avx512 and (os.environ.get("UG_CPU_ISA") or "avx512") == "avx512"


def test_channels_with_equal_weights_come_out_bit_equal():
    """The direct kernel runs each output channel's sums in one order (the light SqueezeNet zoo
    graph needs this of a model whose channels hold one value); OpenBLAS's rows do not promise
    it, so the GEMM paths are held to the tolerance alone."""
    rng = np.random.default_rng(7)
    x = ug.tensor(rng.uniform(-1, 1, (1, 70, 13, 13)).astype(np.float32))
    one = rng.uniform(-1, 1, (1, 70, 3, 3)).astype(np.float32)
    w = ug.tensor(np.repeat(one, 83, axis=0))
    y = run(x, w, padding=1)
    close(y, x, w, padding=1)
    if direct_kernel_runs():
        assert (y == y[:, :1]).all()


def test_a_deleted_weight_leaves_the_cache_at_the_next_call():
    """The cache holds each packed weight's storage (so that no other tensor can take its
    address); once nothing else holds the weight, the next convolution lets both go. (A weight
    is packed into the cache at its second call at one version.)"""
    rng = np.random.default_rng(8)
    x = ug.tensor(rng.uniform(-1, 1, (1, 256, 6, 6)).astype(np.float32))
    small = ug.tensor(rng.uniform(-1, 1, (16, 256, 1, 1)).astype(np.float32))
    twice(x, small)  # its block is cached before the baseline
    base = ug.memory.allocated()
    w = ug.tensor(rng.uniform(-1, 1, (256, 256, 3, 3)).astype(np.float32))  # 2.4 MB, and as much packed
    twice(x, w, padding=1)
    copies = 2 if direct_kernel_runs() else 1  # the weight, and its packed block
    assert ug.memory.allocated() >= base + copies * w.numel() * 4
    del w
    run(x, small)
    assert ug.memory.allocated() < base + 256 * 1024
