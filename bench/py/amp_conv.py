#!/usr/bin/env python3
"""Convolution training steps under bfloat16 autocast, side by side with torch 2.13's CPU
autocast in one run (issue 16): the median step time of unigrad and torch in float32 and under
bf16 autocast, and unigrad's peak activation memory (ug.memory.max_allocated during a step,
less what was live before it).

- lenet: conv 1->6 5x5 pad 2, relu, maxpool, conv 6->16 5x5, relu, maxpool, linear 400-120-84-10,
  batch 64 of 28x28, cross-entropy, SGD with momentum;
- resnet: a small ResNet on batch 32 of 3x32x32: stem conv 3->32 3x3, a basic block of 32, a
  strided basic block 32->64 (1x1 stride-2 shortcut), a basic block of 64 (3x3 convs with batch
  norm and relu), global average pool, linear 64-10; cross-entropy, SGD with momentum.

    .venv/bin/python bench/py/amp_conv.py [--threads 1] [--quick] [--rounds 3]

Prints one JSON object; the figures go into docs/benchmarks.md by hand.
"""
import argparse
import contextlib
import json
import time

import torch

import unigrad as ug
from common import interleaved

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--quick", action="store_true")
parser.add_argument("--rounds", type=int, default=3)
args = parser.parse_args()
torch.set_num_threads(args.threads)
ug.set_num_threads(args.threads)
STEPS, WARMUP = (4, 1) if args.quick else (10, 2)


def lenet(m):
    nn = m.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def resnet(m):
    nn = m.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                          if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            y = m.relu(self.bn1(self.conv1(x)))
            return m.relu(self.bn2(self.conv2(y)) + self.short(x))

    return nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), Block(32, 32, 1),
                         Block(32, 64, 2), Block(64, 64, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


MODELS = {"lenet": (lenet, (64, 1, 28, 28)), "resnet": (resnet, (32, 3, 32, 32))}


def training_step(m, name, mixed):
    """A function running one training step, returning (seconds, peak activation bytes or None)."""
    make, shape = MODELS[name]
    m.manual_seed(0)
    model = make(m)
    opt = m.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = m.randn(*shape), m.randint(0, 10, (shape[0],))

    def step():
        opt.zero_grad()
        if m is ug:
            ug.memory.reset_peak()
            live = ug.memory.allocated()
        t0 = time.perf_counter()
        with m.autocast("cpu", dtype=m.bfloat16) if mixed else contextlib.nullcontext():
            loss = m.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()
        seconds = time.perf_counter() - t0
        return seconds, (ug.memory.max_allocated() - live if m is ug else None)

    return step


out = {"threads": args.threads, "quick": args.quick, "rounds": args.rounds}
# The steps take turns, STEPS steps each per round; the figures are medians over every round's
# steps.
steps = {f"{model}_{impl}_{'bf16' if mixed else 'fp32'}": training_step(m, model, mixed)
         for model in MODELS for impl, m in [("unigrad", ug), ("torch", torch)] for mixed in (False, True)}
ms, peaks = interleaved(steps, args.rounds, STEPS, WARMUP)
out.update({f"ms_{key}": v for key, v in ms.items()})
out.update({f"peak_bytes_{key}": v for key, v in peaks.items()})
for model in MODELS:
    out[f"{model}_ug_bf16_over_torch_bf16"] = out[f"ms_{model}_unigrad_bf16"] / out[f"ms_{model}_torch_bf16"]
    out[f"{model}_ug_fp32_over_torch_fp32"] = out[f"ms_{model}_unigrad_fp32"] / out[f"ms_{model}_torch_fp32"]
    out[f"{model}_peak_bf16_over_fp32"] = out[f"peak_bytes_{model}_unigrad_bf16"] / out[f"peak_bytes_{model}_unigrad_fp32"]
print(json.dumps(out, indent=1))
