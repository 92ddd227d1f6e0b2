#!/usr/bin/env python3
"""jit_fusion: elementwise chains with a trailing sum, compiled with ug.jit (fused: blocks of
UG_JIT_FUSE_BLOCK elements, docs/design.md "Fused elementwise chains") beside ug.jit unfused
(UG_JIT_FUSE_BLOCK=0 while compiling), ug eager, torch eager, torch.compile (when it compiles on
this install) and jax.jit, on 1M and 16M float32 elements (quick: 1M and 4M), interleaved.
  chain: ((x*a + b).relu() * c).exp().sum()
  gelu:  (0.5*x*(1 + tanh(0.7978845608*(x + 0.044715*x^3)))).sum()
One JSON line per (case, size, impl): median milliseconds per call; extra.blocks times the fused
program at other block sizes (--blocks). A group whose output is under 8 blocks runs whole (the
unfused computation): with blocks of 262144 the 1M chains do."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
import torch  # noqa: E402

torch.set_num_threads(args.threads)
try:
    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
except ImportError:
    jax = None

SIZES = [1 << 20, 1 << 22] if args.quick else [1 << 20, 1 << 24]
ROUNDS = 5 if args.quick else 9
BLOCKS = [4096, 16384, 65536, 262144]


def chain(m, x, a, b, c):
    return (m.exp(m.relu(x * a + b) * c)).sum()


def gelu(m, x, a, b, c):
    return (0.5 * x * (1.0 + m.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))).sum()


class UG:
    exp, tanh = staticmethod(ug.exp), staticmethod(ug.tanh)
    relu = staticmethod(lambda t: t.relu())


class TORCH:
    exp, tanh, relu = staticmethod(torch.exp), staticmethod(torch.tanh), staticmethod(torch.relu)


class JAX:
    exp = tanh = relu = None


if jax is not None:
    JAX.exp, JAX.tanh = staticmethod(jnp.exp), staticmethod(jnp.tanh)
    JAX.relu = staticmethod(lambda t: jnp.maximum(t, 0))


def compiled_ug(case, block):
    os.environ["UG_JIT_FUSE_BLOCK"] = str(block)
    return ug.jit(lambda *t: case(UG, *t))


def timed(fn, sync):
    def step():
        t0 = time.perf_counter()
        sync(fn())
        return time.perf_counter() - t0, None
    return step


for name, case in [("chain", chain), ("gelu", gelu)]:
    for n in SIZES:
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(n, dtype=np.float32) * 0.1 for _ in range(4)]
        ut = [ug.tensor(v) for v in arrays]
        tt = [torch.from_numpy(v) for v in arrays]
        steps = {"ug_eager": timed(lambda: case(UG, *ut), lambda r: r.item())}
        for block in [0] + BLOCKS:
            program = compiled_ug(case, block)
            program(*ut)
            steps[f"ug_jit_block{block}"] = timed(lambda p=program: p(*ut), lambda r: r.item())
        os.environ.pop("UG_JIT_FUSE_BLOCK")
        steps["torch_eager"] = timed(lambda: case(TORCH, *tt), lambda r: r.item())
        skipped = {}
        try:
            tc = torch.compile(lambda *t: case(TORCH, *t))
            tc(*tt)
            steps["torch_compile"] = timed(lambda: tc(*tt), lambda r: r.item())
        except Exception as e:  # noqa: BLE001 - any failure to compile is reported, not fatal
            skipped["torch_compile"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        if jax is not None:
            jt = [jnp.asarray(v) for v in arrays]
            jf = jax.jit(lambda *t: case(JAX, *t))
            jf(*jt).block_until_ready()
            steps["jax_jit"] = timed(lambda: jf(*jt), lambda r: r.block_until_ready())
        ms, _ = common.interleaved(steps, ROUNDS, 3, 1)
        fused = ms["ug_jit_block65536"]
        for impl, t in ms.items():
            common.emit(ug, "jit_fusion", args.threads, t / 1e3, {
                "case": name, "elements": n, "impl": impl, "quick": args.quick,
                "vs_ug_jit_fused": round(t / fused, 3), "skipped": skipped})
