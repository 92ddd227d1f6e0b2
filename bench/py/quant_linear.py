#!/usr/bin/env python3
"""A float32 Linear against its dynamically quantized form (int8 weight, uint8 input quantized
each call) in unigrad and in torch 2.13 (torch.ao.quantization.quantize_dynamic, fbgemm): the
median time of one forward on a batch of 64, for 784x512 and 1024x1024, and the int8 kernel
unigrad ran (avx512vnni or portable; UG_CPU_ISA=avx2 forces the portable loop).

    .venv/bin/python bench/py/quant_linear.py [--threads 1] [--quick]

Prints one JSON object; not run by the tests.
"""
import json
import statistics
import time
import warnings

import torch

import unigrad as ug
from common import parse_args

args = parse_args(__doc__.splitlines()[0])
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)
warnings.filterwarnings("ignore")
REPEATS, INNER = (5, 20) if args.quick else (15, 100)


def median_us(fn, x):
    for _ in range(INNER // 4):
        fn(x)
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(INNER):
            fn(x)
        times.append((time.perf_counter() - t) / INNER * 1e6)
    return round(statistics.median(times), 1)


results = {"threads": args.threads, "int8_kernel": ug._C.quantization._int8_kernel(), "batch": 64}
for n_in, n_out in [(784, 512), (1024, 1024)]:
    ug.manual_seed(0)
    layer = ug.nn.Linear(n_in, n_out)
    qlayer = ug.ao.nn.quantized.dynamic.Linear.from_float(layer)
    tlayer = torch.nn.Linear(n_in, n_out)
    tqlayer = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tlayer))[0]
    x, tx = ug.randn(64, n_in), torch.randn(64, n_in)
    with ug.no_grad(), torch.no_grad():
        results[f"{n_in}x{n_out}"] = {
            "ug_float32_us": median_us(layer, x),
            "ug_int8_us": median_us(qlayer, x),
            "torch_float32_us": median_us(tlayer, tx),
            "torch_int8_us": median_us(tqlayer, tx),
        }
print(json.dumps(results, indent=1))
