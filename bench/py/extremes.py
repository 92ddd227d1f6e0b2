#!/usr/bin/env python3
"""extremes: max/min reductions and their indices, beside a sum of the same tensor, in unigrad
and torch (same threads). Cases: the whole of 50,000 floats; the rows of [1000, 64] (dim 1);
the columns of [64, 1000] (dim 0). Prints one JSON line per case and framework: the median µs
of 9 loops of 200 calls.

    .venv/bin/python bench/py/extremes.py [--threads 1]
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
ug = common.init_ug(args)
torch.set_num_threads(args.threads)
LOOPS, CALLS = (3, 50) if args.quick else (9, 200)


def median_us(fn):
    return common.median_us(fn, LOOPS, CALLS)


CASES = [("whole [50000]", (50000,), None), ("rows [1000, 64]", (1000, 64), 1), ("columns [64, 1000]", (64, 1000), 0)]
for name, shape, dim in CASES:
    x = ug.randn(*shape)
    for m, t in (("unigrad", x), ("torch", torch.from_numpy(x.numpy()))):
        kw = {} if dim is None else {"dim": dim}
        row = {op: round(median_us(lambda op=op: getattr(t, op)(**kw)), 2) for op in ("sum", "amax", "argmax", "amin")}
        print(json.dumps({"case": name, "impl": m, "threads": args.threads, "us": row}))
