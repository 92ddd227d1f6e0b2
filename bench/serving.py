#!/usr/bin/env python3
"""Serving benchmark: `ug serve` against the FastAPI + uvicorn + torch peer, in one run on one
machine, and the single-sample latency of the served model against onnxruntime.

    /work/main/.venv/bin/python bench/serving.py [--duration 10] [--conns 1 8 64] [--no-access-log]

What runs:
  - the MLP 784-128(ReLU)-10 built with ug.models (random weights: nothing is trained), saved;
  - `ug serve` on it, with --rate 0 (no rate limit: wrk sends everything from one address) and
    its defaults otherwise (1 kernel thread, 1 worker, batches of up to 64);
  - the peer ../shared/bench/peers/serving/serve_fastapi.py (1 torch thread, one uvicorn
    worker), with this Python, which has torch, fastapi and uvicorn;
  - each server in turn, alone: one checked request, a 2 s warm-up, then for each concurrency C
    `wrk -t min(2,C) -cC -dD --latency --timeout 5s -s predict.lua` (the peer's script: the
    same 784-float JSON body every time), as the peer's bench_serving.sh does;
  - single-sample in-process latency: ug_bench's mlp_infer/1 (the same MLP's forward in C++,
    median per call) and onnxruntime's InferenceSession (intra_op_num_threads=1) on the same
    MLP exported by torch.onnx.export(dynamo=False), median per call over repeats.
Both servers keep their access logs on (as deployed) unless --no-access-log; the logs go to
/dev/null. Prints one JSON line per measurement, then a table with the ratios and targets.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path

from run import write_docs  # bench/run.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
# ../shared/bench/peers next to the checkout (or next to one of its parents, for a worktree).
PEER_DIR = next((d / "shared" / "bench" / "peers" / "serving" for d in ROOT.parents
                 if (d / "shared" / "bench" / "peers" / "serving").is_dir()), ROOT.parent / "shared")
LUA = PEER_DIR / "predict.lua"
TARGETS = {"rps_ratio": 10.0, "p99_ratio_c8": 0.2, "single_sample_us": 10.0}


DOCS_MARKERS = ("<!-- serving:begin -->", "<!-- serving:end -->")


def emit(record):
    print(json.dumps(record), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find(path_glob, what):
    hits = sorted(ROOT.glob(path_glob))
    if not hits:
        sys.exit(f"{what} not found ({path_glob}); build it: cmake -B build -DUG_BUILD_BENCH=ON && ninja -C build")
    return hits[0]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Running:
    """A server process on a port, ready once GET /healthz answers; stopped with SIGTERM."""

    def __init__(self, cmd, port):
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"{cmd[0]} exited with {self.proc.returncode} before answering")
            try:
                self.health = json.load(urllib.request.urlopen(self.url + "/healthz", timeout=2))
                return
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"{' '.join(map(str, cmd))} did not answer within 60 s")
                time.sleep(0.1)

    def check(self):
        body = json.dumps({"inputs": [[0.5] * 784]}).encode()
        req = urllib.request.Request(self.url + "/predict", body, {"Content-Type": "application/json"})
        out = json.load(urllib.request.urlopen(req, timeout=10))
        assert set(out) == {"outputs", "predictions"} and len(out["outputs"][0]) == 10, out

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wrk(url, conns, duration):
    cmd = ["wrk", f"-t{min(2, conns)}", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "5s",
           "-s", str(LUA), url + "/predict"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("WRK_JSON "))[len("WRK_JSON "):])


def load_test(impl, server, conns, duration):
    server.check()
    wrk(server.url, 8, 2)  # warm-up
    results = {}
    for c in conns:
        cpu0, t0 = cpu_seconds(server.proc.pid), time.perf_counter()
        w = wrk(server.url, c, duration)
        wall = time.perf_counter() - t0
        seconds = w["duration_us"] / 1e6
        lat = {k: v / 1000.0 for k, v in w["latency_us"].items()}
        results[c] = {
            "bench": "serving", "impl": impl, "case": f"c{c}", "connections": c, "wrk_threads": min(2, c),
            "duration_s": round(seconds, 2), "requests": w["requests"],
            "requests_per_s": round(w["requests"] / seconds, 1),
            "p50_ms": lat["p50"], "p90_ms": lat["p90"], "p99_ms": lat["p99"], "max_ms": lat["max"],
            "errors": w["errors"], "errors_total": sum(w["errors"].values()),
            "server_cpu_cores": round((cpu_seconds(server.proc.pid) - cpu0) / wall, 2),
            "nproc": os.cpu_count(),
        }
        emit(results[c])
    return results


def ug_single_sample_us(ug_bench, repeats):
    out = subprocess.run([str(ug_bench), "--benchmark_filter=^mlp_infer/1/", f"--benchmark_repetitions={repeats}",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    return statistics.median(b["us_median"] for b in runs)


def onnxruntime_single_sample_us(workdir, repeats):
    import numpy as np
    import onnxruntime as ort
    import torch
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
    path = str(workdir / "mlp.onnx")
    warnings.filterwarnings("ignore", "You are using the legacy TorchScript-based ONNX export")
    torch.onnx.export(mlp, (torch.zeros(1, 784),), path, dynamo=False, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    x = {"input": np.random.default_rng(0).random((1, 784), dtype=np.float32)}
    medians = []
    for _ in range(repeats):
        for _ in range(200):
            session.run(None, x)
        times = []
        for _ in range(5000):
            t0 = time.perf_counter()
            session.run(None, x)
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times) * 1e6)
    return statistics.median(medians), ort.__version__


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=int, default=10, help="seconds of wrk per concurrency (default 10)")
    p.add_argument("--conns", type=int, nargs="+", default=[1, 8, 64], help="concurrencies (default 1 8 64)")
    p.add_argument("--repeats", type=int, default=5, help="repeats of the single-sample timings (default 5)")
    p.add_argument("--no-access-log", action="store_true", help="turn both servers' access logs off")
    p.add_argument("--ug", default=None, help="the ug program (default build*/cli/ug)")
    p.add_argument("--write-docs", action="store_true",
                   help="also write the table into docs/benchmarks.md between the serving markers")
    args = p.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk not found (apt-get install -y wrk)")
    ug_cli = Path(args.ug) if args.ug else find("build*/cli/ug", "the ug program")
    ug_bench = find("build*/bench/ug_bench", "ug_bench")
    sys.path.insert(0, str(ROOT / "python"))
    import unigrad as ug

    workdir = Path(tempfile.mkdtemp(prefix="ug_serving_"))
    try:
        arch = ug.models.Architecture("mlp", in_features=784, hidden=128, classes=10)
        model_path = str(workdir / "mlp.safetensors")
        ug.models.save_model(ug.models.build(arch), arch, model_path)
        quiet = ["--no-access-log"] if args.no_access_log else []

        port = free_port()
        server = Running([str(ug_cli), "serve", model_path, "--port", str(port), "--rate", "0", *quiet], port)
        try:
            ours = load_test("ug-serve", server, args.conns, args.duration)
        finally:
            server.stop()
        port = free_port()
        server = Running([sys.executable, str(PEER_DIR / "serve_fastapi.py"), "--port", str(port), "--threads", "1",
                          *quiet], port)
        try:
            peer = load_test("fastapi-uvicorn-torch", server, args.conns, args.duration)
            peer_versions = {k: server.health.get(k) for k in ("torch", "fastapi", "uvicorn", "loop", "http")}
        finally:
            server.stop()

        ug_us = ug_single_sample_us(ug_bench, args.repeats)
        emit({"bench": "infer_latency", "impl": "unigrad-cpp", "case": "batch1", "us_median": round(ug_us, 3)})
        ort_us, ort_version = onnxruntime_single_sample_us(workdir, args.repeats)
        emit({"bench": "infer_latency", "impl": "onnxruntime", "case": "batch1", "us_median": round(ort_us, 3),
              "onnxruntime": ort_version, "intra_op_num_threads": 1})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    lines = [f"ug serve (--rate 0: not rate limited; access log {'off' if args.no_access_log else 'on'}) vs "
             f"FastAPI peer ({', '.join(f'{k} {v}' for k, v in peer_versions.items())}), "
             f"wrk {args.duration} s per row, {os.cpu_count()} cores shared with wrk, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "",
             "| conns | ug req/s | peer req/s | ratio | ug p50 ms | peer p50 ms | ug p99 ms | peer p99 ms | p99 ratio "
             "| errors ug/peer |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in args.conns:
        o, q = ours[c], peer[c]
        lines.append(f"| {c} | {o['requests_per_s']:.0f} | {q['requests_per_s']:.0f} | "
                     f"{o['requests_per_s'] / q['requests_per_s']:.1f}x | {o['p50_ms']:.3f} | {q['p50_ms']:.3f} | "
                     f"{o['p99_ms']:.3f} | {q['p99_ms']:.3f} | {o['p99_ms'] / q['p99_ms']:.3f} | "
                     f"{o['errors_total']}/{q['errors_total']} |")
    lines += ["", f"Single sample, in-process: unigrad (C++ mlp_infer/1) {ug_us:.2f} us, onnxruntime {ort_us:.2f} us "
                  f"(ratio {ug_us / ort_us:.2f})."]

    rps_ratio = min(ours[c]["requests_per_s"] / peer[c]["requests_per_s"] for c in args.conns)
    checks = {
        f"req/s >= {TARGETS['rps_ratio']:g}x the peer's at every concurrency (min {rps_ratio:.1f}x)":
            rps_ratio >= TARGETS["rps_ratio"],
        f"zero errors ({sum(o['errors_total'] for o in ours.values())})":
            all(o["errors_total"] == 0 for o in ours.values()),
        f"single sample <= {TARGETS['single_sample_us']:g} us ({ug_us:.2f})": ug_us <= TARGETS["single_sample_us"],
    }
    if 8 in ours:
        p99_ratio = ours[8]["p99_ms"] / peer[8]["p99_ms"]
        checks[f"p99 at c8 <= {TARGETS['p99_ratio_c8']:g}x the peer's ({p99_ratio:.3f})"] = \
            p99_ratio <= TARGETS["p99_ratio_c8"]
    lines.append("")
    lines += [f"- {'met' if ok else 'MISSED'}: {text}" for text, ok in checks.items()]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if args.write_docs:
        write_docs(text, *DOCS_MARKERS)
    emit({"bench": "serving_summary", "rps_ratio_min": round(rps_ratio, 2),
          "targets_met": all(checks.values()), "checks": {k: bool(v) for k, v in checks.items()}})


if __name__ == "__main__":
    main()
