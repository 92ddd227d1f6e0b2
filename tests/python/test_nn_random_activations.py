"""F.gumbel_softmax and F.rrelu / nn.RReLU. Their draws are not torch's, so what is checked is
what they draw: the hard Gumbel-softmax's classes follow softmax(logits) (a chi-square-free
check: each class's frequency within 5 standard errors of its probability over n seeded
draws), soft samples are distributions, the straight-through gradient is the soft sample's;
RReLU's training slopes lie in [lower, upper] with mean (lower + upper) / 2 within 5 standard
errors, its evaluation matches torch (the mean slope), its gradient is its slope."""
import warnings

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check_grad

N = 20000


def test_hard_gumbel_softmax_draws_classes_with_softmax_probabilities():
    ug.manual_seed(0)
    logits = np.array([1.0, -0.5, 0.3, 2.0, 0.0], np.float32)
    draws = ug.nn.functional.gumbel_softmax(ug.tensor(np.tile(logits, (N, 1))), tau=0.7, hard=True).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0} and np.all(draws.sum(1) == 1)
    p = np.exp(logits) / np.exp(logits).sum()  # the argmax of logits + Gumbel noise: tau does not matter
    np.testing.assert_array_less(np.abs(draws.mean(0) - p), 5 * np.sqrt(p * (1 - p) / N))


def test_soft_gumbel_softmax_samples_are_distributions_along_dim():
    ug.manual_seed(1)
    y = ug.nn.functional.gumbel_softmax(ug.tensor(arr((4, 6, 3)).array), tau=2.0, dim=1).numpy()
    assert y.shape == (4, 6, 3) and np.all(y > 0)
    np.testing.assert_allclose(y.sum(1), 1.0, rtol=1e-6)


def test_hard_gumbel_softmax_passes_the_soft_samples_gradient_straight_through():
    logits = ug.tensor(arr((3, 4)).array, requires_grad=True)
    w = ug.tensor(arr((3, 4), seed=1).array)
    ug.manual_seed(2)
    (ug.nn.functional.gumbel_softmax(logits, hard=True) * w).sum().backward()
    hard_grad = logits.grad.numpy().copy()
    logits.grad = None
    ug.manual_seed(2)  # the same noise: the soft sample the hard one was taken from
    (ug.nn.functional.gumbel_softmax(logits) * w).sum().backward()
    np.testing.assert_array_equal(hard_grad, logits.grad.numpy())


def test_rrelu_training_slopes_are_uniform_in_the_bounds():
    ug.manual_seed(3)
    x = -np.ones(N, np.float32)
    slopes = -ug.nn.functional.rrelu(ug.tensor(x), 0.1, 0.4, training=True).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4
    std = 0.3 / np.sqrt(12)
    assert abs(slopes.mean() - 0.25) < 5 * std / np.sqrt(N)
    positive = ug.nn.functional.rrelu(ug.tensor(-x), 0.1, 0.4, training=True).numpy()
    np.testing.assert_array_equal(positive, -x)


def test_rrelu_gradient_is_the_drawn_slope():
    x = ug.tensor(arr((50,)).array, requires_grad=True)
    y = ug.nn.functional.rrelu(x, training=True)
    y.sum().backward()
    xs = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.where(xs >= 0, 1.0, y.detach().numpy() / xs), rtol=1e-6)


@pytest.mark.parametrize("lower,upper", [(1 / 8, 1 / 3), (0.0, 0.5)])
def test_rrelu_in_evaluation_matches_torch(lower, upper):
    check_grad(lambda m, x: m.nn.functional.rrelu(x, lower, upper), arr((3, 5)))


def test_rrelu_layer_draws_in_training_only_and_prints_as_torch():
    layer, x = ug.nn.RReLU(0.2, 0.3), ug.tensor(arr((400,), high=-0.5).array)
    assert repr(layer) == repr(torch.nn.RReLU(0.2, 0.3)) == "RReLU(lower=0.2, upper=0.3)"
    ratio = (layer(x) / x).numpy()
    assert ratio.std() > 0 and ratio.min() >= 0.2 - 1e-7 and ratio.max() <= 0.3 + 1e-7
    layer.eval()
    np.testing.assert_allclose((layer(x) / x).numpy(), 0.25, rtol=1e-6)
    inplace = ug.tensor(-np.ones(3, np.float32))
    ug.nn.functional.rrelu(inplace, inplace=True)
    np.testing.assert_allclose(inplace.numpy(), -(1 / 8 + 1 / 3) / 2, rtol=1e-6)


def test_gumbel_softmax_eps_warns_as_torch_and_changes_nothing():
    # torch's eps is deprecated and unused: given (other than its default 1e-10), it warns
    logits = ug.tensor(arr((3, 5)).array)
    ug.manual_seed(7)
    plain = ug.nn.functional.gumbel_softmax(logits)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ug.nn.functional.gumbel_softmax(logits, eps=1e-10)
    for fw, x in ((torch.nn.functional, torch.tensor(arr((3, 5)).array)), (ug.nn.functional, logits)):
        with pytest.warns(UserWarning, match=r"`eps` parameter is deprecated and has no effect\."):
            fw.gumbel_softmax(x, eps=1e-3)
    ug.manual_seed(7)
    with pytest.warns(UserWarning):
        given = ug.nn.functional.gumbel_softmax(logits, eps=0.5)
    np.testing.assert_array_equal(given.numpy(), plain.numpy())


def test_bad_arguments_raise_naming_the_op():
    with pytest.raises(ValueError, match=r"\[gumbel_softmax\] tau must be positive"):
        ug.nn.functional.gumbel_softmax(ug.zeros(3), tau=0.0)
    with pytest.raises(TypeError, match=r"\[gumbel_softmax\] expected floating-point logits"):
        ug.nn.functional.gumbel_softmax(ug.zeros(3, dtype=ug.int64))
    with pytest.raises(ValueError, match=r"\[rrelu\] lower bound 0.5 must not exceed upper bound 0.1"):
        ug.nn.functional.rrelu(ug.zeros(3), 0.5, 0.1, training=True)
