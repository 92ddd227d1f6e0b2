"""One helper to check unigrad against PyTorch: run the same function on both frameworks
with the same inputs and compare results (shape, dtype, values within a tolerance chosen
by dtype) or the exception raised. Adding an op's test is one line:

    check(lambda m, x: m.exp(x), arr((3, 4)))
"""
import numpy as np
import torch

import unigrad as ug

TOLERANCES = {  # (rtol, atol) by result dtype
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}


class Arg:
    """An input given to both frameworks: a numpy array converted to `dtype`, optionally
    passed through `view` (e.g. a transpose) so non-contiguous layouts are exercised."""

    def __init__(self, array, dtype=None, view=None):
        self.array = np.asarray(array)
        self.dtype = dtype
        self.view = view

    def make(self, m):
        t = m.tensor(self.array)
        if self.dtype is not None:
            t = t.to(getattr(m, self.dtype))
        return self.view(t) if self.view else t


def arr(shape, dtype="float32", low=-3.0, high=3.0, seed=0, view=None):
    """A random Arg of this shape; ints drawn from [low, high), floats uniform."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
        return Arg(a, None, view)
    if dtype in ("int32", "int64", "uint8"):
        return Arg(rng.integers(int(low), int(high), size=shape).astype(dtype), None, view)
    a = rng.uniform(low, high, size=shape)
    if dtype in ("float16", "bfloat16"):
        return Arg(a.astype(np.float32), dtype, view)
    return Arg(a.astype(dtype), None, view)


def _convert(m, value):
    if isinstance(value, Arg):
        return value.make(m)
    if isinstance(value, np.ndarray):
        return m.tensor(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Arg) for v in value):
        return type(value)(_convert(m, v) for v in value)
    return value


def _to_numpy(x):
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bfloat16:
            return x.float().numpy(), "bfloat16"
        return x.detach().numpy(), str(x.dtype).replace("torch.", "")
    if isinstance(x, ug.Tensor):
        name = repr(x.dtype).replace("unigrad.", "")
        if name == "bfloat16":
            return x.float().numpy(), name
        return x.numpy(), name
    return x, None


def assert_same(expected, actual, rtol=None, atol=None, path="result"):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{path}: expected a sequence, got {type(actual)}"
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, rtol, atol, f"{path}[{i}]")
        return
    e, edt = _to_numpy(expected)
    a, adt = _to_numpy(actual)
    if edt is None:
        assert a == e or (isinstance(e, float) and np.isclose(a, e)), f"{path}: {a} != {e}"
        return
    assert adt == edt, f"{path}: dtype {adt} != torch's {edt}"
    assert a.shape == e.shape, f"{path}: shape {a.shape} != torch's {e.shape}"
    r, t = TOLERANCES.get(edt, (0, 0))
    r, t = rtol if rtol is not None else r, atol if atol is not None else t
    if edt == "bool" or r == 0:
        np.testing.assert_array_equal(a, e, err_msg=path)
    else:
        np.testing.assert_allclose(a, e, rtol=r, atol=t, equal_nan=True, err_msg=path)


def check(fn, *args, rtol=None, atol=None):
    """Runs fn(torch, *inputs) and fn(ug, *inputs) and compares; when torch raises, unigrad
    must raise an exception of the same class."""
    try:
        expected = fn(torch, *[_convert(torch, a) for a in args])
    except Exception as exc:  # torch rejects the input: so must we, with the same class
        expected_exc = exc
    else:
        expected_exc = None
    if expected_exc is not None:
        kind = type(expected_exc)
        if kind in (ZeroDivisionError, NotImplementedError):  # torch's subtypes of a RuntimeError
            kind = RuntimeError
        try:
            fn(ug, *[_convert(ug, a) for a in args])
        except Exception as exc:  # noqa: BLE001
            assert isinstance(exc, kind), f"torch raised {type(expected_exc).__name__}, unigrad {type(exc).__name__}: {exc}"
            return
        raise AssertionError(f"torch raised {type(expected_exc).__name__}({expected_exc}) but unigrad did not")
    actual = fn(ug, *[_convert(ug, a) for a in args])
    assert_same(expected, actual, rtol, atol)
