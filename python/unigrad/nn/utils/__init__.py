"""ug.nn.utils (torch.nn.utils): gradient clipping (clip_grad_norm_, clip_grad_value_),
parametrizations (parametrize, parametrizations), the hook-based weight_norm and
spectral_norm, conv/linear + batch norm fusion, skip_init, and packed variable-length
batches for the recurrent layers (rnn)."""
import warnings

from ... import _C
from ..._export import export
from . import parametrizations, parametrize, rnn  # noqa: F401

_p = _C.nn._utils


def weight_norm(module, name="weight", dim=0):
    """torch.nn.utils.weight_norm: module.name = g * v / ||v|| from the parameters name_g and
    name_v, by a forward pre-hook. Deprecated, as torch's, for parametrizations.weight_norm."""
    warnings.warn("`ug.nn.utils.weight_norm` is deprecated in favor of `ug.nn.utils.parametrizations.weight_norm`.",
                  FutureWarning, stacklevel=2)
    return _p.hook_weight_norm(module, name, dim)


remove_weight_norm = _p.remove_weight_norm
spectral_norm = _p.hook_spectral_norm
remove_spectral_norm = _p.remove_spectral_norm
fuse_conv_bn_eval = _p.fuse_conv_bn_eval
fuse_conv_bn_weights = _p.fuse_conv_bn_weights
fuse_linear_bn_eval = _p.fuse_linear_bn_eval
fuse_linear_bn_weights = _p.fuse_linear_bn_weights


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) whose parameters the caller will overwrite (torch's
    skip_init): unigrad has no meta device, so the layer is built as usual (its initial values
    are simply not to be relied on), then moved to `device` if one is given."""
    if not isinstance(module_cls, type):
        raise TypeError(f"[skip_init] expected a module class, got {module_cls!r}")
    device = kwargs.pop("device", None)
    module = module_cls(*args, **kwargs)
    if device is not None:
        module.to(device)
    return module

__all__ = export(_C.optim._utils, globals()) + [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "weight_norm",
]
