"""User-defined derivatives in the three styles, against the frameworks themselves: PyTorch's
torch.autograd.Function (float64, the same class body run by both), JAX's custom_vjp and
custom_jvp (float32, JAX's default: relative 1e-5 covers a few rounded operations), and
TensorFlow's tf.custom_gradient. The examples are the frameworks' own documentation's."""
import functools
import os

import numpy as np
import pytest
import torch

import unigrad as ug


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a, dtype=np.float64),
                               np.asarray(b.detach().numpy() if hasattr(b, "detach") else b, dtype=np.float64),
                               rtol=tol, atol=tol)


def exp_function(m):
    """torch's documentation example: exp, saving its output for backward."""
    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    return Exp


def scaled_function(m):
    """setup_context style (torch 2), a non-tensor argument, two tensor inputs, an integer output."""
    class Scaled(m.autograd.Function):
        @staticmethod
        def forward(x, w, k):
            return (x * w).sin() * k, x.argmax()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, k = inputs
            ctx.save_for_backward(x, w)
            ctx.k = k
            ctx.seen = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g, g_index):
            x, w = ctx.saved_tensors
            common = g * (x * w).cos() * ctx.k
            return common * w, common * x, None

    return Scaled


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
W = RNG.normal(size=(3, 4))


def test_function_values_gradients_and_second_derivatives_match_torch():
    for m in (torch, ug):
        x = m.tensor(X, requires_grad=True)
        y = exp_function(m).apply(x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g ** 2).sum(), x)  # through the saved output: d/dx e^(2x) = 2e^(2x)
        if m is torch:
            expected = (y, g, gg)
        else:
            for a, b in zip(expected, (y, g, gg)):
                close(a, b)
    close(gg, 2 * np.exp(2 * X))


def test_function_setup_context_non_tensor_arguments_and_integer_outputs_match_torch():
    results = {}
    for m in (torch, ug):
        x, w = m.tensor(X, requires_grad=True), m.tensor(W, requires_grad=False)
        fn = scaled_function(m)
        out, index = fn.apply(x, w, 2.5)
        out.backward(m.tensor(W))
        assert not index.requires_grad and index.dtype == m.int64
        results[m] = (out, x.grad, int(index))
    close(results[torch][0], results[ug][0])
    close(results[torch][1], results[ug][1])
    assert results[torch][2] == results[ug][2]


def test_function_needs_input_grad_matches_torch():
    seen = {}
    for m in (torch, ug):
        fn = scaled_function(m)

        class Peek(fn):
            @staticmethod
            def setup_context(ctx, inputs, output):
                fn.setup_context(ctx, inputs, output)
                seen[m] = ctx.needs_input_grad

        Peek.apply(m.tensor(X, requires_grad=True), m.tensor(W), 1.0)
    assert seen[torch] == seen[ug] == (True, False, False)


def test_function_errors():
    class WrongCount(ug.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = ug.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match=r"WrongCount.backward returned 1 gradients for 2 forward arguments"):
        WrongCount.apply(x, ug.tensor(W)).sum().backward()

    class WrongShape(ug.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g.reshape(1)

    with pytest.raises(ValueError, match=r"\[WrongShapeBackward\] the backward returned shape \[1\] for input 0 of "
                                         r"shape \[3, 4\]"):
        WrongShape.apply(x).backward()
    # a saved tensor changed in place before backward: an error, as torch raises
    y = ug.tensor(X, requires_grad=True) * 1
    out = exp_function(ug).apply(y)
    with ug.no_grad():
        out.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.sum().backward()
    # forward mode needs a jvp rule
    with pytest.raises(ValueError, match=r"ExpBackward\] has no forward-mode rule"):
        ug.jvp(exp_function(ug).apply, (ug.tensor(X),), (ug.ones(3, 4, dtype=ug.float64),))


def test_function_jvp_rule_and_once_differentiable():
    class Exp(exp_function(ug)):
        @staticmethod
        def jvp(ctx, t):
            return t * ctx.y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.y = output

        @staticmethod
        def forward(x):
            return x.exp()

    t = ug.tensor(W)
    y, ty = ug.jvp(Exp.apply, (ug.tensor(X),), (t,))
    close(ty, np.exp(X) * W)

    class Square(ug.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ug.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ug.tensor(X, requires_grad=True)
    (g,) = ug.autograd.grad(Square.apply(x).sum(), x)
    close(g, 2 * X)
    # A gradient that itself requires grad (torch's rule for when to refuse): differentiating the
    # result again raises rather than treating backward as a constant.
    v = ug.tensor(W, requires_grad=True)
    (g,) = ug.autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    close(g, 2 * X * W)
    with pytest.raises(RuntimeError, match="differentiate twice a function marked with @once_differentiable"):
        g.sum().backward()


def test_function_under_transforms_and_jit():
    exp = exp_function(ug)

    def loss(w, x):
        return exp.apply(x * w).sum()

    xs = ug.tensor(X)
    per_example = ug.vmap(ug.grad(loss), in_axes=(None, 0))(ug.tensor(W[0]), xs)
    close(per_example, X * np.exp(X * W[0]))
    jitted = ug.jit(ug.grad(loss))
    for _ in range(2):
        close(jitted(ug.tensor(W[0]), xs[0]), X[0] * np.exp(X[0] * W[0]))
    # differentiated from outside: the program calls the Function back, which links its rule
    for _ in range(2):
        close(ug.grad(ug.jit(loss))(ug.tensor(W[0]), xs[0]), X[0] * np.exp(X[0] * W[0]))
    with ug.no_grad():
        close(ug.jit(loss)(ug.tensor(W[0]), xs[0]), np.exp(X[0] * W[0]).sum())
    # a PyTorch-style step runs the rule inside its trace: 3 compiled steps equal 3 eager ones
    models = [ug.nn.Linear(4, 1, dtype=ug.float64) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [ug.optim.SGD(m.parameters(), lr=0.1) for m in models]

    def step(m, opt):
        opt.zero_grad()
        loss = exp.apply(m(xs[:, :4] if xs.shape[1] >= 4 else xs)).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = ug.compile(lambda: step(models[0], opts[0]))
    for _ in range(3):
        compiled()
        step(models[1], opts[1])
    close(models[0].weight, models[1].weight)
    # reverse over reverse (hessian is forward over reverse: it needs a jvp rule, as in torch.func)
    hess = ug.jacrev(ug.jacrev(lambda x: exp.apply(x).sum()))(ug.tensor(X[0]))
    close(hess, np.diag(np.exp(X[0])))
    with pytest.raises(ValueError, match="has no forward-mode rule"):
        ug.hessian(lambda x: exp.apply(x).sum())(ug.tensor(X[0]))


def test_compiled_programs_link_the_rules_again(tmp_path):
    """A program holds the ops its trace ran; one whose run autograd records through (grad of
    jit, backward after a compiled forward) or that carries tangents calls the custom function
    back, so its rule is the one applied, whatever mode the program was traced in."""
    class Straight(ug.autograd.Function):  # a straight-through estimator: round, gradient 1
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g

    class StraightT(torch.autograd.Function):
        forward, backward = staticmethod(lambda ctx, x: x.round()), staticmethod(lambda ctx, g: g)

    def f(m, cls, x, w):
        return (cls.apply(x * w) * w).sum()

    x = X[0] * 3
    xt, wt = torch.tensor(x), torch.tensor(W[0], requires_grad=True)
    f(torch, StraightT, xt, wt).backward()
    jitted = ug.jit(lambda x, w: f(ug, Straight, x, w))
    with ug.no_grad():  # traced first for inference (where the rule is not needed)
        close(jitted(ug.tensor(x), ug.tensor(W[0])), f(torch, StraightT, xt, wt))
    for _ in range(2):
        w = ug.tensor(W[0], requires_grad=True)
        jitted(ug.tensor(x), w).backward()
        close(w.grad, wt.grad)  # round's own derivative (0) would give only round(x * w)
        close(ug.grad(jitted, 1)(ug.tensor(x), ug.tensor(W[0])), wt.grad)
    assert jitted.cache_info().misses == 1
    # a module compiled with ug.compile, backward outside: the same gradients as eager
    exp = exp_function(ug)
    lin = ug.nn.Linear(4, 2, dtype=ug.float64)
    model = ug.compile(lambda x: exp.apply(lin(x)))
    for _ in range(2):
        lin.zero_grad()
        model(ug.tensor(X)).sum().backward()
        compiled_grad = lin.weight.grad.clone()
        lin.zero_grad()
        exp.apply(lin(ug.tensor(X))).sum().backward()
        close(compiled_grad, lin.weight.grad)
    # second order through a compiled gradient
    loss = ug.jit(ug.grad(lambda x: exp.apply(x).sum()))
    close(ug.grad(lambda x: loss(x).sum())(ug.tensor(X[0])), np.exp(X[0]))
    # the saved program is the forward's ops: ONNX Runtime runs it
    import onnxruntime as ort
    fn = ug.jit(lambda x: exp.apply(x) * 2)
    ug.jit.save(fn, tmp_path / "custom.onnx", ug.tensor(X))
    session = ort.InferenceSession(str(tmp_path / "custom.onnx"), providers=["CPUExecutionProvider"])
    close(session.run(None, {session.get_inputs()[0].name: X})[0], 2 * np.exp(X))


# ---- JAX: custom_vjp, custom_jvp -----------------------------------------------------------------

def test_custom_vjp_matches_jax(jax):
    jnp = jax.numpy
    calls = []

    def make(m, custom_vjp):
        @custom_vjp
        def f(x, y):
            calls.append("f")
            return m.sin(x) * y

        def f_fwd(x, y):
            calls.append("fwd")
            return f.fun(x, y) if hasattr(f, "fun") else m.sin(x) * y, (m.cos(x), m.sin(x), y)

        def f_bwd(res, g):
            cos_x, sin_x, y = res
            return (cos_x * g * y, sin_x * g)

        f.defvjp(f_fwd, f_bwd)
        return f

    x, y = np.float32(0.7), np.float32(-1.3)
    fj, fu = make(jnp, jax.custom_vjp), make(ug, ug.custom_vjp)
    for argnums in (0, 1, (0, 1)):
        got = ug.grad(fu, argnums)(ug.tensor(x), ug.tensor(y))
        close(np.asarray(jax.grad(fj, argnums)(x, y)), ug.stack(list(got)) if argnums == (0, 1) else got, tol=1e-6)
        got = ug.grad(ug.jit(fu), argnums)(ug.tensor(x), ug.tensor(y))
        close(np.asarray(jax.grad(jax.jit(fj), argnums)(x, y)), ug.stack(list(got)) if argnums == (0, 1) else got,
              tol=1e-6)
    xs = RNG.normal(size=5).astype(np.float32)
    close(np.asarray(jax.vmap(jax.grad(fj), in_axes=(0, None))(xs, y)),
          ug.vmap(ug.grad(fu), in_axes=(0, None))(ug.tensor(xs), ug.tensor(y)), tol=1e-6)
    calls.clear()
    fu(ug.tensor(x), ug.tensor(y))
    assert calls == ["f"]  # an undifferentiated call runs f, not fwd
    with pytest.raises(ValueError, match="has no forward-mode rule"):
        ug.jvp(fu, (ug.tensor(x), ug.tensor(y)), (ug.tensor(1.0), ug.tensor(0.0)))


def test_custom_vjp_nondiff_argnums_and_pytrees_match_jax(jax):
    jnp = jax.numpy

    def make(m, custom_vjp, clip):
        @functools.partial(custom_vjp, nondiff_argnums=(0, 1))
        def clip_gradient(lo, hi, x):
            return x

        clip_gradient.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (clip(g, lo, hi),))

        @custom_vjp
        def weighted(p, x):
            return (p["w"] * x).sum() + p["b"]

        weighted.defvjp(lambda p, x: (weighted.fun(p, x) if hasattr(weighted, "fun") else (p["w"] * x).sum() + p["b"],
                                      (p, x)),
                        lambda res, g: ({"w": g * res[1] * 2, "b": g}, g * res[0]["w"]))  # 2: not the true rule
        return clip_gradient, weighted

    cj, wj = make(jnp, jax.custom_vjp, jnp.clip)
    cu, wu = make(ug, ug.custom_vjp, lambda g, lo, hi: g.clamp(lo, hi))
    t = np.float32(2.0)
    close(np.asarray(jax.grad(lambda x: cj(-0.75, 0.75, 3.0 * x))(t)),
          ug.grad(lambda x: cu(-0.75, 0.75, 3.0 * x))(ug.tensor(t)), tol=1e-6)
    p = {"w": RNG.normal(size=3).astype(np.float32), "b": np.float32(0.5)}
    xv = RNG.normal(size=3).astype(np.float32)
    gj = jax.grad(wj)(jax.tree.map(jnp.asarray, p), xv)
    gu = ug.grad(wu)({k: ug.tensor(v) for k, v in p.items()}, ug.tensor(xv))
    close(np.asarray(gj["w"]), gu["w"], tol=1e-6)
    close(np.asarray(gj["b"]), gu["b"], tol=1e-6)
    bad = ug.custom_vjp(lambda x: x * 2)
    bad.defvjp(lambda x: (x * 2, None), lambda res, g: g)
    with pytest.raises(TypeError, match="bwd must return a tuple with one entry per differentiable argument"):
        ug.grad(bad)(ug.tensor(1.0))
    with pytest.raises(AttributeError, match="No VJP defined"):
        ug.grad(ug.custom_vjp(lambda x: x))(ug.tensor(1.0))


def test_custom_jvp_log1pexp_matches_jax(jax):
    jnp = jax.numpy

    def make(m, custom_jvp):
        @custom_jvp
        def log1pexp(x):
            return m.log(1.0 + m.exp(x))

        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return log1pexp(x), t * (1.0 - 1.0 / (1.0 + m.exp(x)))

        return log1pexp

    fj, fu = make(jnp, jax.custom_jvp), make(ug, ug.custom_jvp)
    at = np.float32(100.0)  # the plain derivative is inf / inf = nan here; the rule gives 1
    assert float(ug.grad(fu)(ug.tensor(at))) == float(jax.grad(fj)(at)) == 1.0
    # compiled: the rule calls f again (a node nothing reads), which the program may leave out
    assert float(ug.jit(ug.grad(fu))(ug.tensor(at))) == float(jax.jit(jax.grad(fj))(at)) == 1.0
    # differentiated outside the program, in both modes: the program links the rule again
    assert float(ug.grad(ug.jit(fu))(ug.tensor(at))) == float(jax.grad(jax.jit(fj))(at)) == 1.0
    tangent_u = ug.jvp(ug.jit(fu), (ug.tensor(at),), (ug.tensor(np.float32(1)),))[1]
    assert float(tangent_u) == float(jax.jvp(jax.jit(fj), (at,), (np.float32(1),))[1]) == 1.0
    xs = np.linspace(-3, 3, 7).astype(np.float32)
    close(np.asarray(jax.vmap(jax.grad(fj))(xs)), ug.vmap(ug.grad(fu))(ug.tensor(xs)), tol=1e-6)
    close(np.asarray(jax.vmap(jax.grad(jax.grad(fj)))(xs)), ug.vmap(ug.grad(ug.grad(fu)))(ug.tensor(xs)), tol=1e-5)
    yj, tj = jax.jvp(fj, (xs,), (np.ones_like(xs),))
    yu, tu = ug.jvp(fu, (ug.tensor(xs),), (ug.ones(7),))
    close(np.asarray(yj), yu, tol=1e-6)
    close(np.asarray(tj), tu, tol=1e-6)

    @ug.custom_jvp
    def f(x, y):
        return ug.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: ug.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: ug.sin(x) * y_dot)
    x, y = ug.tensor(0.3), ug.tensor(2.0)
    gx, gy = ug.grad(f, (0, 1))(x, y)
    close(gx, np.cos(0.3) * 2.0, tol=1e-6)
    close(gy, np.sin(0.3), tol=1e-6)


def test_custom_jvp_nondiff_argnums_match_jax(jax):
    jnp = jax.numpy

    def make(custom_jvp):
        @functools.partial(custom_jvp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        @app.defjvp
        def app_jvp(f, primals, tangents):
            (x,), (x_dot,) = primals, tangents
            return f(x), 2.0 * x_dot

        return app

    aj, au = make(jax.custom_jvp), make(ug.custom_jvp)
    assert float(jax.grad(lambda x: aj(jnp.sin, x))(0.5)) == float(ug.grad(lambda x: au(ug.sin, x))(ug.tensor(0.5))) \
        == 2.0


# ---- TensorFlow: tf.custom_gradient ------------------------------------------------------------

def test_custom_gradient_log1pexp_matches_tensorflow(tf):
    @tf.custom_gradient
    def log1pexp_tf(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad

    @ug.custom_gradient
    def log1pexp(x):
        e = ug.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return ug.log(1 + e), grad

    xs = np.array([-2.0, 0.0, 3.0, 100.0], dtype=np.float32)
    xt, xu = tf.constant(xs), ug.tensor(xs)
    # eager, then under tf.function with the tape outside: the rule's gradient in both
    for f_tf, f_ug in ((log1pexp_tf, log1pexp), (tf.function(log1pexp_tf), ug.function(log1pexp))):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            yt = f_tf(xt)
        gt = tape.gradient(yt, xt)
        with ug.GradientTape() as tape:
            tape.watch(xu)
            yu = f_ug(xu)
        gu = tape.gradient(yu, xu)
        close(yt.numpy()[:3], yu[:3], tol=1e-6)
        close(gt.numpy(), gu, tol=1e-6)
        assert float(gt.numpy()[3]) == float(gu[3]) == 1.0


def scale_in_place(m):
    """An in-place Function (torch's mark_dirty): forward doubles its input in place and returns it."""
    class ScaleInPlace(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.factor = factor
            x.mul_(factor)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.factor, None

    return ScaleInPlace


@pytest.mark.parametrize("where", ["whole", "a row", "a column"])
def test_an_in_place_function_gives_its_input_its_history_as_torch_does(where):
    def run(m):
        x = m.tensor(X, requires_grad=True)
        y = x * x
        target = {"whole": y, "a row": y[1], "a column": y[:, 2]}[where]
        out = scale_in_place(m).apply(target, 3.0)
        assert out is target  # the same tensor comes back, as from an in-place op
        (y * x).sum().backward()
        return y, x.grad

    for got, want in zip(run(ug), run(torch)):
        close(got, want)


def test_an_in_place_function_refuses_what_an_in_place_op_refuses():
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad is being used in an in-place"):
        scale_in_place(ug).apply(ug.tensor(X, requires_grad=True), 2.0)

    class Forgets(ug.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(RuntimeError, match=r"Forgets: every tensor marked dirty must be returned by forward"):
        Forgets.apply(ug.tensor(X, requires_grad=True) * 1)


def test_an_in_place_function_compiles():
    function = scale_in_place(ug)

    def f(x):
        y = x * x
        function.apply(y[1], 3.0)
        return (y * x).sum()

    x = ug.tensor(X)
    close(ug.jit(f)(x), f(x))
    close(ug.jit(ug.grad(f))(x), ug.grad(f)(x))
    close(ug.grad(ug.jit(f))(x), ug.grad(f)(x))
