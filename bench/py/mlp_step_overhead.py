#!/usr/bin/env python3
"""mlp_step_overhead: where bench/py/mlp_jit_epoch.py's jitted step loses to the eager one, in one
process. The MLP 784-128-10 Adam step (batch 64, the batch gathered from Fashion-MNIST) as ug.jit,
as ug.jit donating the parameters and optimizer state, and torch-style eager (mlp_train_epoch.py's
loop), alternated in rounds of 300 steps (quick: fewer); then the same three on a 8-8-4 MLP with
batch 4, where the ops cost next to nothing and what is left is each form's own cost per step, with
the compiled program run alone (no Python call path) and the call's cache key alone. Medians in
microseconds a step."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
nn = ug.nn
ROUNDS, STEPS = (4, 100) if args.quick else (12, 300)


def forms(sizes, xs, ys, batches):
    """{name: run(batch indices)} for the jitted, donated and eager steps of an MLP of `sizes`."""
    def make():
        return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))

    model = make()
    optimizer = ug.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(params, opt_state, xs, ys, idx):
        loss, grads = ug.value_and_grad(
            lambda p: nn.functional.cross_entropy(model.apply(p, xs[idx]), ys[idx]))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates), opt_state, loss

    def jitted(donate):
        step = ug.jit(train_step, donate_argnums=donate)
        params = model.init(ug.random.key(0), ug.ones(1, sizes[0]))
        state = [params, optimizer.init(params)]

        def run(b):
            state[0], state[1], loss = step(state[0], state[1], xs, ys, b)
            float(loss)
        return run, step, state

    eager_model = make()
    eager_opt = ug.optim.Adam(eager_model.parameters(), lr=1e-3)

    def eager(b):
        x, y = xs.index_select(0, b), ys.index_select(0, b)
        eager_opt.zero_grad()
        loss = nn.functional.cross_entropy(eager_model(x), y)
        loss.backward()
        eager_opt.step()
        float(loss)

    plain, donated = jitted(()), jitted((0, 1))
    return {"ug.jit": plain[0], "ug.jit donated": donated[0], "eager": eager}, plain


def alternate(runs, batches):
    times = {name: [] for name in runs}
    for run in runs.values():
        for b in batches[:20]:
            run(b)
    for r in range(ROUNDS):
        chunk = batches[(r * STEPS) % (len(batches) - STEPS):][:STEPS]
        for name, run in runs.items():
            t0 = time.perf_counter()
            for b in chunk:
                run(b)
            times[name].append((time.perf_counter() - t0) / len(chunk) * 1e6)
    return {name: round(common.median(t), 1) for name, t in times.items()}


xtr, ytr = common.load_fashion_mnist_ug(ug, "train")
perm = np.random.default_rng(0).permutation(xtr.shape[0])
batches = [ug.tensor(perm[i:i + 64]) for i in range(0, xtr.shape[0] - 63, 64)]
runs, _ = forms((784, 128, 10), xtr, ytr, batches)
full = alternate(runs, batches)

xs, ys = ug.randn(1000, 8), ug.randint(0, 4, (1000,))
small_batches = [ug.tensor(np.arange(i, i + 4)) for i in range(0, 996, 4)] * 4
runs, (_, step, state) = forms((8, 8, 4), xs, ys, small_batches)
tiny = alternate(runs, small_batches)
b = small_batches[0]
key = step._fast_key((state[0], state[1], xs, ys, b), {})
program = step.lower(state[0], state[1], xs, ys, b)
for name, fn in {"program alone": lambda: program(key[1]),
                 "call key alone": lambda: step._fast_key((state[0], state[1], xs, ys, b), {})}.items():
    t = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(STEPS * 4):
            fn()
        t.append((time.perf_counter() - t0) / (STEPS * 4) * 1e6)
    tiny[name] = round(common.median(t), 2)
tiny["program nodes"] = len(program.node_types())

common.emit(ug, "mlp_step_overhead", args.threads, full["ug.jit"] * 1e-6,
            {"quick": args.quick, "us_per_step_784_128_10": full, "us_per_step_8_8_4_batch4": tiny})
