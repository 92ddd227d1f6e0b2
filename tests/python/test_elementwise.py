"""Elementwise ops against PyTorch: every dtype, broadcasting, non-contiguous views,
0-d / empty / size-1 shapes and sizes above the threading threshold."""
import numpy as np
import pytest

from reference import arr, check, check_op

FLOATS = ["float32", "float64", "float16", "bfloat16"]
ALL = FLOATS + ["int8", "int16", "int32", "int64", "uint8", "bool"]
SHAPES = [(), (0,), (1,), (7,), (3, 1, 4), (2, 3, 5), (70000,)]

UNARY_ANY = ["neg", "abs", "sign", "square", "relu", "floor", "ceil", "round", "trunc"]
UNARY_FLOAT = ["exp", "exp2", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
               "reciprocal"]
UNARY_POSITIVE = ["log", "log2", "log10", "sqrt", "rsqrt"]
PREDICATES = ["isnan", "isinf", "isfinite", "logical_not"]


def transposed(t):
    return t.transpose(0, -1)


@pytest.mark.parametrize("name", UNARY_ANY + UNARY_FLOAT)
@pytest.mark.parametrize("dtype", ALL)
def test_unary(name, dtype):
    check(lambda m, x: getattr(m, name)(x), arr((4, 5), dtype))


@pytest.mark.parametrize("name", UNARY_FLOAT + UNARY_ANY[:1])
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_shapes(name, shape):
    check(lambda m, x: getattr(m, name)(x), arr(shape))


@pytest.mark.parametrize("name", UNARY_POSITIVE)
@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
def test_unary_positive_domain(name, dtype):
    check(lambda m, x: getattr(m, name)(x), arr((3, 4), dtype, low=0.1, high=9))


@pytest.mark.parametrize("name", ["exp", "neg", "tanh", "abs"])
def test_unary_noncontiguous(name):
    check(lambda m, x: getattr(m, name)(x), arr((5, 3, 4), view=transposed))
    check(lambda m, x: getattr(m, name)(x[:, ::2]), arr((5, 6)))


@pytest.mark.parametrize("name", PREDICATES)
@pytest.mark.parametrize("dtype", ALL)
def test_predicates(name, dtype):
    check(lambda m, x: getattr(m, name)(x), arr((3, 4), dtype))


def test_predicates_special_values():
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan], dtype=np.float32)
    for name in PREDICATES + ["sign", "relu", "exp", "abs"]:
        check(lambda m, t: getattr(m, name)(t), x)


@pytest.mark.parametrize("name", ["relu", "silu", "sigmoid", "tanh"])
def test_activations(name):
    check(lambda m, x: getattr(m.nn.functional if m.__name__ == "torch" else m, name)(x),
          arr((64, 33), low=-20, high=20))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu(approximate, dtype):
    check(lambda m, x: m.nn.functional.gelu(x, approximate=approximate) if m.__name__ == "torch"
          else m.gelu(x, approximate=approximate), arr((6, 7), dtype))
    check(lambda m, x: x.gelu() if m.__name__ == "unigrad" else m.nn.functional.gelu(x), arr((6, 7), dtype))


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le",
          "gt", "ge", "logical_and", "logical_or", "logical_xor"]
BROADCAST = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (5,)), ((0, 3), (1, 3)),
             ((5, 1, 6), (7, 1)), ((70000,), (70000,))]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", ALL)
def test_binary_dtypes(name, dtype):
    check(lambda m, a, b: getattr(m, name)(a, b), arr((4, 5), dtype, seed=1), arr((4, 5), dtype, seed=2))


@pytest.mark.parametrize("name", BINARY + ["pow"])
@pytest.mark.parametrize("shapes", BROADCAST)
def test_binary_broadcast(name, shapes):
    check(lambda m, a, b: getattr(m, name)(a, b), arr(shapes[0], seed=1, low=0.5),
          arr(shapes[1], seed=2, low=0.5))


@pytest.mark.parametrize("da", ALL)
@pytest.mark.parametrize("db", ALL)
def test_promotion(da, db):
    check(lambda m, a, b: a + b, arr((3,), da, seed=1), arr((3,), db, seed=2))
    check(lambda m, a, b: a * b, arr((3,), da, seed=1), arr((), db, seed=2))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("scalar", [2, 2.5, True, -3])
def test_scalar_operands(dtype, scalar):
    check(lambda m, a: a + scalar, arr((3, 2), dtype))
    check(lambda m, a: scalar * a, arr((3, 2), dtype))
    check(lambda m, a: a / scalar, arr((3, 2), dtype))
    check(lambda m, a: a > scalar, arr((3, 2), dtype))
    check(lambda m, a: scalar - a, arr((3, 2), dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_floor_divide_and_remainder_signs(dtype):
    a = np.array([7, -7, 7, -7, 0, 5], dtype=dtype)
    b = np.array([2, 2, -2, -2, 3, -3], dtype=dtype)
    check(lambda m, x, y: x // y, a, b)
    check(lambda m, x, y: x % y, a, b)
    check(lambda m, x, y: m.floor_divide(x, y), a, b)


def test_integer_division_by_zero_raises():
    check(lambda m, x, y: x // y, np.array([1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int64))
    check(lambda m, x, y: x % y, np.array([1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int64))


def test_pow():
    check(lambda m, a, b: a ** b, arr((3, 4), low=0.1), arr((3, 4), seed=3))
    check(lambda m, a: a ** 2, arr((3, 4), "int64"))
    check(lambda m, a: 2 ** a, arr((3, 4), "int64", low=0, high=10))
    check(lambda m, a: a ** 0.5, arr((3, 4), low=0))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "bool"])
def test_bitwise(dtype):
    for op in (lambda m, a, b: a & b, lambda m, a, b: a | b, lambda m, a, b: a ^ b):
        check(op, arr((4, 4), dtype, seed=1, low=0, high=100), arr((4, 4), dtype, seed=2, low=0, high=100))


def test_bitwise_rejects_floats():
    check(lambda m, a, b: a & b, arr((3,)), arr((3,)))


def test_bool_subtraction_rejected():
    check(lambda m, a, b: a - b, arr((3,), "bool"), arr((3,), "bool"))


def test_shape_mismatch_raises():
    check(lambda m, a, b: a + b, arr((3, 4)), arr((5,)))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_inplace(dtype):
    def fn(m, a, b):
        a = a.clone()
        a += b
        a.mul_(2)
        a.sub_(b)
        return a
    check(fn, arr((3, 4), dtype, seed=1), arr((4,), dtype, seed=2))


def test_inplace_rejects_float_into_int():
    check(lambda m, a, b: a.add_(b), arr((3,), "int64"), arr((3,), "float32"))
    check(lambda m, a: a.exp_(), arr((3,), "int64"))


def test_inplace_into_view_writes_base():
    def fn(m, a):
        b = a.clone()
        b[:, 1].mul_(10)
        b.t().add_(1)
        return b
    check(fn, arr((3, 4)))


def test_where_clamp_lerp():
    check(lambda m, c, a, b: m.where(c, a, b), arr((3, 4), "bool"), arr((3, 4), seed=1), arr((4,), seed=2))
    check(lambda m, c, a: m.where(c, a, 0.0), arr((3, 4), "bool"), arr((3, 4), seed=1))
    check(lambda m, a: m.clamp(a, -1, 1), arr((3, 4)))
    check(lambda m, a: a.clamp(min=0.5), arr((3, 4)))
    check(lambda m, a: a.clamp(max=0), arr((3, 4), "int64"))
    check(lambda m, a, b: m.lerp(a, b, 0.3), arr((3, 4), seed=1), arr((3, 4), seed=2))
    check(lambda m, a, b, w: m.lerp(a, b, w), arr((3, 4), seed=1), arr((3, 4), seed=2), arr((4,), seed=3))


def test_nan_propagation():
    a = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    b = np.array([np.nan, 2.0, 1.0], dtype=np.float32)
    check(lambda m, x, y: m.maximum(x, y), a, b)
    check(lambda m, x, y: m.minimum(x, y), a, b)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_long_runs_streamed_to_memory(name):
    # Runs over a million elements write with non-temporal stores; a misaligned start too.
    check(lambda m, x: getattr(x[3:], name)(), arr(((1 << 20) + 11,)))


@pytest.mark.parametrize("op", ["add", "sub"])
def test_alpha_scales_the_other_operand_as_in_torch(op):
    check_op(lambda m, a, b: getattr(m, op)(a, b, alpha=-2.5), arr((3, 4)), arr((4,), seed=1))
    check(lambda m, a, b: getattr(a, op)(b, alpha=3), arr((5,), "int64"), arr((5,), "int64", seed=1))
    check(lambda m, a, b: getattr(a.clone(), op + "_")(b, alpha=0.25), arr((2, 3)), arr((3,), seed=1))
    # torch refuses a fractional alpha for integer tensors; so must we.
    check(lambda m, a, b: getattr(m, op)(a, b, alpha=0.5), arr((5,), "int64"), arr((5,), "int64", seed=1))


def _16_bit_operands():
    """Values of both signs over several binades, as 16-bit tensors of ug and torch."""
    import torch

    import unigrad as ug
    rng = np.random.default_rng(0)
    v = (rng.standard_normal(4096) * np.exp2(rng.integers(-6, 7, 4096))).astype(np.float32)
    for dtype, tdtype, bits in ((ug.bfloat16, torch.bfloat16, 8), (ug.float16, torch.float16, 11)):
        yield ug.tensor(v).to(dtype), torch.tensor(v).to(tdtype), bits


def _ulp(x, bits):
    return 2.0 ** (np.floor(np.log2(np.maximum(np.abs(x), 2.0 ** -14))) - (bits - 1))


# (name, op): the number is not a 16-bit value, so reading it rounded gives other results.
_READ_IN_FLOAT32 = [
    ("mul", lambda x, s: x * s), ("rmul", lambda x, s: s * x), ("mul_", lambda x, s: x.clone().mul_(s)),
    ("div", lambda x, s: x / s), ("div_", lambda x, s: x.clone().div_(s)),
    ("floor_divide", lambda x, s: x // s),
]
_ROUNDED_FIRST = [("add", lambda x, s: x + s), ("sub", lambda x, s: x - s), ("rsub", lambda x, s: s - x),
                  ("add_", lambda x, s: x.clone().add_(s)), ("gt", lambda x, s: x > s)]


@pytest.mark.parametrize("name, op", _READ_IN_FLOAT32 + _ROUNDED_FIRST,
                         ids=[c[0] for c in _READ_IN_FLOAT32 + _ROUNDED_FIRST])
def test_16_bit_tensor_and_python_number_as_torch(name, op):
    """torch's CPU kernels read a Python number in float32 for mul, div and floor_divide of a
    16-bit tensor, and round it to the tensor's dtype first for add, sub and comparisons.
    Before, unigrad rounded it for all: bfloat16 x * 1.0123 multiplied by 1.015625, half the
    elements an ulp or more off."""
    for x, t, _ in _16_bit_operands():
        for s in (1.0123, 0.30001, 3.0007):
            np.testing.assert_array_equal(op(x, s).double().numpy(), op(t, s).double().numpy(),
                                          err_msg=f"{name} {x.dtype} {s}")


def test_16_bit_power_of_a_number():
    """x ** s of a 16-bit x: the exponent rounded to x's dtype (as torch and JAX read it), the
    power computed in float32 and rounded once: within half an ulp and float32's error (torch
    multiplies x * x * x in 16 bits for an exponent of 3, up to an ulp further off)."""
    import unigrad as ug
    for x, _, bits in _16_bit_operands():
        a = np.abs(x.double().numpy())
        for s in (1.0123, 0.30001, 3.0007):
            e = ug.tensor(s).to(x.dtype).item()
            exact = a ** e
            got = (x.abs() ** s).double().numpy()
            fits = exact <= ug.finfo(x.dtype).max  # the others overflow to inf
            assert np.all(got[~fits] == np.inf)
            assert np.all(np.abs(got - exact)[fits] <= (0.5 * _ulp(exact, bits) + 4 * 2.0 ** -24 * exact)[fits]), \
                (x.dtype, s)


def test_16_bit_division_by_a_number_rounds_once():
    """x / s and s / x of a 16-bit x: float32's quotient rounded once, within half an ulp and
    float32's error of the exact one (torch multiplies by float32's 1 / s instead: the same
    bound holds for it). Rounding s first put elements up to 2 ulps off."""
    for x, t, bits in _16_bit_operands():
        a = x.double().numpy()
        for s in (0.30001, 3.0007):
            for ours, exact in ((x / s, a / s), (s / x, s / a)):
                got = ours.double().numpy()
                assert np.all(np.abs(got - exact) <= 0.5 * _ulp(exact, bits) + 2 * 2.0 ** -24 * np.abs(exact))
        assert np.all(np.abs((t / 0.30001).double().numpy() - a / 0.30001)
                      <= 0.5 * _ulp(a / 0.30001, bits) + 2 * 2.0 ** -24 * np.abs(a / 0.30001))


@pytest.mark.parametrize("op", ["add", "sub"])
def test_16_bit_alpha_rounds_once(op):
    """a + alpha * b on 16-bit tensors as torch's: alpha rounded to their dtype, the result
    computed in float32 and rounded once (bit for bit: torch's float32 fma and the product then
    sum round alike here, the product of two 16-bit values being exact in float32); before, alpha
    * b rounded to 16 bits first, 15% of the elements an ulp off."""
    import torch
    for x, t, _ in _16_bit_operands():
        y, u = x.flip(0), t.flip(0)
        theirs = getattr(torch, op)(t, u, alpha=0.30001).double().numpy()
        for got in (getattr(x, op)(y, alpha=0.30001), getattr(x.clone(), op + "_")(y, alpha=0.30001)):
            np.testing.assert_array_equal(got.double().numpy(), theirs, err_msg=f"{op} {x.dtype}")


def test_lerp_at_weight_one_is_the_end():
    """torch's lerp starts from the nearer end, so weight 1 gives `end` exactly (a + 1 * (b - a)
    need not be b: it was not for a third of these). Against torch's, which fuses each step into an
    fma: within the two roundings of the product and the sum."""
    import torch

    import unigrad as ug
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(1000).astype(np.float32) * 1e3 for _ in range(2))
    w = rng.uniform(-0.5, 1.5, 1000).astype(np.float32)
    np.testing.assert_array_equal(ug.lerp(ug.tensor(a), ug.tensor(b), 1.0).numpy(), b)
    np.testing.assert_array_equal(ug.lerp(ug.tensor(a), ug.tensor(b), ug.ones(1000)).numpy(), b)
    bound = 2 * 2.0 ** -24 * (np.abs(a) + 2 * np.abs(b - a) * np.maximum(np.abs(w), np.abs(1 - w)))
    for weight in (0.3, 0.7, w):
        ours = ug.lerp(ug.tensor(a), ug.tensor(b), ug.tensor(weight) if isinstance(weight, np.ndarray) else weight)
        theirs = torch.lerp(torch.tensor(a), torch.tensor(b),
                            torch.tensor(weight) if isinstance(weight, np.ndarray) else weight)
        assert np.all(np.abs(ours.numpy() - theirs.numpy()) <= bound)
