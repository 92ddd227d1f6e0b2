#!/usr/bin/env python3
"""vmap_value_checks: per-example gradients of a bag-of-words classifier (an embedding of 1000
rows of 32, 20 tokens per example, mean-pooled, a 32-4 linear layer, cross-entropy; batch 64,
float32) under ug.vmap(ug.grad): the embedding's index check and the loss's class check read
every example at once. Against the same vmap made to call it once per example (UG_VMAP_LOOP:
the path such checks took before) and torch.func.vmap(grad), same threads. Prints one JSON line
per case: the median µs of 7 loops of 10 calls.

    .venv/bin/python bench/py/vmap_value_checks.py [--threads 1]
"""
import json
import os
import sys

import numpy as np
import torch
import torch.func as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
ug = common.init_ug(args)
torch.set_num_threads(args.threads)
LOOPS, CALLS = (3, 3) if args.quick else (7, 10)

rng = np.random.default_rng(0)
table, weight = rng.normal(size=(1000, 32)) * 0.1, rng.normal(size=(32, 4)) * 0.3
tokens, classes = rng.integers(0, 1000, (64, 20)), rng.integers(0, 4, 64)


def loss_of(m):
    def loss(e, w, ids, y):
        pooled = m.nn.functional.embedding(ids, e).mean(0)
        return m.nn.functional.cross_entropy((pooled @ w)[None], y[None])
    return loss


U = [ug.tensor(table, dtype=ug.float32), ug.tensor(weight, dtype=ug.float32), ug.tensor(tokens), ug.tensor(classes)]
T = [torch.tensor(table, dtype=torch.float32), torch.tensor(weight, dtype=torch.float32), torch.tensor(tokens),
     torch.tensor(classes)]
grads = ug.vmap(ug.grad(loss_of(ug), argnums=(0, 1)), in_axes=(None, None, 0, 0))
torch_grads = tf.vmap(tf.grad(loss_of(torch), argnums=(0, 1)), in_dims=(None, None, 0, 0))
for a, b, t in zip(grads(*U), common.per_example(grads, *U), torch_grads(*T)):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
cases = {
    "unigrad vmap": lambda: grads(*U),
    "unigrad per_example": lambda: common.per_example(grads, *U),
    "torch vmap": lambda: torch_grads(*T),
}
for name, fn in cases.items():
    impl, case = name.split()
    print(json.dumps({"bench": "vmap_value_checks", "impl": impl, "threads": args.threads, "case": case,
                      "us": round(common.median_us(fn, LOOPS, CALLS), 1)}), flush=True)
