"""unigrad: one engine for the PyTorch, TensorFlow and JAX ways of deep learning.

`import unigrad as ug`; the tensor API follows PyTorch's names and signatures. Everything
here is a thin layer over the C++ library in unigrad._C.
"""
from ._openblas import pinned_core as _pinned_openblas_core

with _pinned_openblas_core():  # before _C loads OpenBLAS, which picks its kernels then
    from . import _C  # noqa: F401  (unigrad._C, the extension, as an attribute)
from ._C import *  # noqa: F401,F403  (Tensor, dtypes, factories, elementwise functions)
from ._C import Tensor, random  # noqa: F401
from ._C import _standard_gamma, _standard_gamma_grad  # noqa: F401  (torch's underscored spellings)
# The star import brought _C's callbacks, data, datasets, distributed, logging, models, nn, onnx, optim, optimizers and train
# submodules; the packages of those names wrap them.
del callbacks, data, datasets, distributed, logging, models, nn, onnx, optim, optimizers, train  # noqa: F821
from . import (amp, autograd, callbacks, cpu, cuda, data, datasets, debugging, distributed, distributions, logging, memory,  # noqa: F401,E402
               mixed_precision, models, nn, onnx, optim, optimizers, profiler, train, utils)
from . import debug, distribute, keras, lax  # noqa: F401,E402  (lax: JAX's collectives inside pmap)
from . import static  # noqa: F401,E402  (paddle.static.InputSpec)
from . import ao  # noqa: F401,E402  (torch.ao)
from . import index_update  # noqa: F401,E402  (JAX's x.at[idx].set(v))
from .ao import quantization  # noqa: F401,E402,F811  (torch.quantization, over the _C submodule of that name)
qint8, quint8 = int8, uint8  # noqa: F405  (torch's quantized dtypes: unigrad keeps the integers in plain tensors)
from .amp import autocast, get_autocast_dtype, is_autocast_enabled, set_autocast_dtype, set_autocast_enabled  # noqa: F401,E402
from .parallel_map import pmap  # noqa: F401,E402
from . import config  # noqa: F401,E402  (tf.config)
from .devices import default_backend, default_device, device_get, device_put, devices, local_devices  # noqa: F401,E402,E501  (JAX's)
from ._C.errors import OutOfMemoryError  # noqa: F401,E402
from .autograd import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .transforms import (GradientTape, UnconnectedGradients, grad, hessian, jacfwd, jacobian,  # noqa: F401
                         jacrev, jvp, linearize, value_and_grad, vjp, vmap)
from .tree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten  # noqa: F401
from . import tree, tree_util  # noqa: F401,E402  (jax.tree and jax.tree_util)
from .custom_gradients import custom_gradient, custom_jvp, custom_vjp  # noqa: F401  (JAX's, TensorFlow's)
from .compiled import compile, jit  # noqa: F401  (compile: torch.compile's name)
from .compiled import ShapeDtypeStruct, block_until_ready, clear_caches, disable_jit, eval_shape  # noqa: F401
from .compiled import make_jaxpr  # noqa: F401
from .tf_function import TensorSpec, function  # noqa: F401
from . import torchscript  # noqa: F401,E402  (ug.jit.trace / script / load: torch.jit's names)
from . import compiler  # noqa: F401,E402  (torch.compiler)
from . import func  # noqa: F401,E402  (torch.func)
from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from .remat import checkpoint, checkpoint_policies, remat  # noqa: F401  (jax.checkpoint's names)

from ._C import __version__  # noqa: F401  (from the CMake project version)


def _method_as_function(name):
    def call(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"ug.{name}(input, ...) is input.{name}(...), as torch.{name}."
    return call


# torch.sum(x, dim) and friends are the Tensor methods called as functions.
for _name in (
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "norm",
    "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "all", "any", "sort", "argsort",
    "topk", "matmul", "mm", "bmm", "dot", "outer", "reshape", "transpose", "swapaxes", "swapdims",
    "permute", "squeeze", "unsqueeze", "flatten", "unflatten", "narrow", "select", "diagonal",
    "unbind", "split", "chunk", "gather", "scatter", "scatter_add", "index_select", "masked_fill",
    "masked_select", "flip", "roll", "tile", "nonzero", "broadcast_to", "clone", "t",
    "as_strided", "movedim", "moveaxis", "tril", "triu", "diag", "trace", "addmm", "baddbmm", "addcmul",
    "addcdiv", "nan_to_num", "nansum", "nanmean", "ravel", "divide", "true_divide", "multiply", "subtract",
    "clip", "absolute", "numel", "is_floating_point", "index_add", "index_fill", "bernoulli", "multinomial",
    "logit", "xlogy", "hypot", "frac", "rot90", "kron", "cross", "take_along_dim", "isin",
    "median", "nanmedian", "kthvalue", "mode", "quantile", "nanquantile", "unique", "unique_consecutive",
    "bincount", "histc", "cummax", "cummin", "logcumsumexp", "tensor_split", "masked_scatter", "index_put",
    "fmod", "lgamma", "digamma", "erfinv",
    "inner", "mv", "addmv", "addr", "vdot", "addbmm", "diag_embed", "diagflat", "cov", "corrcoef", "dist", "diff",
    "renorm", "erfc", "deg2rad", "rad2deg", "sgn", "signbit", "sinc", "copysign", "heaviside", "float_power", "fmax",
    "fmin", "logaddexp2", "negative", "positive", "isneginf", "isposinf", "isreal", "is_nonzero", "ldexp",
    "mvlgamma", "aminmax", "hsplit", "vsplit", "dsplit", "msort", "slice_scatter", "select_scatter", "index_copy",
    "scatter_reduce", "index_reduce", "diagonal_scatter", "as_strided_scatter", "histogram", "nextafter", "i0", "is_inference", "frexp", "gcd", "lcm", "clamp_min", "clamp_max",
    "igamma", "igammac",
):
    if _name not in globals():
        globals()[_name] = _method_as_function(_name)
del _name


def is_complex(input):
    """False: unigrad's dtypes are real (torch.is_complex)."""
    return input.is_complex()


def seed():
    """Seeds the global generator from the operating system's entropy and returns the seed
    (torch.seed)."""
    import builtins
    import os

    value = builtins.int.from_bytes(os.urandom(8), "little") >> 1  # manual_seed takes a signed 64-bit int
    manual_seed(value)  # noqa: F405
    return value


def std_mean(input, dim=None, *, correction=1, keepdim=False):
    """(std, mean) of input over dim, as torch.std_mean."""
    return input.std(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim)


def var_mean(input, dim=None, *, correction=1, keepdim=False):
    """(var, mean) of input over dim, as torch.var_mean."""
    return input.var(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim)


def to_tensor(data, dtype=None, place=None, stop_gradient=True):  # noqa: F811  (Paddle names it data)
    """PaddlePaddle's paddle.to_tensor: stop_gradient=False means requires_grad=True."""
    return tensor(data, dtype=dtype, device=place, requires_grad=not stop_gradient)  # noqa: F405


from collections import namedtuple as _namedtuple  # noqa: E402

from . import linalg  # noqa: E402  (torch.linalg)
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: E402,F401
from . import fft  # noqa: E402,F401  (torch.fft)
from . import special  # noqa: E402,F401  (torch.special)
from .utils import dlpack  # noqa: E402,F401  (jax.dlpack)
from .aliases import FUNCTIONS as _ALIAS_FUNCTIONS  # noqa: E402  (torch's arccos, greater, take, ...)

for _name, _fn in _ALIAS_FUNCTIONS.items():
    globals().setdefault(_name, _fn)
del _name, _fn, _ALIAS_FUNCTIONS

from .interop import asarray, frombuffer  # noqa: E402,F401
from .settings import *  # noqa: E402,F401,F403  (deterministic mode, matmul precision, default device)

# torch's top-level names for functional ops whose signature is torch.nn.functional's (torch.conv2d).
for _name in ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "channel_shuffle", "conv1d", "conv2d", "conv3d",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "hardshrink",
              "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "max_pool1d", "max_pool2d",
              "max_pool3d", "celu", "selu", "rrelu", "threshold"):
    globals().setdefault(_name, getattr(nn.functional, _name))  # noqa: F405
del _name
from ._aten_forms import FUNCTIONS as _ATEN_FORMS  # noqa: E402  (torch.layer_norm, torch.dropout, ...)

globals().update(_ATEN_FORMS)
del _ATEN_FORMS


def is_signed(input):
    """Whether input's dtype holds negative values (floating and signed integer dtypes)."""
    return input.dtype.is_signed


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (torch.rsub)."""
    return sub(other, input, alpha=alpha)  # noqa: F405


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of this size and stride (torch.empty_strided), over storage just large
    enough for the furthest element."""
    import builtins  # ug's any and sum are tensor ops

    if len(size) != len(stride) or builtins.any(s < 0 for s in (*size, *stride)):
        raise ValueError(f"[empty_strided] size {list(size)} and stride {list(stride)} must be non-negative "
                         "and of the same length")
    extent = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    out = empty(extent, dtype=dtype, device=device).as_strided(tuple(size), tuple(stride))  # noqa: F405
    return out.requires_grad_(requires_grad) if requires_grad else out


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    """empty_strided with self's dtype and device unless given (torch's Tensor.new_empty_strided)."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


Tensor.new_empty_strided = _new_empty_strided


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding s, of the default float dtype unless dtype is given (torch.scalar_tensor)."""
    return tensor(s, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad)  # noqa: F405


row_stack = vstack  # noqa: F405
Tensor.is_signed = is_signed


def _logdet(input):
    """log(det): NaN for a negative determinant, -inf for a singular matrix (torch.logdet)."""
    sign, logabsdet = linalg.slogdet(input)
    return logabsdet + sign.log()


def _svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V, not Vh; some=False gives the full U and V."""
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    if not compute_uv:
        return U.new_zeros(U.shape), S, Vh.new_zeros(Vh.shape)
    return U, S, Vh.mT


_LuUnpackResult = _namedtuple("lu_unpack", ["P", "L", "U"])


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from linalg.lu_factor's result (torch.lu_unpack); what is not unpacked is empty."""
    return _LuUnpackResult(*linalg._la.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots))


def _lu(A, pivot=True, get_infos=False):
    """torch.lu: (LU, pivots), and the infos when get_infos (a singular A does not raise)."""
    LU, pivots, infos = linalg.lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


# torch's names for linalg functions outside torch.linalg, as functions and Tensor methods.
for _name, _fn in {
    "lu": _lu,
    "lu_solve": lambda b, LU_data, LU_pivots: linalg.lu_solve(LU_data, LU_pivots, b),
    "inverse": linalg.inv,
    "det": linalg.det,
    "slogdet": linalg.slogdet,
    "logdet": _logdet,
    "cholesky": lambda input, upper=False: linalg.cholesky(input, upper=upper),
    "cholesky_solve": linalg.cholesky_solve,
    "cholesky_inverse": lambda L, upper=False: linalg.cholesky_solve(eye(L.shape[-1], dtype=L.dtype), L, upper),  # noqa: F405
    "svd": _svd,
    "qr": lambda input, some=True: linalg.qr(input, "reduced" if some else "complete"),
    "pinverse": lambda input, rcond=1e-15: linalg.pinv(input, rtol=rcond),
    "matrix_power": linalg.matrix_power,
    "matrix_exp": linalg.matrix_exp,
}.items():
    globals()[_name] = _fn
    setattr(Tensor, _name, _fn)
del _name, _fn
