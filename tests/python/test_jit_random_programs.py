"""Random programs under ug.jit against eager unigrad and torch 2.13: chains of elementwise ops
with broadcasting, reductions, views, products, softmax and concatenation, drawn by a seeded
generator. The compiler's passes (simplification, fusion in blocks, the memory plan) must
give the eager values and gradients, on every call of the cached program.

Fusion runs in blocks of 8 elements here (UG_JIT_FUSE_BLOCK), so that these small values are
fused block by block as large ones are by default."""
import random

import numpy as np
import pytest
import torch

import unigrad as ug

SHAPES = {"a": (4, 6), "b": (6,), "c": (4, 1), "d": (6, 4)}

UNARY = {
    "tanh": lambda v: v.tanh(),
    "sigmoid": lambda v: v.sigmoid(),
    "sin": lambda v: v.sin(),
    "abs": lambda v: v.abs(),
    "relu": lambda v: v.relu(),
    "neg": lambda v: -v,
    "square": lambda v: v * v,
    "exp": lambda v: v.clamp(-3, 3).exp(),
    "log": lambda v: (v.abs() + 1).log(),
    "sqrt": lambda v: (v.abs() + 0.1).sqrt(),
    "scale": lambda v: v * 0.5 + 0.25,
}
BINARY = {
    "add": lambda u, v: u + v,
    "sub": lambda u, v: u - v,
    "mul": lambda u, v: u * v,
    "div": lambda u, v: u / (v.abs() + 0.5),
    "maximum": lambda u, v: u.maximum(v),
    "minimum": lambda u, v: u.minimum(v),
    "where": lambda u, v: u.where(u > v, v * 0.5),
}


# in-place writes of a value (broadcast to the target's shape) into the target
WRITES = {
    "add_": lambda t, v: t.add_(v),
    "mul_": lambda t, v: t.mul_(v.tanh()),
    "copy_": lambda t, v: t.copy_(v * 0.5),
    "tanh_": lambda t, v: t.tanh_(),
    "clamp_": lambda t, v: t.clamp_(-0.5, 0.5),
    "setitem": lambda t, v: t.__setitem__(0, v[0] if v.dim() == t.dim() else v),
}


# one-operand ops: name -> (fn(m, v, p), p drawn for v's shape s, or None where it does not apply)
def _gather_index(r, s, axis):
    return axis, r.choices(range(s[axis]), k=int(np.prod(s)))


MORE = {
    "cumsum": (lambda m, v, p: v.cumsum(p), lambda r, s: r.randrange(len(s)) if s else None),
    "cumprod": (lambda m, v, p: v.cumprod(p), lambda r, s: r.randrange(len(s)) if s else None),
    "logcumsumexp": (lambda m, v, p: v.logcumsumexp(p), lambda r, s: r.randrange(len(s)) if s else None),
    "flip": (lambda m, v, p: v.flip(p), lambda r, s: r.randrange(len(s)) if s else None),
    "roll": (lambda m, v, p: v.roll(1, p), lambda r, s: r.randrange(len(s)) if s else None),
    "sort": (lambda m, v, p: v.sort(p).values, lambda r, s: r.randrange(len(s)) if s else None),
    "topk": (lambda m, v, p: v.topk(2, -1).values, lambda r, s: 0 if s and s[-1] >= 2 else None),
    "layer_norm": (lambda m, v, p: m.nn.functional.layer_norm(v, v.shape[-1:]),
                   lambda r, s: 0 if s and s[-1] > 1 else None),
    "triu": (lambda m, v, p: v.triu(p), lambda r, s: r.choice([-1, 0, 1]) if len(s) == 2 else None),
    "pow": (lambda m, v, p: (v.abs() + 0.5) ** p, lambda r, s: r.choice([1.5, -0.5, 2.0])),
    "pad": (lambda m, v, p: m.nn.functional.pad(v, p), lambda r, s: (1, 2) if s else None),
    "index_select": (lambda m, v, p: v.index_select(p[0], m.tensor(p[1])),
                     lambda r, s: (lambda a: (a, [0, s[a] - 1, 0]))(r.randrange(len(s))) if s else None),
    "gather": (lambda m, v, p: v.gather(p[0], m.tensor(p[1]).reshape(v.shape)),
               lambda r, s: _gather_index(r, s, r.randrange(len(s))) if s else None),
    "narrow": (lambda m, v, p: v.narrow(p, 1, v.shape[p] - 1), lambda r, s: next(
        (a for a in r.sample(range(len(s)), len(s)) if s[a] > 1), None) if s else None),
    "diagonal": (lambda m, v, p: v.diagonal(), lambda r, s: 0 if len(s) == 2 else None),
    "chunk": (lambda m, v, p: v.chunk(2, p[0])[p[1]], lambda r, s: next(
        ((a, r.randrange(2)) for a in range(len(s)) if s[a] % 2 == 0), None) if s else None),
    "stack": (lambda m, v, p: m.stack([v, v * p]), lambda r, s: 0.5),
}
# layers' functions, on 2-D values: float attributes (slopes, thresholds), pooling, convolution
F_ONLY = {
    "elu": lambda m, v: m.nn.functional.elu(v, 0.7),
    "softplus": lambda m, v: m.nn.functional.softplus(v, 1.3, 1.1),
    "leaky_relu": lambda m, v: m.nn.functional.leaky_relu(v, 0.03),
    "hardtanh": lambda m, v: m.nn.functional.hardtanh(v, -0.6, 0.7),
    "gelu": lambda m, v: m.nn.functional.gelu(v, approximate="tanh"),
    "silu": lambda m, v: m.nn.functional.silu(v),
    "logsigmoid": lambda m, v: m.nn.functional.logsigmoid(v),
    "normalize": lambda m, v: m.nn.functional.normalize(v, dim=-1),
    "smooth_l1": lambda m, v: m.nn.functional.smooth_l1_loss(v, v.flip(0) * 0.3, reduction="none", beta=0.7),
    "cosine": lambda m, v: m.nn.functional.cosine_similarity(v, v.flip(0) + 0.1, dim=-1),
    "cross_entropy": lambda m, v: m.nn.functional.cross_entropy(v, m.tensor([0] * v.shape[0]), reduction="none"),
    "linear": lambda m, v: m.nn.functional.linear(v, m.tensor(np.linspace(-1, 1, 3 * v.shape[1]).reshape(3, -1)),
                                                m.tensor([0.1, -0.2, 0.3], dtype=v.dtype)),
    "conv1d": lambda m, v: m.nn.functional.conv1d(
        v.unsqueeze(1), m.tensor([[[0.5, -1.0, 0.25]], [[1.0, 0.3, -0.7]]], dtype=v.dtype), padding=1).flatten(1),
    "max_pool1d": lambda m, v: m.nn.functional.max_pool1d(v.unsqueeze(1), 2).flatten(1),
    "avg_pool1d": lambda m, v: m.nn.functional.avg_pool1d(v.unsqueeze(1), 2, ceil_mode=True).flatten(1),
    "interpolate": lambda m, v: m.nn.functional.interpolate(v.unsqueeze(1), scale_factor=2, mode="linear").flatten(1),
    "cdist": lambda m, v: m.cdist(v, v * 0.5 + 0.1),
}
# indexing, products and normalizations on 2-D values
F_ONLY.update({
    "take": lambda m, v: v.reshape(-1)[m.tensor([0, 3, 3, 1])],
    "index_add": lambda m, v: v.index_add(0, m.tensor([0, v.shape[0] - 1, 0]),
                                          v[m.tensor([1 % v.shape[0], 0, 0])] * 0.5),
    "scatter_add": lambda m, v: v.scatter_add(1, (m.arange(v.numel()).reshape(v.shape) * 7) % v.shape[1], v * 0.3),
    "masked_fill": lambda m, v: v.masked_fill(v > 0.2, 0.1),
    "where": lambda m, v: m.where(v > 0, v, v * 0.1),
    "bmm": lambda m, v: m.bmm(m.stack([v, v * -0.5]), m.stack([v.t(), v.t() + 0.1])),
    "einsum": lambda m, v: m.einsum("ij,kj->ik", v, v * 0.5),
    "group_norm": lambda m, v: m.nn.functional.group_norm(v.unsqueeze(0), 1).squeeze(0),
    "batch_norm": lambda m, v: m.nn.functional.batch_norm(v, None, None, training=True),
    "batch_norm_eval": lambda m, v: m.nn.functional.batch_norm(
        v, m.zeros(v.shape[1], dtype=v.dtype) + 0.1, m.ones(v.shape[1], dtype=v.dtype) * 2, training=False),
    "embedding": lambda m, v: m.nn.functional.embedding(m.tensor([0, 2, 1, 0]) % v.shape[0], v),
    "repeat": lambda m, v: v.repeat(2, 1),
    "std": lambda m, v: v.std(1, keepdim=True),
    "norm": lambda m, v: v.norm(dim=-1),
    "prod": lambda m, v: v.prod(1),
})
for _name, _fn in F_ONLY.items():
    MORE[_name] = (lambda fn: lambda m, v, p: fn(m, v))(_fn), lambda r, s: 0 if len(s) == 2 and s[1] > 1 else None


def broadcast(s, t):
    try:
        return tuple(np.broadcast_shapes(s, t))
    except ValueError:
        return None


def random_program(seed, writes=False, more=False):
    """Steps (op, operand indices, parameters) over a pool that starts with the four inputs;
    each step's value joins the pool. Only shapes are tracked here. With writes, some steps
    write into a value an op made (or a view of one: the write reaches its base)."""
    r = random.Random(seed)
    shapes = list(SHAPES.values())
    steps = []
    kinds = ["unary", "unary", "binary", "binary", "binary", "reduce", "view", "matmul", "softmax", "cat"]
    length = r.randint(3, 10)
    for _ in range(100):  # draws that do not apply to the drawn value are drawn again
        if len(steps) == length:
            break
        i = r.randrange(len(shapes))
        s = shapes[i]
        kind = r.choice(kinds + ["write", "write", "view"] * writes + ["more"] * (4 * more))
        if kind == "more":
            name = r.choice(sorted(MORE))
            fn, draw = MORE[name]
            p = draw(r, s)
            if p is None:
                continue
            try:  # torch says whether the op takes this shape, and what it gives
                s = tuple(fn(torch, torch.zeros(s, dtype=torch.float64), p).shape)
            except (ValueError, RuntimeError, IndexError):
                continue
            steps.append(("more", (i,), (name, p)))
        elif kind == "write" and i >= len(SHAPES) and len(s) > 0:
            partners = [j for j, t in enumerate(shapes) if broadcast(t, s) == s]
            steps.append(("write", (i, r.choice(partners)), r.choice(sorted(WRITES))))
        elif kind == "unary":
            steps.append(("unary", (i,), r.choice(sorted(UNARY))))
        elif kind == "binary":
            partners = [j for j, t in enumerate(shapes) if broadcast(s, t) is not None]
            j = r.choice(partners)
            steps.append(("binary", (i, j), r.choice(sorted(BINARY))))
            s = broadcast(s, shapes[j])
        elif kind == "reduce" and len(s) > 0:
            axis, keep = r.randrange(len(s)), r.random() < 0.5
            steps.append(("reduce", (i,), (r.choice(["sum", "mean", "amax", "logsumexp"]), axis, keep)))
            s = tuple(1 if k == axis else n for k, n in enumerate(s)) if keep else s[:axis] + s[axis + 1:]
        elif kind == "view" and len(s) > 0:
            options = ["flatten", "unsqueeze"] + (["transpose"] if len(s) == 2 else []) + (["slice"] if s[0] > 1 else [])
            how = r.choice(options)
            steps.append(("view", (i,), how))
            s = {"flatten": (int(np.prod(s)),), "unsqueeze": (1,) + s, "transpose": s[::-1], "slice": (s[0] - 1,) + s[1:]}[how]
        elif kind == "matmul" and len(s) == 2:
            partners = [j for j, t in enumerate(shapes) if len(t) == 2 and t[0] == s[1]]
            if not partners:
                continue
            j = r.choice(partners)
            steps.append(("matmul", (i, j), None))
            s = (s[0], shapes[j][1])
        elif kind == "softmax" and len(s) > 0:
            axis = r.randrange(len(s))
            steps.append(("softmax", (i,), axis))
        elif kind == "cat" and len(s) > 0:
            partners = [j for j, t in enumerate(shapes) if len(t) == len(s) and t[1:] == s[1:]]
            j = r.choice(partners)
            steps.append(("cat", (i, j), None))
            s = (s[0] + shapes[j][0],) + s[1:]
        else:
            continue
        shapes.append(s)
    return steps


def run(m, steps, inputs):
    pool = list(inputs)
    for kind, operands, p in steps:
        v = [pool[k] for k in operands]
        if kind == "write":
            WRITES[p](v[0], v[1])
            out = v[0]
        elif kind == "more":
            out = MORE[p[0]][0](m, v[0], p[1])
        elif kind == "unary":
            out = UNARY[p](v[0])
        elif kind == "binary":
            out = BINARY[p](v[0], v[1])
        elif kind == "reduce":
            how, axis, keep = p
            out = getattr(m, how)(v[0], axis, keepdim=keep) if how != "mean" else v[0].mean(axis, keepdim=keep)
        elif kind == "view":
            out = {"flatten": lambda t: t.reshape(-1), "unsqueeze": lambda t: t.unsqueeze(0),
                   "transpose": lambda t: t.t(), "slice": lambda t: t[1:]}[p](v[0])
        elif kind == "matmul":
            out = v[0] @ v[1]
        elif kind == "softmax":
            out = m.softmax(v[0], p)
        else:
            out = m.cat([v[0], v[1]], 0)
        pool.append(out)
    # Every value made, each weighted differently, so that each one's gradient counts.
    return sum(((t * t).sum() * (0.5 + 0.1 * k) for k, t in enumerate(pool[len(inputs):])), m.tensor(0.0, dtype=m.float64))


def program(seed, writes=False, more=False):
    """The program of seed as a function of the four inputs, its steps, and the inputs' values."""
    steps = random_program(seed, writes, more)
    rng = np.random.default_rng(seed)
    return (lambda *xs: run(ug, steps, xs)), steps, [rng.uniform(-1.5, 1.5, s) for s in SHAPES.values()]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setenv("UG_JIT_FUSE_BLOCK", "8")


# more: also cumulative ops, sorts, norms, padding, gathers and the views narrow, diagonal, chunk
@pytest.mark.parametrize("more", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_a_random_program_compiles_to_eagers_values_and_gradients(seed, more):
    f, steps, values = program(seed, more=more)
    ts = [torch.tensor(v, requires_grad=True) for v in values]
    want = run(torch, steps, ts)
    want.backward()
    want_grads = [np.zeros_like(v) if t.grad is None else t.grad.numpy() for t, v in zip(ts, values)]
    # Each value's square summed, weighted, over up to 10 steps of float64 ops: reductions and
    # products of up to 24 terms in other orders than torch's, a few hundred ulps at most of a
    # loss under 1e4; the gradients likewise.
    rtol, atol = 1e-11, 1e-11
    compiled, compiled_grad = ug.jit(f), ug.jit(ug.grad(f, argnums=(0, 1, 2, 3)))
    for _ in range(2):  # the second call runs the cached program and its memory plan again
        xs = [ug.tensor(v) for v in values]
        np.testing.assert_allclose(f(*xs).item(), want.item(), rtol=rtol, atol=atol)
        np.testing.assert_allclose(compiled(*xs).item(), want.item(), rtol=rtol, atol=atol)
        for got in (ug.grad(f, argnums=(0, 1, 2, 3))(*xs), compiled_grad(*xs)):
            for g, w in zip(got, want_grads):
                np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("more", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_a_random_program_batches_under_vmap_compiled_as_eagerly(seed, more):
    f, _, values = program(seed, more=more)
    rng = np.random.default_rng(seed + 7)
    batch = np.stack([values[0] + rng.uniform(-0.3, 0.3, values[0].shape) for _ in range(3)])
    rest = [ug.tensor(v) for v in values[1:]]
    want = np.array([f(ug.tensor(b), *rest).item() for b in batch])
    want_grad = np.stack([ug.grad(f)(ug.tensor(b), *rest).numpy() for b in batch])
    axes = (0, None, None, None)
    # the same float64 computations, reductions maybe in other orders (as above)
    for fn in (ug.vmap(ug.jit(f), in_axes=axes), ug.jit(ug.vmap(f, in_axes=axes))):
        np.testing.assert_allclose(fn(ug.tensor(batch), *rest).numpy(), want, rtol=1e-11, atol=1e-11)
    for fn in (ug.vmap(ug.jit(ug.grad(f)), in_axes=axes), ug.jit(ug.vmap(ug.grad(f), in_axes=axes))):
        np.testing.assert_allclose(fn(ug.tensor(batch), *rest).numpy(), want_grad, rtol=1e-11, atol=1e-11)


def central_differences(f, values, eps=1e-5):
    grads = []
    for k, v in enumerate(values):
        g = np.zeros_like(v)
        for at in np.ndindex(v.shape):
            hi, lo = [w.copy() for w in values], [w.copy() for w in values]
            hi[k][at] += eps
            lo[k][at] -= eps
            g[at] = (f(*map(ug.tensor, hi)).item() - f(*map(ug.tensor, lo)).item()) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("more", [False, True])
@pytest.mark.parametrize("seed", range(100))
def test_a_random_program_with_in_place_writes_gives_torchs_values_and_gradients(seed, more):
    f, steps, values = program(seed, writes=True, more=more)

    ts = [torch.tensor(v, requires_grad=True) for v in values]
    xs = [ug.tensor(v) for v in values]
    argnums = (0, 1, 2, 3)
    try:
        want = run(torch, steps, ts)
        want.backward()
    except RuntimeError as refusal:
        # torch refuses a write into a view of a leaf, or into a tensor an op saved. unigrad
        # refuses the same, unless its op saved a copy of its own: central differences are the
        # reference then (O(eps^2) truncation and O(1e-16 / eps) rounding, eps = 1e-5).
        try:
            got = ug.grad(f, argnums=argnums)(*xs)
        except RuntimeError as ours:
            reasons = [("leaf", "leaf"), ("modified by an in", "modified by an in-place"),
                       ("function that returns multiple views", "several views from one op")]
            assert any(theirs in str(refusal) and mine in str(ours) for theirs, mine in reasons), (refusal, ours)
            return
        want_grads = central_differences(f, values)
        for g, w in zip(got, want_grads):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-6)
        return
    want_grads = [np.zeros_like(v) if t.grad is None else t.grad.numpy() for t, v in zip(ts, values)]
    # as in the programs without writes
    np.testing.assert_allclose(ug.jit(f)(*xs).item(), want.item(), rtol=1e-11, atol=1e-11)
    for fn in (ug.grad(f, argnums=argnums), ug.jit(ug.grad(f, argnums=argnums)), ug.grad(ug.jit(f), argnums=argnums)):
        for g, w in zip(fn(*xs), want_grads):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-11, atol=1e-11)
