"""torch's other names (unigrad/aliases.py) against torch 2.13: each alias, method or function,
gives torch's values on the same inputs; the in-place forms change self as torch's do; the
constant predicates answer as torch's do for a dense real CPU tensor."""
import numpy as np
import pytest
import torch

import unigrad as ug
from unigrad import aliases

RNG = np.random.default_rng(0)
UNIT = RNG.uniform(0.05, 0.95, (3, 4))  # inside every domain below: (0, 1) for logit, (-1, 1) for erfinv
OTHER = RNG.uniform(0.1, 2.0, (3, 4))

BINARY = {"arctan2", "greater", "greater_equal", "less", "less_equal", "not_equal"}
BINARY |= {name + "_" for name in BINARY} | {"multiply_", "divide_", "true_divide_", "subtract_", "hypot_", "xlogy_"}
ARGS = {"clip_": (0.2, 0.6), "cumsum_": (1,), "cumprod_": (0,)}
IN_PLACE = sorted(n for n in dir(ug.Tensor) if n.endswith("_") and n[:-1] in
                  ("cumsum", "cumprod", "lerp", "erfinv", "digamma", "lgamma", "logit", "hypot", "frac", "xlogy"))


def both(values, dtype="float64"):
    return ug.tensor(values, dtype=getattr(ug, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))


def call(name, t, lib):
    if name in BINARY:
        return getattr(t, name)(lib.tensor(OTHER, dtype=t.dtype))
    if name == "lerp_":
        return t.lerp_(lib.tensor(OTHER, dtype=t.dtype), 0.3)
    return getattr(t, name)(*ARGS.get(name, ()))


@pytest.mark.parametrize("name", sorted(aliases._ALIASES) + IN_PLACE)
def test_method_matches_torch(name):
    u, t = both(UNIT)
    got, want = call(name, u, ug), call(name, t, torch)
    if isinstance(want, torch.Tensor):
        np.testing.assert_allclose(np.asarray(got.numpy(), float), want.numpy().astype(float), rtol=1e-12, atol=1e-15)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    else:
        assert got == want
    if name.endswith("_"):  # in place: self holds the result too
        np.testing.assert_allclose(u.numpy(), t.numpy(), rtol=1e-12, atol=1e-15)


# Those taking more arguments (the *_copy functions, torch.clamp_, ...): test_inplace_views.py.
MORE_ARGS = set(aliases._COPIES) | {"addmv_", "as_strided_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "fill_",
                                    "gcd_", "index_put_", "lcm_", "ldexp_", "resize_as_", "split_with_sizes"}


@pytest.mark.parametrize("name", sorted(set(aliases.FUNCTIONS) - MORE_ARGS))
def test_function_matches_torch(name):
    u, t = both(UNIT)
    args_u, args_t = ((ug.tensor(OTHER),), (torch.tensor(OTHER),)) if name in BINARY else ((), ())
    if name == "take":
        args_u, args_t = (ug.tensor([[0, 5], [11, 2]]),), (torch.tensor([[0, 5], [11, 2]]),)
    if name == "argwhere":
        u, t = both(UNIT > 0.5)
    got, want = getattr(ug, name)(u, *args_u), getattr(torch, name)(t, *args_t)
    np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float), rtol=1e-12)


def test_in_place_alias_records_a_gradient_as_torch():
    grads = []
    for lib in (ug, torch):
        x = lib.tensor(UNIT, requires_grad=True)
        y = x * 1.0
        y.arctan_()
        y.cumsum_(1).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_predicates_match_torch():
    u, t = both(UNIT)
    for name in ("is_sparse", "is_quantized", "is_meta", "is_nested", "is_mkldnn", "is_cpu"):
        assert getattr(u, name) == getattr(t, name), name
    for name in ("is_conj", "is_neg", "is_signed", "get_device"):
        assert getattr(u, name)() == getattr(t, name)(), name
    for dtype in ("uint8", "bool", "int8", "int64", "float32"):
        assert ug.zeros(1, dtype=getattr(ug, dtype)).is_signed() == torch.zeros(1, dtype=getattr(torch, dtype)).is_signed()
    assert u.is_same_size(ug.ones(3, 4)) and not u.is_same_size(ug.ones(4, 3))
    np.testing.assert_array_equal(u.mH.numpy(), t.mH.numpy())
    assert u.resolve_conj() is u and u.conj() is u


def test_split_with_sizes_and_sum_to_size_match_torch():
    u, t = both(RNG.standard_normal((4, 6)))
    for a, b in zip(u.split_with_sizes([1, 2, 3], dim=1), t.split_with_sizes([1, 2, 3], dim=1)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    u, t = both(RNG.standard_normal((2, 3, 4)))
    for size in ((3, 1), (1, 4), (3, 4), (1, 1, 1), ((1, 3, 1),)):
        np.testing.assert_allclose(u.sum_to_size(*size).numpy(), t.sum_to_size(*size).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="sum_to_size"):
        u.sum_to_size(2, 4)
    with pytest.raises(RuntimeError):
        t.sum_to_size(2, 4)
