"""F.adaptive_avg_pool3d / adaptive_max_pool3d (with return_indices), F.conv_transpose3d and
the layers nn.AdaptiveAvgPool3d, AdaptiveMaxPool1d/3d, ConvTranspose1d and ConvTranspose3d
against torch 2.13: values, indices and gradients (and float64 finite differences) on odd
sizes and uneven windows, batched and not; ties; printouts and errors. An adaptive average adds
a window's values (under 16 here); a transposed convolution's output adds in_channels / groups
times the taps that reach it, and its weight's gradient N times the input's positions: those
state their terms."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import ABS, Arg, arr, check, check_grad


@pytest.mark.parametrize("shape,size", [((2, 3, 5, 7, 6), (2, 3, 4)), ((3, 4, 5, 3), 2), ((1, 2, 3, 4, 5), (3, 1, 5))],
                         ids=str)
def test_adaptive_pools_3d_match_torch_with_gradients(shape, size):
    check_grad(lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, size), arr(shape))
    check_grad(lambda m, x: m.nn.functional.adaptive_max_pool3d(x, size), arr(shape))
    check(lambda m, x: m.nn.functional.adaptive_max_pool3d(x, size, return_indices=True)[1], arr(shape))


def test_adaptive_max_pool3d_breaks_ties_as_torch():
    # Values drawn from {0, 1, 2}: most windows hold their maximum several times.
    x = Arg(np.random.default_rng(3).integers(0, 3, (2, 2, 5, 4, 6)).astype(np.float32))
    check(lambda m, a: m.nn.functional.adaptive_max_pool3d(a, (2, 3, 2), return_indices=True), x)
    check_grad(lambda m, a: m.nn.functional.adaptive_max_pool3d(a, (2, 3, 2)), x, off={"fd": "ties: not differentiable"})


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [
    (2, None, 0, 1, False), (3, 1, 1, 1, True), ((2, 3, 2), (1, 2, 1), 0, (2, 1, 1), False), (2, 2, 1, 2, True)],
    ids=str)
def test_max_pool3d_breaks_ties_as_torch(kernel, stride, padding, dilation, ceil_mode):
    # Values drawn from {0, 1, 2}: torch picks the first maximum in (d, h, w) order, for the
    # indices and for where the gradient goes.
    x = Arg(np.random.default_rng(4).integers(0, 3, (2, 2, 5, 6, 5)).astype(np.float64))

    def pool(m, a, return_indices):
        return m.nn.functional.max_pool3d(a, kernel, stride, padding, dilation, ceil_mode, return_indices)

    check(lambda m, a: pool(m, a, True), x)
    check_grad(lambda m, a: pool(m, a, False), x, off={"fd": "ties: not differentiable"})
    check_grad(lambda m, a: pool(m, a, True)[0], x, off={"fd": "ties: not differentiable"})


CONV_T_CASES = [  # (input shape, weight shape, stride, padding, output_padding, groups, dilation)
    ((2, 4, 3, 4, 5), (4, 3, 3, 2, 3), 1, 0, 0, 1, 1),
    ((2, 4, 3, 4, 3), (4, 2, 2, 3, 2), (2, 1, 3), (1, 0, 1), (1, 0, 2), 2, 1),
    ((4, 3, 5, 4), (4, 3, 3, 3, 2), 2, 1, (1, 0, 0), 1, (2, 1, 1)),
    ((1, 2, 2, 3, 3), (2, 2, 1, 2, 2), 3, 0, 0, 1, 1),  # output planes 1 and 2 no tap reaches
    ((2, 2, 3, 4, 3), (2, 2, 2, 1, 2), 1, (0, 1, 0), (1, 1, 2), 1, (2, 2, 3)),  # output_padding >= stride
]


@pytest.mark.parametrize("xs,ws,stride,padding,out_pad,groups,dilation", CONV_T_CASES)
def test_conv_transpose3d_matches_torch_with_gradients(xs, ws, stride, padding, out_pad, groups, dilation):
    def fn(m, x, w, b):
        return m.nn.functional.conv_transpose3d(x, w, b, stride, padding, out_pad, groups, dilation)

    positions = int(np.prod(xs[-3:])) * (xs[0] if len(xs) == 5 else 1)
    n = max(ws[0] // groups * int(np.prod(ws[2:])), positions)
    check_grad(fn, arr(xs, "float64"), arr(ws, "float64", seed=1), arr((ws[1] * groups,), "float64", seed=2),
               terms=ABS, n=n)


def test_layers_match_torch_and_print_as_torch():
    torch.manual_seed(0)
    pairs = [
        (ug.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 7)),
        (ug.nn.ConvTranspose3d(3, 2, (2, 3, 1), stride=(2, 1, 1), bias=False),
         torch.nn.ConvTranspose3d(3, 2, (2, 3, 1), stride=(2, 1, 1), bias=False), (2, 3, 3, 4, 2)),
        (ug.nn.AdaptiveAvgPool3d((2, 1, 3)), torch.nn.AdaptiveAvgPool3d((2, 1, 3)), (2, 3, 5, 4, 7)),
        (ug.nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2), (2, 3, 5, 4, 7)),
        (ug.nn.AdaptiveMaxPool1d(3), torch.nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    ]
    for ours, theirs, shape in pairs:
        assert repr(ours) == repr(theirs)
        with ug.no_grad():
            for name, p in theirs.named_parameters():
                getattr(ours, name).copy_(ug.tensor(p.detach().numpy()))
        x = arr(shape, "float64").array
        # a transposed convolution's output adds in_channels x taps terms: under 16 here
        np.testing.assert_allclose(ours.double()(ug.tensor(x)).detach().numpy(), theirs.double()(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-12, atol=1e-12)


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    with pytest.raises(ValueError, match=r"\[adaptive_avg_pool3d\] expected 4D \(unbatched\) or 5D"):
        f.adaptive_avg_pool3d(ug.zeros(2, 3, 4), 2)
    with pytest.raises(ValueError, match=r"\[adaptive_max_pool3d\] expected output_size to be a single int or a tuple"):
        f.adaptive_max_pool3d(ug.zeros(1, 2, 3, 4, 5), (2, 2))
    x, w = ug.zeros(1, 4, 3, 3, 3), ug.zeros(4, 2, 2, 2, 2)
    with pytest.raises(ValueError, match=r"\[conv_transpose3d\] expected a 5-d weight"):
        f.conv_transpose3d(x, ug.zeros(4, 2, 2, 2))
    with pytest.raises(ValueError, match=r"\[conv_transpose3d\] given groups=3"):
        f.conv_transpose3d(x, w, groups=3)
    with pytest.raises(ValueError, match=r"\[conv_transpose3d\] output padding must be smaller"):
        f.conv_transpose3d(x, w, output_padding=1)
    with pytest.raises(TypeError, match=r"\[conv_transpose3d\] expected input, weight and bias of one dtype"):
        f.conv_transpose3d(x, w.double())
    with pytest.raises(ValueError, match=r"\[conv_transpose3d\] expected a bias of 2 elements"):
        f.conv_transpose3d(x, w, ug.zeros(3))
