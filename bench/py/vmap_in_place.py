#!/usr/bin/env python3
"""vmap_in_place: a per-example function made of in-place writes (add_, clamp_, a column
assignment, mul_ by a batched value; [32, 16] per example, batch 256, float32) under ug.vmap,
and the per-example gradients of an MLP 16-32-4 with an in-place ReLU and a cross-entropy loss
(batch 64; torch.func's per-sample-gradient recipe) under ug.vmap(ug.grad), also with a write
into a slice of the activation; each against the same vmap made to call it once per example
(UG_VMAP_LOOP: the path in-place ops took before they had batching rules, and writes into
views under vmap(grad) before stop 54) and torch.func.vmap, same threads.
Prints one JSON line per case: the median µs of 7 loops of 10 calls.

    .venv/bin/python bench/py/vmap_in_place.py [--threads 1]
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
xs, bias = rng.normal(size=(256, 32, 16)), rng.normal(size=(16,))


def f(x, b):
    y = x * 2.0
    y.add_(b).clamp_(-1.0, 1.0)
    y[:, 0] = 0.0
    return y.mul_(x.tanh())


def mlp_loss(m, write_slice=False):
    def loss(w1, w2, x, y):
        h = x @ w1
        if write_slice:
            h[:8].mul_(0.5)  # a write into a view of the batched pre-activation
        h.relu_()
        return m.nn.functional.cross_entropy((h @ w2)[None], y[None])
    return loss


X, B = ug.tensor(xs, dtype=ug.float32), ug.tensor(bias, dtype=ug.float32)
XT, BT = torch.tensor(xs, dtype=torch.float32), torch.tensor(bias, dtype=torch.float32)
batched = ug.vmap(f, in_axes=(0, None))
mlp = [rng.normal(size=s) * 0.3 for s in [(16, 32), (32, 4), (64, 16)]]
classes = rng.integers(0, 4, 64)
M = [ug.tensor(a, dtype=ug.float32) for a in mlp] + [ug.tensor(classes)]
MT = [torch.tensor(a, dtype=torch.float32) for a in mlp] + [torch.tensor(classes)]
grads = ug.vmap(ug.grad(mlp_loss(ug), argnums=(0, 1)), in_axes=(None, None, 0, 0))
slice_grads = ug.vmap(ug.grad(mlp_loss(ug, True), argnums=(0, 1)), in_axes=(None, None, 0, 0))

np.testing.assert_allclose(batched(X, B).numpy(), common.per_example(batched, X, B).numpy(), rtol=1e-6, atol=1e-6)
for g in (grads, slice_grads):
    for a, b in zip(g(*M), common.per_example(g, *M)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
cases = {
    ("unigrad", "vmap"): lambda: batched(X, B),
    ("unigrad", "per_example"): lambda: common.per_example(batched, X, B),
    ("torch", "vmap"): lambda: tf.vmap(f, in_dims=(0, None))(XT, BT),
    ("unigrad", "vmap_grad_relu_"): lambda: grads(*M),
    ("unigrad", "per_example_grad_relu_"): lambda: common.per_example(grads, *M),
    ("torch", "vmap_grad_relu_"): lambda: tf.vmap(tf.grad(mlp_loss(torch), argnums=(0, 1)),
                                                  in_dims=(None, None, 0, 0))(*MT),
    ("unigrad", "vmap_grad_slice_write"): lambda: slice_grads(*M),
    ("unigrad", "per_example_grad_slice_write"): lambda: common.per_example(slice_grads, *M),
    ("torch", "vmap_grad_slice_write"): lambda: tf.vmap(tf.grad(mlp_loss(torch, True), argnums=(0, 1)),
                                                        in_dims=(None, None, 0, 0))(*MT),
}
for (impl, case), fn in cases.items():
    print(json.dumps({"bench": "vmap_in_place", "impl": impl, "threads": args.threads, "case": case,
                      "us": round(common.median_us(fn, LOOPS, CALLS), 1)}), flush=True)
