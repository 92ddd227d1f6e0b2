"""ug.logging.SummaryWriter (ug.utils.tensorboard): event files read back with the tensorboard
package, CRCs checked with its crc32c, and the same events as torch.utils.tensorboard writes."""
import glob
import os
import re
import socket
import struct

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from torch.utils.tensorboard import SummaryWriter as TorchSummaryWriter

import unigrad as ug
from unigrad.utils.tensorboard import SummaryWriter


def event_files(log_dir):
    return sorted(glob.glob(os.path.join(str(log_dir), "**", "events.out.tfevents.*"), recursive=True))


def records(path):
    """The raw TFRecord payloads, with both CRCs checked against tensorboard's crc32c."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert length_crc == masked_crc32c(header)
        payload = data[pos + 12:pos + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert payload_crc == masked_crc32c(payload)
        out.append(payload)
        pos += 16 + length
    assert pos == len(data)
    return out


def events(path):
    return [event_pb2.Event.FromString(r) for r in records(path)]


def accumulator(log_dir):
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0, "histograms": 0})
    acc.Reload()
    return acc


def test_file_name_and_first_event_follow_tensorboard(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".v2") as w:
        assert w.log_dir == w.get_logdir() == str(tmp_path)
    (path,) = event_files(tmp_path)
    name = os.path.basename(path)
    pattern = r"events\.out\.tfevents\.(\d{10})\.%s\.%d\.\d+\.v2" % (re.escape(socket.gethostname()), os.getpid())
    assert re.fullmatch(pattern, name), name
    (first,) = events(path)
    assert first.file_version == "brain.Event:2"
    assert abs(first.wall_time - int(re.fullmatch(pattern, name).group(1))) < 2


def test_scalars_read_back_with_steps_values_and_wall_times(tmp_path):
    values = [0.1, 1 / 3, 2.5, -7e-3, 123456.789]
    with SummaryWriter(tmp_path) as w:
        for step, v in enumerate(values):
            w.add_scalar("train/loss", v, step * 10, walltime=1000.0 + step)
        w.add_scalar("lr", np.float32(0.25), 3)
        w.add_scalar("t", ug.tensor(1.5), 4)
    acc = accumulator(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["lr", "t", "train/loss"]
    got = acc.Scalars("train/loss")
    assert [e.step for e in got] == [0, 10, 20, 30, 40]
    assert [e.wall_time for e in got] == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    assert [e.value for e in got] == [float(np.float32(v)) for v in values]  # stored as float32
    assert acc.Scalars("lr")[0].value == 0.25 and acc.Scalars("t")[0].value == 1.5


def test_default_walltime_is_now_and_absent_step_is_zero(tmp_path):
    import time
    before = time.time()
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("x", 1.0)
    after = time.time()
    (e,) = accumulator(tmp_path).Scalars("x")
    assert e.step == 0 and before <= e.wall_time <= after


def test_add_scalars_writes_one_run_per_tag_like_torch(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("loss/all", {"train": 1.0 / (step + 1), "val": 2.0 / (step + 1)}, step)
    runs = sorted(os.path.relpath(os.path.dirname(p), tmp_path) for p in event_files(tmp_path))
    assert runs == [".", "loss_all_train", "loss_all_val"]
    train = accumulator(tmp_path / "loss_all_train").Scalars("loss/all")
    val = accumulator(tmp_path / "loss_all_val").Scalars("loss/all")
    assert [e.value for e in train] == [float(np.float32(1.0 / (s + 1))) for s in range(3)]
    assert [e.value for e in val] == [float(np.float32(2.0 / (s + 1))) for s in range(3)]
    assert train[0].wall_time == val[0].wall_time  # one time for the group


def test_text_is_read_by_the_text_plugin_format(tmp_path):
    text = "epoch 3: <b>accuracy</b> = 97% — ünïcödé"
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", text, 3)
    acc = accumulator(tmp_path)
    assert acc.Tags()["tensors"] == ["notes/text_summary"]
    (e,) = acc.Tensors("notes/text_summary")
    assert e.step == 3
    assert e.tensor_proto.dtype == 7  # DT_STRING
    assert [d.size for d in e.tensor_proto.tensor_shape.dim] == [1]
    assert e.tensor_proto.string_val[0].decode("utf-8") == text
    assert acc.SummaryMetadata("notes/text_summary").plugin_data.plugin_name == "text"


def test_histogram_statistics_and_buckets(tmp_path):
    x = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", ug.tensor(x), 5)
        w.add_histogram("w10", x, 6, bins=10)
    acc = accumulator(tmp_path)
    (h,) = acc.Histograms("w")
    v = x.astype(np.float64)
    assert h.step == 5
    hv = h.histogram_value
    assert (hv.min, hv.max, hv.num) == (v.min(), v.max(), 1000)
    assert hv.sum == pytest.approx(v.sum(), rel=1e-12, abs=1e-9)
    assert hv.sum_squares == pytest.approx(v.dot(v), rel=1e-12)
    assert sum(hv.bucket) == 1000
    counts, edges = np.histogram(v, bins=10)
    hv10 = acc.Histograms("w10")[0].histogram_value
    assert list(hv10.bucket) == [0] + counts.tolist()
    assert list(hv10.bucket_limit) == edges.tolist()


def read_all(log_dir):
    """{run directory: [Event without wall time or writer name]} over every event file."""
    out = {}
    for path in event_files(log_dir):
        run = os.path.relpath(os.path.dirname(path), log_dir)
        evs = []
        for e in LegacyEventFileLoader(path).Load():
            e.ClearField("wall_time")
            e.ClearField("source_metadata")
            evs.append(e)
        assert run not in out
        out[run] = evs
    return out


def same_events(a, b):
    """Events equal, histogram sums up to rounding (numpy sums pairwise)."""
    assert a.keys() == b.keys()
    for run in a:
        assert len(a[run]) == len(b[run]), run
        for x, y in zip(a[run], b[run]):
            for vx, vy in zip(x.summary.value, y.summary.value):
                if vx.HasField("histo"):
                    assert vx.histo.sum == pytest.approx(vy.histo.sum, rel=1e-9, abs=1e-9)
                    assert vx.histo.sum_squares == pytest.approx(vy.histo.sum_squares, rel=1e-9)
                    vx.histo.sum = vy.histo.sum
                    vx.histo.sum_squares = vy.histo.sum_squares
            assert x == y, (run, x, y)


def test_same_events_as_torch_for_the_same_calls(tmp_path):
    rng = np.random.default_rng(1)
    weights = rng.normal(size=(64, 32)).astype(np.float32)
    calls = [
        ("add_scalar", ("loss", 0.75, 0)),
        ("add_scalar", ("loss", 0.5, 1), {"walltime": 5.0}),
        ("add_scalar", ("acc", 1 / 3)),
        ("add_scalars", ("metrics", {"train": 0.9, "val": 0.8}, 1)),
        ("add_scalars", ("metrics", {"train": 0.95, "val": 0.85}, 2)),
        ("add_text", ("summary", "**bold** and <tags> & ampersands", 2)),
        ("add_histogram", ("weights", weights, 2)),
        ("add_histogram", ("weights/int_bins", weights, 3), {"bins": 7}),
        ("add_histogram", ("weights/edges", weights, 3), {"bins": [-2.0, -1.0, 0.0, 0.5, 1.0, 2.0]}),
        ("add_histogram", ("weights/max_bins", weights, 4), {"max_bins": 30}),
        ("add_histogram", ("positive", np.abs(weights) + 1, 4)),
        ("add_histogram", ("constant", np.full(10, 3.0), 4), {"bins": 5}),
    ]
    ours, theirs = tmp_path / "ug", tmp_path / "torch"
    with SummaryWriter(ours, purge_step=7) as w, TorchSummaryWriter(str(theirs), purge_step=7) as t:
        for call in calls:
            name, args = call[0], call[1]
            kwargs = call[2] if len(call) > 2 else {}
            getattr(w, name)(*[ug.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
            getattr(t, name)(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    a, b = read_all(ours), read_all(theirs)
    assert sorted(a) == [".", "metrics_train", "metrics_val"]
    assert len(a["."]) == 1 + 2 + 3 + 1 + 6  # file version, purge, scalars, text, histograms
    same_events(a, b)


def test_events_wait_in_memory_until_flush(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=100, flush_secs=1000)
    (path,) = event_files(tmp_path)
    for step in range(5):
        w.add_scalar("x", step, step)
    assert len(records(path)) == 1  # only the file_version event, flushed on creation
    w.flush()
    assert len(records(path)) == 6
    w.add_scalar("x", 5.0, 5)
    w.close()
    assert len(records(path)) == 7


def test_a_full_queue_goes_to_disk_without_flush(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=3, flush_secs=1000)
    (path,) = event_files(tmp_path)
    for step in range(3):
        w.add_scalar("x", step, step)
    w.flush()  # waits for the writer thread, which the full queue has already woken
    assert len(records(path)) == 4
    w.close()


def test_close_is_idempotent_and_adding_after_close_opens_a_new_file(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()
    w.flush()
    assert len(event_files(tmp_path)) == 1
    w.add_scalar("x", 2.0, 1)
    w.close()
    assert len(event_files(tmp_path)) == 2
    assert [e.value for e in accumulator(tmp_path).Scalars("x")] == [1.0, 2.0]


def test_two_writers_in_one_directory_get_distinct_files(tmp_path):
    with SummaryWriter(tmp_path) as a, SummaryWriter(tmp_path) as b:
        a.add_scalar("x", 1.0, 0)
        b.add_scalar("x", 2.0, 1)
    assert len(event_files(tmp_path)) == 2


def test_default_log_dir_is_torchs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        log_dir = w.log_dir
    host = re.escape(socket.gethostname())
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_%s_lr0\.1" % host, log_dir)
    assert len(event_files(tmp_path / log_dir)) == 1


def test_writer_is_also_at_ug_logging():
    assert ug.logging.SummaryWriter is SummaryWriter is ug.utils.tensorboard.SummaryWriter


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="max_queue"):
        SummaryWriter(tmp_path, max_queue=0)
    with pytest.raises(ValueError, match="flush_secs"):
        SummaryWriter(tmp_path, flush_secs=0)
    (tmp_path / "file").write_text("")
    with pytest.raises(RuntimeError, match="log directory"):
        SummaryWriter(tmp_path / "file" / "sub")
    with SummaryWriter(tmp_path / "ok") as w:
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("h", ug.zeros(0))
        with pytest.raises(ValueError, match="finite"):
            w.add_histogram("h", ug.tensor([1.0, float("nan")]))
        with pytest.raises(ValueError, match="bins"):
            w.add_histogram("h", ug.ones(3), bins="auto")
        with pytest.raises(ValueError, match="increase"):
            w.add_histogram("h", ug.ones(3), bins=[1.0, 0.0])
        with pytest.raises(ValueError, match="within the bin edges"):
            w.add_histogram("h", ug.ones(3), bins=[5.0, 6.0])
        with pytest.raises(TypeError, match="not a number"):
            w.add_scalar("x", "high")
        with pytest.raises(TypeError, match="dict"):
            w.add_scalars("x", [1.0])
        (tmp_path / "ok" / "m_t").write_text("")  # a file where the run directory would go
        with pytest.raises(RuntimeError, match="log directory"):
            w.add_scalars("m", {"t": 1.0})
        w.add_scalar("x", 1.0)
        w.flush()
