"""Ops that check their inputs' values (an index in range, a probability in [0, 1], a divisor
not zero) batch under vmap: the check reads every example at once, where reading one example's
value made vmap call the function once per example. Each case runs under vmap, jit(vmap) and
vmap(jit) without a call per example, against torch on each example; a bad value in any one
example raises the op's own error."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)
B = 4
W = RNG.uniform(-1, 1, (10, 3))  # a shared table: 10 rows of 3
X = RNG.uniform(-1, 1, (B, 5, 3))
IDX = RNG.integers(0, 10, (B, 5))
P = RNG.uniform(0.05, 0.95, (B, 5))
T = RNG.integers(0, 3, (B, 5))
Q = RNG.uniform(0, 1, (B, 2))
DIVISORS = RNG.integers(1, 5, (B, 5))


def F(m):
    return torch.nn.functional if m is torch else ug.nn.functional


def table(m):
    return m.tensor(W)


# name: (fn(m, *one example's inputs), the batched inputs)
CASES = {
    "index_select with a batched index": (lambda m, i: table(m).index_select(0, i), (IDX,)),
    "index_select, both batched": (lambda m, x, i: x.index_select(0, i[:3] % 5), (X, IDX)),
    "indexing with a batched index": (lambda m, i: table(m)[i], (IDX,)),
    "indexing with a 0-d index from argmax": (lambda m, x: x[x.sum(1).argmax()], (X,)),
    "embedding": (lambda m, i: F(m).embedding(i, table(m)), (IDX,)),
    "one_hot with num_classes": (lambda m, i: F(m).one_hot(i, 10), (IDX,)),
    "gather with a batched index": (lambda m, x, t: x.gather(1, t.unsqueeze(1) % 3), (X, T)),
    "take_along_dim": (lambda m, x, t: m.take_along_dim(x, t.unsqueeze(1) % 3, dim=1), (X, T)),
    "index_fill at batched positions": (lambda m, x, t: x.index_fill(0, t[:2], -1.0), (X, T)),
    "cross_entropy": (lambda m, x, t: F(m).cross_entropy(x, t), (X, T)),
    "nll_loss": (lambda m, x, t: F(m).nll_loss(F(m).log_softmax(x, 1), t), (X, T)),
    "multi_margin_loss": (lambda m, x, t: F(m).multi_margin_loss(x, t), (X, T)),
    "binary_cross_entropy": (lambda m, p: F(m).binary_cross_entropy(p, 1 - p), (P,)),
    "gaussian_nll_loss": (lambda m, x, p: F(m).gaussian_nll_loss(x[:, 0], x[:, 1], p), (X, P)),
    "quantile with a batched q": (lambda m, x, q: m.quantile(x.flatten(), q), (X, Q)),
    "floor_divide by a batched integer tensor": (lambda m, i, d: m.floor_divide(i, d), (IDX, DIVISORS)),
    "remainder by a batched integer tensor": (lambda m, i, d: m.remainder(i, d), (IDX, DIVISORS)),
    "count_nonzero": (lambda m, x: m.count_nonzero(x > 0), (X,)),
    "constant pad": (lambda m, x: F(m).pad(x, (1, 2, 0, 1), value=0.5), (X,)),
    "argmax over every dim": (lambda m, x: x.argmax(), (X,)),
    "repeat_interleave with output_size": (
        lambda m, x, d: m.repeat_interleave(x[:4, 0], d[:4], output_size=int(DIVISORS[0, :4].sum())),
        (X, np.tile(DIVISORS[0], (B, 1)))),
}


def per_example_torch(fn, inputs):
    return np.stack([fn(torch, *(torch.tensor(a[b]) for a in inputs)).numpy() for b in range(B)])


def fallbacks():
    return ug._C._functional.vmap_fallbacks()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_check_batches_and_matches_torch(name):
    fn, inputs = CASES[name]
    want = per_example_torch(fn, inputs)
    f = lambda *xs: fn(ug, *xs)  # noqa: E731
    args = [ug.tensor(a) for a in inputs]
    compiled_inside = ug.vmap(ug.jit(f))
    compiled_inside(*args)  # its first call traces the program
    before = fallbacks()
    for how, run in [("vmap", ug.vmap(f)), ("jit(vmap)", ug.jit(ug.vmap(f))), ("vmap(jit)", compiled_inside)]:
        got = run(*args).numpy()
        # gathers, comparisons and integer ops are exact; the losses sum at most 15 float64
        # terms of size about 3: 15 eps of 45 against torch's order of summation
        np.testing.assert_allclose(got, want, rtol=0, atol=15 * np.finfo(np.float64).eps * 45, err_msg=how)
    assert fallbacks() == before, ug._C._functional.last_vmap_fallback()


def test_batched_gamma_draws_equal_each_examples_own():
    # Marsaglia-Tsang's rounds go on until every example's draws are accepted; the extra rounds
    # leave an accepted draw as it was, so each example gets what it gets alone. Up to rounding:
    # the float32 exp, log and pow of a 24-element batch take glibc's vector forms where a
    # 6-element example takes the scalar ones for some elements (1 ulp apart), through about 6
    # roundings.
    key, alphas = ug.random.key(3), ug.tensor(RNG.uniform(0.2, 3.0, (B, 6)))
    before = fallbacks()
    batched = ug.vmap(lambda a: ug.random.gamma(key, a))(alphas)
    assert fallbacks() == before
    alone = ug.stack([ug.random.gamma(key, alphas[b]) for b in range(B)])
    np.testing.assert_allclose(batched.numpy(), alone.numpy(), rtol=8 * np.finfo(np.float32).eps, atol=0)


def test_per_example_gradients_through_an_embedding_match_torch():
    def loss(m, w, i, y):
        return ((F(m).embedding(i, w).sum(0) * m.tensor([1.0, -2.0, 0.5])).sum() - y) ** 2

    ys = RNG.uniform(-1, 1, (B,))
    want = torch.func.vmap(torch.func.grad(lambda w, i, y: loss(torch, w, i, y)), in_dims=(None, 0, 0))(
        torch.tensor(W), torch.tensor(IDX), torch.tensor(ys))
    before = fallbacks()
    got = ug.vmap(ug.grad(lambda w, i, y: loss(ug, w, i, y)), in_axes=(None, 0, 0))(
        ug.tensor(W), ug.tensor(IDX), ug.tensor(ys))
    assert fallbacks() == before
    # each gradient row sums at most 5 products of size about 10
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=5 * np.finfo(np.float64).eps * 100)


def bad_in_last_example(values, at, bad):
    v = np.array(values)
    v[(-1, *at)] = bad
    return ug.tensor(v)


@pytest.mark.parametrize("compiled", [False, True], ids=["vmap", "jit(vmap)"])
@pytest.mark.parametrize("fn,inputs,error,message", [
    (lambda i: ug.tensor(W)[i], lambda: (bad_in_last_example(IDX, (2,), 10),), IndexError, "10"),
    (lambda i: F(ug).embedding(i, ug.tensor(W)), lambda: (bad_in_last_example(IDX, (0,), -1),), IndexError,
     "index out of range"),
    (lambda x, t: F(ug).cross_entropy(x, t), lambda: (ug.tensor(X), bad_in_last_example(T, (4,), 7)), IndexError,
     "Target 7 is out of bounds"),
    (lambda p: F(ug).binary_cross_entropy(p, p), lambda: (bad_in_last_example(P, (1,), 1.5),), RuntimeError,
     "between 0 and 1"),
    (lambda i, d: i // d, lambda: (ug.tensor(IDX), bad_in_last_example(DIVISORS, (3,), 0)), RuntimeError,
     "division by zero"),
], ids=["index", "embedding", "cross_entropy", "binary_cross_entropy", "floor_divide"])
def test_a_bad_value_in_any_example_raises_the_ops_error(fn, inputs, error, message, compiled):
    run = ug.jit(ug.vmap(fn)) if compiled else ug.vmap(fn)
    with pytest.raises(error, match=message):
        run(*inputs())


@pytest.mark.parametrize("compiled", ["vmap", "jit(vmap)", "vmap(jit)"])
def test_numerics_checks_read_every_example_at_once(compiled):
    def f(v):
        return ug.debug.check_numerics(v.log(), "log")

    run = {"vmap": ug.vmap(f), "jit(vmap)": ug.jit(ug.vmap(f)), "vmap(jit)": ug.vmap(ug.jit(f))}[compiled]
    before = fallbacks()
    np.testing.assert_allclose(run(ug.tensor(P)).numpy(), np.log(P), rtol=4 * np.finfo(np.float64).eps)
    assert fallbacks() == before
    with pytest.raises(RuntimeError, match=r"\[check_numerics\] log: .* has NaN"):
        run(bad_in_last_example(P, (2,), -1.0))


def test_anomaly_detection_under_vmap_of_grad_names_the_op():
    # the backward's finite check reads every example's gradient at once
    before = fallbacks()
    with ug.autograd.detect_anomaly():
        ug.vmap(ug.grad(lambda v: v.sqrt().sum()))(ug.tensor(P))
        assert fallbacks() == before
        with pytest.raises(RuntimeError, match=r"\[anomaly\] the backward of sqrt returned NaN or Inf"):
            ug.vmap(ug.grad(lambda v: v.sqrt().sum()))(bad_in_last_example(P, (0,), 0.0))
