"""ug.tree_util: jax.tree_util's names for unigrad's pytrees (ug.tree)."""
from .tree import (register_dataclass, register_pytree_node, register_pytree_node_class, tree_all,  # noqa: F401
                   tree_flatten, tree_leaves, tree_map, tree_reduce, tree_structure, tree_unflatten)
