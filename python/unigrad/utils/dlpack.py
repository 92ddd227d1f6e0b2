"""Zero-copy exchange of CPU tensors through DLPack, under torch.utils.dlpack's names (also
ug.dlpack, as jax.dlpack). Tensor.__dlpack__ makes unigrad tensors readable by
torch.from_dlpack, jax.dlpack.from_dlpack, tf.experimental.dlpack.from_dlpack and
np.from_dlpack; from_dlpack reads theirs. Both sides share the memory: a write through one is
seen through the other."""
from .._C import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
