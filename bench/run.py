#!/usr/bin/env python3
"""Runs unigrad's benchmarks and the PyTorch peers side by side, in one run on one machine,
and prints a Markdown table of unigrad against torch's fastest thread configuration.

    .venv/bin/python bench/run.py                  # full run, ~10 min on 2 cores
    .venv/bin/python bench/run.py --quick          # small sizes, one repetition, ~1-2 min
    .venv/bin/python bench/run.py --write-docs     # also put the table in docs/benchmarks.md

What runs, REPEAT times (each figure is then the median over the repetitions):
  - the peers in ../shared/bench/peers (op_overhead, elementwise, gemm, machine_baseline,
    cnn_train, transformer_step, mlp_train_epoch, infer_latency, startup_and_memory), with this
    Python's torch, in the three thread configurations the peers' README asks for;
  - bench/py/*.py, the same workloads through `import unigrad as ug`, on all cores;
  - the C++ ug_bench (Google Benchmark), on all cores;
  - `ug --version` (build*/cli/ug), started many times: the start-up time.
"""
import argparse
import glob
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "bench" / "peers"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench/run.py:begin -->", "<!-- bench/run.py:end -->"

PEER_SCRIPTS = ("op_overhead.py", "elementwise.py", "gemm.py", "machine_baseline.py", "cnn_train.py",
                "transformer_step.py", "mlp_train_epoch.py", "infer_latency.py", "startup_and_memory.py")
UG_SCRIPTS = ("op_overhead.py", "elementwise.py", "gemm.py", "cnn_train.py", "transformer_step.py",
              "mlp_train_epoch.py", "infer_latency.py", "dataloader.py")
# The configurations of the peers' README: on 2 cores, torch's and OpenBLAS's spinning
# pools fight, so the fastest configuration differs between workloads.
TORCH_CONFIGS = {
    "1 thr": ["--threads", "1"],
    "2 thr, BLAS 1": ["--threads", "2", "--blas-threads", "1"],
    "2 thr": ["--threads", "2"],
}
UG_CONFIG = "all cores"

# ug_bench's benchmark names -> the (bench, case) of the same workload in the peers' lines.
CPP_CASES = {
    "add_1elem": ("op_overhead", "add_1elem"),
    "autograd_1elem": ("op_overhead", "autograd_1elem"),
    "autograd_1elem_fresh": ("op_overhead", "autograd_1elem_fresh"),
    "add_16M_fresh": ("elementwise", "add_alloc"),
    "exp_16M_fresh": ("elementwise", "exp_alloc"),
    "exp_16M_out": ("elementwise", "exp_out"),
    "memcpy_16M": ("memcpy", "memcpy_16M"),
    "mlp_train_step": ("mlp_train_step", ""),
}
ELEMS = 16 * 1024 * 1024
CPP_BYTES = {"add_alloc": 3 * 4 * ELEMS, "exp_alloc": 2 * 4 * ELEMS, "exp_out": 2 * 4 * ELEMS}
GEMM_SIZES = (256, 512, 1024, 2048)
# `ug --version` is started this many times (quick: fewer); its figure is the median.
STARTS, QUICK_STARTS = 101, 21
# One epoch's test accuracy moves with the seed: over seeds 0-7 the standard deviation was
# 0.007 for both torch and unigrad (same workload, different random streams), so "at least
# torch's" allows three of them.
ACCURACY_NOISE = 0.021


# ---- running ------------------------------------------------------------------------------

def _cpu_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_process(cmd, env=None):
    """Runs cmd; returns (stdout, cores' worth of CPU that other processes used meanwhile).
    A failing command is reported on stderr and the run goes on: one broken benchmark
    should not lose the others' figures."""
    print("+ " + " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    t0, busy0, own0 = time.perf_counter(), _cpu_busy(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    other = max(0.0, (_cpu_busy() - busy0) - (_children_cpu() - own0)) / wall
    if proc.returncode != 0:
        print(f"  failed with status {proc.returncode}:\n{proc.stderr.strip()}", file=sys.stderr)
    return proc.stdout, other


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_scripts(python, folder, scripts, args, config, rep, env=None):
    records = []
    for script in scripts:
        out, other = run_process([python, str(folder / script), *args], env)
        for r in json_lines(out):
            r.update(config=config, rep=rep, run_other_cpu=other, measured_at=time.time())
            records.append(r)
    return records


def run_ug_bench(binary, quick, rep):
    cmd = [binary, "--benchmark_format=json"]
    if quick:
        cmd.append("--benchmark_min_time=0.05")
    out, other = run_process(cmd)
    if not out.strip():
        return []
    data = json.loads(out)
    threads = int(data["context"].get("ug_threads", 0))
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    records = []
    for b in data["benchmarks"]:
        name = b["run_name"].split("/")
        if name[0] == "gemm":
            bench, case = "gemm", f"n{name[1]}"
        elif name[0] == "mlp_infer":
            bench, case = "infer_latency", f"batch{name[1]}"
        else:
            bench, case = CPP_CASES[name[0]]
        extra = {"case": case, "quick": quick}
        if bench == "elementwise":
            extra["bytes"] = CPP_BYTES[case]
        elif bench == "memcpy":
            extra["bytes_moved"] = 2 * 4 * ELEMS
        # Per-call medians where the benchmark times each call (as the peers do), else the mean.
        seconds = b["us_median"] * 1e-6 if "us_median" in b else b["real_time"] * scale[b["time_unit"]]
        records.append({"bench": bench, "impl": "unigrad-cpp", "threads": threads,
                        "seconds": seconds, "extra": extra,
                        "config": UG_CONFIG, "rep": rep, "run_other_cpu": other,
                        "measured_at": time.time()})
    return records


def run_startup(binary, quick, rep):
    """The median wall time of `ug --version`, started again and again."""
    cmd = [binary, "--version"]
    print("+ " + " ".join(cmd) + f"  (x{QUICK_STARTS if quick else STARTS})", file=sys.stderr, flush=True)
    t_start, busy0, own0 = time.perf_counter(), _cpu_busy(), _children_cpu()
    times = []
    for _ in range(QUICK_STARTS if quick else STARTS):
        t0 = time.perf_counter()
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            print(f"  {binary} --version failed", file=sys.stderr)
            return []
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_start
    other = max(0.0, (_cpu_busy() - busy0) - (_children_cpu() - own0)) / wall
    return [{"bench": "startup", "impl": "unigrad-cpp", "threads": 1, "seconds": statistics.median(times),
             "extra": {"case": "ug_version", "quick": quick, "runs": len(times), "min_s": min(times)},
             "config": UG_CONFIG, "rep": rep, "run_other_cpu": other, "measured_at": time.time()}]


def find_built(path):
    """The most recently built program at build*/<path> in the checkout (ug_bench, ug)."""
    found = glob.glob(str(ROOT / "build*" / path))
    return max(found, key=os.path.getmtime) if found else None


def ug_env():
    """The environment that imports the checkout's unigrad, installed or not."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)
    return env


def run_all(args):
    python = sys.executable
    env = ug_env()
    ug_importable = subprocess.run([python, "-c", "import unigrad"], env=env,
                                   capture_output=True).returncode == 0
    if not ug_importable:
        print("note: `import unigrad` fails; skipping unigrad's Python benchmarks",
              file=sys.stderr)
    ug_bench = args.ug_bench or find_built("bench/ug_bench")
    if not ug_bench:
        print("note: no ug_bench binary found (build the ug_bench target); skipping it",
              file=sys.stderr)
    ug_cli = args.ug or find_built("cli/ug")
    if not ug_cli:
        print("note: no ug program found (build the ug target); skipping its start-up time",
              file=sys.stderr)
    quick = ["--quick"] if args.quick else []
    threads = ["--threads", str(os.cpu_count())]
    records = []
    for rep in range(args.repeat):
        for config, flags in TORCH_CONFIGS.items():
            records += run_scripts(python, PEERS, PEER_SCRIPTS, flags + quick, config, rep)
        if ug_importable:
            records += run_scripts(python, ROOT / "bench" / "py", UG_SCRIPTS, threads + quick,
                                   UG_CONFIG, rep, env)
        if ug_bench:
            records += run_ug_bench(ug_bench, args.quick, rep)
        if ug_cli:
            records += run_startup(ug_cli, args.quick, rep)
    return records


# ---- summarising --------------------------------------------------------------------------

def rate(bench, case, seconds, extra):
    """A figure in the unit people read it in: (value, unit, higher is better)."""
    if case == "test_accuracy":
        return extra["test_accuracy"], "accuracy", True
    if case in ("peak_rss", "mlp_peak_rss"):
        return extra["peak_rss_mb"], "MiB", False
    if bench == "op_overhead":
        return seconds * 1e6, "µs", False
    if bench == "elementwise":
        return extra["bytes"] / seconds / 1e9, "GB/s", True
    if bench == "memcpy":
        return extra["bytes_moved"] / seconds / 1e9, "GB/s", True
    if bench == "gemm":
        return 2 * int(case[1:]) ** 3 / seconds / 1e9, "GFLOP/s", True
    if bench == "cnn_train":
        return seconds / extra["steps"] * 1e3, "ms/step", False
    if bench == "transformer_step":
        return seconds * 1e3, "ms/step", False
    if bench == "mlp_train_epoch":
        return seconds, "s", False
    if bench == "dataloader":
        return extra["images_per_s"], "images/s", True
    if bench == "mlp_train_step":
        return seconds * 1e6, "µs/step", False
    if bench == "infer_latency":
        return seconds * 1e6, "µs", False
    if bench in ("startup", "startup_and_memory"):
        return seconds * 1e3, "ms", False
    raise ValueError(bench)


def derived(records):
    """The epoch runs' second and third figures as records of their own: test accuracy and
    peak RSS (a case of mlp_train_epoch each)."""
    out = []
    for r in records:
        if r["bench"] == "mlp_train_epoch" and not r["extra"].get("case"):
            for case in ("test_accuracy", "peak_rss"):
                out.append(dict(r, extra=dict(r["extra"], case=case)))
    return out


class Figures:
    """Medians over repetitions, keyed by (bench, case, impl, config)."""

    def __init__(self, records):
        groups = defaultdict(list)
        for r in records + derived(records):
            groups[(r["bench"], r["extra"].get("case", ""), r["impl"], r["config"])].append(r)
        self.fig = {}
        for key, runs in groups.items():
            rates = [rate(key[0], key[1], r["seconds"], r["extra"]) for r in runs]
            self.fig[key] = {"value": statistics.median(v for v, _, _ in rates), "unit": rates[0][1],
                             "higher": rates[0][2], "n": len(runs),
                             "other": max(r["run_other_cpu"] for r in runs)}

    def get(self, bench, case, impl, config=UG_CONFIG):
        return self.fig.get((bench, case, impl, config))

    def best(self, bench, case, impl):
        """The figure of the fastest configuration, and that configuration."""
        found = [(f, k[3]) for k, f in self.fig.items() if k[:3] == (bench, case, impl)]
        if not found:
            return None, None
        pick = max if found[0][0]["higher"] else min
        return pick(found, key=lambda fc: fc[0]["value"])

    def memcpy(self):
        """The fastest memcpy measured in this run, the bandwidth ceiling of add and exp:
        (GB/s, what measured it), or (None, None)."""
        copies = [(f["value"], f"{k[2]} {k[1]}, {k[3]}") for k, f in self.fig.items()
                  if k[0] == "memcpy"]
        return max(copies) if copies else (None, None)


def speedup(ug, torch):
    """How many times faster unigrad is (> 1: unigrad is faster)."""
    return ug["value"] / torch["value"] if ug["higher"] else torch["value"] / ug["value"]


# Each target: (text, test(unigrad figure, torch's best figure, memcpy GB/s) -> bool).
VS_MEMCPY = ("≥ 0.9× memcpy", lambda u, t, m: m is not None and u["value"] >= 0.9 * m)
VS_TORCH_GEMM = ("≥ 0.95× torch", lambda u, t, m: t is not None and speedup(u, t) >= 0.95)


def at_most(fraction, what="torch"):
    """unigrad's figure (lower is better) at most `fraction` of torch's."""
    return (f"≤ {fraction:g}× {what}", lambda u, t, m: t is not None and u["value"] <= fraction * t["value"])


def rows_for(impl, where):
    """(label, bench, case, impl, torch's counterpart, targets); the counterpart is True (the
    same bench and case), a (bench, case) of the peers' lines, or False (none). Rows without a
    figure are left out of the table (ug_bench has no out= add, for one)."""
    autograd = "1-element (a*b + c).sum().backward(), "
    if impl == "unigrad-python":
        overhead = [
            ("1-element a + b, " + where, "op_overhead", "add_1elem", impl, True,
             [("≤ 0.5× torch time", lambda u, t, m: t is not None and speedup(u, t) >= 2)]),
            (autograd + "leaves made once, " + where, "op_overhead", "autograd_1elem", impl, True,
             [("≤ 0.3× torch time", lambda u, t, m: t is not None and speedup(u, t) >= 1 / 0.3)]),
            (autograd + "fresh leaves, " + where, "op_overhead", "autograd_1elem_fresh", impl, True,
             []),
        ]
    else:  # C++ against Python would say nothing: the targets are absolute
        overhead = [
            ("1-element a + b, " + where, "op_overhead", "add_1elem", impl, False,
             [("≤ 0.15 µs", lambda u, t, m: u["value"] <= 0.15)]),
            # Four ops an iteration (mul, add, sum, backward), each at most 1 µs.
            (autograd + "leaves made once, " + where, "op_overhead", "autograd_1elem", impl, False,
             [("≤ 4 µs (1 µs/op)", lambda u, t, m: u["value"] <= 4)]),
            (autograd + "fresh leaves, " + where, "op_overhead", "autograd_1elem_fresh", impl,
             False, []),
        ]
    mlp = "MLP 784-128-10 (Adam, batch 64, Fashion-MNIST), "
    infer = "MLP 784-128-10 forward under no_grad, "
    if impl == "unigrad-python":
        training = [
            (mlp + "one training epoch, " + where, "mlp_train_epoch", "", impl, True,
             [at_most(0.5, "torch time")]),
            (mlp + "test accuracy after the epoch, " + where, "mlp_train_epoch", "test_accuracy", impl, True,
             [(f"≥ torch − {ACCURACY_NOISE} (seed noise)",
               lambda u, t, m: t is not None and u["value"] >= t["value"] - ACCURACY_NOISE)]),
            (mlp + "peak RSS of the epoch's process, " + where, "mlp_train_epoch", "peak_rss", impl,
             ("startup_and_memory", "mlp_peak_rss"), [at_most(0.5)]),
            ("LeNet training step (forward, backward, SGD), batch 64, " + where, "cnn_train", "", impl, True,
             [("≤ 0.8× torch time", lambda u, t, m: t is not None and speedup(u, t) >= 1 / 0.8)]),
            ("Transformer encoder block step (forward, backward, AdamW), " + where, "transformer_step", "", impl,
             True, [("≤ 0.8× torch time", lambda u, t, m: t is not None and speedup(u, t) >= 1 / 0.8)]),
            ("DataLoader, Fashion-MNIST epoch, shuffled, batch 64, 2 worker threads, normalised, " + where,
             "dataloader", "fashion_mnist_b64_w2", impl, False,
             [("≥ 50,000 images/s", lambda u, t, m: u["value"] >= 50000)]),
            (infer + "batch 1, " + where, "infer_latency", "batch1", impl, True, []),
            (infer + "batch 256, " + where, "infer_latency", "batch256", impl, True, []),
        ]
    else:
        training = [
            ("`ug --version` start-up against `python -c 'import torch'`", "startup", "ug_version", impl,
             ("startup_and_memory", "import_torch"), [at_most(0.01)]),
            (infer + "batch 1, " + where, "infer_latency", "batch1", impl, False,
             [("≤ 10 µs", lambda u, t, m: u["value"] <= 10)]),
            (infer + "batch 256, " + where, "infer_latency", "batch256", impl, False, []),
            (mlp + "training step, random data, " + where, "mlp_train_step", "", impl, False, []),
        ]
    return [
        *overhead,
        *training,
        ("64×64 a @ b, " + where, "op_overhead", "matmul_64", impl, True, []),
        ("a + b, 16M f32, fresh output, " + where, "elementwise", "add_alloc", impl, True,
         [("≥ 3× torch", lambda u, t, m: t is not None and speedup(u, t) >= 3), VS_MEMCPY]),
        ("a + b, 16M f32, out=, " + where, "elementwise", "add_out", impl, True, [VS_MEMCPY]),
        ("exp(a), 16M f32, fresh output, " + where, "elementwise", "exp_alloc", impl, True,
         [VS_MEMCPY]),
        ("exp(a), 16M f32, out=, " + where, "elementwise", "exp_out", impl, True, [VS_MEMCPY]),
    ] + [(f"GEMM n={n}, " + where, "gemm", f"n{n}", impl, True, [VS_TORCH_GEMM])
         for n in GEMM_SIZES]


ROWS = rows_for("unigrad-python", "Python") + rows_for("unigrad-cpp", "C++")


def fmt(x):
    return "—" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"


def comparison_table(figs):
    memcpy, _ = figs.memcpy()
    lines = ["| workload | unit | unigrad | torch, fastest config | unigrad speed-up | × memcpy "
             "| target | met | other CPU (cores) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, bench, case, impl, compare, targets in ROWS:
        u = figs.get(bench, case, impl)
        if u is None:
            continue
        peer = (bench, case) if compare is True else compare
        t, config = figs.best(*peer, "torch-python") if peer else (None, None)
        torch_cell = f"{fmt(t['value'])} ({config})" if t else "—"
        up = f"{speedup(u, t):.2f}×" if t else "—"
        vs_memcpy = f"{u['value'] / memcpy:.2f}" if bench == "elementwise" and memcpy else "—"
        target = "; ".join(text for text, _ in targets) or "—"
        met = "; ".join("yes" if test(u, t, memcpy) else "**no**" for _, test in targets) or "—"
        other = max(u["other"], t["other"]) if t else u["other"]
        lines.append(f"| {label} | {u['unit']} | {fmt(u['value'])} | {torch_cell} | {up} "
                     f"| {vs_memcpy} | {target} | {met} | {other:.2f} |")
    return lines


def torch_table(figs):
    """The peer figures the comparison uses, per thread configuration, so that the choice of
    the fastest one shows."""
    def order(key):  # gemm n256 before n1024
        bench, case, impl = key
        return bench, impl != "torch-python", int(case[1:]) if bench == "gemm" else 0, case
    used = {(row[1], row[2]) for row in ROWS} | {row[4] for row in ROWS if isinstance(row[4], tuple)}
    keys = sorted({k[:3] for k in figs.fig if k[2] in ("torch-python", "numpy")
                   and ((k[0], k[1]) in used or k[0] == "memcpy")}, key=order)
    configs = list(TORCH_CONFIGS)
    lines = ["| bench | case | impl | unit | " + " | ".join(configs) + " |",
             "|---|---|---|---|" + "---|" * len(configs)]
    for bench, case, impl in keys:
        cells = [figs.get(bench, case, impl, c) for c in configs]
        unit = next(c["unit"] for c in cells if c)
        lines.append(f"| {bench} | {case} | {impl} | {unit} | "
                     + " | ".join(fmt(c["value"]) if c else "—" for c in cells) + " |")
    return lines


def versions(python):
    def ask(code, env=None):
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
        return p.stdout.strip() or "not importable"
    return {
        "torch": ask("import torch; print(torch.__version__)"),
        "unigrad": ask("import unigrad; print(unigrad.__version__)", ug_env()),
    }


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def noise_warning(figs):
    worst = max(f["other"] for f in figs.fig.values())
    if worst <= 0.3:
        return []
    return [f"**Noisy run:** other processes used up to {worst:.2f} cores while figures were "
            "measured; rerun on a quiet machine before drawing conclusions.", ""]


def report(records):
    figs = Figures(records)
    quick = any(r["extra"].get("quick") for r in records)
    v = versions(sys.executable)
    reps = max((r["rep"] for r in records), default=-1) + 1
    memcpy, memcpy_source = figs.memcpy()
    start = datetime.fromtimestamp(min(r["measured_at"] for r in records), timezone.utc)
    out = [
        f"Measured {start:%Y-%m-%d %H:%M} UTC on {cpu_model()}, "
        f"{os.cpu_count()} cores; Python {platform.python_version()}, torch {v['torch']}, "
        f"unigrad (Python) {v['unigrad']}. "
        f"{reps} repetition(s){', quick sizes' if quick else ''}; "
        "every figure is the median over the repetitions.",
        "",
        f"unigrad runs on all {os.cpu_count()} cores; torch's figure is its fastest of the "
        f"configurations {', '.join(TORCH_CONFIGS)}. \"× memcpy\" divides by the fastest memcpy "
        f"of the run ({fmt(memcpy)} GB/s, bytes read + written: {memcpy_source}). "
        "\"other CPU\" is the most CPU other processes used while a figure was measured; "
        "above about 0.3 the row is noisy.",
        "",
        *noise_warning(figs),
        *comparison_table(figs),
        "",
        "PyTorch peers per thread configuration (medians):",
        "",
        *torch_table(figs),
    ]
    return "\n".join(out) + "\n"


def write_docs(text, begin=BEGIN, end=END):
    """Replaces what docs/benchmarks.md holds between the markers `begin` and `end` with text."""
    doc = DOCS.read_text()
    first, last = doc.find(begin), doc.find(end)
    if first < 0 or last < first:
        sys.exit(f"{DOCS} lacks the markers {begin} ... {end}")
    DOCS.write_text(doc[:first + len(begin)] + "\n" + text + doc[last:])
    print(f"wrote {DOCS.relative_to(ROOT)}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small sizes and, unless --repeat says otherwise, one repetition")
    p.add_argument("--repeat", type=int, default=None,
                   help="repetitions; the default is $REPEAT or 3 (1 with --quick)")
    p.add_argument("--write-docs", action="store_true",
                   help=f"replace the results section of {DOCS.relative_to(ROOT)}")
    p.add_argument("--ug-bench", help="the ug_bench binary (default: newest build*/bench/ug_bench)")
    p.add_argument("--ug", help="the ug program whose start-up is timed (default: newest build*/cli/ug)")
    p.add_argument("--raw", help="also save every measurement, one JSON line each, to this file")
    p.add_argument("--load", help="summarise a file saved with --raw (on this machine) "
                   "instead of running")
    args = p.parse_args()
    if args.repeat is None:
        args.repeat = int(os.environ.get("REPEAT", 1 if args.quick else 3))
    if args.repeat < 1:
        p.error("--repeat must be at least 1")

    if args.load:
        with open(args.load) as f:
            records = json_lines(f.read())
    else:
        records = run_all(args)
    if args.raw:
        with open(args.raw, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    if not records:
        sys.exit("no measurements: every benchmark failed")
    text = report(records)
    print(text)
    if args.write_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
