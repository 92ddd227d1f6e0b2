"""torch's top-level names unigrad lacked: window functions, result_type / can_cast, frombuffer /
asarray, the process-wide switches, and the functional ops torch also exposes at its top level;
each against torch 2.13."""
import array

import numpy as np
import pytest
import torch

import unigrad as ug

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 64, 257])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, length, periodic):
    want = getattr(torch, name)(length, periodic, dtype=torch.float64).numpy()
    got = getattr(ug, name)(length, periodic, dtype=ug.float64)
    assert got.dtype == ug.float64 and tuple(got.shape) == (length,)
    # A few cosines (or a Bessel series) of float64 arguments: a few ulp of values <= 1.
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-13)
    got32 = getattr(ug, name)(length, periodic)  # float32 by default, rounded from float64
    np.testing.assert_allclose(got32.numpy(), want, rtol=0, atol=2e-7)
    assert got32.dtype == ug.float32


def test_window_parameters_and_errors():
    np.testing.assert_allclose(ug.hamming_window(16, False, alpha=0.6, beta=0.3, dtype=ug.float64).numpy(),
                               torch.hamming_window(16, False, alpha=0.6, beta=0.3, dtype=torch.float64).numpy(),
                               atol=1e-13)
    np.testing.assert_allclose(ug.kaiser_window(33, beta=5.0, dtype=ug.float64).numpy(),
                               torch.kaiser_window(33, True, 5.0, dtype=torch.float64).numpy(), atol=1e-13)
    assert ug.hann_window(8, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match=r"\[hann_window\] expected a floating dtype"):
        ug.hann_window(8, dtype=ug.int64)
    with pytest.raises(ValueError, match=r"\[kaiser_window\] window_length must be non-negative"):
        ug.kaiser_window(-1)


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def test_can_cast_matches_torch_for_every_pair():
    for a in DTYPES:
        for b in DTYPES:
            assert ug.can_cast(getattr(ug, a), getattr(ug, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


@pytest.mark.parametrize("a,b", [("int32", "float16"), ("uint8", "int8"), ("bool", "int64"), ("float64", "bfloat16"),
                                 ("float16", "bfloat16")])
def test_result_type_matches_torch(a, b):
    ta, tb = torch.ones(2, dtype=getattr(torch, a)), torch.ones((), dtype=getattr(torch, b))
    ua, ub = ug.ones(2, dtype=getattr(ug, a)), ug.ones((), dtype=getattr(ug, b))
    for x, y, ux, uy in [(ta, tb, ua, ub), (tb, ta, ub, ua), (ta, 2.5, ua, 2.5), (3, ta, 3, ua), (True, tb, True, ub)]:
        assert str(ug.result_type(ux, uy)).split(".")[-1] == str(torch.result_type(x, y)).split(".")[-1], (x, y)
    assert ug.result_type(1, 2.0) == ug.float32 and ug.result_type(True, 2) == ug.int64


def test_dtype_is_signed():
    for name in DTYPES:
        assert getattr(ug, name).is_signed == getattr(torch, name).is_signed, name
        assert ug.is_signed(ug.ones(1, dtype=getattr(ug, name))) == torch.is_signed(torch.ones(1, dtype=getattr(torch, name)))
    assert not ug.float32.is_complex


def test_frombuffer_shares_the_buffer():
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    t = ug.frombuffer(buf, dtype=ug.int32, count=3, offset=8)
    assert t.tolist() == torch.frombuffer(bytearray(buf), dtype=torch.int32, count=3, offset=8).tolist() == [2, 3, 4]
    t.fill_(9)
    assert np.frombuffer(buf, dtype=np.int32).tolist() == [0, 1, 9, 9, 9, 5]
    with pytest.raises(TypeError, match=r"\[frombuffer\] unsupported dtype .*bfloat16"):
        ug.frombuffer(bytearray(8), dtype=torch.float8_e4m3fn)
    assert ug.frombuffer(array.array("d", [1.0, 2.0]), dtype=ug.complex128).tolist() == [1 + 2j]
    assert ug.frombuffer(array.array("d", [1.0, 2.0]), dtype=ug.float64).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"\[frombuffer\] 4 items"):
        ug.frombuffer(buf, dtype=ug.int32, count=4, offset=12)
    with pytest.raises(ValueError, match=r"\[frombuffer\].*not a multiple"):
        ug.frombuffer(bytearray(6), dtype=ug.int32)


def test_asarray_shares_where_it_can():
    a = np.arange(4.0)
    t = ug.asarray(a)
    t.add_(1)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0] and t.dtype == ug.float64
    assert ug.asarray(a, dtype=ug.float32).dtype == ug.float32
    with pytest.raises(ValueError, match=r"\[asarray\].*needs a copy"):
        ug.asarray(a, dtype=ug.float32, copy=False)
    c = ug.asarray(a, copy=True)
    c.zero_()
    assert a[0] == 1.0
    p = torch.zeros(3)
    ug.asarray(p).fill_(2.0)
    assert p.tolist() == [2.0, 2.0, 2.0]
    assert ug.asarray([[1, 2], [3, 4]]).dtype == ug.int64
    u = ug.ones(2)
    assert ug.asarray(u).data_ptr() == u.data_ptr()
    assert ug.asarray([1.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=r"\[asarray\] a list can't be shared"):
        ug.asarray([1.0], copy=False)


def test_process_wide_switches():
    assert ug.get_default_device() == torch.get_default_device().type == "cpu"
    ug.set_default_device("cpu")
    with pytest.raises(RuntimeError, match=r"\[set_default_device\].*not available"):
        ug.set_default_device("cuda")
    assert not ug.are_deterministic_algorithms_enabled()
    ug.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert ug.are_deterministic_algorithms_enabled() and ug.is_deterministic_algorithms_warn_only_enabled()
    finally:
        ug.use_deterministic_algorithms(False)
    assert ug.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    ug.set_float32_matmul_precision("high")
    try:
        assert ug.get_float32_matmul_precision() == "high"
    finally:
        ug.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match=r"\[set_float32_matmul_precision\]"):
        ug.set_float32_matmul_precision("low")


def test_functional_ops_at_the_top_level_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    w = rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    # 36-term sums: two correct orders differ by up to 36 eps of the sum of the terms' magnitudes.
    bound = 36 * np.finfo(np.float32).eps * torch.conv2d(torch.tensor(abs(x)), torch.tensor(abs(w)), padding=1).numpy()
    diff = ug.conv2d(ug.tensor(x), ug.tensor(w), padding=1).numpy() - torch.conv2d(torch.tensor(x), torch.tensor(w),
                                                                                   padding=1).numpy()
    assert (abs(diff) <= bound).all()
    np.testing.assert_allclose(ug.pixel_shuffle(ug.tensor(x), 2).numpy(), torch.pixel_shuffle(torch.tensor(x), 2).numpy())
    np.testing.assert_allclose(ug.max_pool2d(ug.tensor(x), 2).numpy(), torch.max_pool2d(torch.tensor(x), 2).numpy())
    np.testing.assert_allclose(ug.cosine_similarity(ug.tensor(x), ug.tensor(x[::-1].copy())).numpy(),
                               torch.cosine_similarity(torch.tensor(x), torch.tensor(x[::-1].copy())).numpy(), atol=1e-6)
    np.testing.assert_allclose(ug.selu(ug.tensor(x)).numpy(), torch.selu(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ug.threshold(ug.tensor(x), 0.1, 20.0).numpy(),
                               torch.threshold(torch.tensor(x), 0.1, 20.0).numpy())


def test_small_torch_functions():
    a, b = ug.tensor([1.0, 2.0]), ug.tensor([10.0, 20.0])
    assert ug.rsub(a, b, alpha=2).tolist() == torch.rsub(torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0]),
                                                         alpha=2).tolist()
    assert ug.is_same_size(a, b) and not ug.is_same_size(a, ug.ones(3))
    assert ug.row_stack([a, b]).tolist() == [[1.0, 2.0], [10.0, 20.0]]
    s = ug.scalar_tensor(3)
    assert s.dtype == ug.float32 and s.dim() == 0 and s.item() == 3.0
    e = ug.empty_strided((2, 3), (1, 2))
    assert e.stride() == torch.empty_strided((2, 3), (1, 2)).stride() and tuple(e.shape) == (2, 3)
