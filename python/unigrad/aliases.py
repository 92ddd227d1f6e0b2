"""torch's other names for unigrad's ops (NumPy's arccos for acos, greater for gt, ...), the
in-place forms torch has of out-of-place ops, and the Tensor predicates that are constant for
unigrad's dense real tensors. Names only: each one calls the op it stands for."""
from . import _C

Tensor = _C.Tensor

# torch's alias -> the op it names, as Tensor methods and (without a trailing _) functions.
_ALIASES = {
    "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh", "arctan": "atan",
    "arctanh": "atanh", "arctan2": "atan2", "fix": "trunc", "greater": "gt", "greater_equal": "ge",
    "less": "lt", "less_equal": "le", "not_equal": "ne",
}
for _alias, _name in list(_ALIASES.items()):
    _ALIASES[_alias + "_"] = _name + "_"
_ALIASES.update({
    "absolute_": "abs_", "clip_": "clamp_", "multiply_": "mul_", "divide_": "div_", "true_divide_": "div_",
    "subtract_": "sub_", "ndimension": "dim", "nelement": "numel",
})
for _alias, _name in _ALIASES.items():
    setattr(Tensor, _alias, getattr(Tensor, _name))


def _in_place(name):
    """torch's in-place form of an op unigrad has out of place: the result written into self."""
    op = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        # What the op keeps for backward must not be self, which the copy changes.
        recorded = _C._autograd.is_grad_enabled() and (self.requires_grad or any(
            isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values())))
        self.copy_(op(self.clone() if recorded else self, *args, **kwargs))
        return self  # the same Python object, as torch's in-place methods return

    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: self.copy_(self.{name}(...)), as torch.Tensor.{name}_."
    return method


for _name in ("cumsum", "cumprod", "lerp", "erfinv", "digamma", "lgamma", "logit", "hypot", "frac", "xlogy", "i0",
              "addmm", "baddbmm"):
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _in_place(_name))


def _constant(value, doc):
    def method(self):
        return value

    method.__doc__ = doc
    return method


# unigrad's tensors are dense and unquantized (conj and its lazy bit: bind_complex.cpp).
for _name in ("is_sparse", "is_quantized", "is_meta", "is_nested", "is_mkldnn"):
    setattr(Tensor, _name, property(_constant(False, f"False, as torch's Tensor.{_name} for a dense tensor.")))
# unigrad never defers a conjugation or negation: resolving gives self, and a real tensor's
# conjugate is self, the same object as in torch
Tensor.resolve_conj = Tensor.resolve_neg = lambda self: self
_conj = Tensor.conj
Tensor.conj = lambda self: _conj(self) if self.is_complex() else self
Tensor.mH = property(lambda self: self.conj().mT, doc="The conjugate transpose of the last two dims (torch's mH).")
Tensor.adjoint = lambda self: self.mH


def _H(self):
    """The conjugate transpose of a matrix; a 0-d tensor's conjugate (torch's Tensor.H)."""
    if self.dim() not in (0, 2):
        hint = ". For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor{hint}")
    return self.mH if self.dim() == 2 else self.conj()


Tensor.H = property(_H)
# torch's Tensor methods for these functional activations
Tensor.hardshrink = lambda self, lambd=0.5: _C.nn.functional.hardshrink(self, lambd)
Tensor.prelu = lambda self, weight: _C.nn.functional.prelu(self, weight)


def _elementwise_(self, op, fn, others):
    if self.device.type != "cpu":
        raise TypeError(f"[{op}] is only implemented on CPU tensors, not on {self.device}")
    values = [fn(*args) for args in zip(*(t.reshape(-1).tolist() for t in (self, *others)))]
    if values:  # cast to self's dtype, as torch does
        self.copy_(_C.tensor(values, dtype=self.dtype).reshape(tuple(self.shape)))
    return self


def _apply_(self, callable):
    """self[i] = callable(self[i]) for every element, a Python loop on the CPU (torch's Tensor.apply_)."""
    return _elementwise_(self, "apply_", callable, ())


def _map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape, a Python loop on the CPU
    (torch's Tensor.map_); tensor must have self's dtype, as torch asks."""
    if tensor.dtype != self.dtype:
        raise TypeError(f"[map_] expected a tensor of self's dtype {self.dtype} for 'tensor', got {tensor.dtype}")
    return _elementwise_(self, "map_", callable, (tensor.expand(tuple(self.shape)),))


def _accelerator_available():
    from . import cuda  # imported here: the package imports this module first

    return cuda.is_available()


def _pin_memory(self, device=None):
    """A copy in memory the accelerator reads directly (torch's Tensor.pin_memory). unigrad's host
    memory is ordinary, so this is a copy; with no accelerator it raises, as torch does."""
    if not _accelerator_available():
        raise RuntimeError("[pin_memory] Cannot access accelerator device when none is available.")
    return self.clone()


Tensor.apply_, Tensor.map_, Tensor.pin_memory = _apply_, _map_, _pin_memory
Tensor.is_pinned = lambda self, device=None: False  # unigrad never page-locks host memory


def _is_signed(self):
    """Whether the dtype holds negative numbers (torch.Tensor.is_signed)."""
    return self.dtype not in (_C.bool, _C.uint8)


def _is_same_size(self, other):
    """Whether other has self's shape (torch.Tensor.is_same_size)."""
    return tuple(self.shape) == tuple(other.shape)


def _get_device(self):
    """-1 for a CPU tensor, else the device's index (torch.Tensor.get_device)."""
    return -1 if self.device.type == "cpu" else self.device.index


Tensor.is_signed, Tensor.is_same_size, Tensor.get_device = _is_signed, _is_same_size, _get_device
Tensor.is_cpu = property(lambda self: self.device.type == "cpu", doc="Whether the tensor is on the CPU.")


def take(input, index):
    """input's elements at index into its flattened form, shaped as index (torch.take)."""
    return input.reshape(-1)[index]


def argwhere(input):
    """The indices of input's non-zero elements, one row each (torch.argwhere)."""
    return input.nonzero()


def split_with_sizes(self, split_sizes, dim=0):
    """self split into pieces of split_sizes along dim (torch.Tensor.split_with_sizes)."""
    return self.split(list(split_sizes), dim)


def sum_to_size(self, *size):
    """self summed over the dims that size broadcasts to it (torch.Tensor.sum_to_size)."""
    shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    lead = self.dim() - len(shape)
    if lead < 0 or any(s not in (1, n) for s, n in zip(shape, self.shape[lead:])):
        raise RuntimeError(f"[sum_to_size] size {list(shape)} is not expandable to size {list(self.shape)}")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and self.shape[lead + i] != 1]
    return (self.sum(dims, keepdim=True) if dims else self).reshape(shape)


def _slice(self, dim=0, start=None, end=None, step=1):
    """self[start:end:step] along dim (torch.slice, which Tensor has no method for)."""
    return self[(slice(None),) * (dim % max(self.dim(), 1)) + (slice(start, end, step),)]


def _copy_of(name, view):
    """torch's *_copy form of a view op: the view's elements in new, contiguous memory."""
    def copy(input, *args, **kwargs):
        out = view(input, *args, **kwargs)
        return tuple(t.clone() for t in out) if isinstance(out, (list, tuple)) else out.clone()

    copy.__name__ = name + "_copy"
    copy.__doc__ = f"{name}, copied into new contiguous memory (torch.{name}_copy): differentiable."
    return copy


_VIEWS = {"t": Tensor.t, "transpose": Tensor.transpose, "view": Tensor.view, "permute": Tensor.permute,
          "expand": Tensor.expand, "squeeze": Tensor.squeeze, "unsqueeze": Tensor.unsqueeze,
          "diagonal": Tensor.diagonal, "select": Tensor.select, "slice": _slice, "split": Tensor.split,
          "split_with_sizes": split_with_sizes, "unbind": Tensor.unbind, "unfold": Tensor.unfold,
          "detach": Tensor.detach, "alias": lambda self: self, "as_strided": Tensor.as_strided,
          "narrow": Tensor.narrow}
_COPIES = {name + "_copy": _copy_of(name, view) for name, view in _VIEWS.items()}

# torch's functions that are in-place Tensor methods (torch.relu_(x) is x.relu_()), where the
# method exists.
_IN_PLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_",
    "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "resize_as_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)

Tensor.take, Tensor.argwhere = take, argwhere
Tensor.split_with_sizes, Tensor.sum_to_size = split_with_sizes, sum_to_size
Tensor.narrow_copy = _COPIES["narrow_copy"]
FUNCTIONS = {alias: getattr(_C, name) for alias, name in _ALIASES.items()
             if not alias.endswith("_") and hasattr(_C, name)}
FUNCTIONS.update(take=take, argwhere=argwhere, split_with_sizes=split_with_sizes, **_COPIES)
FUNCTIONS.update({name: getattr(Tensor, name) for name in _IN_PLACE_FUNCTIONS if hasattr(Tensor, name)})
