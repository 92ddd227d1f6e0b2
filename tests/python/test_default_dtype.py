"""ug.set_default_dtype / ug.get_default_dtype against torch.set_default_dtype: the dtype of every
factory, Python float, parameter and float result from integers, under each floating default."""
import numpy as np
import pytest
import torch

import unigrad as ug

DEFAULTS = ["float64", "float16", "bfloat16", "float32"]


@pytest.fixture
def default(request):
    """Sets the default in both frameworks for one test, and puts float32 back after it."""
    name = request.param
    ug.set_default_dtype(getattr(ug, name))
    torch.set_default_dtype(getattr(torch, name))
    yield name
    ug.set_default_dtype(ug.float32)
    torch.set_default_dtype(torch.float32)


def name_of(dtype):
    return str(dtype).rsplit(".", 1)[-1]


# (what, the expression in either framework): each made fresh under the default being tested
CASES = [
    ("zeros", lambda m: m.zeros(2)),
    ("ones", lambda m: m.ones(2, 3)),
    ("empty", lambda m: m.empty(2)),
    ("full of a float", lambda m: m.full((2,), 1.5)),
    ("full of an int", lambda m: m.full((2,), 3)),
    ("rand", lambda m: m.rand(3)),
    ("randn", lambda m: m.randn(3)),
    ("arange of floats", lambda m: m.arange(0, 1, 0.25)),
    ("arange of ints", lambda m: m.arange(4)),
    ("linspace", lambda m: m.linspace(0, 1, 5)),
    ("logspace", lambda m: m.logspace(0, 1, 5)),
    ("eye", lambda m: m.eye(3)),
    ("tensor of floats", lambda m: m.tensor([1.5, 2.0])),
    ("tensor of a float", lambda m: m.tensor(2.5)),
    ("empty tensor", lambda m: m.tensor([])),
    ("tensor of ints", lambda m: m.tensor([1, 2])),
    ("tensor of a float32 array", lambda m: m.tensor(np.zeros(2, np.float32))),
    ("from_numpy", lambda m: m.from_numpy(np.zeros(2, np.float32))),
    ("int / int", lambda m: m.tensor([1, 2]) / 2),
    ("int * float", lambda m: m.tensor([1, 2]) * 1.5),
    ("bool + float", lambda m: m.tensor([True]) + 0.5),
    ("float32 * float", lambda m: m.ones(2, dtype=m.float32) * 2.5),
    ("sqrt of ints", lambda m: m.sqrt(m.tensor([4, 9]))),
    ("erfc of ints", lambda m: m.erfc(m.tensor([1, 2]))),
    ("zeros_like of ints", lambda m: m.zeros_like(m.tensor([1, 2]))),
    ("Linear", lambda m: m.nn.Linear(3, 2).weight),
    ("Conv2d", lambda m: m.nn.Conv2d(1, 2, 3).weight),
    ("LayerNorm", lambda m: m.nn.LayerNorm(4).weight),
    ("Embedding", lambda m: m.nn.Embedding(5, 2).weight),
    ("LSTM", lambda m: m.nn.LSTM(3, 4).weight_ih_l0),
    ("GRUCell", lambda m: m.nn.GRUCell(3, 4).weight_hh),
    ("causal mask", lambda m: m.nn.Transformer.generate_square_subsequent_mask(3)),
]


@pytest.mark.parametrize("default", DEFAULTS, indirect=True)
@pytest.mark.parametrize("what,make", CASES, ids=[c[0] for c in CASES])
def test_the_dtype_follows_the_default_as_in_torch(default, what, make):
    assert name_of(make(ug).dtype) == name_of(make(torch).dtype)


@pytest.mark.parametrize("default", DEFAULTS, indirect=True)
def test_finfo_without_a_dtype_describes_the_default(default):
    assert (ug.finfo().bits, ug.finfo().eps, ug.finfo().max) == (torch.finfo().bits, torch.finfo().eps,
                                                                 torch.finfo().max)


@pytest.mark.parametrize("default", ["float64"], indirect=True)
def test_values_are_made_in_the_default_dtype_not_rounded_through_float32(default):
    # literals, fills and one division are correctly rounded: the same bits anywhere
    for make in (lambda m: m.tensor([0.1, 1 / 3]), lambda m: m.full((2,), 0.1), lambda m: m.tensor([1, 3]) / 3):
        np.testing.assert_array_equal(make(ug).numpy(), make(torch).numpy())
    # ranges are start + i * step (two roundings, one where a kernel fuses them): 2 eps of each
    # value, and far below float32's 6e-8, which values rounded through float32 would miss by
    for make in (lambda m: m.linspace(0, 1, 7), lambda m: m.arange(0, 1, 0.1)):
        ours, theirs = make(ug).numpy(), make(torch).numpy()
        assert ours.dtype == np.float64
        np.testing.assert_allclose(ours, theirs, rtol=2 * np.finfo(np.float64).eps, atol=0)


@pytest.mark.parametrize("default", ["float64"], indirect=True)
def test_jax_style_draws_and_a_float64_training_step(default):
    key = ug.random.key(0)
    assert ug.random.normal(key, (3,)).dtype == ug.float64
    assert ug.random.uniform(key, (3,)).dtype == ug.float64
    model = ug.nn.Sequential(ug.nn.Linear(4, 3), ug.nn.Tanh(), ug.nn.Linear(3, 1))
    x, y = ug.randn(8, 4), ug.randn(8, 1)
    ug.nn.functional.mse_loss(model(x), y).backward()
    assert all(p.grad.dtype == ug.float64 for p in model.parameters())


@pytest.mark.parametrize("default", ["float64"], indirect=True)
def test_a_jitted_function_is_traced_again_when_the_default_changes(default):
    f = ug.jit(lambda x: x + ug.ones(2))
    x = ug.tensor([1, 2])
    assert f(x).dtype == ug.float64
    ug.set_default_dtype(ug.float32)
    assert f(x).dtype == ug.float32
    assert f.cache_info().traces == 2
    ug.set_default_dtype(ug.float64)
    assert f(x).dtype == ug.float64
    assert f.cache_info().traces == 2


def test_get_default_dtype_and_the_error_for_a_non_floating_dtype():
    assert ug.get_default_dtype() == ug.float32
    for bad in (ug.int32, ug.int64, ug.bool):
        with pytest.raises(TypeError, match=r"set_default_dtype.*floating-point.*" + name_of(bad)):
            ug.set_default_dtype(bad)
    assert ug.get_default_dtype() == ug.float32


@pytest.mark.parametrize("floatx", ["float64", "float16"])
def test_keras_floatx_is_the_default_dtype(keras, floatx):
    try:
        keras.config.set_floatx(floatx)
        keras.config.set_dtype_policy(floatx)  # Keras keeps the policy it made from floatx at its first layer
        ug.keras.config.set_floatx(floatx)
        assert ug.keras.backend.floatx() == keras.config.floatx() == floatx
        theirs = keras.layers.Dense(3)
        theirs.build((2, 4))
        ours = ug.nn.Dense(3)
        ours(ug.ones(2, 4, dtype=getattr(ug, floatx)))
        assert name_of(ours.weight.dtype) == theirs.kernel.dtype == floatx
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
        ug.keras.config.set_floatx("float32")
    with pytest.raises(ValueError, match="floatx"):
        keras.config.set_floatx("int32")
    with pytest.raises(ValueError, match="floatx"):
        ug.keras.config.set_floatx("int32")
    assert ug.get_default_dtype() == ug.float32


OPTIMIZERS = [("Adam", {}), ("AdamW", {}), ("Adagrad", {}), ("RMSprop", {}), ("SGD", {"momentum": 0.9})]


@pytest.mark.parametrize("default", ["float64", "float32", "bfloat16"], indirect=True)
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_the_optimizer_state_and_step_counter_follow_torch(default, name, kwargs):
    # torch keeps a float64 step counter under a float64 default (_get_scalar_dtype), float32
    # otherwise; the other state takes the parameter's dtype.
    w = np.random.default_rng(0).standard_normal(3)
    ours = ug.tensor(w.astype(np.float32) if default == "bfloat16" else w, requires_grad=True)
    theirs = torch.tensor(ours.detach().numpy(), requires_grad=True)
    opt_ug = getattr(ug.optim, name)([ours], lr=0.1, **kwargs)
    opt_torch = getattr(torch.optim, name)([theirs], lr=0.1, **kwargs)
    for _ in range(3):
        ours.grad, theirs.grad = ug.ones_like(ours), torch.ones_like(theirs)
        opt_ug.step()
        opt_torch.step()
    state_ug, state_torch = opt_ug.state_dict()["state"][0], opt_torch.state_dict()["state"][0]
    assert sorted(state_ug) == sorted(state_torch)
    for key, value in state_torch.items():
        assert name_of(state_ug[key].dtype) == name_of(value.dtype), key
        np.testing.assert_allclose(state_ug[key].numpy(), value.numpy(), rtol=1e-6)
    reloaded = getattr(ug.optim, name)([ours], lr=0.1, **kwargs)
    reloaded.load_state_dict(opt_ug.state_dict())
    assert {k: name_of(v.dtype) for k, v in reloaded.state_dict()["state"][0].items()} == \
        {k: name_of(v.dtype) for k, v in state_torch.items()}
