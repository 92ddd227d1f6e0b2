#!/usr/bin/env python3
"""The compiled mode side by side with JAX's jax.jit and torch's eager best, in one run (issue
15, item 9): the MLP 784-128-10 epoch (a Python loop calling one jitted step) and the
Transformer block training step, each as

- unigrad's ug.jit step (bench/py/mlp_jit_epoch.py, bench/py/transformer_jit_step.py),
- the same functional step run eagerly (--eager),
- for the MLP, the PyTorch-style step (zero_grad, backward, opt.step()) under ug.compile and
  eagerly (bench/py/mlp_train_epoch.py with and without --compile),
- JAX's jax.jit peer (../shared/bench/peers/jax/),
- torch eager, the peer in ../shared/bench/peers/, in its fastest thread configuration,
- the ug.jit step without fusion of elementwise chains (UG_JIT_FUSE_BLOCK=0, "unfused"),
- the transformer's ug.jit step without rematerialization (UG_JIT_REMAT=0, "unrematerialized":
  what the memory plan's recomputation costs in time and saves in memory),

REPEAT times each, interleaved; every figure is a median. Prints one JSON object of medians and
the ratios the issue's targets are stated in; the figures go into docs/benchmarks.md by hand.

    .venv/bin/python bench/jit.py [--quick] [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "bench" / "peers"

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true")
parser.add_argument("--repeat", type=int, default=3)
args = parser.parse_args()
quick = ["--quick"] if args.quick else []

RUNS = {  # name -> command (each prints one JSON line last)
    "mlp ug.jit": [ROOT / "bench/py/mlp_jit_epoch.py"],
    "mlp ug.jit unfused": [ROOT / "bench/py/mlp_jit_epoch.py"],
    "mlp ug eager (functional)": [ROOT / "bench/py/mlp_jit_epoch.py", "--eager"],
    "mlp ug eager (torch-style)": [ROOT / "bench/py/mlp_train_epoch.py"],
    "mlp ug.compile (torch-style)": [ROOT / "bench/py/mlp_train_epoch.py", "--compile"],
    "mlp jax.jit": [PEERS / "jax/mlp_train_epoch.py"],
    "mlp torch eager": [PEERS / "mlp_train_epoch.py", "--threads", "2", "--blas-threads", "1"],
    "transformer ug.jit": [ROOT / "bench/py/transformer_jit_step.py"],
    "transformer ug.jit unfused": [ROOT / "bench/py/transformer_jit_step.py"],
    "transformer ug.jit unrematerialized": [ROOT / "bench/py/transformer_jit_step.py"],
    "transformer ug eager (functional)": [ROOT / "bench/py/transformer_jit_step.py", "--eager"],
    "transformer jax.jit": [PEERS / "jax/transformer_step.py"],
    "transformer torch eager": [PEERS / "transformer_step.py", "--threads", "2", "--blas-threads", "1"],
}


def run(name, cmd):
    env = ({**os.environ, "UG_JIT_FUSE_BLOCK": "0"} if name.endswith("unfused")
           else {**os.environ, "UG_JIT_REMAT": "0"} if name.endswith("unrematerialized") else None)
    out = subprocess.run([sys.executable, *map(str, cmd), *quick], capture_output=True, text=True, check=True,
                         env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


records = {name: [] for name in RUNS}
for _ in range(args.repeat):
    for name, cmd in RUNS.items():
        records[name].append(run(name, cmd))


def median(name, key="seconds"):
    values = [r[key] if key == "seconds" else r["extra"].get(key) for r in records[name]]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


result = {name: {"seconds": median(name), "compile_seconds": median(name, "compile_seconds")} for name in RUNS}
for w in ("mlp", "transformer"):
    jit, jax, torch = (result[f"{w} {k}"]["seconds"] for k in ("ug.jit", "jax.jit", "torch eager"))
    result[f"{w} ratios"] = {
        "ug.jit / jax.jit": jit / jax, "ug.jit / torch eager": jit / torch,
        "ug.jit / ug eager (functional)": jit / result[f"{w} ug eager (functional)"]["seconds"],
        "ug.jit / ug.jit unfused": jit / result[f"{w} ug.jit unfused"]["seconds"],
        "compile ug.jit / jax.jit": result[f"{w} ug.jit"]["compile_seconds"] / result[f"{w} jax.jit"]["compile_seconds"],
    }
peak = {name: median(f"transformer {name}", "peak_activation_mb")
        for name in ("ug.jit", "ug.jit unrematerialized", "ug eager (functional)")}
result["mlp ratios"]["ug.compile (torch-style) / jax.jit"] = (
    result["mlp ug.compile (torch-style)"]["seconds"] / result["mlp jax.jit"]["seconds"])
result["transformer peak activation MB"] = peak
result["transformer peak activation MB, ug.jit / eager"] = peak["ug.jit"] / peak["ug eager (functional)"]
result["transformer ug.jit / ug.jit unrematerialized"] = {
    "seconds": result["transformer ug.jit"]["seconds"] / result["transformer ug.jit unrematerialized"]["seconds"],
    "peak": peak["ug.jit"] / peak["ug.jit unrematerialized"]}
print(json.dumps(result, indent=1))
