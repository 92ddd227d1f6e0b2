#!/usr/bin/env python3
"""mlp_train_epoch: the peer shared/bench/peers/mlp_train_epoch.py in unigrad. MLP 784-128(ReLU)-10,
Adam lr 1e-3, cross-entropy, batch 64, one shuffled epoch over the 60k Fashion-MNIST training
images (quick: the first 10k), batches taken with randperm + index_select, zero_grad and
loss.item() every step. seconds = the training loop's wall time; then test accuracy on the
10k test images and the process's peak RSS. With --compile the same step (the batch's gather,
zero_grad, forward, backward, opt.step()) is one @ug.compile program (issue 15's PyTorch-style
compiled step): its parameters, gradients and Adam's state are read and written in place."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__, compile_flag=True)
ug = common.init_ug(args)
nn = ug.nn
BATCH = 64

t0 = time.perf_counter()
xtr, ytr = common.load_fashion_mnist_ug(ug, "train")
xte, yte = common.load_fashion_mnist_ug(ug, "t10k")
if args.quick:
    xtr, ytr = xtr[:10000], ytr[:10000]
load_seconds = time.perf_counter() - t0

ug.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
opt = ug.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
n = xtr.shape[0]
perm = ug.randperm(n)



def step(xs, ys, idx):
    xb, yb = xs.index_select(0, idx), ys.index_select(0, idx)
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    return loss


compile_seconds = None
if args.compile:
    step = ug.compile(step)
    t0 = time.perf_counter()
    state = {k: v.clone() for k, v in model.state_dict().items()}, opt.state_dict()
    for size in sorted({BATCH, n % BATCH} - {0}):  # both batch shapes, then the start state back
        step(xtr, ytr, perm[:size])
    model.load_state_dict(state[0])
    opt.load_state_dict(state[1])
    compile_seconds = time.perf_counter() - t0

steps, loss_sum = 0, 0.0
cpu0 = common.cpu_seconds()
t0 = time.perf_counter()
for i in range(0, n, BATCH):
    loss_sum += step(xtr, ytr, perm[i:i + BATCH]).item()
    steps += 1
seconds = time.perf_counter() - t0
cpu_train = common.cpu_seconds() - cpu0

t0 = time.perf_counter()
model.eval()
with ug.no_grad():
    correct = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item())
                  for i in range(0, xte.shape[0], 1000))
eval_seconds = time.perf_counter() - t0

common.emit(ug, "mlp_compile_epoch" if args.compile else "mlp_train_epoch", args.threads, seconds, {
    "compile_seconds": compile_seconds,
    "quick": args.quick, "train_images": n, "steps": steps, "steps_per_s": steps / seconds,
    "test_accuracy": correct / xte.shape[0], "mean_train_loss": loss_sum / steps,
    "eval_seconds": eval_seconds, "load_seconds": load_seconds, "cpu_seconds_train": cpu_train,
    "peak_rss_mb": common.peak_rss_mb()})
