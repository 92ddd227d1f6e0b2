"""ug.func against torch.func (torch 2.13) on the same weights and data: per-sample gradients
(vmap of grad of a functional_call, the functorch tutorial's recipe), a model ensemble
(stack_module_state + vmap of functional_call), grad_and_value's order, linearize, chunked
vmap, and the errors. Each compared value is a short float32 sum (at most 16 terms) or its
gradient, so the two libraries agree to a few float32 roundings of their magnitudes."""
import numpy as np
import pytest
import torch
import torch.func as tf

import unigrad as ug

RNG = np.random.default_rng(0)


def pair_of_mlps():
    t = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    u = ug.nn.Sequential(ug.nn.Linear(6, 8), ug.nn.Tanh(), ug.nn.Linear(8, 3))
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, u


def close(got, want, scale=1.0):
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-5, atol=32 * 1.2e-7 * scale)


def test_per_sample_gradients_match_torch_func():
    t, u = pair_of_mlps()
    x, y = RNG.standard_normal((5, 6)).astype(np.float32), RNG.integers(0, 3, 5)

    def t_loss(params, x, y):
        return torch.nn.functional.cross_entropy(tf.functional_call(t, params, (x.unsqueeze(0),)), y.unsqueeze(0))

    def u_loss(params, x, y):
        return ug.nn.functional.cross_entropy(ug.func.functional_call(u, params, (x.unsqueeze(0),)), y.unsqueeze(0))
    want = tf.vmap(tf.grad(t_loss), in_dims=(None, 0, 0))(
        {k: v.detach() for k, v in t.named_parameters()}, torch.tensor(x), torch.tensor(y))
    got = ug.func.vmap(ug.func.grad(u_loss), in_dims=(None, 0, 0))(
        {k: v.detach() for k, v in u.named_parameters()}, ug.tensor(x), ug.tensor(y))
    assert sorted(got) == sorted(want)
    for name in want:
        assert tuple(got[name].shape) == tuple(want[name].shape) == (5, *t.get_parameter(name).shape)
        close(got[name].numpy(), want[name], scale=want[name].abs().max().item())


def test_an_ensemble_runs_as_in_torch_func():
    pairs = [pair_of_mlps() for _ in range(3)]
    t_params, t_buffers = tf.stack_module_state([t for t, _ in pairs])
    u_params, u_buffers = ug.func.stack_module_state([u for _, u in pairs])
    assert list(u_params) == list(t_params) and u_buffers == {} == t_buffers
    assert all(p.requires_grad and p.is_leaf for p in u_params.values())
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    base_t, base_u = pairs[0][0].to("meta"), pairs[0][1]
    want = tf.vmap(lambda p, b, x: tf.functional_call(base_t, (p, b), (x,)), in_dims=(0, 0, None))(
        t_params, t_buffers, torch.tensor(x))
    got = ug.func.vmap(lambda p, b, x: ug.func.functional_call(base_u, (p, b), (x,)), in_dims=(0, 0, None))(
        u_params, u_buffers, ug.tensor(x))
    close(got.numpy(), want, scale=want.abs().max().item())
    for i, (_, u) in enumerate(pairs):  # each slice is that model's own output; the models are unchanged
        np.testing.assert_allclose(got[i].numpy(), u(ug.tensor(x)).detach().numpy(), rtol=0, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Attempted to insert a get_attr Node")  # torch.func.linearize's own
def test_grad_and_value_linearize_and_chunked_vmap():
    x = RNG.standard_normal(7).astype(np.float32)

    def f(v):
        return (v.sin() * v).sum()
    grad_u, value_u = ug.func.grad_and_value(f)(ug.tensor(x))
    grad_t, value_t = tf.grad_and_value(f)(torch.tensor(x))
    close(grad_u.numpy(), grad_t)
    close(value_u.numpy(), value_t, scale=7.0)
    out_u, jvp_u = ug.func.linearize(lambda v: v.sin() * v, ug.tensor(x))
    out_t, jvp_t = tf.linearize(lambda v: v.sin() * v, torch.tensor(x))
    tangent = RNG.standard_normal(7).astype(np.float32)
    close(out_u.numpy(), out_t)
    close(jvp_u(ug.tensor(tangent)).numpy(), jvp_t(torch.tensor(tangent)), scale=4.0)
    xs = ug.tensor(RNG.standard_normal((10, 3)).astype(np.float32))
    whole = ug.func.vmap(lambda r: (r * r).sum(), in_dims=0)(xs)
    chunked = ug.func.vmap(lambda r: (r * r).sum(), in_dims=0, chunk_size=4)(xs)
    assert ug.equal(whole, chunked)


def test_errors_name_the_call():
    _, u = pair_of_mlps()
    with pytest.raises(RuntimeError, match=r"strict: missing key\(s\) 0.bias"):
        ug.func.functional_call(u, {k: v for k, v in u.named_parameters() if k != "0.bias"}, ug.ones(1, 6),
                                strict=True)
    with pytest.raises(ValueError, match="'0.weight' appeared in more than one"):
        ug.func.functional_call(u, ({"0.weight": ug.ones(8, 6)}, {"0.weight": ug.ones(8, 6)}), ug.ones(1, 6))
    with pytest.raises(RuntimeError, match="one type"):
        ug.func.stack_module_state([ug.nn.Linear(2, 2), ug.nn.Tanh()])


def test_linearize_matches_jax():
    import jax
    import jax.numpy as jnp
    x = RNG.standard_normal(5).astype(np.float32)
    tangent = RNG.standard_normal(5).astype(np.float32)
    out_u, f_jvp_u = ug.linearize(lambda v: (v.exp() * v).sum(), ug.tensor(x))
    out_j, f_jvp_j = jax.linearize(lambda v: (jnp.exp(v) * v).sum(), jnp.asarray(x))
    bound = 16 * 1.2e-7 * float(np.abs(np.exp(x) * (1 + np.abs(x))).sum() * np.abs(tangent).max())
    np.testing.assert_allclose(out_u.numpy(), np.asarray(out_j), rtol=1e-6, atol=bound)
    np.testing.assert_allclose(f_jvp_u(ug.tensor(tangent)).numpy(), np.asarray(f_jvp_j(jnp.asarray(tangent))),
                               rtol=1e-6, atol=bound)
    assert ug.func.linearize is ug.linearize


def test_vmap_never_writes_an_argument_twice_when_it_falls_back_to_one_call_per_example():
    # A value read as a Python number has no batching rule: vmap calls the function once per
    # example. A write it made into an argument before that would be made again, silently (b
    # would end 4, not 2): a clear error instead.
    xs = ug.randn(3, 4)

    def writes_then_falls_back(x, b):
        b.add_(1.0)
        return x * x.max().item() + b

    b = ug.ones(4)
    with pytest.raises(RuntimeError, match=r"\[vmap\] the function wrote into argument 1 in place.*clone\(\)"):
        ug.vmap(writes_then_falls_back, in_axes=(0, None))(xs, b)

    def falls_back(x, b):
        return x * x.max().item() + b

    want = np.stack([(x * x.max().item() + b).numpy() for x in xs])
    np.testing.assert_allclose(ug.vmap(falls_back, in_axes=(0, None))(xs, b).numpy(), want, rtol=1e-6)
    bt = torch.ones(4)
    tf.vmap(lambda x, b: (b.add_(1.0), x + b)[1], in_dims=(0, None))(torch.zeros(3, 4), bt)
    ub = ug.ones(4)
    ug.vmap(lambda x, b: (b.add_(1.0), x + b)[1], in_axes=(0, None))(ug.zeros(3, 4), ub)
    np.testing.assert_array_equal(ub.numpy(), bt.numpy())  # batched throughout: written once, as torch


def test_vmap_over_an_empty_batch_matches_jax():
    """No example in, none out, of each output's shape and dtype, as JAX's (vmap refused an
    empty batch dim); the per-example gradients and vmap of jit too. Where vmap would call the
    function once per example, no call can say the outputs' shapes: a clear error."""
    import jax
    import jax.numpy as jnp
    w, wj = ug.ones(3, 4), jnp.ones((3, 4))
    cases = [(lambda x: (x @ w).relu(), lambda x: jax.nn.relu(x @ wj)),
             (lambda x: (x.softmax(-1), x.argmax()), lambda x: (jax.nn.softmax(x, -1), x.argmax())),
             (ug.grad(lambda x: (x @ w).tanh().sum()), jax.grad(lambda x: jnp.tanh(x @ wj).sum())),
             (ug.jit(lambda x: x.cumsum(0)[1:] * 2), jax.jit(lambda x: x.cumsum(0)[1:] * 2))]
    for ours, theirs in cases:
        got = ug.tree_util.tree_leaves(ug.vmap(ours)(ug.ones(0, 3)))
        want = jax.tree_util.tree_leaves(jax.vmap(theirs)(jnp.ones((0, 3))))
        assert [tuple(g.shape) for g in got] == [w.shape for w in want]
        assert [str(g.dtype).split(".")[-1] for g in got] == [str(w.dtype).replace("int32", "int64") for w in want]

    def falls_back(x):
        return x * x.max().item()
    with pytest.raises(ValueError, match=r"\[vmap\] cannot map over an empty batch dim one example at a time"):
        ug.vmap(falls_back)(ug.ones(0, 3))
