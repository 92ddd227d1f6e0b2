#!/usr/bin/env python3
"""op_overhead: per-op dispatch cost through unigrad's Python front end, as the peer
shared/bench/peers/op_overhead.py measures torch's.
Cases (each a loop of N=10,000 iterations, quick 2,000; the median of 5 (quick 3) loops):
  add_1elem            c = a + b on 1-element float32 tensors
  matmul_64            c = a @ b on 64x64 float32 tensors
  autograd_1elem       y = (a*b + c).sum(); y.backward() with a, b, c 1-element leaves
                       (requires_grad=True) created once; their .grad accumulate
  autograd_1elem_fresh same, but a, b, c are created inside the loop (ug.ones(1,
                       requires_grad=True) x3)
seconds = median seconds per iteration."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)

N, REPS = (2000, 3) if args.quick else (10000, 5)
ug.manual_seed(0)


def add_1elem(n, a=ug.ones(1), b=ug.ones(1)):
    for _ in range(n):
        a + b


def matmul_64(n, a=ug.randn(64, 64), b=ug.randn(64, 64)):
    for _ in range(n):
        a @ b


_leaves = [ug.ones(1, requires_grad=True) for _ in range(3)]


def autograd_1elem(n, a=_leaves[0], b=_leaves[1], c=_leaves[2]):
    for _ in range(n):
        y = (a * b + c).sum()
        y.backward()


def autograd_1elem_fresh(n):
    for _ in range(n):
        a = ug.ones(1, requires_grad=True)
        b = ug.ones(1, requires_grad=True)
        c = ug.ones(1, requires_grad=True)
        (a * b + c).sum().backward()


for name, fn in (("add_1elem", add_1elem), ("matmul_64", matmul_64),
                 ("autograd_1elem", autograd_1elem), ("autograd_1elem_fresh", autograd_1elem_fresh)):
    fn(N // 10)  # warm-up
    per_op = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn(N)
        per_op.append((time.perf_counter() - t0) / N)
    med = common.median(per_op)
    extra = {"case": name, "quick": args.quick, "iters": N, "reps": REPS,
             "us_per_op_median": med * 1e6, "us_per_op_min": min(per_op) * 1e6}
    if name == "matmul_64":
        extra["gflops"] = 2 * 64 ** 3 / med / 1e9
    common.emit(ug, "op_overhead", args.threads, med, extra)
