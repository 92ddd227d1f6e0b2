#!/usr/bin/env python3
"""transformer_jit_step: the JAX peer shared/bench/peers/jax/transformer_step.py in unigrad: one
post-LN TransformerEncoderLayer(128, 4, 512, exact GELU, no dropout), input (32, 64, 128) ~ N(0,1),
MSE against a random target, forward + backward + AdamW (the functional init/update, lr 1e-3,
weight decay 0.01) in one ug.jit step. Median seconds per step over 50 timed steps after 5
warm-up steps (quick: 3 + 15); compile_seconds is the first call; peak_activation_mb the most
bytes allocated during a step beyond what was live before it. With --eager the same step runs
without ug.jit."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__, eager_flag=True)
EAGER = args.eager
ug = common.init_ug(args)
WARMUP, STEPS = (3, 15) if args.quick else (5, 50)

train_step, params, optimizer, x, target = common.transformer_step(ug)
opt_state = optimizer.init(params)

step = train_step if EAGER else ug.jit(train_step)
t0 = time.perf_counter()
params, opt_state, loss = step(params, opt_state, x, target)
compile_seconds = time.perf_counter() - t0
times, peaks = [], []
for i in range(WARMUP + STEPS):
    ug.memory.reset_peak()
    live = ug.memory.allocated()
    t0 = time.perf_counter()
    params, opt_state, loss = step(params, opt_state, x, target)
    float(loss)
    if i >= WARMUP:
        times.append(time.perf_counter() - t0)
        peaks.append(ug.memory.max_allocated() - live)

common.emit(ug, "transformer_functional_step" if EAGER else "transformer_jit_step", args.threads,
            statistics.median(times), {"quick": args.quick, "compile_seconds": compile_seconds,
                                       "peak_activation_mb": max(peaks) / 2**20, "loss": float(loss)})
