"""ug.data.read_npy against np.save's files: dtypes, byte orders, C and Fortran order, 0-d and
empty arrays, and clear errors for malformed files."""
import io
import os

import numpy as np
import pytest

import unigrad as ug


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f8", ">f8", "<f2", "<i4", ">i4", "<i8", "|u1", "|b1"])
@pytest.mark.parametrize("fortran", [False, True])
def test_round_trip_of_np_save(tmp_path, dtype, fortran):
    a = (np.random.default_rng(0).standard_normal((3, 4, 2)) * 50).astype(dtype)
    if fortran:
        a = np.asfortranarray(a)
    path = os.path.join(tmp_path, "a.npy")
    np.save(path, a)
    x = ug.data.read_npy(path)
    assert x.shape == a.shape
    np.testing.assert_array_equal(x.numpy(), a.astype(a.dtype.newbyteorder("=")))


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 0, 3)])
def test_scalar_and_empty_arrays(tmp_path, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    path = os.path.join(tmp_path, "a.npy")
    np.save(path, a)
    x = ug.data.read_npy(path)
    assert x.shape == shape
    np.testing.assert_array_equal(x.numpy(), a)


def test_malformed_files_raise_clear_errors(tmp_path):
    path = os.path.join(tmp_path, "a.npy")
    np.save(path, np.arange(12, dtype=np.float32).reshape(3, 4))
    good = open(path, "rb").read()

    def load(data, name):
        p = os.path.join(tmp_path, name)
        with open(p, "wb") as f:
            f.write(data)
        return ug.data.read_npy(p)

    with pytest.raises(ValueError, match="magic"):
        load(b"NOTNUMPY" + good[8:], "magic.npy")
    for cut in (0, 9, 40, len(good) - 4):
        with pytest.raises(ValueError):
            load(good[:cut], f"cut{cut}.npy")
    with pytest.raises(ValueError, match="unsupported dtype"):
        load(good.replace(b"'<f4'", b"'<c8'"), "complex.npy")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (10**9, 10**9)})
    with pytest.raises(ValueError, match="more data than the file"):
        load(header.getvalue(), "shape.npy")
    with pytest.raises(ValueError, match="cannot open"):
        ug.data.read_npy(os.path.join(tmp_path, "missing.npy"))
