"""ug.onnx.load on models written by torch's ONNX exporters (TorchScript, dynamo=False, and the
default dynamo one): outputs and gradients against torch, fine-tuning with ug.optim. Each model
is exported once per module (the dynamo exporter is slow); hostile files are in
test_onnx_import_hostile.py, single ops against onnxruntime in test_onnx_import_ops.py."""
import warnings

import numpy as np
import pytest
import torch

import unigrad as ug
from test_nn_module import TorchMLP as MLP, to_ug  # the articles' MLP in torch

torch.manual_seed(0)


class LeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(16 * 5 * 5, 120)
        self.fc2 = torch.nn.Linear(120, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


class Wrapped(torch.nn.Module):
    """Calls the encoder with x alone: TorchScript tracing of the layer's own signature fails."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def layer():
    return torch.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)


MODELS = {
    "mlp": (MLP, (784,)),
    "lenet": (LeNet, (1, 28, 28)),
    "encoder_layer": (lambda: Wrapped(layer()), (7, 16)),
    "encoder": (lambda: Wrapped(torch.nn.TransformerEncoder(layer(), 2, enable_nested_tensor=False)), (7, 16)),
}
EXPORTERS = ["torchscript", "dynamo"]


def export(model, sample, path, exporter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            torch.onnx.export(model, (sample,), path, input_names=["x"], dynamo=True, verbose=False,
                              dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
        else:
            torch.onnx.export(model, (sample,), path, input_names=["x"], dynamo=False,
                              dynamic_axes={"x": {0: "batch"}})


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """name -> (torch model, {exporter: path}), each exported on first use."""
    folder = tmp_path_factory.mktemp("onnx")
    cache = {}

    def get(name, exporter):
        if name not in cache:
            factory, shape = MODELS[name]
            torch.manual_seed(len(cache))
            cache[name] = (factory().eval(), shape, {})
        model, shape, paths = cache[name]
        if exporter not in paths:
            paths[exporter] = folder / exporter / f"{name}.onnx"
            paths[exporter].parent.mkdir(exist_ok=True)
            export(model, torch.randn(3, *shape), str(paths[exporter]), exporter)
        return model, shape, paths[exporter]

    return get


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", list(MODELS))
def test_outputs_match_torch(exported, name, exporter):
    model, shape, path = exported(name, exporter)
    m = ug.onnx.load(str(path))
    assert [i.name for i in m.inputs] == ["x"]
    assert m.inputs[0].shape == (-1, *shape) and m.inputs[0].dtype == ug.float32
    assert len(m.outputs) == 1
    for batch in (2, 5):
        x = torch.randn(batch, *shape)
        with torch.no_grad():
            expected = model(x).numpy()
        actual = m(to_ug(x)).numpy()
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_mlp_state_dict_has_torch_names_and_values(exported, exporter):
    model, _, path = exported("mlp", exporter)
    m = ug.onnx.load(path)
    state = m.state_dict()
    assert list(state) == list(model.state_dict())
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(state[key].numpy(), value.numpy())
    assert [n for n, _ in m.named_parameters()] == list(model.state_dict())
    assert all(p.requires_grad for p in m.parameters())
    assert m.fc1.weight.shape == (128, 784)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_mlp_gradients_match_torch(exported, exporter):
    model, shape, path = exported("mlp", exporter)
    m = ug.onnx.load(path)
    x = torch.randn(6, *shape)
    target = torch.randint(0, 10, (6,))
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x), target).backward()
    loss = ug.nn.functional.cross_entropy(m(to_ug(x)), ug.tensor(target.numpy()))
    loss.backward()
    grads = dict(m.named_parameters())
    for key, p in model.named_parameters():
        np.testing.assert_allclose(grads[key].grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_lenet_gradients_match_torch(exported, exporter):
    model, shape, path = exported("lenet", exporter)
    m = ug.onnx.load(path)
    x = torch.randn(4, *shape)
    model.zero_grad()
    (model(x) ** 2).sum().backward()
    (m(to_ug(x)) ** 2).sum().backward()
    grads = dict(m.named_parameters())
    for key, p in model.named_parameters():
        np.testing.assert_allclose(grads[key].grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_fine_tuning_lowers_the_loss(exported, optimizer):
    _, shape, path = exported("mlp", "torchscript")
    m = ug.onnx.load(path)
    gen = np.random.default_rng(0)
    x = ug.tensor(gen.standard_normal((32, *shape)).astype(np.float32))
    y = ug.tensor(gen.integers(0, 10, 32))
    opt = ug.optim.SGD(m.parameters(), lr=0.05) if optimizer == "SGD" else ug.optim.Adam(m.parameters(), lr=1e-3)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ug.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.9, losses


def test_transformer_trains_through_the_imported_graph(exported):
    _, shape, path = exported("encoder_layer", "dynamo")
    m = ug.onnx.load(path)
    x = ug.tensor(np.random.default_rng(1).standard_normal((4, *shape)).astype(np.float32))
    opt = ug.optim.Adam(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = (m(x) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    assert all(p.grad is not None for n, p in m.named_parameters() if "weight" in n)


def test_no_grad_records_nothing(exported):
    _, shape, path = exported("mlp", "torchscript")
    m = ug.onnx.load(path)
    x = ug.tensor(np.ones((2, *shape), np.float32))
    with ug.no_grad():
        y = m(x)
    assert not y.requires_grad and y.grad_fn is None
    assert m(x).requires_grad


def test_load_state_dict_from_torch_changes_the_outputs(exported):
    model, shape, path = exported("mlp", "dynamo")
    m = ug.onnx.load(path)
    other = MLP().eval()
    m.load_state_dict({k: to_ug(v) for k, v in other.state_dict().items()})
    x = torch.randn(3, *shape)
    with torch.no_grad():
        expected = other(x).numpy()
    np.testing.assert_allclose(m(to_ug(x)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_inputs_are_checked(exported):
    _, shape, path = exported("mlp", "torchscript")
    m = ug.onnx.load(path)
    with pytest.raises(ValueError, match=r"input 'x' must have shape \[\?, 784\]"):
        m(ug.zeros((2, 10)))
    with pytest.raises(TypeError, match="must have dtype float32"):
        m(ug.zeros((2, 784), dtype=ug.float64))
    with pytest.raises(ValueError, match="takes 1 input"):
        m.forward(ug.zeros((2, 784)), ug.zeros((2, 784)))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such model file"):
        ug.onnx.load(tmp_path / "absent.onnx")


@pytest.mark.parametrize("name, opset", [("lenet", 13), ("encoder_layer", 14), ("encoder_layer", 17)])
def test_older_opsets_match_torch(tmp_path, name, opset):
    """Opset 14 spells LayerNormalization out (ReduceMean with axes as an attribute, Pow, Sqrt...)."""
    factory, shape = MODELS[name]
    torch.manual_seed(5)
    model = factory().eval()
    path = tmp_path / f"{name}_{opset}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, *shape),), str(path), input_names=["x"], dynamo=False,
                          opset_version=opset, dynamic_axes={"x": {0: "batch"}})
    m = ug.onnx.load(path)
    assert m.opset == opset
    x = torch.randn(3, *shape)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(m(to_ug(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
