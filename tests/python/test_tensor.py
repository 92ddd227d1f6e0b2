"""Tensor creation, attributes, dtypes, conversion, NumPy interop, devices, printing and
memory statistics, against PyTorch where it defines the answer."""
import re
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, assert_same, check


@pytest.mark.parametrize("data", [[1, 2, 3], [[1.5, 2.0], [3.0, 4.0]], [True, False], 3, 2.5, True, [],
                                  [[1, 2.5], [3, 4]], [[True, 2]], [[]]])
def test_tensor_from_python(data):
    check(lambda m: m.tensor(data))


def test_tensor_ragged_raises():
    check(lambda m: m.tensor([[1, 2], [3]]))
    check(lambda m: m.tensor([1, [2, 3]]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"])
def test_tensor_dtype_argument(dtype):
    check(lambda m: m.tensor([[0, 1.7], [-2.2, 3]], dtype=getattr(m, dtype)) if dtype != "uint8"
          else m.tensor([[0, 1.7], [2.2, 3]], dtype=getattr(m, dtype)))


def test_factories():
    check(lambda m: m.zeros(2, 3))
    check(lambda m: m.ones((2, 3), dtype=m.int32))
    check(lambda m: m.full((2, 2), 7))
    check(lambda m: m.full((2, 2), 7.5))
    check(lambda m: m.full((2,), True))
    check(lambda m: m.empty(3, 0).shape)
    check(lambda m: m.zeros(()))
    check(lambda m: m.arange(5))
    check(lambda m: m.arange(1, 10, 3))
    check(lambda m: m.arange(0, 1, 0.1))
    check(lambda m: m.arange(10, 0, -2))
    check(lambda m: m.arange(0.5, 3))
    check(lambda m: m.linspace(0, 1, 5))
    check(lambda m: m.linspace(-3, 7, 11, dtype=m.float64))
    check(lambda m: m.linspace(0, 1, 1))
    check(lambda m: m.eye(3))
    check(lambda m: m.eye(2, 4, dtype=m.int64))
    check(lambda m, x: m.zeros_like(x), arr((2, 3), "int32"))
    check(lambda m, x: m.ones_like(x, dtype=m.float64), arr((2, 3)))
    check(lambda m, x: m.full_like(x, 4), arr((2, 3)))
    check(lambda m: m.zeros(-1))
    check(lambda m: m.arange(0, 5, 0))


def test_attributes():
    for m in (torch, ug):
        x = m.zeros(2, 3, 4)
        assert x.shape == (2, 3, 4)
        assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24
        assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
        assert x.stride() == (12, 4, 1)
        assert x.element_size() == 4
        assert str(x.device) == "cpu"
        assert x.is_contiguous() and not x.t().is_contiguous() if x.ndim == 2 else True


def test_item_tolist():
    check(lambda m: m.tensor(3.5).item())
    check(lambda m: m.tensor([7]).item())
    check(lambda m: m.tensor([[1, 2], [3, 4]]).tolist())
    check(lambda m: m.tensor([1, 2]).item())
    check(lambda m: float(m.tensor([2.5])) + int(m.tensor(3)))
    check(lambda m: bool(m.tensor([0.0])))


CAST_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "bool"]


@pytest.mark.parametrize("src", CAST_DTYPES)
@pytest.mark.parametrize("dst", CAST_DTYPES)
def test_casts(src, dst):
    check(lambda m, x: x.to(getattr(m, dst)), arr((17,), src, low=0, high=100))


def test_half_rounding():
    values = np.array([1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 65504, 65520, 1e-8, 6e-8, -2.5e-5, 70000, np.nan],
                      dtype=np.float64)
    check(lambda m, x: x.to(m.float16), values)
    check(lambda m, x: x.to(m.bfloat16), values)
    check(lambda m, x: x.float().to(m.float16), values)


def test_conversion_methods():
    check(lambda m, x: (x.float(), x.double(), x.half(), x.int(), x.long(), x.bool(), x.byte()), arr((3,), low=0, high=9))
    check(lambda m, x: x.to(dtype=m.float64), arr((3,)))


def test_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ug.from_numpy(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    back = t.numpy()
    back[1, 2] = -1
    assert a[1, 2] == -1
    assert np.shares_memory(a, back)
    strided = ug.from_numpy(a[:, ::2])
    assert strided.shape == (2, 2) and strided.stride() == (3, 2)
    np.testing.assert_array_equal(np.asarray(strided), a[:, ::2])
    del a, back
    assert t.sum().item() == t.numpy().sum()


def test_numpy_roundtrip_dtypes():
    for dt in ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "bool", "complex64", "complex128"]:
        a = (np.arange(5) % 2).astype(dt)
        t = ug.from_numpy(a)
        assert repr(t.dtype) == f"unigrad.{dt}"
        np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(TypeError, match="from_numpy.*str"):
        ug.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError):
        ug.zeros(2, dtype=ug.bfloat16).numpy()


def test_tensor_from_numpy_copies():
    a = np.ones(3, dtype=np.float64)
    t = ug.tensor(a)
    a[0] = 5
    assert t[0].item() == 1.0 and t.dtype == ug.float64


def test_devices():
    assert ug.device("cpu") == ug.device("cpu")
    assert ug.zeros(2).device == ug.device("cpu")
    assert ug.zeros(2, device="cpu").to("cpu").device.type == "cpu"
    assert ug.cuda.is_available() is False and ug.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="not available"):
        ug.zeros(2).to("cuda")
    with pytest.raises(RuntimeError):
        ug.zeros(2, device="cuda")
    with pytest.raises(ValueError):
        ug.device("tpu")


def test_printing_like_torch():
    for make in (lambda m: m.tensor([1.0, 2.0, 3.0]), lambda m: m.tensor([[1.5, -2.25], [3.0, 4.0]]),
                 lambda m: m.tensor([1, 2, 3]), lambda m: m.tensor([True, False]), lambda m: m.tensor(3.0),
                 lambda m: m.tensor([1e-5, 1.0, 1e5]), lambda m: m.zeros(2, 2, 2)):
        assert repr(make(ug)) == repr(make(torch)), (repr(make(ug)), repr(make(torch)))
    assert repr(ug.tensor([1.0], dtype=ug.float64)) == "tensor([1.], dtype=ug.float64)"
    big = repr(ug.zeros(100, 100))
    assert "..." in big and "shape=(100, 100)" in big


def test_printing_shows_autograd_state_like_torch():
    for m in (ug, torch):
        leaf = m.tensor([[1.5, -2.0]], requires_grad=True)
        assert repr(leaf) == "tensor([[ 1.5000, -2.0000]], requires_grad=True)"
        assert repr(leaf.detach()) == "tensor([[ 1.5000, -2.0000]])"
        with m.no_grad():
            assert repr(leaf * 2) == "tensor([[ 3., -4.]])"
        assert re.fullmatch(r"tensor\(\[-1\.\], grad_fn=<\w+Backward\d*>\)", repr((leaf * 2).sum(1)))
    assert repr((ug.tensor([1.0], requires_grad=True) * 2).grad_fn) in repr(ug.tensor([1.0], requires_grad=True) * 2)
    x = ug.ones(2)
    ug.jit(lambda t: t + 1, donate_argnums=0)(x)
    assert x.is_deleted() and repr(x) == "tensor(<deleted>)"


def test_memory_statistics():
    ug.memory.reset_peak()
    before = ug.memory.allocated()
    x = ug.empty(1024, 1024)
    assert ug.memory.allocated() >= before + 4 * 1024 * 1024
    peak = ug.memory.max_allocated()
    del x
    assert ug.memory.allocated() == before
    assert ug.memory.max_allocated() == peak
    ug.memory.reset_peak()
    assert ug.memory.max_allocated() == before
    assert "Allocated memory" in ug.memory.summary()


def test_threads_setting():
    n = ug.get_num_threads()
    ug.set_num_threads(1)
    assert ug.get_num_threads() == 1
    ug.set_num_threads(n)
    with pytest.raises(ValueError):
        ug.set_num_threads(0)


def test_dtype_objects():
    assert ug.float32 == ug.float and ug.float64 == ug.double and ug.int64 == ug.long
    assert ug.float32.is_floating_point and not ug.int32.is_floating_point
    assert ug.float16.itemsize == 2
    assert ug.promote_types(ug.int32, ug.float16) == ug.float16
    assert ug.tensor([1], dtype="float64").dtype == ug.float64
    assert ug.tensor([1], dtype=np.float32).dtype == ug.float32
    assert_same(torch.tensor([1.0]), ug.tensor([1.0]))


@pytest.mark.parametrize("shape", [(2**40, 2**40), (2**62, 4), (3, 2**40, 2**40, 0, 2**40)])
def test_shapes_whose_size_overflows_int64_are_refused(shape):
    with pytest.raises(RuntimeError):
        torch.empty(*shape)
    with pytest.raises(ValueError, match="overflow|more elements"):
        ug.empty(*shape)


def test_empty_tensors_with_huge_dims_are_fine():
    want = torch.empty(2**40, 2**20, 0)
    got = ug.empty(2**40, 2**20, 0)
    assert tuple(got.shape) == tuple(want.shape) and got.numel() == 0
    assert got.stride() == want.stride()
