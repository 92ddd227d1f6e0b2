#!/usr/bin/env python3
"""elementwise: memory-bound throughput on 16M (16*2^20) float32 elements, as the peer
shared/bench/peers/elementwise.py measures torch's.
  add: a + b  -> bytes = 3 * 4 * N (read a, read b, write c)
  exp: exp(a) -> bytes = 2 * 4 * N (read a, write c)
variant "out":   into a preallocated, already-touched output (ug.add(a, b, out=c)); measured
                 only when the binding takes out=
variant "alloc": a fresh result each call (c = a + b)
seconds = median per call over 20 calls (quick 5) after 2 warm-up calls; GB/s = bytes/1e9/s."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)

N = 16 * 1024 * 1024
REPS = 5 if args.quick else 20
ug.manual_seed(0)
a, b = ug.rand(N), ug.rand(N)
out = ug.zeros(N)


def takes_out(fn, *inputs):
    try:
        fn(*inputs, out=out)
        return True
    except TypeError:  # this binding has no out= for fn
        return False


cases = [("add", "alloc", 3, lambda: a + b), ("exp", "alloc", 2, lambda: ug.exp(a))]
if takes_out(ug.add, a, b):
    cases.append(("add", "out", 3, lambda: ug.add(a, b, out=out)))
if takes_out(ug.exp, a):
    cases.append(("exp", "out", 2, lambda: ug.exp(a, out=out)))

for name, variant, streams, fn in cases:
    fn()
    fn()
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    med = common.median(ts)
    nbytes = streams * 4 * N
    common.emit(ug, "elementwise", args.threads, med, {
        "case": f"{name}_{variant}", "quick": args.quick, "elements": N, "bytes": nbytes,
        "gbps_median": nbytes / med / 1e9, "gbps_best": nbytes / min(ts) / 1e9,
    })
