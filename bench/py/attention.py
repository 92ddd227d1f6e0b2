"""scaled_dot_product_attention: unigrad's fused kernel (blockwise, the probabilities recomputed
in backward) beside torch 2.13's F.scaled_dot_product_attention (its CPU flash-attention
kernel) on [B, H, L, E] float32 inputs: the transformer step's shape (32, 4, 64, 32), and
causal self-attention at 256 and 1024 positions; forward alone and forward + backward (q's, k's
and v's gradients), one thread. unigrad and torch run in one process, interleaved; seconds =
wall time, the median of the repeats (not the calling thread's CPU time: unigrad's backward
runs on the autograd engine's thread). One JSON line per shape and impl, then
the ratio of unigrad's time to torch's per shape.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/py/attention.py [--quick]
"""
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
REPS = 3 if QUICK else 7
# (B, H, L, E, causal, calls per repeat)
SHAPES = [(32, 4, 64, 32, False, 10), (4, 8, 256, 64, True, 4), (1, 8, 1024, 64, True, 1)]


def make(m, b, h, length, e, causal):
    rng = np.random.default_rng(0)
    q, k, v = (m.tensor(rng.normal(size=(b, h, length, e)).astype(np.float32), requires_grad=True) for _ in range(3))
    g = m.tensor(rng.normal(size=(b, h, length, e)).astype(np.float32))
    sdpa = m.nn.functional.scaled_dot_product_attention

    def forward():
        with m.no_grad():
            sdpa(q, k, v, is_causal=causal)

    def forward_backward():
        sdpa(q, k, v, is_causal=causal).backward(g)
    return {"forward": forward, "forward_backward": forward_backward}


def main():
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    for b, h, length, e, causal, n in SHAPES[:2] if QUICK else SHAPES:
        fns = {"torch-python": make(torch, b, h, length, e, causal), "unigrad-python": make(ug, b, h, length, e, causal)}
        runs = {(impl, kind): [] for impl in fns for kind in fns[impl]}
        for (impl, kind) in runs:  # warm up
            fns[impl][kind]()
        for _ in range(REPS):
            for (impl, kind), r in runs.items():
                t0 = time.perf_counter()
                for _ in range(n):
                    fns[impl][kind]()
                r.append((time.perf_counter() - t0) / n)
        med = {key: statistics.median(r) for key, r in runs.items()}
        name = f"sdpa_{b}x{h}x{length}x{e}" + ("_causal" if causal else "")
        for (impl, kind), s in med.items():
            print(json.dumps({"bench": f"{name}_{kind}", "impl": impl, "threads": 1, "seconds": s,
                              "extra": {"quick": QUICK, "wall_ms": round(s * 1e3, 3),
                                        "loadavg1": round(os.getloadavg()[0], 2)}}))
        print(json.dumps({"bench": f"{name}_ratio", "threads": 1, **{
            f"{kind}_unigrad_over_torch": round(med[("unigrad-python", kind)] / med[("torch-python", kind)], 3)
            for kind in ("forward", "forward_backward")}}))


if __name__ == "__main__":
    main()
