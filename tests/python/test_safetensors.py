"""ug.save / ug.load and ug.safetensors against the safetensors package: every dtype round
trips, files are byte-identical to the reference's and load both ways, saves are atomic, and
malformed files raise unigrad.errors.ValueError, never crash."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

import unigrad as ug

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "int8", "int16", "uint16",
          "uint32", "uint64"]


def values(shape, dtype, seed=0):
    """The same random values as a ug and a torch tensor (bfloat16 rounded from float32 by both)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif not dtype.startswith(("float", "bfloat")):
        a = rng.integers(0, 100, shape).astype(dtype)
    else:
        a = rng.standard_normal(shape).astype("float32")
    return (ug.tensor(a).to(getattr(ug, dtype)), torch.from_numpy(np.array(a)).to(getattr(torch, dtype)))


def as_numpy(t):
    """Exact values: bfloat16 widens to float32 losslessly."""
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (t.to(ug.float32) if t.dtype == ug.bfloat16 else t).numpy()


def same(a, b):
    a, b = as_numpy(a), as_numpy(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


def pair_dicts():
    """Every dtype, with a 0-d, an empty and a non-contiguous tensor."""
    ours, theirs = {}, {}
    for i, dtype in enumerate(DTYPES):
        for suffix, shape in (("", (3, 4)), (".scalar", ()), (".empty", (0, 3))):
            ours[dtype + suffix], theirs[dtype + suffix] = values(shape, dtype, seed=i)
    ours["float32.t"], theirs["float32.t"] = (t.transpose(0, 1) for t in values((4, 5), "float32", seed=9))
    return ours, theirs


def test_round_trip_every_dtype_with_metadata(tmp_path):
    ours, _ = pair_dicts()
    path = tmp_path / "model.safetensors"
    ug.save(ours, path, metadata={"format": "pt", "step": "12"})
    back = ug.load(str(path))
    assert list(back) == sorted(ours)
    for name, t in ours.items():
        assert back[name].dtype == t.dtype and back[name].is_contiguous()
        same(back[name], t)
    assert ug.safetensors.load_metadata(path) == {"format": "pt", "step": "12"}
    assert ug.safetensors.load(ug.safetensors.save(ours)).keys() == back.keys()
    ug.safetensors.save_file({}, path)
    assert ug.load(path) == {}


def without_shells(d):
    """safetensors.torch of this version cannot save torch's uint16, uint32 and uint64 (KeyError):
    those are checked through safetensors.numpy."""
    return {k: v for k, v in d.items() if not k.startswith(("uint16", "uint32", "uint64"))}


def test_bytes_identical_to_the_reference():
    ours, theirs = pair_dicts()
    ours, theirs = without_shells(ours), without_shells(theirs)
    theirs["float32.t"] = theirs["float32.t"].contiguous()  # torch's save refuses strided tensors
    assert ug.safetensors.save(ours) == safetensors.torch.save(theirs)
    # One metadata key: the reference writes a Rust HashMap, whose order is not fixed.
    no_bf16 = {k: v for k, v in pair_dicts()[0].items() if not k.startswith("bfloat16")}
    assert ug.safetensors.save(no_bf16, metadata={"k": "v"}) == safetensors.numpy.save(
        {k: v.numpy() for k, v in no_bf16.items()}, metadata={"k": "v"})


def test_reference_loads_our_files(tmp_path):
    ours, theirs = pair_dicts()
    path = str(tmp_path / "ours.safetensors")
    ug.safetensors.save_file(ours, path)
    loaded = safetensors.torch.load_file(path)
    assert loaded.keys() == theirs.keys()
    for name, t in theirs.items():
        assert loaded[name].dtype == t.dtype
        same(loaded[name], t)
    no_bf16 = {k: v for k, v in ours.items() if not k.startswith("bfloat16")}  # numpy has no bfloat16
    ug.save(no_bf16, tmp_path / "np.safetensors")
    loaded = safetensors.numpy.load_file(str(tmp_path / "np.safetensors"))
    assert loaded.keys() == no_bf16.keys()
    for name, a in loaded.items():
        np.testing.assert_array_equal(a, no_bf16[name].numpy(), strict=True)


def test_we_load_reference_files(tmp_path):
    _, theirs = pair_dicts()
    theirs = {k: v.contiguous() for k, v in without_shells(theirs).items()}
    path = str(tmp_path / "theirs.safetensors")
    safetensors.torch.save_file(theirs, path, metadata={"who": "torch"})
    loaded = ug.load(path)
    assert loaded.keys() == theirs.keys()
    for name, t in theirs.items():
        same(loaded[name], t)
    assert ug.safetensors.load_metadata(path) == {"who": "torch"}
    shells = {k: v.numpy() for k, v in pair_dicts()[1].items() if k not in theirs and not k.startswith("bfloat16")}
    safetensors.numpy.save_file(shells, str(tmp_path / "shells.safetensors"))
    loaded = ug.load(str(tmp_path / "shells.safetensors"))
    assert loaded.keys() == shells.keys()
    for name, a in shells.items():
        assert loaded[name].numpy().dtype == a.dtype
        np.testing.assert_array_equal(loaded[name].numpy(), a)


def test_state_dict_round_trip_into_a_fresh_module(tmp_path):
    def make(seed):
        ug.manual_seed(seed)
        return ug.nn.Sequential(ug.nn.Linear(6, 5), ug.nn.BatchNorm1d(5), ug.nn.Linear(5, 2))

    model = make(0)
    model(ug.randn(8, 6))  # moves the batch-norm running statistics off their initial values
    path = tmp_path / "model.safetensors"
    ug.save(model.state_dict(), path)
    fresh = make(1)
    assert not np.array_equal(fresh.state_dict()["0.weight"].numpy(), model.state_dict()["0.weight"].numpy())
    fresh.load_state_dict(ug.load(path))
    want = model.state_dict()
    got = fresh.state_dict()
    assert got.keys() == want.keys()
    for name in want:
        same(got[name], want[name])


CHILD = """
import sys
import unigrad as ug
big = {f"w{i:02d}": ug.full((1 << 20,), float(i)) for i in range(48)}
print("ready", flush=True)
ug.save(big, sys.argv[1])
print("saved", flush=True)
"""


def test_a_killed_save_leaves_the_previous_file(tmp_path):
    path = tmp_path / "model.safetensors"
    old = {"w": ug.arange(10.0)}
    ug.save(old, path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True)
    assert child.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 20
    while not any(p.name.startswith(".model.safetensors.tmp-") for p in tmp_path.iterdir()):
        if child.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.0005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    back = ug.load(path)  # never a half-written file
    if list(back) == ["w"]:
        same(back["w"], old["w"])
    else:  # the save won the race and finished: then the file is complete
        assert len(back) == 48 and back["w47"][-1].item() == 47.0
    assert child.returncode == -signal.SIGKILL or back.keys() != {"w"}


def test_a_failed_save_leaves_no_temporary_file(tmp_path):
    with pytest.raises(RuntimeError, match=r"\[safetensors\] cannot create"):
        ug.save({"w": ug.ones(2)}, tmp_path / "missing" / "x.safetensors")
    path = tmp_path / "x.safetensors"
    ug.save({"w": ug.ones(2)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["x.safetensors"]


def test_bad_arguments_raise_type_errors(tmp_path):
    # ug.save takes nested values too (test_checkpoint.py); the safetensors names take tensors only.
    with pytest.raises(TypeError, match=r"\[save_file\] expected a dict"):
        ug.safetensors.save_file(ug.ones(2), tmp_path / "a")
    with pytest.raises(TypeError, match=r"entry 'a' is a int, not a Tensor"):
        ug.safetensors.save_file({"a": 1}, tmp_path / "a")
    with pytest.raises(TypeError, match=r"\[save\] cannot save obj\['a'\], a object"):
        ug.save({"a": object()}, tmp_path / "a")
    with pytest.raises(RuntimeError, match="No such file"):
        ug.load(tmp_path / "absent.safetensors")


def build(header, data=b"", length=None):
    """A safetensors file from a header (dict or raw JSON text) and a data section."""
    text = header if isinstance(header, str) else json.dumps(header)
    text = text.encode() + b" " * (-len(text.encode()) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
GOOD = build({"a": F32x2, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, bytes(12))

CORRUPT = {
    "absurd header length": (build({"a": F32x2}, bytes(8), length=2**60), "header length 1152921504606846976 exceeds the limit"),
    "header past the end": (build({"a": F32x2}, bytes(8), length=4096), "exceeds the .* bytes after the length"),
    "not JSON": (build('{"a": {"dtype": ', bytes(8)), "not valid JSON"),
    "not an object": (build("[1, 2]"), "not a JSON object"),
    "offsets past the end": (build({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8)),
                             r"tensor 'a': data_offsets \[0,16\] run past the end of the 8-byte data section"),
    "overlapping ranges": (build({"a": F32x2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)),
                           "tensors 'a' and 'b' overlap"),
    "gap": (build({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)), "belong to no tensor"),
    "trailing bytes": (build({"a": F32x2}, bytes(12)), "cover 8 bytes but the data section holds 12"),
    "wrong dtype": (build({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
                    "tensor 'a' has unknown or unsupported dtype \"F33\""),
    "unsupported dtype": (build({"a": {"dtype": "F8_E5M2", "shape": [8], "data_offsets": [0, 8]}}, bytes(8)),
                          "unsupported dtype \"F8_E5M2\""),
    "size mismatch": (build({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),
                      r"tensor 'a': data_offsets \[0,8\] span 8 bytes but F32 shape \[3\] needs 12"),
    "negative dim": (build({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8)),
                     "not a non-negative integer"),
    "overflowing shape": (build({"a": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 8]}}, bytes(8)),
                          "overflows"),
    "end before begin": (build({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, bytes(8)),
                         "end before they begin"),
    "missing field": (build({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "tensor 'a' has no \"data_offsets\""),
    "duplicate name": (build('{"a": %s, "a": %s}' % (json.dumps(F32x2), json.dumps(F32x2)), bytes(8)),
                       "tensor 'a' appears more than once"),
    "metadata not strings": (build({"__metadata__": {"k": 1}, "a": F32x2}, bytes(8)), "entry 'k' is 1, not a string"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_files_raise_value_errors(tmp_path, case):
    data, message = CORRUPT[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(ug.errors.ValueError, match=rf"\[safetensors\] '{re.escape(str(path))}': .*{message}"):
        ug.load(path)
    with pytest.raises(ug.errors.ValueError, match=message):
        ug.safetensors.load(data)


@pytest.mark.parametrize("keep", [0, 4, 7, 8, 20, len(GOOD) - 12, len(GOOD) - 5, len(GOOD) - 1])
def test_truncated_files_raise_value_errors(tmp_path, keep):
    assert ug.safetensors.load(GOOD).keys() == {"a", "b"}
    path = tmp_path / "cut.safetensors"
    path.write_bytes(GOOD[:keep])
    with pytest.raises(ug.errors.ValueError, match=r"\[safetensors\] '.*cut.safetensors': "):
        ug.load(path)
