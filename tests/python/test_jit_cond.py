"""ug.lax.cond on a predicate a trace cannot know (ug.jit): one op whose program runs only the
branch the predicate picks at each run, as jax.lax.cond under jax.jit, so a guarded branch's
values (a log of zero, a square root of a negative number) reach neither the result nor its
derivatives. Checked against jax.jit on the same functions."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import unigrad as ug

SAFE = [  # the untaken branch is undefined (inf or NaN) at the points where it is not taken
    ("xlogx", lambda m, x: m.lax.cond(x > 0, lambda v: v * m_log(m)(v), lambda v: 0.0 * v, x)),
    ("sqrt", lambda m, x: m.lax.cond(x > 0, lambda v: m_sqrt(m)(v) * 3.0, lambda v: v * v, x)),
]


def m_log(m):
    return jnp.log if m is jax else ug.log


def m_sqrt(m):
    return jnp.sqrt if m is jax else ug.sqrt


@pytest.mark.parametrize("name,f", SAFE, ids=[c[0] for c in SAFE])
@pytest.mark.parametrize("x", [0.0, -1.5, 2.0])
def test_derivatives_of_a_guarded_branch_match_jax(name, f, x):
    value_j = jax.jit(lambda v: f(jax, v))(x)
    grad_j = jax.jit(jax.grad(lambda v: f(jax, v)))(x)
    second_j = jax.jit(jax.grad(jax.grad(lambda v: f(jax, v))))(x)
    tangent_j = jax.jit(lambda v: jax.jvp(lambda u: f(jax, u), (v,), (1.0,))[1])(x)
    t = ug.tensor(x)
    got = [ug.jit(lambda v: f(ug, v))(t), ug.jit(ug.grad(lambda v: f(ug, v)))(t),
           ug.jit(ug.grad(ug.grad(lambda v: f(ug, v))))(t),
           ug.jit(lambda v: ug.jvp(lambda u: f(ug, u), (v,), (ug.tensor(1.0),))[1])(t),
           ug.grad(ug.jit(lambda v: f(ug, v)))(t)]
    for g, e in zip(got, [value_j, grad_j, second_j, tangent_j, grad_j]):
        assert np.isfinite(g.item())
        np.testing.assert_allclose(g.item(), float(e), rtol=2e-6)  # a few float32 operations


def test_one_program_takes_either_branch_at_each_run():
    calls = []

    @ug.jit
    def f(x, w):
        return ug.lax.cond(x.sum() > 0, lambda a, b: {"y": a * b, "n": a.sum()},
                           lambda a, b: {"y": -a * b, "n": a.sum() * 0}, x, w)

    for x in ([1.0, 2.0], [-1.0, -2.0], [3.0, -1.0]):
        out = f(ug.tensor(x), ug.tensor(3.0))
        calls.append((out["y"].tolist(), out["n"].item()))
    assert f.cache_info().traces == 1
    assert calls == [([3.0, 6.0], 3.0), ([3.0, 6.0], 0.0), ([9.0, -3.0], 2.0)]


def test_only_the_branch_taken_runs(capsys):
    @ug.jit
    def f(x):
        return ug.lax.cond(x > 0, lambda v: (ug.debug.print("true {}", v), v)[1],
                           lambda v: (ug.debug.print("false {}", v), -v)[1], x)

    f(ug.tensor(1.0))
    f(ug.tensor(-2.0))
    assert capsys.readouterr().out.splitlines() == ["true tensor(1.)", "false tensor(-2.)"]


def test_gradients_of_operands_in_a_compiled_step_match_jax():
    def loss(m, w, x):
        h = x @ w
        return m.lax.cond(h.sum() > 0, lambda a: (a * a).sum(), lambda a: m_log(m)(1 + a * a).sum(), h)

    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 5, 3)).astype(np.float32)
    step = ug.jit(ug.value_and_grad(lambda w, x: loss(ug, w, x)))
    reference = jax.jit(jax.value_and_grad(lambda w, x: loss(jax, w, x)))
    taken = set()
    for x in xs:
        (v, g), (vj, gj) = step(ug.tensor(w), ug.tensor(x)), reference(w, x)
        taken.add(bool((x @ w).sum() > 0))
        np.testing.assert_allclose(v.item(), float(vj), rtol=1e-5)  # sums of 10 products of 3 terms
        np.testing.assert_allclose(g.numpy(), np.asarray(gj), rtol=1e-5, atol=1e-6)
    assert taken == {True, False}, "the data should take both branches"
    assert step.cache_info().traces == 1


def test_a_batched_predicate_selects_as_jax_vmap_does():
    f = lambda m, x: m.lax.cond(x > 0, lambda v: v * 2, lambda v: -v, x)  # noqa: E731
    xs = np.array([-1.0, 0.5, 2.0], np.float32)
    expected = jax.vmap(lambda v: f(jax, v))(xs)
    for mapped in (ug.vmap(ug.jit(lambda v: f(ug, v))), ug.jit(ug.vmap(lambda v: f(ug, v)))):
        np.testing.assert_array_equal(mapped(ug.tensor(xs)).numpy(), np.asarray(expected))


def test_errors_name_the_branches():
    with pytest.raises(TypeError, match=r"true_fn gives \(float32\[3\]\), false_fn \(float32\[2\]\)"):
        ug.jit(lambda x: ug.lax.cond(x.sum() > 0, lambda v: v, lambda v: v[:2], x))(ug.ones(3))
    w = ug.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="closes over that requires grad; pass that tensor to cond as an operand"):
        ug.jit(lambda x: ug.lax.cond(x.sum() > 0, lambda v: v * w, lambda v: v, x))(ug.ones(3))


def _switch_of(lax, sqrt):
    return lambda i, x: lax.switch(i, [sqrt, lambda v: v * 2.0, lambda v: v - 1.0], x)


@pytest.mark.parametrize("i", [0, 1, 2, 5])
def test_a_traced_switch_runs_one_branch_and_differentiates_as_jax(i):
    """Before: a traced switch ran every branch and picked with a where, so sqrt's NaN at -1
    reached the gradient of branch 1 (JAX's switch runs one branch)."""
    f, jf = _switch_of(ug.lax, ug.sqrt), _switch_of(jax.lax, jnp.sqrt)
    for x in (-1.0, 4.0):
        expected = jax.jit(jax.value_and_grad(jf, argnums=1))(i, x)
        for g in (ug.jit(ug.value_and_grad(f, argnums=1)), ug.value_and_grad(ug.jit(f), argnums=1)):
            value, grad = g(ug.tensor(i), ug.tensor(x))
            np.testing.assert_allclose([float(value), float(grad)], np.asarray(expected, np.float64), rtol=1e-6)


def test_a_traced_switch_draws_random_numbers_only_in_the_branch_taken():
    def f(i, x):
        return ug.lax.switch(i, [lambda v: v + ug.randn(3), lambda v: v * 2.0, lambda v: v + ug.rand(3)], x)

    for i in (0, 1, 2):
        ug.manual_seed(7)
        expected = f(i, ug.zeros(3))
        after_eager = ug.randn(2)
        ug.manual_seed(7)
        got = ug.jit(f)(ug.tensor(i), ug.zeros(3))
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        np.testing.assert_array_equal(ug.randn(2).numpy(), after_eager.numpy())


def test_a_traced_switch_names_the_branches_that_disagree():
    f = ug.jit(lambda i, x: ug.lax.switch(i, [lambda v: v, lambda v: v.sum(), lambda v: v], x))
    with pytest.raises(Exception, match=r"branches\[0\].*branches\[1\]|branches\[1\].*branches\[0\]"):
        f(ug.tensor(1), ug.ones(3))
