#!/usr/bin/env python3
"""transformer_step_floor: the matrix products of bench/py/transformer_jit_step.py's step
(post-LN TransformerEncoderLayer(128, 4, 512), input (32, 64, 128), forward + backward) alone,
with the step's shapes, transposes and count: the q/k/v, output and feed-forward projections
(F.linear forward, ug.matmul for the input and weight gradients) and the attention's batched
products (scores, probabilities · v, and their four gradients), all through ug.matmul /
F.linear as the step calls them. Side by side in one process, in interleaved rounds: torch
2.13's eager step (shared/bench/peers/transformer_step.py's model), unigrad's eager step and
its ug.jit step. floor_seconds = the sum over the products of each one's fastest call (what
the step's products cost at best); the steps' medians; ratios floor / torch, jit / torch,
eager / torch, and jit / eager (the median of the rounds' ratios)."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
# torch's OpenMP workers spin between its parallel regions, on the cores unigrad's threads need
# next: they sleep instead, as between two processes.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ug = common.init_ug(args)
import torch  # noqa: E402

torch.set_num_threads(args.threads)
F = ug.nn.functional
ROUNDS, WARMUP = (12, 2) if args.quick else (40, 3)
B, S, D, H, FF = 32, 64, 128, 4, 512
N, HD, BH = B * S, D // H, B * H

x = ug.randn(B, S, D)
w_qkv, w_o, w_1, w_2 = ug.randn(3 * D, D), ug.randn(D, D), ug.randn(FF, D), ug.randn(D, FF)
b_qkv, b_o, b_1, b_2 = ug.randn(3 * D), ug.randn(D), ug.randn(FF), ug.randn(D)
a, h = ug.randn(B, S, D), ug.randn(B, S, FF)  # the attention's output, the GELU's output
g_qkv, g_d, g_ff = ug.randn(N, 3 * D), ug.randn(N, D), ug.randn(N, FF)  # incoming gradients
q, k, v, p = ug.randn(BH, S, HD), ug.randn(BH, S, HD), ug.randn(BH, S, HD), ug.randn(BH, S, S)
g_o, g_s = ug.randn(BH, S, HD), ug.randn(BH, S, S)
x2, a2, h2 = x.reshape(N, D), a.reshape(N, D), h.reshape(N, FF)


def flops(m, k_, n, batch=1):
    return 2 * batch * m * k_ * n


PRODUCTS = {  # name: (call, flops)
    "qkv = x·Wqkvᵀ+b [2048,128]·[128,384]": (lambda: F.linear(x, w_qkv, b_qkv), flops(N, D, 3 * D)),
    "scores = q·kᵀ [128×64,32]·[32,64]": (lambda: ug.matmul(q, k.transpose(-2, -1)), flops(S, HD, S, BH)),
    "o = P·v [128×64,64]·[64,32]": (lambda: ug.matmul(p, v), flops(S, S, HD, BH)),
    "out = a·Woᵀ+b [2048,128]·[128,128]": (lambda: F.linear(a, w_o, b_o), flops(N, D, D)),
    "ff1 = y·W1ᵀ+b [2048,128]·[128,512]": (lambda: F.linear(a, w_1, b_1), flops(N, D, FF)),
    "ff2 = h·W2ᵀ+b [2048,512]·[512,128]": (lambda: F.linear(h, w_2, b_2), flops(N, FF, D)),
    "dh = g·W2 [2048,128]·[128,512]": (lambda: ug.matmul(g_d, w_2), flops(N, D, FF)),
    "dW2 = gᵀ·h [128,2048]·[2048,512]": (lambda: ug.matmul(g_d.t(), h2), flops(D, N, FF)),
    "dy = g·W1 [2048,512]·[512,128]": (lambda: ug.matmul(g_ff, w_1), flops(N, FF, D)),
    "dW1 = gᵀ·y [512,2048]·[2048,128]": (lambda: ug.matmul(g_ff.t(), a2), flops(FF, N, D)),
    "da = g·Wo [2048,128]·[128,128]": (lambda: ug.matmul(g_d, w_o), flops(N, D, D)),
    "dWo = gᵀ·a [128,2048]·[2048,128]": (lambda: ug.matmul(g_d.t(), a2), flops(D, N, D)),
    "dP = dO·vᵀ [128×64,32]·[32,64]": (lambda: ug.matmul(g_o, v.transpose(-2, -1)), flops(S, HD, S, BH)),
    "dv = Pᵀ·dO [128×64,64]·[64,32]": (lambda: ug.matmul(p.transpose(-2, -1), g_o), flops(S, S, HD, BH)),
    "dq = dS·k [128×64,64]·[64,32]": (lambda: ug.matmul(g_s, k), flops(S, S, HD, BH)),
    "dk = dSᵀ·q [128×64,64]·[64,32]": (lambda: ug.matmul(g_s.transpose(-2, -1), q), flops(S, S, HD, BH)),
    "dx = g·Wqkv [2048,384]·[384,128]": (lambda: ug.matmul(g_qkv, w_qkv), flops(N, 3 * D, D)),
    "dWqkv = gᵀ·x [384,2048]·[2048,128]": (lambda: ug.matmul(g_qkv.t(), x2), flops(3 * D, N, D)),
}

# torch's eager step: the peer's model and step.
torch_step = common.torch_transformer_step(torch)

train_step, params, optimizer, ux, utarget = common.transformer_step(ug)
ug_steps = {"jit": ug.jit(train_step), "eager": train_step}
state = {name: (params, optimizer.init(params)) for name in ug_steps}


def ug_step(name):
    def run():
        p_, s_, loss = ug_steps[name](*state[name], ux, utarget)
        state[name] = (p_, s_)
        return float(loss)
    return run


STEPS = {"torch": torch_step, "eager": ug_step("eager"), "jit": ug_step("jit")}
best = {name: float("inf") for name in PRODUCTS}
times = {name: [] for name in STEPS}
for r in range(WARMUP + ROUNDS):
    for name, (call, _) in PRODUCTS.items():
        for _ in range(5):
            t0 = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - t0)
    for name, step in STEPS.items():
        t0 = time.perf_counter()
        step()
        if r >= WARMUP:
            times[name].append(time.perf_counter() - t0)

floor = sum(best.values())
total_flops = sum(f for _, f in PRODUCTS.values())
med = {name: statistics.median(t) for name, t in times.items()}
common.emit(ug, "transformer_step_floor", args.threads, floor, {
    "quick": args.quick, "step_gflop": total_flops / 1e9, "floor_gflops": total_flops / floor / 1e9,
    "ms_floor": floor * 1e3, **{f"ms_{name}": t * 1e3 for name, t in med.items()},
    "floor_over_torch": floor / med["torch"], "jit_over_torch": med["jit"] / med["torch"],
    "eager_over_torch": med["eager"] / med["torch"],
    "jit_over_eager": statistics.median(j / e for j, e in zip(times["jit"], times["eager"])),
    "products_us": {name: round(t * 1e6, 1) for name, t in best.items()},
    "gflops": {name: round(PRODUCTS[name][1] / t / 1e9, 1) for name, t in best.items()}})
