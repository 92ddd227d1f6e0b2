"""int8 and int16 as full dtypes and uint16, uint32, uint64 as PyTorch's shell dtypes, against
torch 2.13: promotion over every pair, arithmetic, comparisons, reductions and bit ops on the
small integers, what the shells accept and refuse, and round trips through numpy, npy and
safetensors."""
import numpy as np
import pytest
import torch

import unigrad as ug

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64"]
SHELLS = ["uint16", "uint32", "uint64"]


def promote_torch(a, b):
    try:
        return str(torch.promote_types(getattr(torch, a), getattr(torch, b))).removeprefix("torch.")
    except RuntimeError:
        return None


@pytest.mark.parametrize("a", NAMES)
def test_promote_types_matches_torch_over_every_pair(a):
    for b in NAMES:
        expected = promote_torch(a, b)
        if expected is None:
            with pytest.raises(TypeError, match="promotion for uint16, uint32, uint64"):
                ug.promote_types(getattr(ug, a), getattr(ug, b))
        else:
            assert ug.promote_types(getattr(ug, a), getattr(ug, b)) == getattr(ug, expected), (a, b)


def test_dtype_objects_names_and_sizes():
    for name in NAMES:
        d = getattr(ug, name)
        assert repr(d) == "unigrad." + name
        assert d.itemsize == getattr(torch, name).itemsize
        assert d.is_floating_point == getattr(torch, name).is_floating_point
    assert ug.short == ug.int16


SMALL = {"int8": np.int8, "int16": np.int16}


def pair(dtype, seed=0):
    r = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = r.integers(info.min, info.max, (3, 5), endpoint=True).astype(dtype)
    b = r.integers(info.min, info.max, (5,), endpoint=True).astype(dtype)
    return a, b


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge", "bitwise_and",
                                "bitwise_or", "bitwise_xor"])
def test_small_integer_binary_ops_match_torch_with_wraparound(name, op):
    a, b = pair(SMALL[name])
    got = getattr(ug, op)(ug.tensor(a), ug.tensor(b))
    want = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b))
    assert got.dtype == getattr(ug, str(want.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", SMALL)
def test_small_integer_division_remainder_and_mixed_promotion_match_torch(name):
    a, b = pair(SMALL[name], seed=1)
    b = np.where(b == 0, 1, b).astype(b.dtype)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ua, ub = ug.tensor(a), ug.tensor(b)
    np.testing.assert_array_equal((ua // ub).numpy(), (ta // tb).numpy())
    np.testing.assert_array_equal((ua % ub).numpy(), (ta % tb).numpy())
    np.testing.assert_allclose((ua / ub).numpy(), (ta / tb).numpy(), rtol=1e-6)
    u8 = np.arange(15, dtype=np.uint8).reshape(3, 5) * 17
    mixed = ug.tensor(u8) + ua
    assert mixed.dtype == getattr(ug, str((torch.from_numpy(u8) + ta).dtype).removeprefix("torch."))
    np.testing.assert_array_equal(mixed.numpy(), (torch.from_numpy(u8) + ta).numpy())
    np.testing.assert_array_equal((ua * 3).numpy(), (ta * 3).numpy())
    assert (ua * 2.5).dtype == ug.float32


@pytest.mark.parametrize("name", SMALL)
def test_small_integer_unary_and_reductions_match_torch(name):
    a, _ = pair(SMALL[name], seed=2)
    ua, ta = ug.tensor(a), torch.from_numpy(a)
    for f in ("neg", "abs", "sign", "bitwise_not"):
        np.testing.assert_array_equal(getattr(ua, f)().numpy(), getattr(ta, f)().numpy())
    np.testing.assert_array_equal((~ua).numpy(), (~ta).numpy())
    for f in ("sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum"):
        got, want = getattr(ua, f)(1), getattr(ta, f)(1)
        assert str(got.dtype).removeprefix("unigrad.") == str(want.dtype).removeprefix("torch."), f
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(ua.sum().numpy(), ta.sum().numpy())
    np.testing.assert_array_equal(ua.sort(1)[0].numpy(), ta.sort(1)[0].numpy())
    np.testing.assert_array_equal((ua.t() @ ua).numpy(), (ta.t() @ ta).numpy())
    np.testing.assert_allclose(ua.float().mean().item(), ta.float().mean().item(), rtol=1e-6)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_shifts_match_torch_for_counts_in_and_out_of_range(name):
    info = np.iinfo(name)
    a = np.array([info.min, -5 if info.min < 0 else 5, -1 if info.min < 0 else 1, 0, 1, 7, info.max] * 3,
                 dtype=name)
    counts = np.array([-1 if info.min < 0 else 2, 0, 1, 3, info.bits - 1, info.bits, info.bits + 3] * 3, dtype=name)
    for op in ("bitwise_left_shift", "bitwise_right_shift"):
        got = getattr(ug, op)(ug.tensor(a), ug.tensor(counts))
        want = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(counts))
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=op)
    np.testing.assert_array_equal((ug.tensor(a) << 2).numpy(), (torch.from_numpy(a) << 2).numpy())
    np.testing.assert_array_equal((ug.tensor(a) >> 2).numpy(), (torch.from_numpy(a) >> 2).numpy())


def test_bitwise_ops_refuse_floats_and_shifts_refuse_bool():
    with pytest.raises(TypeError, match="bitwise_not"):
        ug.bitwise_not(ug.ones(3))
    with pytest.raises(TypeError, match="bitwise_left_shift"):
        ug.bitwise_left_shift(ug.tensor([True]), ug.tensor([True]))
    with pytest.raises(TypeError, match="bitwise_right_shift"):
        ug.ones(2) >> 1
    np.testing.assert_array_equal(ug.bitwise_not(ug.tensor([True, False])).numpy(), [False, True])


@pytest.mark.parametrize("name", SHELLS)
def test_shell_dtypes_store_cast_and_refuse_arithmetic_as_torch(name):
    values = np.array([0, 1, 7, np.iinfo(name).max], dtype=name)
    t = ug.tensor(values)
    assert t.dtype == getattr(ug, name)
    np.testing.assert_array_equal(t.numpy(), values)
    assert t.numpy().dtype == np.dtype(name)
    np.testing.assert_array_equal(t.to(ug.float64).numpy(), values.astype(np.float64))
    np.testing.assert_array_equal(ug.tensor([1, 2, 3]).to(getattr(ug, name)).numpy(), np.array([1, 2, 3], name))
    np.testing.assert_array_equal(ug.zeros(2, dtype=getattr(ug, name)).numpy(), np.zeros(2, name))
    np.testing.assert_array_equal(ug.full((2,), 5, dtype=getattr(ug, name)).numpy(), np.full(2, 5, name))
    np.testing.assert_array_equal(ug.cat([t, t]).numpy(), np.concatenate([values, values]))
    np.testing.assert_array_equal(t.reshape(2, 2).t().contiguous().numpy(), values.reshape(2, 2).T)
    assert "dtype=ug." + name in repr(t)
    # torch refuses these on its shell dtypes too
    for f in (lambda x: x + x, lambda x: x - x, lambda x: x < x, lambda x: x.max(), lambda x: -x):
        with pytest.raises((TypeError, RuntimeError)):
            f(t)
        with pytest.raises((TypeError, RuntimeError)):
            f(torch.from_numpy(values.astype(np.int64)).to(getattr(torch, name)))
    with pytest.raises(TypeError, match="promotion"):
        t.to(ug.uint16 if name != "uint16" else ug.uint32) + ug.tensor([1, 2, 3, 4], dtype=ug.int32)
    assert (t + 0.5).dtype == ug.float32  # a float wins, as torch.promote_types says


@pytest.mark.parametrize("name", ["int8", "int16", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("order", ["<", ">"])
def test_npy_files_of_the_new_dtypes_read_as_numpy_wrote_them(name, order, tmp_path):
    info = np.iinfo(name)
    values = np.array([[info.min, 0, 1], [info.max, 3, info.max - 1]], dtype=np.dtype(name).newbyteorder(order))
    np.save(tmp_path / "a.npy", values)
    x = ug.data.read_npy(str(tmp_path / "a.npy"))
    assert x.dtype == getattr(ug, name)
    np.testing.assert_array_equal(x.numpy(), values.astype(name))


def test_uint64_item_and_tolist_past_int64_as_torch():
    values = np.array([2**64 - 1, 2**63, 5], np.uint64)
    t, tt = ug.tensor(values), torch.from_numpy(values)
    assert t.tolist() == tt.tolist()
    assert t[1].item() == tt[1].item() == 2**63
    assert "dtype=ug.uint64" in repr(t) and "-" not in repr(t)
