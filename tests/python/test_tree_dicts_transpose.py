"""OrderedDict and defaultdict pytrees, tree_transpose and TreeDef.unflatten, against
jax.tree_util 0.10.2 on the same trees: an OrderedDict keeps its insertion order (a dict and a
defaultdict are key-sorted), and each comes back as the type it went in as."""
import collections
import os

import numpy as np
import pytest

import unigrad as ug


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def ordered():
    return collections.OrderedDict([("q", 1.0), ("p", [2.0, 3.0]), ("a", 4.0)])


def default():
    return collections.defaultdict(list, {"q": 1.0, "p": (2.0, 3.0), "a": 4.0})


@pytest.mark.parametrize("make", [ordered, default], ids=["OrderedDict", "defaultdict"])
def test_leaves_paths_and_rebuilt_type_match_jax(jax, make):
    tree = make()
    assert ug.tree_util.tree_leaves(tree) == jax.tree_util.tree_leaves(tree)
    got = [(ug.tree_util.keystr(p), v) for p, v in ug.tree_util.tree_leaves_with_path(tree)]
    assert got == [(jax.tree_util.keystr(p), v) for p, v in jax.tree_util.tree_leaves_with_path(tree)]
    leaves, d = ug.tree_util.tree_flatten(tree)
    for rebuilt, want in ((ug.tree_util.tree_unflatten(d, leaves), jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(tree), leaves)), (ug.tree_map(lambda v: v * 2, tree), jax.tree_util.tree_map(
            lambda v: v * 2, tree))):
        assert type(rebuilt) is type(want) is type(tree)
        assert list(rebuilt.items()) == list(want.items())
        if isinstance(tree, collections.defaultdict):
            assert rebuilt.default_factory is want.default_factory is list


def test_structures_tell_dict_kinds_orders_and_factories_apart_as_jax_does(jax):
    pairs = [("q", 1), ("p", 2)]
    trees = [dict(pairs), collections.OrderedDict(pairs), collections.OrderedDict(pairs[::-1]),
             collections.defaultdict(list, pairs), collections.defaultdict(int, pairs)]
    for a in trees:
        for b in trees:
            same = ug.tree_util.tree_structure(a) == ug.tree_util.tree_structure(b)
            assert same == (jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b))
    with pytest.raises(ValueError, match="different structures"):
        ug.tree_map(lambda a, b: a + b, trees[1], trees[2])


def test_jit_grad_and_vmap_give_ordered_dicts_back(jax):
    tree = collections.OrderedDict([("w", ug.tensor([1.0, 2.0])), ("b", ug.tensor(3.0))])
    jitted = ug.jit(lambda t: collections.OrderedDict([("y", t["w"] * t["b"]), ("x", t["b"])]))
    for _ in range(2):  # the trace, then the cached program's rebuilt result
        out = jitted(tree)
        assert type(out) is collections.OrderedDict and list(out) == ["y", "x"]
        np.testing.assert_array_equal(out["y"].numpy(), [3.0, 6.0])
    g = ug.grad(lambda t: (t["w"] * t["b"]).sum())(tree)
    jtree = collections.OrderedDict((k, jax.numpy.asarray(v.numpy())) for k, v in tree.items())
    want = jax.grad(lambda t: (t["w"] * t["b"]).sum())(jtree)
    assert type(g) is type(want) is collections.OrderedDict and list(g) == list(want) == ["w", "b"]
    for k in g:
        np.testing.assert_allclose(g[k].numpy(), np.asarray(want[k]))
    d = ug.jit(lambda t: t)(collections.defaultdict(list, tree))
    assert type(d) is collections.defaultdict and d.default_factory is list
    # vmap's in_axes prefix: the OrderedDict's own order; a plain dict is another structure, as in JAX
    x = collections.OrderedDict([("q", ug.ones(2)), ("p", ug.ones(3))])
    out = ug.vmap(lambda o: o["q"] + o["p"].sum(), in_axes=(collections.OrderedDict([("q", 0), ("p", None)]),))(x)
    np.testing.assert_array_equal(out.numpy(), [4.0, 4.0])
    with pytest.raises(ValueError, match=r"in_axes\[0\] must be a tree prefix"):
        ug.vmap(lambda o: o["q"], in_axes=({"q": 0, "p": None},))(x)


def test_tree_transpose_matches_jax(jax):
    tree = [{"a": 1, "b": (2, 3)}, {"a": 4, "b": (5, 6)}, {"a": 7, "b": (8, 9)}]
    for inner in (True, False):
        want = jax.tree_util.tree_transpose(jax.tree_util.tree_structure([0, 0, 0]),
                                            jax.tree_util.tree_structure(tree[0]) if inner else None, tree)
        got = ug.tree_util.tree_transpose(ug.tree_util.tree_structure([0, 0, 0]),
                                          ug.tree_util.tree_structure(tree[0]) if inner else None, tree)
        assert got == want == {"a": [1, 4, 7], "b": ([2, 5, 8], [3, 6, 9])}
    pair = ((ug.ones(2), ug.zeros(1)), (ug.zeros(2), ug.ones(1)))  # tensors, and jax.tree's short name
    got = ug.tree.transpose(ug.tree.structure((0, 0)), ug.tree.structure((0, 0)), pair)
    assert [t.tolist() for t in got[0]] == [[1.0, 1.0], [0.0, 0.0]]


def test_tree_transpose_errors_name_the_function():
    outer, inner = ug.tree_util.tree_structure([0, 0]), ug.tree_util.tree_structure((0, 0))
    with pytest.raises(TypeError, match=r"\[tree_transpose\] an inner tree has the structure"):
        ug.tree_util.tree_transpose(outer, inner, [(1, 2), (3,)])
    with pytest.raises(ValueError, match=r"\[tree_transpose\] the tree .* does not have the structure"):
        ug.tree_util.tree_transpose(outer, inner, ((1, 2), (3, 4)))


def test_treedef_unflatten_matches_jax(jax):
    tree = {"b": [1, (2, None)], "a": collections.OrderedDict([("z", 3), ("y", 4)])}
    got = ug.tree_util.tree_structure(tree).unflatten([10, 20, 30, 40])
    want = jax.tree_util.tree_structure(tree).unflatten([10, 20, 30, 40])
    assert got == want and type(got["a"]) is collections.OrderedDict
    with pytest.raises(ValueError, match="expected 4 leaves, got 3"):
        ug.tree_util.tree_structure(tree).unflatten([1, 2, 3])
