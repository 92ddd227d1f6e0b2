#!/usr/bin/env python3
"""jit_remat: what the memory plan's recomputation (src/ug/compiler/remat.cpp) costs the jitted
transformer step (bench/py/transformer_jit_step.py's workload) in time and saves in memory. The
step is compiled twice in one process, with rematerialization and without (UG_JIT_REMAT=0 while
compiling), and the two programs are called alternately, so both see the same load; prints the
median seconds and the process CPU seconds per step of each (CPU time counts the pool's threads
and is less disturbed by other processes), the peaks beyond the live bytes, and the ratios.
Rounds of 2 calls each after 3 warm-up rounds: 30 rounds (quick: 12)."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
ROUNDS = 12 if args.quick else 30

train_step, params, optimizer, x, target = common.transformer_step(ug)
opt_state = optimizer.init(params)
programs = {"remat": ug.jit(train_step), "plain": ug.jit(train_step)}
programs["remat"](params, opt_state, x, target)  # compiles
os.environ["UG_JIT_REMAT"] = "0"
programs["plain"](params, opt_state, x, target)
del os.environ["UG_JIT_REMAT"]

wall = {name: [] for name in programs}
cpu = {name: [] for name in programs}
peak = {name: 0 for name in programs}
for i in range(3 + ROUNDS):
    for name, step in programs.items():
        for _ in range(2):
            ug.memory.reset_peak()
            live = ug.memory.allocated()
            w0, c0 = time.perf_counter(), time.process_time()
            _, _, loss = step(params, opt_state, x, target)
            float(loss)
            if i >= 3:
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
                peak[name] = max(peak[name], ug.memory.max_allocated() - live)

med = {name: statistics.median(wall[name]) for name in programs}
med_cpu = {name: statistics.median(cpu[name]) for name in programs}
common.emit(ug, "transformer_jit_remat", args.threads, med["remat"], {
    "quick": args.quick, "seconds_unrematerialized": med["plain"],
    "cpu_seconds": med_cpu["remat"], "cpu_seconds_unrematerialized": med_cpu["plain"],
    "seconds_ratio": med["remat"] / med["plain"], "cpu_seconds_ratio": med_cpu["remat"] / med_cpu["plain"],
    "peak_mb": peak["remat"] / 2**20, "peak_mb_unrematerialized": peak["plain"] / 2**20,
    "peak_ratio": peak["remat"] / peak["plain"]})
