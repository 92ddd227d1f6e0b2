"""ug.nn layers against torch.nn with identical weights and inputs: outputs and gradients of
input and parameters, in train and eval modes."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def to_np(t):
    return t.detach().numpy()


def twins(ug_layer, torch_layer):
    """Gives the unigrad layer the torch layer's parameters and buffers."""
    ug_layer.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})
    return ug_layer, torch_layer


def compare(ug_layer, torch_layer, *inputs, call=None, rtol=1e-5, atol=1e-5, grads=True):
    """Runs both layers on the same inputs; compares outputs, then the gradients of a random
    projection of the first output with respect to the inputs and every parameter."""
    call = call or (lambda layer, *xs: layer(*xs))
    u_in = [ug.tensor(x, requires_grad=grads and x.dtype.kind == "f") for x in inputs]
    t_in = [torch.tensor(x, requires_grad=grads and x.dtype.kind == "f") for x in inputs]
    uy, ty = call(ug_layer, *u_in), call(torch_layer, *t_in)
    uy0, ty0 = (uy[0], ty[0]) if isinstance(ty, tuple) else (uy, ty)
    np.testing.assert_allclose(to_np(uy0), to_np(ty0), rtol=rtol, atol=atol)
    if not grads:
        return uy, ty
    w = rand(*ty0.shape).astype(to_np(ty0).dtype)
    (uy0 * ug.tensor(w)).sum().backward()
    (ty0 * torch.tensor(w)).sum().backward()
    for u, t in zip(u_in, t_in):
        if t.grad is not None:
            np.testing.assert_allclose(to_np(u.grad), to_np(t.grad), rtol=rtol * 10, atol=atol * 10)
    for (name, up), (tname, tp) in zip(ug_layer.named_parameters(), torch_layer.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(to_np(up.grad), to_np(tp.grad), rtol=rtol * 10, atol=atol * 10, err_msg=name)
    return uy, ty


# ---- normalization ------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 5)), ("BatchNorm1d", (8, 5, 7)), ("BatchNorm2d", (4, 5, 6, 7))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_steps_then_eval(cls, shape, momentum):
    u, t = twins(getattr(ug.nn, cls)(5, momentum=momentum), getattr(torch.nn, cls)(5, momentum=momentum))
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-0.5, 0.5)
    twins(u, t)
    for _ in range(3):
        compare(u, t, rand(*shape) * 2 + 1)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(u.state_dict()[name].numpy(), t.state_dict()[name].numpy(), rtol=1e-5, atol=1e-6)
    u.eval(), t.eval()
    compare(u, t, rand(*shape))


def test_batchnorm_without_running_stats_and_errors():
    compare(*twins(ug.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
                   torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False)), rand(2, 3, 4, 4))
    with pytest.raises(ValueError, match="expected 4D"):
        ug.nn.BatchNorm2d(3)(ug.zeros(2, 3))
    with pytest.raises(ValueError, match="channels"):
        ug.nn.BatchNorm1d(3)(ug.zeros(2, 4))


@pytest.mark.parametrize("shape,normalized", [((4, 10), 10), ((2, 3, 8), (3, 8))])
def test_layernorm(shape, normalized):
    u, t = twins(ug.nn.LayerNorm(normalized), torch.nn.LayerNorm(normalized))
    with torch.no_grad():
        t.weight.normal_()
        t.bias.normal_()
    compare(*twins(u, t), rand(*shape))
    compare(*twins(ug.nn.LayerNorm(normalized, elementwise_affine=False), torch.nn.LayerNorm(normalized, elementwise_affine=False)),
            rand(*shape))


def test_groupnorm_and_rmsnorm():
    u, t = ug.nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6)
    with torch.no_grad():
        t.weight.normal_()
        t.bias.normal_()
    compare(*twins(u, t), rand(3, 6, 4, 5))
    u, t = ug.nn.RMSNorm(8), torch.nn.RMSNorm(8)
    with torch.no_grad():
        t.weight.normal_()
    compare(*twins(u, t), rand(5, 8))
    with pytest.raises(ValueError, match="divisible"):
        ug.nn.GroupNorm(4, 6)


# ---- dropout and embedding ----------------------------------------------------------------------

def test_dropout_is_inverted_in_training_and_identity_in_eval():
    d = ug.nn.Dropout(0.25)
    x = ug.ones(100_000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.01
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
    ug.manual_seed(3)
    a = ug.nn.Dropout()(ug.ones(50)).numpy()
    ug.manual_seed(3)
    np.testing.assert_array_equal(ug.nn.Dropout()(ug.ones(50)).numpy(), a)
    assert repr(ug.nn.Dropout(0.5)) == repr(torch.nn.Dropout(0.5))


def test_embedding_with_padding_idx():
    u, t = ug.nn.Embedding(10, 4, padding_idx=0), torch.nn.Embedding(10, 4, padding_idx=0)
    assert float(u.weight[0].abs().sum().item()) == 0
    idx = np.array([[0, 3, 9], [2, 0, 3]])
    uy, ty = compare(*twins(u, t), idx)
    assert float(u.weight.grad[0].abs().sum().item()) == 0
    assert repr(u) == repr(t)


# ---- losses ---------------------------------------------------------------------------------------

LOGITS, LABELS = rand(6, 4), RNG.integers(0, 4, 6)
CLASS_WEIGHTS = np.array([0.2, 1.0, 2.0, 0.5], np.float32)


@pytest.mark.parametrize("make", [
    lambda m, w: m.nn.CrossEntropyLoss(),
    lambda m, w: m.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1),
    lambda m, w: m.nn.CrossEntropyLoss(ignore_index=2, reduction="sum"),
    lambda m, w: m.nn.CrossEntropyLoss(reduction="none"),
])
def test_cross_entropy_loss_module(make):
    u = make(ug, ug.tensor(CLASS_WEIGHTS))
    t = make(torch, torch.tensor(CLASS_WEIGHTS))
    compare(u, t, LOGITS, LABELS)


def test_cross_entropy_with_probabilities_and_large_logits():
    probs = np.abs(rand(6, 4))
    probs /= probs.sum(1, keepdims=True)
    compare(ug.nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), LOGITS, probs)
    big = LOGITS * 1e4
    uy, _ = compare(ug.nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), big, LABELS, rtol=1e-5, atol=1e-2)
    assert np.isfinite(uy.item())


@pytest.mark.parametrize("name,kwargs,target", [
    ("NLLLoss", {}, "labels"),
    ("MSELoss", {}, "dense"), ("MSELoss", {"reduction": "sum"}, "dense"),
    ("L1Loss", {}, "dense"), ("SmoothL1Loss", {"beta": 0.5}, "dense"), ("HuberLoss", {"delta": 0.7}, "dense"),
    ("BCELoss", {}, "binary"), ("BCEWithLogitsLoss", {}, "binary"), ("KLDivLoss", {"reduction": "batchmean"}, "probs"),
])
def test_loss_modules(name, kwargs, target):
    x = rand(6, 4)
    if name == "NLLLoss":
        x = torch.log_softmax(torch.tensor(x), 1).numpy()
    if name == "BCELoss":
        x = 1 / (1 + np.exp(-x))
    if name == "KLDivLoss":
        x = torch.log_softmax(torch.tensor(x), 1).numpy()
    y = {"labels": LABELS, "dense": rand(6, 4), "binary": (rand(6, 4) > 0).astype(np.float32),
         "probs": torch.softmax(torch.tensor(rand(6, 4)), 1).numpy()}[target]
    compare(getattr(ug.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), x, y)


def test_bce_with_logits_pos_weight_and_cosine_embedding():
    pw = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    compare(ug.nn.BCEWithLogitsLoss(pos_weight=ug.tensor(pw)), torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw)),
            rand(6, 4) * 30, (rand(6, 4) > 0).astype(np.float32))
    target = np.array([1, -1, 1, -1, 1, 1], np.float32)
    compare(ug.nn.CosineEmbeddingLoss(margin=0.2), torch.nn.CosineEmbeddingLoss(margin=0.2), rand(6, 5), rand(6, 5),
            target)
    with pytest.raises(ValueError, match="reduction"):
        ug.nn.MSELoss(reduction="avg")


# ---- attention ------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_self_attention_with_weights(batch_first):
    u, t = twins(ug.nn.MultiheadAttention(16, 4, batch_first=batch_first),
                 torch.nn.MultiheadAttention(16, 4, batch_first=batch_first))
    x = rand(3, 5, 16)
    call = lambda m, x: m(x, x, x)  # noqa: E731
    (uo, uw), (to, tw) = compare(u, t, x, call=call)
    np.testing.assert_allclose(uw.numpy(), to_np(tw), rtol=1e-5, atol=1e-6)


def test_multihead_cross_attention_with_masks():
    u, t = twins(ug.nn.MultiheadAttention(8, 2, batch_first=True), torch.nn.MultiheadAttention(8, 2, batch_first=True))
    q, kv = rand(2, 3, 8), rand(2, 6, 8)
    pad = np.array([[False] * 5 + [True], [False] * 4 + [True] * 2])
    causal = np.triu(np.ones((3, 6), bool), 1)
    for kwargs in ({"key_padding_mask": pad}, {"attn_mask": causal}, {"attn_mask": causal, "key_padding_mask": pad},
                   {"attn_mask": rand(3, 6)}, {"need_weights": False, "attn_mask": causal},
                   {"average_attn_weights": False, "key_padding_mask": pad}):
        def call(m, q, kv, lib=None, kwargs=kwargs):
            conv = (lambda a: ug.tensor(a)) if isinstance(m, ug.nn.Module) else torch.tensor
            return m(q, kv, kv, **{k: conv(v) for k, v in kwargs.items() if k.endswith("mask")},
                     **{k: v for k, v in kwargs.items() if not k.endswith("mask")})
        u.zero_grad(), t.zero_grad()
        (uo, uw), (to, tw) = compare(u, t, q, kv, call=call)
        if tw is not None:
            np.testing.assert_allclose(uw.numpy(), to_np(tw), rtol=1e-5, atol=1e-6)


def test_multihead_attention_unbatched_and_errors():
    u, t = twins(ug.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2))
    compare(u, t, rand(4, 8), call=lambda m, x: m(x, x, x))
    with pytest.raises(ValueError, match="multiple"):
        ug.nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embedding size"):
        u(ug.zeros(2, 3, 5), ug.zeros(2, 3, 5), ug.zeros(2, 3, 5))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer(norm_first, activation):
    kwargs = dict(dim_feedforward=32, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first)
    u, t = twins(ug.nn.TransformerEncoderLayer(16, 4, **kwargs), torch.nn.TransformerEncoderLayer(16, 4, **kwargs))
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    compare(u, t, rand(2, 7, 16), rtol=1e-4, atol=1e-5)
    causal = np.triu(np.ones((7, 7), bool), 1)
    u.zero_grad(), t.zero_grad()
    compare(u, t, rand(2, 7, 16), call=lambda m, x: m(x, src_mask=(ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor)(causal)),
            rtol=1e-4, atol=1e-5)


def test_transformer_encoder_layer_eval_matches_torch_fast_path():
    u, t = twins(ug.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True))
    u.eval(), t.eval()
    with torch.no_grad():
        compare(u, t, rand(2, 5, 16), grads=False, rtol=1e-4, atol=1e-5)


def test_default_inits_follow_torch():
    ug.manual_seed(0)
    mha = ug.nn.MultiheadAttention(64, 4)
    bound = np.sqrt(6 / (64 + 3 * 64))
    assert float(mha.in_proj_weight.abs().max().item()) <= bound
    assert float(mha.in_proj_bias.abs().sum().item()) == 0 and float(mha.out_proj.bias.abs().sum().item()) == 0
    emb = ug.nn.Embedding(1000, 16).weight.numpy()
    assert abs(emb.std() - 1) < 0.02
    ln = ug.nn.LayerNorm(5)
    assert ln.weight.numpy().tolist() == [1] * 5 and ln.bias.numpy().tolist() == [0] * 5


# ---- convolution and pooling ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2), groups=2),
    dict(in_channels=3, out_channels=5, kernel_size=5, padding="same", bias=False),
])
def test_conv2d_layer(kwargs):
    u, t = twins(ug.nn.Conv2d(**kwargs), torch.nn.Conv2d(**kwargs))
    compare(u, t, rand(2, kwargs["in_channels"], 9, 8), rtol=1e-4, atol=1e-5)
    assert repr(u) == repr(t)


def test_conv1d_and_conv_transpose2d_layers():
    compare(*twins(ug.nn.Conv1d(3, 4, 3, stride=2, padding=1), torch.nn.Conv1d(3, 4, 3, stride=2, padding=1)),
            rand(2, 3, 11), rtol=1e-4, atol=1e-5)
    kw = dict(in_channels=4, out_channels=3, kernel_size=3, stride=2, padding=1, output_padding=1)
    compare(*twins(ug.nn.ConvTranspose2d(**kw), torch.nn.ConvTranspose2d(**kw)), rand(2, 4, 5, 6), rtol=1e-4, atol=1e-5)


def test_pooling_layers():
    x = rand(2, 3, 9, 8)
    compare(ug.nn.MaxPool2d(2), torch.nn.MaxPool2d(2), x)
    compare(ug.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), x)
    compare(ug.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
            torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), x)
    compare(ug.nn.AdaptiveAvgPool2d((3, 2)), torch.nn.AdaptiveAvgPool2d((3, 2)), x)
    compare(ug.nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1), x)


def test_conv_default_init_matches_torch_bounds():
    ug.manual_seed(0)
    conv = ug.nn.Conv2d(6, 16, 5)
    bound = 1 / np.sqrt(6 * 25)
    assert float(conv.weight.abs().max().item()) <= bound and float(conv.bias.abs().max().item()) <= bound
    assert abs(conv.weight.numpy().std() - bound / np.sqrt(3)) < 0.05 * bound


def test_lenet_matches_torch():
    def make(m):
        return m.nn.Sequential(m.nn.Conv2d(1, 6, 5, padding=2), m.nn.ReLU(), m.nn.MaxPool2d(2),
                               m.nn.Conv2d(6, 16, 5), m.nn.ReLU(), m.nn.MaxPool2d(2), m.nn.Flatten(),
                               m.nn.Linear(400, 120), m.nn.ReLU(), m.nn.Linear(120, 84), m.nn.ReLU(),
                               m.nn.Linear(84, 10))
    u, t = twins(make(ug), make(torch))
    compare(u, t, rand(4, 1, 28, 28), rtol=1e-4, atol=1e-5)
