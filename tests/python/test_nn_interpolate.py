"""F.interpolate (every mode: nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area;
bilinear and bicubic with antialias) and nn.Upsample, UpsamplingNearest2d and UpsamplingBilinear2d against torch's: the source
indices and weights exactly (on one-hot inputs each output is the weight it takes
from the hot position), values and gradients on random inputs with float64 finite differences,
printouts, and the errors for bad sizes, modes and dims.

torch's CPU kernels disagree with themselves where an output size is the input's or twice it
but scale_factor is not 1 or 2 (int(5 * 1.04) = 5): its 3-D and 5-D forwards index with
1 / scale_factor, its backwards and its 4-D nearest forward (below 128 elements a dim) copy or
halve. unigrad follows the former (its gradient is then its forward's), so the 4-D cases here
avoid those sizes."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad as ug
import unigrad.nn.functional as UF
from reference import ABS, arr, check_grad, check_layer


def F(m):
    return TF if m is torch else UF


def one_hot(spatial, dtype):
    """[1, K, *spatial] with K = prod(spatial): channel k is 1 at the k-th position, 0 elsewhere."""
    k = int(np.prod(spatial))
    return np.eye(k, dtype=dtype).reshape(1, k, *spatial)


def same_as_torch(x, rtol=0.0, atol=0.0, **kwargs):
    """ug's interpolate equals torch's bit for bit (rtol, atol: where torch's kernel rounds a product
    of two weights plus another once, with an FMA, and unigrad twice), or both reject the arguments."""
    try:
        expected = TF.interpolate(torch.tensor(x), **kwargs).numpy()
    except RuntimeError as e:  # sizes that reach 0
        with pytest.raises(ValueError, match="greater than 0"):
            UF.interpolate(ug.tensor(x), **kwargs)
        assert "greater than 0" in str(e)
        return
    np.testing.assert_allclose(UF.interpolate(ug.tensor(x), **kwargs).numpy(), expected, rtol=rtol, atol=atol,
                               err_msg=str(kwargs))


def two_roundings(dtype):
    return 2 * np.finfo(dtype).eps


# Scales that land on float32's rounding of 1 / s or of i / s (1.04, 1/3, 2.2), halves, and
# sizes below, at and above twice the input (nearest's shift), including 1.
SCALES = [0.3, 1 / 3, 0.5, 0.7, 1.0, 1.04, 1.3, 1.5, 2.0, 2.2, 2.5, 2.9, 3.0, 3.7]
SIZES = [1, 2, 3, 4, 6, 9, 13, 20, 40]
INPUT_SIZES = [1, 2, 3, 5, 7, 10, 20]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None), ("linear", False),
                                                ("linear", True)])
def test_1d_indices_and_weights_match_torch_exactly(mode, align_corners, dtype):
    for n in INPUT_SIZES:
        x = one_hot((n,), dtype)
        for size in SIZES:
            same_as_torch(x, size=size, mode=mode, align_corners=align_corners)
        for s in SCALES:
            for recompute in (None, True):
                same_as_torch(x, scale_factor=s, mode=mode, align_corners=align_corners,
                              recompute_scale_factor=recompute)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None), ("bilinear", False),
                                                ("bilinear", True)])
def test_2d_indices_and_weights_match_torch_exactly(mode, align_corners, dtype):
    for hw in [(3, 5), (4, 4), (1, 6), (7, 2)]:
        x = one_hot(hw, dtype)
        for size in [(5, 8), (2, 3), (8, 10), (7, 1), 6]:
            same_as_torch(x, two_roundings(dtype), size=size, mode=mode, align_corners=align_corners)
        for s in [(1.5, 2.7), (0.7, 3.0), (2.0, 1.7), 2.5, 1 / 3]:
            for recompute in (None, True):
                same_as_torch(x, two_roundings(dtype), scale_factor=s, mode=mode, align_corners=align_corners,
                              recompute_scale_factor=recompute)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_indices_and_weights_match_torch(align_corners, dtype):
    # Keys' cubic with A = -0.75 over the pixels index - 1 .. index + 2, clamped to the input.
    # Each weight is a cubic whose terms' sizes add to at most 36 (8|A| x + ... + 4|A| at x < 2),
    # evaluated with and without FMA contraction (torch's kernels, unigrad's): a few eps times
    # 36 apart. Each output is a product of two weights (each below 1.25 in size), near a border
    # summed over the taps that land on one pixel: within 64 eps.
    tol = 64 * np.finfo(dtype).eps
    for hw in [(3, 5), (4, 4), (1, 6), (7, 2)]:
        x = one_hot(hw, dtype)
        for kwargs in [{"size": (5, 8)}, {"size": (2, 3)}, {"size": (8, 10)}, {"size": 6},
                       {"scale_factor": (1.5, 2.7)}, {"scale_factor": (0.7, 3.0)}, {"scale_factor": 1 / 3},
                       {"scale_factor": 2.5, "recompute_scale_factor": True}]:
            same_as_torch(x, tol, tol, mode="bicubic", align_corners=align_corners, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias_indices_and_weights_match_torch(mode, align_corners, dtype):
    # The filter (a triangle, or the cubic with A = -0.5 whose terms' sizes add to at most 24)
    # widened by the downscale, its window cut at the borders, its weights divided by their
    # sum: each weight a few eps times those terms off between torch's evaluation and ours, and
    # each output a product of two (each below 1.25 in size): within 64 eps.
    # No output here is 1 wide with several rows: test_antialias_to_one_column_as_torch_transposed.
    tol = 64 * np.finfo(dtype).eps
    for hw in [(12, 15), (5, 9), (1, 7), (16, 7)]:
        x = one_hot(hw, dtype)
        for kwargs in [{"size": (4, 5)}, {"size": (3, 2)}, {"size": 1}, {"size": (12, 15)}, {"size": (20, 31)},
                       {"scale_factor": (0.4, 0.7)}, {"scale_factor": 1 / 3}, {"scale_factor": (2.5, 0.3)}]:
            same_as_torch(x, tol, tol, mode=mode, align_corners=align_corners, antialias=True, **kwargs)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_to_one_column_as_torch_transposed(mode):
    # torch 2.13's antialiased kernel gives every row the first row's value when the output is
    # one column wide ([16, 2] -> [5, 1]); resampling the transpose ([2, 16] -> [1, 5]) it gets
    # right, and that is unigrad's answer either way.
    x = np.random.default_rng(0).standard_normal((1, 2, 16, 2))
    ours = UF.interpolate(ug.tensor(x), size=(5, 1), mode=mode, antialias=True).numpy()
    transposed = TF.interpolate(torch.tensor(x).transpose(2, 3), size=(1, 5), mode=mode, antialias=True)
    np.testing.assert_allclose(ours, transposed.transpose(2, 3).numpy(), rtol=0, atol=64 * np.finfo(np.float64).eps)
    buggy = TF.interpolate(torch.tensor(x), size=(5, 1), mode=mode, antialias=True).numpy()
    assert np.all(buggy == buggy[:, :, :1]) and not np.allclose(ours, buggy)


ANTIALIAS = [((2, 2, 16, 20), {"size": (9, 13), "mode": "bilinear"}),
             ((2, 2, 16, 20), {"size": (9, 13), "mode": "bicubic"}),
             ((2, 2, 12, 10), {"scale_factor": (0.5, 0.4), "mode": "bicubic", "align_corners": True}),
             ((2, 2, 4, 5), {"size": (7, 9), "mode": "bilinear"})]


@pytest.mark.parametrize("shape,kwargs", ANTIALIAS, ids=[str(c) for c in ANTIALIAS])
def test_antialias_values_and_gradients_match_torch(shape, kwargs):
    # Downsampling by about 2 widens the cubic's 4 taps a dim to 9: sums of up to 81 products
    # of weights of either sign; the bound takes twice that many terms of fn's size on the
    # magnitudes.
    check_grad(lambda m, x: F(m).interpolate(x, antialias=True, **kwargs), arr(shape), terms=ABS, n=162)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("spatial,size", [((11,), 4), ((7,), 7), ((5,), 9), ((7, 9), (3, 5)), ((4, 6), (8, 3)),
                                          ((5, 7, 9), (2, 3, 4)), ((3, 4, 5), (6, 4, 2))])
def test_area_is_adaptive_average_pooling_as_in_torch(spatial, size, dtype):
    # Each output is the mean of at most ceil(n / m) + 1 pixels a dim: a sum of k one-hot terms
    # over k, exact in any order but for the division's rounding (and 5-D's two of them).
    x = one_hot(spatial, dtype)
    expected = TF.interpolate(torch.tensor(x), size=size, mode="area").numpy()
    np.testing.assert_allclose(UF.interpolate(ug.tensor(x), size=size, mode="area").numpy(), expected,
                               rtol=4 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None), ("trilinear", False),
                                                ("trilinear", True)])
def test_3d_indices_and_weights_match_torch_exactly(mode, align_corners):
    x = one_hot((2, 3, 4), "float64")
    for kwargs in [{"size": (3, 5, 7)}, {"size": 2}, {"scale_factor": (1.5, 0.7, 2.2)},
                   {"scale_factor": 2.0, "recompute_scale_factor": True}]:
        same_as_torch(x, two_roundings("float64"), mode=mode, align_corners=align_corners, **kwargs)


# (input shape, interpolate's keywords): every mode on random inputs, gradients included
CASES = [
    ((2, 3, 5), {"size": 8}), ((2, 3, 5), {"scale_factor": 2.0}), ((2, 3, 7), {"scale_factor": 0.6}),
    ((2, 3, 5), {"scale_factor": 1.7, "mode": "nearest-exact"}),
    ((2, 3, 5), {"size": 9, "mode": "linear"}), ((2, 3, 6), {"scale_factor": 0.7, "mode": "linear"}),
    ((2, 3, 5), {"scale_factor": 2.5, "mode": "linear", "align_corners": True}),
    ((2, 2, 4, 5), {"size": (7, 3)}), ((2, 2, 4, 5), {"scale_factor": (1.5, 2.0), "mode": "nearest-exact"}),
    ((2, 2, 4, 5), {"size": (6, 9), "mode": "bilinear"}),
    ((2, 2, 4, 5), {"scale_factor": 1.3, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 2, 4, 5), {"scale_factor": (0.6, 2.2), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 3, 2, 4), {"scale_factor": 1.5, "mode": "trilinear"}),
    ((2, 3, 7), {"size": 3, "mode": "area"}), ((2, 2, 5, 7), {"size": (2, 4), "mode": "area"}),
    ((2, 2, 4, 5), {"scale_factor": 1.5, "mode": "area"}),
    ((1, 2, 5, 4, 3), {"size": (2, 3, 2), "mode": "area"}),
]


@pytest.mark.parametrize("shape,kwargs", CASES, ids=[str(c) for c in CASES])
def test_values_and_gradients_match_torch(shape, kwargs):
    # Each input gradient adds the cotangents of the outputs it reaches: a few per dim.
    check_grad(lambda m, x: F(m).interpolate(x, **kwargs), arr(shape))


BICUBIC = [((2, 2, 4, 5), {"size": (7, 3)}), ((2, 2, 4, 5), {"scale_factor": (1.7, 0.6), "align_corners": True}),
           ((2, 2, 3, 3), {"scale_factor": 2.0})]


@pytest.mark.parametrize("shape,kwargs", BICUBIC, ids=[str(c) for c in BICUBIC])
def test_bicubic_values_and_gradients_match_torch(shape, kwargs):
    # Each output weighs 4 x 4 pixels, with weights of either sign (their sizes add to about
    # 1.3 a dim), and each input gradient adds the cotangents of the outputs it reaches: sums
    # of about 16 terms, summed in another order than torch's, each term's weight itself a few
    # roundings off; the bound takes twice that many terms of fn's size on the magnitudes.
    check_grad(lambda m, x: F(m).interpolate(x, mode="bicubic", **kwargs), arr(shape), terms=ABS, n=32)


def test_nearest_takes_integer_inputs():
    x = np.arange(24, dtype=np.int64).reshape(1, 2, 3, 4)
    np.testing.assert_array_equal(UF.interpolate(ug.tensor(x), scale_factor=(1.5, 0.5)).numpy(),
                                  TF.interpolate(torch.tensor(x).double(), scale_factor=(1.5, 0.5)).long().numpy())


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


MODULES = [
    ("Upsample", {"scale_factor": 2}, (2, 3, 4, 5)),
    ("Upsample", {"size": (5, 7), "mode": "bilinear"}, (2, 3, 4, 5)),
    ("Upsample", {"scale_factor": (1.5, 2.5), "mode": "bilinear", "align_corners": True}, (2, 3, 4, 5)),
    ("Upsample", {"size": 9, "mode": "linear"}, (2, 3, 4)),
    ("Upsample", {"scale_factor": 1.7, "mode": "nearest-exact", "recompute_scale_factor": True}, (2, 3, 4)),
    ("Upsample", {"scale_factor": 1.5, "mode": "trilinear"}, (1, 2, 3, 2, 4)),
    ("Upsample", {"scale_factor": 2, "mode": "bicubic", "align_corners": True}, (2, 3, 4, 5)),
    ("Upsample", {"size": (2, 3), "mode": "area"}, (2, 3, 4, 5)),
    ("UpsamplingNearest2d", {"size": (4, 6)}, (2, 3, 3, 5)),
    ("UpsamplingNearest2d", {"scale_factor": 3}, (2, 3, 3, 5)),
    ("UpsamplingBilinear2d", {"scale_factor": 2}, (2, 3, 3, 5)),
    ("UpsamplingBilinear2d", {"size": 5}, (2, 3, 3, 5)),
]


@pytest.mark.parametrize("name,kwargs,shape", MODULES, ids=[f"{m[0]}{m[1]}" for m in MODULES])
def test_upsampling_modules_match_torch(name, kwargs, shape):
    u, t = getattr(ug.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    check_layer(u, t, rand(*shape))
    assert repr(u) == repr(t)


def test_upsample_printouts_match_torch():
    for kwargs in [{}, {"size": 4}, {"size": (4, 5)}, {"scale_factor": 0.5, "mode": "bilinear"},
                   {"scale_factor": (2, 3), "mode": "nearest-exact"}]:
        assert repr(ug.nn.Upsample(**kwargs)) == repr(torch.nn.Upsample(**kwargs))


x4 = np.zeros((1, 2, 3, 4), np.float32)
ERRORS = [  # (input, interpolate's keywords, error class, message)
    (x4, {}, ValueError, "either size or scale_factor"),
    (x4, {"size": 3, "scale_factor": 2.0}, ValueError, "only one of size or scale_factor"),
    (x4, {"size": (2, 3, 4)}, ValueError, "same number of spatial dimensions"),
    (x4, {"scale_factor": (2.0, 2.0, 2.0)}, ValueError, "same number of spatial dimensions"),
    (x4, {"size": 3, "recompute_scale_factor": True}, ValueError, "recompute_scale_factor is not meaningful"),
    (x4, {"scale_factor": 2.0, "align_corners": True}, ValueError, "align_corners option can only be set"),
    (x4, {"size": (0, 2)}, ValueError, "greater than 0"),
    (x4, {"scale_factor": -2.0}, ValueError, "greater than 0"),
    (x4, {"scale_factor": 0.1}, ValueError, "greater than 0"),
    (x4, {"scale_factor": 1e20}, ValueError, "does not fit in int64"),
    (np.zeros((2, 1, 0, 4), np.float32), {"scale_factor": 2.0}, ValueError, "greater than 0"),
    (x4, {"scale_factor": 2.0, "mode": "linear"}, ValueError, "4D input, but linear mode needs 3D input"),
    (x4[0], {"scale_factor": 2.0, "mode": "bilinear"}, ValueError, "3D input, but bilinear mode needs 4D input"),
    (x4, {"scale_factor": 2.0, "mode": "trilinear"}, ValueError, "trilinear mode needs 5D input"),
    (x4[0], {"scale_factor": 2.0, "mode": "bicubic"}, ValueError, "3D input, but bicubic mode needs 4D input"),
    (x4, {"size": 2, "mode": "area", "align_corners": True}, ValueError, "align_corners option can only be set"),
    (x4.astype(np.int64), {"size": 2, "mode": "area"}, TypeError, "floating point input"),
    (x4.astype(np.int64), {"size": 2, "mode": "bicubic"}, TypeError, "floating point input"),
    (x4, {"scale_factor": 2.0, "mode": "foo"}, ValueError, "unsupported mode 'foo'"),
    (x4[0, 0], {"scale_factor": 2.0}, ValueError, r"3-D, 4-D or 5-D input .* got shape \[3, 4\]"),
    (x4.astype(np.int64), {"scale_factor": 2.0, "mode": "bilinear"}, TypeError, "floating point input"),
    (x4, {"scale_factor": 2.0, "antialias": True}, ValueError, "antialias"),
    (x4[0], {"size": 2, "mode": "linear", "antialias": True}, ValueError, "antialias=True is restricted"),
    (x4, {"size": 2, "mode": "area", "antialias": True}, ValueError, "antialias=True is restricted"),
]


@pytest.mark.parametrize("x,kwargs,error,match", ERRORS, ids=[str(e[1]) for e in ERRORS])
def test_bad_arguments_raise_naming_the_op(x, kwargs, error, match):
    with pytest.raises(error, match=r"\[interpolate\] .*" + match):
        UF.interpolate(ug.tensor(x), **kwargs)
    with pytest.raises(Exception):  # torch rejects them too (antialias: for the nearest mode)
        TF.interpolate(torch.tensor(x), **kwargs)


def test_upsample_checks_when_called_as_torch():
    up = ug.nn.Upsample(scale_factor=2, mode="foo")
    assert repr(up) == repr(torch.nn.Upsample(scale_factor=2, mode="foo"))
    with pytest.raises(ValueError, match="unsupported mode 'foo'"):
        up(ug.tensor(x4))
    with pytest.raises(ValueError, match="either size or scale_factor"):
        ug.nn.Upsample()(ug.tensor(x4))
