"""Random numbers inside compiled functions (issue 15, item 4b): a draw from the global
generator is drawn afresh at every run of the program, advancing the generator exactly as the
same eager code does (torch.compile's behaviour); a draw from a key (JAX style) is a function
of the key the program is given, as are split and fold_in. Files never hold draws."""
import numpy as np
import pytest

import unigrad as ug


def draws(fn, seed, calls):
    """fn's results over `calls` calls from one seed, and the generator's state after them."""
    ug.manual_seed(seed)
    out = [fn(*args) for args in calls]
    return out, ug.get_rng_state().tolist()


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("draw", [
    lambda x: x + ug.randn(6, 4),
    lambda x: x * ug.rand(4),
    lambda x: x + ug.normal(2.0, 0.5, (6, 4)),
    lambda x: x + ug.randint(0, 5, (6, 4)),
    lambda x: x[ug.randperm(6)],
    lambda x: ug.nn.functional.dropout(x, 0.5),
    lambda x: ug.nn.functional.dropout2d(x.reshape(6, 4, 1, 1), 0.5).reshape(6, 4),
    lambda x: ug.nn.functional.alpha_dropout(x, 0.5, training=True),
], ids=["randn", "rand", "normal", "randint", "randperm", "dropout", "dropout2d", "alpha_dropout"])
def test_a_global_draw_is_drawn_at_every_run_as_eagerly(draw):
    calls = [(ug.tensor(np.arange(1.0, 25.0).reshape(6, 4)),)] * 4
    jitted = ug.jit(draw)
    eager_out, eager_state = draws(draw, 7, calls)
    jit_out, jit_state = draws(jitted, 7, calls)
    assert jitted.cache_info().traces == 1
    for e, j in zip(eager_out, jit_out):
        same(j, e)
    assert jit_state == eager_state
    assert not np.array_equal(np.asarray(jit_out[1]), np.asarray(jit_out[2]))  # new numbers each run


def test_a_draw_nothing_reads_still_advances_the_generator():
    def f(x):
        ug.rand(5)  # unused: eager code takes its numbers all the same
        return x * 2
    jitted = ug.jit(f)
    calls = [(ug.ones(2),)] * 3
    assert draws(jitted, 3, calls)[1] == draws(f, 3, calls)[1]


def test_keyed_draws_follow_the_key_the_program_is_given():
    def f(key, x):
        k1, k2 = ug.random.split(key)
        noise = ug.random.normal(k1, (3,), dtype=ug.float64)
        keep = ug.random.bernoulli(ug.random.fold_in(k2, 7), 0.5, (3,))
        return x + noise * keep, ug.random.split(k2, 3), ug.random.permutation(k1, x)

    jitted = ug.jit(f)
    x = ug.tensor([1.0, 2.0, 3.0], dtype=ug.float64)
    for seed in (0, 1, 2**40 + 5):
        for a, b in zip(jitted(ug.random.key(seed), x), f(ug.random.key(seed), x)):
            same(a, b)
    assert jitted.cache_info().traces == 1


@pytest.mark.parametrize("sampler", [
    lambda key, a: ug.random.gamma(key, a, (5,)),
    lambda key, a: ug.random.loggamma(key, a, (5,)),
    lambda key, a: ug.random.beta(key, a, 2.0, (5,)),
    lambda key, a: ug.random.dirichlet(key, ug.stack([a, a + 1.0]), (5,)),
    lambda key, a: ug.random.poisson(key, a * 20.0, (5,)),
    lambda key, a: ug.random.binomial(key, ug.tensor(100.0), a / 2.0, (5,)),
], ids=["gamma", "loggamma", "beta", "dirichlet", "poisson", "binomial"])
def test_rejection_samplers_run_as_many_rounds_as_each_key_needs(sampler):
    # The rounds of rejection depend on the draws: a program calls the sampler back. Replaying
    # the rounds its trace took left, for about one key in seven here, an element at 0.
    jitted = ug.jit(sampler)
    a = ug.tensor(0.5)
    for seed in range(60):
        same(jitted(ug.random.key(seed), a), sampler(ug.random.key(seed), a))
    assert jitted.cache_info().traces == 1
    with pytest.raises(ValueError, match=r"random\.poisson.*>= 0"):
        ug.jit(lambda key, lam: ug.random.poisson(key, lam, (5,)))(ug.random.key(0), ug.tensor(-1.0))


def test_a_jax_style_dropout_loop_under_jit_matches_eager():
    # The articles' JAX loop threads a key through the step: key, sub = split(key).
    def step(w, key, x):
        key, sub = ug.random.split(key)
        mask = ug.random.bernoulli(sub, 0.8, x.shape)
        loss, g = ug.value_and_grad(lambda w: ((x * mask / 0.8) @ w).pow(2).mean())(w)
        return w - 0.1 * g, key, loss

    jitted = ug.jit(step)
    rng = np.random.default_rng(0)
    x = ug.tensor(rng.standard_normal((6, 4)))
    w_e = w_j = ug.tensor(rng.standard_normal((4, 2)))
    k_e = k_j = ug.random.key(42)
    for _ in range(5):
        w_e, k_e, loss_e = step(w_e, k_e, x)
        w_j, k_j, loss_j = jitted(w_j, k_j, x)
        same(k_j, k_e)
        np.testing.assert_allclose(np.asarray(w_j), np.asarray(w_e), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(loss_j), np.asarray(loss_e), rtol=1e-6)
    assert jitted.cache_info().traces == 1


def test_draws_stay_out_of_files(tmp_path):
    class Noisy(ug.nn.Module):
        def forward(self, x):
            return x + ug.randn(3)

    with pytest.raises(ValueError, match="random draws are not exported"):
        ug.onnx.export(Noisy(), (ug.ones(3),), str(tmp_path / "noisy.onnx"))
    with pytest.raises(ValueError, match="random"):
        ug.jit.save(lambda x: x + ug.randn(3), str(tmp_path / "noisy_program.onnx"), ug.ones(3))
