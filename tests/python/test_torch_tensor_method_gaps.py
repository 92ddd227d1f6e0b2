"""Tensor methods torch users call that unigrad lacked: H, fliplr / flipud, fill_diagonal_, addmm_ /
baddbmm_, hardshrink / prelu, random_, new_empty_strided, map_ / apply_, dim_order, pin_memory /
is_pinned and resize_as_; each against torch 2.13."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def both(a, grad=False):
    return torch.tensor(a, requires_grad=grad), ug.tensor(a, requires_grad=grad)


def test_H_is_a_matrix_conjugate_transpose():
    a = RNG.standard_normal((3, 4))
    t, u = both(a)
    np.testing.assert_array_equal(u.H.numpy(), t.H.numpy())
    with pytest.warns(UserWarning, match="deprecated on 0-D"):  # torch's; unigrad keeps the 0-d case quietly
        want = torch.tensor(2.5).H.item()
    assert u.H.shape == (4, 3) and ug.tensor(2.5).H.item() == want
    for shape, hint in (((3,), False), ((2, 3, 4), True)):
        with pytest.raises(RuntimeError, match=rf"tensor.H is only supported on matrices \(2-D tensors\). "
                                               rf"Got {len(shape)}-D tensor") as e:
            ug.ones(*shape).H
        assert ("tensor.mH" in str(e.value)) == hint
        with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
            torch.ones(*shape).H


@pytest.mark.parametrize("name", ["fliplr", "flipud"])
def test_fliplr_flipud_methods(name):
    a, cot = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 4, 2))
    t, u = both(a, grad=True)
    want, got = getattr(t, name)(), getattr(u, name)()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    (want * torch.tensor(cot)).sum().backward()
    (got * ug.tensor(cot)).sum().backward()
    np.testing.assert_array_equal(u.grad.numpy(), t.grad.numpy())
    with pytest.raises(Exception, match=rf"\[{name}\] input must be at least"):
        getattr(ug.tensor(1.0) if name == "flipud" else ug.ones(3), name)()


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((2, 5), False), ((7, 3), False), ((7, 3), True),
                                        ((3, 7), True), ((8, 3), True), ((4, 4, 4), False), ((2, 2, 2, 2), True)])
def test_fill_diagonal_matches_torch(shape, wrap):
    a = RNG.standard_normal(shape)
    t, u = both(a)
    t.fill_diagonal_(-2.5, wrap=wrap)
    assert u.fill_diagonal_(-2.5, wrap) is u
    np.testing.assert_array_equal(u.numpy(), t.numpy())


def test_fill_diagonal_of_a_view_and_its_gradient():
    t, u = both(RNG.standard_normal((5, 4)))
    tv, uv = t.t()[:, 1:], u.t()[:, 1:]  # a non-contiguous (4, 4) view: the base changes too
    tv.fill_diagonal_(7.0)
    uv.fill_diagonal_(7.0)
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    a, cot = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    t, u = both(a, grad=True)
    tv, uv = t * 2, u * 2  # a non-leaf: in place, as torch allows; the diagonal's gradient is 0
    tv.fill_diagonal_(7.0, wrap=True)
    uv.fill_diagonal_(7.0, wrap=True)
    (tv * torch.tensor(cot)).sum().backward()
    (uv * ug.tensor(cot)).sum().backward()
    np.testing.assert_array_equal(u.grad.numpy(), t.grad.numpy())


def test_fill_diagonal_errors():
    with pytest.raises(RuntimeError, match=r"\[fill_diagonal_\] dimensions must be larger than 1"):
        ug.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match=r"\[fill_diagonal_\] all dimensions of input must be of equal length.*"
                                           r"\[2, 3, 2\]"):
        ug.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        torch.zeros(2, 3, 2).fill_diagonal_(1)


@pytest.mark.parametrize("name,shapes", [("addmm", [(3, 4), (3, 5), (5, 4)]), ("baddbmm", [(2, 3, 4), (2, 3, 5),
                                                                                        (2, 5, 4)])])
def test_addmm_baddbmm_in_place(name, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    cot = RNG.standard_normal(shapes[0])
    ts, us = zip(*(both(a, grad=True) for a in arrays))
    want, got = ts[0] * 1, us[0] * 1  # non-leaves: in place, as torch allows
    assert getattr(got, name + "_")(*us[1:], beta=0.5, alpha=-2) is got
    getattr(want, name + "_")(*ts[1:], beta=0.5, alpha=-2)
    # float64 sums of 5 products: a few ulp
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13, atol=1e-13)
    (want * torch.tensor(cot)).sum().backward()
    (got * ug.tensor(cot)).sum().backward()
    for t, u in zip(ts, us):
        np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-13, atol=1e-13)
    with pytest.raises(Exception, match=r"shapes .*3, 5\] and .*3, 5\] cannot be multiplied"):
        getattr(ug.ones(*shapes[0]), name + "_")(ug.ones(*shapes[1]), ug.ones(*shapes[1]))


def test_hardshrink_and_prelu_methods():
    a, w, cot = RNG.standard_normal((2, 3, 4)), np.array([0.1, -0.3, 0.2]), RNG.standard_normal((2, 3, 4))
    (t, u), (tw, uw) = both(a, grad=True), both(w, grad=True)
    for want, got in ((t.hardshrink(), u.hardshrink()), (t.hardshrink(lambd=0.8), u.hardshrink(lambd=0.8)),
                      (t.prelu(tw), u.prelu(uw))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
        (want * torch.tensor(cot)).sum().backward()
        (got * ug.tensor(cot)).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy(), rtol=1e-13)
    with pytest.raises(Exception, match="prelu"):
        u.prelu(ug.ones(2))


# dtype -> the inclusive range torch's random_() draws from
DEFAULT_RANGES = {"bool": (0, 1), "uint8": (0, 255), "int8": (0, 127), "int16": (0, 2**15 - 1),
                  "int32": (0, 2**31 - 1), "int64": (0, 2**63 - 1), "float16": (0, 2**11), "bfloat16": (0, 2**8),
                  "float32": (0, 2**24), "float64": (0, 2**53)}


@pytest.mark.parametrize("dtype", DEFAULT_RANGES)
def test_random_default_range_per_dtype(dtype):
    lo, hi = DEFAULT_RANGES[dtype]
    x = ug.zeros(4000, dtype=getattr(ug, dtype))
    assert x.random_() is x and x.dtype == getattr(ug, dtype)
    v = np.array(x.tolist(), dtype=object)
    assert lo <= v.min() and v.max() <= hi and v.max() > hi // 2  # spans the range, not a corner of it
    tv = torch.zeros(4000, dtype=getattr(torch, dtype)).random_()
    assert lo <= tv.min().item() and tv.max().item() <= hi


def test_random_bounds_and_generator():
    v = ug.zeros(3000).random_(5).numpy()
    assert set(np.unique(v)) == {0, 1, 2, 3, 4}
    v = ug.zeros(3000, dtype=ug.int32).random_(-3, 2).numpy()
    assert set(np.unique(v)) == {-3, -2, -1, 0, 1}
    v = ug.zeros(3000, dtype=ug.int8).random_(120, None).numpy()
    assert set(np.unique(v)) == set(range(120, 128))  # [from, the dtype's largest]
    v = np.array(ug.zeros(3000, dtype=ug.int64).random_(2**63 - 3, None).tolist())
    assert set(np.unique(v)) == {2**63 - 3, 2**63 - 2, 2**63 - 1}
    v = ug.zeros(3000, dtype=ug.float16).random_(2045, None).numpy()
    assert set(np.unique(v)) == {2045, 2046, 2047, 2048}
    g1, g2 = ug.Generator(), ug.Generator()
    g1.manual_seed(7)
    g2.manual_seed(7)
    assert ug.zeros(20).random_(0, 100, generator=g1).tolist() == ug.zeros(20).random_(0, 100, generator=g2).tolist()


def test_randint_keeps_64_bit_bounds_exact():
    # the bounds once went through a double: 2^62 + 3 rounded to 2^62, and 2^63 - 1 overflowed to a
    # zero range (a division by zero)
    assert set(ug.randint(2**62, 2**62 + 3, (300,)).tolist()) == {2**62, 2**62 + 1, 2**62 + 2}
    v = ug.randint(-2**63, 2**63 - 1, (2000,)).numpy()
    assert v.min() < -2**62 and v.max() > 2**62


def test_random_errors_as_torch():
    for args, pattern in [((5, 3), r"expects 'from' to be less than 'to', but got from=5 >= to=3"),
                          ((0, 300), r"to - 1 is out of bounds for"), ((-1, 3), r"from is out of bounds for")]:
        with pytest.raises(RuntimeError, match=r"\[random_\] " + pattern):
            ug.zeros(3, dtype=ug.uint8).random_(*args)
        with pytest.raises(RuntimeError):
            torch.zeros(3, dtype=torch.uint8).random_(*args)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
        ug.zeros(3, dtype=ug.bool).random_(0, 3)
    with pytest.raises(TypeError, match=r"\[random_\]"):
        ug.zeros(3).random_(1, 2, 3)


def test_new_empty_strided():
    t, u = torch.zeros(2, dtype=torch.float64), ug.zeros(2, dtype=ug.float64)
    want, got = t.new_empty_strided((2, 3), (1, 2)), u.new_empty_strided((2, 3), (1, 2))
    assert got.shape == want.shape and got.stride() == want.stride() and got.dtype == ug.float64
    got = u.new_empty_strided([4], [2], dtype=ug.int32, requires_grad=False)
    assert got.stride() == (2,) and got.dtype == ug.int32 and not got.requires_grad
    assert u.new_empty_strided((3,), (1,), requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=r"\[empty_strided\]"):
        u.new_empty_strided((2, 3), (1,))


def test_apply_and_map_match_torch():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    for dtype in ("float64", "int32"):
        t, u = torch.tensor(a * 4).to(getattr(torch, dtype)), ug.tensor(a * 4).to(getattr(ug, dtype))
        assert u.apply_(lambda v: v * 1.5 + 0.25) is u
        t.apply_(lambda v: v * 1.5 + 0.25)
        assert u.dtype == getattr(ug, dtype)
        np.testing.assert_array_equal(u.numpy(), t.numpy())
        assert u.map_(ug.tensor(b).to(u.dtype), lambda x, y: x - 2 * y) is u  # b broadcast over the rows
        t.map_(torch.tensor(b).to(t.dtype), lambda x, y: x - 2 * y)
        np.testing.assert_array_equal(u.numpy(), t.numpy())
    with pytest.raises(Exception, match="expand"):
        ug.zeros(3).map_(ug.ones(2), lambda x, y: x)
    with pytest.raises(TypeError, match=r"\[map_\] expected a tensor of self's dtype .*int32.*float32"):
        ug.zeros(3, dtype=ug.int32).map_(ug.ones(3), lambda x, y: x)
    with pytest.raises(TypeError, match="not callable"):
        ug.zeros(3).apply_(5)


def dim_order_cases(m):
    return [m.empty(2, 3, 5, 7), m.empty(2, 3, 5, 7).transpose(1, 2), m.empty(2, 5, 7, 3).permute(0, 3, 1, 2),
            m.empty(4, 3).t(), m.empty(1, 2, 3, 4), m.empty(3, 1, 4).permute(2, 0, 1), m.empty(5),
            m.empty(()), m.empty(3, 4)[:, ::2], m.empty(3, 1).expand(3, 4), m.empty(2, 3, 4).permute(1, 2, 0),
            m.empty(2, 2, 2)[:, 0:1].permute(2, 1, 0)]


def test_dim_order_matches_torch():
    for t, u in zip(dim_order_cases(torch), dim_order_cases(ug)):
        assert u.stride() == t.stride()
        assert u.dim_order() == t.dim_order(), t.stride()
        try:
            want = t.dim_order(ambiguity_check=True)
        except RuntimeError:
            with pytest.raises(RuntimeError, match=r"\[dim_order\].*unique dim order"):
                u.dim_order(ambiguity_check=True)
        else:
            assert u.dim_order(ambiguity_check=True) == want
    with pytest.raises(TypeError, match=r"\[dim_order\] ambiguity_check must be a bool"):
        ug.empty(2).dim_order(ambiguity_check="ILLEGAL")


def test_pin_memory_follows_torch_without_an_accelerator():
    x = ug.ones(3)
    assert x.is_pinned() is False and torch.ones(3).is_pinned() is False
    if torch.cuda.is_available() or ug.cuda.is_available():
        pytest.skip("an accelerator is present")
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        x.pin_memory()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        torch.ones(3).pin_memory()


def test_resize_as_matches_torch():
    t, u = torch.arange(6.0).reshape(2, 3), ug.arange(6.0).reshape(2, 3)
    t.resize_as_(torch.empty(3, 2))
    assert u.resize_as_(ug.empty(3, 2)) is u
    assert u.shape == t.shape and u.tolist() == t.tolist()
