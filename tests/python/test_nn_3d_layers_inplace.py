"""nn.BatchNorm3d, nn.InstanceNorm3d, nn.Dropout3d and nn.Softmax2d; the in-place activations
F.relu_, elu_, celu_, selu_, leaky_relu_, hardtanh_, threshold_ (and inplace=True), which
write into their input under autograd's version checks; F.upsample, upsample_nearest and
upsample_bilinear. Against torch 2.13: values, gradients, printouts and errors. A norm's
statistics add the D·H·W (and N) values of a channel: stated as their terms."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check, check_grad, check_layer


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_3d_matches_torch(train):
    ours, theirs = ug.nn.BatchNorm3d(3, momentum=0.2), torch.nn.BatchNorm3d(3, momentum=0.2)
    assert repr(ours) == repr(theirs)
    x = arr((2, 3, 3, 4, 2), "float64").array
    ours.double(), theirs.double()
    if not train:
        ours(ug.tensor(x)), theirs(torch.tensor(x))  # running statistics from one batch first
        ours.eval(), theirs.eval()
    np.testing.assert_allclose(ours(ug.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match=r"\[BatchNorm3d\] expected 5D input, got shape \[2, 3, 4, 2\]"):
        ours(ug.zeros(2, 3, 4, 2))


@pytest.mark.parametrize("shape", [(2, 3, 3, 4, 2), (3, 2, 5, 3)], ids=str)
def test_instance_norm_3d_matches_torch(shape):
    ours, theirs = ug.nn.InstanceNorm3d(3, affine=True), torch.nn.InstanceNorm3d(3, affine=True)
    assert repr(ours) == repr(theirs)
    # the longest sum: a weight's gradient over every sample's D·H·W positions
    check_layer(ours, theirs, arr(shape).array, n=int(np.prod(shape[-3:])) * (shape[0] if len(shape) == 5 else 1))
    with pytest.raises(ValueError, match=r"\[InstanceNorm3d\] expected 4D or 5D input"):
        ours(ug.zeros(2, 3, 4))


def test_dropout3d_zeroes_whole_channels_and_scales_the_rest():
    ug.manual_seed(0)
    layer = ug.nn.Dropout3d(0.4)
    assert repr(layer) == repr(torch.nn.Dropout3d(0.4))
    y = layer(ug.ones(8, 16, 2, 3, 2)).numpy().reshape(8, 16, -1)
    kept = y[:, :, 0] != 0
    assert np.all(y == y[:, :, :1]) and np.allclose(y[kept], 1 / 0.6)  # whole channels, scaled by 1 / (1 - p)
    layer.eval()
    np.testing.assert_array_equal(layer(ug.ones(2, 3, 1, 1, 2)).numpy(), 1.0)


def test_softmax2d_matches_torch():
    check_grad(lambda m, x: m.nn.Softmax2d()(x), arr((2, 3, 4, 5)))
    check_grad(lambda m, x: m.nn.Softmax2d()(x), arr((3, 4, 5)))
    assert repr(ug.nn.Softmax2d()) == repr(torch.nn.Softmax2d())
    with pytest.raises(ValueError, match=r"\[Softmax2d\] expected input to be 3D or 4D, got 2D"):
        ug.nn.Softmax2d()(ug.zeros(3, 4))


INPLACE = [("relu_", {}), ("elu_", {"alpha": 0.7}), ("celu_", {"alpha": 1.3}), ("selu_", {}),
           ("leaky_relu_", {"negative_slope": 0.2}), ("hardtanh_", {"min_val": -0.5, "max_val": 2.0}),
           ("threshold_", {"threshold": 0.3, "value": -1.0})]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_activations_write_into_their_input(name, kw):
    x = arr((3, 5)).array
    ours, theirs = ug.tensor(x), torch.tensor(x)
    getattr(ug.nn.functional, name)(ours, **kw)
    getattr(torch.nn.functional, name)(theirs, **kw)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    # Through a non-leaf: its gradient is the out-of-place form's.
    check_grad(lambda m, a: getattr(m.nn.functional, name)(a * 1.0, **kw), arr((3, 5)))


def test_inplace_activation_trips_autograd_version_check_as_torch():
    for m in (torch, ug):
        a = m.tensor(arr((4,)).array, requires_grad=True)
        b = a * 2.0
        c = b.sin()  # keeps b for its gradient
        m.nn.functional.relu_(b)
        with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
            c.sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        ug.nn.functional.relu_(ug.zeros(3, requires_grad=True))


@pytest.mark.parametrize("layer", ["ReLU", "LeakyReLU", "ELU", "Hardtanh"])
def test_inplace_layers_write_into_their_input(layer):
    x = ug.tensor(arr((6,)).array)
    y = getattr(ug.nn, layer)(inplace=True)(x)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert repr(getattr(ug.nn, layer)(inplace=True)) == repr(getattr(torch.nn, layer)(inplace=True))


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's deprecation warnings
def test_upsample_aliases_match_torch():
    x = arr((2, 3, 4, 5))
    check(lambda m, a: m.nn.functional.upsample(a, scale_factor=2, mode="bilinear", align_corners=False), x)
    check(lambda m, a: m.nn.functional.upsample(a, size=(7, 3)), x)
    check(lambda m, a: m.nn.functional.upsample_nearest(a, scale_factor=(2, 3)), x)
    check_grad(lambda m, a: m.nn.functional.upsample_bilinear(a, size=(6, 9)), x)
