#!/usr/bin/env python3
"""The compositions of ops/composite_order.cpp (and cdist, the special functions, unfold) against torch 2.13 in one
run: median milliseconds per call, unigrad and torch interleaved call by call so that load on
a shared machine falls on both alike, and their ratio (unigrad / torch; below 1 is faster).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/order_ops.py [--threads 1] [--rounds 5]

Prints one JSON line per op.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "py"))
import unigrad as ug  # noqa: E402
from common import interleaved  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--rounds", type=int, default=5)
args = parser.parse_args()
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)

rng = np.random.default_rng(0)
rows = rng.standard_normal((256, 1024)).astype(np.float32)
flat = rng.integers(0, 1000, size=1 << 18)
seq = np.sort(rng.standard_normal(1 << 16).astype(np.float32))
values = rng.standard_normal(1 << 16).astype(np.float32)
points = rng.standard_normal((512, 64)).astype(np.float32)
positive = rng.uniform(0.1, 20.0, 1 << 20).astype(np.float32)
unit = rng.uniform(-0.99, 0.99, 1 << 20).astype(np.float32)

CASES = {
    "median(dim=1) [256, 1024]": (lambda m, x: m.median(x, 1), rows),
    "quantile([.1, .5, .9], dim=1) [256, 1024]": (lambda m, x: m.quantile(x, m.tensor([0.1, 0.5, 0.9]), dim=1), rows),
    "kthvalue(10, dim=1) [256, 1024]": (lambda m, x: m.kthvalue(x, 10, 1), rows),
    "mode(dim=1) [256, 1024]": (lambda m, x: m.mode(x.round(), 1), rows),
    "unique(return_inverse, return_counts) 256k int64": (
        lambda m, x: m.unique(x, return_inverse=True, return_counts=True), flat),
    "bincount 256k int64": (lambda m, x: m.bincount(x), flat),
    "searchsorted 64k into 64k": (lambda m, x: m.searchsorted(x[0], x[1]), (seq, values)),
    "cummax(dim=1) [256, 1024]": (lambda m, x: m.cummax(x, 1), rows),
    "logcumsumexp(dim=1) [256, 1024]": (lambda m, x: m.logcumsumexp(x, 1), rows),
    "cdist [512, 64] x [512, 64]": (lambda m, x: m.cdist(x, x), points),
    "lgamma 1M float32": (lambda m, x: m.lgamma(x), positive),
    "digamma 1M float32": (lambda m, x: m.digamma(x), positive),
    "erfinv 1M float32": (lambda m, x: m.erfinv(x), unit),
    "unfold(1, 8, 4).sum(-1) [256, 1024]": (lambda m, x: x.unfold(1, 8, 4).sum(-1), rows),
}


def convert(m, x):
    return tuple(m.tensor(a) for a in x) if isinstance(x, tuple) else m.tensor(x)


def timed(fn, m, x):
    def step():
        start = time.perf_counter()
        fn(m, x)
        return time.perf_counter() - start, None
    return step


for name, (fn, data) in CASES.items():
    steps = {impl: timed(fn, m, convert(m, data)) for impl, m in (("unigrad", ug), ("torch", torch))}
    ms, _ = interleaved(steps, rounds=args.rounds, per_round=3, warmup=2)
    print(json.dumps({"op": name, "unigrad_ms": round(ms["unigrad"], 3), "torch_ms": round(ms["torch"], 3),
                      "ratio": round(ms["unigrad"] / ms["torch"], 2), "threads": args.threads}), flush=True)
