"""Bit reinterpretation against the references: torch's Tensor.view(dtype) (a view of the same
storage, torch's layout rule and error cases), jax.lax.bitcast_convert_type (JAX's shape rule),
under ug.jit and ug.vmap, and torch.frombuffer with bfloat16."""
import numpy as np
import pytest
import torch

import unigrad as ug

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
PAIRS = [(a, b) for a in DTYPES for b in DTYPES]


def bits(t):
    """t's elements as raw unsigned integers of their width (NaN payloads and -0.0 compare as bits)."""
    flat = t.contiguous().reshape(-1)  # a 0-d tensor has no last dim to view as bytes
    raw = flat.view(torch.uint8 if isinstance(t, torch.Tensor) else ug.uint8).numpy()
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.element_size()]
    return np.ascontiguousarray(raw).view(width).reshape(tuple(t.shape))


def random_pair(dtype, shape, seed=0, bytes_01=False):
    """The same random bit pattern as a torch tensor and a unigrad tensor of dtype; bytes of 0 or 1
    only for bool, or with bytes_01 (a bool view of other bytes is undefined)."""
    item = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * item, dtype=np.uint8)
    if dtype == "bool" or bytes_01:
        raw &= 1
    t = torch.from_numpy(raw.copy()).view(getattr(torch, dtype)).reshape(shape)
    u = ug.tensor(raw.copy()).view(getattr(ug, dtype)).reshape(shape)
    return t, u


def same_layout(u, t):
    assert tuple(u.shape) == tuple(t.shape) and tuple(u.stride()) == tuple(t.stride())
    assert u.storage_offset() == t.storage_offset() and u.dtype == getattr(ug, str(t.dtype).split(".")[-1])
    np.testing.assert_array_equal(bits(u), bits(t))


def same_view_or_refused(t, u, dst):
    """u.view(dst) has the layout and bytes of torch's t.view(dst), or is refused (naming
    [view]) where torch refuses."""
    try:
        expected = t.view(getattr(torch, dst))
    except RuntimeError:
        with pytest.raises(RuntimeError, match=r"\[view\]"):
            u.view(getattr(ug, dst))
        return
    same_layout(u.view(getattr(ug, dst)), expected)


@pytest.mark.parametrize("src, dst", PAIRS)
def test_view_dtype_matches_torch(src, dst):
    t, u = random_pair(src, (3, 8), bytes_01=dst == "bool")
    # Contiguous, a slice with an offset in the first dim, and columns (the last dim keeps stride 1).
    for view_t, view_u in [(t, u), (t[1:], u[1:]), (t[:, 4:], u[:, 4:]), (t[:, :2], u[:, :2])]:
        same_view_or_refused(view_t, view_u, dst)


@pytest.mark.parametrize("make", [
    lambda m: m.arange(12, dtype=m.float32).reshape(3, 4).t(),  # last dim's stride is not 1
    lambda m: m.arange(6, dtype=m.float32),                     # fits every dtype
    lambda m: m.arange(3, dtype=m.float32),                     # last dim 3: not whole doubles
    lambda m: m.arange(5, dtype=m.float32)[1:],                 # storage offset 1: not a double's
    lambda m: m.arange(9, dtype=m.float32).reshape(3, 3)[:, :2],  # row stride 3: not whole doubles
    lambda m: m.tensor(1.0),                                    # 0-d: only same-size dtypes
    lambda m: m.ones(4, 1).expand(4, 2),                        # expanded last dim: stride 0
])
@pytest.mark.parametrize("dst", ["float64", "float16", "int32"])
def test_view_dtype_errors_as_torch(make, dst):
    same_view_or_refused(make(torch), make(ug), dst)


def test_view_dtype_error_message_names_the_rule():
    with pytest.raises(RuntimeError, match=r"\[view\] the last dim's size must divide by 2 \(got 3\) to view "
                                           r"float32 as float64"):
        ug.arange(3, dtype=ug.float32).view(ug.float64)
    with pytest.raises(RuntimeError, match=r"\[view\] a 0-d tensor"):
        ug.tensor(1.0).view(ug.float16)


def test_view_dtype_aliases_and_writes_through():
    x = ug.tensor([1.0, 2.0, 3.0])
    v = x.view(ug.int32)
    assert v.data_ptr() == x.data_ptr()
    v[1] = 0x40400000  # the bits of 3.0
    assert x.tolist() == [1.0, 3.0, 3.0]
    x.fill_(-0.0)
    assert v.tolist() == [-(2 ** 31)] * 3
    # The spellings torch accepts: a torch or NumPy dtype, dtype=.
    assert x.view(torch.int32).dtype == x.view(dtype=ug.int32).dtype == x.view(np.int32).dtype == ug.int32
    assert x.view(3).shape == (3,) and x.view(-1, 1).shape == (3, 1)


def test_view_dtype_is_not_differentiable_as_in_torch():
    for dst in ["int32", "float32", "float16"]:
        t = torch.randn(4, requires_grad=True)
        u = ug.randn(4, requires_grad=True)
        for a, b in [(t, u), (t * 2, u * 2)]:
            assert b.view(getattr(ug, dst)).requires_grad == a.view(getattr(torch, dst)).requires_grad


@pytest.mark.parametrize("src, dst", [(a, b) for a, b in PAIRS if (a == "bool") == (b == "bool")])
def test_bitcast_convert_type_matches_jax(jax64, src, dst):
    import jax.numpy as jnp

    size = lambda d: np.dtype(getattr(jnp, d)).itemsize  # noqa: E731
    ratio = size(dst) // size(src) if size(dst) > size(src) else 1
    t, u = random_pair(src, (2, 3 * ratio) if ratio == 1 else (2, 3, ratio))
    jx = jnp.asarray(bits(t)).view(getattr(jnp, src))
    expected = jax64.lax.bitcast_convert_type(jx, getattr(jnp, dst))
    out = ug.lax.bitcast_convert_type(u, getattr(ug, dst))
    assert tuple(out.shape) == expected.shape and out.dtype == getattr(ug, dst)
    np.testing.assert_array_equal(np.asarray(bits(out)).tobytes(), np.asarray(expected).tobytes())
    assert out.data_ptr() != u.data_ptr()  # a new array


def test_bitcast_convert_type_errors_as_jax(jax64):
    import jax.numpy as jnp

    for x, dst in [(np.zeros((3, 3), np.uint8), "uint16"), (np.zeros((), np.uint8), "uint16"),
                   (np.zeros(2, np.float32), "bool"), (np.zeros(2, np.bool_), "uint8")]:
        with pytest.raises((TypeError, ValueError)) as expected:
            jax64.lax.bitcast_convert_type(jnp.asarray(x), getattr(jnp, dst))
        with pytest.raises(expected.type, match=r"\[bitcast_convert_type\]"):
            ug.lax.bitcast_convert_type(ug.tensor(x), getattr(ug, dst))


def test_non_contiguous_input_is_read_in_order(jax64):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = jax64.lax.bitcast_convert_type(x.T, np.int16)
    out = ug.lax.bitcast_convert_type(ug.tensor(x).t(), ug.int16)
    np.testing.assert_array_equal(out.numpy(), np.asarray(expected))


def test_view_dtype_under_jit_and_vmap():
    x = ug.randn(3, 4)

    def f(a):
        return a.view(ug.int32) + 1, (a * 2).view(ug.float16), ug.lax.bitcast_convert_type(a, ug.uint8)

    eager, jitted = f(x), ug.jit(f)
    for a, b in zip(jitted(x), eager):
        np.testing.assert_array_equal(bits(a), bits(b))
    y = ug.randn(3, 4)  # the program run on new values
    for a, b in zip(jitted(y), f(y)):
        np.testing.assert_array_equal(bits(a), bits(b))
    for a, b in zip(ug.vmap(f)(x), eager):
        np.testing.assert_array_equal(bits(a), bits(b))
    for a, b in zip(ug.vmap(f, in_axes=1)(x), f(x.t().contiguous())):
        np.testing.assert_array_equal(bits(a), bits(b))
    with pytest.raises(RuntimeError, match=r"\[view\] a 0-d tensor"):
        ug.vmap(lambda a: a.view(ug.float16))(ug.randn(3))


def test_frombuffer_bfloat16_matches_torch():
    values = torch.tensor([1.0, -2.5, 3.0e38, float("nan")], dtype=torch.bfloat16)
    buf = bytearray(values.view(torch.uint8).numpy().tobytes())
    expected = torch.frombuffer(bytearray(buf), dtype=torch.bfloat16, count=2, offset=2)
    t = ug.frombuffer(buf, dtype=ug.bfloat16, count=2, offset=2)
    assert t.dtype == ug.bfloat16 and t.shape == (2,)
    np.testing.assert_array_equal(bits(t), bits(expected))
    t.fill_(0.5)  # it shares the buffer, as torch's
    assert torch.frombuffer(buf, dtype=torch.bfloat16).tolist()[1:3] == [0.5, 0.5]
    assert ug.frombuffer(buf, dtype=ug.bfloat16, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=r"\[frombuffer\]"):
        ug.frombuffer(bytearray(3), dtype=ug.bfloat16)
