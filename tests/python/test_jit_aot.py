"""JAX's ahead-of-time path (jit(f).lower(*args).compile(), make_jaxpr), an array's
block_until_ready, pmap on a process that joined no group (JAX on one device), torch.jit.save
of a traced module and paddle.jit.to_static/save/load with InputSpecs: against JAX 0.10.2,
torch 2.13 and ONNX Runtime where they give values."""
import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime
import pytest
import torch

import unigrad as ug


def f(m):
    return lambda n, x, y: m.sin(x * n) @ y + n


def test_a_lowered_and_compiled_call_is_jaxs():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    want = jax.jit(f(jnp), static_argnums=0).lower(7, x, y).compile()(x, y)  # the static 7 stays lowered
    compiled = ug.jit(f(ug), static_argnums=0).lower(7, ug.tensor(x), ug.tensor(y)).compile()
    got = compiled(ug.tensor(x), ug.tensor(y))
    # 3 products of float32 values below ~1: a few ulps of the sum, between any two orders
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert compiled.compile() is compiled
    assert "sin" in compiled.as_text() and "matmul" in str(compiled)  # prints as the program


def test_a_compiled_program_refuses_another_signature_as_jax_does():
    compiled = ug.jit(f(ug), static_argnums=0).lower(7, ug.ones(4, 3), ug.ones(3, 2)).compile()
    with pytest.raises(TypeError):
        jax.jit(f(jnp), static_argnums=0).lower(7, jnp.ones((4, 3)), jnp.ones((3, 2))).compile()(jnp.ones((5, 3)),
                                                                                              jnp.ones((3, 2)))
    with pytest.raises(TypeError, match=r"lowered for x: float32\[4, 3\].*called with float32\[5, 3\]"):
        compiled(ug.ones(5, 3), ug.ones(3, 2))
    with pytest.raises(TypeError, match="y is missing"):
        compiled(ug.ones(4, 3))


def test_make_jaxpr_gives_the_program_of_the_call():
    program = ug.make_jaxpr(lambda a: (a.exp() * 2).sum())(ug.ones(3))
    text = str(program)
    assert "exp" in text and "sum" in text and "float32[3]" in text
    assert program.num_inputs == 1


def test_an_array_is_ready_when_an_op_returns():
    x = ug.ones(3) * 2
    assert x.block_until_ready() is x
    tree = {"a": x}
    assert ug.block_until_ready(tree) is tree


@pytest.mark.parametrize("axis_name", [None, "i"])
def test_pmap_on_one_process_is_jaxs_on_one_device(axis_name):
    assert jax.local_device_count() == 1  # the reference: jax on this CPU, one device
    x = np.random.default_rng(1).standard_normal((1, 3)).astype(np.float32)

    def step(m, lax):
        def body(a, k):
            if axis_name is None:
                return a * k
            return lax.psum(a, "i") * k + lax.pmean(a, "i") + lax.axis_index("i"), lax.all_gather(a, "i")
        return body

    want = jax.pmap(step(jnp, jax.lax), axis_name=axis_name, static_broadcasted_argnums=1)(x, 3)
    got = ug.pmap(step(ug, ug.lax), axis_name=axis_name)(ug.tensor(x), 3)
    for w, g in zip(jax.tree_util.tree_leaves(want), ug.tree_util.tree_leaves(got)):
        assert tuple(g.shape) == w.shape
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[pmap\] a mapped argument needs a leading axis of size 1"):
        ug.pmap(lambda a: a)(ug.ones(2, 3))


def test_torch_jit_save_of_a_traced_module(tmp_path):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    model = ug.nn.Sequential(ug.nn.Linear(3, 2), ug.nn.Tanh())
    model.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    torch.jit.save(torch.jit.trace(reference, torch.tensor(x[:1])), tmp_path / "m.pt")
    ug.jit.save(ug.jit.trace(model, ug.tensor(x[:1])), tmp_path / "m.onnx")  # torch's spelling, an ONNX file
    want = torch.jit.load(tmp_path / "m.pt")(torch.tensor(x)).detach().numpy()
    # a 3-term product and tanh in float32: a few ulps
    np.testing.assert_allclose(ug.jit.load(tmp_path / "m.onnx")(ug.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def mlp_bound(model, x):
    """What two correct float32 evaluations of the MLP may differ by, element by element: each
    n-term product n·eps·Σ|terms| (784 terms into the hidden layer, 32 out), the hidden layer's
    bound carried through |W2| (relu does not grow it)."""
    eps = np.finfo(np.float32).eps
    w1, w2 = model[0].weight.detach().numpy(), model[2].weight.detach().numpy()
    xs = np.abs(x.numpy())
    hidden = 784 * eps * (xs @ np.abs(w1).T + np.abs(model[0].bias.detach().numpy()))
    h = np.abs(model[1](model[0](x)).detach().numpy())
    return hidden @ np.abs(w2).T + 32 * eps * (h @ np.abs(w2).T + np.abs(model[2].bias.detach().numpy()))


def test_paddle_to_static_and_save_with_input_specs(tmp_path):
    # paddle.jit.save(paddle.jit.to_static(model), "mlp", input_spec=[InputSpec([None, 784])]) and
    # paddle.jit.load("mlp"): the path is a prefix, the None dims any size in the file.
    model = ug.nn.Sequential(ug.nn.Linear(784, 32), ug.nn.ReLU(), ug.nn.Linear(32, 10))
    spec = [ug.static.InputSpec([None, 784], "float32")]
    ug.jit.save(ug.jit.to_static(model), tmp_path / "mlp", input_spec=spec)
    assert (tmp_path / "mlp.onnx").exists()
    x = ug.randn(5, 784)
    want, bound = model(x).detach().numpy(), mlp_bound(model, x)
    np.testing.assert_array_less(np.abs(ug.jit.load(tmp_path / "mlp")(x).numpy() - want), bound)
    ug.jit.save(ug.jit.to_static(model, input_spec=spec), tmp_path / "same.onnx")  # the spec given to to_static
    session = onnxruntime.InferenceSession(str(tmp_path / "same.onnx"))
    assert session.get_inputs()[0].shape == ["batch", 784]
    np.testing.assert_array_less(np.abs(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0] - want),
                                 bound)  # ONNX Runtime's Gemm sums in its own order


def test_input_spec_dims_of_any_size_follow_into_the_outputs(tmp_path):
    # a sequence model: [None, None] token ids; the output's two first dims follow them
    model = ug.nn.Sequential(ug.nn.Embedding(20, 8), ug.nn.Linear(8, 3))
    ug.jit.save(model, tmp_path / "seq", input_spec=[ug.static.InputSpec([None, -1], "int64")])
    session = onnxruntime.InferenceSession(str(tmp_path / "seq.onnx"))
    assert session.get_inputs()[0].shape == ["batch", "input_0_dim1"]
    assert session.get_outputs()[0].shape == ["batch", "output_0_dim1", 3]
    ids = ug.randint(0, 20, (2, 7))
    # an embedding row through an 8-term product: 8·eps·Σ|terms| each
    rows = np.abs(model[0](ids).detach().numpy()) @ np.abs(model[1].weight.detach().numpy()).T
    bound = 8 * np.finfo(np.float32).eps * (rows + np.abs(model[1].bias.detach().numpy()))
    np.testing.assert_array_less(np.abs(session.run(None, {session.get_inputs()[0].name: ids.numpy()})[0]
                                        - model(ids).detach().numpy()), bound)
