"""F.multilabel_margin_loss / nn.MultiLabelMarginLoss and F.triplet_margin_with_distance_loss /
nn.TripletMarginWithDistanceLoss against torch 2.13: target lists of every length (none, all
classes, repeated classes, junk after the -1), 1-D and 2-D input, reductions, custom
distances and swap; values and gradients (and float64 finite differences), printouts, errors.
A row's loss adds at most C² hinges (25 here), stated as the terms of its sum."""
import copy

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check_grad

TARGETS = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 3, 0, 0], [0, 1, 2, 3, 4]], np.int64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch_with_gradients(reduction):
    def fn(m, x, t):
        return m.nn.functional.multilabel_margin_loss(x, t, reduction=reduction)

    def terms(m, x, t):  # each hinge at most 1 + |x_j| + |x_i|: bounded by the row's C² hinges
        return (1 + 2 * x.abs().amax(-1)) * x.shape[-1] if reduction != "mean" else (1 + 2 * x.abs().max()) * 5
    check_grad(fn, arr((4, 5), low=-1, high=1), Arg(TARGETS), terms=terms, n=25)
    check_grad(fn, arr((5,), low=-1, high=1), Arg(TARGETS[0]), terms=terms, n=25)


def test_multilabel_margin_loss_layer_prints_as_torch():
    assert repr(ug.nn.MultiLabelMarginLoss()) == repr(torch.nn.MultiLabelMarginLoss())
    x, t = arr((4, 5)).array, TARGETS
    np.testing.assert_allclose(ug.nn.MultiLabelMarginLoss(reduction="sum")(ug.tensor(x), ug.tensor(t)).numpy(),
                               torch.nn.MultiLabelMarginLoss(reduction="sum")(torch.tensor(x), torch.tensor(t)).numpy(),
                               rtol=1e-5)


def cosine_distance(m):
    return lambda a, b: 1 - m.nn.functional.cosine_similarity(a, b)


@pytest.mark.parametrize("distance", [None, "cosine", "l1"])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_triplet_margin_with_distance_loss_matches_torch_with_gradients(distance, swap, reduction):
    def fn(m, a, p, n):
        d = {None: None, "cosine": cosine_distance(m), "l1": lambda x, y: (x - y).abs().sum(-1)}[distance]
        return m.nn.functional.triplet_margin_with_distance_loss(a, p, n, distance_function=d, margin=0.7, swap=swap,
                                                                 reduction=reduction)

    check_grad(fn, arr((6, 4)), arr((6, 4), seed=1), arr((6, 4), seed=2))


def test_triplet_margin_with_distance_loss_layer_matches_torch():
    a, p, n = (arr((5, 3), seed=s).array for s in range(3))
    ours = ug.nn.TripletMarginWithDistanceLoss(distance_function=cosine_distance(ug), margin=0.5, swap=True)
    theirs = torch.nn.TripletMarginWithDistanceLoss(distance_function=cosine_distance(torch), margin=0.5, swap=True)
    np.testing.assert_allclose(ours(*map(ug.tensor, (a, p, n))).numpy(),
                               theirs(*map(torch.tensor, (a, p, n))).numpy(), rtol=1e-5)
    assert repr(ours) == repr(theirs) == "TripletMarginWithDistanceLoss()"


def test_triplet_margin_with_distance_loss_prints_its_default_distance_as_torch():
    # The default distance (and a distance given as a module) is torch's PairwiseDistance child.
    for kwargs in ({}, {"margin": 2.0, "swap": True}):
        assert repr(ug.nn.TripletMarginWithDistanceLoss(**kwargs)) == repr(torch.nn.TripletMarginWithDistanceLoss(**kwargs))
    ours = ug.nn.TripletMarginWithDistanceLoss(distance_function=ug.nn.PairwiseDistance(p=1.0))
    theirs = torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance(p=1.0))
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()] == ["", "distance_function"]
    a, p, n = (arr((5, 3), seed=s).array for s in range(3))
    for ours, theirs in ((ug.nn.TripletMarginWithDistanceLoss(), torch.nn.TripletMarginWithDistanceLoss()),
                         (ours, theirs)):
        for layer in (ours, copy.deepcopy(ours)):
            np.testing.assert_allclose(layer(*map(ug.tensor, (a, p, n))).numpy(),
                                       theirs(*map(torch.tensor, (a, p, n))).numpy(), rtol=1e-6)


def test_bad_arguments_raise_naming_the_op():
    f = ug.nn.functional
    with pytest.raises(ValueError, match=r"\[multilabel_margin_loss\] expected int64 targets of the input's shape"):
        f.multilabel_margin_loss(ug.zeros(2, 3), ug.zeros(2, 4, dtype=ug.int64))
    with pytest.raises(ValueError, match=r"\[multilabel_margin_loss\] expected a non-empty vector"):
        f.multilabel_margin_loss(ug.zeros(2, 3, 4), ug.zeros(2, 3, 4, dtype=ug.int64))
    with pytest.raises(ValueError, match=r"\[triplet_margin_with_distance_loss\] margin must be greater than 0"):
        f.triplet_margin_with_distance_loss(ug.zeros(2, 3), ug.zeros(2, 3), ug.zeros(2, 3), margin=0.0)
    with pytest.raises(ValueError, match=r"\[TripletMarginWithDistanceLoss\] expected margin to be greater than 0"):
        ug.nn.TripletMarginWithDistanceLoss(margin=-1.0)
