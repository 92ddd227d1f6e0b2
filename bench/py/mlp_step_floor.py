#!/usr/bin/env python3
"""mlp_step_floor: the matrix products of bench/py/mlp_jit_epoch.py's step (MLP 784-128-10,
batch 64), each alone as the compiled program calls it (F.linear for the forward layers,
ug.matmul for the gradients), on 1 and on --threads threads, rounds of 100 calls interleaved,
the fastest round: what the step's products cost at best, the floor under the issue's targets
for that step. Also the forward with its weight stored transposed (the layout BLAS reads
fastest), for what reading the weight as [out, in] costs. One JSON line per thread count."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
F = ug.nn.functional
ROUNDS = 7 if args.quick else 15

x, w1, b1 = ug.randn(64, 784), ug.randn(128, 784), ug.randn(128)
h, w2, b2 = ug.randn(64, 128), ug.randn(10, 128), ug.randn(10)
g2, g1 = ug.randn(64, 10), ug.randn(64, 128)
w1t = w1.t().contiguous()
PRODUCTS = {  # name: (call, flops, part of the step)
    "forward 1: x·w1ᵀ+b1, [64,784]·[784,128]": (lambda: F.linear(x, w1, b1), 2 * 64 * 784 * 128, True),
    "forward 2: h·w2ᵀ+b2, [64,128]·[128,10]": (lambda: F.linear(h, w2, b2), 2 * 64 * 128 * 10, True),
    "dW2 = g2ᵀ·h, [10,64]·[64,128]": (lambda: ug.matmul(g2.t(), h), 2 * 10 * 64 * 128, True),
    "dh = g2·w2, [64,10]·[10,128]": (lambda: ug.matmul(g2, w2), 2 * 64 * 10 * 128, True),
    "dW1 = g1ᵀ·x, [128,64]·[64,784]": (lambda: ug.matmul(g1.t(), x), 2 * 128 * 64 * 784, True),
    "forward 1, weight stored [784,128]": (lambda: ug.matmul(x, w1t), 2 * 64 * 784 * 128, False),
}

for threads in sorted({1, args.threads}):
    ug.set_num_threads(threads)
    rounds = {name: [] for name in PRODUCTS}
    for _ in range(ROUNDS):
        for name, (call, _, _) in PRODUCTS.items():
            t0 = time.perf_counter()
            for _ in range(100):
                call()
            rounds[name].append((time.perf_counter() - t0) / 100)
    best = {name: min(t) for name, t in rounds.items()}
    step = sum(best[name] for name, (_, _, part) in PRODUCTS.items() if part)
    flops = sum(f for _, f, part in PRODUCTS.values() if part)
    common.emit(ug, "mlp_step_floor", threads, step, {
        "quick": args.quick, "step_mflop": flops / 1e6, "step_gflops": flops / step / 1e9,
        "products_us": {name: round(t * 1e6, 1) for name, t in best.items()},
        "gflops": {name: round(PRODUCTS[name][1] / t / 1e9, 1) for name, t in best.items()}})
