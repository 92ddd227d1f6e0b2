"""ug.lax's control flow against jax.lax 0.10.2 where eager code used to differ: a scan of no
steps stacks its (absent) outputs into arrays with a leading 0 dim; fori_loop's index is a 0-d
integer array on every path; cond, switch, scan, fori_loop and while_loop check the structure,
shapes and dtypes their functions return, eagerly as under jit."""
import os

import numpy as np
import pytest

import unigrad as ug


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def assert_same(got, want):
    """The same pytree of arrays: structure, shapes, dtypes' kinds and values."""
    import jax

    got_leaves, want_leaves = ug.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g, w = g.numpy(), np.asarray(w)
        assert g.shape == w.shape and g.dtype.kind == w.dtype.kind
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_a_scan_of_no_steps_stacks_empty_outputs_as_jax_does(jax, compiled):
    jnp, wrap = jax.numpy, ug.jit if compiled else (lambda f: f)

    def step(lib):
        return lambda c, x: (c + x["a"].sum(), {"y": x["a"] * 2, "n": (x["b"] > 0, None)})

    xs = {"a": np.zeros((0, 3), np.float32), "b": np.zeros((0, 2, 2), np.int32)}
    got = wrap(lambda c, xs: ug.lax.scan(step(ug), c, xs))(ug.tensor(1.5), ug.tree_map(ug.tensor, xs))
    want = jax.lax.scan(step(jnp), jnp.asarray(1.5), xs)
    assert_same(got, want)
    assert got[1]["y"].shape == (0, 3) and got[1]["n"][0].shape == (0, 2, 2) and got[1]["n"][1] is None
    # no xs, length=0; and outputs of no arrays
    got = wrap(lambda c: ug.lax.scan(lambda c, _: (c, (c * 2, 1.0)), c, None, length=0))(ug.zeros(2))
    assert_same(got, jax.lax.scan(lambda c, _: (c, (c * 2, 1.0)), jnp.zeros(2), None, length=0))
    assert ug.lax.scan(lambda c, x: (c, None), 0.0, ug.zeros(0))[1] is None
    assert ug.lax.map(lambda x: x.sum(-1), ug.zeros(0, 4)).shape == (0,)


def test_the_stand_in_step_of_an_empty_scan_draws_nothing_and_records_nothing():
    def step(c, x):
        return c * 2, c * ug.rand(3)

    ug.manual_seed(0)
    c = ug.ones(3, requires_grad=True)
    carry, ys = ug.lax.scan(step, c, None, length=0)
    after = ug.rand(2)
    ug.manual_seed(0)
    np.testing.assert_array_equal(after.numpy(), ug.rand(2).numpy())
    assert carry is c and not ys.requires_grad and ys.shape == (0, 3)
    with pytest.raises(TypeError, match=r"\[scan\] f must return a carry of the same shapes and dtypes: leaf 0 is "
                                        r"float32 \[3\] but f gives int32 \[3\]"):
        ug.lax.scan(lambda c, x: (c.int(), x), ug.ones(3), ug.zeros(0))


def test_the_stand_in_step_of_an_empty_scan_stays_out_of_a_compiled_program(jax):
    # jax.lax.scan of no steps runs no step: under ug.jit the stand-in step (run for the shapes
    # of ys) must leave no draw in the program, which would take from the global generator at
    # every call, and no op.
    def f(lib, draw):
        def step(c, _):
            return c + draw(()), (c * draw((2,)), c.sum())
        return lambda c: lib.lax.scan(step, c, None, length=0)

    jf = ug.jit(f(ug, lambda shape: ug.rand(*shape)))
    c = ug.ones(2)
    for _ in range(2):  # the call that traces, then one that runs the cached program
        ug.manual_seed(0)
        got = jf(c)
        after = ug.rand(2)
        ug.manual_seed(0)
        np.testing.assert_array_equal(after.numpy(), ug.rand(2).numpy())
        key = jax.random.key(0)
        assert_same(got, jax.jit(f(jax, lambda shape: jax.random.uniform(key, shape)))(jax.numpy.ones(2)))
    assert "random" not in jf.lower(c).as_text()


@pytest.mark.parametrize("mode", ["eager", "jit", "grad", "jit_of_grad", "vmap"])
def test_fori_loop_index_is_an_integer_array_as_in_jax(jax, mode):
    jnp = jax.numpy

    def body(lib):
        dyn = ug.lax.dynamic_slice if lib is ug else jax.lax.dynamic_slice

        def step(i, c):
            as_float = i.float() if lib is ug else i.astype(jnp.float32)
            return c * 0.5 + c[i] + i * 2 + dyn(c, [i], [2]).sum() + as_float
        return step

    def f(lib):
        loop = ug.lax.fori_loop if lib is ug else jax.lax.fori_loop
        return lambda x: loop(1, 4, body(lib), x)

    def loss(lib):
        return lambda x: f(lib)(x).sum()

    x = np.array([1.0, -2.0, 3.0, 0.5, 4.0], np.float32)
    ug_f, jax_f = {"eager": (f(ug), f(jnp)), "jit": (ug.jit(f(ug)), f(jnp)),
                   "grad": (ug.grad(loss(ug)), jax.grad(loss(jnp))),
                   "jit_of_grad": (ug.jit(ug.grad(loss(ug))), jax.grad(loss(jnp))),
                   "vmap": (ug.vmap(f(ug)), jax.vmap(f(jnp)))}[mode]
    arg = np.stack([x, x[::-1]]) if mode == "vmap" else x
    assert_same(ug_f(ug.tensor(arg)), jax_f(jnp.asarray(arg)))
    seen = []
    ug.lax.fori_loop(2, 4, lambda i, c: seen.append(i) or c, 0.0)
    assert all(isinstance(i, ug.Tensor) and i.dim() == 0 and i.dtype == ug.int64 for i in seen)
    assert [int(i) for i in seen] == [2, 3]
    assert ug.lax.fori_loop(ug.tensor(0, dtype=ug.int32), 2, lambda i, c: i, ug.tensor(0, dtype=ug.int32)).dtype == \
        ug.int32  # a tensor bound's dtype, as the traced-bounds loop counts


def as_int32(lib, c):
    return c.int() if lib is ug else c.astype(lib.int32)


# Each case: make(numpy-like lib, its lax) -> a call that JAX refuses with a TypeError, and the
# message unigrad's TypeError gives.
CASES = {
    "cond structures": (lambda lib, lax: lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0),
                        r"\[cond\] the branches must return the same structure: true_fun gives "
                        r"TreeDef\(tuple, \[\*, \*\]\), false_fun gives \*"),
    "cond shapes": (lambda lib, lax: lax.cond(False, lambda: lib.ones(2), lambda: lib.ones(3)),
                    r"\[cond\] the branches must return the same shapes and dtypes: leaf 0 is float32 \[2\] from "
                    r"true_fun but float32 \[3\] from false_fun"),
    "switch dtypes": (lambda lib, lax: lax.switch(0, [lambda: lib.ones(2), lambda: lib.ones(2, dtype=lib.int32)]),
                      r"\[switch\] .* float32 \[2\] from branches\[0\] but int32 \[2\] from branches\[1\]"),
    "scan carry shape": (lambda lib, lax: lax.scan(lambda c, x: (lib.stack([c, c]), x), lib.zeros(()), lib.arange(3.0)),
                         r"\[scan\] f must return a carry of the same shapes and dtypes: leaf 0 is float32 \[\] but "
                         r"f gives float32 \[2\]"),
    "scan carry dtype": (lambda lib, lax: lax.scan(lambda c, x: (as_int32(lib, c), x), lib.zeros(()), lib.arange(3.0)),
                         r"leaf 0 is float32 \[\] but f gives int32 \[\]"),
    "scan carry structure": (lambda lib, lax: lax.scan(lambda c, x: ((c, c), x), lib.zeros(()), lib.arange(3.0)),
                             r"\[scan\] f must return a carry of the structure \*, got TreeDef\(tuple"),
    "while_loop carry shape": (lambda lib, lax: lax.while_loop(lambda c: c.sum() < 10, lambda c: lib.concatenate([c, c]),
                                                               lib.ones(1)),
                               r"\[while_loop\] body_fun must return a carry of the same shapes and dtypes: leaf 0 is "
                               r"float32 \[1\] but body_fun gives float32 \[2\]"),
    "while_loop predicate": (lambda lib, lax: lax.while_loop(lambda c: 1.0 * (c.sum() < 10), lambda c: c * 2,
                                                             lib.ones(1)),
                             r"\[while_loop\] cond_fun must return a boolean scalar, got float32 \[\]"),
    "fori_loop carry dtype": (lambda lib, lax: lax.fori_loop(0, 3, lambda i, c: c + 0.5, lib.zeros((), dtype=lib.int32)),
                              r"\[fori_loop\] body_fun must return a carry of the same shapes and dtypes: leaf 0 is "
                              r"int32 \[\] but body_fun gives float32 \[\]"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_eager_control_flow_checks_what_its_functions_return_as_jax_does(jax, case):
    make, message = CASES[case]
    with pytest.raises(TypeError):
        make(jax.numpy, jax.lax)
    with pytest.raises(TypeError, match=message):
        make(ug, ug.lax)


def test_cond_runs_the_other_branch_without_gradients_or_draws():
    calls = []

    def branch(name, scale):
        return lambda x: calls.append(name) or x * scale * ug.rand(())

    x = ug.tensor([1.0, 2.0], requires_grad=True)
    ug.manual_seed(3)
    out = ug.lax.cond(True, branch("true", 2.0), branch("false", 3.0), x)
    after = ug.rand(())
    ug.manual_seed(3)
    want = x * 2.0 * ug.rand(())
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(after.numpy(), ug.rand(()).numpy())  # the discarded branch's draw is put back
    assert sorted(calls) == ["false", "true"]
    g = ug.grad(lambda x: ug.lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v * 3, x).sum())(x.detach())
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_a_compiled_cond_on_a_known_predicate_draws_as_the_eager_one():
    # Under jit the branch not taken is not run for the check: the program would keep its draw.
    def f(x, flag):
        return ug.lax.cond(flag, lambda: x * ug.rand(2), lambda: x * ug.rand(3).sum()) + ug.rand(2)

    jitted = ug.jit(f, static_argnums=1)
    for flag in (True, False):
        ug.manual_seed(0)
        eager = [f(ug.ones(2), flag) for _ in range(2)] + [ug.rand(1)]
        ug.manual_seed(0)
        compiled = [jitted(ug.ones(2), flag) for _ in range(2)] + [ug.rand(1)]
        for a, b in zip(eager, compiled):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
