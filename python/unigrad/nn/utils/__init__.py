"""ug.nn.utils: gradient clipping (clip_grad_norm_, clip_grad_value_) and, in ug.nn.utils.rnn,
packed variable-length batches for the recurrent layers, as torch.nn.utils."""
from ... import _C
from ..._export import export

__all__ = export(_C.optim._utils, globals())

from . import rnn  # noqa: E402

__all__ += ["rnn"]
