"""Memory tools: the summary's figures, torch's and TensorFlow's names, and the memory limit
that turns an allocation too many into a clear error instead of the process being killed."""
import re

import pytest

import unigrad as ug


def summary_row(text, name):
    """The cells of a row of memory_summary as strings."""
    line = next(row for row in text.splitlines() if row.strip("| ").startswith(name))
    return [cell.strip() for cell in line.strip("|").split("|")[1:]]


def test_summary_reports_current_peak_and_totals():
    ug.memory.reset_peak()
    before = ug.memory.stats()
    x = ug.empty(1024, 1024)  # 4 MiB
    text = ug.memory.summary()
    assert "unigrad memory summary, device cpu" in text
    assert summary_row(text, "Metric") == ["Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"]
    cur, peak, total, freed = summary_row(text, "Allocated memory")
    stats = ug.memory.stats()
    # Sizes are written in KiB while the peak stays below 768 MiB, as torch writes them.
    assert cur == f"{stats['allocated'] // 1024} KiB" or cur.endswith("MiB")
    assert stats["allocated"] >= before["allocated"] + (4 << 20)
    assert stats["allocated_total"] >= before["allocated_total"] + (4 << 20)
    count = summary_row(text, "Allocations")
    assert int(count[0]) == stats["num_allocs"] - stats["num_frees"]
    del x
    assert ug.memory.stats()["freed_total"] >= before["freed_total"] + (4 << 20)


def test_torch_and_tensorflow_names():
    ug.memory.reset_peak_memory_stats()
    base = ug.memory.memory_allocated()
    y = ug.empty(256, 1024)  # 1 MiB
    info = ug.memory.get_memory_info("CPU:0")
    assert info == {"current": ug.memory.allocated(), "peak": ug.memory.max_memory_allocated()}
    assert info["peak"] >= base + (1 << 20)
    del y
    ug.memory.reset_memory_stats("CPU:0")
    assert ug.memory.get_memory_info("CPU:0")["peak"] == ug.memory.allocated()
    assert ug.memory.memory_summary().startswith("|")
    # Without CUDA, torch's counters are 0 and its stats empty; a reset has nothing to reset.
    import torch
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats"):
        assert getattr(ug.cuda, name)() == getattr(torch.cuda, name)(), name
    with pytest.raises(RuntimeError, match="not available"):
        ug.cuda.reset_peak_memory_stats()


def test_limit_raises_out_of_memory_naming_op_shape_and_dtype():
    a = ug.randn(512, 512)
    ug.memory.set_limit(ug.memory.allocated() + (64 << 10))
    try:
        assert ug.memory.get_limit() > 0
        small = a[:8] * 2  # 16 KiB fits
        with pytest.raises(ug.OutOfMemoryError, match=re.escape("[mul] out of memory for a float32 tensor of shape "
                                                                "[512, 512]")) as info:
            a * 2
        assert isinstance(info.value, MemoryError) and isinstance(info.value, RuntimeError)
        assert "limit" in str(info.value)
    finally:
        ug.memory.set_limit(0)
    assert (a * 2).shape == (512, 512)
    assert small.shape == (8, 512)
    assert ug.memory.stats()["num_ooms"] >= 1
    assert "Out-of-memory errors: " in ug.memory.summary()
    with pytest.raises(ValueError, match="limit must be >= 0"):
        ug.memory.set_limit(-1)
    ug.memory.set_limit(1 << 40)
    ug.memory.set_limit(None)  # as 0: no limit
    assert ug.memory.get_limit() == 0


def test_limit_is_not_a_crash_inside_a_model():
    model = ug.nn.Sequential(ug.nn.Linear(256, 4096), ug.nn.ReLU(), ug.nn.Linear(4096, 10))
    x = ug.randn(512, 256)
    ug.memory.set_limit(ug.memory.allocated() + (1 << 20))
    try:
        with pytest.raises(ug.OutOfMemoryError, match=r"\[linear\] out of memory for a float32 tensor of shape "
                                                       r"\[512, 4096\]"):
            model(x)
    finally:
        ug.memory.set_limit(0)
    assert model(x).shape == (512, 10)


def test_a_product_keeps_only_what_the_other_gradient_reads():
    """y = a * c keeps c for a's gradient and nothing of a unless c takes a gradient; the
    gradients are those of the product either way."""
    x = ug.randn(256, 1024, requires_grad=True)
    c = ug.randn(256, 1024)
    for other, keeps_a in [(0.5, False), (c, False), (c.clone().requires_grad_(), True)]:
        a = x + 1  # 1 MiB that only the product could keep alive (add keeps nothing)
        y = a * other
        before = ug.memory.allocated()
        del a
        freed = before - ug.memory.allocated()
        assert freed == (0 if keeps_a else 256 * 1024 * 4), other
        y.sum().backward()
        expected = other.detach() if isinstance(other, ug.Tensor) else ug.full((256, 1024), other)
        assert (x.grad - expected).abs().max().item() == 0
        if isinstance(other, ug.Tensor) and other.requires_grad:
            assert (other.grad - (x.detach() + 1)).abs().max().item() == 0
        x.grad = None
