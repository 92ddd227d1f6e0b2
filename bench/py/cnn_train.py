#!/usr/bin/env python3
"""cnn_train: the peer shared/bench/peers/cnn_train.py in unigrad. LeNet (conv 1->6 5x5 pad 2,
relu, maxpool 2, conv 6->16 5x5, relu, maxpool 2, linear 400-120-84-10 with relu), SGD lr 0.01
momentum 0.9, cross-entropy, batch 64, one shuffled epoch over the 60k Fashion-MNIST training
images (quick: the first 10k); seconds = the epoch's wall time; then test accuracy."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
nn = ug.nn
BATCH = 64


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(ug.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(ug.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = ug.relu(self.fc1(x))
        x = ug.relu(self.fc2(x))
        return self.fc3(x)


(xtr, ytr), (xte, yte) = common.load_fashion_mnist()
if args.quick:
    xtr, ytr = xtr[:10000], ytr[:10000]
xtr, ytr = ug.from_numpy(xtr).reshape(-1, 1, 28, 28), ug.from_numpy(ytr)
xte, yte = ug.from_numpy(xte).reshape(-1, 1, 28, 28), ug.from_numpy(yte)

ug.manual_seed(0)
model = LeNet()
opt = ug.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
n = xtr.shape[0]
perm = ug.randperm(n)

steps, loss_sum = 0, 0.0
t0 = time.perf_counter()
for i in range(0, n, BATCH):
    idx = perm[i:i + BATCH]
    xb, yb = xtr.index_select(0, idx), ytr.index_select(0, idx)
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    loss_sum += loss.item()
    steps += 1
seconds = time.perf_counter() - t0

model.eval()
with ug.no_grad():
    correct = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item())
                  for i in range(0, xte.shape[0], 1000))
common.emit(ug, "cnn_train", args.threads, seconds, {
    "quick": args.quick, "train_images": n, "steps": steps, "steps_per_s": steps / seconds,
    "ms_per_step": seconds / steps * 1e3, "test_accuracy": correct / xte.shape[0],
    "mean_train_loss": loss_sum / steps})
