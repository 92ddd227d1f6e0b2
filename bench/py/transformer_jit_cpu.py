#!/usr/bin/env python3
"""transformer_jit_cpu: bench/py/transformer_jit_step.py's step (post-LN
TransformerEncoderLayer(128, 4, 512), batch 32, sequence 64, AdamW) on one core, measured in CPU
time (time.thread_time), which other processes on a shared machine disturb far less than wall
time: torch 2.13's eager step (shared/bench/peers/transformer_step.py's model), unigrad's eager
functional step and its ug.jit step, interleaved in one process, one thread each (run it with
OPENBLAS_NUM_THREADS=1). Medians over 25 steps after 3 warm-up rounds (quick: 10); ratios jit /
torch, eager / torch and jit / eager (the median of the rounds' ratios); the peaks of the jitted
and the eager step beyond what was live before each (bench/jit.py's peak figure)."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
args.threads = 1
ug = common.init_ug(args)
import torch  # noqa: E402

torch.set_num_threads(1)
WARMUP, ROUNDS = (3, 10) if args.quick else (3, 25)

torch_step = common.torch_transformer_step(torch)

train_step, params, optimizer, x, target = common.transformer_step(ug)
ug_steps = {"jit": ug.jit(train_step), "eager": train_step}
state = {name: (params, optimizer.init(params)) for name in ug_steps}
peaks = {name: 0 for name in ug_steps}
measuring = [False]  # past the warm-up: the peaks count


def ug_step(name):
    def run():
        live = ug.memory.allocated()
        ug.memory.reset_peak()
        p, s, loss = ug_steps[name](*state[name], x, target)
        float(loss)
        state[name] = (p, s)
        if measuring[0]:
            peaks[name] = max(peaks[name], ug.memory.max_allocated() - live)
    return run


STEPS = {"torch": torch_step, "eager": ug_step("eager"), "jit": ug_step("jit")}
times = {name: [] for name in STEPS}
for r in range(WARMUP + ROUNDS):
    measuring[0] = r >= WARMUP
    for name, step in STEPS.items():
        t0 = time.thread_time()
        step()
        if r >= WARMUP:
            times[name].append(time.thread_time() - t0)

med = {name: statistics.median(t) for name, t in times.items()}
common.emit(ug, "transformer_jit_cpu", 1, med["jit"], {
    "quick": args.quick, **{f"cpu_ms_{name}": round(t * 1e3, 2) for name, t in med.items()},
    "jit_over_torch": med["jit"] / med["torch"], "eager_over_torch": med["eager"] / med["torch"],
    "jit_over_eager": statistics.median(j / e for j, e in zip(times["jit"], times["eager"])),
    "peak_mb_jit": peaks["jit"] / 2**20, "peak_mb_eager": peaks["eager"] / 2**20,
    "peak_jit_over_eager": peaks["jit"] / peaks["eager"]})
