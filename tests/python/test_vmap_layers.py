"""Per-example gradients of the common layers (torch.func's per-sample-gradient recipe:
vmap(grad) of functional_call over the parameters), eagerly and compiled around the vmap, run
batched, with no call per example, and match torch.func's, in float64. Each gradient element here sums at most about 50 products
below 3 in magnitude: two orders of summation differ by at most about n eps sum|terms| =
50 eps 150 (ATOL; the largest difference seen is 1.4e-14)."""
import numpy as np
import pytest
import torch

import unigrad as ug

B = 3
ATOL = 50 * np.finfo(np.float64).eps * 150
LAYERS = {  # name: (make(m), one example's input shapes, integer inputs' upper bound)
    "Linear": (lambda m: m.nn.Linear(4, 3), [(2, 4)], None),
    "Bilinear": (lambda m: m.nn.Bilinear(4, 4, 3), [(2, 4), (2, 4)], None),
    "Conv1d": (lambda m: m.nn.Conv1d(2, 3, 3, padding=1), [(2, 6)], None),
    "Conv2d": (lambda m: m.nn.Conv2d(2, 3, 3, padding=1, stride=2), [(2, 6, 6)], None),
    "ConvTranspose2d": (lambda m: m.nn.ConvTranspose2d(2, 3, 3, stride=2), [(2, 4, 4)], None),
    "Conv3d": (lambda m: m.nn.Conv3d(2, 2, 2), [(2, 3, 3, 3)], None),
    "BatchNorm1d in eval mode": (lambda m: m.nn.BatchNorm1d(4).eval(), [(2, 4)], None),
    "LayerNorm": (lambda m: m.nn.LayerNorm(4), [(2, 4)], None),
    "GroupNorm": (lambda m: m.nn.GroupNorm(2, 4), [(1, 4, 5)], None),
    "InstanceNorm1d": (lambda m: m.nn.InstanceNorm1d(4, affine=True), [(4, 5)], None),
    "LSTM": (lambda m: m.nn.LSTM(4, 3, batch_first=True), [(1, 5, 4)], None),
    "GRU": (lambda m: m.nn.GRU(4, 3), [(5, 1, 4)], None),
    "RNN": (lambda m: m.nn.RNN(4, 3), [(5, 1, 4)], None),
    "MultiheadAttention": (lambda m: m.nn.MultiheadAttention(4, 2, batch_first=True), [(1, 5, 4)] * 3, None),
    "TransformerEncoderLayer": (
        lambda m: m.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True), [(5, 4)], None),
    "MaxPool2d": (lambda m: m.nn.Sequential(m.nn.Conv2d(2, 2, 1), m.nn.MaxPool2d(2)), [(2, 4, 4)], None),
    "AdaptiveAvgPool2d": (
        lambda m: m.nn.Sequential(m.nn.Conv2d(2, 2, 1), m.nn.AdaptiveAvgPool2d(3)), [(2, 5, 5)], None),
    "bilinear Upsample": (lambda m: m.nn.Sequential(m.nn.Conv2d(2, 2, 1), m.nn.Upsample(scale_factor=2, mode="bilinear")),
                          [(1, 2, 3, 3)], None),
    "PixelShuffle": (lambda m: m.nn.Sequential(m.nn.Conv2d(4, 4, 1), m.nn.PixelShuffle(2)), [(4, 2, 2)], None),
    "PReLU": (lambda m: m.nn.PReLU(), [(2, 4)], None),
    "Embedding": (lambda m: m.nn.Embedding(10, 3), [(5,)], 10),
    "EmbeddingBag": (lambda m: m.nn.EmbeddingBag(10, 3, mode="mean"), [(2, 4)], 10),
}


@pytest.fixture
def float64():
    torch_before, ug_before = torch.get_default_dtype(), ug.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    ug.set_default_dtype(ug.float64)
    yield
    torch.set_default_dtype(torch_before)
    ug.set_default_dtype(ug_before)


def loss(m, layer):
    def f(params, *xs):
        y = (torch.func if m is torch else ug.func).functional_call(layer, params, xs)
        return (y[0] if isinstance(y, tuple) else y).sin().sum()
    return f


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_per_example_gradients_of_a_layer_batch_and_match_torch(name, float64):
    make, shapes, high = LAYERS[name]
    rng = np.random.default_rng(0)
    inputs = [rng.integers(0, high, (B, *s)) if high else rng.normal(size=(B, *s)) for s in shapes]
    torch.manual_seed(0)
    t_layer, u_layer = make(torch), make(ug)
    u_layer.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t_layer.state_dict().items()})
    t_params = {k: v.detach() for k, v in t_layer.named_parameters()}
    # torch.func cannot batch its recurrent layers' kernels: there its own gradient per example
    each = [torch.func.grad(loss(torch, t_layer))(t_params, *(torch.tensor(x[b]) for x in inputs)) for b in range(B)]
    per_example = ug.vmap(ug.grad(loss(ug, u_layer)), in_axes=(None,) + (0,) * len(inputs))
    args = [{k: ug.tensor(v.numpy()) for k, v in t_params.items()}, *(ug.tensor(x) for x in inputs)]
    compiled = ug.jit(per_example)
    compiled(*args)  # the trace; the second call runs the program
    before = ug._C._functional.vmap_fallbacks()
    for how, got in [("vmap(grad)", per_example(*args)), ("jit(vmap(grad))", compiled(*args))]:
        assert ug._C._functional.vmap_fallbacks() == before, ug._C._functional.last_vmap_fallback()
        assert sorted(got) == sorted(t_params)
        for k in t_params:
            np.testing.assert_allclose(got[k].numpy(), torch.stack([e[k] for e in each]).numpy(), rtol=0, atol=ATOL,
                                       err_msg=f"{how}: {k}")
