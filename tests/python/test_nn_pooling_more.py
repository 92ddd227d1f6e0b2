"""F.max_unpool1d/2d/3d, F.lp_pool1d/2d/3d, F.local_response_norm, F.channel_shuffle and their
layers against torch 2.13: values and gradients (and float64 finite differences) on odd sizes,
output_size, ceil_mode, p = inf, batched and not; printouts and errors. Unpooling and shuffling
only move values; an lp pool and a response norm add a window's terms (under 16 here)."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check, check_grad

# Windows that do not overlap: a value two windows pick is unpooled once but carries both
# gradients, which finite differences cannot see.
UNPOOL = [  # (dims, input shape, kernel_size, stride, padding, output_size)
    (1, (2, 3, 9), 3, 3, 0, None),
    (2, (2, 3, 7, 6), 2, None, 0, None),
    (2, (3, 8, 7), (3, 2), (3, 2), (1, 0), (8, 7)),
    (3, (1, 2, 4, 6, 5), (2, 3, 2), None, 0, (4, 6, 5)),
]


@pytest.mark.parametrize("dims,shape,k,s,p,out", UNPOOL)
def test_max_unpool_undoes_max_pool_as_torch(dims, shape, k, s, p, out):
    def fn(m, x):
        f = m.nn.functional
        values, indices = getattr(f, f"max_pool{dims}d")(x, k, s, p, return_indices=True)
        return getattr(f, f"max_unpool{dims}d")(values, indices, k, s, p, output_size=out)

    check_grad(fn, arr(shape))


@pytest.mark.parametrize("dims,shape,k,s,ceil", [(1, (2, 3, 9), 3, 2, True), (2, (2, 3, 7, 6), (3, 2), None, False),
                                                 (2, (3, 5, 5), 2, 1, True), (3, (2, 2, 5, 4, 6), 2, (2, 1, 3), False)])
@pytest.mark.parametrize("p", [2.0, 1.5, 3])
def test_lp_pool_matches_torch_with_gradients(dims, shape, k, s, ceil, p):
    # positive inputs: torch's and the root's gradients are finite there
    check_grad(lambda m, x: getattr(m.nn.functional, f"lp_pool{dims}d")(x, p, k, s, ceil), arr(shape, low=0.2))


def test_lp_pool_of_infinite_norm_is_max_pool_of_magnitudes():
    check_grad(lambda m, x: m.nn.functional.lp_pool2d(x, float("inf"), 2), arr((2, 3, 6, 5)))


@pytest.mark.parametrize("shape", [(2, 5, 7), (2, 6, 4, 3), (1, 4, 3, 2, 5)], ids=str)
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm_matches_torch_with_gradients(shape, size):
    check_grad(lambda m, x: m.nn.functional.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5), arr(shape))


@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 2), ((2, 6, 3, 5), 3), ((1, 4, 2, 3, 2), 4)], ids=str)
def test_channel_shuffle_matches_torch(shape, groups):
    check_grad(lambda m, x: m.nn.functional.channel_shuffle(x, groups), arr(shape))
    check(lambda m, x: m.nn.ChannelShuffle(groups)(x), arr(shape))


def test_layers_match_torch_and_print_as_torch():
    x = arr((2, 4, 6, 6), "float64").array
    tx, ux = torch.tensor(x), ug.tensor(x)
    pairs = [
        (ug.nn.LPPool2d(2, 3), torch.nn.LPPool2d(2, 3)),
        (ug.nn.LPPool1d(1.5, 2, stride=1, ceil_mode=True), torch.nn.LPPool1d(1.5, 2, stride=1, ceil_mode=True)),
        (ug.nn.LPPool3d(2, (1, 2, 2)), torch.nn.LPPool3d(2, (1, 2, 2))),
        (ug.nn.LocalResponseNorm(3), torch.nn.LocalResponseNorm(3)),
        (ug.nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2)),
        (ug.nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)),
        (ug.nn.MaxUnpool1d(3, stride=2, padding=1), torch.nn.MaxUnpool1d(3, stride=2, padding=1)),
        (ug.nn.MaxUnpool3d((1, 2, 2)), torch.nn.MaxUnpool3d((1, 2, 2))),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
    for ours, theirs in (pairs[0], pairs[3], pairs[4]):
        np.testing.assert_allclose(ours(ux).numpy(), theirs(tx).numpy(), rtol=1e-12, atol=1e-12)
    values, indices = torch.nn.functional.max_pool2d(tx, 2, return_indices=True)
    ours = ug.nn.MaxUnpool2d(2)(ug.tensor(values.numpy()), ug.tensor(indices.numpy()), output_size=(7, 7))
    assert np.array_equal(ours.numpy(), torch.nn.MaxUnpool2d(2)(values, indices, output_size=(7, 7)).numpy())


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    x, i = ug.zeros(1, 2, 3, 3), ug.zeros(1, 2, 3, 3, dtype=ug.int64)
    with pytest.raises(ValueError, match=r"\[max_unpool2d\] expected a 3-D or 4-D input"):
        f.max_unpool2d(ug.zeros(3, 3), ug.zeros(3, 3, dtype=ug.int64), 2)
    with pytest.raises(ValueError, match=r"\[max_unpool2d\] expected int64 indices of the input's shape"):
        f.max_unpool2d(x, ug.zeros(1, 2, 3, 3), 2)
    with pytest.raises(ValueError, match=r"\[max_unpool2d\] output_size \[9, 6\] is not between 4 and 8"):
        f.max_unpool2d(x, i, 2, output_size=(9, 6))
    with pytest.raises(Exception, match="scatter"):
        f.max_unpool2d(x, i + 40, 2)
    with pytest.raises(ValueError, match=r"\[lp_pool2d\] kernel_size must be an int or 2 ints"):
        f.lp_pool2d(x, 2, (1, 2, 3))
    with pytest.raises(ValueError, match=r"\[channel_shuffle\] number of channels 2 must be divisible by groups"):
        f.channel_shuffle(x, 3)
    with pytest.raises(ValueError, match=r"\[local_response_norm\] expected 3D or higher dimensionality input"):
        f.local_response_norm(ug.zeros(2, 3), 2)
