"""Keras's functional API: keras.Input gives a symbolic tensor (KerasTensor); calling a layer on
symbolic tensors records a node instead of computing (the bound Module.__call__ hands such calls
here); keras.Model(inputs=..., outputs=...) builds the C++ model (ug::nn::Functional) from the
nodes between them. As in Keras, each layer runs once when it is called symbolically, on a small
batch of zeros in eval mode without grad: that builds lazy layers (Dense without input_dim) and
gives the output's shape, so a shape error surfaces there, naming the layer."""
import itertools

from . import _C, nn
from .autograd import no_grad

Functional = _C._keras.Functional
_EXAMPLE_BATCH = 2
_order = itertools.count()  # creation order: a node is always made after the tensors it reads


class KerasTensor:
    """A symbolic tensor: Keras's shape (None for the batch), dtype (a name, "float32") and name.
    It is a graph input (keras.Input) or the output of a layer called on symbolic tensors."""

    def __init__(self, shape, dtype, name, layer=None, parents=()):
        self.shape = tuple(shape)
        self.dtype = repr(dtype).rsplit(".", 1)[-1]  # Keras's name, "float32" (a copy can hold it)
        self.name = name
        self._layer = layer
        self._parents = tuple(parents)
        self._order = next(_order)

    @property
    def ndim(self):
        return len(self.shape)

    def _example(self):
        """Zeros of this shape, a small batch in place of None."""
        return _C.zeros([_EXAMPLE_BATCH if d is None else d for d in self.shape], dtype=getattr(_C, self.dtype))

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    # Keras 3's operators on symbolic tensors, each a node of its operation (named as Keras's).
    __array_ufunc__ = None  # numpy_array + x: numpy defers to __radd__

    def __add__(self, other):
        return _operation("Add", lambda a, b: a + b, self, other)

    def __radd__(self, other):
        return _operation("Add", lambda a, b: a + b, other, self)

    def __sub__(self, other):
        return _operation("Subtract", lambda a, b: a - b, self, other)

    def __rsub__(self, other):
        return _operation("Subtract", lambda a, b: a - b, other, self)

    def __mul__(self, other):
        return _operation("Multiply", lambda a, b: a * b, self, other)

    def __rmul__(self, other):
        return _operation("Multiply", lambda a, b: a * b, other, self)

    def __truediv__(self, other):
        return _operation("TrueDivide", lambda a, b: a / b, self, other)

    def __rtruediv__(self, other):
        return _operation("TrueDivide", lambda a, b: a / b, other, self)

    def __pow__(self, other):
        return _operation("Power", lambda a, b: a**b, self, other)

    def __rpow__(self, other):
        return _operation("Power", lambda a, b: a**b, other, self)

    def __matmul__(self, other):
        return _operation("Matmul", lambda a, b: a @ b, self, other)

    def __rmatmul__(self, other):
        return _operation("Matmul", lambda a, b: a @ b, other, self)

    def __neg__(self):
        return _operation("Negative", lambda a: -a, self)

    def __abs__(self):
        return _operation("Absolute", abs, self)

    def __lt__(self, other):
        return _operation("Less", lambda a, b: a < b, self, other)

    def __le__(self, other):
        return _operation("LessEqual", lambda a, b: a <= b, self, other)

    def __gt__(self, other):
        return _operation("Greater", lambda a, b: a > b, self, other)

    def __ge__(self, other):
        return _operation("GreaterEqual", lambda a, b: a >= b, self, other)

    def __getitem__(self, key):
        return _operation("GetItem", lambda a: a[key], self)

    def __iter__(self):  # without it, Python would iterate by __getitem__ forever
        raise TypeError(f"[KerasTensor] cannot iterate over the symbolic tensor '{self.name}'")


def Input(shape=None, batch_size=None, dtype=None, name=None):
    """keras.Input: a symbolic graph input of shape (batch_size, *shape); batch_size None
    leaves the batch free."""
    if shape is None:
        raise ValueError("[Input] shape is required, e.g. keras.Input(shape=(784,))")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(d is not None and (not isinstance(d, int) or d < 0) for d in shape):
        raise ValueError(f"[Input] shape must hold sizes (ints, or None), got {shape}")
    if None in shape:
        raise ValueError(f"[Input] unigrad's Input needs every size after the batch, got shape {shape}")
    dtype = _C.get_default_dtype() if dtype is None else (getattr(_C, dtype) if isinstance(dtype, str) else dtype)
    return KerasTensor((batch_size, *shape), dtype, _C._keras.layer_name("InputLayer", name or ""))


def _layer_name(layer):
    """Keras's layer.name; a layer without one (ug.nn.ReLU) gets one from its class."""
    name = getattr(layer, "name", None)
    if not isinstance(name, str) or not name:
        name = _C._keras.layer_name(type(layer).__name__)
        layer.name = name
    return name


def _record(layer, *args, **kwargs):
    """A layer called on symbolic tensors: runs it once on example zeros for its output's shape
    and dtype (building it), and returns the output as a symbolic tensor made by this node."""
    name = _layer_name(layer)
    if len(args) != 1 or kwargs:
        raise ValueError(f"[{name}] a layer of a functional model takes one input or one list of inputs, "
                         f"without keywords")
    arg = args[0]
    parents = list(arg) if isinstance(arg, (list, tuple)) else [arg]
    if not all(isinstance(p, KerasTensor) for p in parents):
        raise TypeError(f"[{name}] cannot mix symbolic tensors (keras.Input) with other values in one call")
    examples = [p._example() for p in parents]
    was_training = layer.training
    layer.eval()
    try:
        with no_grad():
            out = layer(examples if isinstance(arg, (list, tuple)) else examples[0])
    except Exception as e:
        shapes = ", ".join(str(p.shape) for p in parents)
        raise ValueError(f"[{name}] ({type(layer).__name__}) cannot be called on inputs of shape {shapes}: {e}") from e
    finally:
        layer.train(was_training)
    if not isinstance(out, _C.Tensor):
        raise ValueError(f"[{name}] a layer of a functional model must return one tensor, got {type(out).__name__}")
    batch = parents[0].shape[0]
    return KerasTensor((batch, *out.shape[1:]), out.dtype, f"{name}_output", layer, parents)


def _operation(type_name, fn, *operands):
    """fn on symbolic tensors and constants (Python numbers, tensors, arrays): a node of a Keras
    operation (ug.keras.Operation) that calls fn with its inputs' values in the constants' places."""
    symbolic = [isinstance(x, KerasTensor) for x in operands]
    operands = [x if s or isinstance(x, (int, float, bool, _C.Tensor)) else _C.tensor(x)
                for x, s in zip(operands, symbolic)]

    def apply(values):
        values = iter(values)
        return fn(*[next(values) if s else x for x, s in zip(operands, symbolic)])

    return _record(_C._keras.Operation(type_name, apply), [x for x, s in zip(operands, symbolic) if s])


def _flatten(tensors, what):
    """inputs / outputs as Keras takes them: one symbolic tensor, a list or tuple, or a dict (its values)."""
    if isinstance(tensors, dict):
        tensors = list(tensors.values())
    elif not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    if not tensors or not all(isinstance(t, KerasTensor) for t in tensors):
        raise TypeError(f"[Model] {what} must be symbolic tensors (keras.Input and layers called on them), "
                        f"got {tensors!r}")
    return list(tensors)


def functional(inputs, outputs, name=None):
    """keras.Model(inputs=..., outputs=...): the C++ Functional model of the layers between them."""
    keys = [str(k) for k in outputs] if isinstance(outputs, dict) else []  # Keras's dict outputs
    inputs, outputs = _flatten(inputs, "inputs"), _flatten(outputs, "outputs")
    for t in inputs:
        if t._layer is not None:
            raise ValueError(f"[Model] input '{t.name}' is a layer's output; inputs must come from keras.Input")
    given = {id(t) for t in inputs}
    nodes, seen, stack = [], set(), list(outputs)
    while stack:
        t = stack.pop()
        if id(t) in seen or id(t) in given:
            continue
        seen.add(id(t))
        if t._layer is None:
            raise ValueError(f"[Model] the outputs are not reachable from the inputs alone: they depend on input "
                             f"'{t.name}', which is not among the model's inputs")
        nodes.append(t)
        stack.extend(t._parents)
    nodes.sort(key=lambda t: t._order)
    model = Functional(len(inputs), _C._keras.layer_name("Functional", name or ""),
                       [[1, *t.shape[1:]] for t in inputs], [t.name for t in inputs])
    ids = {id(t): i for i, t in enumerate(inputs)}
    for t in nodes:
        layer = model.add_layer(_layer_name(t._layer), t._layer)
        ids[id(t)] = model.add_node(layer, [ids[id(p)] for p in t._parents], [1, *t.shape[1:]])
    model.set_outputs([ids[id(t)] for t in outputs], keys)
    model.inputs, model.outputs = inputs, outputs
    model._input_layers = [InputLayer(batch_shape=t.shape, dtype=t.dtype, name=t.name, input_tensor=t)
                           for t in inputs]  # the head of model.layers, as in Keras
    return model


class Model(nn.Module):
    """keras.Model: subclass it (`call` is `forward`), or give it the functional graph's
    inputs and outputs: keras.Model(inputs=inputs, outputs=outputs, name="mlp") is a Functional."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return functional(*args, **kwargs)
        return super().__new__(cls)


class InputLayer(nn.Module):
    """keras.layers.InputLayer: where a functional model's input enters; model.layers starts
    with one per input, as in Keras. It holds no weights and passes its input through."""

    def __init__(self, shape=None, batch_size=None, dtype=None, batch_shape=None, input_tensor=None, name=None):
        super().__init__()
        if input_tensor is None:
            input_tensor = Input(shape=shape, batch_size=batch_size, dtype=dtype, name=name) if batch_shape is None \
                else Input(shape=batch_shape[1:], batch_size=batch_shape[0], dtype=dtype, name=name)
        self.output = input_tensor
        self.name, self.batch_shape, self.dtype = input_tensor.name, input_tensor.shape, input_tensor.dtype

    def forward(self, x):
        return x


class Lambda(nn.Module):
    """keras.layers.Lambda(fn): a layer that calls fn on its input."""

    def __init__(self, function, name=None):
        super().__init__()
        self.function = function
        self.name = _C._keras.layer_name("Lambda", name or "")

    def forward(self, x):
        return self.function(x)


_C.nn._set_symbolic_call(KerasTensor, _record)
