"""ug.jit meeting ug.vmap: jit(vmap(grad)), jit(vmap(value_and_grad)), vmap(jit), jit(vmap)
and vmap(jit(vmap)) through the ops whose batching rules and kernels compute intermediates of
their own (a row's maximum, a normaliser, an order, a running sum, a window's maximum), against
eager unigrad and against jax.jit of the same transforms. Each compiled function is called three
times on new inputs: a value that a program froze as a constant of its trace shows only from
the second call on. Float64 throughout: sums of at most a few dozen terms of magnitude below
10, within the dtype's tolerance (reference.py)."""

import numpy as np
import pytest

import unigrad as ug
from reference import assert_close

F = ug.nn.functional
RANK = np.array([1.0, -0.5, 2.0, 0.25])  # weights of a sort's places: the gradient depends on the order


@pytest.fixture(scope="module")
def jax(jax64):
    return jax64


def ug_ops():
    """Each op on one example v ([3, 4]), in unigrad."""
    return {
        "softmax": lambda v: ug.softmax(v, -1),
        "softmax_dim0": lambda v: ug.softmax(v, 0),
        "log_softmax": lambda v: ug.log_softmax(v, -1),
        "layer_norm": lambda v: F.layer_norm(v, (4,)),
        "amax": lambda v: ug.amax(v, -1),
        "max": lambda v: ug.max(v, -1)[0],
        "argmax": lambda v: ug.take_along_dim(v, ug.argmax(v, -1, keepdim=True), -1),
        "logsumexp": lambda v: ug.logsumexp(v, -1),
        "sort": lambda v: ug.sort(v, -1)[0] * ug.tensor(RANK),
        "topk": lambda v: ug.topk(v, 2)[0] * ug.tensor(RANK[:2]),
        "cumsum": lambda v: ug.cumsum(v, -1),
        "attention": lambda v: F.scaled_dot_product_attention(v, v * 0.5, v.sin()),
        "max_pool2d": lambda v: F.max_pool2d(v.unsqueeze(0), (1, 2))[0],
        "avg_pool2d": lambda v: F.avg_pool2d(v.unsqueeze(0), (1, 2))[0],
    }


def jax_ops(jax):
    jnp = jax.numpy

    def layer_norm(v):
        mean = v.mean(-1, keepdims=True)
        return (v - mean) / jnp.sqrt(((v - mean) ** 2).mean(-1, keepdims=True) + 1e-5)

    def attention(v):
        q, k, w = v, v * 0.5, jnp.sin(v)
        return jax.nn.softmax(q @ k.T / np.sqrt(4.0), axis=-1) @ w

    return {
        "softmax": lambda v: jax.nn.softmax(v, axis=-1),
        "softmax_dim0": lambda v: jax.nn.softmax(v, axis=0),
        "log_softmax": lambda v: jax.nn.log_softmax(v, axis=-1),
        "layer_norm": layer_norm,
        "amax": lambda v: jnp.max(v, -1),
        "max": lambda v: jnp.max(v, -1),
        "argmax": lambda v: jnp.take_along_axis(v, jnp.argmax(v, -1, keepdims=True), -1),
        "logsumexp": lambda v: jax.scipy.special.logsumexp(v, -1),
        "sort": lambda v: jnp.sort(v, -1) * RANK,
        "topk": lambda v: jax.lax.top_k(v, 2)[0] * RANK[:2],
        "cumsum": lambda v: jnp.cumsum(v, -1),
        "attention": attention,
        "max_pool2d": lambda v: jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 2), (1, 2), "VALID"),
        "avg_pool2d": lambda v: jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 2), (1, 2), "VALID") / 2,
    }


OPS = sorted(ug_ops())


def inputs(call):
    """w ([4], shared) and a batch of 5 examples x ([5, 3, 4]), new at each call."""
    rng = np.random.default_rng(call)
    return rng.uniform(0.5, 2.0, 4), rng.uniform(-2.0, 2.0, (5, 3, 4))


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(name, make_ug, make_jax, jax):
    """make_ug(op) / make_jax(op) give f(w, xs); the compiled unigrad function, called on three
    inputs, against eager unigrad (the same kernels) and against JAX."""
    op, jop = ug_ops()[name], jax_ops(jax)[name]
    compiled, eager, reference = make_ug(op, True), make_ug(op, False), jax.jit(make_jax(jop))
    for call in range(3):
        w, xs = inputs(call)
        actual = as_list(compiled(ug.tensor(w), ug.tensor(xs)))
        expected = as_list(eager(ug.tensor(w), ug.tensor(xs)))
        theirs = as_list(reference(w, xs))
        assert len(actual) == len(expected) == len(theirs)
        for a, e, t in zip(actual, expected, theirs):
            where = f"{name}, call {call + 1}"
            assert_close(a.numpy(), e.numpy(), path=f"{where}: compiled against eager")
            assert_close(a.numpy(), np.asarray(t), path=f"{where}: against jax.jit")


def loss(op, m):
    return lambda w, x: m.sin(op(x * w)).sum()


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("name", OPS)
def test_jit_of_vmap_of_a_gradient(name, transform, jax):
    def make_ug(op, jit):
        f = ug.vmap(getattr(ug, transform)(loss(op, ug)), in_axes=(None, 0))
        return ug.jit(f) if jit else f

    check(name, make_ug, lambda op: jax.vmap(getattr(jax, transform)(loss(op, jax.numpy)), in_axes=(None, 0)), jax)


def example(op, m):
    return lambda w, x: m.sin(op(x * w))


@pytest.mark.parametrize("name", OPS)
def test_vmap_of_jit(name, jax):
    def make_ug(op, jit):
        return ug.vmap(ug.jit(example(op, ug)) if jit else example(op, ug), in_axes=(None, 0))

    check(name, make_ug, lambda op: jax.vmap(jax.jit(example(op, jax.numpy)), in_axes=(None, 0)), jax)


@pytest.mark.parametrize("name", OPS)
def test_jit_of_vmap(name, jax):
    def make_ug(op, jit):
        f = ug.vmap(example(op, ug), in_axes=(None, 0))
        return ug.jit(f) if jit else f

    check(name, make_ug, lambda op: jax.vmap(example(op, jax.numpy), in_axes=(None, 0)), jax)


@pytest.mark.parametrize("name", OPS)
def test_vmap_of_jit_of_vmap(name, jax):
    # A program that opens a vmap of its own, run under another: the examples' rows.
    def make_ug(op, jit):
        rows = lambda w, x: ug.vmap(lambda r: example(op, ug)(w, r.reshape((1, 4)))[0])(x)  # noqa: E731
        return ug.vmap(ug.jit(rows) if jit else rows, in_axes=(None, 0))

    def make_jax(op):
        return jax.vmap(jax.jit(lambda w, x: jax.vmap(lambda r: example(op, jax.numpy)(w, r.reshape((1, 4)))[0])(x)), in_axes=(None, 0))

    check(name, make_ug, make_jax, jax)


@pytest.mark.parametrize("dim", [0, 1])
def test_a_sort_along_any_dim_compiles_under_vmap(dim):
    # The batched sort runs the physical sort, which sorts a transposed buffer of its kernel's:
    # the program emits that sort whole, not the transpose it made its result with.
    xs = ug.tensor(np.random.default_rng(0).uniform(-1, 1, (3, 4, 6)))
    weights = ug.arange(24.0, dtype=ug.float64).reshape(4, 6)

    def f(v):
        return (v.sort(dim).values ** 2 * weights).sum()

    for transform in (ug.vmap, lambda fn: ug.vmap(ug.grad(fn))):
        # the same float64 operations in the same order
        np.testing.assert_array_equal(ug.jit(transform(f))(xs).numpy(), transform(f)(xs).numpy())


def test_a_program_of_vmap_reads_a_view_as_it_was_before_a_later_write():
    # The batched add reads v7 through an expand its batching rule made (no op): the program,
    # which emits that add late, must read v7 as it was, not as the write left it.
    xs = ug.tensor(np.random.default_rng(0).uniform(-1, 1, (3, 4, 6)))
    b = ug.tensor(np.random.default_rng(1).uniform(-1, 1, 6))

    def g(a, b):
        v5 = b * 1.0
        v7 = v5.unsqueeze(0)
        v9 = (v7 + a) * 2
        v5.copy_(v5 * 0.5)
        return (v9 * v9).sum() + (v7 * v7).sum() * 3

    want = np.array([g(x, b).item() for x in xs])
    # sums of 24 and 6 float64 terms, maybe in other orders batched: far under 1e-13 of them
    np.testing.assert_allclose(ug.jit(ug.vmap(g, in_axes=(0, None)))(xs, b).numpy(), want, rtol=1e-13)


def doubling_loop(m, lax):
    """Doubles x (positive) until its sum reaches 10, counting the steps: each example its own trip count."""
    return lambda x: lax.while_loop(lambda c: c[0].sum() < 10, lambda c: (c[0] * 2, c[1] + 1), (x, m.asarray(0)))


def two_branches(m, lax):
    return lambda x: lax.cond(x.sum() > 1, lambda v: m.sin(v) * 2, lambda v: v - 1, x)


@pytest.mark.parametrize("make", [doubling_loop, two_branches], ids=["while_loop", "cond"])
def test_control_flow_on_a_per_example_condition_batches_under_vmap_of_jit(make, jax):
    # The condition is one example's inside the program; run under the vmap, the Loop node loops
    # until no example goes on (each keeping its carry from when its condition stopped
    # holding), and If runs both branches and picks per example: JAX's batching rules, with no
    # call per example, from the first call (the trace) on.
    f, want_f = ug.vmap(ug.jit(make(ug, ug.lax))), jax.vmap(jax.jit(make(jax.numpy, jax.lax)))
    rng = np.random.default_rng(4)
    before = ug._C._functional.vmap_fallbacks()
    for call in range(3):
        xs = rng.uniform(0.1, 4, (5, 2))  # positive: every loop ends
        got, want = ug.tree_leaves(f(ug.tensor(xs))), jax.tree_util.tree_leaves(want_f(jax.numpy.asarray(xs)))
        for g, w in zip(got, want):
            assert_close(g.numpy(), np.asarray(w), path=f"call {call}")
    assert ug._C._functional.vmap_fallbacks() == before
