#!/usr/bin/env python3
"""mlp_jit_epoch: the JAX peer shared/bench/peers/jax/mlp_train_epoch.py in unigrad, the way the
articles' JAX section writes it: MLP 784-128(ReLU)-10 with PyTorch's default init, Adam (the
functional init/update, lr 1e-3), softmax cross-entropy, batch 64, one shuffled epoch over the
60k Fashion-MNIST training images (quick: the first 10k), the last partial batch kept. The
train step is one ug.jit program (the batch gathered inside it, forward, backward, Adam);
compile_seconds is the warm-up that traces both batch shapes. Each step reads the loss back
(float(loss)), as the peer does. seconds = the training loop's wall time. With --eager the same
step runs without ug.jit (the compiled mode's baseline); with --donate the step donates the
parameters and the optimizer state (jax.jit's donate_argnums=(0, 1)) and writes the new ones
over them."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

args = common.parse_args(__doc__, eager_flag=True, donate_flag=True)
EAGER = args.eager
ug = common.init_ug(args)
nn = ug.nn
BATCH = 64

xtr, ytr = common.load_fashion_mnist_ug(ug, "train")
xte, yte = common.load_fashion_mnist_ug(ug, "t10k")
if args.quick:
    xtr, ytr = xtr[:10000], ytr[:10000]
n = xtr.shape[0]

ug.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
params = model.init(ug.random.key(0), ug.ones(1, 784))
optimizer = ug.optim.Adam(model.parameters(), lr=1e-3)
opt_state = optimizer.init(params)


def loss_fn(params, x, y):
    return nn.functional.cross_entropy(model.apply(params, x), y)


def train_step(params, opt_state, xs, ys, idx):
    x, y = xs[idx], ys[idx]
    loss, grads = ug.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return ug.optim.apply_updates(params, updates), opt_state, loss


if not EAGER:
    train_step = ug.jit(train_step, donate_argnums=(0, 1) if args.donate else ())
perm = np.random.default_rng(0).permutation(n)
batches = [ug.tensor(perm[i:i + BATCH]) for i in range(0, n, BATCH)]
t0 = time.perf_counter()
for b in {b.shape[0]: b for b in batches}.values():  # both shapes: full batches and the last one
    train_step(*ug.tree_map(lambda t: t.clone(), (params, opt_state)), xtr, ytr, b)  # a donated copy
compile_seconds = time.perf_counter() - t0

steps, loss_sum = 0, 0.0
cpu0 = common.cpu_seconds()
t0 = time.perf_counter()
for b in batches:
    params, opt_state, loss = train_step(params, opt_state, xtr, ytr, b)
    loss_sum += float(loss)
    steps += 1
seconds = time.perf_counter() - t0
cpu_train = common.cpu_seconds() - cpu0

with ug.no_grad():
    correct = sum(int((model.apply(params, xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item())
                  for i in range(0, xte.shape[0], 1000))

common.emit(ug, "mlp_functional_epoch" if EAGER else "mlp_jit_epoch", args.threads, seconds, {
    "quick": args.quick, "train_images": n, "steps": steps, "steps_per_s": steps / seconds,
    "compile_seconds": compile_seconds, "test_accuracy": correct / xte.shape[0],
    "mean_train_loss": loss_sum / steps, "cpu_seconds_train": cpu_train,
    "peak_rss_mb": common.peak_rss_mb(), "donate": args.donate})
