"""ug.data.transforms against torchvision's formulas written with torch ops (torchvision is
not a dependency): ToTensor, Normalize, flips, crops with every padding mode, on one image
and on batches, and their randomness per image under ug.manual_seed."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import unigrad as ug
from unigrad.data import transforms as T


def images(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- ToTensor -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 3), (4, 5, 7, 3)])
def test_to_tensor_matches_torchvision(shape):
    a = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    t = torch.from_numpy(a)
    if a.ndim == 2:
        expected = t.unsqueeze(0).float().div(255)
    elif a.ndim == 3:
        expected = t.permute(2, 0, 1).float().div(255)
    else:
        expected = t.permute(0, 3, 1, 2).float().div(255)
    for source in (a, ug.tensor(a)):  # a NumPy array or a tensor
        x = T.ToTensor()(source)
        assert x.dtype == ug.float32 and x.shape == tuple(expected.shape)
        np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_to_tensor_passes_float_and_rejects_other_types():
    x = ug.randn(1, 4, 4)
    assert T.ToTensor()(x) is not None and np.array_equal(T.ToTensor()(x).numpy(), x.numpy())
    with pytest.raises(TypeError, match=r"\[ToTensor\] expected uint8"):
        T.ToTensor()(ug.zeros(3, 4, dtype=ug.int32))
    with pytest.raises(TypeError, match=r"\[ToTensor\]"):
        T.ToTensor()(ug.zeros(3, dtype=ug.uint8))


# ---- Normalize ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 5, 6), (4, 3, 5, 6)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalize_matches_torchvision(shape, dtype):
    a = images(shape, dtype)
    mean, std = [0.1, -0.2, 0.3], [0.5, 1.5, 0.25]
    t = torch.from_numpy(a.copy())
    # torchvision.transforms.functional.normalize: sub_ then div_ in the image's dtype.
    m = torch.as_tensor(mean, dtype=t.dtype).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=t.dtype).view(-1, 1, 1)
    expected = t.sub(m).div(s)
    x = T.Normalize(mean, std)(ug.tensor(a))
    assert x.dtype == ug.tensor(a).dtype and x.shape == shape
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_normalize_one_value_for_all_channels_and_inplace():
    a = images((2, 3, 4, 4))
    expected = (torch.from_numpy(a) - np.float32(0.5)) / np.float32(0.25)
    np.testing.assert_array_equal(T.Normalize((0.5,), (0.25,))(ug.tensor(a)).numpy(), expected.numpy())
    np.testing.assert_array_equal(T.Normalize(0.5, 0.25)(ug.tensor(a)).numpy(), expected.numpy())
    from_arrays = T.Normalize(np.array([0.5], np.float32), torch.tensor([0.25]))(ug.tensor(a))
    np.testing.assert_array_equal(from_arrays.numpy(), expected.numpy())
    x = ug.tensor(a)
    y = T.Normalize([0.5], [0.25], inplace=True)(x)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    np.testing.assert_array_equal(y.numpy(), expected.numpy())
    assert T.Normalize([0.5], [0.25]).mean == [0.5]


def test_normalize_errors():
    with pytest.raises(ValueError, match=r"\[Normalize\] mean \[0.1, 0.2\] has 2 values for an image with 3 channels"):
        T.Normalize([0.1, 0.2], [1.0])(ug.zeros(3, 4, 4))
    with pytest.raises(ValueError, match="zero"):
        T.Normalize([0.0], [0.0])
    with pytest.raises(TypeError, match="float32 or float64"):
        T.Normalize([0.0], [1.0])(ug.zeros(1, 4, 4, dtype=ug.uint8))
    with pytest.raises(ValueError, match=r"expected an image \(C, H, W\)"):
        T.Normalize([0.0], [1.0])(ug.zeros(4, 4))


# ---- RandomHorizontalFlip -------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 5, 6), (8, 2, 5, 6), (5, 6)])
def test_flip_always_and_never(shape):
    a = images(shape)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(ug.tensor(a)).numpy(),
                                  torch.flip(torch.from_numpy(a), [-1]).numpy())
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(ug.tensor(a)).numpy(), a)


def test_flip_draws_per_image_and_repeats_under_a_seed():
    a = images((64, 1, 4, 5))
    flipped = np.flip(a, -1)
    ug.manual_seed(3)
    x = T.RandomHorizontalFlip()(ug.tensor(a)).numpy()
    choices = [bool(np.array_equal(x[i], flipped[i])) for i in range(64)]
    for i in range(64):
        assert np.array_equal(x[i], flipped[i] if choices[i] else a[i])
    assert 10 < sum(choices) < 54
    ug.manual_seed(3)
    np.testing.assert_array_equal(T.RandomHorizontalFlip()(ug.tensor(a)).numpy(), x)
    u = ug.tensor(np.random.default_rng(0).integers(0, 256, (2, 3, 4, 5), dtype=np.uint8))
    assert T.RandomHorizontalFlip(1.0)(u).dtype == ug.uint8
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        T.RandomHorizontalFlip(1.5)


# ---- RandomCrop ---------------------------------------------------------------------------

def torch_padded(a, padding, mode, fill):
    """The padded image as torchvision pads it: (left, top, right, bottom)."""
    left, top, right, bottom = padding
    t = torch.from_numpy(a)
    if mode == "symmetric":  # torch has no symmetric mode; NumPy has
        widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
        return torch.from_numpy(np.pad(a, widths, mode="symmetric"))
    torch_mode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}[mode]
    squeeze = t.dim() == 3
    t = t.unsqueeze(0) if squeeze else t
    out = F.pad(t, (left, right, top, bottom), mode=torch_mode, value=fill) if torch_mode == "constant" \
        else F.pad(t, (left, right, top, bottom), mode=torch_mode)
    return out.squeeze(0) if squeeze else out


def crop_offsets(crop, padded):
    """Every (top, left) at which crop equals a window of padded."""
    h, w = crop.shape[-2:]
    return [(i, j) for i in range(padded.shape[-2] - h + 1) for j in range(padded.shape[-1] - w + 1)
            if np.array_equal(padded[..., i:i + h, j:j + w], crop)]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("padding,expanded", [(2, (2, 2, 2, 2)), ((1, 3), (1, 3, 1, 3)), ((0, 1, 2, 3), (0, 1, 2, 3))])
def test_crop_is_a_window_of_the_torch_padded_image(mode, padding, expanded):
    a = images((16, 2, 6, 7))
    ug.manual_seed(0)
    out = T.RandomCrop((5, 6), padding=padding, fill=1.5, padding_mode=mode)(ug.tensor(a)).numpy()
    assert out.shape == (16, 2, 5, 6)
    padded = torch_padded(a, expanded, mode, 1.5).numpy()
    offsets = set()
    for i in range(16):
        found = crop_offsets(out[i], padded[i])
        assert found, f"image {i} is no window of the padded image"
        offsets.update(found)
    assert len(offsets) > 3  # each image draws its own place


def test_crop_of_one_image_and_of_hw_and_uint8():
    a = images((3, 8, 8))
    out = T.RandomCrop(4, padding=1)(ug.tensor(a)).numpy()
    assert out.shape == (3, 4, 4) and crop_offsets(out, torch_padded(a, (1, 1, 1, 1), "constant", 0).numpy())
    hw = T.RandomCrop([3, 5])(ug.tensor(a[0])).numpy()
    assert hw.shape == (3, 5) and crop_offsets(hw, a[0])
    u = np.random.default_rng(0).integers(0, 256, (2, 1, 6, 6), dtype=np.uint8)
    out = T.RandomCrop(6, padding=2, fill=7)(ug.tensor(u))
    assert out.dtype == ug.uint8
    padded = np.pad(u, [(0, 0), (0, 0), (2, 2), (2, 2)], constant_values=7)
    assert all(crop_offsets(out.numpy()[i], padded[i]) for i in range(2))
    # The full size without padding is the image itself.
    np.testing.assert_array_equal(T.RandomCrop((8, 8))(ug.tensor(a)).numpy(), a)


def test_crop_pad_if_needed_and_errors():
    a = images((1, 3, 4))
    out = T.RandomCrop((5, 6), pad_if_needed=True)(ug.tensor(a)).numpy()
    # As torchvision: both sides padded by the shortfall.
    padded = np.pad(a, [(0, 0), (2, 2), (2, 2)])
    assert out.shape == (1, 5, 6) and crop_offsets(out, padded)
    with pytest.raises(ValueError, match=r"crop size \(5, 6\) is larger than the padded image \(3, 4\)"):
        T.RandomCrop((5, 6))(ug.tensor(a))
    with pytest.raises(ValueError, match="too large to reflect"):
        T.RandomCrop(3, padding=3, padding_mode="reflect")(ug.tensor(a))
    with pytest.raises(ValueError, match="padding_mode must be"):
        T.RandomCrop(3, padding_mode="wrap")
    with pytest.raises(ValueError, match="1, 2 or 4 values"):
        T.RandomCrop(3, padding=(1, 2, 3))
    with pytest.raises(ValueError, match="size must be positive"):
        T.RandomCrop(0)


def test_crop_repeats_under_a_seed():
    a = ug.tensor(images((32, 1, 10, 10)))
    crop = T.RandomCrop(6, padding=2)
    ug.manual_seed(11)
    first = crop(a).numpy()
    ug.manual_seed(11)
    np.testing.assert_array_equal(crop(a).numpy(), first)


# ---- Compose and Lambda ---------------------------------------------------------------------

def test_compose_with_lambdas_and_plain_callables():
    a = np.random.default_rng(0).integers(0, 256, (4, 6, 6, 1), dtype=np.uint8)
    pipeline = T.Compose([T.ToTensor(), T.Normalize([0.5], [0.5]), T.Lambda(lambda x: x * 2), lambda x: x + 1])
    expected = (torch.from_numpy(a).permute(0, 3, 1, 2).float().div(255).sub(0.5).div(0.5)) * 2 + 1
    np.testing.assert_allclose(pipeline(a).numpy(), expected.numpy(), rtol=1e-6)
    assert repr(pipeline).startswith("Compose(\n    ToTensor()\n    Normalize(mean=[0.5], std=[0.5])\n    Lambda()")
    f = pipeline.transforms[3]
    assert callable(f) and f(ug.tensor(1.0)).item() == 2.0
    assert pipeline.transforms[2].lambd(ug.tensor(3.0)).item() == 6.0
    # A callable's NumPy result becomes a tensor; a wrong result type is an error.
    assert T.Lambda(lambda x: np.ones(2))(ug.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="callable"):
        T.Compose([3])
    with pytest.raises(TypeError):
        T.Lambda(5)


def test_reprs():
    assert repr(T.RandomHorizontalFlip(0.3)) == "RandomHorizontalFlip(p=0.3)"
    assert repr(T.ToTensor()) == "ToTensor()"
    assert repr(T.RandomCrop(28, padding=4)).startswith("RandomCrop(size=(28, 28), padding=(4, 4, 4, 4)")
