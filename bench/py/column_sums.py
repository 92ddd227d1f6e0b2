#!/usr/bin/env python3
"""column_sums: sums over the first dim of [rows, cols] float32 tensors with few columns (a
complex tensor's [n, 2] real view, a [64, 10] bias gradient) against torch, same threads.
Prints one JSON line per case and framework: the median µs of 9 loops of 50 calls.

    .venv/bin/python bench/py/column_sums.py [--threads 1]
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
LOOPS, CALLS = (3, 10) if args.quick else (9, 50)
SHAPES = [(1 << 20, 2), (64, 10), (4096, 3), (1 << 16, 16), (1 << 14, 64)]

rng = np.random.default_rng(0)
for rows, cols in SHAPES:
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    for name, m in (("unigrad", ug), ("torch", torch)):
        t = m.tensor(x)
        us = common.median_us(lambda: t.sum(0), LOOPS, CALLS)
        print(json.dumps({"case": f"[{rows}, {cols}].sum(0)", "framework": name, "threads": args.threads,
                          "us": round(us, 2)}))
