"""ug.lax's collectives over a named vmap axis against JAX: ug.vmap(f, axis_name="i") with
psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute and axis_index inside, nested
names, pytrees, gradients from outside the vmap and per example inside it, forward mode,
ug.jit, and the errors. Float64 throughout where values are compared (sums of at most 8 terms:
the dtype's tolerance, see reference.py); gradients also against central differences."""
from types import SimpleNamespace

import numpy as np
import pytest

import unigrad as ug
from reference import TOLERANCES, assert_close, check_central_differences

RTOL, ATOL = TOLERANCES["float64"]


@pytest.fixture(scope="module")
def jax(jax64):
    return jax64


@pytest.fixture(scope="module")
def J(jax):
    return SimpleNamespace(vmap=jax.vmap, lax=jax.lax, grad=jax.grad, jit=jax.jit, jvp=jax.jvp, vjp=jax.vjp,
                           arr=jax.numpy.asarray, np=jax.numpy)


U = SimpleNamespace(vmap=ug.vmap, lax=ug.lax, grad=ug.grad, jit=ug.jit, jvp=ug.jvp, vjp=ug.vjp, arr=ug.tensor, np=ug)


def rand(*shape, seed=0, dtype="float64"):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape).astype(dtype)


def leaves(tree):
    if isinstance(tree, dict):
        return [v for k in sorted(tree) for v in leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [v for t in tree for v in leaves(t)]
    return [tree]


def numpy(v):
    return v.numpy() if isinstance(v, ug.Tensor) else np.asarray(v)


def same(f, J, *inputs, dtype_too=True):
    """f(m, *arrays) for m = JAX and unigrad: the same structure, shapes, dtypes and values."""
    expected = leaves(f(J, *(J.arr(x) for x in inputs)))
    actual = leaves(f(U, *(ug.tensor(x) for x in inputs)))
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = numpy(a), np.asarray(e)
        assert a.shape == e.shape, f"leaf {i}: shape {a.shape} != JAX's {e.shape}"
        if dtype_too:
            assert a.dtype == e.dtype, f"leaf {i}: dtype {a.dtype} != JAX's {e.dtype}"
        assert_close(a, e, "float64", RTOL, ATOL, path=f"leaf {i}")


# ---- values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["psum", "pmean", "pmax", "pmin"])
def test_reductions_normalise_over_the_batch(J, op):
    def f(m, xs):
        red = getattr(m.lax, op)
        return (m.vmap(lambda x: x / red(x, "i"), axis_name="i")(xs),
                m.vmap(lambda x: red(x, "i"), axis_name="i", out_axes=None)(xs),  # unbatched: the same for all
                m.vmap(lambda x: red(x * 2, "i"), in_axes=1, axis_name="i")(xs))

    same(f, J, rand(5, 3, 4))


def test_reductions_keep_the_dtype(J):
    def f(m, xs, ks):
        return (m.vmap(lambda x: m.lax.psum(x, "i"), axis_name="i")(xs),
                m.vmap(lambda k: (m.lax.psum(k, "i"), m.lax.pmax(k, "i"), m.lax.pmean(k, "i"),
                                  m.lax.psum(k > 4, "i"), m.lax.psum(k[0] > 4, "i")), axis_name="i")(ks))

    same(f, J, rand(4, 3, dtype="float32"), np.arange(12, dtype="int32").reshape(4, 3))


def test_pytrees_and_numbers(J):
    def f(m, xs, ys):
        def g(x, y):
            tree = m.lax.psum({"a": x, "b": (y, 2.0)}, "i")
            return tree["a"] * m.lax.psum(1, "i") + tree["b"][0].sum() + tree["b"][1], m.lax.pmean([x, y], "i")

        return m.vmap(g, axis_name="i")(xs, ys)

    same(f, J, rand(6, 3), rand(6, 2, 2, seed=1), dtype_too=False)  # JAX's Python-number leaf is weakly typed


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (2, False), (-1, False), (0, True), (1, True)])
def test_all_gather(J, axis, tiled):
    def f(m, xs):
        return m.vmap(lambda x: m.lax.all_gather(x, "i", axis=axis, tiled=tiled) * 3, axis_name="i")(xs)

    same(f, J, rand(4, 2, 3))


@pytest.mark.parametrize("dim,tiled,shape", [(0, False, (3, 3, 2)), (1, False, (3, 2, 3)), (0, True, (3, 6, 2)),
                                             (1, True, (3, 2, 9))])
def test_psum_scatter(J, dim, tiled, shape):
    def f(m, xs):
        return m.vmap(lambda x: m.lax.psum_scatter(x, "i", scatter_dimension=dim, tiled=tiled), axis_name="i")(xs)

    same(f, J, rand(*shape))


def test_ppermute_and_axis_index(J):
    def f(m, xs):
        def g(x):
            shifted = m.lax.ppermute(x, "i", [(i, (i + 1) % 5) for i in range(5)])
            swapped = m.lax.ppermute(x, "i", [(0, 4), (4, 0), (1, 2), (2, 1), (3, 3)])
            return shifted, swapped, m.lax.axis_index("i"), x * m.lax.axis_index("i")

        return m.vmap(g, axis_name="i")(xs)

    same(f, J, rand(5, 3))


def test_ppermute_with_positions_no_pair_sends_to_get_zeros():
    # JAX refuses a partial permutation under vmap; under pmap it means zeros there, as here.
    xs = rand(4, 3)
    out = ug.vmap(lambda x: ug.lax.ppermute(x, "i", [(0, 1), (2, 3)]), axis_name="i")(ug.tensor(xs))
    np.testing.assert_array_equal(out.numpy(), np.stack([np.zeros(3), xs[0], np.zeros(3), xs[2]]))


def test_axis_size_without_a_mapped_argument(J):
    def f(m, w):
        return m.vmap(lambda v: v * m.lax.axis_index("i") + m.lax.psum(v, "i"), in_axes=None, axis_name="i",
                      axis_size=4)(w)

    same(f, J, rand(3), dtype_too=False)  # JAX's int32 index times float64: both float64 here


def test_nested_names_reach_their_own_level(J):
    def f(m, xs):
        def inner(x):
            return (m.lax.psum(x, "i"), m.lax.psum(x, "j"), m.lax.psum(x, ("i", "j")), m.lax.pmax(x, "i"),
                    m.lax.all_gather(x, "i"), m.lax.all_gather(x, "j", axis=1),
                    m.lax.axis_index("i") * 10 + m.lax.axis_index("j"),
                    m.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]), m.lax.psum_scatter(x, "i"))

        return m.vmap(m.vmap(inner, axis_name="j"), axis_name="i")(xs)

    same(f, J, rand(3, 4, 3))


def test_the_innermost_binding_of_a_name_wins(J):
    def f(m, xs):
        return m.vmap(m.vmap(lambda x: (m.lax.psum(x, "i"), m.lax.axis_index("i")), axis_name="i"), axis_name="i")(xs)

    same(f, J, rand(2, 5))


def test_an_unnamed_vmap_between_passes_through(J):
    def f(m, xs):
        return m.vmap(m.vmap(lambda x: x - m.lax.pmean(x, "i")), axis_name="i", in_axes=1)(xs)

    same(f, J, rand(3, 4, 2))


# ---- derivatives ----------------------------------------------------------------------------------


def normalised_loss(m, xs, w):
    """A per-example value that needs a batch statistic: the batch-normalised x, weighted."""
    def per_example(x):
        centred = x - m.lax.pmean(x, "i")
        var = m.lax.pmean(centred * centred, "i")
        return (centred / m.np.sqrt(var + 0.5) * w).sum() + m.lax.psum((x * x).sum(), "i") * 0.1

    return m.vmap(per_example, axis_name="i")(xs)


def test_grad_of_vmap(J):
    w = rand(3, seed=2)

    def f(m, xs, w):
        loss = lambda xs, w: (normalised_loss(m, xs, w) * m.arr(np.arange(1.0, 6.0))).sum()
        return m.grad(loss, argnums=(0, 1))(xs, w)

    same(f, J, rand(5, 3), w)
    loss = lambda v: (normalised_loss(U, v.reshape(5, 3), ug.tensor(w)) * ug.arange(1.0, 6.0)).sum()
    x = ug.tensor(rand(5, 3).reshape(-1))
    check_central_differences(loss, x, ug.grad(loss)(x), 1e-8)


def test_grad_of_vmap_through_every_linear_collective(J):
    def f(m, xs, w):
        def per_example(x, w):
            g = m.lax.all_gather(x, "i", axis=1)
            s = m.lax.psum_scatter(g, "i", scatter_dimension=1)
            p = m.lax.ppermute(x, "i", [(0, 2), (2, 1), (1, 3), (3, 0)])
            return (g.sum(1) * p[0] + s * m.lax.pmean(w, "i") + m.lax.psum(w * x, "i")).sum()

        loss = lambda xs, w: (m.vmap(per_example, in_axes=(0, None), axis_name="i")(xs, w) ** 2).sum()
        return m.grad(loss, argnums=(0, 1))(xs, w)

    same(f, J, rand(4, 3), rand(3, seed=1))


@pytest.mark.parametrize("op", ["psum", "pmean", "all_gather", "psum_scatter", "ppermute"])
def test_per_example_gradients_transpose_as_in_jax(J, op):
    def f(m, xs, c):
        coll = {"psum": lambda x: m.lax.psum(x, "i"), "pmean": lambda x: m.lax.pmean(x, "i"),
                "all_gather": lambda x: m.lax.all_gather(x, "i").reshape(-1)[:4],
                "psum_scatter": lambda x: m.lax.psum_scatter(x.reshape(4, 1) * x, "i"),
                "ppermute": lambda x: m.lax.ppermute(x, "i", [(0, 3), (3, 1), (1, 2), (2, 0)])}[op]
        return m.vmap(m.grad(lambda x: (coll(x) * c * x).sum() + (coll(x * x) * c).sum()), axis_name="i")(xs)

    same(f, J, rand(4, 4), rand(4, seed=1))


def test_per_example_gradient_of_a_shared_argument(J):
    def f(m, w, xs):
        loss = lambda w, x: (m.lax.psum(w * x, "i") ** 2).sum() + (m.lax.pmean(w, "i") * x).sum()
        return m.vmap(m.grad(loss), in_axes=(None, 0), axis_name="i")(w, xs)

    same(f, J, rand(3), rand(5, 3, seed=1))


def test_gradient_of_a_closed_over_parameter_through_vmap(J):
    # pmean of a value every example shares, differentiated from outside: the gradient of the copy.
    def f(m, w, xs):
        loss = lambda w: (m.vmap(lambda x: m.lax.pmean(w, "i") * x + m.lax.psum(w, "i"), axis_name="i")(xs) ** 2).sum()
        return m.grad(loss)(w)

    same(f, J, rand(3), rand(5, 3, seed=1))


def test_forward_mode(J):
    def f(m, xs, t):
        g = lambda xs: m.vmap(lambda x: x * m.lax.psum(x * x, "i") + m.lax.all_gather(x, "i")[0], axis_name="i")(xs)
        return (m.jvp(g, (xs,), (t,)),
                m.vmap(lambda x, u: m.jvp(lambda y: y * m.lax.pmean(y, "i"), (x,), (u,)), axis_name="i")(xs, t))

    same(f, J, rand(4, 3), rand(4, 3, seed=1))


@pytest.mark.parametrize("op", ["pmax", "pmin"])
def test_pmax_has_no_per_example_derivative_as_in_jax(jax, op):
    xs = rand(4, 3)
    with pytest.raises(NotImplementedError):
        jax.vmap(jax.grad(lambda x: getattr(jax.lax, op)(x, "i").sum()), axis_name="i")(xs)
    with pytest.raises(RuntimeError, match=f"\\[{op}\\] has no derivative inside the vmap"):
        ug.vmap(ug.grad(lambda x: getattr(ug.lax, op)(x, "i").sum()), axis_name="i")(ug.tensor(xs))
    # From outside, it is a maximum over the batch dim: the gradient goes to the largest.
    g = ug.grad(lambda v: ug.vmap(lambda x: getattr(ug.lax, op)(x, "i"), axis_name="i")(v).sum())(ug.tensor(xs))
    hit = xs == (xs.max(0) if op == "pmax" else xs.min(0))
    np.testing.assert_array_equal(g.numpy(), hit * 4.0)


# ---- ug.jit -------------------------------------------------------------------------------------------


def test_jit_of_vmap(J):
    def f(m, xs):
        def g(x):
            return (x / m.lax.psum(x, "i"), m.lax.all_gather(x, "i", axis=1), m.lax.axis_index("i"),
                    m.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), m.lax.pmax(x, "i"))

        return m.jit(m.vmap(g, axis_name="i"))(xs)

    same(f, J, rand(4, 3))
    same(f, J, rand(4, 3, seed=5))  # the cached program on new values


def test_jit_of_grad_of_vmap_and_of_per_example_grads(J):
    def f(m, xs, w):
        return (m.jit(m.grad(lambda xs, w: (normalised_loss(m, xs, w) ** 2).sum(), argnums=(0, 1)))(xs, w),
                m.jit(m.vmap(m.grad(lambda x: (x * m.lax.pmean(x, "i")).sum()), axis_name="i"))(xs))

    same(f, J, rand(5, 3), rand(3, seed=1))
    same(f, J, rand(5, 3, seed=2), rand(3, seed=3))


def test_jit_of_per_example_grads_through_a_view_of_a_collective(J):
    def f(m, xs):
        return m.jit(m.vmap(m.grad(lambda x: (m.lax.all_gather(x, "i")[0] * x).sum()), axis_name="i"))(xs)

    same(f, J, rand(4, 3))


def test_vmap_of_jit_calls_the_collective_back(J):
    def f(m, xs):
        return m.vmap(m.jit(lambda x: x - m.lax.pmean(x, "i")), axis_name="i")(xs)

    same(f, J, rand(4, 3))
    same(f, J, rand(4, 3, seed=1))


# ---- errors -----------------------------------------------------------------------------------------


def test_an_unbound_name_raises_name_error(jax):
    xs = ug.tensor(rand(3, 2))
    with pytest.raises(NameError):
        jax.vmap(lambda x: jax.lax.psum(x, "j"), axis_name="i")(rand(3, 2))
    for call in (lambda: ug.lax.psum(xs, "i"), lambda: ug.lax.axis_index("i"),
                 lambda: ug.vmap(lambda x: ug.lax.pmean(x, "j"), axis_name="i")(xs),
                 lambda: ug.vmap(lambda x: ug.lax.all_gather(x, "i"))(xs),
                 lambda: ug.vmap(lambda x: ug.lax.ppermute(x, "i", [(0, 1)]))(xs)):
        with pytest.raises(NameError, match="unbound axis name: '[ij]'"):
            call()
    with pytest.raises(ValueError, match=r"\[psum\] unbound axis name: 'i'"):  # the C++ op itself
        ug._C._lax.psum(xs, "i")


def test_a_name_is_unbound_once_vmap_returns():
    ug.vmap(lambda x: ug.lax.psum(x, "i"), axis_name="i")(ug.ones(3))
    with pytest.raises(NameError):
        ug.lax.psum(ug.ones(3), "i")
    with pytest.raises(ValueError):  # an error inside f unbinds it too
        ug.vmap(lambda x: x.reshape(7), axis_name="i")(ug.ones(3, 2))
    with pytest.raises(NameError):
        ug.lax.psum(ug.ones(3), "i")


def test_bad_arguments_name_the_op():
    xs = ug.tensor(rand(3, 2))
    with pytest.raises(ValueError, match=r"\[ppermute\] pair \(0, 3\) is out of range for axis 'i' of size 3"):
        ug.vmap(lambda x: ug.lax.ppermute(x, "i", [(0, 3)]), axis_name="i")(xs)
    with pytest.raises(ValueError, match=r"\[ppermute\] perm must send from and to each position at most once"):
        ug.vmap(lambda x: ug.lax.ppermute(x, "i", [(0, 1), (2, 1)]), axis_name="i")(xs)
    with pytest.raises(ValueError, match=r"\[psum_scatter\] dim 0 of x \(shape \[2\]\) must equal the size of axis"):
        ug.vmap(lambda x: ug.lax.psum_scatter(x, "i"), axis_name="i")(xs)
    with pytest.raises(IndexError):
        ug.vmap(lambda x: ug.lax.all_gather(x, "i", axis=3), axis_name="i")(xs)
    with pytest.raises(NotImplementedError, match=r"\[all_gather\] over several axes at once"):
        ug.vmap(ug.vmap(lambda x: ug.lax.all_gather(x, ("i", "j")), axis_name="j"), axis_name="i")(ug.ones(2, 3, 2))


def test_a_collective_where_vmap_runs_once_per_example_says_why():
    # int() reads a value: no batching rule, so vmap falls back to one call per example, where
    # a collective cannot see the other examples.
    def f(x):
        return x * int(x.argmax()) + ug.lax.psum(x, "i")

    with pytest.raises(RuntimeError, match="needs every example of vmap axis 'i' at once, but that vmap runs its "
                                           "function once per example"):
        ug.vmap(f, axis_name="i")(ug.tensor(rand(3, 2)))
    assert ug.vmap(lambda x: x * int(x.argmax()))(ug.ones(3, 2)).shape == (3, 2)  # without a collective it works
