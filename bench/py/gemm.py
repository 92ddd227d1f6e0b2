#!/usr/bin/env python3
"""gemm: float32 square matmul C = ug.mm(A, B) (fresh output each call) at n = 256, 512,
1024, 2048 (quick: up to 1024), as the peer shared/bench/peers/gemm.py measures torch.mm.
GFLOP/s = 2 n^3 / t. Each size: 2 warm-up calls, then calls timed one by one for ~1 s
(quick ~0.3 s, at least 5); seconds = median per call; also the best call."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)

sizes = (256, 512, 1024) if args.quick else (256, 512, 1024, 2048)
budget = 0.3 if args.quick else 1.0


def measure(fn):
    fn()
    fn()
    ts = []
    start = time.perf_counter()
    while len(ts) < 5 or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return common.median(ts), min(ts), len(ts)


ug.manual_seed(0)
for n in sizes:
    a, b = ug.randn(n, n), ug.randn(n, n)
    flop = 2.0 * n ** 3
    med, best, reps = measure(lambda: ug.mm(a, b))
    common.emit(ug, "gemm", args.threads, med, {
        "case": f"n{n}", "quick": args.quick, "reps": reps,
        "gflops_median": flop / med / 1e9, "gflops_best": flop / best / 1e9,
    })
