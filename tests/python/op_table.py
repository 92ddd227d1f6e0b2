"""Every op unigrad exposes in Python, one row each: how to call it (fn(m, *inputs) with m
torch or unigrad), its inputs, the registered op names it runs, and the transforms that do
not apply with the reason (off), or that fail for a known bug with its reproduction (xfail).
test_op_table.py checks every transform of every row with reference.check_op.

Inputs are float32 unless a row says otherwise (check_op runs fd, jvp and vmap in float64);
shapes stay small, but a few rows sum more than LONG_SUM terms so that the derived
tolerances are exercised too (they state terms and n, see reference.py).
"""
import functools
import os
import warnings

import numpy as np
import torch
import torch.utils.checkpoint

import unigrad as ug
from reference import ABS, Arg, arr


def F(m):
    return torch.nn.functional if m is torch else ug.nn.functional


def x(*shape, low=-3.0, high=3.0, seed=0, dtype="float32", view=None):
    return arr(shape, dtype, low, high, seed, view)


def pos(*shape, seed=0):
    """Inputs of log, sqrt, pow's base and the like: in [0.2, 3)."""
    return arr(shape, low=0.2, high=3.0, seed=seed)


def ints(*shape, high=4, seed=0, dtype="int64"):
    return arr(shape, dtype, 0, high, seed)


def mask(*shape, seed=0):
    return arr(shape, "bool", seed=seed)


def const(values, dtype=np.int64):
    return Arg(np.array(values, dtype=dtype))


class Op:
    """One row: name (unique; "op.variant" for a variant), fn(m, *inputs), the inputs; ops:
    the registered op names it runs (default: the name before the dot); off / xfail:
    {transform: reason}; the other keywords go to check_op (terms, n, rtol, atol, ...)."""

    def __init__(self, name, fn, *inputs, ops=None, off=None, xfail=None, **options):
        self.name, self.fn, self.inputs = name, fn, inputs
        self.ops = tuple(ops) if ops is not None else (name.split(".")[0],)
        self.off, self.xfail, self.options = dict(off or {}), dict(xfail or {}), options

    def __repr__(self):
        return self.name


def quantized_linear_dynamic(m, a, wq, b):
    """torch.ops.quantized.linear_dynamic (x86, reduce_range) with an int8 weight of scale 0.02."""
    if m is torch:
        with warnings.catch_warnings():  # torch 2.13 deprecates its quantized tensors: they are the reference
            warnings.simplefilter("ignore")
            w = torch._make_per_tensor_quantized_tensor(wq, 0.02, 0)
        return torch.ops.quantized.linear_dynamic(a, torch.ops.quantized.linear_prepack(w, b), True)
    return ug._C.quantization.quantized_linear_dynamic(a, wq, ug.tensor(0.02), ug.tensor(0), b)


INTEGER = "not differentiable: an integer or boolean output"
NO_GRAD = {t: INTEGER for t in ("vjp", "fd", "jvp")}
INT_INPUTS = {t: "integer inputs: nothing to differentiate" for t in ("vjp", "fd", "jvp")}
PYTHON_VALUE = {t: "returns a Python value, not a tensor" for t in ("vjp", "fd", "jvp", "vmap", "onnx", "jit")}
NO_TORCH_JVP = {"jvp": "torch, the reference, has no forward mode for it"}
REJECTS = "the exporter rejects it: "  # test_op_table checks that it still does, with this message


def rejects(message):
    return {"onnx": REJECTS + message}


def unsupported(op):
    return rejects(f"op '{op}' is not supported")


# As under jax.jit (which asks for nonzero(size=...)): a program's shapes follow from its
# inputs' shapes, which is what its cache is keyed on and what later nodes were traced with.
DATA_SHAPE = {"jit": "the output's shape depends on the data: a compiled program refuses it, naming the op and "
                     "where() or count_nonzero as the fixed-shape forms"}



def unary(name, make=x, ops=None, **kw):
    return Op(name, lambda m, a: getattr(m, name)(a), make(3, 4), ops=ops, **kw)


def silu(m, a):  # torch has it in nn.functional only
    return (torch.nn.functional.silu if m is torch else ug.silu)(a)


def binary(name, a=None, b=None, **kw):
    return Op(name, lambda m, p, q: getattr(m, name)(p, q), a or x(3, 4, seed=1), b or x(4, seed=2), **kw)


def functional(name, *inputs, ops=None, call_kw=None, **kw):
    """nn.functional.<name before the dot>(*inputs, **call_kw), as row "F.<name>"."""
    options = call_kw or {}
    return Op("F." + name, lambda m, *xs: getattr(F(m), name.split(".")[0])(*xs, **options), *inputs,
              ops=ops or (name.split(".")[0],), **kw)


def setitem(index):
    """x.clone() with x[index] = value: the in-place index_put_ on a copy."""
    def fn(m, a, v):
        y = a.clone()
        y[index] = v
        return y
    return fn


def masked_fill_(m, a, keep):
    y = a.clone()
    y.masked_fill_(keep, 0.5)
    return y


def copy_(m, a):
    y = m.zeros_like(a)
    y.copy_(a)
    return y


def jax_gamma_grad(a, x):
    """JAX's implicit reparameterisation gradient of Gamma(a) draws x (lax.random_gamma_grad), in float64."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    with jax.enable_x64(True):
        return torch.tensor(np.asarray(jax.lax.random_gamma_grad(a.double().numpy(), x.double().numpy())), dtype=a.dtype)


class SameGammaDraws(torch.autograd.Function):
    """torch's side of random_gamma (and with log, random_loggamma): unigrad's draws (the
    generators differ), differentiated in the concentration as JAX differentiates
    jax.random.gamma and loggamma (d log x = dx / x). Returns the draws and their derivative."""

    @staticmethod
    def forward(a, log):
        draw = ug.random.loggamma if log else ug.random.gamma
        x = torch.from_numpy(draw(ug.random.key(0), ug.tensor(a.numpy()), dtype=getattr(ug, str(a.dtype)[6:])).numpy())
        if not log:
            return x, jax_gamma_grad(a, x)
        e = x.double().exp()
        return x, (jax_gamma_grad(a.double(), e) / e).to(a.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(output[1])
        ctx.save_for_forward(output[1])

    @staticmethod
    def backward(ctx, g, _):
        return g * ctx.saved_tensors[0], None

    @staticmethod
    def jvp(ctx, t, _):
        return t * ctx.saved_tensors[0], None


def gamma_draws(m, a):
    return ug.random.gamma(ug.random.key(0), a, dtype=a.dtype) if m is ug else SameGammaDraws.apply(a, False)[0]


def loggamma_draws(m, a):
    return ug.random.loggamma(ug.random.key(0), a, dtype=a.dtype) if m is ug else SameGammaDraws.apply(a, True)[0]


def printed(m, a):
    """ug.debug.print's op (torch has no counterpart: it only multiplies)."""
    if m is ug:
        ug.debug.print("a = {}", a)
    return a * 2


def checked(m, a):
    """ug.debug.check_numerics' op (torch has no counterpart: it only multiplies); a file drops it."""
    return (ug.debug.check_numerics(a, "a") if m is ug else a) * 2


ADAM = ug.optim.Adam([ug.zeros(1)], lr=0.1)  # alive as long as the programs that call it back


def remat_region(m, a):
    """A checkpointed region: backward runs it again, through the op optimization_barrier when
    a compiled program's trace records it (so that the program recomputes it)."""
    def region(t):
        return t.tanh() * t
    if m is torch:
        return torch.utils.checkpoint.checkpoint(region, a, use_reentrant=False)
    return ug.checkpoint(region)(a)


@functools.cache
def _tanh_times(m):
    """x·tanh(x) with a hand-written derivative: the same torch.autograd.Function body in both."""
    class TanhTimes(m.autograd.Function):
        @staticmethod
        def forward(x):
            return x.tanh() * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            t = x.tanh()
            return g * (t + x * (1 - t * t))

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            t = x.tanh()
            return tangent * (t + x * (1 - t * t))

    return TanhTimes


def custom_rule(m, a):
    """A custom derivative: under a capture one op, custom_function, whose parts a program runs
    and which a program that autograd records through calls back to link the rule again."""
    return _tanh_times(m).apply(a)


@functools.cache
def _conv_add_relu_graph(double):
    from onnx import TensorProto, helper
    elem = TensorProto.DOUBLE if double else TensorProto.FLOAT
    io = [helper.make_tensor_value_info(n, elem, None) for n in ("x", "w", "b", "r", "z")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["y", "r"], ["s"]), helper.make_node("Relu", ["s"], ["z"])]
    model = helper.make_model(helper.make_graph(nodes, "g", io[:4], io[4:]), opset_imports=[helper.make_opsetid("", 17)])
    return ug.onnx.load_bytes(model.SerializeToString())


def conv_add_relu(m, a, w, b, r):
    """Relu(Conv(a, w, b) + r): torch's three calls against an ONNX graph of the three, which
    unigrad's importer fuses into the op conv2d_relu (one kernel where nothing records the call;
    conv, add and relu where something does)."""
    if m is torch:
        return torch.relu(torch.nn.functional.conv2d(a, w, b, padding=1) + r)
    return _conv_add_relu_graph(a.dtype == ug.float64)(a, w, b, r)


def adam_step(m, p, g):
    """One Adam step (lr 0.1) from p with gradient g: torch.optim.Adam's step() against
    ug.optim.Adam's functional update (optax's form), the op a compiled training step calls back."""
    if m is torch:
        q = p.detach().clone().requires_grad_(True)
        q.grad = g.detach().clone()
        torch.optim.Adam([q], lr=0.1).step()
        return q.detach()
    params = {"p": p}
    updates, _ = ADAM.update({"p": g}, ADAM.init(params), params)
    return p + updates["p"]


_SGD_PARAMS = {}


def doublings(m, a):
    """jax.lax.while_loop's ug.while_loop: how many doublings of |a| + 0.1 until its first
    element passes 50, a trip count the data decides (torch: a Python loop). Under jit the loop
    is one op, run as an ONNX Loop node; under vmap each example stops at its own count."""
    if m is torch:
        c, n = a.abs() + 0.1, 0
        while c[0, 0] < 50:
            c, n = c * 2, n + 1
        return torch.tensor(n)
    return ug.while_loop(lambda s: s[0][0, 0] < 50, lambda s: (s[0] * 2, s[1] + 1), (a.abs() + 0.1, ug.tensor(0)))[1]


def guarded(m, a):
    """jax.lax.cond's ug.lax.cond on a predicate the data decides (torch: a Python if). Under jit
    it is one op that runs only the branch taken; under vmap both run and a where selects."""
    if m is torch:
        return (a.abs() + 0.1).log() * a if a.sum() > 0 else a * a
    return ug.lax.cond(a.sum() > 0, lambda v: (v.abs() + 0.1).log() * v, lambda v: v * v, a)


def over_axis(body, reference):
    """ug.lax's collectives inside ug.vmap(f, axis_name="i") over dim 0, against torch computing
    the same over that dim (test_vmap_collectives.py checks them against JAX)."""
    def fn(m, a):
        return reference(a) if m is torch else ug.vmap(lambda e: body(e, ug.lax), axis_name="i")(a)

    return fn


def sgd_step(m, p, g):
    """One imperative SGD step (lr 0.1) of a parameter holding p with gradient g: torch.optim.SGD's
    step() against ug.optim.SGD's (the op optimizer_step, which a compiled PyTorch-style step
    calls back on the live parameter)."""
    if m is torch:
        q = p.detach().clone().requires_grad_(True)
        q.grad = g.detach().clone()
        torch.optim.SGD([q], lr=0.1).step()
        return q.detach()
    key = (tuple(p.shape), p.dtype)
    if key not in _SGD_PARAMS:
        q = ug.zeros(*p.shape, dtype=p.dtype, requires_grad=True)
        _SGD_PARAMS[key] = (q, ug.optim.SGD([q], lr=0.1))
    q, opt = _SGD_PARAMS[key]
    with ug.no_grad():
        q.copy_(p)
    q.grad = g.detach().clone()
    opt.step()
    return q.detach().clone()


def recurrent(kind, **options):
    """One layer of torch's / unigrad's recurrent module run on (x, w_ih, w_hh, b_ih, b_hh);
    the layers are built here, as their random init must not run inside an export's trace."""
    layers = {m: getattr(m.nn, kind)(4, 3, **options) for m in (torch, ug)}

    def fn(m, inp, w_ih, w_hh, b_ih, b_hh):
        params = {"weight_ih_l0": w_ih, "weight_hh_l0": w_hh, "bias_ih_l0": b_ih, "bias_hh_l0": b_hh}
        call = torch.func.functional_call if m is torch else ug.nn.functional_call
        return call(layers[m], params, (inp,))[0]
    return fn


def recurrent_inputs(gates):
    return (x(5, 2, 4, low=-1, high=1), x(gates * 3, 4, low=-0.5, high=0.5, seed=1),
            x(gates * 3, 3, low=-0.5, high=0.5, seed=2), x(gates * 3, low=-0.5, high=0.5, seed=3),
            x(gates * 3, low=-0.5, high=0.5, seed=4))


def lse_terms(m, a):
    """log Σ exp: the relative error n·eps of the sum is an absolute error of its log."""
    return m.ones_like(a.logsumexp(1))


# ---- the table -------------------------------------------------------------------------------

UNARY = [
    unary("neg"), unary("abs"), unary("sign"), unary("square"), unary("relu", ops=("relu", "relu_backward")),
    unary("floor"), unary("ceil"), unary("round"), unary("trunc"), unary("exp"), unary("exp2"), unary("log", pos),
    unary("log2", pos), unary("log10", pos), unary("log1p", pos), unary("expm1"), unary("sqrt", pos),
    unary("rsqrt", pos), unary("reciprocal", pos), unary("sin"), unary("cos"), unary("sinh"), unary("cosh"), unary("asinh"),
    unary("asin", lambda *s: x(*s, low=-0.9, high=0.9)), unary("acos", lambda *s: x(*s, low=-0.9, high=0.9)),
    unary("atan"), unary("acosh", lambda *s: x(*s, low=1.2, high=3.0)),
    unary("atanh", lambda *s: x(*s, low=-0.9, high=0.9)),
    unary("tan", lambda *s: x(*s, low=-1.2, high=1.2)), unary("tanh", ops=("tanh", "tanh_backward")),
    unary("sigmoid", ops=("sigmoid", "sigmoid_backward")), Op("silu", silu, x(3, 4), ops=("silu", "silu_backward")),
    unary("erf"),
    unary("logical_not", mask, off=NO_GRAD),
    Op("gelu", lambda m, a: m.nn.functional.gelu(a), x(3, 4), ops=("gelu", "gelu_backward")),
    Op("gelu.tanh", lambda m, a: m.nn.functional.gelu(a, approximate="tanh"), x(3, 4), ops=("gelu", "gelu_backward")),
    Op("isnan", lambda m, a: m.isnan(a), const([[np.nan, 1.0], [np.inf, -np.inf]], np.float32), off=NO_GRAD),
    Op("isinf", lambda m, a: m.isinf(a), const([[np.nan, 1.0], [np.inf, -np.inf]], np.float32), off=NO_GRAD),
    Op("isfinite", lambda m, a: m.isfinite(a), const([[np.nan, 1.0], [np.inf, -np.inf]], np.float32), off=NO_GRAD),
    Op("clamp", lambda m, a: m.clamp(a, -1.0, 2.0), x(3, 4), ops=("clamp", "maximum", "minimum")),
    Op("clamp.tensor", lambda m, a, lo, hi: m.clamp(a, lo, hi), x(3, 4), x(4, low=-2, high=-0.5, seed=1),
       x(3, 1, low=0.5, high=2, seed=2), ops=("maximum", "minimum")),
    Op("lerp", lambda m, a, b: m.lerp(a, b, 0.3), x(3, 4), x(3, 4, seed=1)),
    Op("lerp.tensor", lambda m, a, b, w: m.lerp(a, b, w), x(3, 4), x(3, 4, seed=1), x(4, low=0, high=1, seed=2)),
]

BINARY = [
    binary("add"), binary("sub"), binary("mul"), binary("div", b=pos(4, seed=2)), binary("maximum"),
    binary("minimum"), binary("logaddexp"), binary("atan2"), binary("pow", a=pos(3, 4, seed=1)),
    binary("remainder", b=pos(4, seed=2)),
    binary("floor_divide", b=pos(4, seed=2), off={t: "torch has no derivative of floor_divide"
                                                  for t in ("vjp", "fd", "jvp")}),
    Op("add.scalar", lambda m, a: 2.5 + a * 3 - 1 / (a * a + 1), x(3, 4), ops=("add", "mul", "sub", "div")),
    binary("eq", a=ints(3, 4, seed=1), b=ints(4, seed=2), off=INT_INPUTS),
    binary("ne", a=ints(3, 4, seed=1), b=ints(4, seed=2), off=INT_INPUTS),
    binary("lt", off=NO_GRAD), binary("le", off=NO_GRAD), binary("gt", off=NO_GRAD), binary("ge", off=NO_GRAD),
    binary("logical_and", a=mask(3, 4, seed=1), b=mask(4, seed=2), off=INT_INPUTS),
    binary("logical_or", a=mask(3, 4, seed=1), b=mask(4, seed=2), off=INT_INPUTS),
    binary("logical_xor", a=mask(3, 4, seed=1), b=mask(4, seed=2), off=INT_INPUTS),
    # ONNX's BitwiseAnd, ... (integers) are opset 18's; BitShift takes unsigned integers only.
    binary("bitwise_and", a=ints(3, 4, high=16, seed=1), b=ints(4, high=16, seed=2), off=INT_INPUTS, opset=18),
    binary("bitwise_or", a=ints(3, 4, high=16, seed=1), b=ints(4, high=16, seed=2), off=INT_INPUTS, opset=18),
    binary("bitwise_xor", a=ints(3, 4, high=16, seed=1), b=ints(4, high=16, seed=2), off=INT_INPUTS, opset=18),
    unary("bitwise_not", lambda *s: ints(*s, high=16, dtype="int16"), off=INT_INPUTS, opset=18),
    binary("bitwise_left_shift", a=ints(3, 4, high=100, seed=1, dtype="int8"), b=ints(4, high=10, seed=2, dtype="int8"),
           off={**INT_INPUTS, **rejects("bitwise_left_shift of int8 tensors has no ONNX form")}),
    Op("bitwise_left_shift.uint8", lambda m, p, q: m.bitwise_left_shift(p, q), ints(3, 4, high=256, seed=1, dtype="uint8"),
       ints(4, high=10, seed=2, dtype="uint8"), off=INT_INPUTS),
    binary("bitwise_right_shift", a=ints(3, 4, high=100, seed=1, dtype="int16"), b=ints(4, high=18, seed=2, dtype="int16"),
           off={**INT_INPUTS, **rejects("bitwise_right_shift of int16 tensors has no ONNX form")}),
    Op("bitwise_right_shift.uint8", lambda m, p, q: m.bitwise_right_shift(p, q),
       ints(3, 4, high=256, seed=1, dtype="uint8"), ints(4, high=10, seed=2, dtype="uint8"), off=INT_INPUTS),
    Op("isclose", lambda m, a, b: m.isclose(a, a + b * 1e-6), x(3, 4), x(3, 4, seed=1), off=NO_GRAD,
       ops=("isclose", "le", "abs", "sub")),
    Op("allclose", lambda m, a, b: m.allclose(a, a + b * 1e-6), x(3, 4), x(3, 4, seed=1), off=PYTHON_VALUE),
    Op("equal", lambda m, a: m.equal(a, a.clone()), x(3, 4), off=PYTHON_VALUE),
    Op("where", lambda m, c, a, b: m.where(c, a, b), mask(3, 4), x(3, 4, seed=1), x(4, seed=2)),
]

REDUCTIONS = [
    Op("sum", lambda m, a: a.sum(), x(3, 20), terms=ABS, n=60),
    Op("sum.dim", lambda m, a: a.sum(1, keepdim=True), x(3, 20), terms=ABS, n=20),
    Op("mean", lambda m, a: a.mean(), x(3, 20), terms=ABS, n=60),
    Op("mean.dim", lambda m, a: a.mean((0, 2)), x(2, 3, 4)),
    Op("prod", lambda m, a: a.prod(1), x(3, 5, low=0.5, high=2)),
    Op("amax", lambda m, a: a.amax(1), x(3, 5)), Op("amin", lambda m, a: a.amin(0), x(3, 5)),
    Op("max", lambda m, a: a.max(), x(3, 5), ops=("amax",)),
    Op("max.dim", lambda m, a: a.max(1), x(3, 5), ops=("amax", "max", "argmax")),
    Op("min.dim", lambda m, a: a.min(0, keepdim=True), x(3, 5), ops=("amin", "min", "argmin")),
    Op("argmax", lambda m, a: a.argmax(1), x(3, 5), off=NO_GRAD),
    Op("argmin", lambda m, a: a.argmin(), x(3, 5), off=NO_GRAD),
    # Σx²/(N - correction) bounds the variance's terms whether they are summed around the mean
    # or not; a square root (std, a 2-norm) divides its argument's error by twice its value.
    Op("var", lambda m, a: a.var(1), x(3, 20), terms=lambda m, a: (a * a).sum(1) / 19, n=20),
    Op("std", lambda m, a: a.std(1, correction=0), x(3, 20),
       terms=lambda m, a: (a * a).mean(1) / (2 * a.std(1, correction=0)), n=20),
    Op("norm", lambda m, a: a.norm(), x(3, 20), terms=lambda m, a: a.norm() / 2, n=60),
    Op("norm.p1", lambda m, a: a.norm(1, dim=1), x(3, 5)),
    Op("logsumexp", lambda m, a: a.logsumexp(1), x(3, 20), terms=lse_terms, n=20),
    # softmax errs relative to each output; log_softmax by n·eps absolute (its log of a sum)
    Op("softmax", lambda m, a: a.softmax(1), x(3, 20), terms=lambda m, a: a.softmax(1), n=20,
       ops=("softmax", "softmax_backward")),
    Op("log_softmax", lambda m, a: a.log_softmax(1), x(3, 20), terms=lambda m, a: m.ones_like(a), n=20,
       ops=("log_softmax", "log_softmax_backward")),
    Op("cumsum", lambda m, a: a.cumsum(1), x(3, 20), terms=ABS, n=20),
    Op("cumprod", lambda m, a: a.cumprod(1), x(3, 5, low=0.5, high=2)),
    Op("all", lambda m, a: a.all(1), mask(3, 4), off=INT_INPUTS),
    Op("any", lambda m, a: a.any(), mask(3, 4), off=INT_INPUTS),
    Op("sort", lambda m, a: a.sort(1), x(3, 5)),
    Op("argsort", lambda m, a: a.argsort(0, descending=True), x(3, 5), ops=("sort",), off=NO_GRAD),
    Op("topk", lambda m, a: a.topk(2, 1), x(3, 5), ops=("sort",)),
    Op("count_nonzero", lambda m, a: m.count_nonzero(a), const([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], np.float32),
       ops=("nonzero",), off={**NO_GRAD, **unsupported("nonzero")}),
]

LINALG = [
    Op("matmul", lambda m, a, b: a @ b, x(3, 20), x(20, 5, seed=1), terms=ABS, n=20),
    Op("matmul.batched", lambda m, a, b: m.matmul(a, b), x(2, 1, 3, 4), x(5, 4, 2, seed=1), ops=("matmul",)),
    Op("matmul.vector", lambda m, a, b: a @ b, x(4,), x(2, 4, 3, seed=1), ops=("matmul",)),
    Op("mm", lambda m, a, b: m.mm(a, b), x(3, 4), x(5, 4, seed=1, view=lambda t: t.t()),
       ops=("matmul",)),
    Op("bmm", lambda m, a, b: m.bmm(a, b), x(2, 3, 4), x(2, 4, 5, seed=1), ops=("matmul",)),
    Op("dot", lambda m, a, b: m.dot(a, b), x(20), x(20, seed=1), ops=("matmul",), terms=ABS, n=20),
    Op("outer", lambda m, a, b: m.outer(a, b), x(3), x(4, seed=1), ops=("unsqueeze", "mul")),
    Op("einsum", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), x(2, 3, 4), x(2, 4, 5, seed=1), ops=("matmul",)),
    Op("einsum.contraction", lambda m, a, b: m.einsum("ikj,kl->il", a, b), x(3, 20, 2), x(20, 4, seed=1),
       ops=("matmul",), terms=ABS, n=40),
    Op("einsum.trace", lambda m, a: m.einsum("ii->", a), x(4, 4), ops=("diagonal", "sum")),
]


def dominant(m, a):
    """a + 5 I for a in [-1, 1): each row diagonally dominant by more than 1, so that
    ||A^-1||_inf < 1 and cond_inf(A) < 9 (n <= 4): results err by about cond·n·eps, within the
    dtype's tolerance (float32: 9·4·6e-8 = 2e-6 against rtol 1e-5)."""
    return a + 5 * m.eye(a.shape[-1], dtype=a.dtype)


def spd(m, a):
    """a a^T + 4 I for a in [-1, 1): symmetric positive-definite, eigenvalues in [4, 20]."""
    return a @ a.mT + 4 * m.eye(a.shape[-1], dtype=a.dtype)


def unit(*shape, seed=0, dtype="float32"):
    return x(*shape, low=-1.0, high=1.0, seed=seed, dtype=dtype)


def eig_powers(m, a):
    """A^2 rebuilt from eig as V diag(L^2) V^-1, and the sum of L^3: functions of both results
    that depend on neither the eigenvalues' order nor the eigenvectors' phases (complex inside,
    real at the ends)."""
    L, V = m.linalg.eig(a)
    return m.view_as_real(V @ ((L * L).unsqueeze(-1) * m.linalg.inv(V))), m.view_as_real((L * L * L).sum(-1))


def squares(*ts):
    """Eigenvectors and singular vectors are defined up to sign: compare their squares."""
    return tuple(t * t for t in ts)


SOLVE_OFF = unsupported("linalg_solve")
SLOGDET_OFF = unsupported("linalg_slogdet")
CHOLESKY_OFF = unsupported("linalg_cholesky")
TRIANGULAR_OFF = unsupported("linalg_solve_triangular")
EIGH_OFF = unsupported("linalg_eigh")
SVD_OFF = unsupported("linalg_svd")
EIG_OFF = unsupported("linalg_eig")
QR_OFF = unsupported("linalg_qr")
LU_OFF = unsupported("linalg_lu_factor")
LDL_OFF = {**unsupported("linalg_ldl_factor"),
           **{t: "not differentiable: torch defines no derivative (both raise)" for t in ("vjp", "fd", "jvp")}}
QR_COMPLETE = {t: "not differentiable when mode='complete' and m > n (torch raises too)" for t in ("vjp", "fd", "jvp")}

# torch.linalg on inputs conditioned by construction (dominant, spd, distinct singular values
# of random matrices); test_linalg.py checks larger and worse-conditioned ones. The rows that
# differentiate eigenvectors or singular vectors are float64: their gradients carry rounding
# amplified by ||A|| / (the smallest gap between eigenvalues) (Davis-Kahan), about 1e-5
# relative in float32 on these inputs, where torch's own float32 result is no closer.
DECOMPOSITIONS = [
    Op("linalg_inv", lambda m, a: m.linalg.inv(dominant(m, a)), unit(2, 4, 4), ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_inv.inverse", lambda m, a: m.inverse(dominant(m, a)), unit(3, 3), ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_solve", lambda m, a, b: m.linalg.solve(dominant(m, a), b), unit(2, 4, 4), x(4, 3, seed=1),
       off=SOLVE_OFF),
    Op("linalg_solve.vector", lambda m, a, b: m.linalg.solve(dominant(m, a), b), unit(4, 4), x(4, seed=1),
       ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_solve.right", lambda m, a, b: m.linalg.solve(dominant(m, a), b, left=False), unit(3, 3),
       x(2, 3, seed=1), ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_det", lambda m, a: m.linalg.det(dominant(m, a)), unit(2, 3, 3), ops=("linalg_slogdet",),
       off=SLOGDET_OFF),
    Op("linalg_slogdet", lambda m, a: tuple(m.linalg.slogdet(-dominant(m, a))), unit(2, 3, 3), off=SLOGDET_OFF),
    Op("linalg_slogdet.logdet", lambda m, a: m.logdet(dominant(m, a)), unit(4, 4), ops=("linalg_slogdet",),
       off=SLOGDET_OFF),
    Op("linalg_cholesky", lambda m, a: m.linalg.cholesky(spd(m, a)), unit(2, 4, 4), off=CHOLESKY_OFF),
    Op("linalg_cholesky.upper", lambda m, a: m.linalg.cholesky(spd(m, a), upper=True), unit(3, 3),
       ops=("linalg_cholesky",), off=CHOLESKY_OFF),
    Op("linalg_cholesky.solve", lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(spd(m, a))), x(3, 2),
       unit(3, 3, seed=1), ops=("linalg_cholesky", "linalg_solve_triangular"), off=CHOLESKY_OFF),
    Op("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(dominant(m, a), b, upper=False),
       unit(2, 4, 4), x(4, 3, seed=1), off=TRIANGULAR_OFF),
    Op("linalg_solve_triangular.right_unit",
       lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, left=False, unitriangular=True), unit(3, 3),
       x(2, 3, seed=1), ops=("linalg_solve_triangular",), off=TRIANGULAR_OFF),
    Op("linalg_eigh", lambda m, a: squares(*m.linalg.eigh(spd(m, a))), unit(2, 4, 4, dtype="float64"), off=EIGH_OFF),
    Op("linalg_eigh.upper", lambda m, a: squares(*m.linalg.eigh(spd(m, a), UPLO="U")), unit(3, 3, dtype="float64"),
       ops=("linalg_eigh",), off=EIGH_OFF),
    Op("linalg_eigh.eigvalsh", lambda m, a: m.linalg.eigvalsh(spd(m, a)), unit(4, 4), ops=("linalg_eigh",),
       off=EIGH_OFF),
    Op("linalg_eig", eig_powers, unit(2, 4, 4, dtype="float64"), ops=("linalg_eig", "linalg_solve", "view_as_real"),
       off=EIG_OFF),
    Op("linalg_svd", lambda m, a: squares(*m.linalg.svd(a, full_matrices=False)), x(2, 5, 3, dtype="float64"),
       off=SVD_OFF),
    Op("linalg_svd.wide", lambda m, a: squares(*m.linalg.svd(a, full_matrices=False)), x(3, 5, dtype="float64"), ops=("linalg_svd",),
       off=SVD_OFF),
    Op("linalg_svd.square_full", lambda m, a: squares(*m.linalg.svd(a)), x(4, 4, dtype="float64"), ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_svd.svdvals", lambda m, a: m.linalg.svdvals(a), x(2, 4, 3), ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_svd.torch_svd", lambda m, a: squares(*m.svd(a)), x(5, 3, dtype="float64"), ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_svd.pinv", lambda m, a: m.linalg.pinv(a), x(5, 3), ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_svd.pinv_hermitian", lambda m, a: m.linalg.pinv(spd(m, a), hermitian=True), unit(3, 3),
       ops=("linalg_eigh",), off=EIGH_OFF),
    Op("linalg_svd.matrix_rank", lambda m, a: m.linalg.matrix_rank(a), x(2, 4, 3), ops=("linalg_svd",),
       off={**NO_GRAD, **SVD_OFF}),
    Op("linalg_qr", lambda m, a: tuple(m.linalg.qr(a)), x(2, 5, 3), off=QR_OFF),
    Op("linalg_qr.wide", lambda m, a: tuple(m.linalg.qr(a)), x(3, 5), ops=("linalg_qr",),
       off={**QR_OFF, "jvp": "not implemented: forward mode of a wide QR raises, naming the op"}),
    Op("linalg_qr.complete", lambda m, a: tuple(m.linalg.qr(a, mode="complete")), x(5, 3), ops=("linalg_qr",),
       off={**QR_OFF, **QR_COMPLETE}),
    Op("linalg_qr.lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, x(5, 3), x(5, 2, seed=1),
       ops=("linalg_qr", "linalg_solve_triangular", "linalg_svd"), off=QR_OFF),
    Op("linalg_qr.lstsq_wide", lambda m, a, b: m.linalg.lstsq(a, b).solution, x(3, 5), x(3, seed=1),
       ops=("linalg_qr", "linalg_solve_triangular", "linalg_svd"), off=QR_OFF),
    Op("linalg_lu_factor", lambda m, a: m.linalg.lu_factor(a).LU, x(2, 4, 4), off=LU_OFF),
    Op("linalg_lu_factor.tall", lambda m, a: m.linalg.lu_factor(a).LU, x(5, 3), ops=("linalg_lu_factor",),
       off=LU_OFF),
    Op("linalg_lu_factor.wide", lambda m, a: m.linalg.lu_factor(a).LU, x(2, 3, 5), ops=("linalg_lu_factor",),
       off=LU_OFF),
    Op("linalg_lu_factor.lu", lambda m, a: tuple(m.linalg.lu(a)), x(4, 3), ops=("linalg_lu_factor",), off=LU_OFF),
    Op("linalg_lu_factor.lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(dominant(m, a)), b),
       unit(2, 3, 3), x(3, 2, seed=1), ops=("linalg_lu_factor", "linalg_solve_triangular"), off=LU_OFF),
    Op("linalg_lu_factor.lu_solve_adjoint",
       lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(dominant(m, a)), b, left=False, adjoint=True),
       unit(3, 3), x(2, 3, seed=1), ops=("linalg_lu_factor", "linalg_solve_triangular"), off=LU_OFF),
    Op("linalg_lu_factor.solve_ex", lambda m, a, b: m.linalg.solve_ex(dominant(m, a), b).result, unit(2, 3, 3),
       x(3, seed=1), ops=("linalg_lu_factor", "linalg_solve_triangular"), off=LU_OFF),
    Op("linalg_lu_factor.inv_ex", lambda m, a: m.linalg.inv_ex(dominant(m, a)).inverse, unit(3, 3),
       ops=("linalg_lu_factor", "linalg_solve_triangular"), off=LU_OFF),
    Op("linalg_lu_factor.cond", lambda m, a: m.linalg.cond(dominant(m, a), "fro"), unit(2, 3, 3),
       ops=("linalg_lu_factor", "linalg_solve_triangular"),
       off={**LU_OFF, "vjp": "torch, the reference, fails: its backward finds inv_ex's output modified in place"}),
    Op("linalg_svd.cond", lambda m, a: m.linalg.cond(a), x(2, 4, 3), ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_ldl_factor", lambda m, a: tuple(m.linalg.ldl_factor(a + a.mT)), x(2, 4, 4), off=LDL_OFF),
    Op("linalg_ldl_solve", lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(a + a.mT), b), x(2, 3, 3),
       x(3, 2, seed=1), ops=("linalg_ldl_factor", "linalg_ldl_solve"), off=LDL_OFF),
    Op("linalg_cholesky.cholesky_ex", lambda m, a: m.linalg.cholesky_ex(spd(m, a)).L, unit(2, 3, 3),
       ops=("linalg_cholesky",), off=CHOLESKY_OFF),
    Op("linalg_householder_product", lambda m, a, tau: m.linalg.householder_product(a, tau), x(2, 4, 3),
       unit(2, 2, seed=1), ops=("matmul",)),
    Op("linalg_tensorinv", lambda m, a: m.linalg.tensorinv(dominant(m, a).reshape(2, 2, 4)), unit(4, 4),
       ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_tensorsolve", lambda m, a, b: m.linalg.tensorsolve(dominant(m, a).reshape(2, 2, 4), b), unit(4, 4),
       x(2, 2, seed=1), ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_vander", lambda m, a: m.linalg.vander(a, N=4), x(2, 3), ops=("cumprod",)),
    Op("linalg_vecdot", lambda m, a, b: m.linalg.vecdot(a, b, dim=0), x(3, 4), x(3, 1, seed=1), ops=("mul",)),
    Op("linalg_diagonal", lambda m, a: m.linalg.diagonal(a, offset=-1), x(2, 3, 4), ops=("diagonal",)),
    Op("linalg_matmul", lambda m, a, b: m.linalg.matmul(a, b), x(2, 3, 4), x(4, 2, seed=1), ops=("matmul",)),
    Op("linalg_matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), x(2, 3, 3), ops=("matmul",)),
    Op("linalg_matrix_power.negative", lambda m, a: m.linalg.matrix_power(dominant(m, a), -2), unit(3, 3),
       ops=("linalg_solve",), off=SOLVE_OFF),
    Op("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a), x(2, 3, 3), off=unsupported("linalg_matrix_exp")),
    Op("linalg_matrix_exp.scaled", lambda m, a: m.linalg.matrix_exp(a * 4), x(3, 3, dtype="float64"),
       ops=("linalg_matrix_exp",), off=unsupported("linalg_matrix_exp")),
    Op("linalg_vector_norm", lambda m, a: m.linalg.vector_norm(a, 3, dim=(0, 2)), x(2, 3, 4), ops=("norm",)),
    Op("linalg_matrix_norm", lambda m, a: m.linalg.matrix_norm(a), x(2, 3, 4), ops=("norm",)),
    Op("linalg_matrix_norm.nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), x(2, 3, 4), ops=("linalg_svd",),
       off=SVD_OFF),
    Op("linalg_matrix_norm.two", lambda m, a: m.linalg.matrix_norm(a, 2, dim=(0, 2)), x(3, 2, 4),
       ops=("linalg_svd",), off=SVD_OFF),
    Op("linalg_matrix_norm.minus_two", lambda m, a: m.linalg.matrix_norm(a, -2), x(4, 3), ops=("linalg_svd",),
       off=SVD_OFF),
    Op("linalg_matrix_norm.one", lambda m, a: m.linalg.matrix_norm(a, 1, keepdim=True), x(2, 3, 4),
       ops=("sum", "amax")),
    Op("linalg_matrix_norm.inf", lambda m, a: m.linalg.matrix_norm(a, -float("inf"), dim=(2, 0)), x(3, 2, 4),
       ops=("sum", "amin")),
    Op("linalg_norm", lambda m, a: m.linalg.norm(a), x(2, 3, 4), ops=("norm",)),
    Op("linalg_norm.matrix", lambda m, a: m.linalg.norm(a, float("inf")), x(3, 4), ops=("sum", "amax")),
    Op("linalg_norm.vector", lambda m, a: m.linalg.norm(a, 1, dim=1), x(3, 4), ops=("norm",)),
]

SHAPES = [
    Op("reshape", lambda m, a: a.reshape(4, 6), x(2, 3, 4)),
    Op("view", lambda m, a: a.view(2, 12), x(2, 3, 4)),
    Op("view_as", lambda m, a, b: a.view_as(b), x(2, 3, 4), x(6, 4, seed=1), ops=("view",)),
    Op("reshape_as", lambda m, a, b: a.reshape_as(b), x(2, 3, 4, view=lambda t: t.transpose(0, 2)),
       x(4, 6, seed=1), ops=("reshape",)),
    Op("transpose", lambda m, a: a.transpose(0, 2), x(2, 3, 4)),
    Op("swapaxes", lambda m, a: a.swapaxes(1, 2), x(2, 3, 4), ops=("transpose",)),
    Op("swapdims", lambda m, a: a.swapdims(0, 1), x(2, 3, 4), ops=("transpose",)),
    Op("permute", lambda m, a: a.permute(1, 2, 0), x(2, 3, 4)),
    Op("t", lambda m, a: a.t(), x(3, 4), ops=("transpose",)),
    Op("T", lambda m, a: a.T, x(3, 4), ops=("permute",)),
    Op("mT", lambda m, a: a.mT, x(2, 3, 4), ops=("transpose",)),
    Op("movedim", lambda m, a: a.movedim(0, 2), x(2, 3, 4), ops=("permute",)),
    Op("moveaxis", lambda m, a: m.moveaxis(a, 2, 0), x(2, 3, 4), ops=("permute",)),
    Op("squeeze", lambda m, a: a.squeeze(1), x(3, 1, 4)),
    Op("squeeze.all", lambda m, a: a.squeeze(), x(1, 3, 1), ops=("squeeze",)),
    Op("unsqueeze", lambda m, a: a.unsqueeze(1), x(3, 4)),
    Op("flatten", lambda m, a: a.flatten(1), x(2, 3, 4)),
    Op("unflatten", lambda m, a: a.unflatten(1, (2, 2)), x(3, 4), ops=("view",)),
    Op("expand", lambda m, a: a.expand(2, 3, 4), x(3, 1)),
    Op("expand_as", lambda m, a, b: a.expand_as(b), x(1, 4), x(3, 4, seed=1), ops=("expand",)),
    Op("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), x(4), ops=("expand",)),
    Op("narrow", lambda m, a: a.narrow(1, 1, 2), x(3, 4), ops=("slice",)),
    Op("select", lambda m, a: a.select(1, 2), x(3, 4), ops=("select", "embed")),
    Op("diagonal", lambda m, a: a.diagonal(1, 0, 1), x(3, 4)),
    Op("unfold", lambda m, a: a.unfold(1, 3, 2), x(3, 7)),
    Op("view_dtype", lambda m, a: a.view(m.int32), x(3, 4), off={**NO_GRAD, **unsupported("view_dtype")}),
    Op("view_dtype.half", lambda m, a: a[:, 1:].view(m.float16), x(3, 5),
       off={**{t: "torch's view(dtype) is not differentiable" for t in ("vjp", "fd", "jvp")},
            **unsupported("view_dtype")}),
    Op("as_strided", lambda m, a: a.contiguous().as_strided((2, 2), (1, 2), 1), x(3, 4), ops=("as_strided",),
       off={**unsupported("as_strided"), **{t: "unigrad refuses to differentiate as_strided (its views may overlap)"
                                            for t in ("vjp", "fd")},
            "vmap": "as_strided reads the storage: torch's vmap makes the offset relative to each example, "
                    "unigrad's (like a loop over xs[i]) absolute"}),
    Op("unbind", lambda m, a: a.unbind(1), x(3, 2), ops=("select", "unbind")),
    Op("split", lambda m, a: a.split([1, 3], 1), x(3, 4), ops=("slice", "split")),
    Op("chunk", lambda m, a: a.chunk(2, 0), x(4, 3), ops=("slice",)),
    Op("contiguous", lambda m, a: a.contiguous(), x(3, 4, view=lambda t: t.t()), ops=("clone",)),
    Op("clone", lambda m, a: a.clone(), x(3, 4)),
    # The detached factor is a constant to the gradient: a's gradient is a, not 2a.
    Op("detach", lambda m, a: a.detach() * a, x(3, 4), ops=("stop_gradient", "mul"),
       off={"fd": "finite differences see the detached factor change too (2a, not the gradient a)"}),
    Op("to", lambda m, a: a.to(m.float64) * 2, x(3, 4), ops=("to", "mul")),
    Op("to.device", lambda m, a: a.to("cpu", copy=True) * 2, x(3, 4), ops=("to_device", "mul")),
    Op("copy_", copy_, x(3, 4), ops=("copy_", "full_like")),
    Op("fill_", lambda m, a: a * a.clone().fill_(2.0), x(3, 4), ops=("fill_", "clone"), off=unsupported("fill_")),
    Op("full_like", lambda m, a: a * m.full_like(a, 2.5), x(3, 4), ops=("full_like", "mul")),
    Op("zeros_like", lambda m, a: a + m.zeros_like(a), x(3, 4), ops=("full_like", "add")),
    Op("repeat", lambda m, a: a.repeat(2, 1, 2), x(3, 2), ops=("expand", "reshape")),
    Op("tile", lambda m, a: a.tile((2, 2)), x(3, 2), ops=("expand", "reshape")),
    Op("flip", lambda m, a: a.flip(0, 1), x(3, 4), ops=("index_select",)),
    Op("fliplr", lambda m, a: m.fliplr(a), x(3, 4), ops=("index_select",)),
    Op("flipud", lambda m, a: m.flipud(a), x(3, 4), ops=("index_select",)),
    Op("roll", lambda m, a: a.roll(1, 1), x(3, 4), ops=("cat", "slice")),
    Op("atleast_1d", lambda m, a: m.atleast_1d(a), x(), ops=("reshape",)),
    Op("atleast_2d", lambda m, a: m.atleast_2d(a), x(3), ops=("unsqueeze",)),
    Op("atleast_3d", lambda m, a: m.atleast_3d(a), x(3, 4), ops=("unsqueeze",)),
]

INDEXING = [
    Op("getitem.slice", lambda m, a: a[1:, ::2], x(3, 4), ops=("slice",)),
    Op("getitem.int", lambda m, a: a[1, None, :2], x(3, 4), ops=("select", "unsqueeze", "slice")),
    Op("getitem.index", lambda m, a, i: a[:, i], x(3, 4), const([2, 0, 2]), ops=("index_select",)),
    Op("getitem.mask", lambda m, a, k: a[k], x(3, 4), mask(3, 4, seed=1), ops=("nonzero",),
       off={"vmap": "the output's shape depends on the mask's values", **unsupported("nonzero"), **DATA_SHAPE}),
    Op("setitem", setitem((slice(None), 1)), x(3, 4), x(3, seed=1), ops=("index_put_", "clone")),
    Op("gather", lambda m, a, i: a.gather(1, i), x(3, 4), const([[0, 0], [1, 3], [2, 2]])),
    # no index twice in a row, rolled too (jit runs on the inputs rolled): which duplicate wins is undefined
    Op("scatter", lambda m, a, i, s: a.scatter(1, i, s), x(3, 4), const([[0, 1], [2, 3], [0, 1]]),
       x(3, 2, seed=1)),
    Op("scatter_add", lambda m, a, i, s: a.scatter_add(1, i, s), x(3, 4), const([[0, 0], [1, 3], [2, 2]]),
       x(3, 2, seed=1)),
    Op("index_select", lambda m, a, i: a.index_select(0, i), x(3, 4), const([2, 0, 2, 1])),
    Op("take", lambda m, a, i: m.take(a, i), x(3, 4), const([[0, 11], [5, 5]]), ops=("index_select", "reshape")),
    Op("masked_fill", lambda m, a, k: a.masked_fill(k, -1.0), x(3, 4), mask(3, 4, seed=1), ops=("where",)),
    Op("masked_fill_", masked_fill_, x(3, 4), mask(4, seed=1), ops=("masked_fill_", "clone")),
    Op("masked_select", lambda m, a, k: a.masked_select(k), x(3, 4), mask(3, 4, seed=1), ops=("nonzero",),
       off={"vmap": "the output's shape depends on the mask's values", **unsupported("nonzero"), **DATA_SHAPE}),
    Op("nonzero", lambda m, a: a.nonzero(), const([[0.0, 1.0], [2.0, 0.0]], np.float32),
       off={**NO_GRAD, **unsupported("nonzero"), **DATA_SHAPE, "vmap": "the output's shape depends on the values"}),
    Op("argwhere", lambda m, a: m.argwhere(a), const([[0.0, 1.0], [2.0, 0.0]], np.float32), ops=("nonzero",),
       off={**NO_GRAD, **unsupported("nonzero"), **DATA_SHAPE, "vmap": "the output's shape depends on the values"}),
    Op("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2, 1), x(3, 2), ops=("expand", "flatten")),
    Op("put", lambda m, a, i, s: a.put(i, s), x(3, 4), const([[0, -1], [5, 6]]), x(2, 2, seed=1),
       ops=("scatter",)),
    Op("put.accumulate", lambda m, a, i, s: a.put(i, s, accumulate=True), x(3, 4), const([[0, -1], [5, 5]]),
       x(2, 2, seed=1), ops=("scatter_add",)),
    # Rolled (another example, jit's second call), the counts keep their sum: output_size holds.
    Op("repeat_interleave.tensor", lambda m, a, r: m.repeat_interleave(a, r, dim=0, output_size=6), x(4, 3),
       const([2, 0, 3, 1]), ops=("cumsum", "searchsorted", "index_select")),
]

JOINS = [
    Op("cat", lambda m, a, b: m.cat([a, b], 1), x(3, 2), x(3, 4, seed=1)),
    Op("concat", lambda m, a, b: m.concat([a, b]), x(2, 3), x(1, 3, seed=1), ops=("cat",)),
    Op("concatenate", lambda m, a, b: m.concatenate([a, b], axis=1), x(2, 3), x(2, 1, seed=1), ops=("cat",)),
    Op("stack", lambda m, a, b: m.stack([a, b], 1), x(3, 2), x(3, 2, seed=1), ops=("unsqueeze", "cat")),
    Op("hstack", lambda m, a, b: m.hstack([a, b]), x(3, 2), x(3, 1, seed=1), ops=("cat",)),
    Op("vstack", lambda m, a, b: m.vstack([a, b]), x(3), x(3, seed=1), ops=("cat",)),
    Op("dstack", lambda m, a, b: m.dstack([a, b]), x(2, 3), x(2, 3, seed=1), ops=("cat",)),
    Op("pad", lambda m, a: F(m).pad(a, (1, 2, 0, 1), value=0.5), x(2, 3, 4)),
    Op("pad.reflect", lambda m, a: F(m).pad(a, (2, 1), mode="reflect"), x(2, 3, 4), ops=("pad",)),
    Op("pad.replicate", lambda m, a: F(m).pad(a, (1, 1, 2, 0), mode="replicate"), x(1, 2, 3, 4), ops=("pad",)),
    Op("pad.circular", lambda m, a: F(m).pad(a, (1, 2), mode="circular"), x(1, 2, 4), ops=("pad",), opset=19),
]

CONV_POOL = [
    # n: the longest sum, a weight element's over every output position (a bias's, transposed)
    Op("conv1d", lambda m, a, w, b: F(m).conv1d(a, w, b, stride=2, padding=1), x(2, 3, 11), x(4, 3, 3, seed=1),
       x(4, seed=2), ops=("conv",), terms=ABS, n=12),
    Op("conv2d", lambda m, a, w, b: F(m).conv2d(a, w, b, padding=1, groups=2), x(2, 4, 5, 5), x(6, 2, 3, 3, seed=1),
       x(6, seed=2), ops=("conv", "conv2d", "conv2d_weight_grad", "conv_transpose2d"), terms=ABS, n=50),
    Op("conv2d_relu", conv_add_relu, x(2, 3, 5, 5), x(4, 3, 3, 3, seed=1), x(4, seed=2), x(2, 4, 5, 5, seed=3),
       terms=ABS, n=50),
    Op("conv_transpose1d", lambda m, a, w: F(m).conv_transpose1d(a, w, stride=2), x(2, 3, 5), x(3, 2, 3, seed=1),
       ops=("conv_transpose",), terms=ABS, n=10),
    Op("conv_transpose2d", lambda m, a, w, b: F(m).conv_transpose2d(a, w, b, stride=2, padding=1, output_padding=1),
       x(2, 3, 4, 4), x(3, 2, 3, 3, seed=1), x(2, seed=2), ops=("conv_transpose",), terms=ABS, n=128),
    Op("max_pool1d", lambda m, a: F(m).max_pool1d(a, 3, 2, 1), x(2, 3, 9), ops=("max_pool",)),
    Op("max_pool2d", lambda m, a: F(m).max_pool2d(a, 3, 2, 1, ceil_mode=True), x(2, 3, 7, 6),
       ops=("max_pool", "max_pool2d")),
    Op("max_pool2d.indices", lambda m, a: F(m).max_pool2d(a, 2, return_indices=True), x(2, 3, 6, 6),
       ops=("max_pool",)),
    Op("max_pool2d_with_indices", lambda m, a: F(m).max_pool2d_with_indices(a, 2, 1), x(1, 2, 4, 4),
       ops=("max_pool",)),
    Op("max_pool2d.indices.unbatched", lambda m, a: F(m).max_pool2d(a, 3, 2, 1, return_indices=True), x(3, 7, 6),
       ops=("max_pool",)),
    Op("max_pool1d.indices", lambda m, a: F(m).max_pool1d(a, 2, return_indices=True), x(2, 3, 8), ops=("max_pool",)),
    Op("avg_pool1d", lambda m, a: F(m).avg_pool1d(a, 3, 2, 1, count_include_pad=False), x(2, 3, 9),
       ops=("avg_pool",)),
    Op("avg_pool2d", lambda m, a: F(m).avg_pool2d(a, 3, 2, 1), x(2, 3, 7, 6),
       ops=("avg_pool", "avg_pool2d", "avg_pool2d_backward")),
    Op("avg_pool2d.divisor_override", lambda m, a: F(m).avg_pool2d(a, 3, 2, 1, divisor_override=5), x(2, 3, 7, 6),
       ops=("avg_pool",), off=rejects("avg_pool with divisor_override has no ONNX form")),
    Op("adaptive_avg_pool1d", lambda m, a: F(m).adaptive_avg_pool1d(a, 4), x(2, 3, 8), ops=("adaptive_avg_pool",)),
    Op("adaptive_avg_pool1d.uneven", lambda m, a: F(m).adaptive_avg_pool1d(a, 4), x(2, 3, 9),
       ops=("adaptive_avg_pool",), off=rejects("has no ONNX form (the sizes must divide)")),
    Op("adaptive_avg_pool2d", lambda m, a: F(m).adaptive_avg_pool2d(a, 1), x(2, 3, 6, 5), ops=("adaptive_avg_pool",),
       terms=ABS, n=30),
    Op("adaptive_avg_pool3d", lambda m, a: F(m).adaptive_avg_pool3d(a, (2, 1, 3)), x(2, 3, 4, 5, 6),
       ops=("adaptive_avg_pool", "transpose")),
    Op("adaptive_max_pool3d", lambda m, a: F(m).adaptive_max_pool3d(a, (2, 3, 2), return_indices=True),
       x(2, 3, 4, 6, 4), ops=("adaptive_max_pool", "gather")),
    Op("adaptive_max_pool3d.uneven", lambda m, a: F(m).adaptive_max_pool3d(a, (2, 3, 2)), x(2, 3, 5, 7, 3),
       ops=("adaptive_max_pool",), off=rejects("has no ONNX form (the sizes must divide)")),
    Op("conv_transpose3d",
       lambda m, a, w, b: F(m).conv_transpose3d(a, w, b, stride=(2, 1, 1), padding=(1, 0, 1), output_padding=(1, 0, 0)),
       x(2, 4, 3, 3, 4), x(4, 2, 3, 2, 3, seed=1), x(2, seed=2), ops=("conv_transpose", "index_add"), terms=ABS, n=24),
    Op("adaptive_max_pool1d", lambda m, a: F(m).adaptive_max_pool1d(a, 4), x(2, 3, 8), ops=("adaptive_max_pool",)),
    Op("adaptive_max_pool2d", lambda m, a: F(m).adaptive_max_pool2d(a, (2, 3)), x(2, 3, 6, 6),
       ops=("adaptive_max_pool",)),
    Op("adaptive_max_pool2d.uneven", lambda m, a: F(m).adaptive_max_pool2d(a, (2, 3)), x(2, 3, 5, 7),
       ops=("adaptive_max_pool",), off=rejects("has no ONNX form (the sizes must divide)")),
]


def act(name, ops=None, **kw):
    return functional(name, x(3, 5, low=-5, high=5), ops=ops, **kw)


ACTIVATIONS = [
    act("relu", ("relu", "relu_backward")), act("relu6"), act("leaky_relu"),
    act("leaky_relu.slope", call_kw={"negative_slope": 0.2}), act("elu"), act("selu"),
    act("celu", call_kw={"alpha": 2.0}), act("gelu", ("gelu", "gelu_backward")),
    act("gelu.tanh", ("gelu", "gelu_backward"), call_kw={"approximate": "tanh"}),
    act("silu", ("silu", "silu_backward")), act("mish"), act("sigmoid", ("sigmoid", "sigmoid_backward")),
    act("tanh", ("tanh", "tanh_backward")), act("logsigmoid"), act("softplus"),
    act("softplus.beta", call_kw={"beta": 2.0, "threshold": 3.0}), act("softsign"),
    act("hardtanh", call_kw={"min_val": -2.0, "max_val": 0.5}),
    # torch's hardsigmoid derivative multiplies by 1/6 rounded to float32, even in float64
    act("hardsigmoid", rtol=1e-7), act("hardswish"),
    functional("glu", x(3, 8), ops=("slice", "sigmoid")),
    functional("softmax", x(3, 5, 2), call_kw={"dim": 1}),
    Op("F.log_softmax", lambda m, a: F(m).log_softmax(a, -1, dtype=m.float64), x(3, 5), ops=("log_softmax", "to")),
    functional("softmin", x(3, 5), call_kw={"dim": 1}, ops=("softmax", "neg")),
    functional("normalize", x(3, 4), call_kw={"p": 3.0, "dim": 0}, ops=("div",)),
    functional("cosine_similarity", x(4, 5), x(4, 5, seed=1), ops=("sum", "mul")),
    functional("pairwise_distance", x(4, 5), x(4, 5, seed=1), ops=("sub", "sum")),
]


def targets(*shape, classes=5, seed=3):
    return ints(*shape, high=classes, seed=seed)


def probs(*shape, seed=4):
    return Arg(np.random.default_rng(seed).dirichlet(np.ones(shape[-1]), size=shape[:-1]).astype(np.float32))


LOSSES = [
    Op("cross_entropy", lambda m, a, t: F(m).cross_entropy(a, t, label_smoothing=0.1), x(6, 5), targets(6),
       ops=("log_softmax", "nll_loss")),  # exported (and compiled) as the composed ops
    # class indices on [N, C] logits: the fused op, its gradient the op cross_entropy_backward
    Op("cross_entropy.indices", lambda m, a, t: F(m).cross_entropy(a, t), x(6, 5), targets(6),
       ops=("cross_entropy", "cross_entropy_backward")),
    Op("cross_entropy.weighted", lambda m, a, t, w: F(m).cross_entropy(a, t, w.detach(), ignore_index=2), x(6, 5),
       targets(6), pos(5, seed=5), ops=("cross_entropy", "cross_entropy_backward")),
    Op("cross_entropy.none", lambda m, a, t: F(m).cross_entropy(a, t, reduction="none", ignore_index=1), x(6, 5),
       targets(6), ops=("cross_entropy", "cross_entropy_backward")),
    Op("cross_entropy.probabilities", lambda m, a, p: F(m).cross_entropy(a, p), x(6, 5), probs(6, 5),
       ops=("log_softmax", "mul", "sum")),
    Op("nll_loss", lambda m, a, t: F(m).nll_loss(a, t, ignore_index=2), x(6, 5), targets(6)),
    Op("nll_loss.weighted", lambda m, a, t, w: F(m).nll_loss(a, t, w.detach(), reduction="sum"), x(2, 5, 3),
       targets(2, 3), pos(5, seed=5)),  # [N, C, d]: composed ops, not nll_loss's kernel
    # these losses' terms are >= 0: the loss itself is what their magnitudes add up to
    Op("mse_loss", lambda m, a, t: F(m).mse_loss(a, t), x(4, 5), x(4, 5, seed=1),
       terms=lambda m, a, t: F(m).mse_loss(a, t), n=20),
    Op("l1_loss", lambda m, a, t: F(m).l1_loss(a, t, reduction="sum"), x(4, 5), x(4, 5, seed=1),
       terms=lambda m, a, t: F(m).l1_loss(a, t, reduction="sum"), n=20),
    Op("smooth_l1_loss", lambda m, a, t: F(m).smooth_l1_loss(a, t, beta=0.5), x(3, 4), x(3, 4, seed=1)),
    Op("huber_loss", lambda m, a, t: F(m).huber_loss(a, t, reduction="none", delta=2.0), x(3, 4), x(3, 4, seed=1)),
    Op("binary_cross_entropy", lambda m, p, t: F(m).binary_cross_entropy(p, t), x(3, 4, low=0.05, high=0.95),
       x(3, 4, low=0, high=1, seed=1)),
    Op("binary_cross_entropy_with_logits", lambda m, a, t, pw: F(m).binary_cross_entropy_with_logits(
        a, t, pos_weight=pw.detach()), x(3, 4), x(3, 4, low=0, high=1, seed=1), pos(4, seed=2)),
    Op("kl_div", lambda m, lp, q: F(m).kl_div(lp, q, reduction="batchmean"), x(3, 4, low=-3, high=-0.1),
       probs(3, 4)),
    Op("poisson_nll_loss", lambda m, a, t: F(m).poisson_nll_loss(a, t.detach()), x(3, 4, low=-1, high=1),
       const([[0, 1, 2, 5]] * 3, np.float32)),
    Op("poisson_nll_loss.full", lambda m, a, t: F(m).poisson_nll_loss(a, t.detach(), log_input=False, full=True),
       pos(3, 4),
       const([[0, 1, 2, 5]] * 3, np.float32)),
    Op("gaussian_nll_loss", lambda m, a, t, v: F(m).gaussian_nll_loss(a, t, v, full=True), x(3, 4),
       x(3, 4, seed=1), pos(3, seed=2),
       off={t: "reads var back to check its sign, as torch does" for t in ("vmap", "onnx", "jit")}),
    Op("multilabel_margin_loss", lambda m, a, t: F(m).multilabel_margin_loss(a, t), x(3, 4),
       const([[3, 0, -1, 1], [1, 1, 2, -1], [0, 1, 2, 3]]), ops=("gather", "scatter_add", "where"),
       off=NO_TORCH_JVP),
    Op("triplet_margin_with_distance_loss",
       lambda m, a, p, n: F(m).triplet_margin_with_distance_loss(
           a, p, n, distance_function=lambda u, v: (u - v).abs().sum(-1), swap=True), x(5, 4), x(5, 4, seed=1),
       x(5, 4, seed=2), ops=("sub", "minimum")),
    Op("cosine_embedding_loss", lambda m, a, b, t: F(m).cosine_embedding_loss(a, b, t, 0.2), x(5, 4),
       x(5, 4, seed=1), const([1, -1, 1, -1, -1])),
    Op("margin_ranking_loss", lambda m, a, b, t: F(m).margin_ranking_loss(a, b, t, 0.3), x(6), x(6, seed=1),
       const([1.0, -1.0, 1.0, -1.0, -1.0, 1.0], np.float32)),
    Op("hinge_embedding_loss", lambda m, a, t: F(m).hinge_embedding_loss(a, t, 1.5, reduction="sum"), x(3, 4),
       const([[1, -1, 1, -1]] * 3)),
    Op("soft_margin_loss", lambda m, a, t: F(m).soft_margin_loss(a, t), x(3, 4), const([[1, -1, 1, -1]] * 3)),
    Op("multilabel_soft_margin_loss", lambda m, a, t, w: F(m).multilabel_soft_margin_loss(a, t, w.detach()),
       x(4, 5), const([[1, 0, 1, 0, 0]] * 4, np.float32), pos(5, seed=2)),
    Op("triplet_margin_loss", lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, swap=True, reduction="none"),
       x(5, 4), x(5, 4, seed=1), x(5, 4, seed=2)),
    Op("multi_margin_loss", lambda m, a, t, w: F(m).multi_margin_loss(a, t, 2, 0.8, w.detach()), x(5, 4),
       const([0, 3, 1, 1, 2]), pos(4, seed=2), off={"jvp": "torch, the reference, has no forward mode for it"}),
]

COMPLEX_NOT_EXPORTED = rejects("complex tensors are not exported")

OTHERS = [
    # complex values inside, real ones at both ends: the two views and the composed complex ops
    Op("view_as_complex", lambda m, a: m.view_as_real(m.view_as_complex(a) * (0.5 - 2j)), x(3, 4, 2),
       ops=("view_as_complex", "view_as_real"), off=COMPLEX_NOT_EXPORTED),
    # the complex product, an op with its own kernel: broadcast, both operands differentiated
    Op("complex_mul", lambda m, a, b: m.view_as_real(m.complex(a, b) * m.complex(b, a)[0] * m.complex(a, a + 1)),
       x(3, 4), x(3, 4, seed=1), ops=("complex_mul", "view_as_real"), off=COMPLEX_NOT_EXPORTED),
    # the quotient and abs, kernels too: broadcast, both operands differentiated, a real result
    Op("complex_div", lambda m, a, b: m.view_as_real(m.complex(a, b) / m.complex(b, a + 4)[0] / m.complex(a + 3, a)),
       x(3, 4), x(3, 4, seed=1), ops=("complex_div", "view_as_real"), off=COMPLEX_NOT_EXPORTED),
    Op("complex_abs", lambda m, a, b: m.complex(a, b).abs() * m.complex(b, a - 1)[0].abs(), x(3, 4), x(3, 4, seed=1),
       ops=("complex_abs",), off=COMPLEX_NOT_EXPORTED),
    Op("view_as_real.complex_math", lambda m, a, b: m.view_as_real((m.complex(a, b).exp() / m.complex(b, a + 4)).sqrt()),
       x(3, 4), x(3, 4, seed=1), ops=("view_as_complex", "view_as_real"), off=COMPLEX_NOT_EXPORTED,
       jit_exact=False),  # eager's exp of the strided real part is libm's, a program's the vector kernel's: 1 ulp
    Op("linear", lambda m, a, w, b: F(m).linear(a, w, b), x(3, 20), x(4, 20, seed=1), x(4, seed=2), terms=ABS,
       n=21),
    Op("quantized_linear_dynamic", quantized_linear_dynamic, x(3, 20),
       Arg(np.random.default_rng(3).integers(-128, 128, (4, 20)).astype(np.int8)), x(4, seed=2),
       off={**{t: "not differentiable: the weight is integers (torch's op has no derivative)" for t in ("vjp", "fd", "jvp")},
            "vmap": "refused: the input's scale is chosen once per call, over the whole batch",
            "onnx": "written as onnxruntime's quantizer writes it, x in 8 bits where the op (reduce_range) uses 7: "
                    "within a step of x, checked in test_quantization.py"}),
    Op("layer_norm", lambda m, a, w, b: F(m).layer_norm(a, (6,), w, b), x(4, 6), x(6, seed=1), x(6, seed=2),
       ops=("layer_norm", "layer_norm_backward")),
    Op("rms_norm", lambda m, a, w: F(m).rms_norm(a, (6,), w), x(4, 6), x(6, seed=1)),
    Op("batch_norm", lambda m, a, w, b: F(m).batch_norm(a, None, None, w, b, training=True), x(4, 3, 2),
       x(3, seed=1), x(3, seed=2), off=rejects("batch_norm in training mode (batch statistics) cannot be exported"),
       jit_exact=False),  # a program runs its formula (the parts), not eager's kernel
    Op("batch_norm.eval", lambda m, a, rm, rv: F(m).batch_norm(a, rm.detach(), rv.detach()), x(4, 3, 2),
       x(3, seed=1), pos(3, seed=2), ops=("batch_norm",)),
    # Before the op record their fused kernel's output was unrecorded, so export froze it into a
    # constant (right only for the example input); the exporter now refuses them.
    Op("group_norm", lambda m, a, w, b: F(m).group_norm(a, 2, w, b), x(2, 4, 3), x(4, seed=1), x(4, seed=2)),
    Op("instance_norm", lambda m, a: F(m).instance_norm(a), x(2, 3, 5)),
    Op("embedding", lambda m, i, w: F(m).embedding(i, w), const([[0, 2, 4], [2, 2, 1]]), x(5, 3)),
    Op("interpolate", lambda m, a: F(m).interpolate(a, scale_factor=(1.5, 0.7)), x(2, 3, 4, 5),
       ops=("index_select",)),
    Op("interpolate.bilinear", lambda m, a: F(m).interpolate(a, size=(6, 3), mode="bilinear", align_corners=True),
       x(2, 3, 4, 5), ops=("index_select", "mul", "add")),
    Op("interpolate.bicubic", lambda m, a: F(m).interpolate(a, size=(6, 3), mode="bicubic"), x(2, 3, 4, 5),
       ops=("index_select", "mul", "add")),
    Op("interpolate.antialias",
       lambda m, a: F(m).interpolate(a, size=(3, 4), mode="bicubic", antialias=True), x(2, 3, 8, 10),
       ops=("index_select", "mul", "add")),
    Op("interpolate.area", lambda m, a: F(m).interpolate(a, size=(3, 2), mode="area"), x(2, 3, 6, 4),
       ops=("adaptive_avg_pool",)),
    Op("unfold.im2col", lambda m, a: F(m).unfold(a, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
       x(2, 3, 5, 6), ops=("pad", "gather")),
    Op("fold", lambda m, a: F(m).fold(a, (5, 4), 2, padding=(1, 0), stride=2), x(2, 12, 6),
       ops=("scatter_add", "slice")),
    Op("grid_sample", lambda m, a, g: F(m).grid_sample(a, g, padding_mode="border", align_corners=False),
       x(2, 3, 4, 5), x(2, 3, 2, 2, low=-1.5, high=1.5, seed=1), ops=("gather", "mul", "add"), off=NO_TORCH_JVP),
    Op("grid_sample.nearest_reflection",
       lambda m, a, g: F(m).grid_sample(a, g.detach(), "nearest", "reflection", align_corners=True),
       x(2, 3, 4, 5), x(2, 3, 2, 2, low=-1.5, high=1.5, seed=1), ops=("gather", "round"), off=NO_TORCH_JVP),
    Op("affine_grid", lambda m, t: F(m).affine_grid(t, [2, 3, 4, 5], align_corners=False), x(2, 2, 3),
       ops=("matmul",)),
    Op("max_unpool2d", lambda m, a: F(m).max_unpool2d(*F(m).max_pool2d(a, 2, return_indices=True), 2),
       x(2, 3, 4, 6), ops=("scatter", "max_pool")),
    Op("lp_pool2d", lambda m, a: F(m).lp_pool2d(a, 3, (2, 3), stride=1, ceil_mode=True), pos(2, 3, 5, 6),
       ops=("avg_pool", "pow")),
    Op("local_response_norm", lambda m, a: F(m).local_response_norm(a, 3, alpha=0.2), x(2, 5, 3, 4),
       ops=("avg_pool", "pad")),
    Op("channel_shuffle", lambda m, a: F(m).channel_shuffle(a, 2), x(2, 6, 3), ops=("transpose",)),
    Op("pdist", lambda m, a: F(m).pdist(a, 3.0), x(5, 3), ops=("index_select", "norm"), off=NO_TORCH_JVP),
    Op("bilinear", lambda m, a, b, w, c: F(m).bilinear(a, b, w, c), x(2, 3), x(2, 4, seed=1), x(5, 3, 4, seed=2),
       x(5, seed=3), ops=("matmul", "sum")),
    Op("rrelu.eval", lambda m, a: F(m).rrelu(a, 0.1, 0.3), x(3, 4), ops=("where",)),
    # random values: the generators differ (test_nn_random_activations.py checks the draws)
    Op("gumbel_softmax", lambda m, a: tuple(F(m).gumbel_softmax(a, hard=True).shape), x(3, 4), off=PYTHON_VALUE,
       ops=("softmax", "scatter")),
    Op("upsample_bilinear", lambda m, a: F(m).upsample_bilinear(a, size=(6, 7)), x(2, 3, 4, 5),
       ops=("index_select", "mul", "add")),
    Op("one_hot", lambda m, t: F(m).one_hot(t, 5), const([0, 3, 4, 1]), off=INT_INPUTS),
    Op("scaled_dot_product_attention", lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
       x(2, 4, 3), x(2, 4, 3, seed=1), x(2, 4, 2, seed=2), ops=("softmax", "matmul", "scaled_dot_product_attention", "attention_backward")),
    Op("dropout.eval", lambda m, a: F(m).dropout(a, 0.5, training=False), x(3, 4)),
    # random values: the generators differ (test_random.py checks unigrad's distributions)
    Op("random", lambda m, a: tuple(m.rand_like(a).shape), x(3, 4), off=PYTHON_VALUE),
    # keys: unigrad's Philox keys are not JAX's threefry ones (test_jit_random.py compiles them)
    Op("random_split", lambda m, a: tuple(ug.random.split(ug.random.key(0), a.shape[0]).shape), x(3, 4),
       off=PYTHON_VALUE),
    Op("random_fold_in", lambda m, a: tuple(ug.random.fold_in(ug.random.key(0), a.shape[0]).shape), x(3, 4),
       off=PYTHON_VALUE),
    # samplers by rejection (test_jit_random.py compiles them, test_random_distributions.py checks the laws)
    Op("random_rejection", lambda m, a: tuple(ug.random.poisson(ug.random.key(0), 2.0, a.shape).shape), x(3, 4),
       off=PYTHON_VALUE),
    # the implicit gradient of Gamma draws in their concentration, against JAX's; the draws
    # are a rejection sampler's, whose output is no smooth function of it (fd off)
    Op("random_gamma", gamma_draws, pos(3, 4), ops=("random_gamma", "random_gamma_grad", "digamma"), off={
        "fd": "the derivative is the implicit one (the quantile held fixed), not the sampler's change",
        **rejects("random draws are not exported (a compiled program calls the sampler back)")}),
    # the same in log space, from a below 1 (the boosted draws) to above
    Op("random_loggamma", loggamma_draws, arr((3, 4), low=0.05, high=3.0),
       ops=("random_loggamma", "random_gamma_grad", "digamma"), off={
        "fd": "the derivative is the implicit one (the quantile held fixed), not the sampler's change",
        **rejects("random draws are not exported (a compiled program calls the sampler back)")}),
    Op("debug_print", printed, x(2, 3), ops=("debug_print", "mul"), off=rejects("a print (ug.debug.print)")),
    Op("check_numerics", checked, x(2, 3), ops=("check_numerics", "mul")),
    Op("while_loop", doublings, x(3, 4, low=-0.5, high=0.5), off=NO_GRAD),
    Op("cond", guarded, x(3, 4), ops=("cond", "cond_branch", "log", "mul"), off=NO_TORCH_JVP),
    Op("psum", over_axis(lambda e, lax: e * lax.psum(e, "i"), lambda a: a * a.sum(0)), x(3, 4)),
    Op("pmean", over_axis(lambda e, lax: e - lax.pmean(e, "i"), lambda a: a - a.mean(0)), x(3, 4)),
    Op("pmax", over_axis(lambda e, lax: e - lax.pmax(e, "i"), lambda a: a - a.amax(0)), x(3, 4)),
    Op("pmin", over_axis(lambda e, lax: e * lax.pmin(e, "i"), lambda a: a * a.amin(0)), x(3, 4)),
    Op("all_gather", over_axis(lambda e, lax: lax.all_gather(e, "i", axis=1) * e[:, None],
                               lambda a: a.T.expand(3, 4, 3) * a[:, :, None]), x(3, 4)),
    Op("psum_scatter", over_axis(lambda e, lax: lax.psum_scatter(e * e, "i"), lambda a: (a * a).sum(0)), x(3, 3, 2)),
    Op("ppermute", over_axis(lambda e, lax: e * lax.ppermute(e, "i", [(0, 1), (1, 2), (2, 0)]),
                             lambda a: a * a.roll(1, 0)), x(3, 4)),
    Op("optimizer_update", adam_step, x(3, 4), x(3, 4, seed=1), off={
        **{t: "an optimizer step: not differentiated" for t in ("vjp", "fd", "jvp")},
        "vmap": "an optimizer step: no batching rule", **unsupported("optimizer_update")}),
    Op("optimizer_step", sgd_step, x(3, 4), x(3, 4, seed=1), ops=("copy_", "clone", "optimizer_step"), off={
        **{t: "an optimizer step: not differentiated" for t in ("vjp", "fd", "jvp")},
        "vmap": "an optimizer step: no batching rule", **unsupported("optimizer_step")}),
    Op("checkpoint", remat_region, x(3, 4), ops=("optimization_barrier",),
       off={"grad_of_jvp": "not supported: the region runs again in backward, outside the jvp's level, and "
                           "checkpoint raises NotImplementedError (torch.func refuses checkpoint's saved-tensor hooks "
                           "too; test_activation_checkpointing.py)"}),
    Op("custom_function", custom_rule, x(3, 4)),
    Op("lstm", recurrent("LSTM"), *recurrent_inputs(4)),
    Op("gru", recurrent("GRU"), *recurrent_inputs(3)),
    Op("rnn_tanh", recurrent("RNN"), *recurrent_inputs(1)),
    Op("rnn_relu", recurrent("RNN", nonlinearity="relu"), *recurrent_inputs(1)),
]


# torch's compositions of ops/composite_math.h (tests/python/test_composite_math.py has more
# inputs, dtypes and bad input for each)
ERF64 = {"onnx": "ONNX Runtime has no float64 Erf (erfc computes in float64)"}
COMPOSITES = [
    Op("tensordot", lambda m, a, b: m.tensordot(a, b, ([1, 0], [0, 1])), x(3, 2, 4), x(2, 3, 5, seed=1),
       ops=("matmul", "permute")),
    Op("inner", lambda m, a, b: m.inner(a, b), x(2, 4), x(3, 4, seed=1), ops=("matmul",)),
    Op("mv", lambda m, a, v: m.mv(a, v), x(4, 3), x(3, seed=1), ops=("matmul",)),
    Op("addmv", lambda m, i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2.0), x(4), x(4, 3, seed=1), x(3, seed=2),
       ops=("matmul", "add")),
    Op("addr", lambda m, i, a, b: m.addr(i, a, b), x(3, 4), x(3, seed=1), x(4, seed=2), ops=("matmul", "add")),
    Op("addbmm", lambda m, i, a, b: m.addbmm(i, a, b), x(3, 2), x(4, 3, 5, seed=1), x(4, 5, 2, seed=2),
       ops=("matmul", "add")),
    Op("block_diag", lambda m, a, b: m.block_diag(a, b), x(2, 3), x(2, seed=1), ops=("pad", "cat")),
    Op("diag_embed", lambda m, a: m.diag_embed(a, 1, 0, 2), x(2, 3), ops=("where", "permute")),
    Op("cov", lambda m, a: m.cov(a), x(3, 6), ops=("matmul", "mean")),
    Op("corrcoef", lambda m, a: m.corrcoef(a), x(3, 6), ops=("matmul", "sqrt")),
    Op("dist", lambda m, a, b: m.dist(a, b, 3.0), x(3, 4), x(4, seed=1), ops=("sub",)),
    Op("trapezoid", lambda m, y, t: m.trapezoid(y, t), x(3, 5), x(5, seed=1), ops=("sum", "slice")),
    Op("cumulative_trapezoid", lambda m, y, t: m.cumulative_trapezoid(y, t, dim=0), x(4, 3), x(4, seed=1),
       ops=("cumsum", "slice")),
    Op("gradient", lambda m, a: m.gradient(a, spacing=2.0, edge_order=2)[1], x(3, 5), ops=("cat", "slice")),
    Op("gradient.coordinates", lambda m, a, c: m.gradient(a, spacing=[c], dim=0)[0], x(4, 3),
       const([0.0, 0.5, 2.0, 2.25], np.float32), ops=("cat", "slice")),
    Op("diff", lambda m, a, p: m.diff(a, 2, 0, prepend=p), x(4, 3), x(1, 3, seed=1), ops=("sub", "cat")),
    Op("renorm", lambda m, a: m.renorm(a, 2.0, 0, 1.0), x(3, 4), ops=("where", "mul")),
    Op("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), x(3), x(2, seed=1), ops=("expand",)),
    Op("combinations", lambda m, a: m.combinations(a, 2), x(4), ops=("index_select",)),
    Op("erfc", lambda m, a: m.erfc(a), x(3, 4), ops=("erf",), off=ERF64),
    Op("i0", lambda m, a: m.i0(a), x(3, 4, low=-25.0, high=25.0), ops=("exp", "where")),
    Op("sinc", lambda m, a: m.sinc(a), x(3, 4), ops=("sin", "div")),
    Op("copysign", lambda m, a, b: m.copysign(a, b.detach()), x(3, 4), x(4, seed=1), ops=("abs", "where")),
    Op("float_power", lambda m, a, b: m.float_power(a, b), pos(3, 4), x(4, seed=1), ops=("pow",)),
    Op("fmax", lambda m, a, b: m.fmax(a, b), x(3, 4), x(4, seed=1), ops=("where",)),
    Op("fmin", lambda m, a, b: m.fmin(a, b), x(3, 4), x(4, seed=1), ops=("where",)),
    Op("logaddexp2", lambda m, a, b: m.logaddexp2(a, b), x(3, 4), x(4, seed=1), ops=("logaddexp",)),
    Op("ldexp", lambda m, a, b: m.ldexp(a, b), x(3, 4), x(4, seed=1), ops=("pow", "mul")),
    Op("mvlgamma", lambda m, a: m.mvlgamma(a, 3), x(3, 4, low=2.0, high=5.0), ops=("sum",)),
    # ug/autograd/special.h: custom functions whose rules are the closed forms; gammainc and zeta
    # differentiate in their second argument only, as torch's.
    Op("igamma", lambda m, a, t: m.igamma(a.detach(), t), x(3, 4, low=0.5, high=6.0), x(4, low=0.1, high=8.0, seed=1),
       ops=("custom_function",), off=NO_TORCH_JVP),
    Op("igammac", lambda m, a, t: a.detach().igammac(t), x(3, 4, low=0.5, high=6.0), x(4, low=0.1, high=8.0, seed=1),
       ops=("custom_function",), off=NO_TORCH_JVP),
    Op("polygamma", lambda m, a: m.polygamma(2, a), x(3, 4, low=0.3, high=5.0), ops=("custom_function",)),
    Op("special.zeta", lambda m, s, q: m.special.zeta(s.detach(), q), x(3, 4, low=1.5, high=5.0),
       x(4, low=0.3, high=4.0, seed=1), ops=("custom_function",), off=NO_TORCH_JVP),
    Op("special.xlog1py", lambda m, a, b: m.special.xlog1py(a, b), x(3, 4), x(4, low=0.0, high=3.0, seed=1),
       ops=("log1p", "where")),
    Op("special.entr", lambda m, a: m.special.entr(a), x(3, 4, low=0.1, high=4.0), ops=("custom_function",)),
    Op("special.ndtr", lambda m, a: m.special.ndtr(a), x(3, 4), ops=("custom_function",), off=ERF64),
    # torch's float32 gradient loses x^2 ulp: kept to |x| <= 6
    Op("special.log_ndtr", lambda m, a: m.special.log_ndtr(a), x(3, 4, low=-6.0, high=6.0), ops=("custom_function",),
       off=ERF64),
    Op("special.ndtri", lambda m, a: m.special.ndtri(a), x(3, 4, low=0.01, high=0.99), ops=("custom_function",),
       off=ERF64),
    Op("special.erfcx", lambda m, a: m.special.erfcx(a), x(3, 4, low=-4.0, high=10.0), ops=("custom_function",),
       off=ERF64),
    Op("special.i0e", lambda m, a: m.special.i0e(a), x(3, 4, low=-25.0, high=25.0), ops=("custom_function",)),
    Op("special.i1", lambda m, a: m.special.i1(a), x(3, 4, low=-25.0, high=25.0), ops=("custom_function",)),
    Op("special.i1e", lambda m, a: m.special.i1e(a), x(3, 4, low=-25.0, high=25.0), ops=("custom_function",)),
    Op("clamp_min", lambda m, a: m.clamp_min(a, -0.5), x(3, 4), ops=("maximum",)),
    Op("clamp_max", lambda m, a, b: a.clamp_max(b), x(3, 4), x(4, seed=1), ops=("minimum",)),
    Op("linalg_cross", lambda m, a, b: m.linalg.cross(a, b), x(4, 3), x(1, 3, seed=1), ops=("cat", "mul", "sub")),
    Op("frexp", lambda m, a: m.frexp(a)[0], x(3, 4), ops=("mul",), off=NO_TORCH_JVP),
    Op("round.decimals", lambda m, a: m.round(a, decimals=1), x(3, 4), ops=("round", "mul", "div")),
    Op("div.trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), x(3, 4), pos(4, seed=2),
       ops=("div", "trunc", "where")),
    Op("movedim.sequences", lambda m, a: m.movedim(a, (0, 1), (2, 0)), x(2, 3, 4), ops=("permute",)),
    Op("column_stack", lambda m, a, b: m.column_stack([a, b]), x(3), x(3, 2, seed=1), ops=("cat",)),
    Op("slice_scatter", lambda m, a, s: m.slice_scatter(a, s, 1, 1, None, 2), x(3, 5), x(3, 2, seed=1),
       ops=("scatter",)),
    Op("select_scatter", lambda m, a, s: m.select_scatter(a, s, 0, 1), x(3, 4), x(4, seed=1), ops=("scatter",)),
    Op("diagonal_scatter", lambda m, a, s: m.diagonal_scatter(a, s, -1, 1, 0), x(3, 4), x(3, seed=1),
       ops=("scatter",)),
    Op("as_strided_scatter", lambda m, a, s: m.as_strided_scatter(a, s, (2, 2), (1, 3), 2), x(3, 4), x(2, 2, seed=1),
       ops=("scatter", "index_select", "where"),
       off={"vjp": "torch's gradient in input is wrong (grad where src was written, 0 elsewhere); fd checks ours"}),
    Op("index_reduce", lambda m, a, s: m.index_reduce(a, 1, m.tensor([2, 0, 2]), s, "mean"), x(2, 4), x(2, 3, seed=1),
       ops=("scatter_add", "div"), off={"jvp": "torch.func.jvp of index_reduce is not implemented"}),
    Op("index_reduce.amax", lambda m, a, s: m.index_reduce(a, 0, m.tensor([1, 1]), s, "amax", include_self=False),
       x(3, 2), x(2, 2, seed=1), ops=("scatter_reduce",), opset=18,
       off={"jvp": "torch.func.jvp of index_reduce is not implemented"}),
    Op("index_reduce.prod", lambda m, a, s: m.index_reduce(a, 0, m.tensor([0, 2, 0]), s, "prod"), x(3, 2),
       x(3, 2, seed=1), ops=("scatter_reduce",), opset=18,
       off={"jvp": "torch.func.jvp of index_reduce is not implemented"}),
    Op("index_copy", lambda m, a, s: m.index_copy(a, 0, m.tensor([2, 0]), s), x(3, 4), x(2, 4, seed=1),
       ops=("scatter",)),
    Op("scatter_reduce", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([[0, 1], [0, 0], [2, 1]]), s, "mean",
                                                          include_self=False), x(3, 2), x(3, 2, seed=1),
       ops=("scatter_add", "div")),
    Op("scatter_reduce.amax", lambda m, a, s: m.scatter_reduce(a, 1, m.tensor([[0, 1, 0], [2, 2, 1]]), s, "amax"),
       x(2, 3), x(2, 3, seed=1), ops=("scatter_reduce",), opset=18),
    Op("scatter_reduce.amin", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([[0, 1], [0, 0], [2, 1]]), s, "amin",
                                                               include_self=False), x(3, 2), x(3, 2, seed=1),
       ops=("scatter_reduce",), opset=18),
    Op("scatter_reduce.prod", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([[0, 1], [0, 0], [2, 1]]), s, "prod"),
       x(3, 2), x(3, 2, seed=1), ops=("scatter_reduce",), opset=18,
       off={"jvp": "torch.func.jvp of scatter_reduce's prod gives zeros (test_composite_math checks ours)"}),
    # torch gives scatter's reduce= forms no derivative: its scatter_reduce twins are the reference.
    Op("scatter.reduce_add", lambda m, a, s: a.scatter(0, m.tensor([[0, 1], [0, 0], [2, 1]]), s, reduce="add")
       if m is ug else a.scatter_reduce(0, m.tensor([[0, 1], [0, 0], [2, 1]]), s, "sum"), x(3, 2), x(3, 2, seed=1),
       ops=("scatter_add",)),
    Op("scatter.reduce_multiply", lambda m, a: a.scatter(1, m.tensor([[0, 1, 0], [2, 2, 1]]), 1.5, reduce="multiply")
       if m is ug else a.scatter_reduce(1, m.tensor([[0, 1, 0], [2, 2, 1]]), m.full((2, 3), 1.5, dtype=a.dtype), "prod"), x(2, 3),
       ops=("scatter_reduce",), opset=18,
       off={"jvp": "torch.func.jvp of scatter_reduce's prod gives zeros (test_composite_math checks ours)"}),
    Op("scatter.value", lambda m, a: a.scatter(1, m.tensor([[0, 1], [2, 3], [0, 1]]), 2.5), x(3, 4)),
    Op("cumsum.dtype", lambda m, a: a.cumsum(1, dtype=m.float64), x(3, 5)),
    Op("cumprod.dtype", lambda m, a: m.cumprod(a, 1, dtype=m.float64), x(3, 5, low=0.5, high=2)),
]

# The FFT primitives through torch.fft's functions, on real inputs and outputs: a complex
# operand is the view_as_complex of a real [..., 2] input, a complex result its view_as_real.
# test_fft.py checks every function, dtype and norm.
FFT = [
    Op("fft_c2c", lambda m, a: m.view_as_real(m.fft.fft(m.view_as_complex(a), norm="ortho")), x(3, 5, 2),
       ops=("fft_c2c", "view_as_complex", "view_as_real"), off=COMPLEX_NOT_EXPORTED),
    Op("fft_c2c.fft2", lambda m, a: m.view_as_real(m.fft.ifft2(m.view_as_complex(a))), x(4, 3, 2),
       ops=("fft_c2c", "view_as_complex", "view_as_real"), off=COMPLEX_NOT_EXPORTED),
    Op("fft_r2c", lambda m, a: m.view_as_real(m.fft.rfft(a, dim=0)), x(7, 3), ops=("fft_r2c", "view_as_real"),
       off=unsupported("fft_r2c")),
    Op("fft_r2c.twosided", lambda m, a: m.view_as_real(m.fft.fftn(a, dim=(0, 1))), x(4, 3),
       ops=("fft_r2c", "view_as_real"), off=unsupported("fft_r2c")),
    Op("fft_c2r", lambda m, a: m.fft.irfft(m.view_as_complex(a), n=8), x(3, 5, 2), ops=("fft_c2r", "view_as_complex"),
       off=COMPLEX_NOT_EXPORTED),
    Op("fft_c2r.odd", lambda m, a: m.fft.irfftn(m.view_as_complex(a), s=(3, 7)), x(3, 4, 2),
       ops=("fft_c2r", "view_as_complex"), off=COMPLEX_NOT_EXPORTED),
]

OPS = UNARY + BINARY + REDUCTIONS + LINALG + DECOMPOSITIONS + SHAPES + INDEXING + JOINS + CONV_POOL + ACTIVATIONS + LOSSES + OTHERS + COMPOSITES + FFT
