"""A Tensor's arithmetic operators return NotImplemented for operand types they do not take, as
torch's do: Python then asks the other operand's reflected method (a user class's __radd__)
and otherwise raises its standard TypeError ("unsupported operand type(s) for +")."""
import operator

import numpy as np
import pytest
import torch

import unigrad as ug

BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor", "lshift",
          "rshift"]
SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
          "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}


def _operands(lib, name):
    # The bitwise and shift operators take integers.
    return lib.ones(2, dtype=lib.int64) if name in ("and_", "or_", "xor", "lshift", "rshift") else lib.ones(2)


def _error(fn):
    with pytest.raises(TypeError) as e:
        fn()
    return str(e.value)


@pytest.mark.parametrize("other", ["a", object(), None, [1, 2]], ids=["str", "object", "None", "list"])
@pytest.mark.parametrize("name", BINARY)
def test_unsupported_operand_raises_python_type_error(name, other):
    op = getattr(operator, name)
    want = _error(lambda: op(_operands(torch, name), other))
    got = _error(lambda: op(_operands(ug, name), other))
    if name == "mul" and isinstance(other, (str, list)):
        # Python then tries the sequence's repeat, which asks the tensor for an int (__index__).
        assert "converted to an index" in got and "converted to an index" in want
    else:
        assert got == want  # Python's own message
        assert f"unsupported operand type(s) for {SYMBOL[name]}" in got


@pytest.mark.parametrize("name", ["iadd", "isub", "imul", "itruediv", "ipow", "imatmul"])
def test_unsupported_in_place_operand_raises_python_type_error(name):
    op = getattr(operator, name)
    want = _error(lambda: op(torch.ones(2), "a"))
    got = _error(lambda: op(ug.ones(2), "a"))
    assert got == want and "unsupported operand type(s)" in got


def test_reflected_operand_of_another_type_gets_its_turn():
    class Other:
        def __radd__(self, o):
            return ("radd", type(o).__name__)

        def __rsub__(self, o):
            return ("rsub", type(o).__name__)

        def __rmul__(self, o):
            return ("rmul", type(o).__name__)

        def __rtruediv__(self, o):
            return ("rtruediv", type(o).__name__)

        def __rpow__(self, o):
            return ("rpow", type(o).__name__)

        def __rmatmul__(self, o):
            return ("rmatmul", type(o).__name__)

    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.matmul):
        assert op(ug.ones(2), Other()) == op(torch.ones(2), Other())
    t = ug.ones(2)
    t += Other()  # __iadd__ declines too, so Python falls back on Other.__radd__
    assert t == ("radd", "Tensor")


def test_supported_operands_still_work():
    t = ug.tensor([1.0, 2.0])
    np.testing.assert_allclose((t + 1).numpy(), [2, 3])
    np.testing.assert_allclose((2 * t).numpy(), [2, 4])
    np.testing.assert_allclose((t * True).numpy(), [1, 2])
    np.testing.assert_allclose((t / np.float32(2)).numpy(), [0.5, 1])
    np.testing.assert_allclose((t ** np.int64(2)).numpy(), [1, 4])
    np.testing.assert_allclose((t + t).numpy(), [2, 4])
    assert float(t @ t) == 5
    t += 1
    np.testing.assert_allclose(t.numpy(), [2, 3])
    with pytest.raises(RuntimeError):  # an error inside a supported operation is not swallowed
        ug.ones(2) + ug.ones(3)


@pytest.mark.parametrize("array", [np.ones(2), np.arange(2, dtype=np.float32), np.array([1, 2], np.int32)],
                         ids=["float64", "float32", "int32"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "lt", "eq"])
def test_numpy_array_operand_is_a_tensor_of_its_dtype(name, array):
    # torch: t + np.ones(2) is t + torch.from_numpy(np.ones(2)), a float64 tensor (its comparisons
    # refuse arrays); unigrad gives that tensor on either side (NumPy defers to the tensor's
    # reflected operator through __array_priority__).
    op = getattr(operator, name)
    theirs = op(torch.tensor([1.0, 2.0]), torch.from_numpy(array))
    for ours in (op(ug.tensor([1.0, 2.0]), array), op(array, ug.tensor([1.0, 2.0])) if name in ("add", "mul") else None):
        if ours is None:
            continue
        assert isinstance(ours, ug.Tensor)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_numpy_scalar_on_the_left_gives_a_tensor():
    for scalar in (np.float64(2), np.int64(2), np.float32(2)):
        ours, theirs = scalar * ug.tensor([1.0, 2.0]), scalar * torch.tensor([1.0, 2.0])
        assert isinstance(ours, ug.Tensor) and ours.dtype == ug.float32 and theirs.dtype == torch.float32
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("other", [1, ug.ones(2), np.ones(2, np.float32)], ids=["number", "tensor", "array"])
def test_in_place_operator_keeps_the_python_object(other):
    t = ug.ones(2)
    alias = t
    t += other
    t *= 3
    assert t is alias  # as torch: x += y rebinds x to the same object
    np.testing.assert_array_equal(alias.numpy(), [6, 6])
