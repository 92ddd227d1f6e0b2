"""F.pdist, F.bilinear and nn.Bilinear against torch 2.13: values and gradients (and float64
finite differences), printouts, errors. A distance adds M terms; a bilinear output adds
in1 · in2 products (its weight's gradient N of them), stated where past 16."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import ABS, arr, check_grad


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf")])
@pytest.mark.parametrize("shape", [(5, 3), (2, 7), (1, 4)], ids=str)
def test_pdist_matches_torch_with_gradients(p, shape):
    check_grad(lambda m, x: m.nn.functional.pdist(x, p), arr(shape))


@pytest.mark.parametrize("lead", [(5,), (2, 3), ()], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch_with_gradients(lead, bias):
    args = [arr((*lead, 4)), arr((*lead, 5), seed=1), arr((3, 4, 5), seed=2)] + ([arr((3,), seed=3)] if bias else [])
    check_grad(lambda m, *a: m.nn.functional.bilinear(*a), *args, terms=ABS, n=21)


def test_bilinear_layer_matches_torch_and_prints_as_torch():
    ours, theirs = ug.nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    assert repr(ours) == repr(theirs) and repr(ug.nn.Bilinear(3, 4, 2, bias=False)) == repr(
        torch.nn.Bilinear(3, 4, 2, bias=False))
    assert ours.weight.shape == (2, 3, 4) and ours.bias.shape == (2,)
    bound = 1 / np.sqrt(3)  # torch's initialisation: U(-1/sqrt(in1), 1/sqrt(in1)) for both
    assert np.abs(ours.weight.detach().numpy()).max() <= bound and np.abs(ours.bias.detach().numpy()).max() <= bound
    with ug.no_grad():
        ours.weight.copy_(ug.tensor(theirs.weight.detach().numpy()))
        ours.bias.copy_(ug.tensor(theirs.bias.detach().numpy()))
    a, b = arr((5, 3)).array, arr((5, 4), seed=1).array
    np.testing.assert_allclose(ours(ug.tensor(a), ug.tensor(b)).detach().numpy(),
                               theirs(torch.tensor(a), torch.tensor(b)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    with pytest.raises(ValueError, match=r"\[pdist\] expected a 2-D input"):
        f.pdist(ug.zeros(2, 3, 4))
    with pytest.raises(ValueError, match=r"\[pdist\] only supports non-negative p"):
        f.pdist(ug.zeros(2, 3), -1.0)
    with pytest.raises(ValueError, match=r"\[bilinear\] input batch dimensions do not match"):
        f.bilinear(ug.zeros(2, 3), ug.zeros(3, 4), ug.zeros(5, 3, 4))
    with pytest.raises(ValueError, match=r"\[bilinear\] input sizes 3 and 4 do not match weight \[5, 3, 5\]"):
        f.bilinear(ug.zeros(2, 3), ug.zeros(2, 4), ug.zeros(5, 3, 5))
    with pytest.raises(TypeError, match=r"\[bilinear\] expected inputs, weight and bias of one dtype"):
        f.bilinear(ug.zeros(2, 3), ug.zeros(2, 4), ug.zeros(5, 3, 4).double())
