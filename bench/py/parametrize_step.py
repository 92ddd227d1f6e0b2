#!/usr/bin/env python3
"""A training step (forward, backward) of Linear(256, 256) on a (64, 256) batch, plain and under
parametrizations.weight_norm / spectral_norm, unigrad and torch 2.13 side by side in one run,
one thread each, interleaved: the median milliseconds and unigrad / torch.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/py/parametrize_step.py [--rounds 15]
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unigrad as ug  # noqa: E402
from common import interleaved  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--rounds", type=int, default=15)
args = parser.parse_args()
torch.set_num_threads(1)
ug.set_num_threads(1)

x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
ux, tx = ug.tensor(x), torch.tensor(x)
steps = {}
for kind in ("plain", "weight_norm", "spectral_norm"):
    t = torch.nn.Linear(256, 256)
    u = ug.nn.Linear(256, 256)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    if kind != "plain":
        getattr(ug.nn.utils.parametrizations, kind)(u)
        getattr(torch.nn.utils.parametrizations, kind)(t)

    def step(layer, inp, per_call=20):
        def run():
            start = time.perf_counter()
            for _ in range(per_call):
                layer.zero_grad()
                layer(inp).sum().backward()
            return (time.perf_counter() - start) / per_call, None
        return run

    steps[(kind, "unigrad")] = step(u, ux)
    steps[(kind, "torch")] = step(t, tx)
ms, _ = interleaved(steps, args.rounds, 1, 3)
for kind in ("plain", "weight_norm", "spectral_norm"):
    u, t = ms[(kind, "unigrad")], ms[(kind, "torch")]
    print(f"{kind:14s} unigrad {u:.3f} ms  torch {t:.3f} ms  unigrad/torch {u / t:.2f}")
