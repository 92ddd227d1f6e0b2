"""ug.distributions.transforms against torch.distributions.transforms: forward, inverse and
log_abs_det_jacobian on random inputs in float32 and float64, their gradients, domain, codomain,
bijective, sign and shapes; TransformedDistributions through them (over vectors too), and the
transforms' names at ug.distributions' top level as at torch.distributions'."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check, check_grad

DTYPES = ["float32", "float64"]


def transforms(m, dtype):
    t = m.distributions.transforms
    e = m.tensor(np.array([0.5, 2.0, -1.5], dtype))
    return {
        "Tanh": t.TanhTransform(), "Softplus": t.SoftplusTransform(), "Exp": t.ExpTransform(),
        "Sigmoid": t.SigmoidTransform(), "Power": t.PowerTransform(e), "Abs": t.AbsTransform(),
        "Softmax": t.SoftmaxTransform(), "StickBreaking": t.StickBreakingTransform(),
        "Compose": t.ComposeTransform([t.AffineTransform(0.5, -2.0), t.ExpTransform(), t.PowerTransform(e)]),
        "Compose(StickBreaking)": t.ComposeTransform([t.AffineTransform(0.5, 2.0), t.StickBreakingTransform()]),
        "identity": t.identity_transform, "Tanh.inv": t.TanhTransform().inv,
    }


# inputs in each transform's domain: [4, 3] (the positive ones from [0.2, 3])
POSITIVE = {"Power", "Compose.inv", "Abs.inv", "Tanh.inv"}
NO_JACOBIAN = {"Abs", "Softmax"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(transforms(torch, "float32")))
def test_transform_against_torch(name, dtype):
    x = arr((4, 3), dtype, 0.2, 3, 1) if name in POSITIVE else arr((4, 3), dtype, -2, 2, 1)
    if name == "Tanh.inv":
        x = arr((4, 3), dtype, -0.9, 0.9, 1)

    def results(m, x):
        t = transforms(m, dtype)[name]
        y = t(x)
        out = [y, t.inv(y), repr(t.domain), repr(t.codomain), t.domain.event_dim, t.codomain.event_dim, t.bijective,
               tuple(t.forward_shape((2, 4, 3))), tuple(t.inverse_shape((2, 4, 3)))]
        if name not in NO_JACOBIAN:
            out.append(t.log_abs_det_jacobian(x, y))
        return out

    check(results, x)


@pytest.mark.parametrize("name", ["Tanh", "Softplus", "Power", "StickBreaking", "Compose", "Compose(StickBreaking)"])
def test_log_abs_det_jacobian_gradients_against_torch(name):
    x = arr((4, 3), "float64", 0.2, 3, 1) if name in POSITIVE else arr((4, 3), "float64", -2, 2, 1)

    def f(m, x):
        t = transforms(m, "float64")[name]
        return t.log_abs_det_jacobian(x, t(x))

    check_grad(f, x)


def test_sign_and_what_is_not_implemented_as_torch():
    for m in (ug, torch):
        t = transforms(m, "float64")
        assert float(t["Tanh"].sign) == 1.0 and float(t["Tanh.inv"].sign) == 1.0
        np.testing.assert_array_equal(np.asarray(t["Power"].sign), [1.0, 1.0, -1.0])
        np.testing.assert_array_equal(np.asarray(t["Compose"].sign), [-1.0, -1.0, 1.0])
        for name in ["Abs", "Softmax", "StickBreaking"]:
            with pytest.raises(NotImplementedError):
                t[name].sign  # noqa: B018
        for name in NO_JACOBIAN:
            x = m.ones(2, 3, dtype=m.float64)
            with pytest.raises(NotImplementedError):
                t[name].log_abs_det_jacobian(x, x)
    e = ug.distributions.ExpTransform()
    assert type(e.inv.inv) is ug.distributions.ExpTransform
    assert repr(ug.distributions.ComposeTransform([e, ug.distributions.TanhTransform()])) == repr(
        torch.distributions.ComposeTransform([torch.distributions.ExpTransform(), torch.distributions.TanhTransform()]))


def test_transforms_at_the_top_level_as_torch():
    names = [n for n in torch.distributions.transforms.__all__ if hasattr(ug.distributions.transforms, n)]
    assert {"TanhTransform", "PowerTransform", "SoftmaxTransform", "AbsTransform", "SoftplusTransform",
            "ComposeTransform", "StickBreakingTransform", "ExpTransform", "AffineTransform", "SigmoidTransform",
            "Transform", "identity_transform"} <= set(names)
    for n in names:
        assert hasattr(torch.distributions, n) and getattr(ug.distributions, n) is getattr(ug.distributions.transforms, n)


TRANSFORMED = {
    "Tanh": (lambda d, a, b: d.TransformedDistribution(d.Normal(a, b), [d.TanhTransform()]),
             lambda rng: rng.uniform(-0.95, 0.95, (4, 3))),
    "Softplus": (lambda d, a, b: d.TransformedDistribution(d.Normal(a, b), d.SoftplusTransform()),
                 lambda rng: rng.uniform(0.1, 3, (4, 3))),
    "Power": (lambda d, a, b: d.TransformedDistribution(d.Gamma(b, b), [d.PowerTransform(a.abs() + 0.5)]),
              lambda rng: rng.uniform(0.1, 3, (4, 3))),
    "Compose": (lambda d, a, b: d.TransformedDistribution(
        d.Normal(a, b), [d.ComposeTransform([d.AffineTransform(1.0, -0.5), d.TanhTransform()]), d.AffineTransform(2.0, 3.0)]),
        lambda rng: rng.uniform(-0.9, 4.9, (4, 3))),
    # over vectors: the base's last batch dim becomes the event dim, [4, 3] -> [4] of [4]
    "StickBreaking": (lambda d, a, b: d.TransformedDistribution(d.Normal(a, b), [d.StickBreakingTransform()]),
                      lambda rng: rng.dirichlet(np.ones(4), 4)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(TRANSFORMED))
def test_transformed_distribution_against_torch(name, dtype):
    make, values = TRANSFORMED[name]
    value = arr((4, 3), dtype)
    value.array = values(np.random.default_rng(3)).astype(dtype)
    params = [arr((3,), dtype), arr((4, 3), dtype, 0.5, 2, 1)]

    def results(m, a, b, v):
        dist = make(m.distributions, a, b)
        return [tuple(dist.batch_shape), tuple(dist.event_shape), repr(dist.support), dist.log_prob(v),
                tuple(dist.sample((2,)).shape)]

    check(results, *params, value)


def test_transformed_log_prob_gradients_against_torch():
    v = np.random.default_rng(3).dirichlet(np.ones(4), 4)
    check_grad(lambda m, a, b: m.distributions.TransformedDistribution(
        m.distributions.Normal(a, b), [m.distributions.StickBreakingTransform()]).log_prob(m.tensor(v)),
        arr((3,), "float64"), arr((4, 3), "float64", 0.5, 2, 1))
