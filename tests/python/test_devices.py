"""JAX's device functions (ug.devices, local_devices, default_backend, device_put) and
TensorFlow's tf.config queries against JAX 0.10.2 and TensorFlow on this CPU-only machine."""
import os

import numpy as np
import pytest

import unigrad as ug


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def test_device_lists_and_default_backend_match_jax(jax):
    assert ug.default_backend() == jax.default_backend() == "cpu"
    for ours, theirs in ((ug.devices(), jax.devices()), (ug.local_devices(), jax.local_devices()),
                         (ug.devices("cpu"), jax.devices("cpu"))):
        assert [d.type for d in ours] == [d.platform for d in theirs] == ["cpu"]
    assert ug.devices()[0] == "cpu"
    for backend in ("gpu", "cuda"):
        with pytest.raises(RuntimeError, match="not available"):
            ug.devices(backend)
    with pytest.raises(RuntimeError):
        jax.devices("gpu")
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        ug.devices("tpu")


def test_device_put_keeps_the_tree_and_makes_tensors(jax):
    a = ug.ones(3)
    assert ug.device_put(a) is a and ug.device_put(a, ug.devices()[0]) is a and ug.device_put(a, "cpu") is a
    ja = jax.numpy.ones(3)
    assert jax.device_put(ja) is ja  # the habit: no copy when the array is there already
    tree = {"w": np.arange(6.0, dtype=np.float32).reshape(2, 3), "b": [1, 2.5], "c": (np.int64(3),)}
    ours, theirs = ug.device_put(tree), jax.device_put(tree)
    assert ug.tree_structure(ours) == ug.tree_structure(theirs)
    for u, j, src in zip(ug.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), ug.tree_leaves(tree)):
        assert isinstance(u, ug.Tensor) and u.device == "cpu"
        np.testing.assert_array_equal(u.numpy(), np.asarray(j))
        np.testing.assert_array_equal(u.numpy(), np.asarray(src))
    src = np.ones(2)
    put = ug.device_put(src)
    src[0] = 5  # copied, as JAX copies
    assert put.numpy().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match=r"\[to\] cannot move a tensor to cuda:0"):
        ug.device_put(a, "cuda")


def test_device_get_gives_numpy_arrays_as_jax(jax):
    w = ug.randn(2, 3, requires_grad=True)
    tree = {"w": w, "step": 3, "pair": (ug.tensor([1, 2]), "tag")}
    ours = ug.device_get(tree)
    theirs = jax.device_get({"w": jax.numpy.asarray(w.detach().numpy()), "step": 3,
                             "pair": (jax.numpy.asarray([1, 2]), "tag")})
    assert ug.tree_structure(ours) == ug.tree_structure(theirs)
    for u, j in zip(ug.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert type(u) is type(j) or (isinstance(u, np.ndarray) and isinstance(j, np.ndarray))
        np.testing.assert_array_equal(np.asarray(u), np.asarray(j))
    assert ours["w"].dtype == np.float32 and ours["pair"][0].dtype == np.int64  # JAX's would be int32


def test_tf_config_lists_the_devices_tensorflow_lists(tf):
    for kind in (None, "CPU", "GPU"):
        assert [tuple(d) for d in ug.config.list_physical_devices(kind)] == \
            [(d.name, d.device_type) for d in tf.config.list_physical_devices(kind)]
        assert [tuple(d) for d in ug.config.list_logical_devices(kind)] == \
            [(d.name, d.device_type) for d in tf.config.list_logical_devices(kind)]
    assert ug.config.experimental.list_physical_devices("GPU") == []
    with pytest.raises(ValueError, match="unknown device type 'TPU'"):
        ug.config.list_physical_devices("TPU")


def test_memory_growth_follows_tensorflow_on_a_cpu(tf):
    cpu = ug.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices("CPU")[0], True)
    with pytest.raises(ValueError, match="GPU devices"):
        ug.config.experimental.set_memory_growth(cpu, True)
    gpu = ug.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    ug.config.experimental.set_memory_growth(gpu, True)  # what the allocator does anyway
    assert ug.config.experimental.get_memory_growth(gpu)
    with pytest.raises(ValueError, match="on demand"):
        ug.config.experimental.set_memory_growth(gpu, False)
    ug.memory.reset_peak_memory_stats()
    x = ug.empty(1 << 20)
    info = ug.config.experimental.get_memory_info("CPU:0")
    assert info["peak"] >= info["current"] >= x.numel() * 4


def test_device_scopes_and_names_as_torch_tensorflow_and_jax(tf, jax):
    """`with ug.device(...)` is torch's `with torch.device(...)`, TensorFlow's `with tf.device(...)`
    (whose names ug.device reads) and, as ug.default_device, JAX's: new tensors made inside are on
    the CPU, as in the three frameworks on this CPU-only machine; a device that is not there
    raises when entered."""
    import torch

    for name in ("/CPU:0", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0", "CPU:0", "cpu", "cpu:0"):
        assert ug.device(name) == "cpu", name
        assert tf.DeviceSpec.from_string(name).device_type in ("CPU", None) or name.startswith("cpu")
    assert ug.device("/GPU:1") == ug.device("/device:gpu:1") == ug.device("cuda:1")
    with ug.device("/CPU:0"):
        ours = ug.ones(2)
    with tf.device("/CPU:0"):
        theirs = tf.ones(2)
    assert ours.device == "cpu" and theirs.device.endswith("CPU:0")
    with ug.device("cpu"):
        ours = ug.zeros(3)
    with torch.device("cpu"):
        assert torch.zeros(3).device.type == "cpu"
    assert ours.device == "cpu"
    with ug.default_device(ug.devices("cpu")[0]), jax.default_device(jax.devices("cpu")[0]):
        assert ug.ones(1).device == "cpu" and list(jax.numpy.ones(1).devices())[0].platform == "cpu"
    with ug.default_device(None):
        assert ug.ones(1).device == "cpu"
    with pytest.raises(RuntimeError, match=r"\[device\] cannot place new tensors on cuda:0"):
        with ug.device("/GPU:0"):
            pass
    with pytest.raises(ValueError, match=r"unknown device '/TPU:0'"):
        ug.device("/TPU:0")


def test_dtypes_and_devices_compare_with_anything_as_torchs():
    """`dtype == None` raised TypeError (and so did jit returning a dtype beside a tensor)."""
    import torch
    for ours, theirs in [(ug.float32, torch.float32), (ug.device("cpu"), torch.device("cpu"))]:
        for other in (None, 3, "x", object()):
            assert (ours == other) == (theirs == other) and (ours != other) == (theirs != other)
        assert ours in [None, ours] and ours not in [None]
    dtype, y = ug.jit(lambda x: (x.dtype, x + 1))(ug.ones(2))
    assert dtype == ug.float32 and y.tolist() == [2.0, 2.0]
