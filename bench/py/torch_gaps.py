#!/usr/bin/env python3
"""The ops the torchnn4 branch added, side by side with torch 2.13 in one run: forward and
backward of conv3d, max_pool3d, avg_pool3d, embedding_bag, scatter_reduce (amax, prod) and
ctc_loss, each timed in interleaved rounds (common.interleaved), as the median milliseconds of
each framework and the ratio unigrad / torch.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/py/torch_gaps.py [--threads 2] [--quick]

Prints one JSON object.
"""
import json
import time

import numpy as np
import torch

import unigrad as ug
from common import interleaved, parse_args

args = parse_args(__doc__.splitlines()[0])
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)
ROUNDS, PER_ROUND, WARMUP = (3, 2, 1) if args.quick else (7, 3, 2)
rng = np.random.default_rng(0)


def F(m):
    return torch.nn.functional if m is torch else ug.nn.functional


def case(make_inputs, run):
    """A step for each framework: fresh leaves, run(m, *leaves) to a scalar, backward."""
    arrays = make_inputs()

    def step_of(m):
        def step():
            leaves = [m.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
            start = time.perf_counter()
            run(m, *leaves).backward()
            return time.perf_counter() - start, None
        return step
    return {"torch": step_of(torch), "unigrad": step_of(ug)}


def f32(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


T, N, C, S = 200, 16, 30, 40
INDICES = rng.integers(0, 10000, 4096)
CASES = {
    "conv3d 16->32 3x3x3 pad 1, [4, 16, 16, 32, 32]": case(
        lambda: (f32(4, 16, 16, 32, 32), f32(32, 16, 3, 3, 3)),
        lambda m, x, w: F(m).conv3d(x, w, padding=1).square().mean()),
    "max_pool3d 2, [8, 32, 16, 32, 32]": case(
        lambda: (f32(8, 32, 16, 32, 32),), lambda m, x: F(m).max_pool3d(x, 2).sum()),
    "avg_pool3d 3 stride 2 pad 1, [8, 32, 16, 32, 32]": case(
        lambda: (f32(8, 32, 16, 32, 32),), lambda m, x: F(m).avg_pool3d(x, 3, 2, 1).sum()),
    "embedding_bag mean, 4096 of 10000x64 in 256 bags": case(
        lambda: (f32(10000, 64), INDICES, np.arange(0, 4096, 16)),
        lambda m, w, i, o: F(m).embedding_bag(i, w, o, mode="mean").square().sum()),
    "embedding_bag max, 4096 of 10000x64 in 256 bags": case(
        lambda: (f32(10000, 64), INDICES, np.arange(0, 4096, 16)),
        lambda m, w, i, o: F(m).embedding_bag(i, w, o, mode="max").square().sum()),
    "scatter_reduce amax, [65536, 16] into [1024, 16]": case(
        lambda: (f32(1024, 16), f32(65536, 16), np.repeat(rng.integers(0, 1024, (65536, 1)), 16, 1)),
        lambda m, x, s, i: x.scatter_reduce(0, i, s, "amax").square().sum()),
    "scatter_reduce prod, [65536, 16] into [1024, 16]": case(
        lambda: (f32(1024, 16), f32(65536, 16) * 0.1 + 1, np.repeat(rng.integers(0, 1024, (65536, 1)), 16, 1)),
        lambda m, x, s, i: x.scatter_reduce(0, i, s, "prod").sum()),
    f"ctc_loss T={T} N={N} C={C} S={S}": case(
        lambda: (f32(T, N, C), rng.integers(1, C, (N, S)), np.full(N, T), np.full(N, S)),
        lambda m, x, t, il, tl: F(m).ctc_loss(x.log_softmax(2), t, il, tl)),
}

results = {}
for name, steps in CASES.items():
    ms, _ = interleaved(steps, ROUNDS, PER_ROUND, WARMUP)
    results[name] = {"torch_ms": round(ms["torch"], 3), "unigrad_ms": round(ms["unigrad"], 3),
                     "ratio": round(ms["unigrad"] / ms["torch"], 2)}
print(json.dumps({"threads": args.threads, "results": results}, indent=1))
