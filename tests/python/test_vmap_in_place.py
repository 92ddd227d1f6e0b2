"""In-place ops on batched values under vmap, against torch.func.vmap: each write goes into the
physical tensor (no call per example), eagerly, compiled around the vmap (jit(vmap)) and inside
it (vmap(jit)), under grad on either side and under jvp inside it."""
import numpy as np
import pytest
import torch
from torch.func import grad as tgrad
from torch.func import vmap as tvmap

import unigrad as ug

XS = np.random.default_rng(0).uniform(-1.2, 1.2, (4, 3, 5))
W = np.random.default_rng(1).uniform(0.5, 1.5, (5,))


def fallbacks():
    return ug._C._functional.vmap_fallbacks()


# m is the module (torch or unigrad), x one example [3, 5], w a shared [5]
CASES = {
    "add_": lambda m, x, w: (x * 2).add_(w),
    "sub_ with a batched value": lambda m, x, w: (x * w).sub_(x.tanh()),
    "mul_ and div_": lambda m, x, w: (x + 1).mul_(x).div_(w),
    "a chain of unary writes": lambda m, x, w: (x * w).neg_().add_(w).sin_().exp_(),
    "clamp_": lambda m, x, w: (x * 2).clamp_(-0.5, 0.7),
    "copy_ into a view": lambda m, x, w: (lambda y: (y[1:].copy_(x[:2] * w), y)[1])(x * 2),
    "a write into a column": lambda m, x, w: (lambda y: (y[:, 0].mul_(3), y)[1])(x * w),
    "setitem with a batched value": lambda m, x, w: (lambda y: (y.__setitem__(1, x[0] * 5), y)[1])(x * 2),
    "setitem with a number": lambda m, x, w: (lambda y: (y.__setitem__((0, 2), 7.0), y)[1])(x * 2),
    "index_put_ with a tensor index": lambda m, x, w: (
        lambda y: (y.index_put_((m.tensor([0, 2]),), x[:2] * w), y)[1])(x * 2),
    "setitem with a batched mask": lambda m, x, w: (lambda y: (y.__setitem__(y > 0.5, 0.25), y)[1])(x * 2),
    "masked_fill_ with a batched mask": lambda m, x, w: (x * w).masked_fill_(x > 0.3, -1.0),
    "fill_ and zero_ of views": lambda m, x, w: (lambda y: (y[0].fill_(2.0), y[2].zero_(), y)[2])(x * w),
    "a write read by an op made before it": lambda m, x, w: (lambda y: (lambda z: (y.mul_(w), z + y)[1])(y * 3))(
        x.sin()),
}


def torch_batch(fn, xs):
    """fn on each example, stacked: torch.func.vmap's answer, also where it refuses to batch (a
    boolean mask's setitem)."""
    return torch.stack([fn(torch, x, torch.tensor(W)) for x in xs])


def torch_values(fn):
    return torch_batch(fn, torch.tensor(XS)).numpy()


def torch_grads(fn):
    return torch.func.grad(lambda xs: (torch_batch(fn, xs) ** 2).sum())(torch.tensor(XS)).numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_write_into_a_batched_value_matches_torch_without_a_call_per_example(name):
    fn = CASES[name]
    want = torch_values(fn)
    f = lambda x: fn(ug, x, ug.tensor(W))  # noqa: E731
    before = fallbacks()
    for how, run in [("vmap", ug.vmap(f)), ("jit(vmap)", ug.jit(ug.vmap(f)))]:
        got = run(ug.tensor(XS)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=how)
    assert fallbacks() == before, "an in-place op fell back to one call per example"
    # inside a compiled function traced on batched values the calls per example trace plain ones
    np.testing.assert_allclose(ug.vmap(ug.jit(f))(ug.tensor(XS)).numpy(), want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_gradient_through_a_batched_write_matches_torch(name):
    fn = CASES[name]
    f = lambda x: fn(ug, x, ug.tensor(W))  # noqa: E731
    before = fallbacks()
    got = ug.grad(lambda xs: (ug.vmap(f)(xs) ** 2).sum())(ug.tensor(XS)).numpy()
    assert fallbacks() == before
    np.testing.assert_allclose(got, torch_grads(fn), rtol=1e-12, atol=1e-12)


def test_a_gradient_torch_refuses_matches_central_differences():
    # exp_ saves its output, which neg_ then writes: torch refuses to differentiate. unigrad's
    # batched write saves exp's result apart from the tensor written, so the gradient stands.
    def loss(xs):
        return (ug.vmap(lambda x: (x * ug.tensor(W)).tanh_().exp_().neg_())(xs) ** 2).sum()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.func.grad(lambda xs: (tvmap(lambda x: (x * torch.tensor(W)).tanh_().exp_().neg_())(xs) ** 2).sum())(
            torch.tensor(XS))
    got = ug.grad(loss)(ug.tensor(XS)).numpy()
    eps, flat = 1e-6, XS.reshape(-1)
    central = np.empty_like(flat)
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        central[i] = (loss(ug.tensor(up.reshape(XS.shape))).item() - loss(ug.tensor(down.reshape(XS.shape))).item()) / (
            2 * eps)
    # float64 central differences: truncation about eps^2 times the third derivative (order 10
    # here), rounding about |loss| 1e-16 / eps
    np.testing.assert_allclose(got.reshape(-1), central, rtol=1e-6, atol=1e-6)


# The cases whose writes go into memory no other tensor shares (no view of it, no base)
WRITES_OF_MEMORY_NOTHING_ELSE_SHARES = [
    "add_", "sub_ with a batched value", "mul_ and div_", "a chain of unary writes", "clamp_",
    "masked_fill_ with a batched mask", "setitem with a batched value", "index_put_ with a tensor index",
    "a write read by an op made before it"]
WRITES_INTO_VIEWS = ["copy_ into a view", "a write into a column", "fill_ and zero_ of views"]


def per_example_grads(m, fn):
    """vmap(grad) of the squared sum of fn, in torch or unigrad."""
    if m is torch:
        return tvmap(tgrad(lambda x: (fn(torch, x, torch.tensor(W)) ** 2).sum()))(torch.tensor(XS)).numpy()
    return ug.vmap(ug.grad(lambda x: (fn(ug, x, ug.tensor(W)) ** 2).sum()))(ug.tensor(XS)).numpy()


def test_per_example_gradients_of_a_model_with_in_place_activations_match_torch():
    rng = np.random.default_rng(2)
    w1, w2 = rng.normal(size=(5, 8)) * 0.5, rng.normal(size=(8, 2)) * 0.5

    def loss(m, w1, w2, x):
        h = (x @ w1)
        h.relu_()  # nn.ReLU(inplace=True)
        h = h @ w2
        return (h.sigmoid_() ** 2).sum()

    tw = [torch.tensor(w) for w in (w1, w2)]
    want = tvmap(tgrad(lambda w1, w2, x: loss(torch, w1, w2, x), argnums=(0, 1)), in_dims=(None, None, 0))(
        *tw, torch.tensor(XS[:, 0]))
    before = fallbacks()
    got = ug.vmap(ug.grad(lambda w1, w2, x: loss(ug, w1, w2, x), argnums=(0, 1)), in_axes=(None, None, 0))(
        ug.tensor(w1), ug.tensor(w2), ug.tensor(XS[:, 0]))
    assert fallbacks() == before
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_a_mapped_argument_written_in_place_is_written_in_the_callers_tensor():
    tx, ux = torch.tensor(XS), ug.tensor(XS)
    tvmap(lambda x: x.mul_(2).add_(1), in_dims=1)(tx)
    out = ug.vmap(lambda x: x.mul_(2).add_(1), in_axes=1)(ux)
    np.testing.assert_array_equal(ux.numpy(), tx.numpy())
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(tx.numpy(), 1, 0))
    # compiled, each call writes the tensor it is given
    f = ug.jit(ug.vmap(lambda x: x.mul_(2).add_(1), in_axes=1))
    for _ in range(2):
        ux = ug.tensor(XS)
        out = f(ux)
        np.testing.assert_array_equal(ux.numpy(), tx.numpy())
        np.testing.assert_array_equal(out.numpy(), np.moveaxis(tx.numpy(), 1, 0))


@pytest.mark.parametrize("write", [
    lambda buf, x: buf.add_(x),
    lambda buf, x: buf.copy_(x),
    lambda buf, x: buf.__setitem__(0, x[0]),
    lambda buf, x: buf.masked_fill_(x > 0, 1.0),
])
def test_a_batched_value_written_into_a_shared_tensor_is_refused_as_torch_does(write):
    with pytest.raises(RuntimeError):
        tvmap(lambda x: (write(torch.zeros(3, 5, dtype=torch.float64), x), x)[1])(torch.tensor(XS))
    buf = ug.zeros(3, 5, dtype=ug.float64)
    with pytest.raises(RuntimeError, match=r"inside vmap: the tensor written into \(shape \[3, 5\]\) is the same for "
                                           r"every example"):
        ug.vmap(lambda x: (write(buf, x), x)[1])(ug.tensor(XS))
    assert not buf.numpy().any()  # refused before anything was written


def test_a_shared_tensor_written_with_a_shared_value_is_written_once():
    tb, ub = torch.zeros(5, dtype=torch.float64), ug.zeros(5, dtype=ug.float64)
    tvmap(lambda x: (tb.add_(torch.tensor(W)), x * tb)[1])(torch.tensor(XS))
    ug.vmap(lambda x: (ub.add_(ug.tensor(W)), x * ub)[1])(ug.tensor(XS))
    np.testing.assert_array_equal(ub.numpy(), tb.numpy())


def test_torch_funcs_per_sample_gradient_recipe_runs_batched():
    # torch.func's tutorial: functional_call of a model with an in-place ReLU, cross_entropy of
    # one example against its class (whose bounds check reads every example at once)
    from torch.func import functional_call as tcall
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(16, 10)), rng.integers(0, 3, 16)

    def model(m):
        return m.nn.Sequential(m.nn.Linear(10, 32), m.nn.ReLU(inplace=True), m.nn.Linear(32, 3)).double()

    um, tm = model(ug), model(torch)
    params = {k: v.detach() for k, v in um.named_parameters()}
    tparams = {k: torch.tensor(v.numpy()) for k, v in params.items()}

    def loss(m, call, net):
        return lambda p, x, y: m.nn.functional.cross_entropy(call(net, p, (x[None],)), y[None])

    want = tvmap(tgrad(loss(torch, tcall, tm)), in_dims=(None, 0, 0))(tparams, torch.tensor(x), torch.tensor(y))
    before = fallbacks()
    got = ug.vmap(ug.grad(loss(ug, ug.func.functional_call, um)), in_axes=(None, 0, 0))(
        params, ug.tensor(x), ug.tensor(y))
    assert fallbacks() == before
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(IndexError, match=r"\[(cross_entropy|nll_loss)\] Target 7 is out of bounds"):
        ug.vmap(lambda x, y: ug.nn.functional.cross_entropy(x[None, :3], y[None]))(
            ug.tensor(x), ug.tensor(np.where(np.arange(16) == 5, 7, y)))


def test_a_call_per_example_warns_naming_why():
    # as torch.func.vmap warns of its fallback: the results are the same, the time is not
    f = ug.jit(lambda x: CASES["a write into a column"](ug, x, ug.tensor(W)))
    with pytest.warns(UserWarning, match=r"\[vmap\] in-place op 'mul' on a batched value inside a compiled function "
                                         r"traced on batched arguments: .*ran once per example"):
        ug.vmap(f)(ug.tensor(XS))
    with pytest.warns(UserWarning, match=r"values were read outside an op \(item\(\), int\(\), a branch on a value\)"):
        ug.vmap(lambda x: x * x.max().item())(ug.tensor(XS))


TANGENTS = np.random.default_rng(3).uniform(-1, 1, XS.shape)


def per_example_tangents(m, fn):
    """vmap(jvp) of fn along TANGENTS, in torch or unigrad."""
    if m is torch:
        w = torch.tensor(W)
        return tvmap(lambda x, t: torch.func.jvp(lambda y: fn(torch, y, w), (x,), (t,))[1])(
            torch.tensor(XS), torch.tensor(TANGENTS)).numpy()
    w = ug.tensor(W)
    return ug.vmap(lambda x, t: ug.jvp(lambda y: fn(ug, y, w), (x,), (t,))[1])(
        ug.tensor(XS), ug.tensor(TANGENTS)).numpy()


@pytest.mark.parametrize("per_example,name", [
    *((per_example_grads, name) for name in WRITES_OF_MEMORY_NOTHING_ELSE_SHARES + WRITES_INTO_VIEWS),
    *((per_example_tangents, name) for name in WRITES_OF_MEMORY_NOTHING_ELSE_SHARES)])
def test_per_example_derivatives_through_a_write_are_batched(name, per_example):
    # grad or jvp inside vmap (per-example gradients of a model with in-place activations): the
    # write is recorded at the example's level, batched. Under grad a batched view notes its
    # base there, as a view does, so a write into it rewrites the base's history (torch's
    # CopySlices) and the base's other views take theirs anew. Under jvp the written tensor takes
    # the tangent of the value written, where no other tensor shares its memory.
    before = fallbacks()
    got = per_example(ug, CASES[name])
    assert fallbacks() == before
    np.testing.assert_allclose(got, per_example(torch, CASES[name]), rtol=1e-12, atol=1e-12)
