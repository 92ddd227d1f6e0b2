#!/usr/bin/env python3
"""transformer_jit_pairs: bench/py/transformer_jit_step.py's step (post-LN
TransformerEncoderLayer(128, 4, 512), batch 32, sequence 64, AdamW) run under ug.jit and eagerly,
alternating in one process, so that both see the same machine load: the median of the pairs'
ratios ug.jit / eager over 80 pairs after 3 warm-up pairs (quick: 30), with each mode's median
seconds and peak bytes beyond what was live before a step."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
WARMUP, PAIRS = (3, 30) if args.quick else (3, 80)

train_step, params, optimizer, x, target = common.transformer_step(ug)
steps = {"jit": ug.jit(train_step), "eager": train_step}
state = {name: (params, optimizer.init(params)) for name in steps}
times = {name: [] for name in steps}
peaks = {name: 0 for name in steps}
for i in range(WARMUP + PAIRS):
    for name, step in steps.items():
        ug.memory.reset_peak()
        live = ug.memory.allocated()
        t0 = time.perf_counter()
        p, s, loss = step(*state[name], x, target)
        float(loss)
        if i >= WARMUP:
            times[name].append(time.perf_counter() - t0)
            peaks[name] = max(peaks[name], ug.memory.max_allocated() - live)
        state[name] = (p, s)

ratios = [a / b for a, b in zip(times["jit"], times["eager"])]
common.emit(ug, "transformer_jit_pairs", args.threads, statistics.median(times["jit"]),
            {"quick": args.quick, "jit_over_eager": statistics.median(ratios),
             "eager_seconds": statistics.median(times["eager"]),
             "peak_mb_jit": peaks["jit"] / 2**20, "peak_mb_eager": peaks["eager"] / 2**20})
