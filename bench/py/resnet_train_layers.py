"""resnet_train_layers: ResNet-18's convolutions one by one as its training step runs them
(batch 2, float32, no bias, one thread), unigrad against torch eager: the forward pass, the
input gradient and the weight gradient of each shape, each timed alone (the gradients as the
time of forward + that gradient's backward, less the forward's). Impls run interleaved;
milliseconds = the median of the repeats of the calling thread's CPU time. One JSON line per
shape, with how many times the network runs it, then the totals weighted by those counts (the
stem has no input gradient in the network). `--quick`: fewer repeats; `--only=I,J`: those
shapes' indices."""
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

import unigrad as ug  # noqa: E402
import unigrad.nn.functional as UF  # noqa: E402
from resnet_layers import SHAPES, cpu_ms  # noqa: E402  (ResNet-18's convolutions, CPU time of N calls)

QUICK = "--quick" in sys.argv
REPS, N = (3, 3) if QUICK else (7, 5)
ONLY = next((set(map(int, a.split("=", 1)[1].split(","))) for a in sys.argv if a.startswith("--only=")), None)
BATCH = 2


def main():
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    rng = np.random.default_rng(0)
    parts = ("forward", "input_grad", "weight_grad")
    totals = {(impl, part): 0.0 for impl in ("unigrad", "torch") for part in parts}
    for index, (cin, cout, k, s, pad, size, count) in enumerate(SHAPES):
        if ONLY is not None and index not in ONLY:
            continue
        x = rng.normal(size=(BATCH, cin, size, size)).astype(np.float32)
        w = (rng.normal(size=(cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        out = (size + 2 * pad - k) // s + 1
        gy = rng.normal(size=(BATCH, cout, out, out)).astype(np.float32)
        fns = {}
        for impl, m, F in (("torch", torch, TF), ("unigrad", ug, UF)):
            # A weight changed in place each call, as an optimizer step does: no packed-weight cache hits.
            xs, ws, gs = m.tensor(x), m.tensor(w), m.tensor(gy)
            xg, wg = m.tensor(x).requires_grad_(), m.tensor(w).requires_grad_()

            def forward(m=m, F=F, xs=xs, ws=ws):
                with m.no_grad():
                    ws.mul_(1.0)
                    F.conv2d(xs, ws, stride=s, padding=pad)

            def input_grad(m=m, F=F, xg=xg, ws=ws, gs=gs):
                with m.no_grad():
                    ws.mul_(1.0)
                m.autograd.grad(F.conv2d(xg, ws, stride=s, padding=pad), [xg], [gs])

            def weight_grad(m=m, F=F, xs=xs, wg=wg, gs=gs):
                with m.no_grad():
                    wg.mul_(1.0)
                m.autograd.grad(F.conv2d(xs, wg, stride=s, padding=pad), [wg], [gs])
            fns[impl] = {"forward": forward, "input_grad": input_grad, "weight_grad": weight_grad}
        runs = {(impl, part): [] for impl in fns for part in parts}
        for (impl, part) in runs:
            fns[impl][part]()
        for _ in range(REPS):
            for (impl, part), r in runs.items():
                r.append(cpu_ms(fns[impl][part], N))
        med = {key: statistics.median(r) for key, r in runs.items()}
        ms = {}
        for impl in fns:
            f = med[(impl, "forward")]
            ms[impl] = {"forward": round(f, 3), "input_grad": round(med[(impl, "input_grad")] - f, 3),
                        "weight_grad": round(med[(impl, "weight_grad")] - f, 3)}
            for part in parts:
                if part != "input_grad" or index != 0:
                    totals[(impl, part)] += ms[impl][part] * count
        ratio = {part: round(ms["unigrad"][part] / ms["torch"][part], 2) for part in parts}
        print(json.dumps({"bench": "resnet18_train_conv_layer", "index": index,
                          "shape": f"{cin}->{cout} {k}x{k}/{s} on {size}x{size}", "count": count, "ms": ms,
                          "unigrad_over_torch": ratio}))
    total = {impl: {part: round(totals[(impl, part)], 2) for part in parts} for impl in ("unigrad", "torch")}
    print(json.dumps({"bench": "resnet18_train_conv_total", "ms": total,
                      "unigrad_over_torch": round(sum(total["unigrad"].values()) / sum(total["torch"].values()), 3),
                      "loadavg1": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
