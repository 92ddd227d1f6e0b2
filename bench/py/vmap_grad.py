"""vmap_grad: per-example gradients of a small MLP (16-32-4, batch 64, float32) with
ug.vmap(ug.grad(loss)) against a Python loop of ug.grad, and against torch.func in the same
run. seconds = median time of one batch of per-example gradients. One JSON line per impl."""
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
import torch.func as tf  # noqa: E402

import unigrad as ug  # noqa: E402

QUICK = "--quick" in sys.argv
REPS, N = (3, 5) if QUICK else (7, 20)

rng = np.random.default_rng(0)
params = {"w1": rng.normal(size=(16, 32)) * 0.3, "b1": np.zeros(32), "w2": rng.normal(size=(32, 4)) * 0.3}
xs, ys = rng.normal(size=(64, 16)), rng.normal(size=(64, 4))


def loss(p, x, y):
    h = (x @ p["w1"] + p["b1"]).tanh()
    return ((h @ p["w2"] - y) ** 2).mean()


def timed(fn):
    fn()
    runs = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        runs.append((time.perf_counter() - t0) / N)
    return statistics.median(runs)


P = {k: ug.tensor(v, dtype=ug.float32) for k, v in params.items()}
X, Y = ug.tensor(xs, dtype=ug.float32), ug.tensor(ys, dtype=ug.float32)
g = ug.grad(loss)
PT = {k: torch.tensor(v, dtype=torch.float32) for k, v in params.items()}
XT, YT = torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.float32)
cases = {
    ("unigrad-python", "vmap_grad"): lambda: ug.vmap(g, in_axes=(None, 0, 0))(P, X, Y),
    ("unigrad-python", "loop_grad"): lambda: [g(P, X[i], Y[i]) for i in range(64)],
    ("torch-python", "vmap_grad"): lambda: tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))(PT, XT, YT),
}
for (impl, case), fn in cases.items():
    s = timed(fn)
    print(json.dumps({"bench": "vmap_grad", "impl": impl, "threads": ug.get_num_threads(), "seconds": s,
                      "extra": {"case": case, "quick": QUICK, "ms": s * 1e3}}))
