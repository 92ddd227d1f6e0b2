#!/usr/bin/env python3
"""step_products: the matrix products of the two benchmarked steps, unigrad beside torch 2.13
on the same arrays and thread count: the MLP's (batch 64, 784-128; float32, as its jitted step
runs them) and the transformer block's (2048 tokens, d 128, ff 512; bfloat16, as its step runs
them under autocast). Each product: 3 warm-up calls, then 5 rounds of N calls, the fastest
round. Prints one row per product: microseconds and GFLOP/s of each, and unigrad / torch.
Which kernels ran is in the header (`ug env`: OpenBLAS's core, bfloat16 on amx or avx512bf16;
UG_CPU_ISA=avx512bf16 keeps the bf16 products off AMX).

    .venv/bin/python bench/py/step_products.py [--threads 1]"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
torch.set_num_threads(args.threads)
CALLS = 30 if args.quick else 100

PRODUCTS = [  # name, dtype, a's shape, b's shape, the product of (a, b) in either library
    ("MLP forward x·w1ᵀ [64,784]·[784,128]", "float32", (64, 784), (128, 784), lambda a, b: a @ b.t()),
    ("MLP dW1 = gᵀ·x [128,64]·[64,784]", "float32", (64, 128), (64, 784), lambda a, b: a.t() @ b),
    ("MLP dx = g·w1 [64,128]·[128,784]", "float32", (64, 128), (128, 784), lambda a, b: a @ b),
    ("linear1 x·wᵀ [2048,128]·[128,512]", "bfloat16", (2048, 128), (512, 128), lambda a, b: a @ b.t()),
    ("linear2 h·wᵀ [2048,512]·[512,128]", "bfloat16", (2048, 512), (128, 512), lambda a, b: a @ b.t()),
    ("input gradient g·w [2048,512]·[512,128]", "bfloat16", (2048, 512), (512, 128), lambda a, b: a @ b),
    ("weight gradient gᵀ·x [512,2048]·[2048,128]", "bfloat16", (2048, 512), (2048, 128), lambda a, b: a.t() @ b),
    ("weight gradient gᵀ·x [128,2048]·[2048,512]", "bfloat16", (2048, 128), (2048, 512), lambda a, b: a.t() @ b),
]


def fastest(fn):
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.perf_counter() - t) / CALLS)
    return best


isa, bf16 = ug._C._cpu_kernels()
print(f"threads {args.threads}, OpenBLAS {ug._C._openblas_core()}, SIMD {isa}, bfloat16 products on {bf16}")
print("| product | dtype | unigrad µs (GFLOP/s) | torch µs (GFLOP/s) | unigrad / torch |")
print("|---|---|---|---|---|")
rng = np.random.default_rng(0)
for name, dtype, sa, sb, product in PRODUCTS:
    a, b = (rng.standard_normal(s).astype(np.float32) for s in (sa, sb))
    ua, ub = (ug.tensor(v).to(getattr(ug, dtype)) for v in (a, b))
    ta, tb = (torch.tensor(v).to(getattr(torch, dtype)) for v in (a, b))
    out = product(ta, tb)
    flops = 2 * out.numel() * (a.size // out.shape[0])  # a holds M rows (or columns) of K
    tu, tt = fastest(lambda: product(ua, ub)), fastest(lambda: product(ta, tb))
    print(f"| {name} | {dtype} | {tu * 1e6:.1f} ({flops / tu / 1e9:.0f}) | {tt * 1e6:.1f} ({flops / tt / 1e9:.0f}) "
          f"| {tu / tt:.2f} |")
