"""In-place ops on values that record gradients: eager gradients against torch 2.13's, and the
same gradients from compiled programs (jit(grad), grad(jit), jit(vmap(grad))); forward mode
through the same writes (jvp, jacfwd, hessian, dual tensors) against torch.func.

An in-place op on such a value runs out of place and rebases the value's history; its saved
tensors must not be the value it then writes, and a capture must see the write as the op's.
"""
import random

import numpy as np
import pytest
import torch

import unigrad as ug

# name -> the in-place call on y (a value made from x), for torch and unigrad alike
IN_PLACE = {
    # their derivative reads the op's output, which the rebase computed apart from y
    "exp_": lambda m, y, x: y.exp_(),
    "relu_": lambda m, y, x: y.relu_(),
    "sigmoid_": lambda m, y, x: y.sigmoid_(),
    "tanh_": lambda m, y, x: y.tanh_(),
    "sqrt_": lambda m, y, x: y.sqrt_(),
    # bound as out-of-place op + copy_: the op must not save y itself
    "erfc_": lambda m, y, x: y.erfc_(),
    "copysign_": lambda m, y, x: y.copysign_(x - 0.5),
    "float_power_": lambda m, y, x: y.float_power_(x + 1),
    "clamp_min_": lambda m, y, x: y.clamp_min_(0.4),
    "clamp_max_": lambda m, y, x: y.clamp_max_(0.4),
    "renorm_": lambda m, y, x: y.renorm_(2, 0, 0.5),
    "polygamma_": lambda m, y, x: y.polygamma_(1),
    "digamma_": lambda m, y, x: y.digamma_(),
    "lerp_": lambda m, y, x: y.lerp_(x * 0.5, 0.3),
    "hypot_": lambda m, y, x: y.hypot_(x),
    "fmod_": lambda m, y, x: y.fmod_(x * 0.3 + 0.1),
    "nan_to_num_": lambda m, y, x: y.nan_to_num_(0.0),
    "addcmul_": lambda m, y, x: y.addcmul_(x, y.detach() + 1),
    # rebased through other ops (where, a scatter)
    "masked_fill_": lambda m, y, x: y.masked_fill_(x > 0.5, 0.5),
    "index_put_": lambda m, y, x: y.index_put_((m.tensor([2, 0]),), x[1] * 3),
    "fill_diagonal_": lambda m, y, x: y.fill_diagonal_(0.1),
    "mul_": lambda m, y, x: y.mul_(x),
}


def loss(m, op, x):
    y = x * 0.9 + 0.05
    IN_PLACE[op](m, y, x)
    return (y * x).sum() + y.sum()


def x_values():
    return np.random.default_rng(0).uniform(0.1, 0.9, (3, 3))


@pytest.mark.parametrize("op", IN_PLACE)
def test_the_eager_gradient_is_torchs(op):
    xt = torch.tensor(x_values(), requires_grad=True)
    loss(torch, op, xt).backward()
    got = ug.grad(lambda x: loss(ug, op, x))(ug.tensor(x_values()))
    # A few float64 operations per element: a few ulps, far under 1e-12 of the values near 1.
    # torch's trigamma (digamma's and polygamma(1)'s derivative) is good to about 5e-10 against
    # mpmath on these values, where unigrad's is good to 1e-15.
    rtol = 2e-9 if op in ("digamma_", "polygamma_") else 1e-12
    np.testing.assert_allclose(got.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("transform", ["jit(grad)", "grad(jit)", "jit(vmap(grad))"])
@pytest.mark.parametrize("op", IN_PLACE)
def test_a_program_gives_the_eager_gradient(op, transform):
    def f(x):
        return loss(ug, op, x)

    x = ug.tensor(x_values())
    want = ug.grad(f)(x)
    if transform == "jit(grad)":
        got = ug.jit(ug.grad(f))(x)
    elif transform == "grad(jit)":
        got = ug.grad(ug.jit(f))(x)
    else:
        got = ug.jit(ug.vmap(ug.grad(f)))(ug.stack([x, x * 0.5]))
        want = ug.stack([want, ug.grad(f)(x * 0.5)])
    # the same float64 ops in the same order, but a fused pass may contract a product and a sum
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-13)


# Writes into a view of a value that records gradients (torch's CopySlices): the base's
# history takes the write, and a view taken earlier reads the new elements with their history.
INTO_VIEWS = {
    "column += 1": lambda m, y, x: y[:, 0].add_(1),
    "row *= x": lambda m, y, x: y[0].mul_(x[1]),
    "diagonal": lambda m, y, x: y.diagonal().add_(x[0]),
    "columns exp_": lambda m, y, x: y[:, 1:].exp_(),
    "transposed row zero_": lambda m, y, x: y.t()[0].zero_(),
    "flat slice neg_": lambda m, y, x: y.view(-1)[2:4].neg_(),
    "view of a view": lambda m, y, x: y[1:][:, 1].sigmoid_(),
    "copy_ from x": lambda m, y, x: y[2].copy_(x[0] * 3),
    "two writes": lambda m, y, x: (y[0].mul_(x[2]), y[:, 2].tanh_()),
    # a view holding all of its base: the base's history becomes the written value's
    "all of it through a reshape": lambda m, y, x: y.reshape(-1).mul_(x.reshape(-1)),
    "all of it through an unsqueeze, then a row": lambda m, y, x: (y.unsqueeze(0).mul_(-2), y[2].mul_(x[0])),
}
STALE = {
    "base written": lambda y, x: y.mul_(x),
    "another view written": lambda y, x: y[:, 0].mul_(5),
    "a view of it written": lambda y, x: y[1:][0].exp_(),
    "all of it written through a reshape": lambda y, x: y.reshape(-1).sin_(),
}


def with_view_write(m, case, x):
    y = x * 0.9 + 0.05
    early = y[1]  # taken before the write
    INTO_VIEWS[case](m, y, x)
    return (y * y).sum() + (early * x[0]).sum()


def with_stale_view(m, case, x):
    y = x * 0.9 + 0.05
    early = y[1:]
    STALE[case](y, x)
    return (early * early).sum()


def torch_grad(fn, *args):
    xt = torch.tensor(x_values(), requires_grad=True)
    fn(torch, *args, xt).backward()
    return xt.grad.numpy()


@pytest.mark.parametrize("case", INTO_VIEWS)
def test_a_write_into_a_view_gives_torchs_gradient(case):
    got = ug.grad(lambda x: with_view_write(ug, case, x))(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), torch_grad(with_view_write, case), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", STALE)
def test_a_view_taken_before_a_write_reads_its_history_anew(case):
    # Before, the early view kept the history it was made with: a gradient silently wrong.
    got = ug.grad(lambda x: with_stale_view(ug, case, x))(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), torch_grad(lambda m, x: with_stale_view(m, case, x)), rtol=1e-12)


def test_second_derivatives_through_a_write_into_a_view():
    def f(m, x):
        y = x * x
        y[0].mul_(x[1])
        return (y ** 3).sum()

    xt = torch.tensor(x_values(), requires_grad=True)
    (g,) = torch.autograd.grad(f(torch, xt), xt, create_graph=True)
    (gg,) = torch.autograd.grad((g * g).sum(), xt)
    got = ug.grad(lambda x: (ug.grad(lambda z: f(ug, z))(x) ** 2).sum())(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), gg.numpy(), rtol=1e-11)


@pytest.mark.parametrize("case", ["column += 1", "row *= x", "two writes"])
def test_a_program_with_a_write_into_a_view_gives_the_eager_gradient(case):
    def f(x):
        return with_view_write(ug, case, x)

    x = ug.tensor(x_values())
    np.testing.assert_allclose(ug.jit(ug.grad(f))(x).numpy(), ug.grad(f)(x).numpy(), rtol=1e-13)
    np.testing.assert_allclose(ug.grad(ug.jit(f))(x).numpy(), ug.grad(f)(x).numpy(), rtol=1e-13)


def test_writes_into_views_that_cannot_be_followed_are_clear_errors():
    w = ug.randn(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[mul\] a view of a leaf tensor that requires grad"):
        w[0].mul_(2)
    y = w * 2
    with pytest.raises(RuntimeError, match=r"\[add\] in-place change of an expanded view .*clone\(\) it first"):
        y[0].expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match=r"\[mul\] .*one of the views that split returned .*clone\(\) it first"):
        y.chunk(3)[1].mul_(2)  # torch: "a function that returns multiple views"
    buffer = ug.zeros(3, 3)
    with ug.no_grad():
        column = buffer[:, 0]  # a view made under no_grad knows no base (torch refuses it too)
    with pytest.raises(RuntimeError, match=r"\[add\] .*base was not noted: .*under no_grad.*"
                                           r"x\[i\] = x\[i\] \+ v"):
        column += w[0]
    buffer[:, 0] = buffer[:, 0] + w[0]  # the spelling it suggests
    assert buffer.requires_grad
    real = ug.view_as_real(ug.randn(3, dtype=ug.complex128, requires_grad=True) * 2)
    with pytest.raises(RuntimeError, match=r"\[mul\] .*base was not noted: .*view_as_real"):
        real[0].mul_(2)


# name -> writes of values that require grad (from x) into views of a tensor that does not
# (buf, made by zeros): the base takes the history, as torch's CopySlices gives it.
BUFFER_WRITES = {
    "column += row": lambda m, buf, x: buf[:, 0].__iadd__(x[0]),
    "a named row, two writes": lambda m, buf, x: buf[1].mul_(x[1]).add_(x[2]),
    "copy_ into a slice": lambda m, buf, x: buf[0:2].copy_(x[1:] * 2),
    "a view of a view": lambda m, buf, x: buf.view(9)[2:5].add_(x[0].exp()),
    "the diagonal": lambda m, buf, x: buf.diagonal().add_(x[1]),
    "a transposed row": lambda m, buf, x: buf.t()[2].sub_(x[2] ** 2),
}


def buffer_loss(m, case, x):
    buf = m.zeros(3, 3, dtype=x.dtype)
    early = buf[1:]  # taken before the write: it reads its history anew
    BUFFER_WRITES[case](m, buf, x)
    return (buf * buf).sum() + (early * x[1:]).sum()


@pytest.mark.parametrize("case", BUFFER_WRITES)
def test_a_write_into_a_view_of_a_tensor_without_grad_gives_torchs_gradient(case):
    xt = torch.tensor(x_values(), requires_grad=True)
    buffer_loss(torch, case, xt).backward()
    x = ug.tensor(x_values(), requires_grad=True)
    buffer_loss(ug, case, x).backward()
    # A few float64 products and sums of terms under 10 per element.
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-13, atol=1e-14)
    compiled = ug.jit(ug.grad(lambda v: buffer_loss(ug, case, v)))(ug.tensor(x_values()))
    np.testing.assert_allclose(compiled.numpy(), xt.grad.numpy(), rtol=1e-13, atol=1e-14)


def test_a_tensor_without_grad_written_through_a_view_requires_grad_as_torchs_does():
    w = ug.randn(3, requires_grad=True)
    buf = ug.zeros(2, 3)
    assert not buf.requires_grad and buf.grad_fn is None
    buf[0] += w
    assert buf.requires_grad and buf.grad_fn is not None and not buf.is_leaf
    buf[1] += 1.0  # a write that records nothing keeps the history
    buf.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones(3))
    # no value that requires grad: nothing recorded, buf stays a leaf without history
    plain = ug.zeros(2, 3)
    plain[0] += ug.ones(3)
    assert not plain.requires_grad and plain.grad_fn is None


@pytest.mark.parametrize("case", BUFFER_WRITES)
def test_a_program_writes_into_part_of_a_tensor_from_outside_as_eager_code_does(case):
    # The function writes into a view of a tensor it did not make: each run writes it again.
    def step(m, buf, x):
        BUFFER_WRITES[case](m, buf, x)
        return (buf * x).sum()

    x = x_values()
    eager_buf, program_buf = ug.zeros(3, 3, dtype=ug.float64), ug.zeros(3, 3, dtype=ug.float64)
    program = ug.jit(lambda v: step(ug, program_buf, v))
    for _ in range(3):
        want = step(ug, eager_buf, ug.tensor(x))
        got = program(ug.tensor(x))
        # the same float64 operations in the same order
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-15)
        np.testing.assert_allclose(program_buf.numpy(), eager_buf.numpy(), rtol=1e-15)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_any_dim_keeps_only_its_output_as_torchs(op):
    # over a leading dim the row max is taken apart: it must not keep the input for a gradient
    def f(m, x):
        y = x * 2
        s = getattr(m, op)(y, 0)
        y.tanh_()  # torch allows it: its softmax saved only s
        return (s * s).sum() + y.sum()

    xt = torch.tensor(x_values(), requires_grad=True)
    f(torch, xt).backward()
    got = ug.grad(lambda x: f(ug, x))(ug.tensor(x_values()))
    # a few float64 operations per element and sums of 3 terms
    np.testing.assert_allclose(got.numpy(), xt.grad.numpy(), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("activation", ["softplus", "logsigmoid", "hardswish", "mish"])
def test_a_write_into_what_a_custom_derivative_returned_compiles(activation):
    # Their value is computed apart and linked to a rule of its own: a program binds the
    # output as the call left it, not as the later write left it.
    def f(m, x):
        y = getattr(m.nn.functional, activation)(x)
        y.tanh_()
        return (y * y).sum()

    xt = torch.tensor(x_values(), requires_grad=True)
    f(torch, xt).backward()
    x = ug.tensor(x_values())
    for grad in (ug.grad(lambda v: f(ug, v)), ug.jit(ug.grad(lambda v: f(ug, v))), ug.grad(ug.jit(lambda v: f(ug, v)))):
        # a few float64 operations per element
        np.testing.assert_allclose(grad(x).numpy(), xt.grad.numpy(), rtol=1e-13, atol=1e-14)


def test_a_write_into_a_view_of_a_base_laid_out_otherwise():
    # A base that is no view but not contiguous either (NumPy's transposed memory)
    def f(m, x):
        y = m.from_numpy(np.zeros((3, 3)).T)
        y.copy_(x * 2)
        y[1].mul_(x[0])
        y[:, 2].sigmoid_()
        return (y * y).sum()

    got = ug.grad(lambda x: f(ug, x))(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), torch_grad(f), rtol=1e-12, atol=1e-12)


# Random programs: a few writes, each through a chain of views, with views taken between them.
CHAIN_VIEWS = [
    lambda t, r: t[r.randrange(t.shape[0])] if t.dim() == 2 else t,
    lambda t, r: t[:, r.randrange(t.shape[1])] if t.dim() == 2 else t,
    lambda t, r: t[1:] if t.shape[0] > 1 else t,
    lambda t, r: t.t() if t.dim() == 2 else t,
    lambda t, r: t.diagonal() if t.dim() == 2 else t,
    lambda t, r: t.narrow(-1, 1, t.shape[-1] - 1) if t.shape[-1] > 1 else t,
    lambda t, r: t[::2] if t.shape[0] > 1 else t,
]


def from_x(x, v, tail=False):
    flat = x.reshape(-1)
    return (flat[-v.numel():] if tail else flat[:v.numel()]).reshape(v.shape)


CHAIN_WRITES = [
    lambda v, x: v.add_(0.5), lambda v, x: v.mul_(from_x(x, v) + 1), lambda v, x: v.exp_(),
    lambda v, x: v.tanh_(), lambda v, x: v.zero_(), lambda v, x: v.copy_(from_x(x, v) * 2),
    lambda v, x: v.sigmoid_(), lambda v, x: v.sub_(from_x(x, v, tail=True)), lambda v, x: v.clamp_(0.2, 0.7),
]


def random_program(seed):
    r = random.Random(seed)
    return [([r.randrange(len(CHAIN_VIEWS)) for _ in range(r.randint(1, 2))], r.randrange(len(CHAIN_WRITES)),
             r.random() < 0.5) for _ in range(r.randint(1, 3))]


def run_program(steps, seed, x):
    y = x * 0.9 + 0.05
    early = []
    for chain, write, keep in steps:
        r, v = random.Random(seed), y
        for c in chain:
            v = CHAIN_VIEWS[c](v, r)
        if keep:
            early.append(y[0])
        CHAIN_WRITES[write](v, x)
    return (y * y).sum() + sum((e * e).sum() * 0.5 for e in early)


@pytest.mark.parametrize("seed", range(60))
def test_random_writes_through_views_give_torchs_gradient_eagerly_and_compiled(seed):
    steps = random_program(seed)

    def f(x):
        return run_program(steps, seed, x)

    x = ug.tensor(x_values())
    xt = torch.tensor(x_values(), requires_grad=True)
    try:
        run_program(steps, seed, xt).backward()
        # a few float64 ops per element, their order kept: far under 1e-12 of values near 1
        want, rtol, atol = xt.grad.numpy(), 1e-12, 1e-12
    except RuntimeError:
        # torch refuses an op's saved output written again; unigrad saved its own copy (the
        # op ran out of place), so central differences are the reference: O(eps^2) truncation
        # and O(1e-16 / eps) rounding, eps = 1e-5.
        want, rtol, atol = central_differences(lambda a: run_program(steps, seed, ug.tensor(a)).item()), 1e-7, 1e-7
    for got in (ug.grad(f)(x), ug.jit(ug.grad(f))(x), ug.grad(ug.jit(f))(x)):
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)
    # Per-example gradients: the views of a batched value note their base at the example's level,
    # so the writes batch (no call per example) and give each example's own gradient.
    xs = ug.stack([x, x * 0.5 + 0.2])
    before = ug._C._functional.vmap_fallbacks()
    per_example = ug.vmap(ug.grad(f))(xs)
    assert ug._C._functional.vmap_fallbacks() == before, ug._C._functional.last_vmap_fallback()
    for b in range(2):
        np.testing.assert_allclose(per_example[b].numpy(), ug.grad(f)(xs[b]).numpy(), rtol=1e-12, atol=1e-12)


def central_differences(f, eps=1e-5):
    x = x_values()
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("write", ["y.mul_(3)", "y[0].mul_(3)", "y[:, 1].exp_()"])
def test_a_retained_gradient_is_the_written_values(write):
    # torch moves retain_grad's hook to the new history: y.grad is d/dy of y as it is now
    def run(m):
        x = m.tensor(x_values(), requires_grad=True)
        y = x * 2
        y.retain_grad()
        exec(write)
        (y * y * x).sum().backward()
        return y.grad.numpy(), x.grad.numpy()

    for got, want in zip(run(ug), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_power_with_a_constant_exponent_keeps_no_output():
    # torch's x ** c saves x alone, so its output may be written before backward
    def f(m, x):
        y = x ** 2
        y[0].mul_(x[1])
        z = x.pow(2.5)
        z.add_(1)
        return (y * z).sum()

    got = ug.grad(lambda x: f(ug, x))(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), torch_grad(f), rtol=1e-12)
    x = ug.tensor(x_values(), requires_grad=True)
    e = ug.tensor(2.5, dtype=ug.float64, requires_grad=True)
    y = x ** e  # the exponent's gradient reads the output: written, it is refused
    y.add_(1)
    with pytest.raises(RuntimeError, match="saved by pow"):
        y.sum().backward()


@pytest.mark.parametrize("op", ["logaddexp", "cumsum", "cumulative_trapezoid"])
def test_an_output_its_gradient_does_not_read_may_be_written_before_backward(op):
    # as in torch: these keep nothing of their output (logaddexp's shares come from its operands)
    def f(m, x):
        y = {"logaddexp": lambda: m.logaddexp(x, x.flip(0) * 2), "cumsum": lambda: x.cumsum(1),
             "cumulative_trapezoid": lambda: m.cumulative_trapezoid(x, dim=1)}[op]()
        y.mul_(1.5)
        return (y * y).sum()

    got = ug.grad(lambda x: f(ug, x))(ug.tensor(x_values()))
    np.testing.assert_allclose(got.numpy(), torch_grad(f), rtol=1e-12)


# Forward mode (jvp, jacfwd, forward_ad): a view's tangent is its elements of its base's. A write
# into a view gives the base's tangent the written tangent there (torch's forward CopySlices), and
# a view taken before a write into its memory reads its tangent anew, as its history.
def tangent_direction():
    return np.random.default_rng(1).standard_normal((3, 3))


def torch_jvp(fn):
    _, tangent = torch.func.jvp(fn, (torch.tensor(x_values()),), (torch.tensor(tangent_direction()),))
    return tangent.numpy()


def ug_jvp(fn):
    _, tangent = ug.jvp(fn, (ug.tensor(x_values()),), (ug.tensor(tangent_direction()),))
    return tangent.numpy()


def after_view_write(m, case, x):
    y = x * 0.9 + 0.05
    early = y[1]
    INTO_VIEWS[case](m, y, x)
    return m.cat([y.reshape(-1), early * x[0]])


def after_stale_view(m, case, x):
    y = x * 0.9 + 0.05
    early = y[1:]
    STALE[case](y, x)
    return early * 1.0


@pytest.mark.parametrize("case", INTO_VIEWS)
def test_a_write_into_a_view_gives_torchs_tangent(case):
    # Before, refused: "in-place change of a view of a tensor with a forward-mode tangent".
    got = ug_jvp(lambda x: after_view_write(ug, case, x))
    # a few float64 ops per element, on values and tangents near 1: a few ulps
    np.testing.assert_allclose(got, torch_jvp(lambda x: after_view_write(torch, case, x)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", STALE)
def test_a_view_taken_before_a_write_reads_its_tangent_anew(case):
    # Before, the early view kept the tangent it was made with: a silently wrong jvp.
    got = ug_jvp(lambda x: after_stale_view(ug, case, x))
    np.testing.assert_allclose(got, torch_jvp(lambda x: after_stale_view(torch, case, x)), rtol=1e-12, atol=1e-12)


def test_dual_tensors_follow_writes_into_views():
    def run(m, fw):
        x, t = m.tensor(x_values()), m.tensor(tangent_direction())
        with fw.dual_level():
            y = fw.make_dual(x, t) * 2
            row = y[0]
            y[:, 1:].mul_(y[:, :1])  # both sides views of y
            y.diagonal().exp_()
            return fw.unpack_dual(y).tangent.numpy(), fw.unpack_dual(row).tangent.numpy()

    for got, want in zip(run(ug, ug.autograd.forward_ad), run(torch, torch.autograd.forward_ad)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_hessians_and_nested_jvps_through_writes_into_views():
    def f(m, x):
        y = x * x
        y[0].mul_(x[1])
        y[:, 2:].sin_()
        return (y ** 3).sum()

    want = torch.func.hessian(lambda x: f(torch, x))(torch.tensor(x_values())).numpy()
    # forward over reverse (ug.hessian, refused before), forward over forward (both levels
    # follow the write), reverse over forward (the tangent's own history goes through it)
    for transform in (ug.hessian, lambda g: ug.jacfwd(ug.jacfwd(g)), lambda g: ug.jacrev(ug.jacfwd(g))):
        got = transform(lambda x: f(ug, x))(ug.tensor(x_values()))
        # sums of 9 products of values near 1, in other orders than torch's: ~10 ulps
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("seed", range(60))
def test_random_writes_through_views_give_torchs_tangent_eagerly_and_compiled(seed):
    steps = random_program(seed)

    def f(x):
        return run_program(steps, seed, x)

    try:
        want, rtol, atol = torch_jvp(lambda x: run_program(steps, seed, x)), 1e-12, 1e-12
    except RuntimeError:
        # torch refused the program (as for its gradient): central differences along the tangent,
        # O(eps^2) truncation and O(1e-16 / eps) rounding, eps = 1e-5
        x, t = x_values(), tangent_direction()
        want = (run_program(steps, seed, ug.tensor(x + 1e-5 * t)).item()
                - run_program(steps, seed, ug.tensor(x - 1e-5 * t)).item()) / 2e-5
        rtol, atol = 1e-7, 1e-7
    x, t = ug.tensor(x_values()), ug.tensor(tangent_direction())
    for jvp in (ug.jvp, ug.jit(ug.jvp, static_argnums=0), lambda g, p, q: ug.jvp(ug.jit(g), p, q)):
        _, got = jvp(f, (x,), (t,))
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)
    # Per-example tangents, either way round: the views of a batched value note their base at the
    # example's level, so the writes batch (no call per example).
    xs, ts = ug.stack([x, x * 0.5 + 0.2]), ug.stack([t, t * 2])
    each = ug.stack([ug.jvp(f, (xs[b],), (ts[b],))[1] for b in range(2)])
    before = ug._C._functional.vmap_fallbacks()
    for got in (ug.vmap(lambda p, q: ug.jvp(f, (p,), (q,))[1])(xs, ts), ug.jvp(ug.vmap(f), (xs,), (ts,))[1]):
        np.testing.assert_allclose(got.numpy(), each.numpy(), rtol=1e-12, atol=1e-12)
    assert ug._C._functional.vmap_fallbacks() == before, ug._C._functional.last_vmap_fallback()


def test_writes_into_views_forward_mode_cannot_follow_are_clear_errors():
    def expanded(x):
        y = x * 2
        y[0].expand(2, 3).add_(1)
        return y

    def through_view_as_real(x):
        real = ug.view_as_real(x * 2)
        real[0].mul_(2)
        return real

    x, t = ug.tensor(x_values()), ug.tensor(tangent_direction())
    with pytest.raises(RuntimeError, match=r"\[add\] in-place change of an expanded view .*clone\(\) it first"):
        ug.jvp(expanded, (x,), (t,))
    z = ug.tensor(x_values()[0] + 1j * x_values()[1])
    with pytest.raises(RuntimeError, match=r"\[mul\] .*forward mode \(jvp\), of a view whose base was not noted"):
        ug.jvp(through_view_as_real, (z,), (z * 0.5,))
