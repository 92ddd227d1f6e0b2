"""F.poisson_nll_loss / nn.PoissonNLLLoss and F.gaussian_nll_loss / nn.GaussianNLLLoss against
torch 2.13: every option, the shapes var may take, its clamp (in value, not in gradient), the
layers' printouts and the errors. Each loss is a mean of a few elementwise terms per element, so
values agree within a few eps of their terms' sizes."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def close(ours, theirs, scale=1.0, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=1e-12 * scale)


@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_poisson_nll_loss_and_its_gradient_match_torch(log_input, full, reduction):
    x = RNG.uniform(0.1, 3.0, (4, 5)) if not log_input else RNG.standard_normal((4, 5))
    t = RNG.integers(0, 6, (4, 5)).astype(np.float64)
    ours_x, theirs_x = ug.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = ug.nn.PoissonNLLLoss(log_input, full, reduction=reduction)(ours_x, ug.tensor(t))
    theirs = torch.nn.PoissonNLLLoss(log_input, full, reduction=reduction)(theirs_x, torch.tensor(t))
    close(ours.detach().numpy(), theirs.detach().numpy(), scale=100)
    ours.sum().backward()
    theirs.sum().backward()
    close(ours_x.grad.numpy(), theirs_x.grad.numpy(), scale=100)


VAR_SHAPES = [(4, 3), (4,), (4, 1)]  # input [4, 3]: heteroscedastic, one dim short, last dim 1


@pytest.mark.parametrize("var_shape", VAR_SHAPES, ids=str)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_nll_loss_and_its_gradients_match_torch(var_shape, full, reduction):
    x, t = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    v = RNG.uniform(0.0, 2.0, var_shape)
    v.flat[0] = 1e-9  # below eps: clamped in value, its gradient passed through at eps
    args = [(ug.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in (x, t, v)]
    ours = ug.nn.GaussianNLLLoss(full=full, reduction=reduction)(*(a for a, _ in args))
    theirs = torch.nn.GaussianNLLLoss(full=full, reduction=reduction)(*(b for _, b in args))
    close(ours.detach().numpy(), theirs.detach().numpy(), scale=100)
    ours.sum().backward()
    theirs.sum().backward()
    # var's gradient at a clamped entry divides by eps^2 (about 5e11): relative there.
    for (a, b), rtol in zip(args, (1e-12, 1e-12, 1e-10)):
        close(a.grad.numpy(), b.grad.numpy(), scale=100, rtol=rtol)


def test_gaussian_nll_loss_takes_a_float_var_as_torch():
    x, t = RNG.standard_normal(6), RNG.standard_normal(6)
    ours = ug.nn.functional.gaussian_nll_loss(ug.tensor(x), ug.tensor(t), 0.5, eps=1e-3)
    theirs = torch.nn.functional.gaussian_nll_loss(torch.tensor(x), torch.tensor(t), 0.5, eps=1e-3)
    close(ours.numpy(), theirs.numpy(), scale=10)


def test_printouts_match_torch():
    for ours, theirs in [(ug.nn.PoissonNLLLoss(), torch.nn.PoissonNLLLoss()),
                         (ug.nn.GaussianNLLLoss(full=True), torch.nn.GaussianNLLLoss(full=True))]:
        assert repr(ours) == repr(theirs)


def test_bad_arguments_raise_naming_the_op():
    x = ug.zeros(4, 3)
    with pytest.raises(ValueError, match=r"\[gaussian_nll_loss\] var is of incorrect size: \[4, 2\]"):
        ug.nn.functional.gaussian_nll_loss(x, x, ug.ones(4, 2))
    with pytest.raises(ValueError, match=r"\[gaussian_nll_loss\] var has negative entry"):
        ug.nn.functional.gaussian_nll_loss(x, x, -ug.ones(4, 3))
    with pytest.raises(ValueError, match=r"\[poisson_nll_loss\].*reduction"):
        ug.nn.functional.poisson_nll_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="var is of incorrect size"):
        torch.nn.functional.gaussian_nll_loss(torch.zeros(4, 3), torch.zeros(4, 3), torch.ones(4, 2))
