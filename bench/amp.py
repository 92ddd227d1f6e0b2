#!/usr/bin/env python3
"""Mixed precision, side by side with torch 2.13's CPU autocast in one run (issue 16, item 8).

- transformer block training step (TransformerEncoderLayer(128, 4, 512), batch 32, seq 64,
  MSE, AdamW) in float32 and under bfloat16 autocast: median step time of unigrad and torch,
  and the peak activation memory of each: unigrad's ug.memory.max_allocated during a step, less
  what was live before it; torch keeps no CPU allocator statistics, so its peak is the running
  sum of the allocations and frees torch.profiler records (profile_memory) during one step;
- MLP 784-128-10 on Fashion-MNIST, 3 epochs of Adam (batch 64) in float32 and under bfloat16
  autocast: test accuracy.

    .venv/bin/python bench/amp.py [--threads 1] [--quick] [--rounds 3] [--no-mlp]

Prints one JSON object; the figures go into docs/benchmarks.md by hand.
"""
import argparse
import contextlib
import json
import os
import sys
import time

import torch
from torch._C._profiler import _EventType

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "py"))
import unigrad as ug  # noqa: E402
from common import interleaved  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--quick", action="store_true")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--no-mlp", action="store_true", help="the transformer rows only")
args = parser.parse_args()
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)
STEPS, WARMUP = (10, 2) if args.quick else (40, 5)
DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def region(m, mixed):
    return m.autocast("cpu", dtype=m.bfloat16) if mixed else contextlib.nullcontext()


def transformer(m, mixed):
    """A function running one training step, returning (seconds, peak activation bytes or None)."""
    m.manual_seed(0)
    block = m.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
    opt = m.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)
    x, target = m.randn(32, 64, 128), m.randn(32, 64, 128)

    def step():
        opt.zero_grad()
        if m is ug:
            ug.memory.reset_peak()
            live = ug.memory.allocated()
        t0 = time.perf_counter()
        with region(m, mixed):
            loss = m.nn.functional.mse_loss(block(x).float(), target)
        loss.backward()
        opt.step()
        seconds = time.perf_counter() - t0
        return seconds, (ug.memory.max_allocated() - live if m is ug else None)

    return step


def torch_peak(step):
    """The most bytes torch had allocated beyond what was live when `step` began."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events, stack = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.typed[0] == _EventType.Allocation:  # a free is an allocation of minus its size
            events.append((node.start_time_ns, node.typed[1].alloc_size))
    live = peak = 0
    for _, size in sorted(events):
        live += size
        peak = max(peak, live)
    return peak


def read_idx(name):
    return ug.data.read_idx(os.path.join(DATA, name))


def mlp_accuracy(mixed):
    x = read_idx("train-images-idx3-ubyte.gz").reshape(60000, -1).float().div_(255.0)
    y = read_idx("train-labels-idx1-ubyte.gz").long()
    xt = read_idx("t10k-images-idx3-ubyte.gz").reshape(10000, -1).float().div_(255.0)
    yt = read_idx("t10k-labels-idx1-ubyte.gz").long()
    if args.quick:
        x, y = x[:10000], y[:10000]
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Linear(784, 128), ug.nn.ReLU(), ug.nn.Linear(128, 10))
    opt = ug.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        perm = ug.randperm(x.shape[0])
        for s in range(0, x.shape[0], 64):
            idx = perm[s:s + 64]
            opt.zero_grad()
            with region(ug, mixed):
                loss = ug.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    with ug.no_grad(), region(ug, mixed):
        return (model(xt).argmax(1) == yt).float().mean().item()


out = {"threads": args.threads, "quick": args.quick, "rounds": args.rounds}
# The four steps take turns, STEPS steps each per round; the figures are medians over every
# round's steps.
steps = {f"{name}_{'bf16' if mixed else 'fp32'}": transformer(m, mixed)
         for name, m in [("unigrad", ug), ("torch", torch)] for mixed in (False, True)}
ms, peaks = interleaved(steps, args.rounds, STEPS, WARMUP)
out.update({f"transformer_ms_{key}": v for key, v in ms.items()})
out.update({f"transformer_peak_bytes_{key}": v for key, v in peaks.items()})
out["transformer_time_ug_bf16_over_torch_bf16"] = out["transformer_ms_unigrad_bf16"] / out["transformer_ms_torch_bf16"]
out["transformer_peak_bf16_over_fp32"] = (out["transformer_peak_bytes_unigrad_bf16"]
                                          / out["transformer_peak_bytes_unigrad_fp32"])
for mixed in ("fp32", "bf16"):
    out[f"transformer_peak_bytes_torch_{mixed}"] = torch_peak(steps[f"torch_{mixed}"])
out["transformer_torch_peak_bf16_over_fp32"] = (out["transformer_peak_bytes_torch_bf16"]
                                                / out["transformer_peak_bytes_torch_fp32"])
if not args.no_mlp:
    out["mlp_accuracy_fp32"] = mlp_accuracy(False)
    out["mlp_accuracy_bf16"] = mlp_accuracy(True)
print(json.dumps(out, indent=1))
