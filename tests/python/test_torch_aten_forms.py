"""torch's top-level forms of the functional ops (torch.layer_norm, torch.batch_norm, torch.kl_div,
...), whose signatures are ATen's: other positional orders and integer reductions. Each against
torch 2.13 on random float64 inputs, values and gradients."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def arr(*shape, low=None):
    a = RNG.standard_normal(shape)
    return np.abs(a) + low if low is not None else a


def pair(a, grad=True):
    """The same float64 array as a torch and a unigrad tensor."""
    return (torch.tensor(a, requires_grad=grad), ug.tensor(a, requires_grad=grad))


# name -> (inputs, call(m, *tensors)). Inputs are arrays (differentiated) or ("const", array).
X4 = arr(3, 4, 5)
CASES = {
    "layer_norm": ([X4, arr(5), arr(5)], lambda m, x, w, b: m.layer_norm(x, [5], w, b, 1e-5, True)),
    "layer_norm_defaults": ([X4], lambda m, x: m.layer_norm(x, (4, 5))),
    "group_norm": ([arr(2, 6, 3), arr(6), arr(6)], lambda m, x, w, b: m.group_norm(x, 3, w, b, 1e-4, False)),
    "group_norm_defaults": ([arr(2, 6, 3)], lambda m, x: m.group_norm(x, 2)),
    "rms_norm": ([X4, arr(5)], lambda m, x, w: m.rms_norm(x, [5], w, eps=1e-6)),
    "batch_norm_eval": ([X4, arr(4), arr(4), ("const", arr(4)), ("const", arr(4, low=0.5))],
                        lambda m, x, w, b, rm, rv: m.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True)),
    "batch_norm_train": ([X4, arr(4), arr(4)],
                         lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False)),
    "instance_norm": ([X4, arr(4), arr(4)],
                      lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)),
    "embedding": ([arr(6, 3), ("const", np.array([[0, 5, 2], [2, 2, 1]]))],
                  lambda m, w, i: m.embedding(w, i)),
    "embedding_padding_idx": ([arr(6, 3), ("const", np.array([0, 5, 2, 2, 1]))],
                              lambda m, w, i: m.embedding(w, i, 2)),
    "kl_div": ([arr(3, 4), ("const", np.abs(arr(3, 4)))], lambda m, x, t: m.kl_div(x, t)),
    "kl_div_sum_log_target": ([arr(3, 4), arr(3, 4)], lambda m, x, t: m.kl_div(x, t, 2, log_target=True)),
    "bce_with_logits": ([arr(3, 4), ("const", RNG.uniform(size=(3, 4))), ("const", np.abs(arr(4))),
                         ("const", np.abs(arr(4)))],
                        lambda m, x, t, w, pw: m.binary_cross_entropy_with_logits(x, t, w, pw, 0)),
    "bce_with_logits_defaults": ([arr(5), ("const", RNG.uniform(size=5))],
                                 lambda m, x, t: m.binary_cross_entropy_with_logits(x, t)),
    "cosine_embedding_loss": ([arr(4, 3), arr(4, 3), ("const", np.array([1.0, -1.0, -1.0, 1.0]))],
                              lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1, 2)),
    "hinge_embedding_loss": ([arr(4, 3), ("const", np.where(arr(4, 3) > 0, 1.0, -1.0))],
                             lambda m, x, y: m.hinge_embedding_loss(x, y, 0.5, 0)),
    "margin_ranking_loss": ([arr(6), arr(6), ("const", np.where(arr(6) > 0, 1.0, -1.0))],
                            lambda m, a, b, y: m.margin_ranking_loss(a, b, y, 0.2)),
    "triplet_margin_loss": ([arr(4, 3), arr(4, 3), arr(4, 3)],
                            lambda m, a, p, n: m.triplet_margin_loss(a, p, n, 1.0, 2, 1e-6, True, 1)),
    "poisson_nll_loss": ([arr(3, 4), ("const", np.abs(arr(3, 4)))],
                         lambda m, x, t: m.poisson_nll_loss(x, t, True, True, 1e-8, 1)),
    "poisson_nll_loss_rates": ([arr(3, 4, low=0.1), ("const", np.abs(arr(3, 4)))],
                               lambda m, x, t: m.poisson_nll_loss(x, t, False, False, 1e-8, 2)),
    "constant_pad_nd": ([arr(2, 3, 4)], lambda m, x: m.constant_pad_nd(x, [1, 2, -1, 1], 0.5)),
    "constant_pad_nd_default": ([arr(2, 3)], lambda m, x: m.constant_pad_nd(x, (2, 1))),
    "ger": ([arr(3), arr(4)], lambda m, a, b: m.ger(a, b)),
    "fill_number": ([arr(2, 3)], lambda m, x: m.fill(x, 2.5) * x),
    "fill_tensor": ([arr(2, 3), np.array(1.5)], lambda m, x, v: m.fill(x, v) * x),
    "conv_tbc": ([arr(7, 2, 3), arr(3, 3, 4), arr(4)], lambda m, x, w, b: m.conv_tbc(x, w, b, 1)),
    "conv_tbc_no_pad": ([arr(7, 2, 3), arr(2, 3, 4), arr(4)], lambda m, x, w, b: m.conv_tbc(x, w, b)),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_torch_values_and_gradients(name):
    inputs, call = CASES[name]
    ts, us, differentiated = [], [], []
    for a in inputs:
        const = isinstance(a, tuple)
        t, u = pair(a[1] if const else a, grad=not const)
        ts.append(t)
        us.append(u)
        if not const:
            differentiated.append((t, u))
    want, got = call(torch, *ts), call(ug, *us)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == ug.float64
    # A few float64 roundings per element (sums of at most 60 terms of size ~1).
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = RNG.standard_normal(tuple(want.shape))
    (want * torch.tensor(cot)).sum().backward()
    (got * ug.tensor(cot)).sum().backward()
    for t, u in differentiated:
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-11)


def test_batch_norm_updates_the_running_stats_as_torch():
    x = arr(8, 3, 2)
    stats = {m: (m.tensor(arr(3) * 0 + 0.5), m.tensor(np.ones(3))) for m in (torch, ug)}
    for m in (torch, ug):
        m.batch_norm(m.tensor(x), None, None, *stats[m], True, 0.3, 1e-5, False)
    for t, u in zip(stats[torch], stats[ug]):
        np.testing.assert_allclose(u.numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout"])
def test_dropouts_take_train_positionally(name):
    x = ug.tensor(arr(4, 6, 5))
    assert (getattr(ug, name)(x, 0.3, False) == x).all()
    y = getattr(ug, name)(x, 0.3, True)
    assert tuple(y.shape) == (4, 6, 5) and not (y == x).all()
    with pytest.raises(TypeError):
        getattr(ug, name)(x, 0.3)  # train is required, as in torch
    with pytest.raises(TypeError):
        getattr(torch, name)(torch.tensor(x.numpy()), 0.3)


def test_dropout_keeps_or_scales_each_element():
    x = ug.ones(1000, dtype=ug.float64)
    y = ug.dropout(x, 0.25, True).numpy()
    assert set(np.unique(y)) <= {0.0, 1 / 0.75} and 150 < (y == 0).sum() < 350


def test_reduction_is_an_int_as_in_torch():
    x, t = ug.randn(3), ug.rand(3)
    with pytest.raises(TypeError, match=r"\[kl_div\] reduction must be an int"):
        ug.kl_div(x, t, "mean")
    with pytest.raises(TypeError):
        torch.kl_div(torch.randn(3), torch.rand(3), "mean")
    with pytest.raises(ValueError, match=r"\[margin_ranking_loss\] reduction must be 0 \(none\), 1 \(mean\) or 2"):
        ug.margin_ranking_loss(x, x, t, 0.0, 3)


def test_ctc_loss_matches_torch():
    T, N, C, S = 12, 2, 5, 4
    logits = arr(T, N, C)
    targets = RNG.integers(1, C, size=(N, S))
    lt, lu = pair(logits)
    for reduction in (0, 1, 2):
        want = torch.ctc_loss(lt.log_softmax(2), torch.tensor(targets), [12, 10], [4, 3], 0, reduction)
        got = ug.ctc_loss(lu.log_softmax(2), ug.tensor(targets), [12, 10], [4, 3], 0, reduction)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    want.backward()
    got.backward()
    np.testing.assert_allclose(lu.grad.numpy(), lt.grad.numpy(), rtol=1e-9, atol=1e-12)
    # torch's top-level losses default to no reduction
    assert tuple(ug.ctc_loss(lu.log_softmax(2), ug.tensor(targets), [12, 10], [4, 3]).shape) == (2,)


def test_losses_default_to_no_reduction_as_torch():
    x, t, y = RNG.standard_normal((3, 4)), RNG.uniform(size=(3, 4)), np.sign(RNG.standard_normal(3))
    for m in (torch, ug):
        X, T, Y = m.tensor(x), m.tensor(t), m.tensor(y)
        assert tuple(m.cosine_embedding_loss(X, X, Y).shape) == (3,)
        assert tuple(m.hinge_embedding_loss(X, T).shape) == (3, 4)
        assert tuple(m.triplet_margin_loss(X, X, X).shape) == (3,)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(RuntimeError, match=r"\[fill\] only supports a 0-dimension value tensor"):
        ug.fill(ug.ones(2, 3), ug.ones(2))
    with pytest.raises(RuntimeError, match=r"\[conv_tbc\] expected a 3-d input.*\[7, 3\]"):
        ug.conv_tbc(ug.ones(7, 3), ug.ones(3, 3, 4), ug.ones(4))
    with pytest.raises(Exception, match="layer_norm"):
        ug.layer_norm(ug.ones(2, 3), [4])
    with pytest.raises(Exception, match="embedding"):
        ug.embedding(ug.ones(4, 3), ug.tensor([0.5]))


def test_fill_keeps_the_dtype_and_shape():
    x = ug.zeros(2, 3, dtype=ug.int32)
    y = ug.fill(x, 7)
    assert y.dtype == ug.int32 and y.tolist() == [[7] * 3] * 2 and x.tolist() == [[0] * 3] * 2
    assert ug.fill(x, ug.tensor(2.9)).tolist() == torch.fill(torch.zeros(2, 3, dtype=torch.int32),
                                                             torch.tensor(2.9)).tolist()


def test_fill_gradients_as_torch():
    """torch.fill's input gets a zero gradient (not none) and a tensor value the sum of the
    incoming gradient, in the value's own dtype."""
    x, v, cot = arr(2, 3), np.array(1.5), arr(2, 3)
    for value in ("tensor", 2.5):
        (tx, ux), (tv, uv) = pair(x), pair(v)
        want = torch.fill(tx, tv if value == "tensor" else value)
        got = ug.fill(ux, uv if value == "tensor" else value)
        assert got.requires_grad and want.requires_grad
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        (want * torch.tensor(cot)).sum().backward()
        (got * ug.tensor(cot)).sum().backward()
        np.testing.assert_array_equal(ux.grad.numpy(), tx.grad.numpy())
        if value == "tensor":
            np.testing.assert_allclose(uv.grad.numpy(), tv.grad.numpy(), rtol=1e-15)
    # a float64 value filling a float32 input: its gradient stays float64
    tv, uv = pair(v)
    torch.fill(torch.zeros(2, 3), tv).sum().backward()
    ug.fill(ug.zeros(2, 3), uv).sum().backward()
    assert uv.grad.dtype == ug.float64 and uv.grad.item() == tv.grad.item() == 6.0
    # an input that needs no gradient: none flows to it, as torch's
    tx, ux = pair(x, grad=False)
    assert not ug.fill(ux, 1.0).requires_grad and not torch.fill(tx, 1.0).requires_grad


def test_keyword_names_are_torch_s():
    x, t, w = arr(4, 3), np.abs(arr(4, 3)), arr(5, 3)
    idx = np.array([1, 4])
    calls = [
        lambda m, X, T, W, I: m.batch_norm(input=X, weight=None, bias=None, running_mean=m.zeros(3, dtype=X.dtype),
                                           running_var=m.ones(3, dtype=X.dtype), training=False, momentum=0.1,
                                           eps=1e-5, cudnn_enabled=False),
        lambda m, X, T, W, I: m.embedding(weight=W, indices=I, padding_idx=-1),
        lambda m, X, T, W, I: m.dropout(input=X, p=0.3, train=False),
        lambda m, X, T, W, I: m.kl_div(input=X, target=T, reduction=2, log_target=False),
        lambda m, X, T, W, I: m.poisson_nll_loss(input=X, target=T, log_input=True, full=False, eps=1e-8, reduction=0),
        lambda m, X, T, W, I: m.layer_norm(input=X, normalized_shape=[3], eps=1e-5, cudnn_enable=True),
        lambda m, X, T, W, I: m.constant_pad_nd(input=X, pad=[1, 1], value=2.0),
        lambda m, X, T, W, I: m.fill(input=X, value=3.0),
        lambda m, X, T, W, I: m.ger(input=X[0], vec2=X[1]),
        lambda m, X, T, W, I: m.conv_tbc(input=X.reshape(4, 1, 3), weight=W[:3].reshape(1, 3, 3), bias=W[3], pad=0),
    ]
    for call in calls:
        want = call(torch, torch.tensor(x), torch.tensor(t), torch.tensor(w), torch.tensor(idx))
        got = call(ug, ug.tensor(x), ug.tensor(t), ug.tensor(w), ug.tensor(idx))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
