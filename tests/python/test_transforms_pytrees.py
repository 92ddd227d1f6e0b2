"""JAX's function transforms over pytrees, against jax 0.10.2 itself: vmap's in_axes and
out_axes as pytree prefixes (None leaves included), keyword arguments, axis_size; jacrev,
jacfwd and hessian of dict and tuple arguments, argnums tuples and has_aux. Values are
float32 in both (JAX's default): each compared entry is a short sum of products, so a
relative 1e-5 covers the difference in summation order."""
import dataclasses
import os

import numpy as np
import pytest

import unigrad as ug
from unigrad.tree import tree_flatten


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def to_ug(tree):
    return {k: to_ug(v) for k, v in tree.items()} if isinstance(tree, dict) else (
        type(tree)(to_ug(v) for v in tree) if isinstance(tree, (tuple, list)) else ug.tensor(tree))


def to_jax(jax, tree):
    return jax.tree.map(jax.numpy.asarray, tree)


def assert_tree_close(expected, got, tol=1e-5):
    """Same structure (dict keys, tuple/list nesting), shapes and values."""
    e_leaves, e_def = tree_flatten(expected_as_lists(expected))
    g_leaves, g_def = tree_flatten(got)
    assert repr(e_def) == repr(g_def), f"structure {g_def} != {e_def}"
    for e, g in zip(e_leaves, g_leaves):
        g = g.numpy() if isinstance(g, ug.Tensor) else np.asarray(g)
        assert tuple(g.shape) == tuple(np.shape(e))
        np.testing.assert_allclose(g, np.asarray(e), rtol=tol, atol=tol)


def expected_as_lists(tree):
    """JAX's result with its arrays as NumPy arrays (our tree_flatten treats those as leaves)."""
    if isinstance(tree, dict):
        return {k: expected_as_lists(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(expected_as_lists(v) for v in tree)
    return np.asarray(tree)


def sin(x):
    return ug.sin(x) if isinstance(x, ug.Tensor) else __import__("jax").numpy.sin(x)


def tanh(x):
    return ug.tanh(x) if isinstance(x, ug.Tensor) else __import__("jax").numpy.tanh(x)


rng = np.random.default_rng(11)
PARAMS = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": rng.normal(size=(2,)).astype(np.float32)}
XS = rng.normal(size=(5, 3)).astype(np.float32)


def model(p, x):
    return x @ p["w"] + p["b"]


def test_vmap_in_axes_prefixes_with_none_leaves(jax):
    per_w = {"w": rng.normal(size=(5, 3, 2)).astype(np.float32), "b": PARAMS["b"]}
    for in_axes, params in [(({"w": None, "b": None}, 0), PARAMS), ((None, 0), PARAMS),
                            (({"w": 0, "b": None}, 0), per_w), (({"w": 0, "b": None}, None), per_w)]:
        expected = jax.vmap(model, in_axes=in_axes)(to_jax(jax, params), XS)
        got = ug.vmap(model, in_axes=in_axes)(to_ug(params), ug.tensor(XS))
        assert_tree_close(expected, got)
    # a list argument with a list prefix, and in_axes given as a list
    pair = [XS, XS[0]]
    f = lambda a: a[0] * a[1]  # noqa: E731
    assert_tree_close(jax.vmap(f, in_axes=([0, None],))(to_jax(jax, pair)),
                      ug.vmap(f, in_axes=([0, None],))(to_ug(pair)))
    assert_tree_close(jax.vmap(lambda a, b: a - b, in_axes=[1, None])(XS, XS[:, 0]),
                      ug.vmap(lambda a, b: a - b, in_axes=[1, None])(ug.tensor(XS), ug.tensor(XS[:, 0])))


def test_vmap_of_grad_with_a_dict_of_params_is_per_example(jax):
    ys = rng.normal(size=(5, 2)).astype(np.float32)
    loss = lambda p, x, y: ((model(p, x) - y) ** 2).sum()  # noqa: E731
    expected = jax.vmap(jax.grad(loss), in_axes=({"w": None, "b": None}, 0, 0))(to_jax(jax, PARAMS), XS, ys)
    got = ug.vmap(ug.grad(loss), in_axes=({"w": None, "b": None}, 0, 0))(to_ug(PARAMS), ug.tensor(XS), ug.tensor(ys))
    assert_tree_close(expected, got)


def test_vmap_keyword_arguments_map_over_dim_0(jax):
    f = lambda x, scale=None: x * scale  # noqa: E731
    assert_tree_close(jax.vmap(f)(XS, scale=XS[:, :1]), ug.vmap(f)(ug.tensor(XS), scale=ug.tensor(XS[:, :1])))


def test_vmap_out_axes_prefix_with_unbatched_outputs(jax):
    def f(x, w):
        return {"y": x @ w, "norm": (w ** 2).sum(), "pair": (x.sum(), w.T)}

    w = PARAMS["w"]
    out_axes = {"y": 1, "norm": None, "pair": (0, None)}
    expected = jax.vmap(f, in_axes=(0, None), out_axes=out_axes)(XS, w)
    got = ug.vmap(f, in_axes=(0, None), out_axes=out_axes)(ug.tensor(XS), ug.tensor(w))
    assert_tree_close(expected, got)
    assert tuple(got["norm"].shape) == () and tuple(got["pair"][1].shape) == (2, 3)


def test_vmap_out_axes_none_for_a_batched_output_is_refused_as_jax_does(jax):
    f = lambda x: (x * 2, x.sum())  # noqa: E731
    with pytest.raises(ValueError, match="out_axes"):
        jax.vmap(f, out_axes=(0, None))(XS)
    with pytest.raises(ValueError, match=r"\[vmap\] out_axes is None for output 1 .*depends on the mapped axis"):
        ug.vmap(f, out_axes=(0, None))(ug.tensor(XS))
    # the same through the per-example loop (an op without a batching rule)
    g = lambda x: (x[x.argmax()] * 2, x.sum())  # noqa: E731
    with pytest.raises(ValueError, match="depends on the mapped axis"):
        ug.vmap(g, out_axes=(0, None))(ug.tensor(XS))
    # ... which still returns an output that does not depend on the batch unbatched
    w = ug.tensor(PARAMS["w"])
    picked, shared = ug.vmap(lambda x: (x[x.argmax()], w.sum()), out_axes=(0, None))(ug.tensor(XS))
    assert tuple(shared.shape) == () and np.isclose(float(shared), PARAMS["w"].sum(), rtol=1e-6)
    np.testing.assert_array_equal(picked.numpy(), XS.max(axis=1))


def test_vmap_axis_size_when_nothing_is_mapped(jax):
    f = lambda w: w * 2  # noqa: E731
    assert_tree_close(jax.vmap(f, in_axes=None, axis_size=4)(PARAMS["b"]),
                      ug.vmap(f, in_axes=None, axis_size=4)(ug.tensor(PARAMS["b"])))
    assert tuple(ug.vmap(lambda: ug.ones(2), axis_size=3)().shape) == (3, 2)
    with pytest.raises(ValueError, match=r"\[vmap\] mapped arguments have different sizes.*4 \(axis_size\) and 5"):
        ug.vmap(lambda x: x, axis_size=4)(ug.tensor(XS))
    with pytest.raises(ValueError, match="axis_size"):
        ug.vmap(lambda w: w, in_axes=None)(ug.tensor(PARAMS["b"]))


def test_vmap_in_axes_that_is_not_a_prefix_names_the_argument(jax):
    with pytest.raises(ValueError, match="tree prefix"):
        jax.vmap(model, in_axes=({"w": None}, 0))(to_jax(jax, PARAMS), XS)
    with pytest.raises(ValueError, match=r"\[vmap\] in_axes\[0\] must be a tree prefix.*keys \['w'\].*keys \['b', 'w'\]"):
        ug.vmap(model, in_axes=({"w": None}, 0))(to_ug(PARAMS), ug.tensor(XS))
    with pytest.raises(ValueError, match=r"in_axes\[0\] must be a tree prefix.*tuple of length 2.*dict"):
        ug.vmap(model, in_axes=((0, 0), 0))(to_ug(PARAMS), ug.tensor(XS))
    with pytest.raises(TypeError, match="in_axes must be an int, None or a tuple"):
        ug.vmap(model, in_axes={"w": 0})
    with pytest.raises(ValueError, match=r"in_axes has 1 entries for 2 positional arguments"):
        ug.vmap(model, in_axes=(0,))(to_ug(PARAMS), ug.tensor(XS))


def scalar_loss(p, x):
    return (tanh(model(p, x)) ** 2).sum() + (p["b"] * p["w"][0]).sum()


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_of_dict_arguments(jax, transform):
    def f_of(x):
        return lambda p: sin(model(p, x))

    expected = getattr(jax, transform)(f_of(XS[:2]))(to_jax(jax, PARAMS))
    got = getattr(ug, transform)(f_of(ug.tensor(XS[:2])))(to_ug(PARAMS))
    assert_tree_close(expected, got)
    # a dict output, argnums as a tuple, and auxiliary data
    g = lambda p, x: ({"out": model(p, x).sum(1), "x2": (x ** 2).sum()}, {"n": x.shape[0]})  # noqa: E731
    expected, aux_e = getattr(jax, transform)(g, argnums=(0, 1), has_aux=True)(to_jax(jax, PARAMS), XS[:2])
    got, aux_g = getattr(ug, transform)(g, argnums=(0, 1), has_aux=True)(to_ug(PARAMS), ug.tensor(XS[:2]))
    assert_tree_close(expected, got)
    assert aux_e == aux_g == {"n": 2}


def test_hessian_of_a_dict_argument_nests_as_jax_does(jax):
    p = {"w": PARAMS["w"].astype(np.float32), "b": PARAMS["b"]}
    expected = jax.hessian(scalar_loss)(to_jax(jax, p), XS)
    got = ug.hessian(scalar_loss)(to_ug(p), ug.tensor(XS))
    assert_tree_close(expected, got, tol=2e-4)  # second derivatives: a sum over 5 rows of products
    assert tuple(got["w"]["b"].shape) == (3, 2, 2)
    expected = jax.hessian(lambda x, y: sin(x * y).sum(), argnums=(0, 1))(XS[0], XS[1])
    got = ug.hessian(lambda x, y: sin(x * y).sum(), argnums=(0, 1))(ug.tensor(XS[0]), ug.tensor(XS[1]))
    assert_tree_close(expected, got)


def test_jacobian_errors():
    with pytest.raises(IndexError, match=r"\[jacobian\] argnums 2 out of range"):
        ug.jacrev(lambda x: x, argnums=2)(ug.ones(2))
    with pytest.raises(TypeError, match="expected tensors or numbers"):
        ug.jacfwd(lambda s: s)("text")


# ---- registered node types (jax.tree_util.register_pytree_node and friends) -----------------

@dataclasses.dataclass
class Linear:
    w: object
    b: object
    name: str = "dense"


ug.tree_util.register_dataclass(Linear, data_fields=["w", "b"], meta_fields=["name"])


@ug.tree_util.register_pytree_node_class
class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def tree_flatten(self):
        return (self.first, self.second), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@pytest.fixture(scope="module")
def jax_nodes(jax):
    """JAX, with the same node types registered in its own registry."""
    jax.tree_util.register_dataclass(Linear, data_fields=["w", "b"], meta_fields=["name"])
    jax.tree_util.register_pytree_node_class(Pair)
    return jax


def test_registered_nodes_flatten_and_rebuild_as_jax_does(jax_nodes):
    jax = jax_nodes
    tree = {"layer": Linear(PARAMS["w"], PARAMS["b"]), "pair": Pair(1.0, [2.0, None])}
    leaves_j = jax.tree_util.tree_leaves(tree)
    leaves_u = ug.tree_util.tree_leaves(tree)
    assert len(leaves_j) == len(leaves_u) == 4
    for a, b in zip(leaves_j, leaves_u):
        assert a is b
    rebuilt = ug.tree.unflatten(ug.tree.structure(tree), [10, 20, 30, 40])
    assert isinstance(rebuilt["layer"], Linear) and rebuilt["layer"].name == "dense"
    assert (rebuilt["layer"].w, rebuilt["layer"].b, rebuilt["pair"].first, rebuilt["pair"].second) == (10, 20, 30, [40, None])
    # the metadata is structure: a different name is a different tree
    other = {"layer": Linear(PARAMS["w"], PARAMS["b"], name="other"), "pair": Pair(1.0, [2.0, None])}
    assert ug.tree.structure(other) != ug.tree.structure(tree)
    assert (jax.tree.structure(other) != jax.tree.structure(tree))
    # is_leaf stops the walk
    assert len(ug.tree.leaves(tree, is_leaf=lambda x: isinstance(x, Pair))) == 3
    assert len(jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, Pair))) == 3
    assert ug.tree.reduce(lambda a, b: a + b, [1, (2, 3)], 10) == jax.tree.reduce(lambda a, b: a + b, [1, (2, 3)], 10)


def test_transforms_and_jit_take_registered_nodes(jax_nodes):
    jax = jax_nodes
    def loss(layer, x):
        return ((x @ layer.w + layer.b) ** 2).sum()

    layer_j = Linear(jax.numpy.asarray(PARAMS["w"]), jax.numpy.asarray(PARAMS["b"]))
    layer_u = Linear(ug.tensor(PARAMS["w"]), ug.tensor(PARAMS["b"]))
    g_j = jax.grad(loss)(layer_j, XS)
    g_u = ug.grad(loss)(layer_u, ug.tensor(XS))
    assert isinstance(g_u, Linear) and g_u.name == "dense"
    np.testing.assert_allclose(g_u.w.numpy(), np.asarray(g_j.w), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_u.b.numpy(), np.asarray(g_j.b), rtol=1e-5, atol=1e-5)

    def step(layer, x):
        g = ug.grad(loss)(layer, x)
        return Linear(layer.w - 0.1 * g.w, layer.b - 0.1 * g.b, layer.name)

    eager = step(layer_u, ug.tensor(XS))
    jitted = ug.jit(step)
    for _ in range(2):  # the trace, then the cached program
        out = jitted(layer_u, ug.tensor(XS))
        assert isinstance(out, Linear) and out.name == "dense"
        np.testing.assert_allclose(out.w.numpy(), eager.w.numpy(), rtol=1e-6, atol=1e-6)
    per_example = ug.vmap(ug.grad(loss), in_axes=(None, 0))(layer_u, ug.tensor(XS[:, None, :]))
    assert isinstance(per_example, Linear) and tuple(per_example.w.shape) == (5, 3, 2)


def test_jit_retraces_for_other_dict_keys_and_node_metadata():
    traces = []

    def f(d):
        traces.append(sorted(d))
        return d["a"] - d[sorted(d)[1]]

    jitted = ug.jit(f)
    x, y = ug.tensor([3.0]), ug.tensor([1.0])
    assert jitted({"a": x, "b": y}).item() == 2.0
    assert jitted({"a": x, "z": y * 2}).item() == 1.0  # another key: a new trace, not the first program
    assert traces == [["a", "b"], ["a", "z"]]
    with pytest.raises(KeyError):
        jitted({"b": x, "z": y})
    named = ug.jit(lambda layer: layer.w * (2.0 if layer.name == "double" else 1.0))
    w = ug.tensor([1.5])
    assert named(Linear(w, w, name="double")).item() == 3.0
    assert named(Linear(w, w, name="single")).item() == 1.5  # static metadata keys the program
