#!/usr/bin/env python3
"""Data-parallel training on this machine, unigrad beside torch 2.13's DDP on gloo, in one run:
throughput of bench/ddp_train.py on 1 and 2 ranks (one kernel thread per rank) for the MLP and
the transformer block, eager and (unigrad's) under ug.compile, and ug_allreduce_bench (ug::distributed's all_reduce against raw
MPI_Allreduce on 4-64 MiB float32 buffers). Every configuration runs REPEAT times, interleaved,
and each figure is the median; prints the Markdown rows of docs/benchmarks.md.

    .venv/bin/python bench/ddp.py              # ~3 min on 2 cores
    .venv/bin/python bench/ddp.py --repeat 5 --batch 256
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UG = ROOT / "build" / "cli" / "ug"
ALLREDUCE = ROOT / "build" / "bench" / "ug_allreduce_bench"


def free_port():
    """A port for torch's rendezvous: a fixed one can still be held (TIME_WAIT) by the last run."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def launch(n, *command, expect):
    """The lines of the job's output that start with `expect`. torch's gloo group sometimes aborts
    at exit, after the figures were printed: only a job that printed none has failed."""
    env = dict(os.environ, UG_PYTHON=sys.executable, PYTHONPATH=str(ROOT / "python"), MASTER_PORT=free_port())
    out = subprocess.run([str(UG), "launch", "-n", str(n), *command], env=env, capture_output=True, text=True,
                         timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith(expect)]
    if not lines:
        sys.exit(f"ug launch -n {n} {' '.join(command)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    args = p.parse_args()

    throughput = defaultdict(list)  # (framework, model, ranks) -> samples/s
    allreduce = defaultdict(list)   # MiB -> (MPI, ug, ug / MPI)
    for _ in range(args.repeat):
        for model in ("mlp", "transformer"):
            for framework in ("ug", "ug compiled", "torch"):
                for n in (1, 2):
                    name, *compiled = framework.split()
                    line, = launch(n, str(ROOT / "bench" / "ddp_train.py"), "--framework", name,
                                   *(["--compile"] if compiled else []), "--model", model, "--steps",
                                   str(args.steps), "--batch", str(args.batch), expect=f"{framework},{model},")
                    throughput[framework, model, n].append(float(line.split(",")[3]))
        for row in launch(2, str(ALLREDUCE), expect=tuple("0123456789")):
            mib, mpi, ours, ratio = row.split(",")[:4]
            allreduce[float(mib)].append((float(mpi), float(ours), float(ratio)))

    med = {k: statistics.median(v) for k, v in throughput.items()}
    print("| model | unigrad 1 rank | unigrad 2 ranks | scaling (target ≥ 1.7) | torch 1 rank | torch 2 ranks "
          "| torch scaling | unigrad / torch, 2 ranks (target ≥ 1.2) |")
    print("|---|---|---|---|---|---|---|---|")
    for model, name in (("mlp", "MLP 784-128-10"), ("transformer", "TransformerEncoderLayer(128, 4, 512), seq 64")):
        u1, u2, t1, t2 = (med[f, model, n] for f, n in (("ug", 1), ("ug", 2), ("torch", 1), ("torch", 2)))
        print(f"| {name} | {u1:,.0f} | {u2:,.0f} | {u2 / u1:.2f}x | {t1:,.0f} | {t2:,.0f} | {t2 / t1:.2f}x "
              f"| {u2 / t2:.2f}x |")
    print()
    print("| model, the step under ug.compile | 1 rank | 2 ranks | scaling | 2 ranks, compiled / eager |")
    print("|---|---|---|---|---|")
    for model, name in (("mlp", "MLP 784-128-10"), ("transformer", "TransformerEncoderLayer(128, 4, 512), seq 64")):
        c1, c2 = med["ug compiled", model, 1], med["ug compiled", model, 2]
        print(f"| {name} | {c1:,.0f} | {c2:,.0f} | {c2 / c1:.2f}x | {c2 / med['ug', model, 2]:.2f}x |")
    print()
    print("| float32 buffer | MPI_Allreduce | ug all_reduce | ug / MPI (target ≥ 0.9) |")
    print("|---|---|---|---|")
    for mib, rows in sorted(allreduce.items()):
        mpi, ours, ratio = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"| {mib:g} MiB | {mpi:.2f} GB/s | {ours:.2f} GB/s | {ratio:.2f} |")
    print(f"\nsamples/s of all ranks together, batch {args.batch} per rank, medians of {args.repeat} interleaved runs "
          f"of {args.steps} steps; all-reduce: medians of {args.repeat} runs, each the median of 5 rounds of 10-200 "
          "calls of each, ug and MPI alternated")


if __name__ == "__main__":
    main()
