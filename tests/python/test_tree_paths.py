"""Leaf paths of pytrees (tree_flatten_with_path, tree_leaves_with_path, tree_map_with_path,
keystr) against jax.tree_util 0.10.2 on the same trees: dicts (sorted keys), lists, tuples,
namedtuples, None, registered nodes and dataclasses, and is_leaf."""
import collections
import dataclasses

import jax
import pytest

import unigrad as ug

Pair = collections.namedtuple("Pair", "w b")


@dataclasses.dataclass
class Layer:
    kernel: object
    scale: object
    name: str = "dense"


class Box:
    def __init__(self, items):
        self.items = items


ug.tree_util.register_dataclass(Layer, data_fields=["kernel", "scale"], meta_fields=["name"])
jax.tree_util.register_dataclass(Layer, data_fields=["kernel", "scale"], meta_fields=["name"])
ug.tree_util.register_pytree_node(Box, lambda b: (b.items, None), lambda _, c: Box(list(c)))
jax.tree_util.register_pytree_node(Box, lambda b: (b.items, None), lambda _, c: Box(list(c)))


def tree():
    return {"params": [Pair(1.0, 2.0), None, (3.0,)], "opt": {"mu": 4.0, "count": 5},
            "layer": Layer(6.0, 7.0), "box": Box([8.0, 9.0])}


def test_paths_and_keystr_match_jax():
    got, got_def = ug.tree_util.tree_flatten_with_path(tree())
    want, _ = jax.tree_util.tree_flatten_with_path(tree())
    assert [(ug.tree_util.keystr(p), x) for p, x in got] == [(jax.tree_util.keystr(p), x) for p, x in want]
    assert got_def == ug.tree_util.tree_structure(tree())
    assert ug.tree.leaves_with_path(tree()) == got


def test_tree_map_with_path_matches_jax():
    def named(path, x, y):
        return f"{ug.tree_util.keystr(path)}={x + y}"

    def jax_named(path, x, y):
        return f"{jax.tree_util.keystr(path)}={x + y}"
    got = ug.tree_util.tree_map_with_path(named, tree(), tree())
    want = jax.tree_util.tree_map_with_path(jax_named, tree(), tree())
    assert ug.tree_util.tree_leaves(got) == jax.tree_util.tree_leaves(want)
    # The usual use: a weight-decay mask by name.
    params = {"dense": {"kernel": ug.ones(2, 2), "bias": ug.ones(2)}}
    mask = ug.tree.map_with_path(lambda p, _: p[-1].key != "bias", params)
    assert mask == {"dense": {"bias": False, "kernel": True}}


def test_is_leaf_and_errors():
    is_pair = (lambda x: isinstance(x, Pair))
    got = ug.tree_util.tree_leaves_with_path(tree(), is_leaf=is_pair)
    want = jax.tree_util.tree_leaves_with_path(tree(), is_leaf=is_pair)
    assert [ug.tree_util.keystr(p) for p, _ in got] == [jax.tree_util.keystr(p) for p, _ in want]
    with pytest.raises(ValueError, match="different structures"):
        ug.tree_util.tree_map_with_path(lambda p, x, y: x, {"a": 1}, {"b": 1})


def test_flatten_up_to_matches_jax():
    # The treedef of the tree with a pair of values at each leaf: the pairs come back whole.
    deeper = ug.tree_util.tree_map(lambda x: {"a": x, "b": [x]}, tree())
    got = ug.tree_util.tree_structure(tree()).flatten_up_to(deeper)
    want = jax.tree_util.tree_structure(tree()).flatten_up_to(jax.tree_util.tree_map(lambda x: {"a": x, "b": [x]},
                                                                                     tree()))
    assert got == want
    with pytest.raises(ValueError, match=r"expected a tuple of length 1 at \['params'\]\[2\], got a list of length 1"):
        ug.tree_util.tree_structure(tree()).flatten_up_to({**tree(), "params": [Pair(1.0, 2.0), None, [3.0]]})
    with pytest.raises(ValueError, match=r"expected None at \['params'\]\[1\], got a float"):
        ug.tree_util.tree_structure(tree()).flatten_up_to({**tree(), "params": [Pair(1.0, 2.0), 0.5, (3.0,)]})
    with pytest.raises(ValueError, match=r"expected a dict with keys \['count', 'mu'\] at \['opt'\], got a dict "
                                         r"with keys \['mu'\]"):
        ug.tree_util.tree_structure(tree()).flatten_up_to({**tree(), "opt": {"mu": 4.0}})
