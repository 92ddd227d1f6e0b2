#!/usr/bin/env python3
"""complex_ops: complex64 elementwise ops, a sum and a product of matrices in unigrad (composed
over the real view) and torch (std::complex kernels), same threads. Prints one JSON line per
case and framework: the median µs of 9 loops of 20 calls.

    .venv/bin/python bench/py/complex_ops.py [--threads 1]
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
ug = common.init_ug(args)
torch.set_num_threads(args.threads)
LOOPS, CALLS = (3, 5) if args.quick else (9, 20)
N = 1 << 20


def median_us(fn):
    return common.median_us(fn, LOOPS, CALLS)


rng = np.random.default_rng(0)
a = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)
b = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)
m = (rng.standard_normal((256, 256)) + 1j * rng.standard_normal((256, 256))).astype(np.complex64)
CASES = [
    ("add [2^20]", lambda f, x, y, w: x + y),
    ("mul [2^20]", lambda f, x, y, w: x * y),
    ("div [2^20]", lambda f, x, y, w: x / y),
    ("abs [2^20]", lambda f, x, y, w: x.abs()),
    ("exp [2^20]", lambda f, x, y, w: x.exp()),
    ("sum [2^20]", lambda f, x, y, w: x.sum()),
    ("matmul [256, 256]", lambda f, x, y, w: w @ w),
]
for name, fn in CASES:
    for fw, mod in (("unigrad", ug), ("torch", torch)):
        x, y, w = (mod.tensor(v) if mod is ug else torch.from_numpy(v) for v in (a, b, m))
        print(json.dumps({"case": name, "framework": fw, "threads": args.threads,
                          "us": round(median_us(lambda: fn(mod, x, y, w)), 1)}), flush=True)
