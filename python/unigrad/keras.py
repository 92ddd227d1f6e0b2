"""ug.keras: Keras's module paths over unigrad's pieces (keras.mixed_precision,
keras.optimizers, keras.callbacks, keras.layers, keras.models, keras.config / keras.backend's
floatx), so that `keras.X` code reads `ug.keras.X`, and Keras's functional API (keras.Input,
keras.Model(inputs=, outputs=); unigrad/keras_functional.py). It also gives every Module Keras's
persistence methods: get_weights/set_weights, save (ONNX) and save_weights/load_weights
(safetensors)."""
import numpy as np

from . import _C, nn
from .autograd import no_grad
from . import callbacks, mixed_precision, optimizers  # noqa: F401
from .keras_functional import Functional, Input, InputLayer, KerasTensor, Lambda, Model

_FLOATX = ("float16", "bfloat16", "float32", "float64")


class config:
    """keras.config.floatx / set_floatx: Keras's default float type is unigrad's default dtype
    (ug.set_default_dtype), which Dense and the other layers make their weights in."""

    @staticmethod
    def floatx():
        return repr(_C.get_default_dtype()).rsplit(".", 1)[-1]

    @staticmethod
    def set_floatx(value):
        if value not in _FLOATX:
            raise ValueError(f"[set_floatx] unknown `floatx` value: {value!r}; expected one of {_FLOATX}")
        _C.set_default_dtype(getattr(_C, value))


backend = config  # Keras 2's keras.backend.floatx / set_floatx


class layers:
    """keras.layers: the Keras-style layers unigrad has. Dense is Keras's (units, activation,
    input_dim); Flatten, Dropout(rate) and Embedding(input_dim, output_dim) take Keras's
    positional arguments. Conv1D/2D, MaxPooling1D/2D, AveragePooling1D/2D, the global poolings
    and BatchNormalization are Keras's, channels last (ug::nn::Conv2D, ... in C++, bound as
    unigrad._C._keras); ug.nn's are torch's, channels first. Each takes Keras's name=. Input,
    InputLayer, the merge layers (Add, Multiply, Concatenate), Activation and Lambda serve
    functional models."""

    Dense = nn.Dense
    Flatten = nn.Flatten
    Dropout = nn.Dropout
    Embedding = nn.Embedding
    Conv1D, Conv2D = _C._keras.Conv1D, _C._keras.Conv2D
    MaxPooling1D, MaxPooling2D = _C._keras.MaxPooling1D, _C._keras.MaxPooling2D
    AveragePooling1D, AveragePooling2D = _C._keras.AveragePooling1D, _C._keras.AveragePooling2D
    GlobalAveragePooling1D, GlobalAveragePooling2D = _C._keras.GlobalAveragePooling1D, _C._keras.GlobalAveragePooling2D
    GlobalMaxPooling1D, GlobalMaxPooling2D = _C._keras.GlobalMaxPooling1D, _C._keras.GlobalMaxPooling2D
    BatchNormalization = _C._keras.BatchNormalization
    Input = staticmethod(Input)
    Add, Multiply, Concatenate = _C._keras.Add, _C._keras.Multiply, _C._keras.Concatenate
    Activation = _C._keras.Activation
    InputLayer = InputLayer
    Lambda = Lambda


def _weight_slots(model, where):
    """(module, name, is_kernel) for each weight in Keras's order: layer by layer, each
    layer's parameters then its float buffers (BatchNorm's moving mean and variance; Keras
    keeps no batch counter). A Dense kernel is stored [out, in] and read as Keras's [in, out]."""
    _build(model, None, where)
    slots = []
    for module in model.modules():
        named = list(module.named_parameters(recurse=False)) + list(module.named_buffers(recurse=False))
        for name, t in named:
            if t.is_floating_point():
                slots.append((module, name, isinstance(module, nn.Dense) and name == "weight"))
    return slots


def get_weights(self):
    """Keras's get_weights: the weights as NumPy arrays, in Keras's order and layouts (a Dense
    layer gives kernel [in, out], then bias)."""
    out = []
    for module, name, kernel in _weight_slots(self, "get_weights"):
        t = getattr(module, name).detach()
        out.append((t.t() if kernel else t).contiguous().numpy().copy())
    return out


def set_weights(self, weights):
    """Keras's set_weights: the arrays get_weights returns (Keras's order and layouts)."""
    slots = _weight_slots(self, "set_weights")
    weights = list(weights)
    if len(weights) != len(slots):
        raise ValueError(f"[set_weights] the model has {len(slots)} weights, got a list of {len(weights)}")
    with no_grad():
        for i, ((module, name, kernel), w) in enumerate(zip(slots, weights)):
            target = getattr(module, name)
            value = _C.tensor(np.asarray(w)).to(target.dtype)
            value = value.t() if kernel and value.dim() == 2 else value
            if tuple(value.shape) != tuple(target.shape):
                want = tuple(reversed(target.shape)) if kernel else tuple(target.shape)
                raise ValueError(f"[set_weights] weight {i} ({type(module).__name__}.{name}) has shape {want}, "
                                 f"got an array of shape {tuple(np.shape(w))}")
            target.copy_(value)


def _build(model, input_shape, where):
    """Keras builds every layer from the input shape: lazy Dense layers and unbuilt Keras layers
    (Conv2D, BatchNormalization) are sized here by a pass on zeros of that shape, in eval mode
    without grad."""
    if not any(isinstance(m, nn.Linear) and m.weight is None or getattr(m, "built", True) is False
               for m in model.modules()):
        return
    shape = _input_shape(model, input_shape, where)
    dtype = next((p.dtype for p in model.parameters()), _C.get_default_dtype())
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            model(_C.zeros(shape, dtype=dtype))
    finally:
        model.train(was_training)


def _input_shape(model, input_shape, where):
    if input_shape is not None:
        return [1 if d is None else int(d) for d in input_shape]
    if isinstance(model, Functional) and len(model.inputs) == 1:
        return [1, *model.inputs[0].shape[1:]]
    first = model
    while isinstance(first, nn.Sequential) and len(first) > 0:
        first = first[0]
    features = getattr(first, "in_features", -1) if isinstance(first, nn.Linear) else -1
    if features is None or features < 0:
        hint = "; or pass input_shape, e.g. model.save(path, input_shape=(None, 784))" if where == "save" else ""
        raise ValueError(f"[{where}] the model is not built: its input shape is not known (give its first Dense "
                         f"layer an input_dim, or call the model once){hint}")
    return [1, features]


def save(self, filepath, input_shape=None):
    """Keras's model.save, in unigrad's formats: the model's forward pass (in eval mode) and its
    weights as one ONNX file at filepath (whatever its extension), batch dim left free. The
    input shape is the one the first Dense layer was built or called with, or input_shape
    ((None, 784): None for the batch). keras.models.load_model reads it back as a trainable
    Module."""
    shape = _input_shape(self, input_shape, "save")
    _build(self, input_shape, "save")  # a lazy layer's first call draws its weights: not in the exported graph
    example = _C.zeros(shape, dtype=next(p.dtype for p in self.parameters()))
    was_training = self.training
    self.eval()
    try:
        _C.onnx.export(self, example, str(filepath), input_names=["input"], output_names=["output"],
                       dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    finally:
        self.train(was_training)


def save_weights(self, filepath):
    """Keras's save_weights: the state dict as a safetensors file (ModelCheckpoint's format)."""
    _C.safetensors.save_file(self.state_dict(), str(filepath))


def load_weights(self, filepath):
    """Keras's load_weights: reads a file save_weights wrote into this model."""
    self.load_state_dict(_C.safetensors.load_file(str(filepath)))


for _f in (get_weights, set_weights, save, save_weights, load_weights):
    setattr(nn.Module, _f.__name__, _f)


def _as_layer(layer):
    """A keras.Input among a Sequential's layers (Keras 3's habit) is its InputLayer."""
    return InputLayer(input_tensor=layer) if isinstance(layer, KerasTensor) else layer


class Sequential(nn.Sequential):
    """keras.Sequential: ug.nn.Sequential taking Keras's arguments, a list of layers (or none, for
    add) and a name, and a keras.Input as its first layer, which gives summary its input size."""

    def __init__(self, layers=None, *more, name=None, trainable=True):
        if isinstance(layers, (list, tuple)):
            layers = [_as_layer(layer) for layer in layers]
        super().__init__(*(() if layers is None else (layers, *more)))
        if name is not None:
            self.name = name
        self._build()
        if not trainable:
            self.requires_grad_(False)

    def add(self, layer):
        out = super().add(_as_layer(layer))
        self._build()
        return out

    def _build(self):
        """Keras builds a Sequential that starts with an Input as its layers come: here one pass
        of a zero example, in eval mode and without gradients, makes the lazy layers' weights."""
        first = next(iter(self.children()), None)
        if not isinstance(first, InputLayer) or None in first.batch_shape[1:]:
            return
        training = self.training
        self.eval()
        try:
            with no_grad():
                self(_C.zeros(1, *first.batch_shape[1:], dtype=first.dtype))
        finally:
            self.train(training)

    @property
    def layers(self):
        """Keras's model.layers: the layers in order, a first keras.Input left out (as Keras's
        Sequential leaves its InputLayer out)."""
        return [m for m in self.children() if not isinstance(m, InputLayer)]

    def summary(self, input_size=None, dtype=None):
        first = next(iter(self.children()), None)
        if input_size is None and isinstance(first, InputLayer):
            input_size = first.batch_shape
        return super().summary(input_size, dtype)


class models:
    """keras.models: Sequential, Model (a Module: `call` is `forward`; or a functional model) and
    load_model."""

    Sequential = Sequential
    Model = Model

    @staticmethod
    def load_model(filepath):
        """Reads a file model.save wrote: a Module (ug.onnx.load's) that predicts as the saved
        model did and trains further with compile/fit."""
        return _C.onnx.load(str(filepath))



def _loss_class(class_name, kind, name, takes_logits):
    """A keras.losses class: a KerasLoss (C++) of one kind, with the class's Keras arguments."""
    if takes_logits:
        def __init__(self, from_logits=False, *, reduction="sum_over_batch_size", name=name):
            _C.KerasLoss.__init__(self, kind, from_logits, reduction, name)
    elif kind == "huber":
        def __init__(self, delta=1.0, *, reduction="sum_over_batch_size", name=name):
            _C.KerasLoss.__init__(self, kind, False, reduction, name, delta)
    else:
        def __init__(self, *, reduction="sum_over_batch_size", name=name):
            _C.KerasLoss.__init__(self, kind, False, reduction, name)
    doc = f"keras.losses.{class_name}: loss(y_true, y_pred, sample_weight=None), {kind} reduced by `reduction`."
    return type(class_name, (_C.KerasLoss,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _loss_function(kind, takes_logits):
    """A keras.losses function: each sample's loss, unreduced."""
    if takes_logits:
        def loss(y_true, y_pred, from_logits=False):
            return _C.keras_loss(kind, y_true, y_pred, from_logits)
    elif kind == "huber":
        def loss(y_true, y_pred, delta=1.0):
            return _C.keras_loss(kind, y_true, y_pred, False, delta)
    else:
        def loss(y_true, y_pred):
            return _C.keras_loss(kind, y_true, y_pred)
    loss.__name__ = kind
    return loss


class losses:
    """keras.losses: the loss classes, called as loss(y_true, y_pred, sample_weight=None) in
    Keras's order and taken by compile(loss=...), and the per-sample loss functions."""

    SparseCategoricalCrossentropy = _loss_class("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy",
                                                "sparse_categorical_crossentropy", True)
    CategoricalCrossentropy = _loss_class("CategoricalCrossentropy", "categorical_crossentropy",
                                          "categorical_crossentropy", True)
    BinaryCrossentropy = _loss_class("BinaryCrossentropy", "binary_crossentropy", "binary_crossentropy", True)
    MeanSquaredError = _loss_class("MeanSquaredError", "mse", "mean_squared_error", False)
    MeanAbsoluteError = _loss_class("MeanAbsoluteError", "mae", "mean_absolute_error", False)
    Huber = _loss_class("Huber", "huber", "huber_loss", False)
    KLDivergence = _loss_class("KLDivergence", "kl_divergence", "kl_divergence", False)
    sparse_categorical_crossentropy = staticmethod(_loss_function("sparse_categorical_crossentropy", True))
    categorical_crossentropy = staticmethod(_loss_function("categorical_crossentropy", True))
    binary_crossentropy = staticmethod(_loss_function("binary_crossentropy", True))
    mean_squared_error = staticmethod(_loss_function("mse", False))
    mean_absolute_error = staticmethod(_loss_function("mae", False))
    huber = staticmethod(_loss_function("huber", False))
    kl_divergence = staticmethod(_loss_function("kl_divergence", False))
