"""What JAX's transforms take, against jax 0.10.2: jax.lax.stop_gradient takes a pytree (each
array leaf cut from differentiation); grad, value_and_grad and the Jacobians refuse integer
and boolean inputs (Python ints and bools, numpy integers, integer tensors) with a TypeError,
where making them floats would differentiate them silently."""
import os

import numpy as np
import pytest

import unigrad as ug


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def test_stop_gradient_of_a_pytree_matches_jax(jax):
    def f(lib, lax, w):
        cut = lax.stop_gradient({"a": w * 2, "b": (w * w, None), "n": 3})
        return (cut["a"] * w + cut["b"][0] * w + w * w).sum() * cut["n"]

    w = np.array([1.0, -2.0, 0.5], np.float32)
    got = ug.grad(lambda w: f(ug, ug.lax, w))(ug.tensor(w))
    want = jax.grad(lambda w: f(jax.numpy, jax.lax, w))(jax.numpy.asarray(w))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)
    tree = ug.lax.stop_gradient({"a": ug.ones(2, requires_grad=True), "b": (ug.zeros(1), "name", 2.5)})
    assert not tree["a"].requires_grad and tree["b"][1:] == ("name", 2.5)
    assert not ug.lax.stop_gradient(ug.ones(2, requires_grad=True)).requires_grad  # a tensor, as before


INTEGRAL = {
    "Python int": 3,
    "Python bool": True,
    "numpy int32 scalar": np.int32(3),
    "numpy int array": np.arange(3),
    "numpy bool array": np.ones(2, bool),
    "int leaf of a dict": {"w": 1.5, "n": 3},
}


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev", "jacfwd"])
@pytest.mark.parametrize("name", list(INTEGRAL))
def test_transforms_refuse_integer_inputs_as_jax_does(jax, transform, name):
    x = INTEGRAL[name]

    def f(v):  # the leaves (jax arrays, or the tensors a unigrad transform makes) times 2, summed
        return sum(leaf * 2.0 for leaf in jax.tree_util.tree_leaves(v))

    with pytest.raises(TypeError, match="requires real"):
        getattr(jax, transform)(lambda v: f(v).sum())(x)
    with pytest.raises(TypeError, match=r"\[(grad|jacobian)\] argument 0 holds .*only floating point and complex inputs"):
        getattr(ug, transform)(lambda v: f(v).sum())(x)


def test_integer_tensors_and_undifferentiated_ints(jax):
    with pytest.raises(TypeError, match=r"\[grad\] argument 1 holds a tensor of dtype int64"):
        ug.grad(lambda x, n: (x * n).sum(), argnums=(0, 1))(ug.ones(2), ug.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"\[jacobian\] argument 0 holds a tensor of dtype int32"):
        ug.jacrev(lambda x: x * 2)(ug.tensor([1, 2], dtype=ug.int32))
    # an int argument that is not differentiated, and floats of every kind, are fine in both
    assert float(ug.grad(lambda x, n: x * n)(2.0, 3)) == float(jax.grad(lambda x, n: x * n)(2.0, 3)) == 3.0
    np.testing.assert_array_equal(ug.grad(lambda x: (x * 2).sum())(np.ones(2)).numpy(),
                                  np.asarray(jax.grad(lambda x: (x * 2).sum())(np.ones(2))))
