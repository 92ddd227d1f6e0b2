"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/: small valid files
and edge cases (empty arrays, other byte orders, truncations). Run once; the files are
committed. Needs numpy and safetensors (both in requirements-dev.txt)."""
import gzip
import io
import os

import numpy as np
from safetensors.numpy import save as save_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def idx(array, code):
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.tobytes()


def main():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for name, array in {"f4": a, "f8_fortran": np.asfortranarray(a.astype(">f8")), "u1": np.arange(5, dtype=np.uint8),
                        "b1": np.array([True, False]), "i8_scalar": np.array(7, dtype=np.int64),
                        "f2_empty": np.zeros((2, 0, 3), np.float16), "i4": np.arange(6, dtype=">i4")}.items():
        write("npy_fuzz", name + ".npy", npy(array))
    write("npy_fuzz", "truncated.npy", npy(a)[:-5])

    for name, compressed in (("stored", False), ("deflate", True)):
        buffer = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(buffer, x=a, y=np.arange(3, dtype=np.int64))
        write("npz_fuzz", name + ".npz", buffer.getvalue())
    buffer = io.BytesIO()
    np.savez(buffer)
    write("npz_fuzz", "empty.npz", buffer.getvalue())

    write("idx_fuzz", "u1.idx", idx(np.arange(24, dtype=np.uint8).reshape(2, 3, 4), 0x08))
    write("idx_fuzz", "i2.idx", idx(np.arange(6, dtype=">i2"), 0x0B))
    write("idx_fuzz", "f8.idx", idx(np.linspace(0, 1, 4).astype(">f8"), 0x0E))
    write("idx_fuzz", "i4.idx.gz", gzip.compress(idx(np.arange(10, dtype=">i4").reshape(2, 5), 0x0C), mtime=0))

    write("safetensors_fuzz", "two.safetensors",
          save_safetensors({"w": a, "b": np.arange(3, dtype=np.int64)}, metadata={"format": "np"}))
    write("safetensors_fuzz", "empty.safetensors", save_safetensors({}))
    write("safetensors_fuzz", "zero_size.safetensors", save_safetensors({"e": np.zeros((0, 4), np.float32)}))

    # The first byte of a csv_fuzz input picks the options (see csv_fuzz.cpp).
    write("csv_fuzz", "header.csv", b"\x00a,b,c\n1,2,3\n4.5,-6e2,nan\n")
    write("csv_fuzz", "quoted_crlf.csv", b"\x01\"x,1\",\"y\"\"\"\r\n\"1\",2\r\n\r\n")
    write("csv_fuzz", "missing.csv", b"\x11a;b\n1;\n;NA\n")
    write("csv_fuzz", "ints.csv", b"\x22 1\t2\t+3\n4\t5\t6\n")
    write("csv_fuzz", "ragged.csv", b"\x00" + b"1,2\n3\n")
    write("csv_fuzz", "usecols.csv", b"\xc4skipped\na,b\n1,2\n")

    # The first byte of a serve_decode_fuzz input picks the sample shape and the body's format
    # (see serve_decode_fuzz.cpp).
    write("serve_decode_fuzz", "flat.json", b"\x00" + b'{"inputs": [[1, -2.5e-3, 3], [4, 5, 6E+1]]}')
    write("serve_decode_fuzz", "nested.json", b"\x01" + b'{"inputs": [[[0.5, 1], [2, 3]]]}')
    write("serve_decode_fuzz", "escaped_key.json", b"\x02" + b'{ "\\u0069nputs" :\n[[[[1, 2], [3, 4]]]] }')
    write("serve_decode_fuzz", "ragged.json", b"\x00" + b'{"inputs": [[1, 2], [3, [4]]]}')
    write("serve_decode_fuzz", "raw.f32", b"\x04" + np.arange(6, dtype="<f4").tobytes())


if __name__ == "__main__":
    main()
