#!/usr/bin/env python3
"""Activation checkpointing (issue 16, item 8): an 8-block stack of TransformerEncoderLayer(128, 4,
512, no dropout) trained one step at a time (batch 32, seq 64, MSE, AdamW), with each block
checkpointed (ug.utils.checkpoint.checkpoint) and without: median step time and peak memory
(ug.memory.max_allocated during the step, less what was live before it), the ratios against the
plain step, and torch 2.13's torch.utils.checkpoint on the same workload for scale.

    .venv/bin/python bench/checkpoint.py [--threads 1] [--quick]

Prints one JSON object; the figures go into docs/benchmarks.md by hand.
"""
import argparse
import json
import statistics
import time

import torch
import torch.utils.checkpoint

import unigrad as ug
import unigrad.utils.checkpoint

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--quick", action="store_true")
args = parser.parse_args()
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)
WARMUP, STEPS = (1, 4) if args.quick else (3, 15)
BLOCKS = 8


def steps(m, checkpointed):
    m.manual_seed(0)
    blocks = [m.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True) for _ in range(BLOCKS)]
    params = [p for b in blocks for p in b.parameters()]
    opt = m.optim.AdamW(params, lr=1e-3)
    x, target = m.randn(32, 64, 128), m.randn(32, 64, 128)
    ckpt = (ug.utils.checkpoint.checkpoint if m is ug else torch.utils.checkpoint.checkpoint)
    times, peaks = [], []
    for i in range(WARMUP + STEPS):
        if m is ug:
            ug.memory.reset_peak()
            live = ug.memory.allocated()
        t0 = time.perf_counter()
        opt.zero_grad()
        h = x
        for b in blocks:
            h = ckpt(b, h, use_reentrant=False) if checkpointed else b(h)
        loss = m.nn.functional.mse_loss(h, target)
        loss.backward()
        opt.step()
        if i >= WARMUP:
            times.append(time.perf_counter() - t0)
            if m is ug:
                peaks.append(ug.memory.max_allocated() - live)
    return statistics.median(times), (max(peaks) if peaks else None)


result = {}
for name, m in (("unigrad", ug), ("torch", torch)):
    for ck in (False, True):
        t, peak = steps(m, ck)
        result[f"{name} {'checkpointed' if ck else 'plain'}"] = {"step_s": t, "peak_mb": peak and peak / 2**20}
u0, u1 = result["unigrad plain"], result["unigrad checkpointed"]
result["unigrad checkpointed / plain"] = {"time": u1["step_s"] / u0["step_s"], "peak": u1["peak_mb"] / u0["peak_mb"]}
result["torch checkpointed / plain, time"] = result["torch checkpointed"]["step_s"] / result["torch plain"]["step_s"]
print(json.dumps(result, indent=1))
