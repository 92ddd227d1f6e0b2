"""Reverse-mode gradients against PyTorch (every differentiable op, with broadcasting and
non-contiguous inputs), the articles' example in every style unigrad has so far, higher
order derivatives, hooks, retain_grad, no_grad and the errors PyTorch raises."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, assert_same, check_grad


UNARY = ["neg", "abs", "exp", "exp2", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "relu", "square",
         "reciprocal", "sign", "floor"]
POSITIVE = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt"]


@pytest.mark.parametrize("name", UNARY + POSITIVE)
def test_unary_grads(name):
    low = 0.2 if name in POSITIVE else -2
    check_grad(lambda m, x: getattr(m, name)(x), arr((3, 4), low=low, high=2))
    check_grad(lambda m, x: getattr(x, name)(), arr((3, 4), "float64", low=low, high=2, view=lambda t: t.t()))


@pytest.mark.parametrize("name,approximate", [("silu", None), ("gelu", "none"), ("gelu", "tanh")])
def test_activation_grads(name, approximate):
    def fn(m, x):
        if name == "silu":
            return torch.nn.functional.silu(x) if m is torch else ug.silu(x)
        return (torch.nn.functional if m is torch else ug).gelu(x, approximate=approximate)
    check_grad(fn, arr((5, 6), "float64"))


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "pow"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,))])
def test_binary_grads(name, shapes):
    check_grad(lambda m, a, b: getattr(m, name)(a, b), arr(shapes[0], "float64", low=0.5, seed=1),
               arr(shapes[1], "float64", low=0.5, seed=2))


def test_scalar_and_mixed_dtype_grads():
    check_grad(lambda m, a: 2 * a + a / 3 - 1 + a ** 3, arr((4,)))
    check_grad(lambda m, a, b: a * b, arr((3,), "float32"), arr((3,), "float64"))
    check_grad(lambda m, a: m.where(a > 0, a, a * 2), arr((3, 4)))
    check_grad(lambda m, a: a.clamp(-1, 1), arr((3, 4)))
    check_grad(lambda m, a, b: m.maximum(a, b), Arg(np.array([1.0, 2.0, 3.0])), Arg(np.array([1.0, 3.0, 2.0])))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.reshape(4, 6), lambda m, x: x.transpose(0, 2), lambda m, x: x.permute(1, 2, 0),
    lambda m, x: x[:, 1], lambda m, x: x[..., ::2], lambda m, x: x[1:, None, :2], lambda m, x: x.unsqueeze(1),
    lambda m, x: x[:, :1].squeeze(1), lambda m, x: x.flatten(), lambda m, x: x[:, :1].expand(2, 3, 4),
    lambda m, x: x.narrow(2, 1, 2), lambda m, x: x.diagonal(0, 1, 2), lambda m, x: x.unbind(1),
    lambda m, x: x.split(2, 2), lambda m, x: x.chunk(2, 0), lambda m, x: x.t() if x.ndim == 2 else x.mT,
    lambda m, x: x.contiguous(), lambda m, x: x.clone(), lambda m, x: x.to(m.float64),
])
def test_view_grads(fn):
    check_grad(fn, arr((2, 3, 4)))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(), lambda m, x: x.sum(1), lambda m, x: x.sum((0, 2), keepdim=True), lambda m, x: x.mean(),
    lambda m, x: x.mean(-1), lambda m, x: x.prod(1), lambda m, x: x.prod(), lambda m, x: x.amax(1),
    lambda m, x: x.max(), lambda m, x: x.max(dim=1).values, lambda m, x: x.min(dim=2, keepdim=True).values,
    lambda m, x: x.var(1), lambda m, x: x.std(), lambda m, x: x.norm(), lambda m, x: x.norm(1, dim=1),
    lambda m, x: x.logsumexp(1), lambda m, x: x.softmax(-1), lambda m, x: x.log_softmax(1),
    lambda m, x: x.cumsum(1), lambda m, x: x.cumprod(2),
])
def test_reduction_grads(fn):
    check_grad(fn, arr((2, 3, 4), "float64", low=0.5, high=2))


def test_prod_with_zeros():
    check_grad(lambda m, x: x.prod(1), Arg(np.array([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0], [2.0, 3.0, 4.0]])))


def test_extreme_ties_split_like_torch():
    ties = {"fd": "at a tie the slope is one-sided: torch's choice of subgradient is what is checked"}
    check_grad(lambda m, x: x.amax(), Arg(np.array([1.0, 3.0, 3.0, 2.0])), off=ties)
    check_grad(lambda m, x: x.max(dim=0).values, Arg(np.array([[1.0, 3.0], [1.0, 2.0]])), off=ties)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((4,), (2, 4, 3))])
def test_matmul_grads(shapes):
    check_grad(lambda m, a, b: a @ b, arr(shapes[0], "float64", seed=1), arr(shapes[1], "float64", seed=2))


def test_linalg_and_einsum_grads():
    check_grad(lambda m, a, b: a.t() @ b, arr((5, 3)), arr((5, 2)))
    check_grad(lambda m, a, b: m.einsum("bij,bjk->bik", a, b), arr((2, 3, 4), "float64"), arr((2, 4, 5), "float64"))
    check_grad(lambda m, a, b: m.outer(a, b), arr((3,)), arr((4,)))


def test_indexing_and_join_grads():
    idx = np.array([2, 0, 2])
    check_grad(lambda m, x: x[m.tensor(idx)], arr((3, 4)))
    check_grad(lambda m, x: x[:, m.tensor(idx)], arr((3, 4)))
    check_grad(lambda m, x: x[x > 0], arr((3, 4)))
    check_grad(lambda m, x: x.index_select(1, m.tensor(idx)), arr((3, 4)))
    check_grad(lambda m, x: x.gather(1, m.tensor([[0, 0], [1, 3], [2, 2]])), arr((3, 4)))
    check_grad(lambda m, x, s: x.scatter_add(1, m.tensor([[0, 0], [1, 3], [2, 2]]), s), arr((3, 4)), arr((3, 2), seed=3))
    check_grad(lambda m, x, s: x.scatter(1, m.tensor([[0, 1], [1, 3], [2, 0]]), s), arr((3, 4)), arr((3, 2), seed=3))
    check_grad(lambda m, a, b: m.cat([a, b], 1), arr((3, 2)), arr((3, 4), seed=1))
    check_grad(lambda m, a, b: m.stack([a, b]), arr((3, 2)), arr((3, 2), seed=1))
    check_grad(lambda m, x: x.flip(0), arr((3, 4)))
    check_grad(lambda m, x: x.roll(1, 1), arr((3, 4)))
    check_grad(lambda m, x: x.repeat(2, 1), arr((3, 4)))
    check_grad(lambda m, x: x.masked_fill(x > 0, 0.0), arr((3, 4)))
    check_grad(lambda m, x: (torch.nn.functional.pad if m is torch else ug.pad)(x, (1, 2)), arr((3, 4)))
    check_grad(lambda m, x: (torch.nn.functional.pad if m is torch else ug.pad)(x, (1, 1, 1, 1), mode="reflect"),
               arr((1, 3, 4)))


def test_articles_example_imperative_and_paddle_spelling():
    # y = x^2 + 2x + 1 at x = 3: dy/dx = 8, d2y/dx2 = 2.
    x = ug.tensor(3.0, requires_grad=True)
    y = x ** 2 + 2 * x + 1
    y.backward()
    assert x.grad.item() == 8.0
    p = ug.to_tensor(3.0, stop_gradient=False)
    (p ** 2 + 2 * p + 1).backward()
    assert p.grad.item() == 8.0
    x = ug.tensor(3.0, requires_grad=True)
    (dy,) = ug.autograd.grad(x ** 2 + 2 * x + 1, x, create_graph=True)
    (d2y,) = ug.autograd.grad(dy, x, create_graph=True)
    (d3y,) = ug.autograd.grad(d2y, x, allow_unused=True)
    assert (dy.item(), d2y.item()) == (8.0, 2.0)
    assert d3y is None or d3y.item() == 0.0


@pytest.mark.parametrize("f", [
    lambda m, x: (x ** 3 - 2 * x ** 2 + x).sum(), lambda m, x: x.tanh().sum(), lambda m, x: x.sigmoid().sum(),
    lambda m, x: (x.softmax(0) * m.arange(4, dtype=m.float64)).sum(), lambda m, x: x.logsumexp(0),
    lambda m, x: (x.reshape(2, 2) @ x.reshape(2, 2)).sum(),
])
def test_second_and_third_derivatives(f):
    results = []
    for m in (torch, ug):
        x = m.tensor([0.3, -0.7, 1.1, 0.5], dtype=m.float64, requires_grad=True)
        (g1,) = m.autograd.grad(f(m, x), x, create_graph=True)
        (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
        g3 = m.autograd.grad(g2.sum(), x, allow_unused=True)[0] if g2.requires_grad else None
        results.append((g1, g2, g3 if g3 is not None else m.zeros_like(x)))
    for e, a in zip(*results):
        assert_same(e.detach(), a.detach(), rtol=1e-9, atol=1e-10)


def test_backward_create_graph_matches_autograd_grad():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.tolist() == [3.0, 12.0] and g.requires_grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_grad_accumulates_and_leaf_flags():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.requires_grad and y.grad_fn is not None
    assert not y.detach().requires_grad and y.detach().is_leaf
    with pytest.raises(RuntimeError):
        ug.tensor([1, 2]).requires_grad_()


def test_backward_inputs_accumulates_only_into_them_like_torch():
    results = []
    for m in (torch, ug):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        w = m.tensor([3.0, 4.0], requires_grad=True)
        h = x * w
        (h * x).sum().backward(inputs=[x, h])
        (x * w).sum().backward(inputs=x)
        m.autograd.backward([(x * w).sum()], inputs=[w])
        results.append((x.grad.tolist(), h.grad.tolist(), w.grad.tolist()))
    assert results[0] == results[1] == ([9.0, 20.0], [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="inputs"):
        (ug.tensor([1.0], requires_grad=True) * 2).sum().backward(inputs=[])


def test_retain_grad_and_hooks():
    x = ug.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0, 12.0]
    assert seen == [[4.0, 8.0, 12.0]]
    assert x.grad.tolist() == [80.0, 160.0, 240.0]


def test_graph_freed_and_second_backward_raises():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert np.allclose(x.grad.numpy(), 4 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_graph_memory_is_released():
    x = ug.randn(256, 256, requires_grad=True)
    base = ug.memory.allocated()
    y = (x.exp() * x.sin()).tanh().sum()
    held = ug.memory.allocated()
    assert held > base + 3 * 256 * 256 * 4
    y.backward()
    del y
    assert ug.memory.allocated() <= base + 256 * 256 * 4 + 1024  # only x.grad is left


def test_a_linear_layer_frees_its_input_before_its_input_gradient_eagerly():
    # Without retain_graph a node lets go of its saved tensors as its rule unpacks them, and
    # linear's rule drops its input once the weight's gradient is made: the input (a wide
    # activation, here 16x the output's width) is freed before the input's gradient exists.
    n, narrow, wide, out = 256, 8, 1024, 64
    h, a = ug.randn(n, narrow, requires_grad=True), ug.randn(narrow, wide)
    x = h @ a  # a non-leaf that only the linear node holds after this line (matmul saves h, a)
    w = ug.randn(out, wide, requires_grad=True)
    y = ug.nn.functional.linear(x, w)
    del x
    loss = y.sum()
    ug.memory.reset_peak()
    before = ug.memory.allocated()  # x (act) included
    loss.backward()
    act, dw = n * wide * 4, out * wide * 4
    # The weight's gradient is made beside x; then x goes and x's gradient (act) is made: the
    # peak is one activation and the weight's gradient past what was live, not two.
    assert ug.memory.max_allocated() - before < dw + act // 4
    want = np.ones((n, out), np.float32) @ w.detach().numpy() @ a.numpy().T
    np.testing.assert_allclose(h.grad.numpy(), want, rtol=1e-4, atol=1e-3)
    # Retained, the node keeps its saved tensors and a second backward gives the same.
    h.grad = None
    y = ug.nn.functional.linear(h @ a, w)
    y.sum().backward(retain_graph=True)
    first = h.grad.clone()
    h.grad = None
    y.sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), first.numpy())


def test_inplace_modification_detected():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y * 2
    y.add_(1)  # exp's backward needs y as it was
    with pytest.raises(RuntimeError, match="in-place"):
        (y * z).sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1)
    with ug.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 3.0]


def test_inplace_on_non_leaf_rebases_history():
    check_grad(lambda m, x: (lambda y: (y.mul_(3), y.exp_())[-1])(x * 2), arr((3,)))


def test_no_grad_and_enable_grad():
    x = ug.tensor([1.0], requires_grad=True)
    with ug.no_grad():
        y = x * 2
        with ug.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad

    @ug.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    ug.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ug.set_grad_enabled(True)
    assert ug.is_grad_enabled()


def test_autograd_grad_errors_and_unused():
    x = ug.tensor([1.0], requires_grad=True)
    w = ug.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="not used"):
        ug.autograd.grad(y, [x, w], retain_graph=True)
    gx, gw = ug.autograd.grad(y, [x, w], allow_unused=True)
    assert gx.tolist() == [2.0] and gw is None
    assert x.grad is None  # autograd.grad never touches .grad
    with pytest.raises(RuntimeError, match="scalar"):
        (x * ug.ones(3)).backward()
    with pytest.raises(RuntimeError):
        ug.tensor([1.0]).sum().backward()


def test_anomaly_mode_names_the_op():
    x = ug.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt().sum()  # d sqrt / dx at 0 is inf
    with ug.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="sqrt"):
            y.backward()


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * y).exp().sum(1), lambda x, y: (x @ y.t()).tanh(), lambda x, y: x.softmax(1) * y,
    lambda x, y: m_cat(x, y).logsumexp(0), lambda x, y: (x / (y.abs() + 1)).sigmoid().prod(0),
    lambda x, y: x.gather(1, ug.tensor([[0, 2], [1, 1]])) * y[:, :2], lambda x, y: x[:, ::2].norm() + y.std(),
    # The activations' fused derivative ops and their own derivatives:
    lambda x, y: (x * y).gelu() + x.silu() * y.tanh() + (x + y).relu() * y.sigmoid(),
])
def test_gradcheck_and_gradgradcheck(fn):
    rng = np.random.default_rng(0)
    x = ug.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    y = ug.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    assert ug.autograd.gradcheck(fn, (x, y))
    assert ug.autograd.gradgradcheck(fn, (x, y))


def m_cat(x, y):
    return ug.cat([x, y], 0)


def test_gradcheck_catches_a_wrong_rule():
    x = ug.tensor([0.5, 1.5], dtype=ug.float64, requires_grad=True)

    def wrong(v):  # a rule that misses a factor: the hook halves the gradient
        y = v * 3
        y.register_hook(lambda g: g * 0.5)
        return y
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        ug.autograd.gradcheck(wrong, (x,))
    assert ug.autograd.gradcheck(wrong, (x,), raise_exception=False) is False
    with pytest.raises(TypeError, match="float64"):
        ug.autograd.gradcheck(lambda v: v * 2, (ug.tensor([1.0], requires_grad=True),))


def test_anomaly_mode_names_the_forward_line():
    x = ug.tensor([0.0, 1.0], requires_grad=True)
    with ug.autograd.detect_anomaly():
        y = x.sqrt().sum()  # THIS LINE
        with pytest.raises(RuntimeError) as info:
            y.backward()
    assert "sqrt" in str(info.value) and "THIS LINE" in str(info.value)


def test_check_numerics():
    ok = ug.tensor([1.0, 2.0])
    assert ug.debugging.check_numerics(ok, "fine") is not None
    with pytest.raises(RuntimeError, match="my message.*NaN"):
        ug.debugging.check_numerics(ug.tensor([1.0, float("nan")]), "my message")
    ug.debugging.enable_check_numerics()
    try:
        with pytest.raises(RuntimeError, match="log"):
            ug.tensor([-1.0]).log()
    finally:
        ug.debugging.disable_check_numerics()
    assert ug.tensor([-1.0]).log().isnan().all()


def test_post_accumulate_grad_hooks_see_the_summed_grad_as_torch():
    seen = {}
    for lib in (ug, torch):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        calls = seen[lib] = []
        x.register_post_accumulate_grad_hook(lambda p, calls=calls: calls.append(p.grad.tolist()))
        x.register_post_accumulate_grad_hook(lambda p: calls.append("removed")).remove()
        (x * x).sum().backward()
        (x * 3).sum().backward()
        (x * x).sum().backward(inputs=[x])
        lib.autograd.grad((x * x).sum(), x)  # .grad untouched: no call
    assert seen[ug] == seen[torch] == [[2.0, 4.0], [5.0, 7.0], [7.0, 11.0]]
    with pytest.raises(RuntimeError, match="leaf"):
        (ug.tensor([1.0], requires_grad=True) * 2).register_post_accumulate_grad_hook(lambda p: None)


def test_leaf_hooks_run_under_autograd_grad_and_handles_remove():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    (g,) = ug.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [20.0, 40.0]
    h.remove()
    (g,) = ug.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [2.0, 4.0]


def test_sort_and_topk_grads():
    check_grad(lambda m, x: x.sort(dim=1).values, arr((3, 5)))
    check_grad(lambda m, x: x.sort(dim=0, descending=True).values, arr((4, 3)))
    check_grad(lambda m, x: x.topk(2, dim=1).values, arr((3, 5)))


def test_split_chunk_unbind_record_one_node_and_match_torch():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(4, 6))

    def f(m, x):
        a, _, c = x.chunk(3, 1)  # the middle part unused: its gradient is zero
        p, q = x.split([1, 3], 0)
        rows = x.unbind(0)
        return (a * 2 + c.sin()).sum() + (q ** 2).sum() + rows[1].exp().sum() + p.sum() * 0

    x, t = ug.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    f(ug, x).backward()
    f(torch, t).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert x.chunk(3, 1)[0].grad_fn.name() == "split"
    assert ug.autograd.gradgradcheck(lambda x: f(ug, x), (ug.tensor(data, requires_grad=True),))
