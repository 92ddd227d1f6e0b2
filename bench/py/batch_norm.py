"""batch_norm: BatchNorm2d in training mode (batch statistics, running-statistics update) on
ResNet-18's activation shapes at batch 2, forward alone and forward + backward (the input's,
weight's and bias's gradients), float32, one thread. unigrad and torch run in one process,
interleaved; seconds = the calling thread's CPU time, the median of the repeats. One JSON line
per shape and impl, then the ratio of unigrad's time to torch's per shape."""
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402

import unigrad as ug  # noqa: E402

QUICK = "--quick" in sys.argv
REPS, N = (5, 3) if QUICK else (9, 10)
SHAPES = [(2, 64, 112, 112), (2, 128, 28, 28), (2, 512, 7, 7)]


def make(m, shape):
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    bn = m.nn.BatchNorm2d(shape[1]).train()
    xt, g = m.tensor(x, requires_grad=True), m.tensor(np.ones_like(x))

    def forward():
        with m.no_grad():
            bn(xt)

    def forward_backward():
        bn(xt).backward(g)
    return {"forward": forward, "forward_backward": forward_backward}


def main():
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    for shape in SHAPES:
        fns = {"torch-python": make(torch, shape), "unigrad-python": make(ug, shape)}
        runs = {(impl, kind): [] for impl in fns for kind in fns[impl]}
        for (impl, kind) in runs:  # warm up
            fns[impl][kind]()
        for _ in range(REPS):
            for (impl, kind), r in runs.items():
                c0 = time.thread_time()
                for _ in range(N):
                    fns[impl][kind]()
                r.append((time.thread_time() - c0) / N)
        med = {key: statistics.median(r) for key, r in runs.items()}
        name = "batch_norm_" + "x".join(map(str, shape))
        for (impl, kind), s in med.items():
            print(json.dumps({"bench": f"{name}_{kind}", "impl": impl, "threads": 1, "seconds": s,
                              "extra": {"quick": QUICK, "thread_cpu_ms": round(s * 1e3, 3),
                                        "loadavg1": round(os.getloadavg()[0], 2)}}))
        print(json.dumps({"bench": f"{name}_ratio", "threads": 1, **{
            f"{kind}_unigrad_over_torch": round(med[("unigrad-python", kind)] / med[("torch-python", kind)], 3)
            for kind in ("forward", "forward_backward")}}))


if __name__ == "__main__":
    main()
