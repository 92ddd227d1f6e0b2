"""copy.deepcopy, copy.copy and pickle of tensors and modules, as torch 2.13 behaves: the
target-network / EMA / "best model" copies users make with copy.deepcopy(model)."""
import copy
import gc
import pickle

import numpy as np
import pytest
import torch

import unigrad as ug


def _same_values(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


LAYERS = [
    lambda: ug.nn.Linear(6, 5),
    lambda: ug.nn.Dense(5, "relu", input_dim=6),
    lambda: ug.nn.Sequential(ug.nn.Linear(6, 8), ug.nn.GELU(), ug.nn.Dropout(0.5), ug.nn.Linear(8, 5)),
    lambda: ug.nn.LayerNorm(6),
    lambda: ug.nn.RMSNorm(6),
    lambda: ug.nn.BatchNorm1d(4),
    lambda: ug.nn.LSTM(6, 5, num_layers=2, batch_first=True),
    lambda: ug.nn.GRU(6, 5, batch_first=True),
    lambda: ug.nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, batch_first=True),
    lambda: ug.nn.TransformerEncoder(ug.nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, batch_first=True), 2),
]


@pytest.mark.parametrize("make", LAYERS)
def test_a_deep_copy_of_a_layer_computes_the_same_and_owns_its_tensors(make):
    ug.manual_seed(0)
    layer = make()
    layer.eval()
    twin = copy.deepcopy(layer)
    assert type(twin) is type(layer) and not twin.training
    x = ug.randn(3, 4, 6)
    out, out_twin = layer(x), twin(x)
    if isinstance(out, tuple):
        out, out_twin = out[0], out_twin[0]
    _same_values(out, out_twin)
    original = dict(layer.state_dict())
    copied = dict(twin.state_dict())
    assert list(copied) == list(original)
    for name, t in copied.items():
        _same_values(t, original[name])
        assert t.data_ptr() != original[name].data_ptr(), name
    for p in twin.parameters():
        assert p.is_leaf and p.requires_grad and isinstance(p, ug.nn.Parameter)
    # Training the copy leaves the original as it was.
    with ug.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    for name, t in layer.state_dict().items():
        _same_values(t, original[name])


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: ug.models.LeNet(1, 10), (2, 1, 28, 28)),
        (lambda: ug.models.build(ug.models.Architecture("transformer")), (2, 28, 28)),
    ],
)
def test_the_built_in_models_copy_with_their_own_parameters(make, shape):
    model = make()
    model.eval()
    twin = copy.deepcopy(model)
    x = ug.randn(*shape)
    _same_values(twin(x), model(x))
    with ug.no_grad():
        for p in twin.parameters():
            p.mul_(0.5)
    assert not np.array_equal(twin(x).numpy(), model(x).numpy())


def test_an_imported_onnx_model_copies_with_its_own_initializers(tmp_path):
    source = ug.nn.Sequential(ug.nn.Linear(4, 3), ug.nn.ReLU(), ug.nn.Linear(3, 2))
    ug.onnx.export(source, ug.randn(2, 4), str(tmp_path / "m.onnx"))
    imported = ug.onnx.load(str(tmp_path / "m.onnx"))
    twin = copy.deepcopy(imported)
    x = ug.randn(2, 4)
    _same_values(twin(x), imported(x))
    with ug.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    _same_values(imported(x), source(x))
    assert not np.array_equal(twin(x).numpy(), imported(x).numpy())


def test_a_batch_norm_copy_keeps_its_own_running_statistics():
    bn = ug.nn.BatchNorm1d(4)
    twin = copy.deepcopy(bn)
    twin(ug.randn(16, 4) * 3 + 2)
    _same_values(bn.running_mean, ug.zeros(4))
    assert float(twin.running_mean.abs().sum()) > 0
    assert int(twin.num_batches_tracked) == 1 and int(bn.num_batches_tracked) == 0


class TiedLM(ug.nn.Module):
    """An embedding tied to the output projection, as in GPT-2: the copy must stay tied."""

    def __init__(self):
        super().__init__()
        self.emb = ug.nn.Embedding(10, 4)
        self.head = ug.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight
        self.block = ug.nn.Linear(4, 4)
        self.again = self.block  # one child under two names
        self.history = {"steps": [1, 2]}

    def forward(self, tokens):
        return self.head(self.again(self.emb(tokens)).tanh())


def test_a_python_model_copy_keeps_ties_shared_children_and_attributes_as_torch_does():
    ug.manual_seed(0)
    model = TiedLM()
    twin = copy.deepcopy(model)
    assert type(twin) is TiedLM
    assert twin.head.weight.data_ptr() == twin.emb.weight.data_ptr() != model.emb.weight.data_ptr()
    assert twin.again is twin.block and twin.block is not model.block
    assert twin.history == model.history and twin.history["steps"] is not model.history["steps"]
    assert [n for n, _ in twin.named_parameters()] == [n for n, _ in model.named_parameters()]
    tokens = ug.tensor([[1, 2, 3]])
    _same_values(twin(tokens), model(tokens))
    twin(tokens).sum().backward()
    assert model.emb.weight.grad is None and twin.emb.weight.grad is not None
    # The copy outlives its original.
    del model
    gc.collect()
    assert twin(tokens).shape == (1, 3, 10)

    # torch's own answer for the same structure.
    t_emb, t_head = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False)
    t_head.weight = t_emb.weight
    t_twin = copy.deepcopy(torch.nn.ModuleDict({"emb": t_emb, "head": t_head}))
    assert t_twin["head"].weight.data_ptr() == t_twin["emb"].weight.data_ptr()


def test_hooks_are_copied_and_parameter_grads_are_not_as_in_torch():
    calls = []
    layer = ug.nn.Linear(3, 2)
    layer.register_forward_hook(lambda m, i, o: calls.append(type(m).__name__))
    layer(ug.ones(1, 3)).sum().backward()
    twin = copy.deepcopy(layer)
    assert twin.weight.grad is None  # torch's Parameter.__deepcopy__ leaves the grad behind
    twin(ug.ones(1, 3))
    assert calls == ["Linear", "Linear"]

    t_layer = torch.nn.Linear(3, 2)
    t_calls = []
    t_layer.register_forward_hook(lambda m, i, o: t_calls.append(1))
    t_layer(torch.ones(1, 3)).sum().backward()
    t_twin = copy.deepcopy(t_layer)
    assert t_twin.weight.grad is None
    t_twin(torch.ones(1, 3))
    assert t_calls == [1, 1]


class Scale(ug.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = ug.nn.Parameter(ug.arange(3.0))
        self.note = "scale"

    def forward(self, x):
        return x * self.w


def test_python_modules_inside_cpp_containers_are_copied_through_python():
    inner = Scale()
    seq = ug.nn.Sequential(inner, inner, ug.nn.Linear(3, 2))
    twin = copy.deepcopy(seq)
    assert type(twin[0]) is Scale and twin[0].note == "scale"
    assert twin[0] is twin[1] and twin[0] is not inner
    x = ug.ones(1, 3)
    _same_values(twin(x), seq(x))

    # A copy begun in C++ (TransformerEncoder copies its layer) reaching a Python module.
    layer = ug.nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0)
    layer.extra = Scale()
    encoder = ug.nn.TransformerEncoder(layer, 2)
    first, second = encoder.layers[0].extra, encoder.layers[1].extra
    assert type(first) is Scale and first is not second and first is not layer.extra
    with ug.no_grad():
        first.w.mul_(2.0)
    _same_values(second.w, ug.arange(3.0))
    _same_values(layer.extra.w, ug.arange(3.0))


def test_a_python_subclass_of_a_cpp_layer_is_refused_rather_than_copied_as_its_base():
    class Wider(ug.nn.Linear):
        pass

    with pytest.raises(TypeError, match=r"deepcopy.*Wider.*Linear"):
        copy.deepcopy(Wider(3, 4))


def test_tensor_deepcopy_keeps_views_of_one_storage_shared_as_torch_does():
    for lib in (ug, torch):
        base = lib.arange(6.0)
        a, b = base[1:4], base[2:]
        ca, cb = copy.deepcopy([a, b])
        ca[1] = 100.0
        assert float(cb[0]) == 100.0 and float(base[2]) == 2.0, lib.__name__


def test_tensor_deepcopy_refuses_non_leaves_and_keeps_grad_and_parameter_marks():
    x = ug.randn(3, requires_grad=True)
    x.grad = ug.ones(3)
    c = copy.deepcopy(x)
    assert c.is_leaf and c.requires_grad and c.data_ptr() != x.data_ptr()
    _same_values(c.grad, x.grad)
    with pytest.raises(RuntimeError, match=r"deepcopy.*leaves.*mul"):
        copy.deepcopy(x * 2)
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)
    p = ug.nn.Parameter(ug.ones(2))
    assert isinstance(copy.deepcopy(p), ug.nn.Parameter)
    assert not isinstance(copy.deepcopy(ug.ones(2)), ug.nn.Parameter)


def test_copy_copy_shares_the_data_as_torch_does():
    for lib in (ug, torch):
        x = lib.ones(3, requires_grad=True)
        c = copy.copy(x)
        assert c.data_ptr() == x.data_ptr() and c.requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_pickle_round_trips_values_dtype_and_requires_grad(dtype):
    x = (ug.randn(4, 5) * 10).to(getattr(ug, dtype))
    view = x.t()[1:3]  # a non-contiguous view: pickled as its values
    for t in (x, view):
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype == t.dtype and back.shape == t.shape and not back.requires_grad
        _same_values(back.float(), t.float())
    if x.is_floating_point():
        leaf = x.detach().requires_grad_()
        assert pickle.loads(pickle.dumps(leaf)).requires_grad
    assert isinstance(pickle.loads(pickle.dumps(ug.nn.Parameter(ug.ones(2)))), ug.nn.Parameter)


def test_pickle_refuses_a_state_that_is_not_a_tensors():
    x = ug.Tensor.__new__(ug.Tensor)
    with pytest.raises(ValueError, match=r"pickle.*8 bytes, got 3"):
        x.__setstate__((b"\0" * 3, "float32", (2,), False, False))
    with pytest.raises(ValueError, match="pickle"):
        x.__setstate__((b"", "float32"))


def test_copying_a_traced_tensor_names_the_line():
    @ug.jit
    def f(x):
        copy.deepcopy(x)
        return x

    with pytest.raises(Exception, match="copy.deepcopy"):
        f(ug.ones(2))
