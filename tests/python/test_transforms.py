"""The functional transforms against torch.func, and GradientTape against the article's
TensorFlow example: values, composition to third order, pytrees, purity and errors."""
import numpy as np
import pytest
import torch
import torch.func as tf

import unigrad as ug
from reference import assert_same


def f_poly(x):
    return x ** 2 + 2 * x + 1


def test_articles_example_functional_and_tape():
    assert ug.grad(f_poly)(3.0).item() == 8.0
    assert ug.grad(ug.grad(f_poly))(3.0).item() == 2.0
    assert ug.grad(ug.grad(ug.grad(f_poly)))(3.0).item() == 0.0
    x = ug.tensor(3.0)
    with ug.GradientTape() as tape:
        tape.watch(x)
        y = x ** 2 + 2 * x + 1
    assert tape.gradient(y, x).item() == 8.0
    assert not x.requires_grad  # watching lends requires_grad only while recording


def fn_mlp(params, x):
    h = (x @ params["w1"] + params["b1"]).tanh()
    return ((h @ params["w2"]).sigmoid() ** 2).sum()


def make_params(m, seed=0):
    rng = np.random.default_rng(seed)
    return {k: m.tensor(rng.normal(size=s)) for k, s in
            {"w1": (4, 5), "b1": (5,), "w2": (5, 3)}.items()}


def test_grad_of_pytree_matches_torch_func():
    x = np.random.default_rng(1).normal(size=(6, 4))
    g_t = tf.grad(fn_mlp)(make_params(torch), torch.tensor(x))
    g_u = ug.grad(fn_mlp)(make_params(ug), ug.tensor(x))
    assert sorted(g_u) == sorted(g_t)
    for k in g_t:
        assert_same(g_t[k], g_u[k], rtol=1e-10, atol=1e-12)


def test_value_and_grad_argnums_and_aux():
    def f(a, b):
        return (a * b.exp()).sum(), {"aux": a.mean()}
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    (v_t, aux_t), (ga_t, gb_t) = tf.grad_and_value(f, argnums=(0, 1), has_aux=True)(torch.tensor(a), torch.tensor(b))[::-1]
    (v_u, aux_u), (ga_u, gb_u) = ug.value_and_grad(f, argnums=(0, 1), has_aux=True)(ug.tensor(a), ug.tensor(b))
    assert_same(v_t, v_u)
    assert_same(aux_t["aux"], aux_u["aux"])
    assert_same(ga_t, ga_u)
    assert_same(gb_t, gb_u)
    g, aux = ug.grad(f, argnums=1, has_aux=True)(ug.tensor(a), ug.tensor(b))
    assert_same(gb_t, g)


@pytest.mark.parametrize("f", [
    lambda x: (x ** 3 - x).sum(), lambda x: x.tanh().sum(), lambda x: x.sigmoid().prod(),
    lambda x: x.softmax(0)[0], lambda x: x.logsumexp(0), lambda x: (x.reshape(2, 2) @ x.reshape(2, 2)).trace()
    if hasattr(x, "trace") else (x.reshape(2, 2) @ x.reshape(2, 2)).diagonal().sum(),
])
def test_grad_composes_to_third_order(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])

    def third(m):
        h = lambda v: f(v).sum()  # noqa: E731
        return (m.grad(lambda v: m.grad(lambda w: m.grad(h)(w).sum())(v).sum())(m.tensor(x))
                if m is ug else tf.grad(lambda v: tf.grad(lambda w: tf.grad(h)(w).sum())(v).sum())(torch.tensor(x)))
    assert_same(third(torch), third(ug), rtol=1e-8, atol=1e-10)


def test_jacobians_and_hessian_match_torch_func():
    x = np.array([0.2, -1.3, 0.7])
    fns = [lambda v: v.sin() * v.sum(), lambda v: (v.reshape(3, 1) @ v.reshape(1, 3)).exp()]
    for f in fns:
        for ours, theirs in ((ug.jacrev, tf.jacrev), (ug.jacfwd, tf.jacfwd)):
            assert_same(theirs(f)(torch.tensor(x)), ours(f)(ug.tensor(x)), rtol=1e-10, atol=1e-12)
    s = lambda v: (v.tanh() ** 3).sum() * v.prod()  # noqa: E731
    assert_same(tf.hessian(s)(torch.tensor(x)), ug.hessian(s)(ug.tensor(x)), rtol=1e-9, atol=1e-10)
    assert_same(tf.jacfwd(tf.jacrev(s))(torch.tensor(x)), ug.jacfwd(ug.jacrev(s))(ug.tensor(x)), rtol=1e-9, atol=1e-10)


def test_vjp_and_jvp_match_torch_func():
    x, t = np.array([0.5, 1.5, -2.0]), np.array([1.0, -0.5, 2.0])
    f = lambda v: (v.exp() * v, v.sum())  # noqa: E731
    out_t, pull_t = tf.vjp(f, torch.tensor(x))
    out_u, pull_u = ug.vjp(f, ug.tensor(x))
    assert_same(out_t, out_u)
    cot = (np.array([1.0, 2.0, 3.0]), np.array(0.5))
    assert_same(pull_t(tuple(map(torch.tensor, cot))), pull_u(tuple(map(ug.tensor, cot))))
    assert_same(pull_t(tuple(map(torch.tensor, cot))), pull_u(tuple(map(ug.tensor, cot))))  # callable again
    assert_same(tf.jvp(f, (torch.tensor(x),), (torch.tensor(t),)), ug.jvp(f, (ug.tensor(x),), (ug.tensor(t),)))


def test_transforms_are_pure():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    ug.grad(lambda v: (v * v).sum())(x)
    ug.value_and_grad(lambda v: v.exp().sum())(x)
    assert x.grad is None
    w = ug.tensor([3.0])
    ug.grad(lambda v: (v * w).sum())(ug.tensor([1.0]))
    assert not w.requires_grad and w.grad is None


def test_transform_errors():
    with pytest.raises(TypeError, match="single-element"):
        ug.grad(lambda v: v * 2)(ug.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        ug.grad(lambda v: v.sum())(ug.tensor([1, 2]))
    with pytest.raises(IndexError):
        ug.grad(lambda a: a, argnums=3)(ug.tensor(1.0))
    assert ug.grad(lambda a, b: (a * 2).sum(), argnums=1)(ug.tensor(1.0), ug.tensor(2.0)).item() == 0.0


def test_tape_sources_list_dict_and_persistence():
    w, b = ug.tensor([[1.0, 2.0], [3.0, 4.0]]), ug.tensor([0.5, -0.5])
    x = ug.tensor([[1.0, -1.0]])
    with ug.GradientTape(persistent=True) as tape:
        tape.watch([w, b])
        y = ((x @ w + b) ** 2).sum()
        z = y * 3
    gw, gb = tape.gradient(y, [w, b])
    d = tape.gradient(z, {"w": w, "b": b})
    assert_same(gw * 3, d["w"])
    assert_same(gb * 3, d["b"])
    xt, wt, bt = (torch.tensor(v.numpy(), requires_grad=True) for v in (x, w, b))
    ((xt @ wt + bt) ** 2).sum().backward()
    assert_same(wt.grad, gw)
    assert_same(bt.grad, gb)
    with ug.GradientTape() as once:
        once.watch(w)
        y = (w * w).sum()
    once.gradient(y, w)
    with pytest.raises(RuntimeError, match="non-persistent"):
        once.gradient(y, w)


def test_tape_output_gradients_unused_sources_and_stop_recording():
    x, u = ug.tensor([1.0, 2.0]), ug.tensor([5.0])
    with ug.GradientTape() as tape:
        tape.watch([x, u])
        y = x * x
        with tape.stop_recording():
            z = x * 10
    gx, gu = tape.gradient(y, [x, u], output_gradients=ug.tensor([1.0, 3.0]))
    assert gx.tolist() == [2.0, 12.0] and gu is None
    assert not z.requires_grad


def test_tape_watches_requires_grad_tensors_automatically_and_nests():
    v = ug.tensor(3.0, requires_grad=True)
    with ug.GradientTape() as outer:
        with ug.GradientTape() as inner:
            y = v ** 3
        dy = inner.gradient(y, v)
    d2y = outer.gradient(dy, v)
    assert (dy.item(), d2y.item()) == (27.0, 18.0)
    assert v.grad is None


def test_trees():
    tree = {"b": [1, (2, 3)], "a": None, "c": 4}
    leaves, d = ug.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4]
    assert ug.tree_unflatten(d, leaves) == tree
    assert ug.tree_map(lambda v: v * 10, tree) == {"b": [10, (20, 30)], "a": None, "c": 40}
    with pytest.raises(ValueError):
        ug.tree_map(lambda a, b: a, [1, 2], [1])


def test_vmap_matches_torch_func():
    rng = np.random.default_rng(3)
    w, xs, ys = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))

    def loss(w, x, y):
        return ((x @ w - y) ** 2).sum()

    # Per-example gradients, the classic use.
    per_t = tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))(torch.tensor(w), torch.tensor(xs), torch.tensor(ys))
    per_u = ug.vmap(ug.grad(loss), in_axes=(None, 0, 0))(ug.tensor(w), ug.tensor(xs), ug.tensor(ys))
    assert_same(per_t, per_u, rtol=1e-12, atol=1e-12)
    # grad of a vmapped function, out_axes, nested vmap and in_axes other than 0.
    f = lambda v: v.sin().sum()  # noqa: E731
    assert_same(tf.grad(lambda x: tf.vmap(f)(x).sum())(torch.tensor(xs)),
                ug.grad(lambda x: ug.vmap(f)(x).sum())(ug.tensor(xs)))
    assert_same(tf.vmap(lambda v: v * 2, out_dims=1)(torch.tensor(xs)), ug.vmap(lambda v: v * 2, out_axes=1)(ug.tensor(xs)))
    assert_same(tf.vmap(tf.vmap(lambda a: a.exp()))(torch.tensor(xs)), ug.vmap(ug.vmap(lambda a: a.exp()))(ug.tensor(xs)))
    v = ys[:, 0].copy()
    assert_same(tf.vmap(lambda a, b: a @ b, in_dims=(1, None))(torch.tensor(xs), torch.tensor(v)),
                ug.vmap(lambda a, b: a @ b, in_axes=(1, None))(ug.tensor(xs), ug.tensor(v)))
    with pytest.raises(ValueError):
        ug.vmap(lambda a, b: a + b)(ug.zeros(3), ug.zeros(4))


VMAP_CASES = [
    ("unary", lambda x, y: x.exp() + x.tanh().sigmoid()),
    ("binary broadcast", lambda x, y: x * y[0] - x / (y.abs() + 1) + 2.5),
    ("reductions", lambda x, y: (x.sum(0), x.mean(-1), x.amax(1), x.var(0), x.norm(), x.logsumexp(1))),
    ("softmax, cumsum", lambda x, y: (x.softmax(-1), x.log_softmax(0), x.cumsum(1))),
    ("max with indices", lambda x, y: x.max(dim=1).values),
    ("views", lambda x, y: (x.reshape(-1), x.t(), x.unsqueeze(0).squeeze(0), x[1], x[:, ::2], x.flatten(),
                            x.diagonal(), x.expand(2, 3, 4), x.transpose(0, 1).contiguous())),
    ("matmul", lambda x, y: (x @ y.t(), x @ x.t(), (x.unsqueeze(0) @ y.t().unsqueeze(0)).squeeze(0))),
    ("joins, where, clamp", lambda x, y: (ug_or_torch(x).cat([x, y], 0), ug_or_torch(x).stack([x, y]),
                                          ug_or_torch(x).where(x > 0, x, y), x.clamp(-0.5, 0.5), x.to(y.dtype))),
    ("index_select", lambda x, y: x.index_select(1, ug_or_torch(x).tensor([3, 0, 3]))),
    ("sort, topk", lambda x, y: (x.sort(dim=1).values, x.argsort(dim=0), x.topk(2, dim=-1).values)),
]


def ug_or_torch(t):
    return torch if isinstance(t, torch.Tensor) else ug


@pytest.mark.parametrize("name,f", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_batching_rules_match_torch_func(name, f):
    rng = np.random.default_rng(7)
    xs, ys = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3, 4))
    before = ug._C._functional.vmap_fallbacks()
    out_u = ug.vmap(f)(ug.tensor(xs), ug.tensor(ys))
    assert ug._C._functional.vmap_fallbacks() == before, "an op fell back to the per-example loop"
    out_t = tf.vmap(f)(torch.tensor(xs), torch.tensor(ys))
    assert_same(out_t, out_u, rtol=1e-10, atol=1e-12)
    # with one argument shared, and the batch dim elsewhere
    out_u = ug.vmap(f, in_axes=(1, None))(ug.tensor(xs.transpose(1, 0, 2).copy()), ug.tensor(ys[0]))
    out_t = tf.vmap(f, in_dims=(1, None))(torch.tensor(xs.transpose(1, 0, 2).copy()), torch.tensor(ys[0]))
    assert_same(out_t, out_u, rtol=1e-10, atol=1e-12)


def test_vmap_of_grad_is_batched_and_matches_torch_func():
    rng = np.random.default_rng(4)
    params = {"w1": rng.normal(size=(6, 8)), "b1": rng.normal(size=(8,)), "w2": rng.normal(size=(8, 3))}
    xs, ys = rng.normal(size=(10, 6)), rng.normal(size=(10, 3))

    def loss(p, x, y):
        h = (x @ p["w1"] + p["b1"]).tanh()
        return ((h @ p["w2"] - y) ** 2).mean() + (h.softmax(-1) * h).sum()

    before = ug._C._functional.vmap_fallbacks()
    per_u = ug.vmap(ug.grad(loss), in_axes=(None, 0, 0))({k: ug.tensor(v) for k, v in params.items()},
                                                         ug.tensor(xs), ug.tensor(ys))
    assert ug._C._functional.vmap_fallbacks() == before
    per_t = tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))({k: torch.tensor(v) for k, v in params.items()},
                                                         torch.tensor(xs), torch.tensor(ys))
    for k in params:
        assert_same(per_t[k], per_u[k], rtol=1e-10, atol=1e-12)


def test_vmap_falls_back_for_ops_without_a_rule():
    xs = ug.tensor(np.random.default_rng(5).normal(size=(4, 6)))
    before = ug._C._functional.vmap_fallbacks()
    picked = ug.vmap(lambda v: v[v > 0].sum() * 2)(xs)  # a data-dependent shape: no batching rule
    assert ug._C._functional.vmap_fallbacks() == before + 1
    expected = [row[row > 0].sum() * 2 for row in xs.numpy()]
    np.testing.assert_allclose(picked.numpy(), expected, rtol=8 * np.finfo(np.float64).eps)


JVP_CASES = [
    ("elementwise", lambda x, y: x.exp() * y.tanh() + (x / (y.abs() + 1)).sigmoid() - x ** 3),
    ("reductions", lambda x, y: (x.sum(0), x.mean(-1), x.amax(1), x.prod(1), x.var(0), x.norm(), x.logsumexp(1))),
    ("softmax, scans", lambda x, y: (x.softmax(-1), x.log_softmax(0), x.cumsum(1), x.cumprod(0))),
    ("views", lambda x, y: (x.t(), x.reshape(-1)[::2], x[1:, None, :2].expand(2, 3, 2), x.permute(1, 0).flatten())),
    ("matmul", lambda x, y: (x @ y.t(), x.t() @ y)),
    ("indexing", lambda x, y: (x[ug_or_torch(x).tensor([2, 0])], x.gather(1, ug_or_torch(x).tensor([[0, 3], [1, 1], [2, 0]])),
                               x.index_select(1, ug_or_torch(x).tensor([3, 3])), x.max(dim=1).values,
                               x.sort(dim=1).values)),
    ("joins, where", lambda x, y: (ug_or_torch(x).cat([x, y], 1), ug_or_torch(x).where(x > 0, x, y * 2))),
]


@pytest.mark.parametrize("name,f", JVP_CASES, ids=[c[0] for c in JVP_CASES])
def test_forward_mode_rules_match_torch_func_jvp(name, f):
    rng = np.random.default_rng(11)
    x, y, tx, ty = (rng.normal(size=(3, 4)) for _ in range(4))
    assert_same(tf.jvp(f, (torch.tensor(x), torch.tensor(y)), (torch.tensor(tx), torch.tensor(ty))),
                ug.jvp(f, (ug.tensor(x), ug.tensor(y)), (ug.tensor(tx), ug.tensor(ty))), rtol=1e-10, atol=1e-12)


def test_forward_mode_is_one_forward_pass():
    # Forward mode needs no graph: it works inside no_grad, where a reverse-mode trick could not.
    def f(v):
        with ug.no_grad():
            return v.sin() * 2
    x, t = ug.tensor([0.3, 1.2], dtype=ug.float64), ug.tensor([1.0, -2.0], dtype=ug.float64)
    out, tangent = ug.jvp(f, (x,), (t,))
    assert np.allclose(tangent.numpy(), 2 * np.cos(x.numpy()) * t.numpy())


def test_forward_mode_nests_and_composes():
    rng = np.random.default_rng(12)
    x, t, u = (rng.normal(size=(4,)) for _ in range(3))
    f = lambda v: (v.sin() * v.exp()).sum()  # noqa: E731

    def second(m):  # d/du of (the jvp along t): a second directional derivative, forward over forward
        jv = lambda v: m.jvp(f, (v,), (m.tensor(t),))[1] if m is ug else tf.jvp(f, (v,), (torch.tensor(t),))[1]  # noqa: E731
        return (m.jvp if m is ug else tf.jvp)(jv, (m.tensor(x),), (m.tensor(u),))[1]
    assert_same(second(torch), second(ug), rtol=1e-10, atol=1e-12)
    # vmap of jvp, jvp of vmap
    g = lambda v: v.tanh() * 3  # noqa: E731
    xs, ts = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    per = ug.vmap(lambda a, b: ug.jvp(g, (a,), (b,))[1])(ug.tensor(xs), ug.tensor(ts))
    assert np.allclose(per.numpy(), 3 * (1 - np.tanh(xs) ** 2) * ts)
    _, jt = ug.jvp(ug.vmap(g), (ug.tensor(xs),), (ug.tensor(ts),))
    assert np.allclose(jt.numpy(), 3 * (1 - np.tanh(xs) ** 2) * ts)


def test_forward_mode_follows_inplace_ops():
    def f(v):
        y = v * 2
        y.add_(v.sin())
        y.mul_(3)
        return y
    rng = np.random.default_rng(13)
    x, t = rng.normal(size=(4,)), rng.normal(size=(4,))
    assert_same(tf.jvp(f, (torch.tensor(x),), (torch.tensor(t),)), ug.jvp(f, (ug.tensor(x),), (ug.tensor(t),)),
                rtol=1e-12, atol=1e-12)


def test_as_strided_under_jvp_takes_the_same_view_of_the_tangent():
    x = ug.arange(6.0, dtype=ug.float64)
    _, t = ug.jvp(lambda a: a.as_strided((2, 2), (1, 2), 1), (x,), (ug.arange(6.0, dtype=ug.float64) * 10,))
    xt = torch.arange(6.0, dtype=torch.float64)
    _, expected = tf.jvp(lambda a: a.as_strided((2, 2), (1, 2), 1), (xt,), (xt * 10,))
    assert_same(t, expected)


def test_as_strided_under_jvp_refuses_a_tangent_laid_out_otherwise():
    x = ug.zeros(3, 2, dtype=ug.float64)
    tangent = ug.ones(2, 3, dtype=ug.float64).t()  # the same shape, other strides
    with pytest.raises(RuntimeError, match=r"\[as_strided\] forward mode needs a tangent laid out"):
        ug.jvp(lambda a: a.as_strided((2, 2), (1, 2), 1), (x,), (tangent,))


def test_fill_under_jvp_drops_the_old_tangent():
    _, t = ug.jvp(lambda a: a.clone().fill_(2.0), (ug.tensor([1.0, 2.0]),), (ug.ones(2),))
    _, expected = tf.jvp(lambda a: a.clone().fill_(2.0), (torch.tensor([1.0, 2.0]),), (torch.ones(2),))
    assert_same(t, expected)


def test_to_device_with_copy_records_both_modes():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cpu", copy=True)
    assert y.requires_grad
    (y * 3).sum().backward()
    assert_same(x.grad, torch.tensor([3.0, 3.0]))
    _, t = ug.jvp(lambda a: a.to("cpu", copy=True), (ug.tensor([1.0]),), (ug.tensor([5.0]),))
    assert_same(t, torch.tensor([5.0]))
