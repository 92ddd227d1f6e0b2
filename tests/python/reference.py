"""The helpers that check unigrad against PyTorch.

check(fn, *args) runs fn(torch, *inputs) and fn(ug, *inputs) and compares the results
(shape, dtype, values within a tolerance chosen by dtype) or the exception raised. Adding an
op's forward test is one line:

    check(lambda m, x: m.exp(x), arr((3, 4)))

check_op(fn, *args) checks every transform of the op on those inputs (see TRANSFORMS):
the forward as check does, the vjp against torch.autograd.grad and against central finite
differences, the jvp against torch.func.jvp, the gradient of the jvp (reverse mode over
forward mode) against central differences, ug.vmap against a loop over the batch,
ug.onnx.export run by onnxruntime against unigrad's forward, and ug.jit (the forward and the
compiled vjp; optionally vmap of jit against vmap) against eager unigrad. A transform that cannot apply
is switched off with its reason: check_op(..., off={"vjp": "integer output"}).
check_grad is check_op restricted to GRADS. check_layer compares a unigrad layer (or model)
with its torch twin: the output and the gradients of every input and parameter.

Tolerances that follow from the computation
-------------------------------------------
A value that adds up n terms (a dot product, a sum, a norm, a convolution window) is exact
in no dtype: two correct implementations that add in different orders (blocked, vectorised,
pairwise, another BLAS kernel) differ by up to n·eps·Σ|term|, however small the result is
(a dot product or a sum in any order errs by at most γ_n·Σ|term|, γ_n ≈ n·eps/2: Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1 and §4.2). So where a compared
value sums n > LONG_SUM terms, say how many and what their magnitudes add up to, and each
element may differ by

    atol + rtol·|torch| + K·n·eps·terms

with (rtol, atol) the dtype's TOLERANCES (for the op's other roundings), eps the machine
epsilon of the dtype the sum accumulates in (float32 for the half types: both frameworks
accumulate those in float32 and round once at the end, which their rtol covers) and terms
the magnitudes, computed by torch in float64 on the same inputs:

    check(lambda m, a, b: a @ b, A, B, terms=ABS, n=65)        # terms = |A| @ |B|
    check(lambda m, x: x.softmax(-1), X, n=100, terms=lambda m, x: x.softmax(-1))

terms=ABS evaluates fn itself on the inputs' magnitudes, which is Σ|term| exactly for sums of
products with unit coefficients (matmul, bmm, linear, einsum, conv, sum, mean, cumsum, avg
pools); other ops pass a function that bounds it (each such test says why). n is the length
of the longest sum a compared value adds: one int for the forward and every gradient, or a
tuple (forward, then the gradient of each differentiated input; values past its end sum at
most LONG_SUM terms). Where sums feed sums (a model), their errors add up: n is then the
total along the longest chain. Gradients get their magnitudes the same way: with ABS from
the vjp of the magnitudes with |cotangent|, otherwise as |cotangent|ᵀ·|J| with J torch's
float64 Jacobian (the terms each gradient element sums); check_layer's layer_terms does the
same for a layer's parameters. Sums of up to LONG_SUM terms keep the dtype's tolerance, and
so do check_op's float64 transforms (fd, jvp, vmap): K·n·eps is at most 6e-14 for the op
table's sums, so only terms cancelling a thousandfold could reach their rtol of 1e-10.

A comparison with a derived tolerance also checks that it could still fail: some element's
allowance must be below 1e-3 of its value (twice the dtype's rtol for the half types). Terms
of both signs cancel to about sqrt(n) of their magnitude, so past a few hundred terms in
float32 that fails: such a test takes inputs of one sign, shorter sums, or float64 (a model's
float32 kernels have their own tests). sum_atol gives the allowance for comparisons written
with assert_close.
"""
import copy
import os
import tempfile
import warnings

import numpy as np
import pytest
import torch

import unigrad as ug

TOLERANCES = {  # (rtol, atol) by result dtype
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}

# Two implementations that each meet the bound γ_n·Σ|term| differ by at most n·eps·Σ|term|
# (K = 1); K = 2 leaves room for the roundings an op adds around its sums: products not fused
# with the add, a scale by 1/n, an intermediate rounded before a second sum (im2col + GEMM).
K = 2
LONG_SUM = 16  # longer sums get a tolerance derived from their terms
ABS = "abs"  # terms=ABS: fn itself on the magnitudes of the inputs

TRANSFORMS = ("forward", "vjp", "fd", "jvp", "grad_of_jvp", "vmap", "onnx", "jit")
GRADS = ("forward", "vjp", "fd")


class Arg:
    """An input given to both frameworks: a numpy array converted to `dtype`, optionally
    passed through `view` (e.g. a transpose) so non-contiguous layouts are exercised. rolls:
    False for values with a structure that rolling them (other examples, jit's second call)
    would break, such as sorted offsets starting at 0."""

    def __init__(self, array, dtype=None, view=None, rolls=True):
        self.array = np.asarray(array)
        self.dtype = dtype
        self.view = view
        self.rolls = rolls

    def make(self, m):
        t = m.tensor(self.array)
        if self.dtype is not None:
            t = t.to(getattr(m, self.dtype))
        return self.view(t) if self.view else t

    def is_float(self):
        return (self.dtype or self.array.dtype.name) in TOLERANCES

    def as_float64(self):
        """The same values in float64 (the half types' values exactly); other dtypes unchanged."""
        if not self.is_float():
            return self
        values = torch.tensor(self.array).to(getattr(torch, self.dtype or self.array.dtype.name)).double().numpy()
        return Arg(values, None, self.view, self.rolls)


def arr(shape, dtype="float32", low=-3.0, high=3.0, seed=0, view=None):
    """A random Arg of this shape; ints drawn from [low, high), floats uniform."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
        return Arg(a, None, view)
    if dtype in ("int8", "int16", "int32", "int64", "uint8"):
        return Arg(rng.integers(int(low), int(high), size=shape).astype(dtype), None, view)
    a = rng.uniform(low, high, size=shape)
    if dtype in ("float16", "bfloat16"):
        return Arg(a.astype(np.float32), dtype, view)
    return Arg(a.astype(dtype), None, view)


def _convert(m, value):
    if isinstance(value, Arg):
        return value.make(m)
    if isinstance(value, np.ndarray):
        return m.tensor(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Arg) for v in value):
        return type(value)(_convert(m, v) for v in value)
    return value


def _to_numpy(x):
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bfloat16:
            return x.float().numpy(), "bfloat16"
        return x.detach().numpy(), str(x.dtype).replace("torch.", "")
    if isinstance(x, ug.Tensor):
        name = repr(x.dtype).replace("unigrad.", "")
        if name == "bfloat16":
            return x.float().numpy(), name
        return x.detach().numpy(), name
    return x, None


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _part(tree, i):
    return tree[i] if isinstance(tree, (tuple, list)) else None


def _n_at(n, i):
    """The sum length for compared value i (0: the forward, 1 + j: gradient j) of an int or a
    tuple n; values past a tuple's end sum no more than LONG_SUM terms."""
    if isinstance(n, (tuple, list)):
        return n[i] if i < len(n) else None
    return n


# ---- comparing ------------------------------------------------------------------------------


def sum_atol(dtype, n, terms):
    """K·n·eps·terms: what values of `dtype` (a name) that each sum n terms of total magnitude
    `terms` may differ by between two summation orders; 0 for n <= LONG_SUM."""
    if n is None or n <= LONG_SUM:
        return 0.0
    eps = np.finfo(np.float64 if dtype == "float64" else np.float32).eps
    return K * n * eps * np.asarray(terms, dtype=np.float64)


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, terms=None, n=None, path="result"):
    """Elementwise |actual - expected| <= atol + rtol·|expected| + sum_atol(dtype, n, terms) on
    numpy arrays, NaN matching NaN; (rtol, atol) default to TOLERANCES[dtype]."""
    dtype = dtype or np.asarray(expected).dtype.name
    r, t = TOLERANCES.get(dtype, (0, 0))
    r, t = rtol if rtol is not None else r, atol if atol is not None else t
    a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{path}: shape {a.shape} != {e.shape}"
    extra = sum_atol(dtype, n, terms) if terms is not None else 0.0
    bound = t + r * np.abs(e) + extra
    with np.errstate(invalid="ignore"):
        ok = (a == e) | (np.isnan(a) & np.isnan(e)) | (np.abs(a - e) <= bound)
    if not ok.all():
        with np.errstate(invalid="ignore", divide="ignore"):
            excess = np.where(ok, 0, np.nan_to_num(np.abs(a - e) / bound, nan=np.inf))
        i = np.unravel_index(np.argmax(excess), e.shape)
        derived = "" if terms is None else f", of it {K}·{n}·eps·terms = {np.broadcast_to(extra, e.shape)[i]:.3g}"
        raise AssertionError(f"{path}: {(~ok).sum()} of {e.size} values differ; the worst at {tuple(map(int, i))}: "
                             f"{a[i]:.9g} vs {e[i]:.9g}, allowed {bound[i]:.3g} (rtol {r}, atol {t}{derived})")
    if terms is not None and n is not None and n > LONG_SUM and e.size:
        level = max(1e-3, 2 * r)
        if not np.any(level * np.abs(e) > bound - t):  # the fixed atol is not the derived part
            raise AssertionError(f"{path}: the tolerance derived for sums of {n} terms (up to {np.max(bound):.3g}) "
                                 f"would not catch a {level:g} relative error in any element: use shorter sums or "
                                 "inputs of one sign, whose terms do not cancel")


def assert_same(expected, actual, rtol=None, atol=None, path="result", terms=None, n=None):
    """torch's result (a tensor, a number or a sequence of them) against unigrad's: the same
    dtype, shape and values; `terms` (the same structure, float64) with n as in the docstring."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{path}: expected a sequence, got {type(actual)}"
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, rtol, atol, f"{path}[{i}]", _part(terms, i), n)
        return
    e, edt = _to_numpy(expected)
    a, adt = _to_numpy(actual)
    if edt is None:
        assert a == e or (isinstance(e, float) and np.isclose(a, e)), f"{path}: {a} != {e}"
        return
    assert adt == edt, f"{path}: dtype {adt} != torch's {edt}"
    assert a.shape == e.shape, f"{path}: shape {a.shape} != torch's {e.shape}"
    r, t = TOLERANCES.get(edt, (0, 0))
    r, t = rtol if rtol is not None else r, atol if atol is not None else t
    if edt == "bool" or r == 0:
        np.testing.assert_array_equal(a, e, err_msg=path)
    else:
        assert_close(a, e, edt, r, t, None if terms is None else _to_numpy(terms)[0], n, path)


def _float64(value, absolute=False):
    """A torch float64 copy of an input (its magnitude if absolute); other values unchanged."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, Arg) for v in value):
        return type(value)(_float64(v, absolute) for v in value)
    if isinstance(value, (Arg, np.ndarray)):
        t = _convert(torch, value)
        if t.is_floating_point():
            t = t.double()
            return t.abs() if absolute else t
        return t
    return value


def magnitudes(fn, args, terms):
    """The terms of the forward (see the docstring) as torch float64 tensors."""
    with torch.no_grad():
        if terms is ABS:
            return fn(torch, *[_float64(a, absolute=True) for a in args])
        return terms(torch, *[_float64(a) for a in args])


def check(fn, *args, rtol=None, atol=None, terms=None, n=None):
    """Runs fn(torch, *inputs) and fn(ug, *inputs) and compares; when torch raises, unigrad
    must raise an exception of the same class."""
    if (terms is None) != (n is None):
        raise TypeError("check: terms and n go together")
    try:
        expected = fn(torch, *[_convert(torch, a) for a in args])
    except Exception as exc:  # torch rejects the input: so must we, with the same class
        expected_exc = exc
    else:
        expected_exc = None
    if expected_exc is not None:
        kind = type(expected_exc)
        if kind in (ZeroDivisionError, NotImplementedError):  # torch's subtypes of a RuntimeError
            kind = RuntimeError
        try:
            fn(ug, *[_convert(ug, a) for a in args])
        except Exception as exc:  # noqa: BLE001
            assert isinstance(exc, kind), f"torch raised {type(expected_exc).__name__}, unigrad {type(exc).__name__}: {exc}"
            return
        raise AssertionError(f"torch raised {type(expected_exc).__name__}({expected_exc}) but unigrad did not")
    actual = fn(ug, *[_convert(ug, a) for a in args])
    mags = None if terms is None else magnitudes(fn, args, terms)
    assert_same(expected, actual, rtol, atol, terms=mags, n=_n_at(n, 0))


# ---- the transforms ---------------------------------------------------------------------------


def _inputs(m, args, absolute=False, float64=False):
    """(inputs, positions of the leaves): every float32/float64 Arg becomes a leaf."""
    ins, leaves = [], []
    for i, a in enumerate(args):
        t = _float64(a, absolute) if float64 else _convert(m, a)
        if isinstance(a, Arg) and t.dtype in (m.float32, m.float64):
            t = t.detach().requires_grad_(True)
            leaves.append(i)
        ins.append(t)
    return ins, leaves


def _cotangents(outs, m, low_high, seed):
    """A seeded uniform cotangent for every output that requires grad, by output index (from
    a seed sequence arr's plain seeds never give: a cotangent equal to an input hides errors)."""
    cots = {}
    for i, o in enumerate(outs):
        if isinstance(o, m.Tensor) and o.requires_grad:
            dtype = "float64" if o.dtype == m.float64 else "float32"
            cots[i] = np.random.default_rng([seed, 1, i]).uniform(*low_high, size=tuple(o.shape)).astype(dtype)
    return cots


def _pullback(m, fn, args, low_high, seed):
    """(outputs, {output index: cotangent}, inputs, leaf positions, gradients of the leaves)."""
    ins, leaves = _inputs(m, args)
    outs = _flat(fn(m, *ins))
    cots = _cotangents(outs, m, low_high, seed)
    if not cots:
        raise AssertionError("no output requires grad: switch vjp and fd off with the reason")
    grads = m.autograd.grad([outs[i] for i in cots], [ins[i] for i in leaves],
                            [m.tensor(c) for c in cots.values()], allow_unused=True)
    return outs, cots, ins, leaves, list(grads)


def _grad_magnitudes(fn, args, cots, terms):
    """Each gradient element's terms: |cotangent|ᵀ|J| (see the docstring), torch float64."""
    ins, leaves = _inputs(torch, args, absolute=terms is ABS, float64=True)
    if terms is ABS:
        outs = _flat(fn(torch, *ins))
        return torch.autograd.grad([outs[i] for i in cots], [ins[i] for i in leaves],
                                   [torch.tensor(np.abs(c)).double() for c in cots.values()], allow_unused=True)

    def f(*xs):
        new = list(ins)
        for p, x in zip(leaves, xs):
            new[p] = x
        outs = _flat(fn(torch, *new))
        return tuple(outs[i] for i in cots)

    jac = torch.autograd.functional.jacobian(f, tuple(ins[p].detach() for p in leaves), vectorize=True)
    result = []
    for j, p in enumerate(leaves):
        total = torch.zeros(ins[p].numel(), dtype=torch.float64)
        for k, c in enumerate(cots.values()):
            total += torch.tensor(np.abs(c)).double().reshape(-1) @ jac[k][j].abs().reshape(c.size, -1)
        result.append(total.reshape(ins[p].shape))
    return result


def _check_vjp(fn, args, rtol, atol, terms, n, cotangent, seed):
    expected, actual = (_pullback(m, fn, args, cotangent, seed) for m in (torch, ug))
    e_outs, cots, _, _, e_grads = expected
    a_outs, a_cots, _, _, a_grads = actual
    assert list(cots) == list(a_cots), f"outputs requiring grad: unigrad {list(a_cots)}, torch {list(cots)}"
    mags = _grad_magnitudes(fn, args, cots, terms) if terms is not None else [None] * len(e_grads)
    for i, (e, a, mag) in enumerate(zip(e_grads, a_grads, mags)):
        assert (e is None) == (a is None), f"gradient {i}: torch's is {e}, unigrad's {a}"
        if e is not None:
            assert_same(e, a, rtol, atol, f"gradient {i}", mag, _n_at(n, 1 + i))


def _as_float64(args):
    return [a.as_float64() if isinstance(a, Arg) else a for a in args]


FD_STEP = 1e-6
FD_POINTS = 64  # elements per input checked by finite differences (all of a smaller input)


def check_central_differences(h, x, analytic, atol, every=1):
    """analytic, the gradient of the scalar function h at x, against central differences at
    every `every`-th element (|numeric - analytic| <= atol + 1e-6 |numeric|)."""
    base = x.detach().numpy()
    for k in range(0, base.size, every):
        step = np.zeros(base.size)
        step[k] = FD_STEP
        plus = ug.tensor(base + step.reshape(base.shape), requires_grad=True)
        minus = ug.tensor(base - step.reshape(base.shape), requires_grad=True)
        numeric = (float(h(plus)) - float(h(minus))) / (2 * FD_STEP)
        got = analytic.numpy().reshape(-1)[k]
        assert abs(numeric - got) <= atol + 1e-6 * abs(numeric), f"element {k}: {got} vs fd {numeric}"


def _central_differences(args, p, at, rng):
    """(k, (at(args with x + h e_k at p) - at(args with x - h e_k at p)) / 2h) for every
    element k of x = args[p] (FD_POINTS of them, drawn by rng, in a larger x)."""
    x = args[p].detach()
    size = x.numel()
    for k in range(size) if size <= FD_POINTS else rng.choice(size, FD_POINTS, replace=False):
        step = np.zeros(size)
        step[k] = FD_STEP
        delta = ug.tensor(step.reshape(tuple(x.shape)))
        plus, minus = list(args), list(args)
        plus[p], minus[p] = x + delta, x - delta
        yield k, (at(plus) - at(minus)) / (2 * FD_STEP)


def _fd_tolerance(n, scale):
    """The differences' rounding error (K·n·eps·scale / step) and their truncation error (O(step²))."""
    longest = max(v or 1 for v in n) if isinstance(n, (tuple, list)) else n or 1
    return 1e-7 + K * longest * np.finfo(np.float64).eps * scale / FD_STEP


def _check_fd(fn, args, cotangent, seed, n):
    """ug's float64 vjp against central differences of ug's own forward, element by element:
    the differences' rounding error (bounded by the cotangent-weighted outputs, K·n·eps/step)
    and their truncation error (O(step²), below rtol) set the tolerance."""
    args = _as_float64(args)
    outs, cots, ins, leaves, grads = _pullback(ug, fn, args, cotangent, seed)
    weights = {i: ug.tensor(c) for i, c in cots.items()}

    def weighted(xs):
        with ug.no_grad():
            o = _flat(fn(ug, *xs))
            return sum(float((o[i] * w).sum().item()) for i, w in weights.items())

    atol = _fd_tolerance(n, sum(float((outs[i].detach().abs() * w.abs()).sum().item()) for i, w in weights.items()))
    rng = np.random.default_rng([seed, 3])
    for j, p in enumerate(leaves):
        if grads[j] is None:  # fn detaches it (vjp checks that torch does too)
            continue
        analytic = grads[j].numpy().reshape(-1)
        for k, numeric in _central_differences(ins, p, weighted, rng):
            assert abs(numeric - analytic[k]) <= atol + 1e-6 * abs(numeric), (
                f"input {p}, element {k}: vjp {analytic[k]:.9g}, finite differences {numeric:.9g} (allowed {atol:.3g})")


def _check_jvp(fn, args, seed, rtol, atol):
    """ug.jvp against torch.func.jvp in float64 with seeded tangents for every float input."""
    args = _as_float64(args)
    results = []
    for m in (torch, ug):
        ins, leaves = _inputs(m, args)
        primals = tuple(ins[p].detach() for p in leaves)
        tangents = tuple(m.tensor(np.random.default_rng([seed, 2, j]).uniform(-1, 1, size=tuple(x.shape)))
                         for j, x in enumerate(primals))

        def f(*xs, m=m, ins=ins, leaves=leaves):
            new = list(ins)
            for p, x in zip(leaves, xs):
                new[p] = x
            return fn(m, *new)
        out, tangent = (torch.func.jvp if m is torch else ug.jvp)(f, primals, tangents)
        results.append((_flat(out), _flat(tangent)))
    (e_out, e_tan), (a_out, a_tan) = results
    assert_same(e_out, a_out, rtol, atol, path="jvp primal")
    for i, (o, e, a) in enumerate(zip(e_out, e_tan, a_tan)):
        if o.is_floating_point():  # an integer output has no tangent to compare
            assert_same(e, a, rtol, atol, path=f"jvp tangent {i}")


def _check_grad_of_jvp(fn, args, seed, n):
    """Reverse mode over forward mode: ug.grad of <the tangent ug.jvp gives, w> against central
    differences of that same scalar, in float64, for every differentiated input (at most
    FD_POINTS elements each), with _check_fd's tolerance. Differences, not torch.func: its
    grad of jvp is wrong for some ops (linalg.solve's, in torch 2.13), where the differences
    agree with unigrad's."""
    args = _as_float64(args)
    ins, leaves = _inputs(ug, args)
    primals = tuple(ins[p].detach() for p in leaves)
    tangents = tuple(ug.tensor(np.random.default_rng([seed, 2, j]).uniform(-1, 1, size=tuple(x.shape)))
                     for j, x in enumerate(primals))
    weights = {}

    def value(*xs):
        def f(*ys):
            new = list(ins)
            for p, y in zip(leaves, ys):
                new[p] = y
            return fn(ug, *new)
        _, tangent = ug.jvp(f, xs, tangents)
        total = ug.zeros((), dtype=ug.float64)
        for i, t in enumerate(_flat(tangent)):
            if t is None or not t.is_floating_point():
                continue
            w = weights.setdefault(i, ug.tensor(np.random.default_rng([seed, 4, i]).uniform(-1, 1, tuple(t.shape))))
            total = total + (t.to(ug.float64) * w).sum()
        return total

    grads = ug.grad(value, argnums=tuple(range(len(primals))))(*primals)
    # Inputs the op does not differentiate (a loss's class weights, as in torch) are left out,
    # as _check_fd leaves them: the tangent depends on them, its gradient does not.
    leaf_ins = [x.detach().requires_grad_(True) for x in primals]
    new = list(ins)
    for p, x in zip(leaves, leaf_ins):
        new[p] = x
    outs = [o for o in _flat(fn(ug, *new)) if o is not None and o.requires_grad]
    reached = ug.autograd.grad([o.sum() for o in outs], leaf_ins, allow_unused=True) if outs else [None] * len(leaf_ins)
    with ug.no_grad():
        scale = float(value(*primals).abs().item()) + sum(float(w.abs().sum().item()) for w in weights.values())
    atol = _fd_tolerance(n, scale)

    def at(xs):
        with ug.no_grad():
            return value(*xs).item()

    rng = np.random.default_rng([seed, 5])
    for j in range(len(primals)):
        if reached[j] is None:
            continue
        analytic = grads[j].numpy().reshape(-1)
        for k, numeric in _central_differences(primals, j, at, rng):
            assert abs(numeric - analytic[k]) <= atol + 1e-6 * abs(numeric), (
                f"input {leaves[j]}, element {k}: grad of jvp {analytic[k]:.9g}, finite differences {numeric:.9g} "
                f"(allowed {atol:.3g})")


VMAP_BATCH = 3


def _example(a, b):
    """Example b of a batch: the input's values rolled b places, so the domain is kept."""
    if not isinstance(a, Arg) or b == 0 or not a.rolls:
        return a
    return Arg(np.roll(a.array.reshape(-1), b).reshape(a.array.shape), a.dtype, a.view)


def _fallbacks():
    return ug._C._functional.vmap_fallbacks()


def _check_batched(before, loops, what):
    """Whether `what` ran batched since the fallback count was `before`: it must, unless the
    row's `loops` says why it calls the function once per example (then it must still do so)."""
    fell_back = _fallbacks() != before
    if loops is None:
        assert not fell_back, f"{what} called the function once per example: {ug._C._functional.last_vmap_fallback()}"
    else:
        assert fell_back, f"{what} batched the op: drop the row's reason for calling it once per example ({loops})"


def _check_vmap(fn, args, rtol, atol, loops=None, compiled=True):
    """ug.vmap against a Python loop over the examples, in float64: first every input mapped
    over dim 0, then (for several inputs) each one alone mapped over its last dim. Each runs
    batched (no call per example) unless loops["vmap"] says why not. With `compiled`, the first
    also as jit(vmap), whose program holds the batching rules' ops."""
    loops = loops or {}
    args = _as_float64(args)
    mapped = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    examples = [[_convert(ug, a) for a in (_example(a, b) for a in args)] for b in range(VMAP_BATCH)]
    variants = [{i: 0 for i in mapped}]
    if len(mapped) > 1:
        variants += [{i: -1} for i in mapped]
    for axes in variants:
        loop = []
        for b in range(VMAP_BATCH):
            ins = [examples[b][i] if i in axes else examples[0][i] for i in range(len(args))]
            loop.append(_flat(fn(ug, *ins)))
        expected = [ug.stack([r[k] for r in loop]) for k in range(len(loop[0]))]
        batched = [ug.stack([examples[b][i] for b in range(VMAP_BATCH)], axes[i]) for i in mapped if i in axes]
        order = [i for i in mapped if i in axes]

        def f(*xs, order=order):
            ins = list(examples[0])
            for i, x in zip(order, xs):
                ins[i] = x
            return fn(ug, *ins)
        in_axes = tuple(axes[i] for i in order)
        before = _fallbacks()
        try:
            actual = _flat(ug.vmap(f, in_axes=in_axes)(*batched))
        except RuntimeError as e:
            if "is the same for every example" not in str(e):
                raise
            # a mapped value written in place into an unmapped tensor: torch refuses it too
            _expect_torch_vmap_refuses(fn, examples[0], order, in_axes, batched)
            continue
        _check_batched(before, loops.get("vmap"), f"vmap with in_axes {axes}")
        assert_same(expected, actual, rtol, atol, path=f"vmap with in_axes {axes}")
        if axes is variants[0]:
            _check_empty_batch(f, in_axes, batched, expected, per_example=loops.get("vmap"))
        if compiled and axes is variants[0]:
            program = ug.jit(ug.vmap(f, in_axes=in_axes))
            program(*batched)
            assert_same(expected, _flat(program(*batched)), rtol, atol, path="jit(vmap)")


def _check_empty_batch(f, in_axes, batched, expected, per_example):
    """vmap over a batch of 0 examples gives outputs of 0 examples of each output's shape and
    dtype, as JAX's; where vmap calls f once per example there is no example to call, and it
    says so."""
    empty = [x.narrow(axis, 0, 0) for x, axis in zip(batched, in_axes)]
    if per_example:
        with pytest.raises(ValueError, match="empty batch dim one example at a time"):
            ug.vmap(f, in_axes=in_axes)(*empty)
        return
    actual = _flat(ug.vmap(f, in_axes=in_axes)(*empty))
    assert [(tuple(a.shape), a.dtype) for a in actual] == [((0, *e.shape[1:]), e.dtype) for e in expected]


def _expect_torch_vmap_refuses(fn, example, order, in_axes, batched):
    """torch.func.vmap of fn, mapping the inputs at `order` (unigrad's `batched`), raises."""
    def f(*xs):
        ins = [torch.from_numpy(a.numpy()) if isinstance(a, ug.Tensor) else a for a in example]
        for i, x in zip(order, xs):
            ins[i] = x
        return fn(torch, *ins)
    try:
        torch.func.vmap(f, in_dims=in_axes)(*[torch.from_numpy(b.numpy()) for b in batched])
    except RuntimeError:
        return
    raise AssertionError("unigrad's vmap refused to write a mapped value into an unmapped tensor; torch's did not")


class OpModule(ug.nn.Module):
    """fn(ug, *args) as a module for ug.onnx.export: forward takes the tensors among the
    inputs (tensor_inputs()), the other arguments stay fixed."""

    def __init__(self, fn, args):
        super().__init__()
        self.fn, self.ins = fn, [_convert(ug, a) for a in args]
        self.positions = [i for i, t in enumerate(self.ins) if isinstance(t, ug.Tensor)]

    def tensor_inputs(self):
        return tuple(self.ins[p] for p in self.positions)

    def forward(self, *xs):
        ins = list(self.ins)
        for p, x in zip(self.positions, xs):
            ins[p] = x
        out = self.fn(ug, *ins)
        return tuple(out) if isinstance(out, (tuple, list)) else out  # a plain tuple: Module's outputs


def _check_onnx(fn, args, rtol, atol, terms, n, opset):
    """ug.onnx.export of the op, checked by onnx and run by onnxruntime, against unigrad."""
    import onnx
    import onnxruntime as ort

    module = OpModule(fn, args)
    names = [f"x{p}" for p in module.positions]
    # ONNX Runtime runs other values than the export saw (the first float input rolled one
    # place), so a result the export froze into a constant cannot pass. Only the first: ops
    # may take the others as constants on purpose (batch norm's statistics, RNN weights).
    first = next((i for i, a in enumerate(args) if isinstance(a, Arg) and a.array.dtype.kind == "f"), None)
    other = [_example(a, 1) if i == first else a for i, a in enumerate(args)]
    other_ins = [_convert(ug, a) for a in other]
    expected = _flat(fn(ug, *other_ins))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "op.onnx")
        ug.onnx.export(module, module.tensor_inputs(), path, input_names=names, opset_version=opset)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {name: other_ins[p].numpy() for name, p in zip(names, module.positions)})
    mags = _flat(magnitudes(fn, other, terms)) if terms is not None else [None] * len(expected)
    assert len(got) == len(expected), f"onnxruntime gave {len(got)} outputs, unigrad {len(expected)}"
    for i, (g, e, mag) in enumerate(zip(got, expected, mags)):
        e, edt = _to_numpy(e)
        assert g.dtype == e.dtype, f"onnx output {i}: dtype {g.dtype} != unigrad's {e.dtype}"
        if edt in TOLERANCES:
            assert_close(g, e, edt, rtol, atol, None if mag is None else _to_numpy(mag)[0], _n_at(n, 0),
                         f"onnx output {i}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"onnx output {i}")


def _tensor_arg(a):
    return isinstance(a, Arg) or (isinstance(a, (list, tuple)) and any(isinstance(v, Arg) for v in a))


def _check_jit(fn, args, rtol, atol, terms, n, cotangent, seed, grads, exact):
    """ug.jit of the op against eager unigrad. The program is traced on the inputs and run on
    others (every input rolled one place, indices and masks too), so a value the trace froze
    into a constant cannot pass; with `exact`, its outputs bit for bit (an op the program calls back runs the
    same kernels). Then (when `grads`) the vjp is compiled too, as jit of a function taking the
    inputs and cotangents (the backward built from the same rules), traced on the inputs and
    run on the others, against the eager vjp."""
    other = [_example(a, 1) if isinstance(a, Arg) and a.array.dtype.kind in "fiub" else a for a in args]
    positions = [i for i, a in enumerate(args) if _tensor_arg(a)]

    def with_tensors(xs, source):
        ins = [_convert(ug, a) for a in source]
        for p, x in zip(positions, xs):
            ins[p] = x
        return ins

    jitted = ug.jit(lambda *xs: tuple(_flat(fn(ug, *with_tensors(xs, args)))))
    jitted(*[_convert(ug, args[p]) for p in positions])
    actual = list(jitted(*[_convert(ug, other[p]) for p in positions]))
    expected = _flat(fn(ug, *[_convert(ug, a) for a in other]))
    info = jitted.cache_info()
    assert (info.traces, info.hits) == (1, 1), f"jit: the second call retraced ({info})"
    mags = _flat(magnitudes(fn, other, terms)) if terms is not None else [None] * len(expected)
    assert len(actual) == len(expected), f"jit gave {len(actual)} outputs, eager {len(expected)}"
    for i, (a, e, mag) in enumerate(zip(actual, expected, mags)):
        if exact:
            assert_same(e, a, 0, 0, f"jit output {i} (bit for bit)")
        else:
            assert_same(e, a, rtol, atol, f"jit output {i}", mag, _n_at(n, 0))
    if not grads:
        return
    ins, leaves = _inputs(ug, other)
    cots = _cotangents(_flat(fn(ug, *ins)), ug, cotangent, seed)
    if not cots:  # nothing to differentiate
        return
    _, _, ins, leaves, e_grads = _pullback(ug, fn, other, cotangent, seed)

    def pullback(xs, rest, cts):
        new = with_tensors(rest, other)
        for p, x in zip(leaves, xs):
            new[p] = x

        def f(*ys):
            full = list(new)
            for p, y in zip(leaves, ys):
                full[p] = y
            o = _flat(fn(ug, *full))
            return tuple(o[i] for i in cots)
        _, vjp_fn = ug.vjp(f, *xs)
        return vjp_fn(tuple(cts))

    compiled = ug.jit(pullback)
    cts = [ug.tensor(c) for c in cots.values()]
    traced_ins, _ = _inputs(ug, args)
    compiled([traced_ins[p].detach() for p in leaves], [_convert(ug, args[p]) for p in positions], cts)
    a_grads = compiled([ins[p].detach() for p in leaves], [_convert(ug, other[p]) for p in positions], cts)
    info = compiled.cache_info()
    assert (info.traces, info.hits) == (1, 1), f"jit: the gradient's second call retraced ({info})"
    g_mags = _grad_magnitudes(fn, other, cots, terms) if terms is not None else [None] * len(leaves)
    for j, (a, e, mag) in enumerate(zip(a_grads, e_grads, g_mags)):
        if e is None:
            continue
        assert_same(e, a, rtol, atol, f"jit gradient of input {leaves[j]}", mag, _n_at(n, 1 + j))
    if not all(isinstance(args[p], Arg) for p in leaves):
        return
    # grad of jit, the program traced first without gradients (a validation pass): autograd
    # records through its runs, which must give eager's gradients whatever mode it was traced in

    def objective(*xs):
        outs = _flat(fn(ug, *with_tensors(xs, other)))
        return sum((outs[i] * c).sum() for i, c in zip(cots, cts))

    compiled = ug.jit(objective)
    with ug.no_grad():
        compiled(*[_convert(ug, args[p]) for p in positions])
    argnums = tuple(positions.index(p) for p in leaves)
    o_grads = ug.grad(compiled, argnums=argnums)(*[_convert(ug, other[p]) for p in positions])
    for j, (a, e, mag) in enumerate(zip(o_grads, e_grads, g_mags)):
        if e is not None:
            assert_same(e, a, rtol, atol, f"grad of jit, gradient of input {leaves[j]}", mag, _n_at(n, 1 + j))


def _check_vmap_of_jit(fn, args, rtol, atol, exact, loops=None):
    """ug.vmap of ug.jit against ug.vmap, in float64, every input mapped over dim 0: the
    second call runs the program on the batched inputs (the first traces it), batched unless
    loops["vmap_of_jit"] says why not."""
    args = _as_float64(args)
    mapped = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    examples = [[_convert(ug, a) for a in (_example(a, b) for a in args)] for b in range(VMAP_BATCH)]
    batched = [ug.stack([examples[b][i] for b in range(VMAP_BATCH)]) for i in mapped]

    def f(*xs):
        ins = list(examples[0])
        for i, x in zip(mapped, xs):
            ins[i] = x
        return tuple(_flat(fn(ug, *ins)))
    compiled = ug.jit(f)
    ug.vmap(compiled)(*batched)
    before = _fallbacks()
    actual = _flat(ug.vmap(compiled)(*batched))
    _check_batched(before, (loops or {}).get("vmap_of_jit"), "vmap of jit")
    info = compiled.cache_info()  # vmap maps an op without a batching rule example by example
    assert info.traces == 1 and info.hits >= 1, f"vmap of jit: the second call retraced ({info})"
    expected = _flat(ug.vmap(f)(*batched))
    if exact:
        assert_same(expected, actual, 0, 0, path="vmap of jit (bit for bit)")
    else:
        assert_same(expected, actual, rtol, atol, path="vmap of jit")


def switched_off(off, transform):
    """Why `off` leaves the transform out (None: it runs). grad_of_jvp also inherits the
    reasons of jvp, vjp and fd, the three it is made of and checked against."""
    if transform == "grad_of_jvp" and transform not in off:
        inherited = off.get("jvp") or off.get("vjp") or off.get("fd")
        return inherited and f"it needs jvp, vjp and finite differences: {inherited}"
    return off.get(transform)


def check_op(fn, *args, only=TRANSFORMS, off=None, rtol=None, atol=None, terms=None, n=None, cotangent=(-1.0, 1.0),
             seed=0, opset=17, jit_exact=False, jit_vmap=False, loops=None):
    """Checks the transforms in `only` of fn(m, *args) (see TRANSFORMS and the docstring);
    off maps a transform to the reason it does not apply. Float32/float64 Args are the
    differentiated inputs; vjp compares at their dtypes, fd, jvp and vmap run in float64,
    onnx (exported at `opset`) at the inputs' dtypes. rtol/atol override the dtype's
    tolerance in every comparison. jit_vmap: jit also checks vmap of jit against vmap (where
    vmap is not off); jit_exact: jit's outputs (and vmap of jit's) must equal eager's bit for
    bit; loops: {"vmap" or "vmap_of_jit": why vmap calls the function once per example there}
    (elsewhere it must batch). Returns {transform: None if checked, else why not}."""
    if (terms is None) != (n is None):
        raise TypeError("check_op: terms and n go together")
    off = dict(off or {})
    unknown = set(off) - set(TRANSFORMS)
    assert not unknown and all(off.values()), f"off needs a reason for each of {TRANSFORMS}, got {off}"
    report = {}
    for name in only:
        if switched_off(off, name):
            report[name] = switched_off(off, name)
            continue
        if name == "forward":
            check(fn, *args, rtol=rtol, atol=atol, terms=terms, n=n)
        elif name == "vjp":
            _check_vjp(fn, args, rtol, atol, terms, n, cotangent, seed)
        elif name == "fd":
            _check_fd(fn, args, cotangent, seed, n)
        elif name == "jvp":
            _check_jvp(fn, args, seed, rtol, atol)
        elif name == "grad_of_jvp":
            _check_grad_of_jvp(fn, args, seed, n)
        elif name == "vmap":
            _check_vmap(fn, args, rtol, atol, loops, compiled=not switched_off(off, "jit"))
        elif name == "onnx":
            _check_onnx(fn, args, rtol, atol, terms, n, opset)
        elif name == "jit":
            _check_jit(fn, args, rtol, atol, terms, n, cotangent, seed, grads="vjp" not in off, exact=jit_exact)
            if jit_vmap and "vmap" not in off:
                _check_vmap_of_jit(fn, args, rtol, atol, jit_exact, loops)
        else:
            raise ValueError(f"check_op: unknown transform {name!r}; known: {TRANSFORMS}")
        report[name] = None
    return report


# ---- layers ----------------------------------------------------------------------------------

def _first(y):
    return y[0] if isinstance(y, tuple) else y


def _values(t):
    return _to_numpy(t)[0]


class _Called(torch.nn.Module):
    """_first(call(layer, *inputs)) as a module, for torch.func.functional_call."""

    def __init__(self, layer, call):
        super().__init__()
        self.layer, self.call = layer, call

    def forward(self, *xs):
        return _first(self.call(self.layer, *xs))


def layer_terms(twin, inputs, call, cotangent):
    """What the sums behind the first output and the gradients add up to (the docstring), from
    the float64 twin's Jacobian J of that output in its parameters θ and the inputs x: a sum's
    rounding is a relative change of its terms, each term carries a parameter or an input, so
    the output's terms are |J_θ||θ| + |J_x||x| (every layer's sums, to first order); a
    gradient element's are |cotangent|ᵀ|J|, what its own sum adds."""
    for module in twin.modules():  # batch statistics, without the running ones' updates, in a training twin
        if module.training and getattr(module, "running_mean", None) is not None:
            module.running_mean = module.running_var = module.num_batches_tracked = None
    called = _Called(twin, call)
    params = {k: v.detach() for k, v in called.named_parameters()}
    buffers = {k: v.detach().clone() for k, v in called.named_buffers()}
    xs = [torch.tensor(x).double() if x.dtype.kind == "f" else torch.tensor(x) for x in inputs]
    floats = [i for i, x in enumerate(inputs) if x.dtype.kind == "f"]

    def f(params, *fx):
        args = list(xs)
        for i, v in zip(floats, fx):
            args[i] = v
        return torch.func.functional_call(called, {**params, **buffers}, tuple(args))
    with warnings.catch_warnings():  # torch's note that a batching rule is slow
        warnings.simplefilter("ignore", UserWarning)
        jac = torch.func.jacrev(f, argnums=tuple(range(1 + len(floats))))(params, *[xs[i] for i in floats])
    flat = {k.removeprefix("layer."): (j, params[k]) for k, j in jac[0].items()}
    flat.update({i: (j, xs[i]) for i, j in zip(floats, jac[1:])})
    cot = torch.tensor(np.abs(cotangent)).double().reshape(-1)
    out = sum(j.reshape(cot.numel(), -1).abs() @ v.abs().reshape(-1) for j, v in flat.values())
    grads = {k: (cot @ j.reshape(cot.numel(), -1).abs()).reshape(v.shape) for k, (j, v) in flat.items()}
    return out.reshape(cotangent.shape), grads


def check_layer(ug_layer, torch_layer, *inputs, call=None, rtol=None, atol=None, grads=True, n=None, one_sign=False,
                seed=0):
    """A unigrad layer against its torch twin (the same parameters) on the same numpy inputs:
    the first output, then the gradients of a random projection of it with respect to the
    inputs and every parameter, at the dtype's tolerance. call(layer, *tensors) runs a layer
    (default: layer(*tensors)). n: the longest sum among the compared values (or {"output", an
    input's position or a parameter's name: its own}), whose terms layer_terms derives.
    one_sign: a cotangent >= 0, for a gradient that sums it alone over hundreds of terms (a
    bias's), which a cotangent of both signs cancels below what its tolerance can tell.
    Returns both layers' results."""
    call = call or (lambda layer, *xs: layer(*xs))
    twin = copy.deepcopy(torch_layer).double() if n is not None else None  # before a step moves its buffers
    u_in = [ug.tensor(x, requires_grad=grads and x.dtype.kind == "f") for x in inputs]
    t_in = [torch.tensor(x, requires_grad=grads and x.dtype.kind == "f") for x in inputs]
    uy, ty = call(ug_layer, *u_in), call(torch_layer, *t_in)
    uy0, ty0 = _first(uy), _first(ty)
    w = np.random.default_rng([seed, 4]).standard_normal(tuple(ty0.shape)).astype(_to_numpy(ty0)[0].dtype)
    w = np.abs(w) if one_sign else w
    terms, grad_terms = layer_terms(twin, inputs, call, w) if n is not None else (None, {})
    tol = dict(rtol=rtol, atol=atol)

    def sums(key):
        return n.get(key) if isinstance(n, dict) else n
    assert_close(_values(uy0), _values(ty0), **tol, terms=terms, n=sums("output"))
    if not grads:
        return uy, ty
    (uy0 * ug.tensor(w)).sum().backward()
    (ty0 * torch.tensor(w)).sum().backward()
    for i, (u, t) in enumerate(zip(u_in, t_in)):
        if t.grad is not None:
            assert_close(_values(u.grad), _values(t.grad), **tol, terms=grad_terms.get(i), n=sums(i),
                         path=f"input {i}'s gradient")
    for (name, up), (tname, tp) in zip(ug_layer.named_parameters(), torch_layer.named_parameters()):
        assert name == tname
        assert_close(_values(up.grad), _values(tp.grad), **tol, terms=grad_terms.get(name), n=sums(name),
                     path=f"{name}'s gradient")
    return uy, ty


def check_grad(fn, *args, off=None, **options):
    """check_op over GRADS: the value, the vjp against torch and against finite differences."""
    return check_op(fn, *args, only=GRADS, off=off, **options)
