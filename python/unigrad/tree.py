"""Pytrees, as in JAX: nested tuples, lists and dicts whose leaves are tensors (or numbers).
The function transforms flatten arguments and results with these."""


class TreeDef:
    """The structure of a pytree without its leaves."""

    def __init__(self, kind, children=(), meta=None):
        self.kind, self.children, self.meta = kind, tuple(children), meta

    @property
    def num_leaves(self):
        if self.__dict__.get("_num_leaves") is None:  # computed once, as __repr__
            self._num_leaves = 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)
        return self._num_leaves

    def __eq__(self, other):
        return isinstance(other, TreeDef) and (self.kind, self.children, self.meta) == (other.kind, other.children, other.meta)

    def __repr__(self):
        # Computed once: a jitted function's call signature holds it at every call.
        if self.__dict__.get("_repr") is None:
            self._repr = f"TreeDef({self.kind}, {list(self.children)})" if self.kind != "leaf" else "*"
        return self._repr


def tree_flatten(tree):
    """(leaves, treedef); dict keys are visited in sorted order, None is an empty node."""
    if tree is None:
        return [], TreeDef("none")
    if isinstance(tree, (tuple, list)):
        leaves, defs = [], []
        for item in tree:
            sub, d = tree_flatten(item)
            leaves += sub
            defs.append(d)
        kind = "list" if isinstance(tree, list) else ("namedtuple" if hasattr(tree, "_fields") else "tuple")
        return leaves, TreeDef(kind, defs, type(tree) if kind == "namedtuple" else None)
    if isinstance(tree, dict):
        keys = sorted(tree)
        leaves, defs = [], []
        for k in keys:
            sub, d = tree_flatten(tree[k])
            leaves += sub
            defs.append(d)
        return leaves, TreeDef("dict", defs, tuple(keys))
    return [tree], TreeDef("leaf")


def tree_unflatten(treedef, leaves):
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"[tree_unflatten] expected {treedef.num_leaves} leaves, got {len(leaves)}")
    return _build(treedef, iter(leaves))


def _build(d, leaves):
    """The tree of d over the next leaves of the iterator (a jitted call rebuilds its results
    with it at every call: no list is copied)."""
    if d.kind == "leaf":
        return next(leaves)
    if d.kind == "none":
        return None
    items = [_build(c, leaves) for c in d.children]
    if d.kind == "list":
        return items
    if d.kind == "tuple":
        return tuple(items)
    if d.kind == "namedtuple":
        return d.meta(*items)
    return dict(zip(d.meta, items))


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_structure(tree):
    return tree_flatten(tree)[1]


def tree_map(f, tree, *rest):
    """f applied leaf by leaf; `rest` are trees of the same structure."""
    leaves, d = tree_flatten(tree)
    others = [tree_flatten(r) for r in rest]
    for _, od in others:
        if od != d:
            raise ValueError("[tree_map] trees have different structures")
    return tree_unflatten(d, [f(x, *[o[0][i] for o in others]) for i, x in enumerate(leaves)])
