"""ug.nn's lazy layers (torch.nn.LazyLinear, LazyConv*d, LazyConvTranspose*d, LazyBatchNorm*d,
LazyInstanceNorm*d): the regular layers built with their input size unknown (-1 in C++), which
their first forward infers from the input (linear.cpp, conv.cpp, normalization.cpp), creating
the tensors in the default dtype (Linear: its dtype). Until then those tensors read as
UninitializedParameter or UninitializedBuffer, and load_state_dict, on the layer or on any module
holding it, gives them the loaded shapes; after either the object is of the regular class, as
torch's."""
from .. import _C

_Module = _C.nn.Module
_set_type_name = _C.nn._utils._set_type_name


class _Uninitialized:
    """What a lazy layer's parameter or buffer is before its first forward: its shape (and so
    its data) does not exist yet."""

    __slots__ = ()

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __getattr__(self, name):
        if name.startswith("__"):  # protocol probes (copy, pickle, numpy) see an ordinary object
            raise AttributeError(name)
        raise RuntimeError(f"Can't access the {name} of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")


class UninitializedParameter(_Uninitialized):
    """torch.nn.UninitializedParameter: a lazy layer's parameter before its first forward."""

    __slots__ = ()


class UninitializedBuffer(_Uninitialized):
    """torch.nn.UninitializedBuffer: a lazy layer's running statistics before its first forward."""

    __slots__ = ()


class _LazyMeta(type):
    def __instancecheck__(cls, obj):
        return "_lazy" in getattr(obj, "__dict__", {})


class LazyModuleMixin(metaclass=_LazyMeta):
    """torch.nn.modules.lazy.LazyModuleMixin: the lazy classes' behaviour, copied into each of
    them (a class bound from C++ takes one base). `_lazy` (an instance attribute) names the
    tensors the first forward makes, with their kinds; isinstance(m, LazyModuleMixin) holds
    until the first forward."""

    __slots__ = ()
    cls_to_become = None

    def has_uninitialized_params(self):
        return any(_Module.__getattr__(self, name) is None for name, _ in self.__dict__.get("_lazy", ()))

    def _lazy_init(self, names):
        _set_type_name(self, type(self).__name__)
        self._lazy = tuple(names)

    def _become_regular(self):
        regular = type(self).__dict__.get("cls_to_become")
        if regular is not None and not self.has_uninitialized_params():
            self.__dict__.pop("_lazy", None)
            self.__class__ = regular
            _set_type_name(self, regular.__name__)

    def __call__(self, *args, **kwargs):
        out = _Module.__call__(self, *args, **kwargs)
        self._become_regular()
        return out

    def __deepcopy__(self, memo):
        # The C++ layer is copied as its regular class, then the copy made lazy again.
        lazy = type(self)
        self.__class__ = lazy.__dict__["cls_to_become"]
        try:
            copy = _Module.__deepcopy__(self, memo)
        finally:
            self.__class__ = lazy
        copy.__class__ = lazy
        return copy

    def __getattr__(self, name):
        value = _Module.__getattr__(self, name)
        if value is None:
            for lazy_name, kind in self.__dict__.get("_lazy", ()):
                if lazy_name == name:
                    return kind()
        elif "_lazy" in self.__dict__:  # the first forward ran from a C++ container
            self._become_regular()
        return value


_cpp_load_state_dict = _Module.load_state_dict


def _load_state_dict(self, state_dict, strict=True):
    """Module.load_state_dict (C++), where each lazy layer under the module that has not run yet
    first takes the shapes of its loaded tensors (Module::load_lazy_shapes, torch's
    _lazy_load_hook); those layers then become their regular class, as after a first forward."""
    result = _cpp_load_state_dict(self, state_dict, strict)
    for _, module in self.named_modules():
        if isinstance(module, LazyModuleMixin):
            module._become_regular()
    return result


_load_state_dict.__doc__ = _cpp_load_state_dict.__doc__ or _load_state_dict.__doc__
_Module.load_state_dict = _load_state_dict


def _tensors(weight=True, bias=True, running=False):
    names = []
    if weight:
        names.append(("weight", UninitializedParameter))
    if bias:
        names.append(("bias", UninitializedParameter))
    if running:
        names += [("running_mean", UninitializedBuffer), ("running_var", UninitializedBuffer)]
    return names


_MIXIN = {k: v for k, v in vars(LazyModuleMixin).items() if k not in ("__dict__", "__weakref__", "__doc__")}


def _lazy_class(regular, init, doc):
    return type(f"Lazy{regular.__name__}", (regular,),
                {**_MIXIN, "cls_to_become": regular, "__init__": init, "__doc__": doc, "__module__": __name__})


def _linear_init(self, out_features, bias=True, device=None, dtype=None):
    _C.nn.Linear.__init__(self, -1, out_features, bias, dtype)
    self._lazy_init(_tensors(bias=bias))


LazyLinear = _lazy_class(_C.nn.Linear, _linear_init,
                         "torch.nn.LazyLinear(out_features, bias=True): a Linear whose in_features comes from "
                         "the first input.")


def _lazy_conv(regular, transposed):
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            regular.__init__(self, -1, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                             dilation, padding_mode)
            self._lazy_init(_tensors(bias=bias))
        order = "output_padding=0, groups=1, bias=True, dilation=1"
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            regular.__init__(self, -1, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                             padding_mode)
            self._lazy_init(_tensors(bias=bias))
        order = "dilation=1, groups=1, bias=True"
    doc = (f"torch.nn.Lazy{regular.__name__}(out_channels, kernel_size, stride=1, padding=0, {order}, "
           f"padding_mode='zeros'): a {regular.__name__} whose in_channels comes from the first input.")
    return _lazy_class(regular, __init__, doc)


def _lazy_norm(regular):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        regular.__init__(self, -1, eps, momentum, affine, track_running_stats)
        self._lazy_init(_tensors(weight=affine, bias=affine, running=track_running_stats))

    doc = (f"torch.nn.Lazy{regular.__name__}(eps=1e-5, momentum=0.1, affine=True, track_running_stats=True): a "
           f"{regular.__name__} whose num_features comes from the first input.")
    return _lazy_class(regular, __init__, doc)


LazyConv1d = _lazy_conv(_C.nn.Conv1d, False)
LazyConv2d = _lazy_conv(_C.nn.Conv2d, False)
LazyConv3d = _lazy_conv(_C.nn.Conv3d, False)
LazyConvTranspose1d = _lazy_conv(_C.nn.ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(_C.nn.ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(_C.nn.ConvTranspose3d, True)
LazyBatchNorm1d = _lazy_norm(_C.nn.BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(_C.nn.BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(_C.nn.BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(_C.nn.InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(_C.nn.InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(_C.nn.InstanceNorm3d)

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin", "UninitializedBuffer", "UninitializedParameter",
]
