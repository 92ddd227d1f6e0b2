"""ug.nn.Module and the basic layers against torch.nn with identical weights and inputs."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import check_layer


def to_ug(t):
    return ug.tensor(t.detach().numpy())


def to_np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def copy_torch_weights(ug_module, torch_module):
    ug_module.load_state_dict({k: to_ug(v) for k, v in torch_module.state_dict().items()})


class UgMLP(ug.nn.Module):
    """The articles' MLP: 784 -> 128 (ReLU) -> 10."""

    def __init__(self):
        super().__init__()
        self.fc1 = ug.nn.Linear(784, 128)
        self.fc2 = ug.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(ug.relu(self.fc1(x)))


class TorchMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_articles_mlp_counts_101770_parameters():
    m = UgMLP()
    assert m.num_parameters() == 101_770 == sum(p.numel() for p in TorchMLP().parameters())
    assert sum(p.numel() for p in m.parameters()) == 101_770
    assert m.count_params() == 101_770


def test_mlp_matches_torch_forward_and_gradients():
    tm, um = TorchMLP(), UgMLP()
    copy_torch_weights(um, tm)
    x = np.random.default_rng(0).standard_normal((16, 784))
    # Errors add up along the chain of sums, 785 and 129 terms forward and 10 and 16 back: in
    # float32 no worst-case tolerance of ~940 terms of both signs could catch a 1e-3 error
    # (reference.py), so the twins compare in float64; test_op_table checks float32 linear.
    check_layer(um.double(), tm.double(), x, n=940)


def test_registration_of_parameters_buffers_modules_and_plain_attributes():
    class Net(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ug.nn.Parameter(ug.ones(3))
            self.frozen = ug.nn.Parameter(ug.zeros(2), requires_grad=False)
            self.register_buffer("count", ug.zeros(1))
            self.register_buffer("scratch", ug.zeros(1), persistent=False)
            self.body = ug.nn.Linear(3, 3)
            self.name = "net"
            self.plain = ug.ones(2)  # a plain tensor attribute is not registered

    n = Net()
    assert [k for k, _ in n.named_parameters()] == ["scale", "frozen", "body.weight", "body.bias"]
    assert [k for k, _ in n.named_buffers()] == ["count", "scratch"]
    assert list(n.state_dict()) == ["scale", "frozen", "count", "body.weight", "body.bias"]
    assert n.name == "net" and n.plain.shape == (2,)
    assert n.scale.requires_grad and not n.frozen.requires_grad
    assert isinstance(n.scale, ug.nn.Parameter) and not isinstance(n.plain, ug.nn.Parameter)
    assert [k for k, _ in n.named_children()] == ["body"]
    assert [k for k, _ in n.named_modules()] == ["", "body"]
    assert n.get_submodule("body") is n.body
    n.count = ug.ones(1)  # assigning to a buffer replaces it
    assert n.state_dict()["count"].item() == 1
    assert n.num_parameters(trainable_only=True) == 3 + 12
    with pytest.raises(TypeError, match="scale"):
        n.scale = ug.ones(3)
    n.body = None  # torch semantics: assigning None to a module attribute unregisters it as a module
    assert "body.weight" not in n.state_dict()
    del n.scale
    assert "scale" not in dict(n.named_parameters())
    with pytest.raises(AttributeError, match="nothing"):
        n.nothing


def test_a_child_replaced_by_assignment_is_the_one_forward_calls_as_torchs():
    """seq.0 = m and layer.linear1 = m replace the child where it stands, and forward calls
    the new one (it called the old one, and seq moved the new one last); a replacement the
    holding layer cannot call raises (before: a null module at the next forward)."""
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    ours = ug.nn.Sequential(ug.nn.Linear(4, 4), ug.nn.ReLU())
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    for m in (ours, theirs):
        setattr(m, "0", type(m[1])())
        m.extra = type(m[1])()
    assert repr(ours) == repr(theirs)
    np.testing.assert_array_equal(ours(ug.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    layer = ug.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    replacement = ug.nn.Linear(8, 16)
    layer.linear1 = replacement
    with ug.no_grad():
        replacement.weight.zero_(), replacement.bias.zero_()
    y = ug.randn(3, 8)
    # linear1's zeros leave the feed-forward block adding only linear2's bias
    expected = layer.norm2(layer.norm1(y + layer.self_attn(y, y, y)[0]) + layer.linear2.bias)
    np.testing.assert_allclose(layer(y).detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match=r"a ReLU cannot take the place of a Linear"):
        layer.linear1 = ug.nn.ReLU()
    assert layer.linear1 is replacement


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm2d"])
def test_norm_layers_have_torchs_attributes(cls):
    kwargs = dict(eps=1e-3, affine=False, track_running_stats=True)
    ours, theirs = getattr(ug.nn, cls)(6, **kwargs), getattr(torch.nn, cls)(6, **kwargs)
    names = ("num_features", "eps", "momentum", "affine", "track_running_stats")
    assert [getattr(ours, a) for a in names] == [getattr(theirs, a) for a in names]


def test_convert_sync_batchnorm_keeps_the_tensors_as_torchs():
    """Every BatchNorm*d inside (and a bare one) becomes a SyncBatchNorm over the same tensors:
    an optimizer made before still updates them. A BatchNorm without what SyncBatchNorm keeps
    (affine=False) raises, naming it."""
    ours = ug.nn.Sequential(ug.nn.Conv2d(3, 4, 3), ug.nn.BatchNorm2d(4, momentum=0.3), ug.nn.ReLU())
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, momentum=0.3), torch.nn.ReLU())
    ours.eval()
    before = ours[1].weight.data_ptr(), ours[1].running_var.data_ptr()
    converted = ug.nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    assert converted is ours and repr(ours) == repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs))
    assert (ours[1].weight.data_ptr(), ours[1].running_var.data_ptr()) == before
    assert not ours[1].training and ours[1].momentum == 0.3
    single = ug.nn.SyncBatchNorm.convert_sync_batchnorm(ug.nn.BatchNorm1d(5))
    assert type(single).__name__ == "SyncBatchNorm"
    with pytest.raises(ValueError, match=r"\[convert_sync_batchnorm\].*BatchNorm2d\(4\) lacks"):
        ug.nn.SyncBatchNorm.convert_sync_batchnorm(ug.nn.BatchNorm2d(4, affine=False))


def test_forgetting_super_init_is_a_clear_error():
    class Bad(ug.nn.Module):
        def __init__(self):
            self.fc = ug.nn.Linear(2, 2)

    with pytest.raises(TypeError, match="super"):
        Bad()


def test_state_dict_round_trip_and_strict_errors():
    a, b = UgMLP(), UgMLP()
    b.load_state_dict(a.state_dict())
    for (k, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    # Loading copies in place: a handle taken before still sees the values.
    w = b.fc1.weight
    b.load_state_dict({k: v * 0 for k, v in a.state_dict().items()})
    assert float(w.abs().sum().item()) == 0
    sd = a.state_dict()
    del sd["fc2.bias"]
    sd["extra"] = ug.ones(1)
    with pytest.raises(RuntimeError, match=r'missing keys: "fc2.bias".*unexpected keys: "extra"'):
        b.load_state_dict(sd)
    missing, unexpected = b.load_state_dict(sd, strict=False)
    assert missing == ["fc2.bias"] and unexpected == ["extra"]
    bad = a.state_dict()
    bad["fc1.weight"] = ug.zeros(3, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for \"fc1.weight\": expected shape \[128, 784\], got \[3, 3\]"):
        b.load_state_dict(bad, strict=False)


def test_train_eval_zero_grad_requires_grad_to_and_apply():
    m = UgMLP()
    assert m.training and m.fc1.training
    assert m.eval() is m and not m.fc1.training
    m.train()
    assert m.fc2.training
    m(ug.randn(2, 784)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert float(m.fc1.weight.grad.abs().sum().item()) == 0
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    w = m.fc1.weight
    m.to(ug.float64)
    assert w.dtype == ug.float64 and m.fc2.bias.dtype == ug.float64  # converted in place, handles see it
    assert m(ug.randn(2, 784, dtype=ug.float64)).dtype == ug.float64
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Linear", "UgMLP"]


def test_printing_and_summary(capsys):
    m = UgMLP()
    assert repr(m) == ("UgMLP(\n  (fc1): Linear(in_features=784, out_features=128, bias=True)\n"
                       "  (fc2): Linear(in_features=128, out_features=10, bias=True)\n)")
    assert repr(m) == repr(TorchMLP()).replace("TorchMLP", "UgMLP")
    m.summary((1, 784))
    out = capsys.readouterr().out
    assert "fc1 (Linear)" in out and "(None, 128)" in out and "100480" in out
    assert "Total params: 101770" in out and "Trainable params: 101770" in out


def test_linear_default_init_matches_torch_distribution():
    ug.manual_seed(0)
    lin = ug.nn.Linear(400, 300)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound  # uniform(-b, b) has std b/sqrt(3)
    ug.manual_seed(0)
    np.testing.assert_array_equal(ug.nn.Linear(400, 300).weight.numpy(), w)  # seeded


def test_sequential_modulelist_moduledict():
    seq = ug.nn.Sequential(ug.nn.Linear(4, 8), ug.nn.ReLU(), ug.nn.Linear(8, 2))
    tseq = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    copy_torch_weights(seq, tseq)
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(seq(ug.tensor(x)).numpy(), to_np(tseq(torch.tensor(x))), rtol=1e-5, atol=1e-6)
    assert len(seq) == 3 and isinstance(seq[1], ug.nn.ReLU) and isinstance(seq[-1], ug.nn.Linear)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    assert list(seq.state_dict()) == list(tseq.state_dict())
    layers = ug.nn.ModuleList([ug.nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    heads = ug.nn.ModuleDict({"a": ug.nn.Linear(2, 1), "b": ug.nn.Linear(2, 3)})
    assert list(heads.keys()) == ["a", "b"] and "a" in heads and heads["b"].out_features == 3
    assert list(heads.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    with pytest.raises(IndexError):
        seq[3]


def test_python_module_inside_cpp_sequential_runs_python_forward():
    class Double(ug.nn.Module):
        def forward(self, x):
            return x * 2

    seq = ug.nn.Sequential(Double(), Double())
    np.testing.assert_array_equal(seq(ug.ones(2)).numpy(), [4, 4])


def test_forward_hooks():
    m = UgMLP()
    calls = []
    h = m.fc1.register_forward_hook(lambda mod, inp, out: calls.append((type(mod).__name__, inp[0].shape, out.shape)))
    pre = m.fc2.register_forward_pre_hook(lambda mod, inp: (inp[0] * 0,))
    y = m(ug.randn(2, 784))
    assert calls == [("Linear", (2, 784), (2, 128))]
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(m.fc2.bias.numpy(), (2, 10)), rtol=1e-6)
    h.remove()
    pre.remove()
    m(ug.randn(2, 784))
    assert len(calls) == 1


def test_forward_hooks_on_calls_with_several_arguments_match_torch():
    def run(m):
        class Add(m.nn.Module):
            def forward(self, a, b, scale=1.0):
                return (a + b) * scale

        mod, log = Add(), []
        pre = mod.register_forward_pre_hook(lambda mod, inp: log.append(("pre", len(inp))) or (inp[0], inp[1] * 0))
        mod.register_forward_hook(lambda mod, inp, out: log.append(("post", len(inp))))
        mod.register_forward_hook(lambda mod, inp, out: out + 1)
        mod.register_forward_pre_hook(lambda mod, inp: log.append(("second pre", inp[1].tolist())))
        one = m.ones(2)
        first = mod(one, one, scale=3.0).tolist()  # keywords are not the hooks' inputs
        pre.remove()
        second = mod(one, one).tolist()
        return log, first, second

    assert run(ug) == run(torch)
    assert run(ug)[1:3] == ([4.0, 4.0], [3.0, 3.0])


def test_handle_remove_takes_hooks_off_a_top_level_python_module():
    class Double(ug.nn.Module):
        def forward(self, x):
            return x * 2

    m, calls = Double(), []
    handles = [m.register_forward_hook(lambda mod, inp, out: calls.append("post")),
               m.register_forward_pre_hook(lambda mod, inp: calls.append("pre"))]
    m(ug.ones(2))
    for h in handles:
        h.remove()
        h.remove()  # a second remove does nothing
    m(ug.ones(2))
    assert calls == ["pre", "post"]


def test_dense_keras_style_is_lazy_and_activated():
    d = ug.nn.Dense(16, activation="relu")
    assert d.num_parameters() == 0
    y = d(ug.randn(4, 5))
    assert y.shape == (4, 16) and float(y.min().item()) >= 0
    assert d.weight.shape == (16, 5) and float(d.bias.abs().sum().item()) == 0  # Keras: zero bias
    bound = math.sqrt(6 / (5 + 16))  # Glorot uniform
    assert float(d.weight.abs().max().item()) <= bound
    with pytest.raises(ValueError, match="activation"):
        ug.nn.Dense(3, activation="nope")


def test_functional_init_apply_and_value_and_grad_match_imperative():
    m = UgMLP()
    x = ug.randn(8, 784)
    params = m.init(ug.random.key(0), x)
    assert list(params) == [k for k, _ in m.named_parameters()]
    assert not np.array_equal(params["fc1.weight"].numpy(), m.fc1.weight.numpy())  # the module is untouched
    np.testing.assert_array_equal(m.init(ug.random.key(0))["fc2.weight"].numpy(), params["fc2.weight"].numpy())
    assert not np.array_equal(m.init(ug.random.key(1))["fc2.weight"].numpy(), params["fc2.weight"].numpy())

    def loss_fn(p, x):
        return (m.apply(p, x) ** 2).mean()

    value, grads = ug.value_and_grad(loss_fn)(params, x)
    m.load_state_dict(params)
    loss = (m(x) ** 2).mean()
    loss.backward()
    np.testing.assert_allclose(value.item(), loss.item(), rtol=1e-6)
    for name, p in m.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)
    out = ug.nn.functional_call(m, {"fc2.bias": ug.zeros(10)}, (x,))
    assert out.shape == (8, 10) and float(m.fc2.bias.abs().sum().item()) > 0
    with pytest.raises(IndexError, match="nope"):
        ug.nn.functional_call(m, {"nope": ug.zeros(1)}, (x,))
    with pytest.raises(ValueError, match="shape"):
        m.apply({"fc2.bias": ug.zeros(3)}, x)


def test_vmap_over_parameters_via_functional_call():
    m = ug.nn.Linear(3, 2)
    ws = ug.randn(4, 2, 3)
    x = ug.randn(5, 3)
    out = ug.vmap(lambda w: ug.nn.functional_call(m, {"weight": w}, (x,)))(ws)
    expect = np.stack([x.numpy() @ w.T + m.bias.numpy() for w in ws.numpy()])
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-5, atol=1e-6)


def test_subclassed_model_trains_and_loss_falls():
    ug.manual_seed(0)
    m = ug.nn.Sequential(ug.nn.Linear(2, 16), ug.nn.Tanh(), ug.nn.Linear(16, 1))
    x = ug.randn(64, 2)
    y = (x[:, :1] * x[:, 1:]).detach()
    losses = []
    for _ in range(100):
        loss = ((m(x) - y) ** 2).mean()
        m.zero_grad()
        loss.backward()
        with ug.no_grad():
            for p in m.parameters():
                p -= 0.1 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("name", ["linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"])
def test_calculate_gain_matches_torch(name):
    assert ug.nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))


def test_initialisers_follow_torch_formulas():
    ug.manual_seed(0)
    w = ug.empty(300, 200)
    fan_in, fan_out = 200, 300
    ug.nn.init.xavier_uniform_(w, gain=2.0)
    assert float(w.abs().max().item()) <= 2.0 * math.sqrt(6 / (fan_in + fan_out))
    ug.nn.init.xavier_normal_(w)
    assert abs(w.numpy().std() - math.sqrt(2 / (fan_in + fan_out))) < 0.02 * math.sqrt(2 / (fan_in + fan_out))
    ug.nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / fan_out)) < 0.02 * math.sqrt(2 / fan_out)
    ug.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    assert float(w.abs().max().item()) <= 1 / math.sqrt(fan_in)
    ug.nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=0.0, b=1.0)
    assert 0 <= float(w.min().item()) and float(w.max().item()) <= 1
    t = torch.empty(300, 200)
    torch.nn.init.trunc_normal_(t, mean=0.5, std=1.0, a=0.0, b=1.0)
    assert abs(w.numpy().mean() - t.numpy().mean()) < 0.01 and abs(w.numpy().std() - t.numpy().std()) < 0.01
    ug.nn.init.constant_(w, 0.25)
    assert float(w.sum().item()) == 0.25 * 300 * 200
    ug.nn.init.zeros_(w)
    ug.nn.init.ones_(w)
    assert float(w.mean().item()) == 1
    ug.nn.init.normal_(w, mean=1.0, std=0.5)
    assert abs(w.numpy().mean() - 1) < 0.01 and abs(w.numpy().std() - 0.5) < 0.01
    ug.nn.init.uniform_(w, -2.0, 3.0)
    assert -2 <= float(w.min().item()) and float(w.max().item()) < 3


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (8, 3, 2, 2)])
def test_orthogonal_init(shape):
    w = ug.empty(*shape)
    ug.nn.init.orthogonal_(w, gain=2.0)
    flat = w.numpy().reshape(shape[0], -1)
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-5)


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 3, 2, 5), 2), ((2, 5, 3), 1),
                                          ((3, 3, 4, 4), 3), ((3, 3, 3, 3), 1)])
def test_dirac_and_eye_as_torch(shape, groups):
    w, tw = ug.full(shape, 7.0), torch.full(shape, 7.0)
    ug.nn.init.dirac_(w, groups)
    torch.nn.init.dirac_(tw, groups)
    assert np.array_equal(w.numpy(), tw.numpy())
    if shape == (3, 3, 3, 3):  # a conv with the dirac kernel passes its input through
        x = ug.randn(2, 3, 5, 5)
        assert ug.equal(ug.nn.functional.conv2d(x, w, padding=1), x)
    for rows, cols in [(3, 5), (4, 4), (5, 2)]:
        e, te = ug.full((rows, cols), 3.0, dtype=ug.float64), torch.full((rows, cols), 3.0, dtype=torch.float64)
        ug.nn.init.eye_(e)
        torch.nn.init.eye_(te)
        assert np.array_equal(e.numpy(), te.numpy())


def test_sparse_init_zeroes_a_share_of_each_column():
    ug.manual_seed(3)
    w = ug.empty(40, 30, dtype=ug.float64)
    ug.nn.init.sparse_(w, 0.25, std=0.02)
    zeros = (w == 0).sum(0).tolist()
    assert zeros == [10] * 30  # ceil(0.25 * 40) in every column, as torch.nn.init.sparse_
    kept = w.numpy()[w.numpy() != 0]
    # 900 N(0, 0.02) draws: their std within 6 standard errors (0.02 / sqrt(2 * 900) each)
    assert abs(kept.std() - 0.02) < 6 * 0.02 / np.sqrt(2 * kept.size)
    ug.manual_seed(3)
    again = ug.empty(40, 30, dtype=ug.float64)
    ug.nn.init.sparse_(again, 0.25, std=0.02)
    assert ug.equal(w, again)  # the global seed decides the draw


def test_initialiser_errors():
    with pytest.raises(ValueError, match=r"\[dirac_\] only tensors with 3, 4 or 5 dimensions are supported, got "
                                         r"shape \[3, 3\]"):
        ug.nn.init.dirac_(ug.empty(3, 3))
    with pytest.raises(ValueError, match=r"\[dirac_\] dim 0 \(5\) must be divisible by groups \(2\)"):
        ug.nn.init.dirac_(ug.empty(5, 2, 3), 2)
    with pytest.raises(ValueError, match=r"\[eye_\] only tensors with 2 dimensions are supported"):
        ug.nn.init.eye_(ug.empty(3))
    with pytest.raises(ValueError, match=r"\[sparse_\] sparsity must be in \[0, 1\], got 1.5"):
        ug.nn.init.sparse_(ug.empty(3, 3), 1.5)
    with pytest.raises(ValueError, match="at least 2 dims"):
        ug.nn.init.xavier_uniform_(ug.empty(3))
    with pytest.raises(ValueError, match="mode"):
        ug.nn.init.kaiming_uniform_(ug.empty(3, 3), mode="fan")
    with pytest.raises(TypeError):
        ug.nn.init.normal_(ug.empty(3, dtype=ug.int64))


def test_keras_call_and_mindspore_construct_name_forward():
    class KerasStyle(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = ug.nn.Dense(2, input_dim=3)

        def call(self, x):
            return self.dense(x) * 0 + 1

    class MindSporeStyle(ug.nn.Module):
        def construct(self, x):
            return x * 2

    assert KerasStyle()(ug.zeros(1, 3)).tolist() == [[1.0, 1.0]]
    assert ug.nn.Sequential(MindSporeStyle())(ug.ones(2)).tolist() == [2.0, 2.0]


def test_modules_held_by_containers_are_freed():
    import gc
    import weakref

    class Child(ug.nn.Module):
        def forward(self, x):
            return x

    child = Child()
    ref = weakref.ref(child)
    seq = ug.nn.Sequential(child, ug.nn.Linear(2, 2))
    del child
    assert ref() is not None  # the container keeps it alive
    del seq
    gc.collect()
    assert ref() is None
