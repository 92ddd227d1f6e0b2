"""vmap's randomness (torch.func.vmap's argument): what draws from the global generator do
inside a vmapped function. "error" (the default, as torch's) raises, "same" draws once for every
example, "different" draws for each example apart; keyed draws follow their key. Checked against
torch.func.vmap's behaviour, and batched draws against unbatched ones from the same seed."""
import numpy as np
import pytest
import torch
import torch.func as tf

import unigrad as ug

DRAWS = {
    "rand": (lambda m, x: x + m.rand(5)),
    "randn": (lambda m, x: x + m.randn(5)),
    "randint": (lambda m, x: x + m.randint(0, 1000, (5,))),
    "randperm": (lambda m, x: x + m.randperm(5)),
    "normal": (lambda m, x: x + m.normal(0.0, 2.0, (5,))),
    "dropout": (lambda m, x: m.nn.functional.dropout(x, 0.5)),
    "bernoulli": (lambda m, x: m.bernoulli(x * 0 + 0.5)),
    "rand_like": (lambda m, x: m.rand_like(x)),
}


@pytest.mark.parametrize("name", DRAWS)
def test_error_mode_refuses_draws_as_torch_does(name):
    draw = DRAWS[name]
    with pytest.raises(RuntimeError, match="randomness"):
        tf.vmap(lambda x: draw(torch, x))(torch.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"inside vmap, whose randomness is 'error'"):
        ug.vmap(lambda x: draw(ug, x))(ug.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"inside vmap, whose randomness is 'error'"):
        ug.func.vmap(lambda x: draw(ug, x))(ug.ones(4, 5))


@pytest.mark.parametrize("name", DRAWS)
def test_same_draws_once_what_an_unbatched_call_draws(name):
    draw = DRAWS[name]
    x = ug.ones(5)
    ug.manual_seed(11)
    alone = draw(ug, x)
    ug.manual_seed(11)
    batched = ug.func.vmap(lambda v: draw(ug, v), randomness="same")(ug.ones(4, 5))
    for row in batched:
        assert ug.equal(row, alone)
    # torch's rows are all the same too, except that it refuses bernoulli of batched
    # probabilities under "same"; unigrad compares one uniform draw with each example's p
    if name != "bernoulli":
        t = tf.vmap(lambda v: draw(torch, v), randomness="same")(torch.ones(4, 5))
        assert all(torch.equal(r, t[0]) for r in t)


@pytest.mark.parametrize("name", DRAWS)
def test_different_draws_for_each_example(name):
    draw = DRAWS[name]
    examples = 6
    batched = ug.func.vmap(lambda v: draw(ug, v), randomness="different")(ug.ones(examples, 5)).numpy()
    assert batched.shape == (examples, 5)
    rows = {tuple(r) for r in batched}
    # Two of six rows equal by chance: at most 6·5/2 pairs, each at most 2^-5 likely for the
    # coarsest draw here (a Bernoulli(0.5) row of 5), about 0.47 expected pairs; all six rows
    # equal (what "same" gives) has probability 2^-25.
    assert len(rows) > 1
    t = tf.vmap(lambda v: draw(torch, v), randomness="different")(torch.ones(examples, 5)).numpy()
    assert t.shape == batched.shape


def test_different_draws_are_independent_with_the_unbatched_law():
    n, examples = 20000, 8
    ug.manual_seed(3)
    z = ug.vmap(lambda v: v + ug.randn(n), randomness="different")(ug.zeros(examples, n)).numpy().astype(np.float64)
    # each example's mean and variance: N(0, 1) gives means within 5 sigma = 5/sqrt(n)
    assert np.all(np.abs(z.mean(1)) < 5 / np.sqrt(n))
    assert np.all(np.abs(z.var(1) - 1) < 5 * np.sqrt(2 / n))
    # and examples uncorrelated
    corr = np.corrcoef(z)[np.triu_indices(examples, 1)]
    assert np.all(np.abs(corr) < 5 / np.sqrt(n))
    # dropout keeps each element with probability 1 - p, apart for each example
    kept = ug.vmap(lambda v: ug.nn.functional.dropout(v, 0.25), randomness="different")(ug.ones(examples, n)).numpy()
    assert np.all(np.abs((kept != 0).mean(1) - 0.75) < 5 * np.sqrt(0.75 * 0.25 / n))
    assert set(np.unique(kept)) == {0.0, np.float32(1 / 0.75)}


def test_nested_vmaps_batch_the_levels_that_draw_apart():
    x = ug.zeros(3, 4)
    outer = ug.vmap(ug.vmap(lambda v: v + ug.rand(()), randomness="same"), randomness="different")(x).numpy()
    assert all(len(set(row)) == 1 for row in outer) and len(set(outer[:, 0])) == 3
    inner = ug.vmap(ug.vmap(lambda v: v + ug.rand(()), randomness="different"), randomness="same")(x).numpy()
    assert all(np.array_equal(row, inner[0]) for row in inner) and len(set(inner[0])) == 4
    both = ug.vmap(ug.vmap(lambda v: v + ug.rand(()), randomness="different"), randomness="different")(x).numpy()
    assert len(set(both.ravel())) == 12
    with pytest.raises(RuntimeError, match="randomness is 'error'"):
        ug.vmap(ug.vmap(lambda v: v + ug.rand(()), randomness="different"))(x)


def test_gradients_see_each_examples_mask():
    # d/dw sum_b sum_i dropout(x_b * w)_i = sum of the kept elements' scale: each example's own mask
    xs = ug.ones(4, 6)
    ug.manual_seed(5)
    masks = ug.vmap(lambda v: ug.nn.functional.dropout(v, 0.5), randomness="different")(xs)
    ug.manual_seed(5)
    g = ug.grad(lambda w: ug.vmap(lambda v: ug.nn.functional.dropout(v * w, 0.5), randomness="different")(xs).sum())(
        ug.tensor(1.0))
    assert g.item() == masks.sum().item()


def test_compiled_draws_match_eager_ones():
    f = lambda v: ug.nn.functional.dropout(v, 0.5) + ug.rand(5)  # noqa: E731
    xs = ug.ones(4, 5)
    for randomness in ("same", "different"):
        ug.manual_seed(8)
        eager = [ug.vmap(f, randomness=randomness)(xs) for _ in range(2)]
        ug.manual_seed(8)
        jit_of_vmap = ug.jit(ug.vmap(f, randomness=randomness))
        compiled = [jit_of_vmap(xs) for _ in range(2)]
        ug.manual_seed(8)
        vmap_of_jit = ug.vmap(ug.jit(f), randomness=randomness)
        inner = [vmap_of_jit(xs) for _ in range(2)]
        for e, c, i in zip(eager, compiled, inner):
            assert ug.equal(e, c), randomness
            assert ug.equal(e, i), randomness


def test_the_per_example_fallback_keeps_the_randomness(monkeypatch):
    # .item() has no batching rule: vmap calls f once for each example
    f = lambda v: v * v.max().item() + ug.rand(5)  # noqa: E731
    xs = ug.ones(4, 5)
    ug.manual_seed(2)
    batched_run = ug.vmap(f, randomness="same")(xs)
    assert all(ug.equal(r, batched_run[0]) for r in batched_run)
    looped = ug.vmap(f, randomness="different")(xs).numpy()
    assert len({tuple(r) for r in looped}) == 4
    with pytest.raises(RuntimeError, match="randomness is 'error'"):
        ug.vmap(f)(xs)
    monkeypatch.setenv("UG_VMAP_LOOP", "1")  # every vmap example by example
    ug.manual_seed(2)
    assert ug.equal(ug.vmap(lambda v: v + ug.rand(5), randomness="same")(xs), batched_run)


def test_keyed_draws_follow_their_keys_whatever_the_randomness():
    keys = ug.random.split(ug.random.PRNGKey(0), 3)
    per_key = ug.vmap(lambda k: ug.random.normal(k, (4,)))(keys)
    for i in range(3):
        assert ug.equal(per_key[i], ug.random.normal(keys[i], (4,)))
    shared = ug.vmap(lambda x: x + ug.random.normal(keys[0], (4,)))(ug.zeros(3, 4))
    assert all(ug.equal(r, shared[0]) for r in shared)


def test_chunks_of_same_draw_what_the_first_chunk_drew():
    out = ug.func.vmap(lambda v: v + ug.rand(2), randomness="same", chunk_size=2)(ug.zeros(5, 2))
    assert all(ug.equal(r, out[0]) for r in out)
    out = ug.func.vmap(lambda v: v + ug.rand(2), randomness="different", chunk_size=2)(ug.zeros(5, 2)).numpy()
    assert len({tuple(r) for r in out}) == 5
    with pytest.raises(ValueError, match="randomness must be"):
        ug.vmap(lambda v: v, randomness="some")(ug.zeros(2))
