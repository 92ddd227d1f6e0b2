"""TensorFlow's spelling of the compiled mode: ug.function (tf.function), its input_signature of
ug.TensorSpec, and get_concrete_function. The machinery is ug.jit's (compiled.py): a Function is
a JitFunction that also checks its input_signature and makes ConcreteFunctions."""
import functools
import inspect

from . import _C
from .compiled import _NUMPY_TYPES, JitFunction, _describe, _from_numpy, _traced_structs
from .tree import tree_flatten, tree_map, tree_unflatten


class TensorSpec:
    """tf.TensorSpec: the dtype and shape an input_signature entry accepts (None: any size)."""

    def __init__(self, shape, dtype=None, name=None):
        self.shape = None if shape is None else tuple(None if d is None else int(d) for d in shape)
        self.dtype, self.name = dtype or _C.float32, name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, value):
        """Whether a tensor (or a spec) fits this spec: its dtype, its rank and every size not None."""
        if isinstance(value, TensorSpec):
            if value.dtype != self.dtype:
                return False
            if self.shape is None or value.shape is None:
                return True
            return len(value.shape) == len(self.shape) and all(
                a is None or b is None or a == b for a, b in zip(self.shape, value.shape))
        return isinstance(value, _C.Tensor) and self.is_compatible_with(TensorSpec(value.shape, value.dtype))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype}, name={self.name!r})"


def _is_spec(value):
    return isinstance(value, TensorSpec)


def _as_spec(value, name):
    """A get_concrete_function argument leaf as a spec: tensors and arrays give theirs; other
    values (numbers, strings, objects) are bound as they are."""
    if isinstance(value, _NUMPY_TYPES):
        value = _from_numpy(value)
    if isinstance(value, _C.Tensor):
        return TensorSpec(value.shape, value.dtype, name)
    if isinstance(value, TensorSpec) and value.name is None and name is not None:
        return TensorSpec(value.shape, value.dtype, name)
    return value


# The sizes a None dim of a spec is traced at.
_TRACE_SIZES = (11, 13)


class ConcreteFunction:
    """f.get_concrete_function(*specs): f traced for one input signature, as TensorFlow's
    ConcreteFunction, and callable on the tensors that fit it. Its arguments are the function's
    parameters that were given a TensorSpec, a tensor or an array (or a tree holding them); the
    others (numbers, strings, objects) are bound to the values given. A call with a tensor of
    another dtype, rank or size where the spec has one raises TypeError naming the argument
    (TensorFlow's checks only the dtypes, at run time).

    Unlike TensorFlow's symbolic trace, the trace runs the function on zeros of the specs' shapes
    (as ug.eval_shape does), twice where a spec has a size of None (at sizes 11 and 13, rarely a
    literal of the body, which a trace would read as that size), which makes the one program for
    any size there and tells which of the outputs' sizes follow it (None in structured_outputs); a
    function that fits only one size there (x + y, y of fixed size 2) fails in the trace, with a
    note saying so. A function that writes state (a
    PyTorch-style training step) takes those steps."""

    def __init__(self, fun, args, kwargs, name, method=False):
        self._signature = inspect.signature(fun)
        self._skip = 1 if method else 0  # a method's instance: bound, and not shown as an input
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"[get_concrete_function] the arguments do not fit {name}{self._signature}: {e}") from None
        bound.apply_defaults()
        self._bound = bound
        inputs = list(bound.arguments)[self._skip:]
        for param in inputs:
            value = bound.arguments[param]
            top_level = not isinstance(value, (tuple, list, dict))
            bound.arguments[param] = tree_map(lambda v, p=param: _as_spec(v, p if top_level else None), value,
                                              is_leaf=_is_spec)
        self._tensor_params = [p for p in inputs if any(map(_is_spec, _leaves(bound.arguments[p])))]
        if not self._tensor_params:
            raise TypeError(f"[get_concrete_function] {name} was given no TensorSpec, tensor or array: a concrete "
                            "function takes tensors")
        self._name = name
        any_size = any(None in (s.shape or (None,)) for p in self._tensor_params for s in _specs_in(bound, p))
        self._jitted = JitFunction(fun, reduce_retracing=any_size, name=name, numbers_as_tensors=True)
        self.structured_outputs = self._trace(any_size)

    def _example(self, size):
        """The bound arguments with zeros in place of the specs, None sizes at `size`."""
        def zeros(spec):
            if spec.shape is None:
                raise TypeError(f"[get_concrete_function] {self._name}: {spec} has no rank; give its shape, with None "
                                "for sizes that vary")
            return _C.zeros(*[size if d is None else d for d in spec.shape], dtype=spec.dtype)
        example = self._signature.bind(*self._bound.args, **self._bound.kwargs)
        for p in self._tensor_params:
            example.arguments[p] = tree_map(zeros, example.arguments[p], is_leaf=_is_spec)
        return example

    def _trace(self, any_size):
        outs = []
        for size in _TRACE_SIZES if any_size else _TRACE_SIZES[:1]:
            run = self._example(size)
            try:
                outs.append(_traced_structs(self._jitted, run.args, run.kwargs))
            except Exception as e:
                if any_size:
                    e.add_note(f"[get_concrete_function] while tracing {self._name} with the specs' None sizes at {size}")
                raise
        (first, treedef), rest = tree_flatten(outs[0]), [tree_flatten(o) for o in outs[1:]]
        for leaves, other in rest:
            if other != treedef or any(type(a) is not type(b) for a, b in zip(first, leaves)):
                raise ValueError(f"[get_concrete_function] {self._name} returns another structure at other sizes of "
                                 "the specs' None dims; TensorFlow's concrete functions return one structure")

        def joined(values):
            head = values[0]
            if not hasattr(head, "shape"):
                return head
            if any(len(v.shape) != len(head.shape) or v.dtype != head.dtype for v in values):
                raise ValueError(f"[get_concrete_function] {self._name}'s outputs change rank or dtype with the specs' "
                                 f"None sizes: {[(v.shape, v.dtype) for v in values]}")
            return TensorSpec([d if all(v.shape[i] == d for v in values) else None for i, d in enumerate(head.shape)],
                              head.dtype)
        return tree_unflatten(treedef, [joined([first[i], *(leaves[i] for leaves, _ in rest)])
                                        for i in range(len(first))])

    @property
    def graph(self):
        """The program the concrete function runs (TensorFlow's FuncGraph): a Lowered, printed as
        its text; ug.jit.save(concrete, path) writes it, its None sizes symbolic in the file."""
        jitted, args, kwargs = self.saved_call()
        return jitted.lower(*args, **kwargs)

    def saved_call(self):
        """(the jitted function, arguments, keyword arguments) of a call that runs the program:
        what ug.jit.save writes for a concrete function."""
        example = self._example(_TRACE_SIZES[0])
        return self._jitted, example.args, example.kwargs

    @property
    def structured_input_signature(self):
        """(the positional arguments' specs and values, the keyword ones'), as TensorFlow's."""
        return tuple(self._bound.args[self._skip:]), dict(self._bound.kwargs)

    @property
    def output_shapes(self):
        return tree_map(lambda s: s.shape, self.structured_outputs, is_leaf=_is_spec)

    @property
    def output_dtypes(self):
        return tree_map(lambda s: s.dtype, self.structured_outputs, is_leaf=_is_spec)

    def __call__(self, *args, **kwargs):
        given = dict(zip(self._tensor_params, args))
        if len(args) > len(self._tensor_params):
            raise TypeError(f"[ConcreteFunction] {self._name} takes {len(self._tensor_params)} tensor arguments "
                            f"({', '.join(self._tensor_params)}), got {len(args)} positional ones")
        for key, value in kwargs.items():
            if key in given:
                raise TypeError(f"[ConcreteFunction] {self._name} got argument {key} twice")
            if key not in self._tensor_params:
                if key in self._bound.arguments and _same(value, self._bound.arguments[key]):
                    continue
                raise TypeError(f"[ConcreteFunction] {self._name} takes the tensor arguments "
                                f"{self._tensor_params}; {key} is bound to {self._bound.arguments.get(key)!r} "
                                "at get_concrete_function")
            given[key] = value
        missing = [p for p in self._tensor_params if p not in given]
        if missing:
            raise TypeError(f"[ConcreteFunction] {self._name} is missing the tensor arguments {missing}")
        call = self._signature.bind(*self._bound.args, **self._bound.kwargs)
        for param, value in given.items():
            call.arguments[param] = self._checked(param, value)
        return self._jitted(*call.args, **call.kwargs)

    def _checked(self, param, value):
        spec = self._bound.arguments[param]
        leaves, treedef = tree_flatten(value)
        spec_leaves, spec_treedef = tree_flatten(spec, is_leaf=_is_spec)
        if treedef != spec_treedef:
            raise TypeError(f"[ConcreteFunction] {self._name}'s argument {param} has another structure than its "
                            f"spec {spec!r}")
        out = []
        for leaf, s in zip(leaves, spec_leaves):
            leaf = _from_numpy(leaf) if isinstance(leaf, _NUMPY_TYPES) else leaf
            if _is_spec(s) and not s.is_compatible_with(leaf):
                got = _describe(leaf) if isinstance(leaf, _C.Tensor) else type(leaf).__name__
                raise TypeError(f"[ConcreteFunction] {self._name}'s argument {param} ({got}) does not fit {s}")
            if not _is_spec(s) and not _same(leaf, s):
                raise TypeError(f"[ConcreteFunction] {self._name}'s argument {param} holds {leaf!r} where it was "
                                f"traced with {s!r}")
            out.append(leaf)
        return tree_unflatten(treedef, out)

    def pretty_printed_signature(self):
        lines = ["Input Parameters:"]
        for param, value in list(self._bound.arguments.items())[self._skip:]:
            kind = self._signature.parameters[param].kind.name
            lines.append(f"  {param} ({kind}): {value!r}")
        lines += ["Output Type:", f"  {self.structured_outputs!r}"]
        return "\n".join(lines)

    def __repr__(self):
        return f"<ConcreteFunction {self._name}{self._signature}>"


def _leaves(value):
    return tree_flatten(value, is_leaf=_is_spec)[0]


def _specs_in(bound, param):
    return [v for v in _leaves(bound.arguments[param]) if _is_spec(v)]


def _same(a, b):
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError, RuntimeError):
        return False


class Function(JitFunction):
    """What ug.function returns: a jitted function that checks its input_signature and makes
    ConcreteFunctions."""

    def __init__(self, fun, input_signature=None, reduce_retracing=False):
        specs = None if input_signature is None else tuple(input_signature)
        if specs is not None and not all(map(_is_spec, specs)):
            raise TypeError(f"[function] the input_signature holds TensorSpecs, got {specs!r}")
        any_size = specs is not None and any(s.shape is None or None in s.shape for s in specs)
        super().__init__(fun, reduce_retracing=reduce_retracing or any_size, numbers_as_tensors=True)
        self.input_signature = specs

    def __call__(self, *args, **kwargs):
        return self._call(None, *args, **kwargs)

    def _call(self, instance, *args, **kwargs):
        specs = self.input_signature
        if specs is not None:
            if len(args) != len(specs) or kwargs:
                raise TypeError(f"[function] the input_signature takes {len(specs)} positional arguments, got "
                                f"{len(args)}" + (f" and keywords {sorted(kwargs)}" if kwargs else ""))
            args = [_from_numpy(a) if isinstance(a, _NUMPY_TYPES) else a for a in args]
            for i, (a, s) in enumerate(zip(args, specs)):
                if not s.is_compatible_with(a):
                    got = _describe(a) if isinstance(a, _C.Tensor) else type(a).__name__
                    raise TypeError(f"[function] argument {i} ({got}) does not match the input_signature's {s}")
        return JitFunction.__call__(self, *(() if instance is None else (instance,)), *args, **kwargs)

    def __get__(self, obj, objtype=None):
        """As a method: the instance is the first, static argument, outside the input_signature."""
        if obj is None:
            return self
        bound = functools.partial(self._call, obj)
        bound.get_concrete_function = functools.partial(self._concrete, obj)
        return bound

    def get_concrete_function(self, *args, **kwargs):
        """tf.function's: the ConcreteFunction for these TensorSpecs (tensors and arrays give theirs;
        with an input_signature and no arguments, its specs)."""
        return self._concrete(None, *args, **kwargs)

    def _concrete(self, instance, *args, **kwargs):
        if not args and not kwargs and self.input_signature is not None:
            args = self.input_signature
        head = () if instance is None else (instance,)
        name = getattr(self, "__name__", type(self._fun).__name__)
        return ConcreteFunction(self._fun, (*head, *args), kwargs, name, method=instance is not None)


def function(func=None, *, input_signature=None, jit_compile=None, reduce_retracing=False):
    """tf.function: the same compiled mode as ug.jit. With input_signature, calls whose tensors do
    not match it raise instead of tracing, and its None dims take any size: they are traced with
    reduce_retracing, so the call at a second size makes the one program for every size (two
    traces, where TensorFlow's symbolic trace takes one). With reduce_retracing, a trace at sizes
    other than a cached program's makes one program for any size in the dims that differ, where
    the two traces show that nothing depends on those sizes (the function must not read a traced
    tensor's shape in Python: the retrace warning says where it did). NumPy arrays are converted
    to tensors (see compiled.py's docstring). (jit_compile is accepted: every ug.function
    compiles.) get_concrete_function makes a ConcreteFunction."""
    def wrap(f):
        return Function(f, input_signature, reduce_retracing)
    return wrap if func is None else wrap(func)


__all__ = ["function", "TensorSpec", "ConcreteFunction", "Function"]
