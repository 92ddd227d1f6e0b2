"""ug.data.read_idx against NumPy's reading of the same bytes: every IDX element type,
plain and gzip files, Debian's Fashion-MNIST, and clear errors for malformed files."""
import gzip
import os

import numpy as np
import pytest

import unigrad as ug

TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
FASHION = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist (scripts/setup.sh)


def idx_bytes(array, code):
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.astype(TYPES[code]).tobytes()


def write(tmp_path, data, gz=False, name="x.idx"):
    path = os.path.join(tmp_path, name + (".gz" if gz else ""))
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(data)
    return path


@pytest.mark.parametrize("code", sorted(TYPES))
@pytest.mark.parametrize("gz", [False, True])
def test_every_element_type(tmp_path, code, gz):
    rng = np.random.default_rng(code)
    array = (rng.standard_normal((3, 4, 5)) * 100).astype(TYPES[code])
    x = ug.data.read_idx(write(tmp_path, idx_bytes(array, code), gz))
    expected = array.astype(array.dtype.newbyteorder("="))
    assert x.shape == (3, 4, 5)
    np.testing.assert_array_equal(x.numpy(), expected)


def test_fashion_mnist_matches_numpy():
    with gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    y = ug.data.read_idx(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"))
    assert y.dtype == ug.uint8
    np.testing.assert_array_equal(y.numpy(), labels)
    x = ug.data.read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"))
    assert x.shape == (10000, 28, 28)


def test_malformed_files_raise_clear_errors(tmp_path):
    good = idx_bytes(np.arange(24, dtype=np.int32).reshape(2, 3, 4), 0x0C)
    for cut in (0, 3, 4, 9, 16, len(good) - 1):
        with pytest.raises(ValueError, match="ends inside"):
            ug.data.read_idx(write(tmp_path, good[:cut], name=f"cut{cut}"))
    with pytest.raises(ValueError, match="not an IDX file"):
        ug.data.read_idx(write(tmp_path, b"\x01\x00" + good[2:], name="magic"))
    with pytest.raises(ValueError, match="unknown IDX element type"):
        ug.data.read_idx(write(tmp_path, b"\x00\x00\x07\x01" + good[4:], name="type"))
    huge = bytes([0, 0, 0x08, 3]) + (2**31).to_bytes(4, "big") * 3
    with pytest.raises(ValueError, match="more than 2\\^32"):
        ug.data.read_idx(write(tmp_path, huge, name="huge"))
    # Found by fuzzing: a zero size let the others grow until the strides overflowed.
    empty_but_huge = bytes([0, 0, 0x08, 3]) + (0).to_bytes(4, "big") + (2**31).to_bytes(4, "big") * 2
    with pytest.raises(ValueError, match="more than 2\\^32"):
        ug.data.read_idx(write(tmp_path, empty_but_huge, name="empty_huge"))
    with pytest.raises(ValueError, match="cannot open"):
        ug.data.read_idx(os.path.join(tmp_path, "missing.idx"))
