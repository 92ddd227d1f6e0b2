"""ug.onnx.load on torch's nn.LSTM and nn.GRU as both exporters write them (ONNX LSTM / GRU nodes):
outputs and gradients against torch."""
import numpy as np
import pytest
import torch

import unigrad as ug
from test_onnx_import import export, to_ug


class Recurrent(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(8, 16, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers_match_torch(tmp_path, kind, exporter):
    torch.manual_seed(3)
    model = Recurrent(kind).eval()
    path = tmp_path / f"{kind}.onnx"
    export(model, torch.randn(2, 6, 8), str(path), exporter)
    m = ug.onnx.load(path)
    for batch in (2, 5):
        x = torch.randn(batch, 6, 8)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(m(to_ug(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
    # The exporters fold torch's weights into reordered gate blocks, so compare the input's
    # gradient, which passes back through every step and gate.
    x = torch.randn(3, 6, 8, requires_grad=True)
    model(x).pow(2).sum().backward()
    ux = ug.tensor(x.detach().numpy(), requires_grad=True)
    m(ux).pow(2).sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert all(p.grad is not None for _, p in m.named_parameters() if p.ndim == 3)
