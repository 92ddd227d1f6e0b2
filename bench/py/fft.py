"""fft: ug.fft (FFTW) against torch.fft (MKL in torch's CPU build) in one process, interleaved:
a 1-D complex64 fft of 1024 and of 65536 points, rfft of a float32 batch 64 x 1024, and fft2
of a complex64 256 x 256; at 1 and 2 threads. seconds = wall time per call, the median of the
repeats. One JSON line per case, threads and impl, then unigrad's time over torch's.

    .venv/bin/python bench/py/fft.py [--quick]
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
REPS = 5 if QUICK else 15


def complex_input(shape):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


CASES = {  # name: (function of the module, input)
    "fft_c64_1024": (lambda m, a: m.fft.fft(a), complex_input((1024,))),
    "fft_c64_65536": (lambda m, a: m.fft.fft(a), complex_input((65536,))),
    "rfft_f32_64x1024": (lambda m, a: m.fft.rfft(a), np.random.default_rng(1).standard_normal((64, 1024)).astype(np.float32)),
    "fft2_c64_256x256": (lambda m, a: m.fft.fft2(a), complex_input((256, 256))),
}


def per_call(fn, m, a):
    """Seconds per call, timing enough calls to fill about 20 ms."""
    fn(m, a)  # warm up: plans, caches
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(m, a)
        took = time.perf_counter() - t0
        if took > 0.02:
            return took / calls
        calls *= 4


def main():
    for threads in (1, 2):
        torch.set_num_threads(threads)
        ug.set_num_threads(threads)
        for name, (fn, data) in CASES.items():
            inputs = {torch: torch.tensor(data), ug: ug.tensor(data)}
            runs = {"torch-python": [], "unigrad-python": []}
            for _ in range(REPS):
                for impl, m in (("torch-python", torch), ("unigrad-python", ug)):
                    runs[impl].append(per_call(fn, m, inputs[m]))
            med = {impl: statistics.median(r) for impl, r in runs.items()}
            for impl, s in med.items():
                print(json.dumps({"bench": f"fft_{name}", "impl": impl, "threads": threads, "seconds": s,
                                  "extra": {"quick": QUICK, "us": round(s * 1e6, 1),
                                            "loadavg1": round(os.getloadavg()[0], 2)}}))
            print(json.dumps({"bench": f"fft_{name}_ratio", "threads": threads,
                              "unigrad_over_torch": round(med["unigrad-python"] / med["torch-python"], 3)}))


if __name__ == "__main__":
    main()
