"""The lazy layers against torch's: the printout and UninitializedParameter before the first
forward, the inferred shapes, the regular class and state dict keys after it, then outputs and
gradients with torch's values loaded; the initial values follow the regular layers' rules."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import check_layer

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [  # class, constructor arguments, first input's shape (small: every sum has at most 16 terms)
    ("LazyLinear", (3,), (2, 5)),
    ("LazyLinear", (3, False), (4, 2, 5)),
    ("LazyConv1d", (4, 2), (2, 3, 6)),
    ("LazyConv2d", (4, 2), (2, 3, 5, 5)),
    ("LazyConv2d", (4, 2), (3, 5, 5)),  # unbatched: the channels are dim 0
    ("LazyConv3d", (2, 2), (1, 2, 3, 3, 3)),
    ("LazyConvTranspose1d", (4, 2, 2), (2, 3, 4)),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 3, 3)),
    ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 2, 2)),
    ("LazyBatchNorm1d", (), (8, 3)),
    ("LazyBatchNorm2d", (), (2, 3, 2, 2)),
    ("LazyBatchNorm3d", (1e-3, None), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 3, 3)),
    ("LazyInstanceNorm3d", (1e-5, 0.1, False, False), (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize("name,args,shape", CASES)
def test_lazy_layer_matches_torch(name, args, shape):
    u, t = getattr(ug.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(u) == repr(t)
    assert u.has_uninitialized_params() == t.has_uninitialized_params()
    assert isinstance(u, ug.nn.LazyModuleMixin)
    if t.has_uninitialized_params():
        assert isinstance(u.weight if hasattr(t, "weight") and t.weight is not None else u.running_mean,
                          (ug.nn.UninitializedParameter, ug.nn.UninitializedBuffer))
    x = rand(*shape)
    u(ug.tensor(x))
    t(torch.tensor(x))
    assert type(u).__name__ == type(t).__name__ and type(u) is getattr(ug.nn, type(t).__name__)
    assert not isinstance(u, ug.nn.LazyModuleMixin) and not hasattr(u, "has_uninitialized_params")
    assert repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        assert tuple(u.state_dict()[k].shape) == tuple(v.shape), k
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t.state_dict().items()})
    check_layer(u, t, rand(*shape))


def test_lazy_linear_initial_values_follow_linear():
    ug.manual_seed(0)
    u = ug.nn.LazyLinear(64)
    u(ug.randn(2, 100))
    bound = 1 / np.sqrt(100)  # kaiming_uniform_(a=sqrt(5)) and the bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w, b = u.weight.numpy(), u.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) <= 5 * bound / np.sqrt(3) / np.sqrt(2 * w.size)
    assert u.weight.requires_grad and isinstance(u.weight, ug.nn.Parameter)


def test_lazy_layers_in_a_container_and_dtype():
    model = ug.nn.Sequential(ug.nn.LazyConv2d(4, 3), ug.nn.LazyBatchNorm2d(), ug.nn.ReLU(), ug.nn.Flatten(),
                             ug.nn.LazyLinear(2))
    y = model(ug.randn(2, 3, 6, 6))
    assert tuple(y.shape) == (2, 2)
    assert repr(model[0]).startswith("Conv2d(3, 4") and repr(model[4]).startswith("Linear(in_features=64")
    # Called from C++, the layers became regular at the first attribute read.
    assert model[0].weight.dtype == ug.float32 and type(model[0]) is ug.nn.Conv2d
    assert sum(p.numel() for p in model.parameters()) == 4 * 3 * 9 + 4 + 4 + 4 + 64 * 2 + 2


def test_lazy_errors():
    with pytest.raises(RuntimeError, match="uninitialized"):
        ug.nn.LazyLinear(3).weight.shape
    with pytest.raises(ValueError, match="groups"):
        ug.nn.LazyConv2d(4, 3, groups=2)(ug.randn(1, 3, 5, 5))
    with pytest.raises(ValueError, match="4D"):
        ug.nn.LazyConv2d(4, 3)(ug.randn(5, 5))


def test_deepcopy_before_the_first_forward():
    import copy

    u = ug.nn.LazyConv2d(4, 3)
    v = copy.deepcopy(u)
    assert type(v) is type(u) and repr(v) == repr(u) and v.has_uninitialized_params()
    v(ug.randn(1, 2, 5, 5))
    assert type(v) is ug.nn.Conv2d and tuple(v.weight.shape) == (4, 2, 3, 3)
    assert u.has_uninitialized_params() and isinstance(u.weight, ug.nn.UninitializedParameter)


@pytest.mark.parametrize("name,args,shape", CASES)
def test_loading_a_state_makes_the_tensors(name, args, shape):
    t = getattr(torch.nn, name)(*args)
    t(torch.tensor(rand(*shape)))  # torch's regular layer with its shapes
    u = getattr(ug.nn, name)(*args)
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert list(u.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(u.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    check_layer(u, t, rand(*shape))
    assert type(u).__name__ == type(t).__name__


def test_loading_the_other_conv_layouts():
    for u, t in [(ug.nn.LazyConv2d(4, 3, padding=2, dilation=2, groups=2, padding_mode="reflect"),
                  torch.nn.Conv2d(6, 4, 3, padding=2, dilation=2, groups=2, padding_mode="reflect")),
                 (ug.nn.LazyConvTranspose2d(4, 3, stride=2, padding=3, groups=2),
                  torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=3, groups=2))]:
        u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
        assert [tuple(p.shape) for p in u.parameters()] == [tuple(p.shape) for p in t.parameters()]
        assert repr(u) == repr(t)


@pytest.mark.parametrize("name,args,shape", CASES)
def test_loading_a_state_into_a_container_makes_the_tensors_of_its_lazy_layers(name, args, shape):
    # torch's _lazy_load_hook runs for a lazy layer anywhere under the module that loads (a
    # checkpoint restored into a freshly built model before any forward); the keys are prefixed.
    t = torch.nn.Sequential(torch.nn.Identity(), getattr(torch.nn, name)(*args))
    t(torch.tensor(rand(*shape)))
    u = ug.nn.Sequential(ug.nn.Identity(), getattr(ug.nn, name)(*args))
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert list(u.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(u.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    assert repr(u[1]) == repr(t[1])
    check_layer(u, t, rand(*shape))
    assert type(u[1]).__name__ == type(t[1]).__name__  # the Python class follows at the first call


def test_a_mismatched_state_still_fails_to_load_into_a_lazy_container():
    u = ug.nn.Sequential(ug.nn.LazyLinear(3))
    with pytest.raises(ValueError, match=r'size mismatch for "0.bias"'):
        u.load_state_dict({"0.weight": ug.zeros(3, 5), "0.bias": ug.zeros(4)})
    with pytest.raises(ValueError, match=r'unexpected keys: "1.weight"'):
        ug.nn.Sequential(ug.nn.LazyLinear(3)).load_state_dict({"0.weight": ug.zeros(3, 5), "0.bias": ug.zeros(3),
                                                               "1.weight": ug.zeros(1)})
