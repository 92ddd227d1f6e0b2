"""Pytrees, as in JAX: nested tuples, lists, dicts and registered classes whose leaves are
tensors (or numbers). The function transforms flatten arguments and results with these.
Also reachable as ug.tree_util (jax.tree_util's names) and, with jax.tree's short names
(ug.tree.map, ug.tree.leaves, ...), as ug.tree."""
import builtins
import collections
import dataclasses
import functools

# Registered node types: type -> (flatten(x) -> (children, aux), unflatten(aux, children) -> x).
_nodes = {}
# Registered dataclasses: type -> the names of their children (a leaf's path names the field).
_field_names = {}


class TreeDef:
    """The structure of a pytree without its leaves."""

    def __init__(self, kind, children=(), meta=None):
        self.kind, self.children, self.meta = kind, tuple(children), meta

    @property
    def num_leaves(self):
        if self.__dict__.get("_num_leaves") is None:  # computed once, as __repr__
            self._num_leaves = 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)
        return self._num_leaves

    def unflatten(self, leaves):
        """The tree of this structure over leaves (jax's PyTreeDef.unflatten)."""
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree):
        """jax's treedef.flatten_up_to: the subtrees of tree at this structure's leaves, tree
        having this structure down to them (ValueError, naming where, otherwise)."""
        out = []
        self._up_to(tree, (), out)
        return out

    def _up_to(self, tree, path, out):
        if self.kind == "leaf":
            out.append(tree)
            return
        # One level of tree: its children as leaves.
        children, node = tree_flatten(tree, is_leaf=lambda x: x is not tree)
        if (node.kind, node.meta, len(node.children)) != (self.kind, self.meta, len(self.children)):
            raise ValueError(f"[flatten_up_to] expected {_node_text(self, None)} at {keystr(path) or 'the top'}, "
                             f"got {_node_text(node, tree)}")
        for key, d, child in zip(_child_keys(tree, self), self.children, children):
            d._up_to(child, path + (key,), out)

    def __eq__(self, other):
        return isinstance(other, TreeDef) and (self.kind, self.children, self.meta) == (other.kind, other.children, other.meta)

    def __repr__(self):
        # Computed once: a jitted function's call signature holds it at every call.
        if self.__dict__.get("_repr") is None:
            # The repr keys compiled programs: it names everything that makes two trees differ.
            kind = self.kind
            if kind in ("dict", "OrderedDict"):
                kind = f"{kind} {list(self.meta)}"
            elif kind == "defaultdict":
                kind = f"defaultdict {self.meta[0]!r} {list(self.meta[1])}"
            elif kind == "namedtuple":
                kind = self.meta.__name__
            elif kind == "custom":
                kind = f"{self.meta[0].__name__} {self.meta[1]!r}"
            self._repr = f"TreeDef({kind}, {list(self.children)})" if self.kind != "leaf" else "*"
        return self._repr


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """jax.tree_util.register_pytree_node: instances of nodetype become tree nodes;
    flatten_func(x) returns (children, aux_data), unflatten_func(aux_data, children) rebuilds x.
    aux_data must compare with == (it is part of the structure)."""
    if nodetype in _nodes or nodetype in (tuple, list, dict, collections.OrderedDict, collections.defaultdict,
                                          type(None)):
        raise ValueError(f"[tree] {nodetype.__name__} is already a pytree node type")
    _nodes[nodetype] = (flatten_func, unflatten_func)


def node_unflatten(nodetype):
    """The unflatten function registered for nodetype."""
    return _nodes[nodetype][1]


def register_pytree_node_class(cls):
    """A class decorator: cls.tree_flatten(self) -> (children, aux), cls.tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None):
    """jax.tree_util.register_dataclass: a dataclass whose data_fields are children and whose
    meta_fields are static structure (by default every field is data)."""
    if data_fields is None:
        fields = [f.name for f in dataclasses.fields(nodetype)]
        meta_fields = list(meta_fields or ())
        data_fields = [f for f in fields if f not in meta_fields]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields or ())

    def flatten(x):
        return [getattr(x, f) for f in data_fields], tuple(getattr(x, f) for f in meta_fields)

    def unflatten(aux, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, aux)))

    register_pytree_node(nodetype, flatten, unflatten)
    _field_names[nodetype] = data_fields
    return nodetype


def _dict_node(tree):
    """(kind, keys in flattening order, meta) of a dict node, as JAX has them: an OrderedDict
    keeps its insertion order, a dict and a defaultdict are sorted; a defaultdict's structure
    holds its default_factory."""
    if isinstance(tree, collections.OrderedDict):
        keys = tuple(tree)
        return "OrderedDict", keys, keys
    keys = tuple(sorted(tree))
    if isinstance(tree, collections.defaultdict):
        return "defaultdict", keys, (tree.default_factory, keys)
    return "dict", keys, keys


def dict_keys(d):
    """The keys of a dict TreeDef, in its children's order."""
    return d.meta[1] if d.kind == "defaultdict" else d.meta


def dict_maker(d):
    """What rebuilds a dict TreeDef's node from a plain dict of its items (None: the plain dict)."""
    if d.kind == "OrderedDict":
        return collections.OrderedDict
    if d.kind == "defaultdict":
        return functools.partial(collections.defaultdict, d.meta[0])
    return None


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef); dict keys are visited in sorted order (an OrderedDict's in insertion
    order), None is an empty node; is_leaf(x) true makes x a leaf whatever it is."""
    if is_leaf is not None and is_leaf(tree):
        return [tree], TreeDef("leaf")
    if tree is None:
        return [], TreeDef("none")
    if isinstance(tree, (tuple, list)):
        leaves, defs = [], []
        for item in tree:
            sub, d = tree_flatten(item, is_leaf)
            leaves += sub
            defs.append(d)
        kind = "list" if isinstance(tree, list) else ("namedtuple" if hasattr(tree, "_fields") else "tuple")
        return leaves, TreeDef(kind, defs, type(tree) if kind == "namedtuple" else None)
    if isinstance(tree, dict):
        kind, keys, meta = _dict_node(tree)
        leaves, defs = [], []
        for k in keys:
            sub, d = tree_flatten(tree[k], is_leaf)
            leaves += sub
            defs.append(d)
        return leaves, TreeDef(kind, defs, meta)
    node = _nodes.get(type(tree))
    if node is not None:
        children, aux = node[0](tree)
        leaves, defs = [], []
        for item in children:
            sub, d = tree_flatten(item, is_leaf)
            leaves += sub
            defs.append(d)
        return leaves, TreeDef("custom", defs, (type(tree), aux))
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
    if d.kind == "custom":
        return node_unflatten(d.meta[0])(d.meta[1], items)
    items, make = dict(zip(dict_keys(d), items)), dict_maker(d)
    return make(items) if make else items


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def broadcast_prefix(prefix, tree, op, what):
    """One entry of `prefix` per leaf of `tree`, as jax.vmap reads in_axes and out_axes: prefix
    is a pytree prefix of tree whose leaves (None among them) stand for every leaf of the
    subtree at their place."""
    out = []
    _broadcast(prefix, tree, op, what, out)
    return out


def _broadcast(prefix, tree, op, path, out):
    if not isinstance(prefix, (tuple, list, dict)):
        out += [prefix] * len(tree_leaves(tree))
        return
    if isinstance(prefix, dict):
        same = isinstance(tree, dict) and _dict_node(prefix)[:2] == _dict_node(tree)[:2]
    else:
        same = isinstance(tree, (tuple, list)) and isinstance(tree, list) == isinstance(prefix, list) \
            and len(prefix) == len(tree)
    if not same:
        raise ValueError(f"[{op}] {path} must be a tree prefix of the value: got "
                         f"{type(prefix).__name__} {_describe(prefix)} for {type(tree).__name__} {_describe(tree)}")
    for key in (_dict_node(prefix)[1] if isinstance(prefix, dict) else range(len(prefix))):
        _broadcast(prefix[key], tree[key], op, f"{path}[{key!r}]", out)


def _describe(value):
    if isinstance(value, dict):
        return f"with keys {list(_dict_node(value)[1])}"
    return f"of length {len(value)}" if isinstance(value, (tuple, list)) else ""


def _leaves_like(d, rest, is_leaf, op):
    """The leaves of each tree of rest, which must all have the structure d."""
    others = []
    for r in rest:
        leaves, od = tree_flatten(r, is_leaf)
        if od != d:
            raise ValueError(f"[{op}] trees have different structures")
        others.append(leaves)
    return others


def tree_map(f, tree, *rest, is_leaf=None):
    """f applied leaf by leaf; `rest` are trees of the same structure."""
    leaves, d = tree_flatten(tree, is_leaf)
    others = _leaves_like(d, rest, is_leaf, "tree_map")
    return tree_unflatten(d, [f(x, *[o[i] for o in others]) for i, x in enumerate(leaves)])


def _node(tree):
    """(kind, meta, children) of one level of tree, as tree_flatten sees it (None for a leaf)."""
    if tree is None:
        return "none", None, []
    if isinstance(tree, (tuple, list)):
        if isinstance(tree, list):
            return "list", None, list(tree)
        return ("namedtuple", type(tree), list(tree)) if hasattr(tree, "_fields") else ("tuple", None, list(tree))
    if isinstance(tree, dict):
        kind, keys, meta = _dict_node(tree)
        return kind, meta, [tree[k] for k in keys]
    if type(tree) in _nodes:
        children, aux = _nodes[type(tree)][0](tree)
        return "custom", (type(tree), aux), list(children)
    return None


def _up_to(d, tree, out, op):
    """Appends the subtrees of tree at the leaves of d, a structure tree must begin with."""
    if d.kind == "leaf":
        out.append(tree)
        return
    node = _node(tree)
    if node is None or node[:2] != (d.kind, d.meta) or len(node[2]) != len(d.children):
        raise ValueError(f"[{op}] the tree {tree!r} does not have the structure {d}")
    for child_def, child in zip(d.children, node[2]):
        _up_to(child_def, child, out, op)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """jax.tree_util.tree_transpose: a tree of outer_treedef whose leaves are trees of
    inner_treedef becomes a tree of inner_treedef whose leaves are trees of outer_treedef.
    inner_treedef None: the structure of the first inner tree."""
    inner = []
    _up_to(outer_treedef, pytree_to_transpose, inner, "tree_transpose")
    if inner_treedef is None:
        if not inner:
            raise ValueError("[tree_transpose] inner_treedef=None needs an outer tree with at least one leaf")
        inner_treedef = tree_structure(inner[0])
    columns = []
    for sub in inner:
        leaves, d = tree_flatten(sub)
        if d != inner_treedef:
            raise TypeError(f"[tree_transpose] an inner tree has the structure {d}, expected {inner_treedef}")
        columns.append(leaves)
    rows = [[col[j] for col in columns] for j in range(inner_treedef.num_leaves)]
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, row) for row in rows])


def tree_reduce(function, tree, *initializer, is_leaf=None):
    """functools.reduce over the leaves (jax.tree_util.tree_reduce)."""
    return functools.reduce(function, tree_leaves(tree, is_leaf), *initializer)


def tree_all(tree, is_leaf=None):
    return builtins.all(tree_leaves(tree, is_leaf))


def _path_key(name, field, text, doc):
    """A class of jax.tree_util's path steps: a frozen dataclass of one field, printed as keystr
    prints it."""
    return dataclasses.make_dataclass(name, [field], frozen=True, namespace={
        "__str__": lambda self: text.format(getattr(self, field)), "__doc__": doc, "__module__": __name__})


DictKey = _path_key("DictKey", "key", "[{!r}]", "A step of a leaf's path: a dict's key.")
SequenceKey = _path_key("SequenceKey", "idx", "[{}]", "A step of a leaf's path: a list's or tuple's index.")
GetAttrKey = _path_key("GetAttrKey", "name", ".{}", "A step of a leaf's path: a namedtuple's or dataclass's field.")
FlattenedIndexKey = _path_key("FlattenedIndexKey", "key", "[<flat index {}>]",
                              "A step of a leaf's path: the index of a registered node's child.")


def _node_text(d, value):
    """The top node of structure d (value: a tree of it) in words."""
    if d.kind in ("dict", "OrderedDict"):
        return f"a{'n' if d.kind == 'OrderedDict' else ''} {d.kind} with keys {list(d.meta)}"
    if d.kind == "defaultdict":
        return f"a defaultdict with keys {list(d.meta[1])}"
    if d.kind in ("list", "tuple"):
        return f"a {d.kind} of length {len(d.children)}"
    if d.kind == "none":
        return "None"
    if d.kind == "namedtuple":
        return f"a {d.meta.__name__}"
    return f"a {(d.meta[0] if d.kind == 'custom' else type(value)).__name__}"


def _child_keys(tree, d):
    """The path steps from the node `tree`, of structure d, to its children."""
    if d.kind in ("dict", "OrderedDict"):
        return [DictKey(k) for k in d.meta]
    if d.kind == "defaultdict":
        return [DictKey(k) for k in d.meta[1]]
    if d.kind == "namedtuple":
        return [GetAttrKey(f) for f in d.meta._fields]
    names = _field_names.get(type(tree))
    if d.kind == "custom" and names:
        return [GetAttrKey(n) for n in names]
    return [(SequenceKey if d.kind != "custom" else FlattenedIndexKey)(i) for i in range(len(d.children))]


def _with_path(tree, is_leaf, path, out):
    """Appends (path, leaf) in tree_flatten's order."""
    if is_leaf is not None and is_leaf(tree):
        out.append((path, tree))
    elif tree is None:
        return
    elif isinstance(tree, (tuple, list)):
        fields = getattr(tree, "_fields", None) if isinstance(tree, tuple) else None
        for i, item in enumerate(tree):
            _with_path(item, is_leaf, path + (GetAttrKey(fields[i]) if fields else SequenceKey(i),), out)
    elif isinstance(tree, dict):
        for k in _dict_node(tree)[1]:
            _with_path(tree[k], is_leaf, path + (DictKey(k),), out)
    elif type(tree) in _nodes:
        children, _ = _nodes[type(tree)][0](tree)
        names = _field_names.get(type(tree))
        for i, item in enumerate(children):
            _with_path(item, is_leaf, path + (GetAttrKey(names[i]) if names else FlattenedIndexKey(i),), out)
    else:
        out.append((path, tree))


def tree_flatten_with_path(tree, is_leaf=None):
    """jax.tree_util.tree_flatten_with_path: ([(path, leaf)], treedef), each path a tuple of
    DictKey, SequenceKey, GetAttrKey and FlattenedIndexKey from the root to the leaf."""
    out = []
    _with_path(tree, is_leaf, (), out)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    """[(path, leaf)] in tree_leaves' order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """jax.tree_util.tree_map_with_path: f(path, leaf, *leaves of rest at that place)."""
    pairs, d = tree_flatten_with_path(tree, is_leaf)
    others = _leaves_like(d, rest, is_leaf, "tree_map_with_path")
    return tree_unflatten(d, [f(p, x, *[o[i] for o in others]) for i, (p, x) in enumerate(pairs)])


def keystr(keys):
    """jax.tree_util.keystr: a path as text, e.g. "['params']['w'][0]"."""
    return "".join(str(k) for k in keys)


# jax.tree's short names.
flatten, unflatten, leaves, structure, map, reduce, all, transpose = (  # noqa: A001
    tree_flatten, tree_unflatten, tree_leaves, tree_structure, tree_map, tree_reduce, tree_all, tree_transpose)
flatten_with_path, leaves_with_path, map_with_path = tree_flatten_with_path, tree_leaves_with_path, tree_map_with_path
