"""More torch.nn modules in ug.nn: the activations, PReLU, CosineSimilarity and
PairwiseDistance, Unflatten, ParameterList and ParameterDict against torch.nn's: outputs, input
and parameter gradients, printouts, state_dict keys and the errors for bad arguments; and the
Keras activations by name against keras.activations."""
import os
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_close, check_layer

RNG = np.random.default_rng(0)


def rand(*shape, scale=3.0):
    """Inputs spread over the activations' kinks and curved parts."""
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def twins(ug_layer, torch_layer):
    ug_layer.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})
    return ug_layer, torch_layer


def both(name, *args, **kwargs):
    return getattr(ug.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


# (class, constructor arguments, input shape)
ACTIVATIONS = [
    ("ReLU6", (), {}, (4, 6)), ("ELU", (), {}, (4, 6)), ("ELU", (0.7,), {}, (4, 6)), ("SELU", (), {}, (4, 6)),
    ("CELU", (), {"alpha": 1.3}, (4, 6)), ("Mish", (), {}, (4, 6)), ("LogSigmoid", (), {}, (4, 6)),
    ("Softplus", (), {}, (4, 6)), ("Softplus", (2.0, 5.0), {}, (4, 6)), ("Softsign", (), {}, (4, 6)),
    ("Hardtanh", (), {}, (4, 6)), ("Hardtanh", (-0.5, 2.0), {}, (4, 6)), ("Hardsigmoid", (), {}, (4, 6)),
    ("Hardswish", (), {}, (4, 6)), ("GLU", (), {}, (3, 4, 6)), ("GLU", (1,), {}, (3, 4, 5)),
    ("Softmin", (1,), {}, (3, 5, 2)), ("Softmin", (), {}, (3, 5, 2)), ("Softmin", (), {}, (4, 6)),
    ("Tanhshrink", (), {}, (4, 6)), ("Threshold", (0.1, 20.0), {}, (4, 6)), ("Hardshrink", (), {}, (4, 6)),
    ("Hardshrink", (1.5,), {}, (4, 6)), ("Softshrink", (), {}, (4, 6)), ("Softshrink", (1.5,), {}, (4, 6)),
    ("PReLU", (), {}, (4, 6)), ("PReLU", (6, 0.1), {}, (4, 6, 3)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", ACTIVATIONS)
def test_activation_matches_torch(name, args, kwargs, shape):
    u, t = both(name, *args, **kwargs)
    if name == "PReLU":  # slopes of both signs, each its own
        with torch.no_grad():
            t.weight.uniform_(-1, 1)
        twins(u, t)
    with warnings.catch_warnings():  # torch's note that Softmin's implicit dim is deprecated
        warnings.simplefilter("ignore", UserWarning)
        # PReLU's slope gradient sums over every element of its channel.
        check_layer(u, t, rand(*shape), n={"weight": int(np.prod(shape)) // u.num_parameters} if name == "PReLU" else None)
    assert repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())


INPLACE = [("ReLU", {}), ("SiLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("ReLU6", {}), ("ELU", {"alpha": 0.5}),
           ("SELU", {}), ("CELU", {}), ("Mish", {}), ("Hardtanh", {}), ("Hardsigmoid", {}), ("Hardswish", {}),
           ("Threshold", {"threshold": 0.5, "value": -2.0})]


@pytest.mark.parametrize("name,kwargs", INPLACE)
def test_inplace_activation_writes_its_input(name, kwargs):
    u, t = both(name, inplace=True, **kwargs)
    x = rand(3, 5)
    ux, tx = ug.tensor(x), torch.tensor(x)
    uy, ty = u(ux), t(tx)
    assert_close(ux.numpy(), tx.numpy())
    assert_close(uy.numpy(), ty.numpy())
    assert repr(u) == repr(t)


def inplace_gradients_match_torch(ug_fn, torch_fn):
    """ug_fn and torch_fn write into a non-leaf input: its version moves on by one and the
    gradient reaches the leaf behind it as torch's does; a leaf that requires grad is refused.
    The input is overwritten, so both libraries compute the derivative from the output (ELU's
    and SELU's as y + alpha·scale, which cancels for a very negative input): each gradient
    element may differ by a few float32 roundings of (|y| + 2) times its 2·|w|."""
    rng = np.random.default_rng(1)  # not the module's generator: the values must not depend on test order
    x, w = (rng.standard_normal((2, 3, 5)) * 3.0).astype(np.float32)
    ux, tx = ug.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    uh, th = ux * 2, tx * 2
    version = uh._version
    uy, ty = ug_fn(uh), torch_fn(th)
    assert uh._version == version + 1
    assert_close(uh.detach().numpy(), th.detach().numpy())
    (uy * ug.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    cancel = 4 * np.finfo(np.float32).eps * (np.abs(th.detach().numpy()) + 2) * 2 * np.abs(w)
    assert_close(ux.grad.numpy(), tx.grad.numpy(), atol=1e-6 + cancel)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad is being used in an in-place operation"):
        ug_fn(ug.tensor(x, requires_grad=True))


@pytest.mark.parametrize("name,kwargs", INPLACE)
def test_inplace_activation_differentiates_as_torch(name, kwargs):
    u, t = both(name, inplace=True, **kwargs)
    inplace_gradients_match_torch(u, t)


@pytest.mark.parametrize("name,args", [("relu", ()), ("silu", ()), ("leaky_relu", (0.2,)), ("elu", (0.5,)),
                                       ("mish", ()), ("hardswish", ())])
def test_inplace_functional_activation_differentiates_as_torch(name, args):
    inplace_gradients_match_torch(lambda x: getattr(ug.nn.functional, name)(x, *args, inplace=True),
                                  lambda x: getattr(torch.nn.functional, name)(x, *args, inplace=True))


def test_cosine_similarity_and_pairwise_distance():
    for args in [(), (0,), (-1, 0.5)]:
        u, t = both("CosineSimilarity", *args)
        check_layer(u, t, rand(4, 5), rand(1, 5), n=5)
        assert repr(u) == repr(t)
    for args in [(), (1.0,), (3.0, 1e-3, True)]:
        u, t = both("PairwiseDistance", *args)
        check_layer(u, t, rand(4, 5), rand(4, 5), n=5)
        assert repr(u) == repr(t)


def test_unflatten():
    for dim, sizes in [(1, (2, 3)), (-1, [3, -1]), (0, (1, 4))]:
        u, t = both("Unflatten", dim, sizes)
        shape = (4, 6) if dim != 0 else (4, 6)
        check_layer(u, t, rand(*shape))
        assert repr(u) == repr(t).replace("[3, -1]", "(3, -1)")  # torch prints a list as given
    with pytest.raises(ValueError, match="unflatten"):
        ug.nn.Unflatten(1, (2, 4))(ug.randn(2, 6))
    with pytest.raises(ValueError, match=r"\[Unflatten\] unflattened_size cannot be empty"):
        ug.nn.Unflatten(1, ())


def ug_repr(torch_repr):
    return torch_repr.replace("torch.", "")


def test_parameter_list():
    values = [rand(2, 3), rand(4)]
    u = ug.nn.ParameterList([ug.tensor(v) for v in values])
    t = torch.nn.ParameterList([torch.nn.Parameter(torch.tensor(v)) for v in values])
    assert len(u) == 2 and list(u.state_dict()) == list(t.state_dict()) == ["0", "1"]
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert all(p.requires_grad for p in u.parameters())
    assert repr(u) == ug_repr(repr(t))
    u.append(ug.tensor(rand(5)).double())
    t.append(torch.nn.Parameter(torch.tensor(rand(5)).double()))
    assert repr(u) == ug_repr(repr(t))
    assert u[-1].shape == (5,) and u[0].shape == (2, 3)
    u[1] = ug.zeros(3)
    assert u[1].shape == (3,) and u[1].requires_grad
    assert list(u.state_dict()) == ["0", "1", "2"]
    frozen = ug.nn.Parameter(ug.ones(2), requires_grad=False)
    u.extend([frozen])
    assert not u[3].requires_grad
    seq_u = ug.nn.Sequential(ug.nn.ParameterList([ug.tensor(values[0])]))
    seq_t = torch.nn.Sequential(torch.nn.ParameterList([torch.nn.Parameter(torch.tensor(values[0]))]))
    assert repr(seq_u) == ug_repr(repr(seq_t))
    assert list(seq_u.state_dict()) == list(seq_t.state_dict())
    assert repr(ug.nn.ParameterList()) == repr(torch.nn.ParameterList())
    with pytest.raises(IndexError, match=r"\[ParameterList\] index 4 is out of range for 4 parameters"):
        u[4]
    # The parameters train: a gradient reaches each one used.
    (u[0].sum() * 2).backward()
    assert_close(u[0].grad.numpy(), np.full((2, 3), 2.0, np.float32))


def test_parameter_dict():
    values = {"w": rand(2, 3), "b": rand(4).astype(np.float64)}
    u = ug.nn.ParameterDict({k: ug.tensor(v) for k, v in values.items()})
    t = torch.nn.ParameterDict({k: torch.nn.Parameter(torch.tensor(v)) for k, v in values.items()})
    assert list(u.state_dict()) == list(t.state_dict()) == ["b", "w"]  # torch sorts a dict's keys
    assert list(u) == list(t) and list(u.keys()) == list(t.keys()) and len(u) == 2
    assert repr(u) == ug_repr(repr(t))
    u["c"] = ug.ones(1)
    assert "c" in u and u["c"].requires_grad and [k for k, _ in u.items()] == ["b", "w", "c"]
    del u["c"]
    assert "c" not in u and u.get("c") is None
    with pytest.raises(KeyError):
        u["missing"]
    assert repr(ug.nn.ParameterDict()) == repr(torch.nn.ParameterDict())
    ordered = OrderedDict([("z", ug.ones(2)), ("a", ug.ones(1))])
    for given in [ordered, list(ordered.items())]:  # kept in their order
        assert list(ug.nn.ParameterDict(given).state_dict()) == ["z", "a"]
    u.update({"y": ug.ones(1), "x": ug.ones(1)})
    assert list(u) == ["b", "w", "x", "y"]
    with pytest.raises(ValueError, match="no dots"):
        u["a.b"] = ug.ones(1)


def test_modules_with_a_parameter_list_train_and_copy():
    class Mixer(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = ug.nn.ParameterList([ug.ones(3), ug.ones(3) * 2])

        def forward(self, x):
            return x * self.weights[0] + self.weights[1]
    m = Mixer()
    assert list(m.state_dict()) == ["weights.0", "weights.1"]
    m(ug.ones(3)).sum().backward()
    assert_close(m.weights[1].grad.numpy(), np.ones(3, np.float32))


@pytest.mark.parametrize("make,match", [
    (lambda: ug.nn.CELU(0.0), r"\[CELU\] alpha cannot be 0"),
    (lambda: ug.nn.Hardtanh(2.0, 1.0), r"\[Hardtanh\] max_val \(1.0\) must be greater than min_val \(2.0\)"),
    (lambda: ug.nn.Softshrink(-1.0), r"\[Softshrink\] lambd must be >= 0, got -1.0"),
    (lambda: ug.nn.PReLU(0), r"\[PReLU\] num_parameters must be positive, got 0"),
    (lambda: ug.nn.PReLU(3)(ug.randn(2, 4)), r"\[prelu\] weight has 3 entries but the input \(shape \[2, 4\]\) has 4"),
    (lambda: ug.nn.GLU()(ug.randn(2, 3)), r"\[glu\] halving dimension must be even"),
])
def test_bad_arguments_raise_naming_the_layer(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_prelu_num_parameters_and_reset():
    u = ug.nn.PReLU(4, init=0.3)
    assert u.num_parameters == 4 and u.weight.shape == (4,)
    assert_close(u.weight.numpy(), np.full(4, 0.3, np.float32))


# ---- Keras activations by name -----------------------------------------------------------------

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
KERAS_NAMES = ["relu", "sigmoid", "tanh", "silu", "swish", "gelu", "softmax", "log_softmax", "leaky_relu", "elu",
               "selu", "celu", "softplus", "softsign", "exponential", "relu6", "mish", "log_sigmoid", "hard_sigmoid",
               "hard_silu", "hard_swish", "hard_tanh", "glu", "hard_shrink", "soft_shrink", "tanh_shrink", "linear"]


@pytest.mark.parametrize("name", KERAS_NAMES)
def test_dense_activation_matches_keras(name):
    keras = pytest.importorskip("keras")
    dense = ug.nn.Dense(6, activation=name, input_dim=4)
    x = ug.tensor(rand(5, 4, scale=1.0))
    pre = ug.nn.functional.linear(x, dense.weight, dense.bias).detach().numpy()
    assert_close(dense(x).detach().numpy(), np.asarray(keras.activations.get(name)(pre)))


def test_unknown_activation_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"\[activation\] unknown activation \"sparsemax\"; expected one of relu, "):
        ug.nn.Dense(3, activation="sparsemax")


# ---- padding and channel dropout -----------------------------------------------------------------

PADS = [("ZeroPad2d", (1,), (2, 3, 4, 5)), ("ZeroPad2d", ((1, 2, 0, 3),), (3, 4, 5)),
        ("ConstantPad1d", (2, 3.5), (2, 3, 4)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 4, 5)),
        ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 2, 1),), (2, 3, 4, 5)),
        ("ReplicationPad1d", ((1, 3),), (3, 5)), ("ReplicationPad2d", (2,), (1, 3, 4, 5)),
        ("ZeroPad1d", ((2, 0),), (2, 3, 4)), ("ZeroPad3d", (1,), (2, 3, 2, 3, 4)),
        ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 2.5), (3, 2, 3, 4)), ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),), (2, 3, 3, 4, 5)),
        ("ReplicationPad3d", (1,), (3, 2, 3, 4)), ("CircularPad1d", ((2, 1),), (2, 3, 4)),
        ("CircularPad2d", ((1, 2, 0, 1),), (3, 4, 5)), ("CircularPad3d", (1,), (2, 3, 3, 4, 5))]


@pytest.mark.parametrize("name,args,shape", PADS)
def test_padding_matches_torch(name, args, shape):
    u, t = both(name, *args)
    check_layer(u, t, rand(*shape))
    assert repr(u) == repr(t)


def test_padding_errors_name_the_layer():
    with pytest.raises(ValueError, match=r"\[ReflectionPad2d\] padding must be one size or 4 sizes, got \(1, 2\)"):
        ug.nn.ReflectionPad2d((1, 2))
    with pytest.raises(ValueError, match="pad"):
        ug.nn.ReflectionPad1d(5)(ug.randn(2, 3, 4))  # reflection needs padding < the size


@pytest.mark.parametrize("name,shape", [("Dropout1d", (4, 6, 5)), ("Dropout1d", (6, 5)), ("Dropout2d", (4, 6, 3, 3))])
def test_channel_dropout_drops_whole_channels(name, shape):
    u, t = both(name, 0.5)
    assert repr(u) == repr(t) and repr(getattr(ug.nn, name)(0.3, True)) == repr(getattr(torch.nn, name)(0.3, True))
    x = ug.tensor(np.abs(rand(*shape)) + 1)
    y = u(x).numpy()
    per_channel = y.reshape(*shape[:-1 if name == "Dropout1d" else -2], -1)
    kept = per_channel != 0
    assert (kept.all(-1) | ~kept.any(-1)).all(), "a channel is kept or dropped whole"
    assert_close(per_channel[kept], (x.numpy() * 2).reshape(per_channel.shape)[kept])
    u.eval()
    assert_close(u(x).numpy(), x.numpy())


# ---- pooling ---------------------------------------------------------------------------------------

POOLS = [("MaxPool1d", (3,), {}, (2, 3, 10)), ("MaxPool1d", (3, 2, 1), {"dilation": 2}, (2, 3, 11)),
         ("MaxPool1d", (2,), {"ceil_mode": True}, (3, 9)), ("MaxPool2d", (3,), {}, (2, 3, 7, 8)),
         ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "padding": 1}, (2, 3, 7, 8)),
         ("AvgPool1d", (3,), {}, (2, 3, 10)), ("AvgPool1d", (4, 2, 1), {"count_include_pad": False}, (2, 3, 11)),
         ("AvgPool2d", (3,), {}, (2, 3, 7, 8)), ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
         ("AdaptiveAvgPool2d", ((3, 4),), {}, (2, 3, 7, 9)), ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 7, 8)),
         ("AdaptiveMaxPool2d", ((2, 5),), {}, (3, 7, 9))]


@pytest.mark.parametrize("name,args,kwargs,shape", POOLS)
def test_pooling_matches_torch(name, args, kwargs, shape):
    u, t = both(name, *args, **kwargs)
    check_layer(u, t, rand(*shape))  # windows of at most 12 terms: short sums
    assert repr(u) == repr(t)


@pytest.mark.parametrize("name,r,shape", [("PixelShuffle", 2, (2, 8, 3, 4)), ("PixelShuffle", 3, (18, 2, 3)),
                                          ("PixelShuffle", 2, (2, 3, 4, 2, 2)), ("PixelUnshuffle", 2, (2, 3, 4, 6)),
                                          ("PixelUnshuffle", 3, (2, 6, 9)), ("PixelUnshuffle", 2, (2, 2, 3, 4, 2))])
def test_pixel_shuffle_matches_torch(name, r, shape):
    u, t = both(name, r)
    check_layer(u, t, rand(*shape))  # a rearrangement: every value and gradient exact
    assert repr(u) == repr(t)
    x = rand(*shape)
    fn = name.replace("PixelS", "pixel_s").replace("PixelUns", "pixel_uns")
    np.testing.assert_array_equal(getattr(ug.nn.functional, fn)(ug.tensor(x), r).numpy(),
                                  getattr(torch.nn.functional, fn)(torch.tensor(x), r).numpy())


def test_pixel_shuffle_errors_name_the_op():
    with pytest.raises(RuntimeError, match=r"\[pixel_shuffle\].*\[2, 6, 3, 3\].*divisible"):
        ug.nn.PixelShuffle(2)(ug.zeros(2, 6, 3, 3))
    with pytest.raises(RuntimeError, match=r"\[pixel_unshuffle\].*\[2, 4, 3, 4\].*divisible"):
        ug.nn.functional.pixel_unshuffle(ug.zeros(2, 4, 3, 4), 2)
    with pytest.raises(RuntimeError, match=r"\[pixel_shuffle\].*at least 3 dims"):
        ug.nn.functional.pixel_shuffle(ug.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match=r"\[PixelUnshuffle\] downscale_factor must be positive"):
        ug.nn.PixelUnshuffle(0)


# BatchNorm too, for torch's bias= and its printout.
INSTANCE_NORMS = [("InstanceNorm1d", {}, (3, 4, 20)), ("InstanceNorm1d", {"affine": True}, (3, 4, 20)),
                  ("InstanceNorm1d", {"affine": True}, (4, 20)),
                  ("InstanceNorm2d", {}, (2, 3, 5, 6)), ("InstanceNorm2d", {"affine": True, "eps": 1e-3}, (3, 5, 6)),
                  ("InstanceNorm2d", {"track_running_stats": True, "momentum": 0.3}, (2, 3, 5, 6)),
                  ("InstanceNorm1d", {"track_running_stats": True, "affine": True, "momentum": None}, (3, 4, 20)),
                  ("InstanceNorm2d", {"affine": True, "bias": False}, (2, 3, 5, 6)),
                  ("BatchNorm1d", {"bias": False}, (8, 4, 5)), ("BatchNorm2d", {}, (4, 3, 5, 6))]


@pytest.mark.parametrize("name,kwargs,shape", INSTANCE_NORMS)
def test_instance_norm_matches_torch(name, kwargs, shape):
    batched = len(shape) == (4 if name.endswith("2d") else 3)
    u, t = both(name, shape[1] if batched else shape[0], **kwargs)
    # Drawn from the case's own seed, not from generators whose state depends on which tests a
    # pytest-xdist worker ran first: with some draws no element of BatchNorm2d's weight gradient
    # (360 terms that cancel) was large enough for its derived tolerance to be checked.
    seed = INSTANCE_NORMS.index((name, kwargs, shape))
    if kwargs.get("affine"):  # weights away from one and zero, so their gradients matter
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            t.weight.uniform_(0.5, 1.5, generator=g)
            if t.bias is not None:
                t.bias.uniform_(-1, 1, generator=g)
        twins(u, t)
    x = (np.random.default_rng(seed).standard_normal(shape) * 3.0).astype(np.float32)
    n = int(np.prod(shape))  # the longest sum: a weight's gradient over every sample and pixel
    check_layer(u, t, x, n=n)
    assert repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())
    for key, value in t.state_dict().items():  # running statistics after one training step
        assert_close(u.state_dict()[key].numpy(), value.detach().numpy(), n=n, path=key)
    u.eval(), t.eval()
    check_layer(u, t, rand(*shape), grads=False, n=n)


def test_instance_norm_errors_name_the_layer():
    with pytest.raises(RuntimeError, match=r"\[InstanceNorm2d\] expected 3D or 4D input, got shape \[2, 3\]"):
        ug.nn.InstanceNorm2d(3)(ug.zeros(2, 3))
    with pytest.raises(RuntimeError, match=r"\[InstanceNorm1d\] expected 4 channels in dim 1"):
        ug.nn.InstanceNorm1d(4, affine=True)(ug.zeros(2, 3, 5))
    with pytest.raises(RuntimeError, match=r"\[InstanceNorm1d\] num_features must be positive"):
        ug.nn.InstanceNorm1d(0)
