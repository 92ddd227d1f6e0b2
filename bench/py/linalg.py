"""linalg: ug.linalg against torch.linalg, one thread, on one 256x256 float64 matrix and a batch
of 64 32x32 float32 ones (well conditioned; symmetric positive-definite for cholesky and eigh).
unigrad and torch run in one process, interleaved; seconds = the calling thread's CPU time, the
median of the repeats. One JSON line per op, shape and impl, then unigrad's time over torch's."""
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
SHAPES = [((256, 256), "float64"), ((64, 32, 32), "float32")]
OPS = {
    "inv": lambda m, a, s: m.linalg.inv(a),
    "solve": lambda m, a, s: m.linalg.solve(a, s),
    "det": lambda m, a, s: m.linalg.det(a),
    "cholesky": lambda m, a, s: m.linalg.cholesky(s),
    "eigh": lambda m, a, s: m.linalg.eigh(s),
    "svd": lambda m, a, s: m.linalg.svd(a, full_matrices=False),
    "qr": lambda m, a, s: m.linalg.qr(a),
}


def inputs(shape, dtype):
    rng = np.random.default_rng(0)
    n = shape[-1]
    a = rng.standard_normal(shape) / np.sqrt(n) + np.eye(n) * 2
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(n)
    return {m: (m.tensor(a.astype(dtype)), m.tensor(spd.astype(dtype))) for m in (torch, ug)}


def main():
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    for shape, dtype in SHAPES:
        data = inputs(shape, dtype)
        name = "x".join(map(str, shape)) + "_" + dtype
        for op, fn in OPS.items():
            runs = {"torch-python": [], "unigrad-python": []}
            for impl, m in (("torch-python", torch), ("unigrad-python", ug)):
                fn(m, *data[m])  # warm up
            for _ in range(REPS):
                for impl, m in (("torch-python", torch), ("unigrad-python", ug)):
                    c0 = time.thread_time()
                    for _ in range(N):
                        fn(m, *data[m])
                    runs[impl].append((time.thread_time() - c0) / N)
            med = {impl: statistics.median(r) for impl, r in runs.items()}
            for impl, s in med.items():
                print(json.dumps({"bench": f"linalg_{op}_{name}", "impl": impl, "threads": 1, "seconds": s,
                                  "extra": {"quick": QUICK, "thread_cpu_ms": round(s * 1e3, 3),
                                            "loadavg1": round(os.getloadavg()[0], 2)}}))
            print(json.dumps({"bench": f"linalg_{op}_{name}_ratio", "threads": 1,
                              "unigrad_over_torch": round(med["unigrad-python"] / med["torch-python"], 3)}))


if __name__ == "__main__":
    main()
