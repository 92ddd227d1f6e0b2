"""Shared helpers for unigrad's Python benchmarks. They take the same flags and print the
same JSON lines as the PyTorch peers (shared/bench/peers/common.py), with impl
"unigrad-python", so that bench/run.py reads both alike."""
import argparse
import json
import os
import resource
import statistics
import time

IMPL = "unigrad-python"


def parse_args(description, eager_flag=False, donate_flag=False, compile_flag=False):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--threads", type=int, default=2,
                   help="threads for unigrad's kernels and OpenBLAS (ug.set_num_threads); default 2")
    p.add_argument("--quick", action="store_true", help="small version (< ~10 s)")
    if eager_flag:  # the compiled-mode benchmarks: the same step without ug.jit
        p.add_argument("--eager", action="store_true", help="run the step eagerly, without ug.jit")
    if donate_flag:  # jax.jit's donate_argnums on the parameters and the optimizer state
        p.add_argument("--donate", action="store_true", help="donate the params and the optimizer state to the step")
    if compile_flag:  # the PyTorch-style step under ug.compile
        p.add_argument("--compile", action="store_true", help="run the step as one ug.compile program")
    return p.parse_args()


def load_fashion_mnist_ug(ug, prefix):
    """Images as (N, 784) float32 in [0, 1] and int64 labels, read with ug.data.read_idx."""
    x = ug.data.read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    y = ug.data.read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return x.reshape(x.shape[0], -1).float().div_(255.0), y.long()


def init_ug(args):
    import unigrad as ug
    ug.set_num_threads(args.threads)
    return ug


def _cpu_snapshot():
    """(wall s, CPU s busy on the whole machine, CPU s stolen, CPU s of this process)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / tick  # user nice system irq softirq
    own = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    return time.perf_counter(), busy, v[7] / tick, own


_window = _cpu_snapshot()


def _other_load():
    """Cores' worth of CPU that other processes used (and the hypervisor stole) since the
    previous line: the same noise indicator as the peers' lines."""
    global _window
    now = _cpu_snapshot()
    wall = now[0] - _window[0]
    other = max(0.0, (now[1] - _window[1]) - (now[3] - _window[3])) / wall
    steal = (now[2] - _window[2]) / wall
    _window = now
    return round(other, 2), round(steal, 2)


def transformer_step(ug):
    """The JAX peer's transformer workload (shared/bench/peers/jax/transformer_step.py) in
    unigrad's functional style: a post-LN TransformerEncoderLayer(128, 4, 512, exact GELU, no
    dropout), input (32, 64, 128) ~ N(0,1), MSE against a random target, AdamW (lr 1e-3, weight
    decay 0.01) by init/update. Returns (train_step, params, optimizer, x, target)."""
    ug.manual_seed(0)
    block = ug.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
    x, target = ug.randn(32, 64, 128), ug.randn(32, 64, 128)
    params = block.init(ug.random.key(0), x)
    optimizer = ug.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)

    def loss_fn(params, x, target):
        return ug.nn.functional.mse_loss(block.apply(params, x), target)

    def train_step(params, opt_state, x, target):
        loss, grads = ug.value_and_grad(loss_fn)(params, x, target)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates), opt_state, loss

    return train_step, params, optimizer, x, target


def torch_transformer_step(torch):
    """transformer_step's workload as torch's eager peer runs it (the module's own AdamW, in place):
    one training step, returning the loss."""
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
    opt = torch.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)
    x, target = torch.randn(32, 64, 128), torch.randn(32, 64, 128)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(block(x), target)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def emit(ug, bench, threads, seconds, extra=None):
    extra = dict(extra or {})
    extra["ug_threads"] = ug.get_num_threads()
    extra["other_cpu_cores"], extra["steal_cores"] = _other_load()
    extra.setdefault("loadavg1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": bench, "impl": IMPL, "threads": threads,
                      "seconds": seconds, "extra": extra}), flush=True)


def median(xs):
    return statistics.median(xs)


def median_us(fn, loops, calls):
    """The median over `loops` loops of the µs one of `calls` calls of fn takes (after one warm-up call)."""
    fn()
    times = []
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def per_example(fn, *args):
    """fn(*args) with ug.vmap calling its function once per example (UG_VMAP_LOOP): the path an
    op without a batching rule takes."""
    os.environ["UG_VMAP_LOOP"] = "1"
    try:
        return fn(*args)
    finally:
        del os.environ["UG_VMAP_LOOP"]


def interleaved(steps, rounds, per_round, warmup):
    """Runs named steps (each returning (seconds, peak bytes or None)) in turns, `per_round` calls
    each per round, so that load on a shared machine falls on all of them alike: the median
    milliseconds and the largest peak (where the step reports one) of each, by name."""
    times, peaks = {key: [] for key in steps}, {key: [] for key in steps}
    for step in steps.values():
        for _ in range(warmup):
            step()
    for _ in range(rounds):
        for key, step in steps.items():
            for _ in range(per_round):
                seconds, peak = step()
                times[key].append(seconds)
                if peak is not None:
                    peaks[key].append(peak)
    return ({key: statistics.median(t) * 1e3 for key, t in times.items()},
            {key: max(p) for key, p in peaks.items() if p})


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # ru_maxrss is in KiB


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


DATA_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load_fashion_mnist(data_dir=DATA_DIR):
    """Fashion-MNIST as the peers read it: float32 numpy arrays in [0, 1] of shape (N, 784)
    and int64 labels, for (train, test)."""
    import gzip

    import numpy as np

    def read_idx(path):
        with gzip.open(path, "rb") as f:
            data = f.read()
        ndim = data[3]
        dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
        return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)

    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
        out[split] = (x.reshape(x.shape[0], -1).astype(np.float32) / 255.0, y.astype(np.int64))
    return out["train"], out["test"]
