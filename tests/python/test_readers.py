"""ug.data.read_csv against numpy.loadtxt and the csv module, ug.data.read_npz against
np.load, and clear errors for malformed and hostile files."""
import csv
import io
import os
import struct
import zipfile

import numpy as np
import pytest

import unigrad as ug


def write(tmp_path, data, name="t.csv"):
    path = os.path.join(tmp_path, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


# ---- CSV ----------------------------------------------------------------------------------

def random_cell(rng):
    v = rng.standard_normal() * 10.0 ** rng.integers(-5, 6)
    return rng.choice([f"{v:.6g}", f"{v:e}", repr(float(v)), str(int(v)), f"  {v:.3f} "])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_random_files_match_numpy_loadtxt(tmp_path, seed, delimiter):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(1, 30), rng.integers(1, 8)
    newline = "\r\n" if seed % 2 else "\n"
    text = newline.join(delimiter.join(random_cell(rng) for _ in range(cols)) for _ in range(rows)) + newline
    path = write(tmp_path, text)
    expected = np.loadtxt(path, delimiter=delimiter, ndmin=2, dtype=np.float64)
    np.testing.assert_array_equal(ug.data.read_csv(path, delimiter=delimiter, dtype=ug.float64).numpy(), expected)
    x = ug.data.read_csv(path, delimiter=delimiter)
    assert x.dtype == ug.float32 and x.shape == (rows, cols)
    np.testing.assert_array_equal(x.numpy(), expected.astype(np.float32))


@pytest.mark.parametrize("quoting", [csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC, csv.QUOTE_MINIMAL])
def test_quoted_fields_as_the_csv_module_reads_them(tmp_path, quoting):
    rng = np.random.default_rng(1)
    names = ['plain', 'with,comma', 'with "quote"', 'two\nlines']
    data = rng.standard_normal((6, 4)).round(4)
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=quoting)  # CRLF line ends, as the csv module writes
    writer.writerow(names)
    writer.writerows(data.tolist())
    path = write(tmp_path, buffer.getvalue())
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    x, columns = ug.data.read_csv(path, dtype=ug.float64, return_columns=True)
    assert columns == rows[0] == names
    np.testing.assert_array_equal(x.numpy(), np.array(rows[1:], dtype=np.float64))


def test_escaped_quotes_survive_a_growing_row(tmp_path):
    # Found by fuzzing: a cell with "" inside was read through a dangling view once the
    # row's list of cells grew.
    names = ['q"%d"' % i for i in range(40)]
    line = ",".join('"' + n.replace('"', '""') + '"' for n in names)
    x, columns = ug.data.read_csv(write(tmp_path, line + "\n" + ",".join(["1"] * 40) + "\n"), return_columns=True)
    assert columns == names and x.shape == (1, 40)


def test_header_inference_and_names(tmp_path):
    path = write(tmp_path, "a,b,c\n1,2,3\n4,5,6\n")
    x, columns = ug.data.read_csv(path, return_columns=True)
    assert columns == ["a", "b", "c"] and x.shape == (2, 3)
    x, columns = ug.data.read_csv(write(tmp_path, "1,2\n3,4\n", "n.csv"), return_columns=True)
    assert columns == [] and x.shape == (2, 2)
    # header=True takes a numeric first row as names; header=False makes a word row an error.
    x, columns = ug.data.read_csv(write(tmp_path, "1,2\n3,4\n", "n.csv"), header=True, return_columns=True)
    assert columns == ["1", "2"] and x.tolist() == [[3, 4]]
    with pytest.raises(ValueError, match=r"t\.csv:1:1: 'a' in column 1 is not a number"):
        ug.data.read_csv(path, header=False)
    # A first row of missing values is data, not a header.
    x = ug.data.read_csv(write(tmp_path, "NA,\n1,2\n", "m.csv"))
    assert x.shape == (2, 2) and np.isnan(x.numpy()[0]).all()


def test_usecols_by_index_and_name(tmp_path):
    path = write(tmp_path, "a,b,c,d\n1,2,3,4\n5,6,7,8\n")
    x, columns = ug.data.read_csv(path, usecols=[3, "a", -2], return_columns=True)
    assert columns == ["d", "a", "c"]
    np.testing.assert_array_equal(x.numpy(), np.loadtxt(path, delimiter=",", skiprows=1, usecols=[3, 0, -2]))
    assert ug.data.read_csv(path, usecols="b").tolist() == [[2], [6]]
    assert ug.data.read_csv(path, usecols=1).tolist() == [[2], [6]]
    with pytest.raises(IndexError, match="usecols index 4 is out of range for 4 columns"):
        ug.data.read_csv(path, usecols=[4])
    with pytest.raises(ValueError, match="no column named 'z'"):
        ug.data.read_csv(path, usecols=["z"])
    with pytest.raises(ValueError, match="has no header"):
        ug.data.read_csv(write(tmp_path, "1,2\n", "n.csv"), usecols=["a"])
    with pytest.raises(TypeError, match="usecols"):
        ug.data.read_csv(path, usecols=[1.5])


def test_missing_values_blank_lines_bom_and_skip_rows(tmp_path):
    text = "\ufeffa comment line\nx,y,z\n\n1,,3\r\n NA ,N/A,null\n\n  \n"
    path = write(tmp_path, text)
    x, columns = ug.data.read_csv(path, skip_rows=1, return_columns=True)
    assert columns == ["x", "y", "z"]
    np.testing.assert_array_equal(x.numpy(), np.array([[1, np.nan, 3], [np.nan] * 3], np.float32))
    with pytest.raises(ValueError, match=r"t\.csv:4:3: missing value in column 2 \(int64 has no NaN"):
        ug.data.read_csv(path, skip_rows=1, dtype=ug.int64)
    # nan and inf are numbers, as for numpy.
    y = ug.data.read_csv(write(tmp_path, "nan,inf,-inf,+2\n", "n.csv"), dtype=ug.float64).numpy()
    np.testing.assert_array_equal(y, [[np.nan, np.inf, -np.inf, 2]])


@pytest.mark.parametrize("dtype", [ug.int32, ug.int64, ug.uint8, ug.float16, ug.bfloat16])
def test_other_dtypes(tmp_path, dtype):
    path = write(tmp_path, "1,2,3\n4,5,255\n")
    x = ug.data.read_csv(path, dtype=dtype)
    assert x.dtype == dtype
    assert x.tolist() == [[1, 2, 3], [4, 5, 255]]


def test_integer_cells_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r":1:3: '2.5' in column 2 is not an integer"):
        ug.data.read_csv(write(tmp_path, "1,2.5\n"), dtype=ug.int64)
    with pytest.raises(ValueError, match=r":2:1: 256 in column 1 does not fit uint8"):
        ug.data.read_csv(write(tmp_path, "1\n256\n"), dtype=ug.uint8)
    with pytest.raises(ValueError, match="does not fit int32"):
        ug.data.read_csv(write(tmp_path, "3000000000\n"), dtype=ug.int32)
    with pytest.raises(TypeError, match="bool"):
        ug.data.read_csv(write(tmp_path, "1\n"), dtype=ug.bool)


def test_errors_name_file_line_and_column(tmp_path):
    path = write(tmp_path, "a,b,c\n1,2,3\n4,x5,6\n")
    with pytest.raises(ValueError, match=r"t\.csv:3:3: 'x5' in column 2 is not a number"):
        ug.data.read_csv(path)
    with pytest.raises(ValueError, match=r"t\.csv:3:7: this row has 4 fields, the first has 3"):
        ug.data.read_csv(write(tmp_path, "1,2,3\n4,5,6\n7,8,9,10\n"))
    with pytest.raises(ValueError, match=r"t\.csv:2:4: this row has 2 fields, the first has 3"):
        ug.data.read_csv(write(tmp_path, "1,2,3\n4,5\n"))
    with pytest.raises(ValueError, match=r"t\.csv:2:3: a quoted field never ends"):
        ug.data.read_csv(write(tmp_path, '1,2\n3,"4\n'))
    with pytest.raises(ValueError, match=r"t\.csv:1:6: unexpected character 'x' after a closing quote"):
        ug.data.read_csv(write(tmp_path, '1,"2"x\n'))
    # A quoted cell spanning lines moves the line count on.
    with pytest.raises(ValueError, match=r"t\.csv:3:1: 'z' in column 1"):
        ug.data.read_csv(write(tmp_path, 'a,"b\nc"\nz,1\n'))
    with pytest.raises(ValueError, match="delimiter must be one character"):
        ug.data.read_csv(path, delimiter=";;")
    with pytest.raises(ValueError, match="header must be"):
        ug.data.read_csv(path, header="yes")
    with pytest.raises(ValueError, match="cannot open"):
        ug.data.read_csv(os.path.join(tmp_path, "missing.csv"))


def test_empty_files(tmp_path):
    assert ug.data.read_csv(write(tmp_path, "")).shape == (0, 0)
    assert ug.data.read_csv(write(tmp_path, "\n\n")).shape == (0, 0)
    x, columns = ug.data.read_csv(write(tmp_path, "a,b\n"), return_columns=True)
    assert x.shape == (0, 2) and columns == ["a", "b"]
    with pytest.raises(ValueError, match="no header row"):
        ug.data.read_csv(write(tmp_path, ""), header=True)


# ---- NPZ ----------------------------------------------------------------------------------

ARRAYS = {
    "f4": np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32),
    "f8_big_endian": np.arange(6, dtype=">f8").reshape(2, 3),
    "fortran": np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)),
    "i8": np.arange(5, dtype=np.int64),
    "u1": np.arange(7, dtype=np.uint8),
    "b1": np.array([True, False, True]),
    "f2": np.linspace(0, 1, 5).astype(np.float16),
    "scalar": np.array(3.5),
    "empty": np.zeros((2, 0), np.float32),
}


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_matches_np_load(tmp_path, save):
    path = os.path.join(tmp_path, "a.npz")
    save(path, *[np.arange(3)], **ARRAYS)
    got = ug.data.read_npz(path)
    with np.load(path) as expected:
        assert list(got) == list(expected.keys())
        for name in expected:
            assert got[name].shape == expected[name].shape
            np.testing.assert_array_equal(got[name].numpy(), expected[name])


def test_npz_of_nothing(tmp_path):
    path = os.path.join(tmp_path, "a.npz")
    np.savez(path)
    assert ug.data.read_npz(path) == {}


def saved(tmp_path, compressed=False, **arrays):
    path = os.path.join(tmp_path, "a.npz")
    (np.savez_compressed if compressed else np.savez)(path, **(arrays or {"x": np.arange(100.0)}))
    return open(path, "rb").read()


def test_corrupt_npz_raise_clear_errors(tmp_path):
    for compressed in (False, True):
        good = saved(tmp_path, compressed)
        for cut in (0, 10, len(good) // 2, len(good) - 10):
            with pytest.raises(ValueError, match=r"read_npz"):
                ug.data.read_npz(write(tmp_path, good[:cut], "cut.npz"))
        # A flipped byte inside the data: the CRC check (or the deflate stream) fails.
        start = good.index(b"\x93NUMPY") + 200 if not compressed else 60
        bad = bytearray(good)
        bad[start] ^= 0xFF
        with pytest.raises(ValueError, match=r"read_npz"):
            ug.data.read_npz(write(tmp_path, bytes(bad), "flip.npz"))
    with pytest.raises(ValueError, match="cannot open"):
        ug.data.read_npz(os.path.join(tmp_path, "missing.npz"))
    with pytest.raises(ValueError, match="not a valid .npz"):
        ug.data.read_npz(write(tmp_path, b"not a zip file at all", "junk.npz"))


def test_members_that_are_not_npy_or_not_supported(tmp_path):
    path = os.path.join(tmp_path, "a.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes.txt", "hello")
    with pytest.raises(ValueError, match=r"member 'notes.txt'.*not an .npy member"):
        ug.data.read_npz(path)
    np.savez(path, c=np.arange(3, dtype=np.complex64))
    with pytest.raises(ValueError, match=r"member 'c.npy'.*unsupported dtype"):
        ug.data.read_npz(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_BZIP2) as z:
        z.writestr("x.npy", b"")
    with pytest.raises(ValueError, match="compression method"):
        ug.data.read_npz(path)


def test_hostile_declared_sizes_are_rejected_before_allocating(tmp_path):
    for compressed in (False, True):
        data = bytearray(saved(tmp_path, compressed))
        # The uncompressed size in the local header (offset 22) and the central directory (24).
        local = data.index(b"PK\x03\x04")
        central = data.index(b"PK\x01\x02")
        struct.pack_into("<I", data, local + 22, 0xFFFFFFF0)
        struct.pack_into("<I", data, central + 24, 0xFFFFFFF0)
        with pytest.raises(ValueError, match="impossible for"):
            ug.data.read_npz(write(tmp_path, bytes(data), "huge.npz"))
    # A member whose .npy header claims more elements than its bytes hold.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    path = os.path.join(tmp_path, "shape.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", header.getvalue() + b"\0" * 16)
    with pytest.raises(ValueError, match="more data than the file holds"):
        ug.data.read_npz(path)


def test_npy_header_parser_rejects_odd_text(tmp_path):
    def npy_with_header(text):
        text = text + " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + b"\0" * 64

    ok = npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }")
    assert ug.data.read_npy(write(tmp_path, ok, "ok.npy")).shape == (2, 3)
    for text, message in [
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }", "other than sizes"),
        ("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }", "True or False"),
        ("{'descr': '<f8', 'fortran_order': False, }", "no 'shape'"),
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key"),
        ("{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "expected"),
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", "other than sizes"),
        ("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", "overflows"),
    ]:
        with pytest.raises(ValueError, match=message):
            ug.data.read_npy(write(tmp_path, npy_with_header(text), "bad.npy"))
