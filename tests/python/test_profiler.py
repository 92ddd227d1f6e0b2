"""ug.profiler against torch.profiler: the events are the ops called, self times add up to the
roots, shapes and bytes are recorded, the Chrome trace is valid trace-event JSON with
well-formed nesting, record_function ranges appear, with_stack names this file, the table has
torch's columns, nothing is recorded when off, and profiles do not nest."""
import gzip
import json
import os
import re
import warnings

import pytest
import torch
import unigrad as ug


def mlp(lib, x, weights):
    (w1, b1), (w2, b2) = weights
    return lib.nn.functional.linear(lib.nn.functional.linear(x, w1, b1).relu(), w2, b2)


def weights(lib, sizes=((16, 8), (4, 16)), grad=False):
    gen = torch.Generator().manual_seed(0)
    out = []
    for o, i in sizes:
        w, b = torch.randn(o, i, generator=gen), torch.randn(o, generator=gen)
        out.append(tuple(lib.tensor(t.numpy(), requires_grad=grad) if lib is ug else t.requires_grad_(grad)
                         for t in (w, b)))
    return out


def top_level(prof):
    return [e["name"] for e in sorted((e for e in prof.events() if e["depth"] == 0), key=lambda e: e["start_us"])]


def test_counts_are_the_ops_called():
    ws = weights(ug)
    x = ug.randn(5, 8)
    with ug.profiler.profile() as prof:
        mlp(ug, x, ws).sum()
    assert top_level(prof) == ["linear", "relu", "linear", "sum"]
    counts = {row.key: row.count for row in prof.key_averages()}
    assert counts["linear"] == 2 and counts["relu"] == 1 and counts["sum"] == 1


def test_torch_counts_the_same_linear_calls():
    ws_ug, ws_t = weights(ug, grad=True), weights(torch, grad=True)
    x = ug.randn(5, 8)
    with ug.profiler.profile() as prof:
        mlp(ug, x, ws_ug).sum().backward()
    with torch.profiler.profile() as tprof:
        mlp(torch, torch.tensor(x.numpy()), ws_t).sum().backward()
    ours = {row.key: row.count for row in prof.key_averages()}
    theirs = {row.key: row.count for row in tprof.key_averages()}
    assert ours["linear"] == theirs["aten::linear"] == 2
    assert ours["relu"] == theirs["aten::relu"] == 1


def test_self_times_add_up_to_the_roots():
    ws = weights(ug, grad=True)
    x = ug.randn(32, 8)
    with ug.profiler.profile() as prof:
        with ug.profiler.record_function("step"):
            mlp(ug, x, ws).pow(2).mean().backward()
    rows = prof.key_averages()
    roots = sum(e["end_us"] - e["start_us"] for e in prof.events() if e["depth"] == 0)
    assert sum(r.self_cpu_time_total for r in rows) == pytest.approx(roots, rel=1e-9, abs=1e-3)
    assert rows.self_cpu_time_total == pytest.approx(roots, rel=1e-9, abs=1e-3)
    for r in rows:
        assert 0 <= r.self_cpu_time_total <= r.cpu_time_total + 1e-9
        assert r.cpu_time == pytest.approx(r.cpu_time_total / r.count)
    step = next(r for r in rows if r.key == "step")
    assert step.count == 1 and step.cpu_time_total == pytest.approx(roots)


def test_compiled_steps_time_their_optimizer():
    """A compiled step's optimizer runs as an op of the program: the PyTorch-style step (opt.step()
    under ug.compile) and the functional one (update under ug.jit), donated or not, each list it
    once per parameter update with the parameters' shapes."""
    model = ug.nn.Linear(8, 4)
    opt = ug.optim.Adam(model.parameters(), lr=1e-3)
    x = ug.randn(5, 8)

    @ug.compile
    def step(x):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()

    params = dict(model.named_parameters())
    state = opt.init(params)

    def functional(params, state, x):
        grads = ug.grad(lambda p: ug.func.functional_call(model, p, (x,)).square().mean())(params)
        updates, state = opt.update(grads, state, params)
        return ug.optim.apply_updates(params, updates), state

    plain, donating = ug.jit(functional), ug.jit(functional, donate_argnums=(0, 1))
    copy = lambda tree: ug.tree_map(lambda t: t.clone(), tree)  # noqa: E731
    for _ in range(2):  # the first call traces (and runs the first step eagerly)
        step(x)
        params, state = plain(params, state, x)
        params, state = donating(copy(params), copy(state), x)
    for run, name, count in ((lambda: step(x), "optimizer_step", 1),
                             (lambda: plain(params, state, x), "optimizer_update", 2),
                             (lambda: donating(copy(params), copy(state), x), "optimizer_update", 2)):
        with ug.profiler.profile(record_shapes=True) as prof:
            run()
        assert sum(r.count for r in prof.key_averages() if r.key == name) == count, name
        shapes = [e["input_shapes"][0] for e in prof.events() if e["name"] == name]
        assert sorted(shapes) == [[4], [4, 8]] if count == 2 else shapes == [[4, 8]], shapes


def test_shapes_dtypes_and_bytes():
    a, big = ug.randn(3, 4), ug.randn(256, 128)
    with ug.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        ug.matmul(a, a.t())
        kept = big.exp()  # noqa: F841  (its 128 KiB outlive the call)
    events = {e["name"]: e for e in prof.events() if e["depth"] == 0}
    assert events["matmul"]["input_shapes"] == [[3, 4], [4, 3]]
    assert events["matmul"]["input_dtypes"] == ["float32", "float32"]
    assert events["exp"]["bytes"] == 256 * 128 * 4
    rows = prof.key_averages(group_by_input_shape=True)
    assert [[3, 4], [4, 3]] in [r.input_shapes for r in rows if r.key == "matmul"]
    exp = next(r for r in rows if r.key == "exp")
    assert exp.cpu_memory_usage == 256 * 128 * 4


def test_table_has_torchs_columns():
    x = ug.randn(4, 4)
    with ug.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        x.exp().sum()
    with torch.profiler.profile(record_shapes=True, profile_memory=True) as tprof:
        torch.randn(4, 4).exp().sum()

    def header(table):
        return re.split(r"\s{2,}", table.splitlines()[1].strip())
    for group in (False, True):
        ours = prof.key_averages(group_by_input_shape=group).table(sort_by="cpu_time_total", row_limit=5)
        theirs = tprof.key_averages(group_by_input_shape=group).table(sort_by="cpu_time_total", row_limit=5)
        assert header(ours) == header(theirs)
        assert ours.splitlines()[-1].startswith("Self CPU time total: ")
    table = prof.key_averages().table(sort_by="count", row_limit=1)
    assert len(table.splitlines()) == 6  # rule, header, rule, one row, rule, total
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="flops")


def test_chrome_trace_is_trace_event_json(tmp_path):
    x = ug.randn(6, 6, requires_grad=True)
    with ug.profiler.profile(record_shapes=True, with_stack=True) as prof:
        with ug.profiler.record_function("forward"):
            y = (x * x).exp().sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    types = {"ph": str, "name": str, "cat": str, "pid": int, "tid": int, "ts": (int, float), "dur": (int, float),
             "args": dict}
    open_by_thread = {}
    for e in events:
        for key, kind in types.items():
            assert isinstance(e[key], kind), (key, e)
        assert e["ph"] == "X" and e["dur"] >= 0
        stack = open_by_thread.setdefault(e["tid"], [])
        # ts is monotonic per thread, and each event lies inside those still open: well nested.
        assert not stack or e["ts"] >= stack[-1][0]
        while stack and e["ts"] >= stack[-1][1]:
            stack.pop()
        if stack:
            assert e["ts"] + e["dur"] <= stack[-1][1] + 1e-3
        stack.append((e["ts"], e["ts"] + e["dur"]))
        assert isinstance(e["args"]["Input Dims"], list) and isinstance(e["args"]["Input type"], list)
    forward = [e for e in events if e["name"] == "forward"]
    assert len(forward) == 1 and forward[0]["cat"] == "user_annotation"
    mul = next(e for e in events if e["name"] == "mul")
    assert mul["args"]["Input Dims"] == [[6, 6], [6, 6]]
    assert "test_profiler.py" in mul["args"]["Call stack"]


def test_with_stack_names_the_calling_line():
    x = ug.randn(3)
    with ug.profiler.profile(with_stack=True) as prof:
        x.exp()  # the line the event names
    (exp,) = [e for e in prof.events() if e["name"] == "exp"]
    assert "x.exp()  # the line the event names" in exp["stack"]
    with ug.profiler.profile() as prof:
        x.exp()
    assert all(e["stack"] == "" for e in prof.events())


def test_record_function_as_decorator_and_off():
    @ug.profiler.record_function("my_step")
    def step(x):
        return x.exp()

    x = ug.randn(3)
    step(x)  # no profiler: nothing recorded, nothing raised
    with ug.profiler.profile() as prof:
        step(x)
    names = [e["name"] for e in prof.events()]
    assert names.count("my_step") == 1
    ranged = next(e for e in prof.events() if e["name"] == "my_step")
    exp = next(e for e in prof.events() if e["name"] == "exp")
    assert ranged["depth"] == 0 and exp["depth"] == 1
    assert ranged["start_us"] <= exp["start_us"] and exp["end_us"] <= ranged["end_us"]
    step(x)
    with ug.profiler.profile() as prof:
        pass
    assert prof.events() == []


def test_errors():
    with ug.profiler.profile():
        with pytest.raises(RuntimeError, match="already running"):
            with ug.profiler.profile():
                pass
    prof = ug.profiler.profile()
    with pytest.raises(RuntimeError, match="not run to its end"):
        prof.key_averages()
    with pytest.raises(ValueError, match="activities"):
        ug.profiler.profile(activities=["gpu"])
    with ug.profiler.profile() as prof:
        pass
    with pytest.raises(ValueError, match="record_shapes"):
        prof.key_averages(group_by_input_shape=True)
    x = ug.randn(2)
    with ug.profiler.profile(activities=[ug.profiler.ProfilerActivity.CPU]) as prof:
        x.exp()
    assert top_level(prof) == ["exp"]


def test_ug_train_profile_writes_a_trace_of_five_steps(tmp_path):
    import os
    import subprocess

    import numpy as np
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    program = os.environ.get("UG_CLI", os.path.join(root, "build", "cli", "ug"))
    rng = np.random.default_rng(0)
    data = []
    for split, n in (("train", 640), ("test", 100)):
        for kind, array in (("images", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
                            ("labels", rng.integers(0, 10, n).astype(np.int64))):
            np.save(tmp_path / f"{split}-{kind}.npy", array)
            data += [f"--{split}-{kind}", str(tmp_path / f"{split}-{kind}.npy")]
    trace_path = tmp_path / "trace.json"
    r = subprocess.run([program, "train", *data, "--epochs", "1", "--out", str(tmp_path / "run"), "--verbose", "0",
                        "--profile", str(trace_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    events = json.loads(trace_path.read_text())["traceEvents"]
    # The MLP (784-128-10) runs two linear layers forward per step, and the profile holds five steps.
    linear_inputs = [e["args"]["Input Dims"][0] for e in events if e["name"] == "linear"]
    assert len(linear_inputs) == 2 * 5
    assert linear_inputs[0] == [64, 784]


def _cycles(m, prof_mod, steps, **kwargs):
    """The step ranges each recorded cycle holds, as on_trace_ready receives the cycles."""
    cycles = []

    def ready(p):
        names = {e.key for e in p.key_averages() if e.key.startswith("step")}
        cycles.append(sorted(names, key=lambda n: int(n[4:])))

    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU], schedule=prof_mod.schedule(**kwargs),
                          on_trace_ready=ready) as p:
        for i in range(steps):
            with prof_mod.record_function(f"step{i}"):
                m.ones(2) * 2
            p.step()
    return cycles


@pytest.mark.parametrize("kwargs", [dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
                                    dict(wait=0, warmup=0, active=3), dict(wait=2, warmup=0, active=1)])
def test_a_schedule_records_the_steps_torchs_records(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _cycles(torch, torch.profiler, 12, **kwargs)
    assert _cycles(ug, ug.profiler, 12, **kwargs) == want


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler_writes_each_cycle(tmp_path, use_gzip):
    handler = ug.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0", use_gzip=use_gzip)
    with ug.profiler.profile(schedule=ug.profiler.schedule(wait=1, warmup=0, active=1, repeat=2),
                             on_trace_ready=handler) as p:
        for _ in range(5):
            ug.ones(3).exp()
            p.step()
    files = sorted(os.listdir(tmp_path))
    suffix = ".pt.trace.json.gz" if use_gzip else ".pt.trace.json"
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(suffix) for f in files), files
    opener = gzip.open if use_gzip else open
    with opener(tmp_path / files[0], "rt") as f:
        assert any(e.get("name") == "exp" for e in json.load(f)["traceEvents"])


def test_the_autograd_profiler_spelling():
    with ug.autograd.profiler.profile(record_shapes=True) as prof:
        with ug.autograd.profiler.record_function("block"):
            ug.ones(4, 4).matmul(ug.ones(4, 4))
    assert "matmul" in prof.table(sort_by="cpu_time_total") and "block" in prof.table()
    with ug.autograd.profiler.profile(enabled=False) as off:
        ug.ones(2).exp()
    with pytest.raises(RuntimeError, match="has not run"):
        off.key_averages()
    with pytest.raises(ValueError, match="only the CPU"):
        ug.autograd.profiler.profile(use_cuda=True)
