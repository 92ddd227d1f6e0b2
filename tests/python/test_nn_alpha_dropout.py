"""AlphaDropout, FeatureAlphaDropout and F.feature_alpha_dropout against torch's: each element
(or channel) is either dropped to torch's constant or mapped by torch's affine map, the drop rate
is p, SELU's zero mean and unit variance are kept (bounds from the sample's own spread), and the
layers are the identity in eval."""
import numpy as np
import pytest
import torch

import unigrad as ug
import unigrad.nn.functional as F

ALPHA = 1.7580993408473766  # SELU's -alpha * scale, torch's constant


def affine(p):
    a = 1 / np.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    return a, ALPHA * a * p, ALPHA * a * (p - 1)  # scale, shift of kept values, dropped value


def selu_input(*shape, seed=0):
    """SELU of standard normals: mean 0 and variance 1, the inputs alpha dropout is made for."""
    return torch.selu(torch.tensor(np.random.default_rng(seed).standard_normal(shape))).numpy()


def units(y, kept, x, p):
    """Checks each unit (element or channel) is dropped or mapped; returns the kept fraction."""
    a, shift, dropped = affine(p)
    np.testing.assert_allclose(y[~kept], dropped, rtol=1e-12)
    np.testing.assert_allclose(y[kept], (a * x + shift)[kept], rtol=1e-12, atol=1e-12)
    return kept.mean()


def check_statistics(per_unit):
    """Mean 0 and second moment 1 within 5 standard errors of the unit averages (units are
    independent: elements for AlphaDropout, channels for FeatureAlphaDropout)."""
    m = per_unit.reshape(per_unit.shape[0], -1)
    n = m.shape[0]
    for values, target in ((m.mean(1), 0.0), ((m ** 2).mean(1), 1.0)):
        assert abs(values.mean() - target) <= 5 * values.std() / np.sqrt(n) + 1e-12, (values.mean(), target)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_units_rate_and_statistics(p):
    ug.manual_seed(0)
    x = selu_input(200_000)
    layer = ug.nn.AlphaDropout(p)
    assert repr(layer) == repr(torch.nn.AlphaDropout(p))
    y = layer(ug.tensor(x)).numpy()
    kept = ~np.isclose(y, affine(p)[2], rtol=0, atol=1e-12)  # SELU never gives the x a kept one would need
    rate = units(y, kept, x, p)
    assert abs(rate - (1 - p)) <= 5 * np.sqrt(p * (1 - p) / x.size)
    check_statistics(y[:, None])
    # torch's on the same input: the same moments within the same bounds.
    t = torch.nn.AlphaDropout(p)(torch.tensor(x)).numpy()
    check_statistics(t[:, None])


@pytest.mark.parametrize("p", [0.3])
def test_feature_alpha_dropout_drops_whole_channels(p):
    ug.manual_seed(1)
    x = selu_input(400, 50, 8)
    layer = ug.nn.FeatureAlphaDropout(p)
    assert repr(layer) == repr(torch.nn.FeatureAlphaDropout(p))
    y = layer(ug.tensor(x)).numpy()
    a, shift, dropped = affine(p)
    channel_dropped = np.all(np.isclose(y, dropped, rtol=0, atol=1e-12), axis=2)
    kept = np.broadcast_to(~channel_dropped[:, :, None], x.shape)
    rate = units(y, kept, x, p)
    assert abs(rate - (1 - p)) <= 5 * np.sqrt(p * (1 - p) / (400 * 50))
    check_statistics(y.reshape(400 * 50, 8))
    f = F.feature_alpha_dropout(ug.tensor(x), p, training=True).numpy()
    f_dropped = np.all(np.isclose(f, dropped, rtol=0, atol=1e-12), axis=2)
    assert abs(f_dropped.mean() - p) <= 5 * np.sqrt(p * (1 - p) / (400 * 50))


def test_gradient_is_the_kept_scale():
    ug.manual_seed(2)
    p = 0.4
    x = ug.tensor(selu_input(1000), requires_grad=True)
    y = ug.nn.AlphaDropout(p)(x)
    y.sum().backward()
    a, _, dropped = affine(p)
    kept = ~np.isclose(y.detach().numpy(), dropped, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0), rtol=1e-12)


def test_eval_identity_edges_and_errors():
    x = ug.tensor(selu_input(4, 3, 5))
    for layer in (ug.nn.AlphaDropout(0.5), ug.nn.FeatureAlphaDropout(0.5)):
        layer.eval()
        np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    np.testing.assert_array_equal(F.feature_alpha_dropout(x, 0.5).numpy(), x.numpy())  # training=False by default
    np.testing.assert_array_equal(F.feature_alpha_dropout(x, 1.0, True).numpy(),
                                  torch.nn.functional.feature_alpha_dropout(torch.tensor(x.numpy()), 1.0, True).numpy())
    y = x.clone()
    out = F.feature_alpha_dropout(y, 0.5, True, inplace=True)
    np.testing.assert_array_equal(out.numpy(), y.numpy())
    with pytest.raises(ValueError, match="feature_alpha_dropout"):
        F.feature_alpha_dropout(ug.ones(5), 0.5, True)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.feature_alpha_dropout(x, 1.5, True)
    with pytest.raises(ValueError, match="AlphaDropout"):
        ug.nn.AlphaDropout(-0.1)
