#!/usr/bin/env python3
"""amp_memory_trace: where the transformer block's training step holds its memory, in float32 and
under bfloat16 autocast (issue 16's peak row, bench/amp.py): ug.memory's allocated and peak bytes,
beyond what was live before the step, after each layer's forward (a forward hook) and as each
layer's output gradient arrives (a tensor hook), then after the step. TransformerEncoderLayer(128,
4, 512, GELU, no dropout), batch 32, seq 64, MSE, AdamW; the second step of each mode is printed
(the first also makes the optimizer's state).

    .venv/bin/python bench/py/amp_memory_trace.py
"""
import contextlib

import unigrad as ug

MIB = 2**20


def trace(mixed):
    ug.manual_seed(0)
    block = ug.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
    opt = ug.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)
    x, target = ug.randn(32, 64, 128), ug.randn(32, 64, 128)
    lines, live = [], [0]

    def mark(what):
        lines.append(f"  {what:34s} allocated {(ug.memory.allocated() - live[0]) / MIB:6.2f} MiB, "
                     f"peak {(ug.memory.max_allocated() - live[0]) / MIB:6.2f} MiB")

    def on_forward(name):
        def hook(module, inputs, output):
            mark(f"forward  {name}")
            if isinstance(output, ug.Tensor) and output.requires_grad:
                output.register_hook(lambda g: mark(f"backward {name} ({g.dtype})"))
        return hook

    for name, module in block.named_modules():
        module.register_forward_hook(on_forward(name or "block"))
    for _ in range(2):
        lines.clear()
        opt.zero_grad()
        ug.memory.reset_peak()
        live[0] = ug.memory.allocated()
        with ug.autocast("cpu", dtype=ug.bfloat16) if mixed else contextlib.nullcontext():
            loss = ug.nn.functional.mse_loss(block(x).float(), target)
        mark("after the loss")
        loss.backward()
        opt.step()
        mark("after the step")
    return lines, (ug.memory.max_allocated() - live[0]) / MIB


peaks = {}
for mixed in (False, True):
    lines, peaks[mixed] = trace(mixed)
    print("bfloat16 autocast" if mixed else "float32")
    print("\n".join(lines))
print(f"peak bf16 / float32: {peaks[True]:.2f} / {peaks[False]:.2f} MiB = {peaks[True] / peaks[False]:.3f}")
