#!/usr/bin/env python3
"""transformer_step: the peer shared/bench/peers/transformer_step.py in unigrad. One
TransformerEncoderLayer(128, 4, 512, dropout 0, exact GELU, batch_first, post-LN) on random
(32, 64, 128) input, MSE loss against a random target, forward + backward + AdamW(1e-3, wd 0.01).
seconds = the median time of one step over 50 steps after 5 warm-up steps (quick: 15 after 3)."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)

D, H, FF, SEQ, B = 128, 4, 512, 64, 32
WARMUP, STEPS = (3, 15) if args.quick else (5, 50)

ug.manual_seed(0)
block = ug.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu", batch_first=True,
                                      norm_first=False)
block.train()
opt = ug.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)
x, target = ug.randn(B, SEQ, D), ug.randn(B, SEQ, D)
loss_fn = ug.nn.MSELoss()


def step():
    opt.zero_grad()
    loss = loss_fn(block(x), target)
    loss.backward()
    opt.step()
    return loss


for _ in range(WARMUP):
    step()
times = []
for _ in range(STEPS):
    t0 = time.perf_counter()
    loss = step()
    times.append(time.perf_counter() - t0)
times.sort()
common.emit(ug, "transformer_step", args.threads, common.median(times), {
    "quick": args.quick, "ms_per_step_median": common.median(times) * 1e3,
    "ms_per_step_min": times[0] * 1e3, "steps": STEPS, "warmup": WARMUP,
    "params": sum(p.numel() for p in block.parameters()), "final_loss": loss.item()})
