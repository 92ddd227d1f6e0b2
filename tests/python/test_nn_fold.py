"""F.unfold / F.fold and nn.Unfold / nn.Fold against torch 2.13: values and gradients (and
float64 finite differences) over kernel sizes, dilations, paddings and strides on odd sizes,
batched and not; the round trip through non-overlapping blocks; printouts and errors. Unfold
only copies values; fold adds at most kh·kw of them (16 here, within the dtype's tolerance)."""
import pytest
import torch

import unigrad as ug
from reference import arr, check_grad

CASES = [  # (image [H, W], kernel_size, dilation, padding, stride)
    ((5, 7), 2, 1, 0, 1),
    ((6, 5), (2, 3), (2, 1), (1, 0), (2, 1)),
    ((7, 7), 3, 1, 1, 2),
    ((4, 9), (1, 4), 1, (0, 2), (1, 3)),
]


@pytest.mark.parametrize("image,k,d,p,s", CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_unfold_matches_torch_with_gradients(image, k, d, p, s, batched):
    shape = (2, 3, *image) if batched else (3, *image)
    check_grad(lambda m, x: m.nn.functional.unfold(x, k, dilation=d, padding=p, stride=s), arr(shape))


@pytest.mark.parametrize("image,k,d,p,s", CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_fold_matches_torch_with_gradients(image, k, d, p, s, batched):
    blocks = torch.nn.functional.unfold(torch.zeros(1, 3, *image), k, dilation=d, padding=p, stride=s).shape[1:]
    shape = (2, *blocks) if batched else tuple(blocks)
    check_grad(lambda m, x: m.nn.functional.fold(x, image, k, dilation=d, padding=p, stride=s), arr(shape))


def test_layers_match_torch_and_print_as_torch():
    x = arr((2, 4, 6, 6), "float64").array
    pairs = [
        (ug.nn.Unfold((2, 3), dilation=1, padding=1, stride=2), torch.nn.Unfold((2, 3), dilation=1, padding=1, stride=2)),
        (ug.nn.Unfold(3), torch.nn.Unfold(3)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        assert torch.equal(torch.from_numpy(ours(ug.tensor(x)).numpy()), theirs(torch.tensor(x)))
    ours, theirs = ug.nn.Fold((6, 6), 2, stride=2), torch.nn.Fold((6, 6), 2, stride=2)
    assert repr(ours) == repr(theirs)
    cols = torch.nn.Unfold(2, stride=2)(torch.tensor(x))
    # Non-overlapping blocks that tile the image: fold undoes unfold exactly.
    assert torch.equal(torch.from_numpy(ours(ug.tensor(cols.numpy())).numpy()), torch.tensor(x))


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    with pytest.raises(ValueError, match=r"\[unfold\] expected a 3-D or 4-D input.*\[5, 7\]"):
        f.unfold(ug.zeros(5, 7), 2)
    with pytest.raises(ValueError, match=r"\[im2col\].*\[1, 1, 3, 3\].*holds no block"):
        f.unfold(ug.zeros(1, 1, 3, 3), 5)
    with pytest.raises(TypeError, match=r"\[unfold\] expected a floating-point input, got int64"):
        f.unfold(ug.zeros(1, 1, 3, 3, dtype=ug.int64), 2)
    with pytest.raises(ValueError, match=r"\[unfold\] kernel_size must be an int or a pair"):
        f.unfold(ug.zeros(1, 1, 3, 3), (1, 2, 3))
    with pytest.raises(ValueError, match=r"\[col2im\] input of shape \[2, 13, 6\] is not \[N, C \* 4, 6\]"):
        f.fold(ug.zeros(2, 13, 6), (3, 4), 2)
    with pytest.raises(ValueError, match=r"\[col2im\] input of shape \[2, 12, 7\]"):
        f.fold(ug.zeros(2, 12, 7), (3, 4), 2)
    with pytest.raises(ValueError, match=r"\[col2im\] dim 0: kernel size 2, dilation 0"):
        f.fold(ug.zeros(2, 12, 6), (3, 4), 2, dilation=0)
    with pytest.raises(ValueError, match=r"\[fold\] expected a 2-D or 3-D input"):
        f.fold(ug.zeros(12), (3, 4), 2)
