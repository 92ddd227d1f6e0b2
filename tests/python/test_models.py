"""ug.models: the built-in architectures compute what their torch equivalents compute with the
same weights, and save_model / load_model rebuild them from one safetensors file."""
import numpy as np
import pytest
import torch
from torch import nn

import unigrad as ug


def torch_lenet():
    # shared/bench/peers/models.py's LeNet, the benchmarks' reference.
    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
            x = torch.max_pool2d(torch.relu(self.conv2(x)), 2).flatten(1)
            return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

    return LeNet()


class TorchTransformerClassifier(nn.Module):
    def __init__(self, tokens=28, features=28, d_model=64, heads=4, ff=128, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Linear(features, d_model)
        self.position = nn.Parameter(torch.zeros(tokens, d_model))
        self.encoder = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=True) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)
        self.tokens, self.features = tokens, features

    def forward(self, x):
        h = self.embed(x.reshape(x.shape[0], self.tokens, self.features)) + self.position
        for layer in self.encoder:
            h = layer(h)
        return self.head(self.norm(h.mean(1)))


def copy_weights(ug_model, torch_model):
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in ug_model.state_dict().items()}
    torch_model.load_state_dict(state)


@pytest.mark.parametrize("name,make_torch", [
    ("mlp", lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))),
    ("lenet", torch_lenet),
    ("transformer", TorchTransformerClassifier),
])
def test_models_match_torch_with_the_same_weights(name, make_torch):
    ug.manual_seed(0)
    model = ug.models.build(ug.models.Architecture(name))
    reference = make_torch()
    copy_weights(model, reference)
    x = np.random.default_rng(0).random((5, 1, 28, 28), dtype=np.float32)
    model.eval()
    reference.eval()
    got = model(ug.tensor(x)).numpy()
    want = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert model.num_parameters() == sum(p.numel() for p in reference.parameters())


def test_save_model_round_trip_keeps_architecture_and_weights(tmp_path):
    arch = ug.models.Architecture("transformer", layers=1, d_model=32, heads=2)
    model = ug.models.build(arch)
    assert arch.config["ff"] == 128  # defaults filled in
    path = str(tmp_path / "model.safetensors")
    ug.models.save_model(model, arch, path)
    back, back_arch = ug.models.load_model(path)
    assert back_arch.name == "transformer" and back_arch.config == arch.config
    assert not back.training
    model.eval()
    x = ug.rand(3, 28, 28)
    assert ug.equal(back(x), model(x))
    # The file is plain safetensors: other tools read the weights.
    from safetensors.numpy import load_file
    assert set(load_file(path)) == set(model.state_dict())


def test_bad_architectures_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'resnet'.*lenet, mlp, transformer"):
        ug.models.build(ug.models.Architecture("resnet"))
    with pytest.raises(ValueError, match="mlp has no setting 'depth'"):
        ug.models.build(ug.models.Architecture("mlp", depth=3))
    with pytest.raises(ValueError, match="heads"):
        ug.models.build(ug.models.Architecture("transformer", d_model=30, heads=4))
    path = str(tmp_path / "weights.safetensors")
    ug.save({"w": ug.zeros(2)}, path)
    with pytest.raises(ValueError, match="without an architecture"):
        ug.models.load_model(path)
    ug.save({"w": ug.zeros(2)}, path, metadata={"ug.architecture": "mlp", "ug.config": "[1, 2]"})
    with pytest.raises(ValueError, match="not a JSON object"):
        ug.models.load_model(path)
