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
    for taken, other in ((lambda v: v * w, lambda v: v), (lambda v: v, lambda v: v * w)):  # the branch not taken too
        with pytest.raises(TypeError, match="closes over that requires grad; pass that tensor to cond as an operand"):
            ug.jit(lambda x: ug.lax.cond(x.sum() > 0, taken, other, x))(ug.ones(3))


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
    with pytest.raises(Exception, match=r"branches\[1\] gives \(float32\[\]\), branches\[2\] \(float32\[3\]\)"):
        f(ug.tensor(1), ug.ones(3))


def _closing_over(m, zero):
    """JAX's usual style: branches without operands that close over traced values (an
    argument, a loop's carry), in a cond, a switch and a cond inside a while_loop, and views
    of them broadcast (a subgraph took an enclosing value its view read for one of its own)."""
    def loop(y):
        def body(c):
            return c[0] + 1, m.lax.cond(c[0] % 2 == 0, lambda: c[1] + y, lambda: c[1] * 2)
        return m.lax.while_loop(lambda c: c[0] < 4, body, (zero, y))[1]
    return [lambda p, y: m.lax.cond(p > 0, lambda: y * 2, lambda: y * 3),
            lambda p, y: m.lax.switch((p > 0) * 1, [lambda: y - 1, lambda: y * y]),
            lambda p, y: loop(y * p),
            lambda p, y: m.lax.cond(p > 0, lambda: y + y[:1], lambda: y * p)]  # views and broadcasts of them


@pytest.mark.parametrize("k", range(4))
def test_branches_read_what_they_close_over_at_each_run(k):
    """A program kept the trace's values of what the branches closed over: the same result
    for every later call (and a wrong first one for the while_loop)."""
    ours, theirs = ug.jit(_closing_over(ug, ug.tensor(0))[k]), jax.jit(_closing_over(jax, jnp.array(0))[k])
    for p, y in [(1.0, [1.0, 2.0]), (1.0, [5.0, 6.0]), (-1.0, [5.0, 6.0]), (2.0, [0.5, -3.0])]:
        expected = theirs(np.float32(p), np.array(y, np.float32))
        np.testing.assert_array_equal(ours(ug.tensor(p), ug.tensor(y)).numpy(), np.asarray(expected))
    assert ours.cache_info().traces == 1


def test_a_predicate_a_vmap_inside_the_program_leaves_unbatched_picks_at_each_run():
    """jit(vmap(f, in_axes=(0, None))): the predicate is the program's input, not the trace's
    (the program took the trace's branch; per-example gradients through it too)."""
    def f(m):
        return lambda x, p: m.lax.cond(p > 0, lambda v: v ** 3, lambda v: v * 3, x)
    ours = ug.jit(ug.vmap(ug.grad(f(ug)), in_axes=(0, None)))
    theirs = jax.jit(jax.vmap(jax.grad(f(jax)), in_axes=(0, None)))
    x = np.array([1.0, 10.0], np.float32)
    for p in (1.0, -1.0, 3.0):
        np.testing.assert_allclose(ours(ug.tensor(x), ug.tensor(p)).numpy(), np.asarray(theirs(x, np.float32(p))),
                                   rtol=1e-6)


def test_forward_mode_through_a_branch_that_returns_its_operand():
    """The tangent of `lambda v: v`, taken at the trace, was the input's tangent itself: the
    program returned it at every run, whichever branch the run took."""
    def f(m):
        return lambda x, p: m.lax.cond(p, lambda v: v, lambda v: v * v, x)
    ours = ug.jit(lambda x, p, t: ug.jvp(lambda y: f(ug)(y, p), (x,), (t,))[1])
    theirs = jax.jit(lambda x, p, t: jax.jvp(lambda y: f(jax)(y, p), (x,), (t,))[1])
    x, t = np.array([0.5, 2.0], np.float32), np.ones(2, np.float32)
    for p in (True, False, True):
        np.testing.assert_array_equal(ours(ug.tensor(x), ug.tensor(p), ug.tensor(t)).numpy(),
                                      np.asarray(theirs(x, p, t)))


def test_a_compiled_gradient_through_cond_is_a_plain_tensor():
    """jit(grad(f)) returned a tensor with a grad_fn, which then spread into hand-written updates."""
    g = ug.jit(ug.grad(lambda x: ug.cond(x.sum() > 0, lambda v: (v ** 3).sum(), lambda v: v.sum(), x)))
    for x in ([1.0, 2.0], [-1.0, -2.0]):
        r = g(ug.tensor(x))
        assert not r.requires_grad and r.grad_fn is None


def test_jit_save_writes_cond_as_an_onnx_if(tmp_path):
    """ug.jit.save refused a function with a traced cond (it called unigrad back); it is an ONNX
    If node now, which ONNX Runtime runs."""
    import onnxruntime as ort

    def f(p, y):
        return ug.cond(p.sum() > 0, lambda: (y * 2).sin(), lambda: y.exp() * p)

    p, y = ug.tensor([1.0, -0.5]), ug.tensor([[0.3, 0.7], [1.5, -2.0]])
    path = str(tmp_path / "cond.onnx")
    ug.jit.save(f, path, p, y)
    session = ort.InferenceSession(path)
    names = [i.name for i in session.get_inputs()]
    for sign in (1.0, -1.0):
        q = ug.tensor([sign, -0.5])
        got = session.run(None, dict(zip(names, [q.numpy(), y.numpy()])))[0]
        np.testing.assert_allclose(got, f(q, y).numpy(), rtol=1e-6)


def test_one_program_for_every_size_holds_a_cond_and_a_while_loop():
    """tf.function with a None dim in its input_signature: one program for every length after
    the second trace, as for any function (TensorFlow's takes one: its first trace is symbolic).
    Before, the cond and while_loop read their predicate's size, which tied each program to the
    trace's sizes: a trace per length."""
    @ug.function(input_signature=[ug.TensorSpec((None,), ug.float32)])
    def f(x):
        y = ug.cond(x.sum() > 0, lambda v: v * 2, lambda v: v * 3, x)
        return ug.while_loop(lambda c: c.abs().sum() < 100, lambda c: c * 2 + 1, y)

    for n in range(5, 11):
        for sign in (1.0, -1.0):
            x = ug.linspace(0.5, 1.5, n) * sign
            y = x * 2 if sign > 0 else x * 3
            while y.abs().sum() < 100:
                y = y * 2 + 1
            np.testing.assert_allclose(f(x).numpy(), y.numpy(), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 2
