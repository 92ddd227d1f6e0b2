"""DLPack: unigrad tensors read by torch, NumPy, JAX and TensorFlow without a copy, and theirs
read by unigrad, with the same values, strides and shared memory (a write through one side is
seen through the other), and clear errors for what cannot be shared."""
import gc

import numpy as np
import pytest
import torch

import unigrad as ug

DTYPES = [("float32", np.float32), ("float64", np.float64), ("float16", np.float16), ("int8", np.int8),
          ("int16", np.int16), ("int32", np.int32), ("int64", np.int64), ("uint8", np.uint8), ("bool", np.bool_),
          ("complex64", np.complex64), ("complex128", np.complex128)]


def _values(np_dtype, shape=(3, 4)):
    rng = np.random.default_rng(0)
    parts = rng.standard_normal((2, *shape)) * 50
    return (parts[0] + 1j * parts[1] if np.issubdtype(np_dtype, np.complexfloating) else parts[0]).astype(np_dtype)


@pytest.mark.parametrize("name,np_dtype", DTYPES)
def test_torch_reads_unigrad_and_unigrad_reads_torch(name, np_dtype):
    a = _values(np_dtype)
    t = ug.tensor(a)
    p = torch.from_dlpack(t)
    assert str(p.dtype) == f"torch.{name}"
    np.testing.assert_array_equal(p.numpy(), a)
    back = ug.from_dlpack(torch.tensor(a))
    assert back.dtype == getattr(ug, name)
    np.testing.assert_array_equal(back.numpy(), a)


def test_bfloat16_crosses_both_ways():
    p = torch.randn(5).to(torch.bfloat16)
    u = ug.from_dlpack(p)
    assert u.dtype == ug.bfloat16
    assert torch.equal(torch.from_dlpack(u), p)


def test_memory_is_shared_both_ways():
    u = ug.zeros(2, 3)
    torch.from_dlpack(u)[1, 2] = 5.0
    assert u[1, 2].item() == 5.0
    p = torch.zeros(4, dtype=torch.int64)
    v = ug.from_dlpack(p)
    v.fill_(3)
    assert p.tolist() == [3, 3, 3, 3]
    assert v.data_ptr() == p.data_ptr()


def test_views_keep_their_strides_and_offset():
    base = ug.arange(24.0).reshape(2, 3, 4)
    view = base.permute(2, 0, 1)[1:, :, 1:]
    p = torch.from_dlpack(view)
    assert p.stride() == view.stride()
    assert p.data_ptr() == view.data_ptr()
    np.testing.assert_array_equal(p.numpy(), view.numpy())
    src = torch.arange(30.0).reshape(5, 6).t()[1:4, ::2]
    u = ug.from_dlpack(src)
    assert u.stride() == src.stride() and u.shape == src.shape
    np.testing.assert_array_equal(u.numpy(), src.numpy())


def test_scalars_and_empty_tensors():
    assert torch.from_dlpack(ug.tensor(2.5)).item() == 2.5
    assert ug.from_dlpack(torch.tensor(7)).item() == 7
    assert tuple(ug.from_dlpack(torch.empty(0, 3)).shape) == (0, 3)
    assert torch.from_dlpack(ug.empty(2, 0)).shape == (2, 0)


def test_memory_outlives_the_side_that_made_it():
    u = ug.arange(1000.0)
    p = torch.from_dlpack(u)
    del u
    gc.collect()
    assert p.sum().item() == sum(range(1000))
    q = torch.arange(1000.0)
    v = ug.from_dlpack(q)
    del q
    gc.collect()
    assert v.sum().item() == sum(range(1000))


def test_numpy_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:]
    u = ug.from_dlpack(a)
    u.mul_(2)
    np.testing.assert_array_equal(a, 2 * np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:])
    n = np.from_dlpack(ug.arange(6).reshape(2, 3).t())
    np.testing.assert_array_equal(n, np.arange(6).reshape(2, 3).T)


def test_jax_both_ways():
    jax = pytest.importorskip("jax")
    x = jax.dlpack.from_dlpack(ug.linspace(0, 1, 5))
    np.testing.assert_allclose(np.asarray(x), np.linspace(0, 1, 5, dtype=np.float32))
    u = ug.dlpack.from_dlpack(jax.numpy.arange(4.0))
    assert u.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_tensorflow_capsules_both_ways(tf):
    x = tf.experimental.dlpack.from_dlpack(ug.utils.dlpack.to_dlpack(ug.arange(3.0)))
    assert x.numpy().tolist() == [0.0, 1.0, 2.0]
    u = ug.from_dlpack(tf.experimental.dlpack.to_dlpack(tf.constant([[1, 2], [3, 4]], tf.int32)))
    assert u.dtype == ug.int32 and u.tolist() == [[1, 2], [3, 4]]


def test_copy_true_gives_memory_of_its_own():
    u = ug.zeros(3)
    p = torch.from_dlpack(ug.from_dlpack(u.__dlpack__(copy=True)))
    p.fill_(1.0)
    assert u.tolist() == [0.0, 0.0, 0.0]


def test_a_capsule_is_consumed_once():
    capsule = ug.to_dlpack(ug.ones(2))
    ug.from_dlpack(capsule)
    with pytest.raises(TypeError, match="consumed already"):
        ug.from_dlpack(capsule)


def test_what_cannot_be_shared_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\[__dlpack__\].*requires grad.*detach"):
        torch.from_dlpack(ug.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match=r"\[from_dlpack\] unsupported DLPack dtype \(code 5, 32 bits"):
        ug.from_dlpack(torch.ones(2, dtype=torch.complex32))
    with pytest.raises(TypeError, match=r"\[from_dlpack\] expected an object with __dlpack__.*list"):
        ug.from_dlpack([1, 2])
    with pytest.raises(ValueError, match=r"\[__dlpack__\].*DLPack device"):
        ug.ones(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match=r"\[from_dlpack\] negative strides"):
        ug.from_dlpack(np.arange(4.0)[::-1])


def test_dlpack_device_and_imported_tensors_are_plain_leaves():
    assert ug.ones(1).__dlpack_device__() == (1, 0)
    u = ug.from_dlpack(torch.ones(2, requires_grad=True).detach())
    assert not u.requires_grad and u.is_leaf


def test_a_traced_tensor_cannot_leave_through_dlpack():
    with pytest.raises(Exception, match="__dlpack__"):
        ug.jit(lambda x: torch.from_dlpack(x))(ug.ones(2))
