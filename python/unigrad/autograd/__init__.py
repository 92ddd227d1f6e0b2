"""ug.autograd: PyTorch's imperative differentiation on unigrad's one engine.

backward/grad walk the graph the ops recorded; no_grad/enable_grad switch recording;
detect_anomaly makes backward name the op whose derivative produced NaN or Inf; Function
(ug.autograd.function) defines an op's derivative by hand; ug.autograd.graph's
saved_tensors_hooks decide how the tensors kept for backward are stored.
"""
import contextlib

from .. import _C
from . import graph, profiler  # noqa: F401
from .function import Function, FunctionCtx, PyLayer, once_differentiable  # noqa: F401

_ag = _C._autograd


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of outputs w.r.t. inputs, returned as a tuple; .grad is left alone."""
    return _ag.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates d(tensors)/d(leaf) into every leaf's .grad (into the .grad of `inputs`
    alone, when given)."""
    _ag.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


class _GradModeContext(contextlib.ContextDecorator):
    """Sets grad mode inside a `with` block or a decorated function, then restores it."""

    def __init__(self, enabled):
        self._enabled = enabled

    def __enter__(self):
        self._prev = _ag.grad_mode_state()
        _ag.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _ag.restore_grad_mode(self._prev)
        return False


class no_grad(_GradModeContext):
    """`with ug.no_grad():` or `@ug.no_grad()`: ops record nothing."""

    def __init__(self):
        super().__init__(False)


class enable_grad(_GradModeContext):
    """Recording on, even inside no_grad."""

    def __init__(self):
        super().__init__(True)


class inference_mode(_GradModeContext):
    """torch.inference_mode: `with ug.inference_mode():` or `@ug.inference_mode()` records
    nothing, as no_grad, and the tensors allocated inside are inference tensors
    (Tensor.is_inference()). mode=False, as torch's: recording on, tensors ordinary. Unlike
    torch, unigrad puts no limits on using inference tensors later."""

    def __init__(self, mode=True):
        super().__init__(not mode)
        self._mode = bool(mode)

    def __enter__(self):
        self._prev_inference = _ag.set_inference_mode(self._mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _ag.set_inference_mode(self._prev_inference)
        return super().__exit__(*exc)


def is_inference_mode_enabled():
    """Whether inference mode is on in this thread (torch.is_inference_mode_enabled)."""
    return _ag.is_inference_mode_enabled()


class set_grad_enabled(_GradModeContext):
    """Recording on or off; as a call it takes effect at once, as a `with` it is scoped."""

    def __init__(self, mode):
        super().__init__(bool(mode))
        self._prev = _ag.grad_mode_state()
        _ag.set_grad_enabled(bool(mode))

    def __enter__(self):
        return self


def is_grad_enabled():
    return _ag.is_grad_enabled()


def set_detect_anomaly(mode):
    _ag.set_anomaly_enabled(bool(mode))


def is_anomaly_enabled():
    return _ag.is_anomaly_enabled()


class detect_anomaly(contextlib.ContextDecorator):
    """Inside it, a NaN or Inf produced in backward raises, naming the op."""

    def __enter__(self):
        self._prev = _ag.is_anomaly_enabled()
        _ag.set_anomaly_enabled(True)
        return self

    def __exit__(self, *exc):
        _ag.set_anomaly_enabled(self._prev)
        return False




def _user_stack():
    """The caller's frames outside unigrad, for anomaly mode's 'the op ran forward at'."""
    import os
    import traceback
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package, not autograd/
    frames = [f for f in traceback.extract_stack()[:-1] if not os.path.abspath(f.filename).startswith(here)]
    return "".join(traceback.format_list(frames[-3:]))


def _user_frame():
    """The innermost frame outside unigrad, formatted as a traceback line: where a compiled
    program's op was traced, which its checks name at run time."""
    import linecache
    import os
    import sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package, not autograd/
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
    if frame is None:
        return ""
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    return f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n' + (f"    {line}\n" if line else "")


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compares func's derivative rules with central finite differences (float64 inputs)."""
    return _check(func, inputs, eps, atol, rtol, raise_exception, False)


def gradgradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """gradcheck of the first derivative: checks second derivatives."""
    return _check(func, inputs, eps, atol, rtol, raise_exception, True)


def _check(func, inputs, eps, atol, rtol, raise_exception, second_order):
    inputs = (inputs,) if isinstance(inputs, _C.Tensor) else tuple(inputs)

    def flat(xs):
        out = func(*xs)
        return list(out) if isinstance(out, (tuple, list)) else [out]
    return _ag.gradcheck(flat, list(inputs), eps, atol, rtol, raise_exception, second_order)


from . import forward_ad, functional  # noqa: E402,F401  (torch.autograd's submodules; they use grad above)
