"""Buffer donation (jax.jit's donate_argnums / donate_argnames): a donated argument's buffers
are the program's to write its results into, and the caller's tensors are deleted by the call,
as donated jax.Arrays are. JAX is the reference for what raises and what warns; the results are
the undonated program's bit for bit (donation changes where a kernel writes, never what)."""
import numpy as np
import pytest

import unigrad as ug

jax = pytest.importorskip("jax")
jnp = jax.numpy

F32 = 4  # bytes


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_donated_argument_is_deleted_and_its_buffer_holds_the_result():
    jax_f = jax.jit(lambda a, b: a + b, donate_argnums=0)
    f = ug.jit(lambda a, b: a + b, donate_argnums=0)
    a_np, b_np = np.random.default_rng(0).standard_normal((2, 1000)).astype(np.float32)
    for _ in range(2):  # the tracing call and a cached one
        a, b, ja = ug.tensor(a_np), ug.tensor(b_np), jnp.asarray(a_np)
        buffer = a.data_ptr()
        out, jax_out = f(a, b), jax_f(ja, jnp.asarray(b_np))
        same(out.numpy(), np.asarray(jax_out))
        assert a.is_deleted() and ja.is_deleted()
        assert not b.is_deleted()
        with pytest.raises(RuntimeError):
            ja + 1
        with pytest.raises(RuntimeError):
            a + 1
        with pytest.raises(RuntimeError, match="donated to a jitted function"):
            f(a, b)
    assert out.data_ptr() == buffer  # the cached run wrote the sum into the donated buffer


def test_donate_argnames_donates_by_name():
    f = ug.jit(lambda a, b: a * b, donate_argnames="b")
    a, b = ug.randn(8), ug.randn(8)
    expected = a * b
    same(f(a, b=b).numpy(), expected.numpy())
    assert b.is_deleted() and not a.is_deleted()


def test_a_tensor_donated_and_passed_again_raises_as_in_jax():
    with pytest.raises(RuntimeError):
        jax.jit(lambda a, b: a + b, donate_argnums=0)(*(2 * [jnp.ones(4)]))
    a = ug.ones(4)
    with pytest.raises(ValueError, match="donated tensor .* passed 2 times"):
        ug.jit(lambda a, b: a + b, donate_argnums=0)(a, a)
    assert not a.is_deleted()


def test_a_static_argument_cannot_be_donated_as_in_jax():
    with pytest.raises(ValueError):
        jax.jit(lambda a, n: a * n, static_argnums=1, donate_argnums=1)
    with pytest.raises(ValueError, match="static and donated"):
        ug.jit(lambda a, n: a * n, static_argnums=1, donate_argnums=1)


def test_a_buffer_held_elsewhere_is_not_usable_and_stays_the_callers():
    # A module's parameter (the module holds it too) and a view: JAX's warning, nothing deleted.
    model = ug.nn.Linear(4, 4)
    base = ug.randn(2, 4)
    f = ug.jit(lambda w, x: w * 2 + x, donate_argnums=(0, 1))
    for w, x in [(model.weight, ug.randn(4, 4)), (ug.randn(2, 4), base[0])]:
        expected = (w * 2 + x).numpy()
        with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
            out = f(w, x)
        same(out.numpy(), expected)
    assert not model.weight.is_deleted() and not base.is_deleted()
    model(ug.randn(1, 4))  # the parameter is still usable


def adam_step(optimizer, loss_of, applied=True):
    """A JAX-style training step; without `applied`, it returns the updates, not the new
    parameters (the update's own form, which no addition follows in the program)."""
    def step(params, opt_state, x):
        loss, grads = ug.value_and_grad(loss_of)(params, x)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates) if applied else updates, opt_state, loss
    return step


def fresh_state(optimizer, n, seed):
    params = {"w": ug.tensor(np.random.default_rng(seed).standard_normal(n).astype(np.float32))}
    return params, optimizer.init(params)


def loss_of(params, x):
    return ((params["w"] * x - 1.0) ** 2).mean()


@pytest.mark.filterwarnings("error:Some donated buffers")
@pytest.mark.parametrize("make", [lambda p: ug.optim.Adam(p, lr=1e-2), lambda p: ug.optim.AdamW(p, lr=1e-2),
                                  lambda p: ug.optim.Adam(p, lr=1e-2, amsgrad=True),
                                  lambda p: ug.optim.Adam(p, lr=1e-2, weight_decay=0.1),
                                  lambda p: ug.optim.SGD(p, lr=1e-2, momentum=0.9)])
@pytest.mark.parametrize("n", [1000, 100_000])  # 100k: the update split across threads
@pytest.mark.parametrize("applied", [True, False])
def test_the_donated_jax_style_step_equals_the_undonated_bit_for_bit(make, n, applied):
    optimizer = make([ug.zeros(1)])
    step = adam_step(optimizer, loss_of, applied)
    plain, donating = ug.jit(step), ug.jit(step, donate_argnums=(0, 1))
    a, b, c = (fresh_state(optimizer, n, 0) for _ in range(3))
    for i in range(6):
        x = ug.tensor(np.random.default_rng(10 + i).standard_normal(n).astype(np.float32))
        *a, loss_a = plain(*a, x)
        old = b
        *b, loss_b = donating(*b, x)
        *c, loss_c = step(*c, x)  # eager
        assert all(t.is_deleted() for t in ug.tree_leaves(old))
        same(loss_a.numpy(), loss_b.numpy())
        same(loss_a.numpy(), loss_c.numpy())
        for u, v, w in zip(ug.tree_leaves(a), ug.tree_leaves(b), ug.tree_leaves(c)):
            same(u.numpy(), v.numpy())
            same(u.numpy(), w.numpy())
        if not applied:  # the next step from the same parameters
            a[0], b[0], c[0] = (fresh_state(optimizer, n, 0)[0] for _ in range(3))


def peak_of(fn, *args):
    """Bytes allocated at the peak of one call beyond what was live before it, and its result."""
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    out = fn(*args)
    return ug.memory.max_allocated() - before, out


@pytest.mark.filterwarnings("error:Some donated buffers")
def test_a_donated_step_writes_the_optimizer_state_in_place():
    # Beyond the caller's params and state, the undonated step's peak is at the update: the
    # gradient, the new parameter and the next exp_avg and exp_avg_sq in fresh arrays (4 arrays
    # of the parameter's size); donated, the update writes the next state over the old, and
    # the peak holds 2 such arrays (the gradient, then the forward's product and its gradient).
    # Bound between: 1.5 arrays fewer.
    n = 1 << 22
    optimizer = ug.optim.Adam([ug.zeros(1)], lr=1e-2)
    step = adam_step(optimizer, lambda params, x: (params["w"] * x).sum())
    x = ug.randn(n)
    peaks = {}
    for donate in [(), (0, 1)]:
        jitted = ug.jit(step, donate_argnums=donate)
        state = fresh_state(optimizer, n, 0)
        *state, _ = jitted(*state, x)  # traced, and Adam's state made
        *state, _ = jitted(*state, x)
        peaks[donate], _ = peak_of(jitted, *state, x)
        del state
    assert peaks[(0, 1)] < peaks[()] - 1.5 * n * F32, peaks


def test_an_undonated_step_writes_the_new_parameter_over_the_dying_gradient():
    # The undonated step's peak beyond the caller's arrays: the gradient and the next exp_avg
    # and exp_avg_sq (3 arrays of the parameter's size), the new parameter written over the
    # gradient, which the program reads for the last time there; a fresh array would make 4.
    n = 1 << 22
    optimizer = ug.optim.Adam([ug.zeros(1)], lr=1e-2)
    step = ug.jit(adam_step(optimizer, lambda params, x: (params["w"] * x).sum()))
    x = ug.randn(n)
    state = fresh_state(optimizer, n, 0)
    for _ in range(2):  # traced, and Adam's state made
        *state, _ = step(*state, x)
    peak, (params, _, _) = peak_of(step, *state, x)
    assert 2.5 * n * F32 < peak < 3.5 * n * F32, peak / (n * F32)
    assert not np.shares_memory(params["w"].numpy(), state[0]["w"].numpy())
