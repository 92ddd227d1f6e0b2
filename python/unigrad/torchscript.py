"""torch.jit's TorchScript names over the compiled mode: ug.jit.trace, ug.jit.script and
ug.jit.load (the articles save models "with torch.jit.script or torch.jit.trace"). There is no
TorchScript language: a traced or scripted module is a compiled module (ug.compile) that also
remembers an example call, and its save(path) writes the program as ONNX, so ug.jit.load,
ug.onnx.load, `ug serve` and ONNX Runtime run it. A module is saved with a batch dim (dim 0 of
every input and output) of any size, as a TorchScript module runs at any batch size; a function
is saved at the example's shapes. script() has no source to compile: it traces on each new
signature like ug.compile, and its first call is the example save() uses."""
import functools
import os

from . import _C, onnx
from .autograd import no_grad
from .compiled import CompiledModule, JitFunction, jit
from .compiled import save as _save_program
from .tree import tree_leaves


def _tensors(value):
    return [t for t in tree_leaves(value) if isinstance(t, _C.Tensor)]


def _save_module(module, path, example, any_size=None):
    """ug.onnx.export with dim 0 of each input and output symbolic (a scalar keeps its shape), or
    the input dims `any_size` names (a set per input: an InputSpec's None dims) and the output
    dims that follow them (those that change when those input dims do)."""
    with no_grad():
        outputs = _tensors(module(*example))
    inputs = _tensors(example)
    names_in = [f"input_{i}" for i in range(len(inputs))]
    names_out = [f"output_{i}" for i in range(len(outputs))]
    if any_size is None:
        dynamic = {name: {0: "batch"} for name, t in zip(names_in + names_out, inputs + outputs) if t.dim() > 0}
    else:
        dynamic = {name: {d: "batch" if d == 0 else f"{name}_dim{d}" for d in dims if d < t.dim()}
                   for name, t, dims in zip(names_in, inputs, any_size)}
        grown = [t.new_zeros(*[2 * n if d in dims else n for d, n in enumerate(t.shape)]) if dims else t
                 for t, dims in zip(inputs, any_size)]
        with no_grad():
            again = _tensors(module(*grown))
        for name, a, b in zip(names_out, outputs, again):
            dynamic[name] = {d: "batch" if d == 0 else f"{name}_dim{d}" for d in range(a.dim()) if a.shape[d] != b.shape[d]}
    onnx.export(module, tuple(example), str(path), input_names=names_in, output_names=names_out,
                dynamic_axes={k: v for k, v in dynamic.items() if v})


def _example_tuple(example_inputs):
    return tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)


class ScriptModule(CompiledModule):
    """A traced or scripted module: the module's forward compiled per signature (ug.compile),
    its attributes the module's, and save(path) writing it as ONNX."""

    def __init__(self, module, example=None, any_size=None):
        super().__init__(module)
        self._example = example
        self._any_size = any_size  # the input dims saved of any size (default: dim 0 of each)

    def __call__(self, *args, **kwargs):
        out = super().__call__(*args, **kwargs)
        if self._example is None and not kwargs:
            self._example = args
        return out

    def save(self, path):
        """Writes the module as an ONNX file, its batch dim of any size (ug.jit.load reads it)."""
        if self._example is None:
            raise ValueError("[jit.save] a scripted module is traced on its first call: call it once before save(), "
                             "or use ug.jit.trace(module, example_inputs)")
        _save_module(self._orig_mod, path, self._example, self._any_size)


class ScriptFunction:
    """A traced or scripted function: jitted (ug.jit), and save(path) writing the program of its
    example call as ONNX."""

    def __init__(self, fn, example=None):
        self._jitted = JitFunction(fn)
        self._example = example
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        out = self._jitted(*args)
        if self._example is None:
            self._example = args
        return out

    def save(self, path):
        """Writes the example call's program as an ONNX file, at the example's shapes."""
        if self._example is None:
            raise ValueError("[jit.save] a scripted function is traced on its first call: call it once before save(), "
                             "or use ug.jit.trace(fn, example_inputs)")
        _save_program(self._jitted, path, *self._example)


def trace(func, example_inputs=None, *, check_trace=True, strict=True, example_kwarg_inputs=None):
    """torch.jit.trace: func (a module or a function) compiled and run once on example_inputs (a
    tensor or a tuple of them). check_trace compares that run with eager execution."""
    if example_inputs is None:
        raise TypeError("[jit.trace] example_inputs is required: the tensors (or tuple of tensors) to trace on")
    if example_kwarg_inputs is not None:
        raise TypeError("[jit.trace] example_kwarg_inputs is not supported: pass the inputs positionally")
    example = _example_tuple(example_inputs)
    if isinstance(func, _C.nn.Module):
        traced = ScriptModule(func, example)
    elif callable(func):
        traced = ScriptFunction(func, example)
    else:
        raise TypeError(f"[jit.trace] expected a module or a function, got {type(func).__name__}")
    with no_grad():
        compiled = _tensors(traced(*example))
        if check_trace:
            eager = _tensors(func(*example))
            if len(eager) != len(compiled) or any(not _C.allclose(a, b, rtol=1e-5, atol=1e-5, equal_nan=True)
                                                  for a, b in zip(eager, compiled)):
                raise ValueError("[jit.trace] the traced program's outputs differ from eager execution on the example "
                                 "inputs (does func depend on Python state or randomness?); pass check_trace=False "
                                 "to keep it anyway")
    return traced


def script(obj, optimize=None, example_inputs=None):
    """torch.jit.script: obj compiled, traced on each new signature (ug.compile); save() needs a
    first call or example_inputs (torch's list of argument tuples: the first is the example). A
    ScriptModule or ScriptFunction is returned as it is."""
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if example_inputs is not None and not (isinstance(example_inputs, list) and example_inputs
                                           and all(isinstance(e, tuple) for e in example_inputs)):
        raise TypeError(f"[jit.script] example_inputs must be a list of argument tuples, got {example_inputs!r}")
    example = example_inputs[0] if example_inputs else None
    if isinstance(obj, _C.nn.Module):
        return ScriptModule(obj, example)
    if callable(obj):
        return ScriptFunction(obj, example)
    raise TypeError(f"[jit.script] expected a module or a function, got {type(obj).__name__}")


def save(m, f, *example_args, input_spec=None, **example_kwargs):
    """torch.jit.save(m, f): a traced or scripted module or function as its save(f) writes it;
    paddle.jit.save(layer, path, input_spec=[InputSpec(...)]): the module with the specs' None
    dims of any size, written to path + ".onnx" where path has no suffix (Paddle's path is a
    prefix); anything else as ug.jit.save(fun, path, *example_args) writes it."""
    if input_spec is not None:
        specs = list(input_spec)
        module = m._orig_mod if isinstance(m, CompiledModule) else m
        if not isinstance(module, _C.nn.Module):
            raise TypeError(f"[jit.save] input_spec saves a module, got {type(m).__name__}")
        path = str(f) if os.path.splitext(str(f))[1] else f"{f}.onnx"
        _save_module(module, path, tuple(s.example() for s in specs), [s.any_size_dims() for s in specs])
        return None
    if isinstance(m, (ScriptModule, ScriptFunction)) and not example_args and not example_kwargs:
        return m.save(f)
    return _save_program(m, f, *example_args, **example_kwargs)


def to_static(function=None, input_spec=None, build_strategy=None, backend=None, full_graph=False):
    """paddle.jit.to_static: a module compiled (ug.compile) or a function jitted, as a
    ScriptModule or ScriptFunction whose example call is input_spec's (InputSpec: 1 in a dim of
    any size), so that ug.jit.save(compiled, path) writes it; also a decorator."""
    def wrap(obj):
        example = None if input_spec is None else tuple(s.example() for s in input_spec)
        if isinstance(obj, _C.nn.Module):
            return ScriptModule(obj, example, None if input_spec is None else [s.any_size_dims() for s in input_spec])
        if callable(obj):
            return ScriptFunction(obj, example)
        raise TypeError(f"[jit.to_static] expected a module or a function, got {type(obj).__name__}")
    return wrap if function is None else wrap(function)


def load(f, map_location=None):
    """torch.jit.load: the ONNX file a ScriptModule saved (or any ONNX model) as a module in eval
    mode, on the CPU (the only map_location)."""
    if map_location is not None and str(map_location) != "cpu":
        raise ValueError(f"[jit.load] only map_location='cpu' is supported, got {map_location!r}")
    path = str(f)
    if not os.path.exists(path) and os.path.exists(path + ".onnx"):  # a prefix, as paddle.jit.load takes
        path += ".onnx"
    return onnx.load(path).eval()


jit.trace, jit.script, jit.save, jit.load, jit.to_static = trace, script, save, load, to_static
jit.ScriptModule, jit.ScriptFunction = ScriptModule, ScriptFunction

__all__ = ["ScriptModule", "ScriptFunction", "trace", "script", "save", "load", "to_static"]
