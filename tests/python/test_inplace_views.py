"""torch's in-place views (t_, transpose_, squeeze_, unsqueeze_, as_strided_, resize_), the
top-level in-place functions (torch.relu_(x)) and the *_copy functions, against torch."""
import numpy as np
import pytest
import torch

import unigrad as ug


def _pair(shape, requires_grad=False):
    a = np.arange(float(np.prod(shape))).reshape(shape) * 0.5 - 1
    return (ug.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _same(u, t):
    assert tuple(u.shape) == tuple(t.shape)
    assert tuple(u.stride()) == tuple(t.stride())
    assert u.storage_offset() == t.storage_offset()
    np.testing.assert_allclose(u.detach().numpy(), t.detach().numpy())


VIEWS = [
    ("transpose_", (2, 3, 4), (0, 2)),
    ("transpose_", (2, 3), (-1, 0)),
    ("swapaxes_", (2, 3), (0, 1)),
    ("swapdims_", (2, 3, 4), (1, 2)),
    ("t_", (2, 3), ()),
    ("t_", (3,), ()),
    ("squeeze_", (1, 3, 1), ()),
    ("squeeze_", (1, 3, 1), (2,)),
    ("squeeze_", (1, 3, 1), ((0, 2),)),
    ("squeeze_", (2, 3), (0,)),
    ("unsqueeze_", (2, 3), (1,)),
    ("unsqueeze_", (2, 3), (-1,)),
]


@pytest.mark.parametrize("op,shape,args", VIEWS)
def test_view_changes_the_tensor_itself(op, shape, args):
    u, t = _pair(shape)
    v0 = u._version
    assert getattr(u, op)(*args) is u
    getattr(t, op)(*args)
    _same(u, t)
    assert u._version == v0 + 1


def test_as_strided_keeps_the_offset_by_default():
    u, t = _pair((6,))
    u, t = u[1:], t[1:]
    assert u.as_strided_((2, 2), (1, 2)) is u
    t.as_strided_((2, 2), (1, 2))
    _same(u, t)
    u, t = _pair((6,))
    u.as_strided_((2,), (2,), 1)
    t.as_strided_((2,), (2,), 1)
    _same(u, t)


def test_every_handle_sees_the_change():
    u = ug.arange(6.0).reshape(2, 3)
    other = u.add_(0)  # another Python object over the same tensor
    u.t_()
    assert tuple(other.shape) == (3, 2)


def test_view_of_a_view_keeps_its_base_and_storage():
    u, t = _pair((2, 3))
    ub, tb = u[0:1], t[0:1]
    ub.t_()
    tb.t_()
    _same(ub, tb)
    assert tuple(u.shape) == (2, 3)
    ub.mul_(2)
    tb.mul_(2)
    _same(u, t)


@pytest.mark.parametrize("op,shape,args", [v for v in VIEWS if v[0] != "t_" or len(v[1]) == 2])
def test_gradient_through_a_non_leaf(op, shape, args):
    u, t = _pair(shape, requires_grad=True)
    uy, ty = u * 2, t * 2
    getattr(uy, op)(*args)
    getattr(ty, op)(*args)
    w = np.arange(float(np.prod(ty.shape))).reshape(tuple(ty.shape))
    (uy * ug.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy())


def test_gradient_through_chained_views_and_a_view_of_an_intermediate():
    u, t = _pair((1, 3, 1), requires_grad=True)
    uy, ty = u * 1, t * 1
    uy.squeeze_().unsqueeze_(1)
    ty.squeeze_().unsqueeze_(1)
    assert tuple(uy.shape) == (3, 1)
    (uy * ug.arange(3.0).reshape(3, 1)).sum().backward()
    (ty * torch.arange(3.0).reshape(3, 1)).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy())

    u, t = _pair((2, 3), requires_grad=True)
    uv, tv = (u * 1)[0:2], (t * 1)[0:2]
    uv.t_()
    tv.t_()
    (uv * ug.arange(6.0).reshape(3, 2)).sum().backward()
    (tv * torch.arange(6.0).reshape(3, 2)).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("op,args", [("t_", ()), ("transpose_", (0, 1)), ("squeeze_", ()), ("unsqueeze_", (0,))])
def test_leaf_requiring_grad_refuses_under_grad_mode(op, args):
    u, t = _pair((2, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(t, op)(*args)
    with pytest.raises(RuntimeError, match=rf"\[{op}\] a leaf tensor that requires grad"):
        getattr(u, op)(*args)
    with ug.no_grad():
        getattr(u, op)(*args)
    with torch.no_grad():
        getattr(t, op)(*args)
    _same(u, t)
    assert u.requires_grad and u.is_leaf and u.grad_fn is None


def test_a_tensor_saved_for_backward_then_viewed_in_place_raises():
    u, t = _pair((2, 3), requires_grad=True)
    uy, ty = u * 1, t * 1
    uz, tz = uy * uy, ty * ty  # mul saves y
    uy.t_()
    ty.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        tz.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        uz.sum().backward()


def test_forward_mode_tangent_follows():
    def make(m):
        def f(x):
            y = x * 1
            y.t_()
            return y * m.arange(6.0).reshape(3, 2)
        return f

    x, v = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
    _, ut = ug.jvp(make(ug), (ug.tensor(x),), (ug.tensor(v),))
    _, tt = torch.func.jvp(make(torch), (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(ut.numpy(), tt.numpy())


def test_bad_dims_name_the_op():
    with pytest.raises(IndexError):
        torch.zeros(2, 3).transpose_(0, 5)
    with pytest.raises((IndexError, ValueError), match="transpose"):
        ug.zeros(2, 3).transpose_(0, 5)
    with pytest.raises(RuntimeError, match="t_"):
        torch.zeros(1, 2, 1).t_()
    with pytest.raises((RuntimeError, ValueError), match=r"\[t\]"):
        ug.zeros(1, 2, 1).t_()


# ---- resize_ -------------------------------------------------------------------------------


def test_resize_within_the_storage_keeps_it():
    u, t = ug.arange(6.0), torch.arange(6.0)
    ptr = u.data_ptr()
    assert u.resize_(2, 2) is u
    t.resize_(2, 2)
    _same(u, t)
    assert u.data_ptr() == ptr and u._version == 1


@pytest.mark.parametrize("make", [lambda m: m.arange(6.0)[::2], lambda m: m.arange(6.0).reshape(2, 3).t(),
                                  lambda m: m.arange(6.0)[2:]])
@pytest.mark.parametrize("size", [(2,), (3, 1), (2, 3), (3, 2)])
def test_resize_of_a_strided_tensor(make, size):
    u, t = make(ug), make(torch)
    if u.storage_offset() + int(np.prod(size)) > 6:
        return  # grows: the next test
    u.resize_(*size)
    t.resize_(*size)
    _same(u, t)


def test_resize_grows_keeping_the_old_elements():
    u, t = ug.arange(6.0)[2:], torch.arange(6.0)[2:]
    u.resize_(6)
    t.resize_(6)
    assert tuple(u.shape) == (6,) and u.storage_offset() == 2
    np.testing.assert_allclose(u[:4].numpy(), t[:4].numpy())


def test_resize_as():
    u, t = ug.arange(6.0), torch.arange(6.0)
    assert u.resize_as_(ug.zeros(3, 2)) is u
    t.resize_as_(torch.zeros(3, 2))
    _same(u, t)
    assert ug.resize_as_(u, ug.zeros(6)) is u


def test_resize_refuses_a_tensor_that_requires_grad():
    u, t = _pair((2, 3), requires_grad=True)
    for x in (t, t * 1):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            x.resize_(6)
    for x in (u, u * 1):
        with pytest.raises(RuntimeError, match=r"\[resize_\] cannot resize a tensor that requires grad"):
            x.resize_(6)
    with pytest.raises(ValueError, match=r"\[resize_\] sizes must be non-negative"):
        ug.zeros(2).resize_(-1)


# ---- jit and vmap --------------------------------------------------------------------------


def test_jit_of_in_place_views_on_intermediates():
    def f(x):
        y = x * 2
        y.t_()
        z = y + 1
        z.unsqueeze_(0)
        return z * ug.arange(2.0)

    x = ug.arange(6.0).reshape(2, 3)
    want = f(x)
    jf = ug.jit(f)
    for _ in range(2):
        np.testing.assert_allclose(jf(x).numpy(), want.numpy())
    np.testing.assert_allclose(jf(x + 1).numpy(), f(x + 1).numpy())


def test_jit_refuses_a_view_in_place_of_its_input():
    def f(x):
        x.t_()
        return x * 1

    with pytest.raises(RuntimeError, match=r"\[t_\] changes the layout of a tensor the traced function did not"):
        ug.jit(f)(ug.zeros(2, 3))


@pytest.mark.parametrize("op,args", [("unsqueeze_", (0,)), ("t_", ()), ("transpose_", (0, 1)),
                                     ("squeeze_", (1,))])
def test_vmap_of_in_place_views_on_intermediates(op, args):
    def make(m):
        def f(a):
            b = a * 2
            getattr(b, op)(*args)
            return b + 0
        return f

    a = np.arange(12.0).reshape(2, 2, 3) if op != "squeeze_" else np.arange(6.0).reshape(2, 3, 1)
    want = torch.func.vmap(make(torch))(torch.tensor(a))
    got = ug.vmap(make(ug))(ug.tensor(a))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_vmap_refuses_resize():
    def f(a):
        b = a * 2
        b.resize_(3)
        return b

    with pytest.raises(RuntimeError, match=r"\[resize_\] is not supported inside vmap"):
        ug.vmap(f)(ug.zeros(2, 3))


# ---- torch.relu_(x) and the other in-place functions -----------------------------------------


@pytest.mark.parametrize("name,args", [
    ("abs_", ()), ("exp_", ()), ("sin_", ()), ("relu_", ()), ("sigmoid_", ()), ("tanh_", ()), ("neg_", ()),
    ("clamp_", (-0.5, 0.5)), ("clip_", (-0.5, 0.5)), ("zero_", ()), ("fill_", (3.0,)), ("square_", ()),
    ("as_strided_", ((3, 2), (1, 3))), ("clamp_min_", (0.0,)), ("clamp_max_", (0.0,)),
])
def test_top_level_in_place_functions(name, args):
    u, t = _pair((2, 3))
    out = getattr(ug, name)(u, *args)
    getattr(torch, name)(t, *args)
    assert out.data_ptr() == u.data_ptr()
    _same(u, t)


def test_every_top_level_in_place_function_with_a_method_exists():
    names = [n for n in dir(torch) if n.endswith("_") and not n.startswith("_") and callable(getattr(torch, n))]
    missing = [n for n in names if hasattr(ug.Tensor, n) and not hasattr(ug, n)]
    assert missing == []


# ---- *_copy ----------------------------------------------------------------------------------

COPIES = [
    ("t_copy", (2, 3), ()),
    ("transpose_copy", (2, 3, 4), (0, 2)),
    ("view_copy", (2, 3), ((3, 2),)),
    ("permute_copy", (2, 3, 4), ((2, 0, 1),)),
    ("expand_copy", (1, 3), ((2, 3),)),
    ("squeeze_copy", (1, 3, 1), ()),
    ("squeeze_copy", (1, 3, 1), (0,)),
    ("unsqueeze_copy", (2, 3), (1,)),
    ("diagonal_copy", (3, 3), ()),
    ("diagonal_copy", (3, 4), (1,)),
    ("select_copy", (2, 3), (1, 2)),
    ("slice_copy", (10,), (0, 1, 8, 2)),
    ("slice_copy", (3, 4), (1, 1)),
    ("unfold_copy", (6,), (0, 2, 2)),
    ("detach_copy", (2, 3), ()),
    ("alias_copy", (2, 3), ()),
    ("as_strided_copy", (6,), ((2, 2), (1, 2), 1)),
    ("narrow_copy", (6,), (0, 1, 3)),
]


@pytest.mark.parametrize("name,shape,args", COPIES)
def test_copy_functions(name, shape, args):
    u, t = _pair(shape)
    got, want = getattr(ug, name)(u, *args), getattr(torch, name)(t, *args)
    _same(got, want)
    assert got.is_contiguous() and got.data_ptr() != u.data_ptr()


@pytest.mark.parametrize("name,args", [("split_copy", (2,)), ("split_with_sizes_copy", ([1, 3],)),
                                       ("split_with_sizes", ([1, 3],)), ("unbind_copy", ())])
def test_copy_functions_with_several_results(name, args):
    u, t = _pair((4, 2))
    got, want = getattr(ug, name)(u, *args), getattr(torch, name)(t, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("name,shape,args", [c for c in COPIES if c[0] not in ("detach_copy", "as_strided_copy")])
def test_copy_functions_are_differentiable(name, shape, args):
    u, t = _pair(shape, requires_grad=True)
    got, want = getattr(ug, name)(u, *args), getattr(torch, name)(t, *args)
    w = np.arange(float(np.prod(want.shape))).reshape(tuple(want.shape))
    (got * ug.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy())
    u.grad = None
    y = getattr(ug, name)(u * 1, *args)
    y.sum().backward()
    assert u.grad is not None


def test_top_level_in_place_functions_of_two_tensors():
    u, t = _pair((2, 3))
    ug.ldexp_(u, ug.tensor([1.0, 2.0, 3.0]))
    torch.ldexp_(t, torch.tensor([1.0, 2.0, 3.0]))
    _same(u, t)
    a, b = ug.tensor([4, 6, 9]), torch.tensor([4, 6, 9])
    ug.gcd_(a, ug.tensor([6, 4, 6]))
    torch.gcd_(b, torch.tensor([6, 4, 6]))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
