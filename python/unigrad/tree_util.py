"""ug.tree_util: jax.tree_util's names for unigrad's pytrees (ug.tree)."""
from .tree import (DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, keystr,  # noqa: F401
                   register_dataclass, register_pytree_node, register_pytree_node_class, tree_all, tree_flatten,
                   tree_flatten_with_path, tree_leaves, tree_leaves_with_path, tree_map, tree_map_with_path,
                   tree_reduce, tree_structure, tree_transpose, tree_unflatten)
