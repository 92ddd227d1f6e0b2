"""In-place ops on values that record gradients: eager gradients against torch 2.13's, and the
same gradients from compiled programs (jit(grad), grad(jit), jit(vmap(grad))).

An in-place op on such a value runs out of place and rebases the value's history; its saved
tensors must not be the value it then writes, and a capture must see the write as the op's.
"""
import numpy as np
import pytest
import torch

import unigrad as ug

# name -> the in-place call on y (a value made from x), for torch and unigrad alike
IN_PLACE = {
    # their derivative reads the op's output, which the rebase computed apart from y
    "exp_": lambda m, y, x: y.exp_(),
    "relu_": lambda m, y, x: y.relu_(),
    "sigmoid_": lambda m, y, x: y.sigmoid_(),
    "tanh_": lambda m, y, x: y.tanh_(),
    "sqrt_": lambda m, y, x: y.sqrt_(),
    # bound as out-of-place op + copy_: the op must not save y itself
    "erfc_": lambda m, y, x: y.erfc_(),
    "copysign_": lambda m, y, x: y.copysign_(x - 0.5),
    "float_power_": lambda m, y, x: y.float_power_(x + 1),
    "clamp_min_": lambda m, y, x: y.clamp_min_(0.4),
    "clamp_max_": lambda m, y, x: y.clamp_max_(0.4),
    "renorm_": lambda m, y, x: y.renorm_(2, 0, 0.5),
    "polygamma_": lambda m, y, x: y.polygamma_(1),
    "digamma_": lambda m, y, x: y.digamma_(),
    "lerp_": lambda m, y, x: y.lerp_(x * 0.5, 0.3),
    "hypot_": lambda m, y, x: y.hypot_(x),
    # rebased through other ops (where, a scatter)
    "masked_fill_": lambda m, y, x: y.masked_fill_(x > 0.5, 0.5),
    "index_put_": lambda m, y, x: y.index_put_((m.tensor([2, 0]),), x[1] * 3),
    "fill_diagonal_": lambda m, y, x: y.fill_diagonal_(0.1),
    "mul_": lambda m, y, x: y.mul_(x),
}


def loss(m, op, x):
    y = x * 0.9 + 0.05
    IN_PLACE[op](m, y, x)
    return (y * x).sum() + y.sum()


def x_values():
    return np.random.default_rng(0).uniform(0.1, 0.9, (3, 3))


@pytest.mark.parametrize("op", IN_PLACE)
def test_the_eager_gradient_is_torchs(op):
    xt = torch.tensor(x_values(), requires_grad=True)
    loss(torch, op, xt).backward()
    got = ug.grad(lambda x: loss(ug, op, x))(ug.tensor(x_values()))
    # A few float64 operations per element: a few ulps, far under 1e-12 of the values near 1.
    # torch's trigamma (digamma's and polygamma(1)'s derivative) is good to about 5e-10 against
    # mpmath on these values, where unigrad's is good to 1e-15.
    rtol = 2e-9 if op in ("digamma_", "polygamma_") else 1e-12
    np.testing.assert_allclose(got.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("transform", ["jit(grad)", "grad(jit)", "jit(vmap(grad))"])
@pytest.mark.parametrize("op", IN_PLACE)
def test_a_program_gives_the_eager_gradient(op, transform):
    def f(x):
        return loss(ug, op, x)

    x = ug.tensor(x_values())
    want = ug.grad(f)(x)
    if transform == "jit(grad)":
        got = ug.jit(ug.grad(f))(x)
    elif transform == "grad(jit)":
        got = ug.grad(ug.jit(f))(x)
    else:
        got = ug.jit(ug.vmap(ug.grad(f)))(ug.stack([x, x * 0.5]))
        want = ug.stack([want, ug.grad(f)(x * 0.5)])
    # the same float64 ops in the same order, but a fused pass may contract a product and a sum
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-13)
