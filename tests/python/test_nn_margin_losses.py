"""The margin and embedding losses (MarginRankingLoss, HingeEmbeddingLoss, SoftMarginLoss,
MultiLabelSoftMarginLoss, TripletMarginLoss, MultiMarginLoss) against torch's: the functions'
values and gradients for every reduction and option (float64 finite differences too), the
modules' outputs, gradients, printouts and state dicts, and the errors for bad input."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import unigrad as ug
import unigrad.nn.functional as UF
from reference import Arg, arr, check, check_grad, check_layer

REDUCTIONS = ["mean", "sum", "none"]


def F(m):
    return TF if m is torch else UF


def signs(*shape, seed=0):
    return Arg(np.random.default_rng(seed).choice([-1.0, 1.0], size=shape).astype(np.float32))


def classes(n, c, seed=0):
    return Arg(np.random.default_rng(seed).integers(0, c, size=n).astype(np.int64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
@pytest.mark.parametrize("shape", [(6,), (3, 4)])
def test_margin_ranking_loss(shape, margin, reduction):
    check_grad(lambda m, a, b, t: F(m).margin_ranking_loss(a, b, t, margin=margin, reduction=reduction),
               arr(shape), arr(shape, seed=1), signs(*shape))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 2.5])
def test_hinge_embedding_loss(margin, reduction):
    check_grad(lambda m, x, t: F(m).hinge_embedding_loss(x, t.detach(), margin, reduction=reduction), arr((3, 4)),
               signs(3, 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(reduction):
    check_grad(lambda m, x, t: F(m).soft_margin_loss(x, t.detach(), reduction=reduction), arr((3, 4)), signs(3, 4))


def test_soft_margin_loss_refuses_a_target_that_requires_grad_as_torch():
    # torch's kernel has no derivative for the target: a target requiring grad is an error,
    # under no_grad it is not
    x, t = arr((3, 4)).array, arr((3, 4), seed=1).array
    check(lambda m, x, t: F(m).soft_margin_loss(x, t.requires_grad_(True)), arr((3, 4)), arr((3, 4), seed=1))
    with pytest.raises(RuntimeError, match=r"\[soft_margin_loss\] .*not differentiable with respect to argument 'target'"):
        UF.soft_margin_loss(ug.tensor(x, requires_grad=True), ug.tensor(t, requires_grad=True))
    with ug.no_grad():
        ours = UF.soft_margin_loss(ug.tensor(x), ug.tensor(t, requires_grad=True))
    theirs = torch.nn.functional.soft_margin_loss(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (5,)])
def test_multilabel_soft_margin_loss(shape, weighted, reduction):
    target = Arg((np.random.default_rng(1).random(shape) > 0.5).astype(np.float32))
    weight = arr((shape[-1],), low=0.2, high=2.0, seed=2)
    check_grad(lambda m, x, t, w: F(m).multilabel_soft_margin_loss(x, t.detach(), w.detach() if weighted else None,
                                                                   reduction=reduction), arr(shape), target, weight)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin,p,swap", [(1.0, 2.0, False), (0.5, 1.0, True), (2.0, 3.0, False), (1.0, 2.0, True)])
@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_triplet_margin_loss(shape, margin, p, swap, reduction):
    check_grad(lambda m, a, pos, neg: F(m).triplet_margin_loss(a, pos, neg, margin=margin, p=p, swap=swap,
                                                               reduction=reduction),
               arr(shape), arr(shape, seed=1), arr(shape, seed=2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 1.0, False), (1, 0.7, True), (2, 2.0, True)])
def test_multi_margin_loss(p, margin, weighted, reduction):
    weight = arr((4,), low=0.2, high=2.0, seed=2)
    check_grad(lambda m, x, t, w: F(m).multi_margin_loss(x, t, p, margin, w.detach() if weighted else None,
                                                         reduction=reduction),
               arr((5, 4)), classes(5, 4), weight)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("target", [np.array(2), np.array([2])])
def test_multi_margin_loss_of_one_sample(target, reduction):
    # A 0-d target gives a 0-d "none" loss, a [1] target a [1] one, as torch.
    check_grad(lambda m, x, t: F(m).multi_margin_loss(x, t, reduction=reduction), arr((4,)), Arg(target))


def test_legacy_size_average_and_reduce():
    x, y, t = (np.random.default_rng(i).standard_normal(6).astype(np.float32) for i in range(3))
    t = np.sign(t)
    for kwargs in [{"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}]:
        np.testing.assert_allclose(UF.margin_ranking_loss(ug.tensor(x), ug.tensor(y), ug.tensor(t), **kwargs).numpy(),
                                   TF.margin_ranking_loss(torch.tensor(x), torch.tensor(y), torch.tensor(t),
                                                          **kwargs).numpy(), rtol=1e-6)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def sign(*shape):
    return np.sign(rand(*shape, seed=9)).astype(np.float32)


WEIGHT = np.array([0.5, 1.0, 2.0, 1.5], np.float32)
# (class, constructor keywords, inputs)
MODULES = [
    ("MarginRankingLoss", {}, (rand(6), rand(6, seed=1), sign(6))),
    ("MarginRankingLoss", {"margin": 0.3, "reduction": "sum"}, (rand(6), rand(6, seed=1), sign(6))),
    ("HingeEmbeddingLoss", {}, (rand(3, 4), sign(3, 4))),
    ("HingeEmbeddingLoss", {"margin": 2.0, "reduction": "none"}, (rand(3, 4), sign(3, 4))),
    ("SoftMarginLoss", {}, (rand(3, 4), sign(3, 4))),
    ("MultiLabelSoftMarginLoss", {}, (rand(3, 4), (sign(3, 4) > 0).astype(np.float32))),
    ("MultiLabelSoftMarginLoss", {"weight": WEIGHT, "reduction": "none"}, (rand(3, 4), (sign(3, 4) > 0).astype(np.float32))),
    ("TripletMarginLoss", {}, (rand(5, 4), rand(5, 4, seed=1), rand(5, 4, seed=2))),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1.0, "eps": 1e-3, "swap": True},
     (rand(5, 4), rand(5, 4, seed=1), rand(5, 4, seed=2))),
    ("MultiMarginLoss", {}, (rand(5, 4), np.array([0, 3, 1, 1, 2]))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": WEIGHT, "reduction": "sum"},
     (rand(5, 4), np.array([0, 3, 1, 1, 2]))),
]


@pytest.mark.parametrize("name,kwargs,inputs", MODULES, ids=[f"{m[0]}{sorted(m[1])}" for m in MODULES])
def test_modules_match_torch(name, kwargs, inputs):
    weight = kwargs.get("weight")
    u = getattr(ug.nn, name)(**{**kwargs, **({"weight": ug.tensor(weight)} if weight is not None else {})})
    t = getattr(torch.nn, name)(**{**kwargs, **({"weight": torch.tensor(weight)} if weight is not None else {})})
    # torch's SoftMarginLoss has no derivative for its target
    detached = (lambda loss, x, target: loss(x, target.detach())) if name == "SoftMarginLoss" else None
    check_layer(u, t, *inputs, call=detached)
    assert repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())
    assert u.reduction == t.reduction


x4 = ug.tensor(rand(5, 4))
ERRORS = [  # (call, error class, message)
    (lambda: UF.margin_ranking_loss(ug.tensor(rand(6)), ug.tensor(rand(6)), ug.tensor(rand(1, 6))), ValueError,
     r"\[margin_ranking_loss\] all input tensors should have the same number of dimensions"),
    (lambda: UF.soft_margin_loss(x4, x4, reduction="avg"), ValueError, r"\[soft_margin_loss\] 'avg' is not a valid"),
    (lambda: UF.hinge_embedding_loss(ug.tensor([1, 2]), ug.tensor([1, -1])), TypeError,
     r"\[hinge_embedding_loss\] expected a floating point input"),
    (lambda: UF.triplet_margin_loss(x4, x4, x4, margin=0.0), ValueError, "margin must be greater than 0"),
    (lambda: UF.triplet_margin_loss(x4, x4, ug.tensor(rand(4))), ValueError,
     r"\[triplet_margin_loss\] all input tensors should have the same number of dimensions"),
    (lambda: UF.multi_margin_loss(x4, ug.tensor([0, 1, 2, 3, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: UF.multi_margin_loss(x4, ug.tensor([0, 1, 2, 3, 4])), IndexError, r"target out of range"),
    (lambda: UF.multi_margin_loss(x4, ug.tensor([0, 1, 2])), ValueError, "inconsistent target size"),
    (lambda: UF.multi_margin_loss(x4, ug.tensor([0, 1, 2, 3, 1]), weight=ug.ones(3)), ValueError,
     "weight must be one-dimensional with 4 entries"),
    (lambda: UF.multi_margin_loss(ug.tensor(rand(2, 3, 4)), ug.tensor([0, 1])), ValueError,
     r"non-empty vector \[C\] or matrix \[N, C\]"),
    (lambda: UF.multilabel_soft_margin_loss(ug.tensor(1.0), ug.tensor(1.0)), ValueError, "at least 1 dim"),
    (lambda: ug.nn.TripletMarginLoss(margin=-1.0), ValueError, "expected margin to be greater than 0"),
    (lambda: ug.nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: ug.nn.MultiMarginLoss(weight=ug.ones(2, 2)), ValueError, "expected weight to be None or 1D tensor"),
    (lambda: ug.nn.SoftMarginLoss(reduction="avg"), ValueError, "reduction"),
]


@pytest.mark.parametrize("call,error,match", ERRORS)
def test_bad_input_raises_naming_the_op(call, error, match):
    with pytest.raises(error, match=match):
        call()
