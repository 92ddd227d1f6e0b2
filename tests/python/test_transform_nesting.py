"""Reverse-mode derivatives taken outside vmap(grad(f)) against JAX (and torch.func, and
torch's backward for the PyTorch spelling): grad, value_and_grad, jacrev, jvp and hessian of
functions that map a gradient over a batch, and its jit, grad(grad) under vmap, nested vmaps, MAML's
meta-gradient and loss.backward() through ug.vmap(ug.grad(f)). Once these came back as
zeros: the gradient found inside vmap was cut off from the outer transform's input. Custom
derivatives (every spelling) under vmap and differentiated outside it apply their rule: once
they were ignored, grad(vmap(custom_vjp)) giving the plain derivative. Float64
throughout; each compared value sums at most a dozen terms of magnitude below 100, so
K·n·eps·Σ|terms| < 1e-12 and the dtype's tolerance holds (see reference.py)."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.func as tf

import unigrad as ug
from reference import assert_close


@pytest.fixture(scope="module")
def jax(jax64):
    return jax64


@pytest.fixture(scope="module")
def J(jax):
    return SimpleNamespace(grad=jax.grad, value_and_grad=jax.value_and_grad, vmap=jax.vmap, jacrev=jax.jacrev,
                           jacfwd=jax.jacfwd,
                           jvp=jax.jvp, hessian=jax.hessian, custom_vjp=jax.custom_vjp, custom_jvp=jax.custom_jvp,
                           jit=jax.jit, arr=jax.numpy.asarray, np=jax.numpy)


U = SimpleNamespace(grad=ug.grad, value_and_grad=ug.value_and_grad, vmap=ug.vmap, jacrev=ug.jacrev, jacfwd=ug.jacfwd,
                    jvp=ug.jvp,
                    hessian=ug.hessian, custom_vjp=ug.custom_vjp, custom_jvp=ug.custom_jvp, jit=ug.jit, arr=ug.tensor,
                    np=ug)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def cube(m, x):
    return (x ** 3).sum()


def smooth(m, x):
    """Ops whose derivatives read saved outputs (exp, tanh) as well as saved inputs."""
    return (m.np.exp(x) * m.np.sin(x)).sum() + m.np.tanh(x).sum() * (x ** 2).sum()


def field(m, x):
    """A map from R^3 to R^3, for jacrev."""
    return m.np.tanh(x) * (x ** 2).sum()


def numpy(v):
    return v.detach().numpy() if isinstance(v, (ug.Tensor, torch.Tensor)) else np.asarray(v)


def same(f, J, *inputs):
    """f(m, *arrays) for m = JAX and unigrad: the same shapes and values."""
    expected = f(J, *(J.arr(x) for x in inputs))
    actual = f(U, *(ug.tensor(x) for x in inputs))
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(numpy(a), np.asarray(e), dtype="float64")


FUNCTIONS = [cube, smooth]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_grad_of_vmap_of_grad(J, fn):
    xs = rand(4, 3)
    same(lambda m, xs: m.grad(lambda v: m.vmap(m.grad(lambda x: fn(m, x)))(v).sum())(xs), J, xs)
    # cube's answer in closed form: the sum over examples of the Hessian-vector products with ones.
    got = ug.grad(lambda v: ug.vmap(ug.grad(lambda x: cube(U, x)))(v).sum())(ug.tensor(xs))
    assert_close(got.numpy(), 6 * xs, dtype="float64")


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_grad_of_vmap_of_value_and_grad(J, fn):
    def outer(m, xs):
        values, grads = m.vmap(m.value_and_grad(lambda x: fn(m, x)))(xs)
        return values.sum() + (grads ** 2).sum()

    same(lambda m, xs: m.grad(lambda v: outer(m, v))(xs), J, rand(4, 3, seed=1))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_jacrev_of_vmap_of_grad(J, fn):
    same(lambda m, xs: m.jacrev(m.vmap(m.grad(lambda x: fn(m, x))))(xs), J, rand(4, 3, seed=2))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_vmap_of_grad_of_grad(J, fn):
    # the gradient of the gradient's sum: the Hessian's row sums, per example
    same(lambda m, xs: m.vmap(m.grad(lambda x: m.grad(lambda y: fn(m, y))(x).sum()))(xs), J, rand(4, 3, seed=3))


def test_grad_of_vmap_of_jacrev(J):
    same(lambda m, xs: m.grad(lambda v: (m.vmap(m.jacrev(lambda x: field(m, x)))(v) ** 2).sum())(xs),
         J, rand(4, 3, seed=4))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_jvp_of_vmap_of_grad(J, fn):
    same(lambda m, xs, ts: m.jvp(m.vmap(m.grad(lambda x: fn(m, x))), (xs,), (ts,)), J, rand(4, 3, seed=5),
         rand(4, 3, seed=6))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_hessian_of_a_function_using_vmap_of_grad(J, fn):
    same(lambda m, xs: m.hessian(lambda v: (m.vmap(m.grad(lambda x: fn(m, x)))(v) ** 2).sum())(xs),
         J, rand(3, 2, seed=7))


def rational(m, x):
    """Ops whose forward rules read their outputs (sqrt, log's 1/x, exp): reverse mode over
    forward mode must see through those outputs (once the tangent was recorded before the
    output's node, and grad(jvp(exp)) came back 0)."""
    return (m.np.sqrt(x * x + 1.0) * m.np.log(x * x + 2.0) + m.np.exp(m.np.tanh(x))).sum()


@pytest.mark.parametrize("fn", FUNCTIONS + [rational])
def test_grad_of_jvp(J, fn):
    same(lambda m, xs, ts: m.grad(lambda x: m.jvp(lambda y: fn(m, y), (x,), (ts,))[1])(xs), J, rand(2, 3, seed=13),
         rand(2, 3, seed=14))


@pytest.mark.parametrize("fn", [smooth, rational])
def test_jacrev_of_jacfwd_is_the_hessian(J, fn):
    same(lambda m, xs: m.jacrev(m.jacfwd(lambda x: fn(m, x)))(xs), J, rand(4, seed=15))


def test_jit_of_grad_of_vmap_of_grad(J):
    def f(m, xs):
        return m.jit(m.grad(lambda v: m.vmap(m.grad(lambda x: smooth(m, x)))(v).sum()))(xs)

    same(f, J, rand(4, 3, seed=16))
    same(f, J, rand(4, 3, seed=17))  # the compiled program again, on new values


def test_grad_of_nested_vmap_of_grad(J):
    same(lambda m, xs: m.grad(lambda v: m.vmap(m.vmap(m.grad(lambda x: smooth(m, x))))(v).sum())(xs),
         J, rand(2, 3, 2, seed=8))


def test_maml_meta_gradient(J):
    """The meta-gradient of a loss after one inner step per task, the task gradient inside vmap."""
    def meta(m, w, xs, ys):
        def loss(w, x, y):
            return ((m.np.tanh(x @ w) - y) ** 2).sum()

        def adapted_loss(x, y):
            return loss(w - 0.1 * m.grad(loss)(w, x, y), x, y)

        return m.vmap(adapted_loss, in_axes=(0, 0))(xs, ys).sum()

    same(lambda m, w, xs, ys: m.grad(lambda v: meta(m, v, xs, ys))(w), J, rand(3, 2, seed=9), rand(4, 5, 3, seed=10),
         rand(4, 5, 2, seed=11))


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_torch_func_spelling(fn):
    """torch.func's grad(vmap(grad(f))) (unigrad spells it with the JAX names: it has no ug.func)."""
    xs = rand(4, 3, seed=12)
    T = SimpleNamespace(np=torch)
    expected = tf.grad(lambda v: tf.vmap(tf.grad(lambda x: fn(T, x)))(v).sum())(torch.tensor(xs))
    got = ug.grad(lambda v: ug.vmap(ug.grad(lambda x: fn(U, x)))(v).sum())(ug.tensor(xs))
    assert_close(got.numpy(), expected.numpy(), dtype="float64")


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_backward_through_vmap_of_grad(fn):
    """The PyTorch spelling: a leaf that requires grad, vmap(grad(f)) of it, .backward()."""
    xs = rand(4, 3, seed=13)
    T = SimpleNamespace(np=torch)
    t = torch.tensor(xs, requires_grad=True)
    tf.vmap(tf.grad(lambda x: fn(T, x)))(t).sum().backward()
    u = ug.tensor(xs).requires_grad_()
    per_example = ug.vmap(ug.grad(lambda x: fn(U, x)))(u)
    assert per_example.requires_grad
    per_example.sum().backward()
    assert_close(u.grad.numpy(), t.grad.numpy(), dtype="float64")


def doubling(m):
    """x with a custom_vjp that doubles the cotangent: a rule unlike the true derivative."""
    @m.custom_vjp
    def f(x):
        return x * 1.0

    f.defvjp(lambda x: (x * 1.0, None), lambda res, g: (2 * g,))
    return f


def cubing(m):
    """x ** 3 with its true derivative as a custom_vjp that saves the input."""
    @m.custom_vjp
    def f(x):
        return x ** 3

    f.defvjp(lambda x: (x ** 3, x), lambda x, g: (3 * x ** 2 * g,))
    return f


def test_grad_of_vmap_applies_a_custom_vjp(J):
    same(lambda m, xs: m.grad(lambda v: m.vmap(lambda x: doubling(m)(x).sum())(v).sum())(xs), J, rand(4, 3, seed=14))


def test_grad_of_vmap_of_grad_through_a_custom_vjp(J):
    same(lambda m, xs: m.grad(lambda v: m.vmap(m.grad(lambda x: (cubing(m)(x) * m.np.sin(x)).sum()))(v).sum())(xs),
         J, rand(4, 3, seed=15))


def test_grad_of_vmap_of_a_custom_vjp_saving_its_output(J):
    """The residual is the output itself (the node's own output at both vmap levels); the rule is off by g."""
    def f(m, xs):
        @m.custom_vjp
        def e(x):
            return m.np.exp(x)

        def fwd(x):
            y = m.np.exp(x)
            return y, y

        e.defvjp(fwd, lambda y, g: (g * y + g,))
        return m.grad(lambda v: (m.vmap(e)(v) * v).sum())(xs)

    same(f, J, rand(4, 3, seed=16))


def test_grad_of_vmap_of_a_custom_vjp_with_a_shared_argument(J):
    """w is not mapped: its gradient is the sum over the batch of what the rule gives each example."""
    def f(m, xs, w):
        @m.custom_vjp
        def scale(x, w):
            return x * w

        scale.defvjp(lambda x, w: (x * w, (x, w)), lambda res, g: (g * res[1], 3 * (g * res[0]).sum()))
        loss = lambda v, u: (m.vmap(scale, in_axes=(0, None))(v, u) ** 2).sum()  # noqa: E731
        return m.grad(loss, argnums=(0, 1))(xs, w)

    same(f, J, rand(4, 3, seed=17), rand(seed=18))


def test_grad_of_nested_vmap_of_a_custom_vjp(J):
    """vmap(vmap(f)) under grad: the rule is linked at each level, down to the physical tensor."""
    def f(m, xs):
        @m.custom_vjp
        def g(x):
            return m.np.sin(x)

        g.defvjp(lambda x: (m.np.sin(x), x), lambda x, ct: (2 * m.np.cos(x) * ct + x,))
        return m.grad(lambda v: (m.vmap(m.vmap(g))(v) * v).sum())(xs)

    same(f, J, rand(2, 3, 4, seed=19))


def custom_sin_jvp(m):
    """sin with a custom_jvp rule unlike its derivative (2 cos(x) t)."""
    @m.custom_jvp
    def f(x):
        return m.np.sin(x)

    @f.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return m.np.sin(x), 2 * m.np.cos(x) * t

    return f


def test_grad_of_vmap_of_a_custom_jvp(J):
    """Reverse mode transposes the custom_jvp rule, at the physical level too."""
    same(lambda m, xs: m.grad(lambda v: (m.vmap(custom_sin_jvp(m))(v) * v).sum())(xs), J, rand(4, 3, seed=20))


def test_jvp_of_vmap_of_a_custom_jvp(J):
    same(lambda m, xs, ts: m.jvp(m.vmap(custom_sin_jvp(m)), (xs,), (ts,)), J, rand(4, 3, seed=21),
         rand(4, 3, seed=22))


def test_grad_of_vmap_of_a_custom_gradient(J):
    """tf.custom_gradient's grad_fn closes over a tensor of its forward (batched there), which must
    meet cotangents of the same batch. JAX's custom_vjp with the same rule is the reference."""
    @J.custom_vjp
    def e_j(x):
        return J.np.exp(x)

    e_j.defvjp(lambda x: (J.np.exp(x), J.np.exp(x)), lambda y, g: (2 * g * y,))

    @ug.custom_gradient
    def e_u(x):
        y = x.exp()
        return y, lambda g: 2 * g * y

    xs = rand(4, 3, seed=23)
    expected = J.grad(lambda v: (J.vmap(e_j)(v) * v).sum())(J.arr(xs))
    got = ug.grad(lambda v: (ug.vmap(e_u)(v) * v).sum())(ug.tensor(xs))
    assert_close(got.numpy(), np.asarray(expected), dtype="float64")


def exp_function(m):
    """exp as a torch.autograd.Function (setup_context, saving its output), its backward off by g."""
    class Exp(m.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y + g if ctx.needs_input_grad[0] else None

    return Exp


def test_torch_func_grad_of_vmap_of_an_autograd_function():
    xs = rand(4, 3, seed=24)
    TE, UE = exp_function(torch), exp_function(ug)
    expected = tf.grad(lambda v: (tf.vmap(TE.apply)(v) * v).sum())(torch.tensor(xs))
    got = ug.grad(lambda v: (ug.vmap(UE.apply)(v) * v).sum())(ug.tensor(xs))
    assert_close(got.numpy(), expected.numpy(), dtype="float64")


def test_backward_through_vmap_of_an_autograd_function():
    """The PyTorch spelling: a leaf that requires grad, vmap of the Function, .backward()."""
    xs = rand(4, 3, seed=25)
    TE, UE = exp_function(torch), exp_function(ug)
    t = torch.tensor(xs, requires_grad=True)
    (tf.vmap(TE.apply)(t) * t).sum().backward()
    u = ug.tensor(xs).requires_grad_()
    (ug.vmap(UE.apply)(u) * u).sum().backward()
    assert_close(u.grad.numpy(), t.grad.numpy(), dtype="float64")


def test_a_pullback_of_vmap_of_a_custom_vjp_mapped_at_the_same_level_raises():
    """vmap of the pullback of vmap(f): the cotangents are batched at the level the rule ran at,
    which would mix two batches; it raises rather than answer wrong (ug.jacrev loops instead)."""
    e = doubling(ug)
    _, pullback = ug.vjp(ug.vmap(e), ug.tensor(rand(4, 3, seed=26)))
    with pytest.raises(ValueError, match=r"custom_vjp\(f\).*batched at vmap level 1, not below the level 1"):
        ug.vmap(pullback)(ug.ones(2, 4, 3))


@pytest.mark.parametrize("name", ["softplus", "mish", "logsigmoid", "hardswish"])
def test_activations_with_a_written_derivative_under_vmap(name):
    """These compute their value without recording and link a written derivative (a custom
    function's): grad(vmap(f)), jvp(vmap(f)) and grad(vmap(grad(f))) against torch.func."""
    fu, ft = getattr(ug.nn.functional, name), getattr(torch.nn.functional, name)
    xs, ts = rand(4, 3, seed=27) * 4, rand(4, 3, seed=28)
    expected = tf.grad(lambda v: (tf.vmap(ft)(v) * v).sum())(torch.tensor(xs))
    assert_close(ug.grad(lambda v: (ug.vmap(fu)(v) * v).sum())(ug.tensor(xs)).numpy(), expected.numpy(),
                 dtype="float64")
    expected = tf.jvp(tf.vmap(ft), (torch.tensor(xs),), (torch.tensor(ts),))[1]
    assert_close(ug.jvp(ug.vmap(fu), (ug.tensor(xs),), (ug.tensor(ts),))[1].numpy(), expected.numpy(),
                 dtype="float64")
    expected = tf.grad(lambda v: tf.vmap(tf.grad(lambda x: ft(x).sum()))(v).sum())(torch.tensor(xs))
    got = ug.grad(lambda v: ug.vmap(ug.grad(lambda x: fu(x).sum()))(v).sum())(ug.tensor(xs))
    assert_close(got.numpy(), expected.numpy(), dtype="float64")
