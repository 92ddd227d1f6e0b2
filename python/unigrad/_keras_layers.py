"""ug.keras.layers' convolution, pooling and batch-normalization layers, with Keras 3's
constructors and its channels-last layout (data_format=None is "channels_last"). Each is a thin
Module over unigrad's channels-first functional ops (ug.nn.functional.conv2d, max_pool2d, ...):
a channels-last input is permuted to channels first and the result back. As in Keras, a layer
is built by its first call, which reads the input's channel count; kernels are kept in Keras's
layout ([k, in, out], [kh, kw, in, out]), so get_weights / set_weights exchange them with Keras
unchanged. Conv1D and Conv2D take Keras's global mixed-precision policy when made, as Dense does."""
import contextlib
import math

from . import _C, mixed_precision, nn
from .amp import autocast
from .autograd import no_grad

F = nn.functional
_CONV = {1: F.conv1d, 2: F.conv2d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d}


def _ints(value, rank, layer, what):
    values = (value,) * rank if isinstance(value, int) else tuple(value)
    if len(values) != rank or not all(isinstance(v, int) and v > 0 for v in values):
        raise ValueError(f"[{layer}] {what} must be a positive int or a tuple of {rank} positive ints, got {value!r}")
    return values


def _option(value, allowed, layer, what):
    key = value.lower() if isinstance(value, str) else value
    if key not in allowed:
        raise ValueError(f"[{layer}] {what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return key


def _data_format(value, layer):
    return _option("channels_last" if value is None else value, ("channels_last", "channels_first"), layer,
                   "data_format")


def _activation(activation, layer):
    if activation is None or callable(activation):
        return activation
    if not isinstance(activation, str):
        raise TypeError(f"[{layer}] activation must be a name such as 'relu' or a callable, got {activation!r}")
    return _C.nn._keras_activation(activation)


_INITIALIZERS = ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "zeros", "ones")


def _initialize(t, name):
    """Keras's initializer `name` on t, with Keras's fans: the kernel's last dim is fan-out, the
    one before fan-in, each times the product of the dims before (the receptive field). Keras's
    normal initializers draw from a normal truncated at two standard deviations."""
    if name in ("zeros", "ones"):
        return (nn.init.zeros_ if name == "zeros" else nn.init.ones_)(t)
    receptive = math.prod(t.shape[:-2])
    fan_in, fan_out = receptive * t.shape[-2], receptive * t.shape[-1]
    variance = 2.0 / (fan_in + fan_out) if name.startswith("glorot") else 2.0 / fan_in
    if name.endswith("uniform"):
        limit = math.sqrt(3.0 * variance)
        return nn.init.uniform_(t, -limit, limit)
    std = math.sqrt(variance) / 0.87962566103423978  # the std of a unit normal truncated at +-2
    return nn.init.trunc_normal_(t, 0.0, std, -2 * std, 2 * std)


def _initialized(shape, initializer):
    with no_grad():
        return _initialize(_C.empty(*shape), initializer)


def _policy_compute_dtype():
    """The dtype a layer built now computes in under Keras's global policy (mixed_bfloat16:
    bfloat16), or None where it computes in its weights' dtype: Keras's rule, as ug.nn.Dense's."""
    policy = mixed_precision.global_policy()
    return None if policy.compute_dtype == policy.variable_dtype else getattr(_C, policy.compute_dtype)


def _channels_first(x):
    return x.permute(0, x.dim() - 1, *range(1, x.dim() - 1))


def _channels_last(x):
    return x.permute(0, *range(2, x.dim()), 1)


def _same_pads(sizes, kernel, strides, dilation):
    """TensorFlow's "same" padding, (before, after) per spatial dim: the output has
    ceil(size / stride) positions, and an odd total puts the extra one after."""
    pads = []
    for n, k, s, d in zip(sizes, kernel, strides, dilation):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _pad(x, pads, value=0.0):
    """x (channels first) padded by pads, (before, after) per spatial dim."""
    flat = [p for before, after in reversed(pads) for p in (before, after)]
    return F.pad(x, flat, value=value) if any(flat) else x


def _check_rank(x, rank, layer):
    if x.dim() != rank + 2:
        raise ValueError(f"[{layer}] expected a {rank + 2}-D input (batch, {'spatial, ' * rank}channels), "
                         f"got shape {tuple(x.shape)}")


class _Conv(nn.Module):
    rank = 0

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros"):
        super().__init__()
        layer = type(self).__name__
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"[{layer}] filters must be a positive int, got {filters!r}")
        if not isinstance(groups, int) or groups <= 0 or filters % groups:
            raise ValueError(f"[{layer}] groups must be a positive int dividing filters ({filters}), got {groups!r}")
        self.filters, self.groups, self.use_bias = filters, groups, use_bias
        self.kernel_size = _ints(kernel_size, self.rank, layer, "kernel_size")
        self.strides = _ints(strides, self.rank, layer, "strides")
        self.dilation_rate = _ints(dilation_rate, self.rank, layer, "dilation_rate")
        self.padding = _option(padding, ("valid", "same", "causal") if self.rank == 1 else ("valid", "same"), layer,
                               "padding")
        self.data_format = _data_format(data_format, layer)
        self.activation = _activation(activation, layer)
        self.kernel_initializer = _option(kernel_initializer, _INITIALIZERS, layer, "kernel_initializer")
        self.bias_initializer = _option(bias_initializer, _INITIALIZERS, layer, "bias_initializer")
        self.kernel = self.bias = None
        self.built = False
        self.compute_dtype = _policy_compute_dtype()

    def build(self, input_shape):
        """Makes the kernel [*kernel_size, in_channels / groups, filters] and the bias [filters]."""
        channels = input_shape[-1 if self.data_format == "channels_last" else 1]
        if channels % self.groups:
            raise ValueError(f"[{type(self).__name__}] the input's {channels} channels are not divisible by "
                             f"groups={self.groups}")
        shape = (*self.kernel_size, channels // self.groups, self.filters)
        self.kernel = nn.Parameter(_initialized(shape, self.kernel_initializer))
        if self.use_bias:
            self.bias = nn.Parameter(_initialized((self.filters,), self.bias_initializer))
        self.built = True

    def forward(self, x):
        _check_rank(x, self.rank, type(self).__name__)
        if not self.built:
            self.build(x.shape)
        last = self.data_format == "channels_last"
        x = _channels_first(x) if last else x
        padding = 0
        if self.padding == "causal":  # Keras's causal Conv1D: the padding all before
            x = _pad(x, [((self.kernel_size[0] - 1) * self.dilation_rate[0], 0)])
        elif self.padding == "same":
            pads = _same_pads(x.shape[2:], self.kernel_size, self.strides, self.dilation_rate)
            if all(before == after for before, after in pads):
                padding = [before for before, _ in pads]
            else:
                x = _pad(x, pads)
        weight = self.kernel.permute(self.rank + 1, self.rank, *range(self.rank))  # [out, in, *kernel_size]
        mixed = self.compute_dtype is not None  # else an enclosing autocast region still applies
        with autocast(x.device.type, dtype=self.compute_dtype) if mixed else contextlib.nullcontext():
            y = _CONV[self.rank](x, weight, self.bias, self.strides, padding, self.dilation_rate, self.groups)
        y = _channels_last(y) if last else y
        return self.activation(y) if self.activation is not None else y

    def extra_repr(self):
        return (f"filters={self.filters}, kernel_size={self.kernel_size}, strides={self.strides}, "
                f"padding={self.padding!r}, data_format={self.data_format!r}")


class Conv1D(_Conv):
    """keras.layers.Conv1D: a (batch, steps, channels) input (channels_last); padding "valid",
    "same" or "causal"."""

    rank = 1


class Conv2D(_Conv):
    """keras.layers.Conv2D: a (batch, height, width, channels) input (channels_last)."""

    rank = 2


class _Pooling(nn.Module):
    rank = 0

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None):
        super().__init__()
        layer = type(self).__name__
        self.pool_size = _ints(pool_size, self.rank, layer, "pool_size")
        self.strides = self.pool_size if strides is None else _ints(strides, self.rank, layer, "strides")
        self.padding = _option(padding, ("valid", "same"), layer, "padding")
        self.data_format = _data_format(data_format, layer)

    def forward(self, x):
        _check_rank(x, self.rank, type(self).__name__)
        last = self.data_format == "channels_last"
        x = _channels_first(x) if last else x
        pads = [(0, 0)] * self.rank
        if self.padding == "same":
            pads = _same_pads(x.shape[2:], self.pool_size, self.strides, (1,) * self.rank)
        y = self._pool(x, pads)
        return _channels_last(y) if last else y

    def extra_repr(self):
        return (f"pool_size={self.pool_size}, strides={self.strides}, padding={self.padding!r}, "
                f"data_format={self.data_format!r}")


class _MaxPooling(_Pooling):
    def _pool(self, x, pads):
        # "same" pads with -inf: a padded position never wins, as in TensorFlow.
        return _MAX_POOL[self.rank](_pad(x, pads, -math.inf), self.pool_size, self.strides)


class _AveragePooling(_Pooling):
    def __init__(self, pool_size, strides=None, padding="valid", data_format=None):
        super().__init__(pool_size, strides, padding, data_format)  # Keras's pool_size has no default here

    def _pool(self, x, pads):
        pool = _AVG_POOL[self.rank]
        y = pool(_pad(x, pads), self.pool_size, self.strides)
        if not any(before or after for before, after in pads):
            return y
        # TensorFlow averages over the window's positions inside the input only: divide by the
        # share of the window that is not padding.
        inside = _pad(_C.ones(1, 1, *x.shape[2:], dtype=x.dtype), pads)
        return y / pool(inside, self.pool_size, self.strides)


class MaxPooling1D(_MaxPooling):
    """keras.layers.MaxPooling1D(pool_size=2, strides=None (pool_size), padding="valid")."""

    rank = 1


class MaxPooling2D(_MaxPooling):
    """keras.layers.MaxPooling2D(pool_size=(2, 2), strides=None (pool_size), padding="valid")."""

    rank = 2


class AveragePooling1D(_AveragePooling):
    """keras.layers.AveragePooling1D(pool_size, strides=None (pool_size), padding="valid")."""

    rank = 1


class AveragePooling2D(_AveragePooling):
    """keras.layers.AveragePooling2D(pool_size, strides=None (pool_size), padding="valid")."""

    rank = 2


class _GlobalPooling(nn.Module):
    rank = 0

    def __init__(self, data_format=None, keepdims=False):
        super().__init__()
        self.data_format = _data_format(data_format, type(self).__name__)
        self.keepdims = keepdims

    def forward(self, x):
        _check_rank(x, self.rank, type(self).__name__)
        first = 1 if self.data_format == "channels_last" else 2
        return self._reduce(x, list(range(first, first + self.rank)))

    def extra_repr(self):
        return f"data_format={self.data_format!r}, keepdims={self.keepdims}"


class _GlobalAveragePooling(_GlobalPooling):
    def _reduce(self, x, dims):
        return x.mean(dims, keepdim=self.keepdims)


class _GlobalMaxPooling(_GlobalPooling):
    def _reduce(self, x, dims):
        return x.amax(dims, keepdim=self.keepdims)


class GlobalAveragePooling1D(_GlobalAveragePooling):
    """keras.layers.GlobalAveragePooling1D: the mean over the steps."""

    rank = 1


class GlobalAveragePooling2D(_GlobalAveragePooling):
    """keras.layers.GlobalAveragePooling2D: the mean over height and width."""

    rank = 2


class GlobalMaxPooling1D(_GlobalMaxPooling):
    """keras.layers.GlobalMaxPooling1D: the max over the steps."""

    rank = 1


class GlobalMaxPooling2D(_GlobalMaxPooling):
    """keras.layers.GlobalMaxPooling2D: the max over height and width."""

    rank = 2


class BatchNormalization(nn.Module):
    """keras.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=1e-3): normalizes each
    entry of `axis` (channels last by default) over the other dims. Training uses the batch's
    mean and (biased) variance and moves moving_mean / moving_variance towards them by
    1 - momentum (Keras's momentum is the share kept, torch's its complement); eval uses the
    moving statistics. Weights in Keras's order: gamma, beta, moving_mean, moving_variance."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones"):
        super().__init__()
        if not isinstance(axis, int):
            raise ValueError(f"[BatchNormalization] axis must be an int, got {axis!r}")
        self.axis, self.momentum, self.epsilon, self.center, self.scale = axis, momentum, epsilon, center, scale
        names = ("beta_initializer", "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer")
        values = (beta_initializer, gamma_initializer, moving_mean_initializer, moving_variance_initializer)
        self._initializers = {n: _option(v, _INITIALIZERS, "BatchNormalization", n) for n, v in zip(names, values)}
        self.gamma = self.beta = None
        self.built = False

    def build(self, input_shape):
        """Makes gamma, beta, moving_mean and moving_variance, each [input_shape[axis]]."""
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ValueError(f"[BatchNormalization] axis {self.axis} is out of range for an input of shape "
                             f"{tuple(input_shape)}")
        size = (input_shape[self.axis],)
        init = self._initializers
        if self.scale:
            self.gamma = nn.Parameter(_initialized(size, init["gamma_initializer"]))
        if self.center:
            self.beta = nn.Parameter(_initialized(size, init["beta_initializer"]))
        self.register_buffer("moving_mean", _initialized(size, init["moving_mean_initializer"]))
        self.register_buffer("moving_variance", _initialized(size, init["moving_variance_initializer"]))
        self.built = True

    def forward(self, x):
        if not self.built:
            self.build(x.shape)
        axis = self.axis % x.dim()
        dims = [d for d in range(x.dim()) if d != axis]
        shape = [-1 if d == axis else 1 for d in range(x.dim())]
        if self.training:
            mean, variance = x.mean(dims), x.var(dims, correction=0)
            with no_grad():
                self.moving_mean.mul_(self.momentum).add_(mean.detach() * (1 - self.momentum))
                self.moving_variance.mul_(self.momentum).add_(variance.detach() * (1 - self.momentum))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        y = (x - mean.reshape(shape)) * (variance.reshape(shape) + self.epsilon).rsqrt()
        if self.gamma is not None:
            y = y * self.gamma.reshape(shape)
        return y + self.beta.reshape(shape) if self.beta is not None else y

    def extra_repr(self):
        return f"axis={self.axis}, momentum={self.momentum}, epsilon={self.epsilon}"
