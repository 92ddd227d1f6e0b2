"""F.grid_sample and F.affine_grid against torch 2.13: every mode and padding mode, both
align_corners, grid points well outside the input, odd sizes, 4-D and 5-D; values and the
gradients of the input and the grid against torch and float64 finite differences; the errors.
A sample adds at most 4 (bilinear), 8 (trilinear) or 16 (bicubic) weighted values and an
affine grid point 3 or 4 products: short sums, within the dtypes' tolerances."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_grad


def grid(*shape, seed=1, dtype="float32"):
    """Points in [-1.8, 1.8): beyond the input's border on every side."""
    return arr(shape, dtype, low=-1.8, high=1.8, seed=seed)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_4d_matches_torch_with_gradients(mode, padding, align):
    def fn(m, x, g):
        # torch gives nearest sampling's grid no gradient at all; unigrad gives it zero
        return m.nn.functional.grid_sample(x, g.detach() if mode == "nearest" else g, mode, padding, align)

    # Bicubic's grid gradient adds 48 terms (3 channels, 16 taps) of magnitudes up to about 20
    # that nearly cancel in places, past float32's rtol; in float64 K·48·eps·Σ|terms| < 1e-12,
    # the float64 atol.
    dtype = "float64" if mode == "bicubic" else "float32"
    check_grad(fn, arr((2, 3, 5, 7), dtype), grid(2, 4, 3, 2, dtype=dtype))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_5d_matches_torch_with_gradients(mode, padding, align):
    def fn(m, x, g):
        return m.nn.functional.grid_sample(x, g.detach() if mode == "nearest" else g, mode, padding, align)

    check_grad(fn, arr((2, 2, 3, 4, 5)), grid(2, 3, 2, 2, 3))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 5, 1), (2, 1, 3, 4, 2)], ids=str)
@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")  # torch on a size of 1
def test_affine_grid_matches_torch_with_gradients(align, size):
    r = len(size) - 2
    check_grad(lambda m, t: m.nn.functional.affine_grid(t, size, align_corners=align), arr((2, r, r + 1)))


def test_a_rotation_resamples_as_torch():
    # The usual pairing: rotate a batch by the grid of its affine maps.
    angle = np.array([0.3, -1.1])
    theta = np.stack([np.stack([np.cos(angle), -np.sin(angle), 0.1 + 0 * angle], -1),
                      np.stack([np.sin(angle), np.cos(angle), -0.2 + 0 * angle], -1)], 1)

    def fn(m, t, x):
        g = m.nn.functional.affine_grid(t, list(x.shape), align_corners=False)
        return m.nn.functional.grid_sample(x, g, align_corners=False)

    check_grad(fn, Arg(theta.astype(np.float32)), arr((2, 3, 6, 5)))


def test_default_align_corners_is_false_as_torch():
    x, g = arr((1, 2, 3, 4)), grid(1, 2, 2, 2)
    with pytest.warns(UserWarning):
        check(lambda m, a, b: m.nn.functional.grid_sample(a, b), x, g)


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    x, g = ug.zeros(1, 2, 3, 4), ug.zeros(1, 5, 6, 2)
    with pytest.raises(TypeError, match=r"\[grid_sample\] expected input and grid of the same dtype, got float32 "
                                        r"and float64"):
        f.grid_sample(x, g.double())
    with pytest.raises(ValueError, match=r"\[grid_sample\] expected a grid \[1, \.\.\., 2\].*\[1, 2, 3, 4\], got "
                                         r"\[2, 5, 6, 2\]"):
        f.grid_sample(x, ug.zeros(2, 5, 6, 2))
    with pytest.raises(ValueError, match=r"\[grid_sample\] expected a grid"):
        f.grid_sample(x, ug.zeros(1, 5, 6, 3))
    with pytest.raises(ValueError, match=r"\[grid_sample\] mode must be 'bilinear', 'nearest' or 'bicubic', got "
                                         r"'cubic'"):
        f.grid_sample(x, g, mode="cubic")
    with pytest.raises(ValueError, match=r"\[grid_sample\] padding_mode must be .* got 'wrap'"):
        f.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(ValueError, match=r"\[grid_sample\] expected an input \[N, C, \*spatial\]"):
        f.grid_sample(ug.zeros(2, 3), g)
    with pytest.raises(TypeError, match=r"\[grid_sample\] expected a floating-point input, got int64"):
        f.grid_sample(ug.zeros(1, 2, 3, 4, dtype=ug.int64), g)
    with pytest.raises(ValueError, match=r"\[affine_grid\] size must be \[N, C, H, W\] or \[N, C, D, H, W\]"):
        f.affine_grid(ug.zeros(2, 2, 3), (2, 3, 4))
    with pytest.raises(ValueError, match=r"\[affine_grid\] expected theta of shape \[2, 2, 3\].*got \[2, 3, 3\]"):
        f.affine_grid(ug.zeros(2, 3, 3), (2, 3, 4, 5))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices"):
        torch.nn.functional.affine_grid(torch.zeros(2, 3, 3), (2, 3, 4, 5), False)
