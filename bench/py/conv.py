"""conv: LeNet's convolution layers, forward and backward (batch 64, float32): conv 1->6 5x5
pad 2 on 28x28, relu, max-pool 2, conv 6->16 5x5, relu, max-pool 2, sum. unigrad and torch run
in one process, each at 1 and 2 threads, interleaved; seconds = the median of the repeats.
One JSON line per impl and thread count (at 1 thread also the thread's CPU time, which other
processes on a busy machine do not inflate), then the ratio of unigrad's time to torch's best."""
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

import unigrad as ug  # noqa: E402
import unigrad.nn.functional as UF  # noqa: E402

QUICK = "--quick" in sys.argv
REPS, N = (5, 5) if QUICK else (15, 20)

rng = np.random.default_rng(0)
arrays = {"x": rng.normal(size=(64, 1, 28, 28)), "w1": rng.normal(size=(6, 1, 5, 5)) * 0.2,
          "b1": rng.normal(size=(6,)) * 0.1, "w2": rng.normal(size=(16, 6, 5, 5)) * 0.1,
          "b2": rng.normal(size=(16,)) * 0.1}


def make(m):
    t = {k: m.tensor(v.astype(np.float32)) for k, v in arrays.items()}
    params = [t[k].requires_grad_() for k in ("w1", "b1", "w2", "b2")]
    F = TF if m is torch else UF

    def step():
        for p in params:
            p.grad = None
        h = F.max_pool2d(F.conv2d(t["x"], t["w1"], t["b1"], padding=2).relu(), 2)
        h = F.max_pool2d(F.conv2d(h, t["w2"], t["b2"]).relu(), 2)
        h.sum().backward()
    return step


def set_threads(m, n):
    (torch.set_num_threads if m is torch else ug.set_num_threads)(n)


steps = {"torch-python": make(torch), "unigrad-python": make(ug)}
times = {(impl, n): [] for impl in steps for n in (1, 2)}
cpu = {key: [] for key in times}  # the calling thread's CPU time: all of the work at 1 thread
for impl, step in steps.items():  # warm up
    for n in (1, 2):
        set_threads(torch if impl.startswith("torch") else ug, n)
        step()
for _ in range(REPS):
    for (impl, n), runs in times.items():
        set_threads(torch if impl.startswith("torch") else ug, n)
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(N):
            steps[impl]()
        runs.append((time.perf_counter() - t0) / N)
        cpu[(impl, n)].append((time.thread_time() - c0) / N)
medians = {key: statistics.median(runs) for key, runs in times.items()}
for (impl, n), s in medians.items():
    extra = {"quick": QUICK, "ms": round(s * 1e3, 3), "loadavg1": round(os.getloadavg()[0], 2)}
    if n == 1:  # robust against other processes on the machine, unlike the wall time
        extra["thread_cpu_ms"] = round(statistics.median(cpu[(impl, n)]) * 1e3, 3)
    print(json.dumps({"bench": "conv_lenet", "impl": impl, "threads": n, "seconds": s, "extra": extra}))
best_torch = min(s for (impl, _), s in medians.items() if impl == "torch-python")
for n in (1, 2):
    print(json.dumps({"bench": "conv_lenet_ratio", "threads": n,
                      "unigrad_over_torch_best": round(medians[("unigrad-python", n)] / best_torch, 3)}))
