"""ug.nn layers against torch.nn with identical weights and inputs: outputs and gradients of
input and parameters, in train and eval modes."""
import gc

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, assert_close, check_grad, check_layer

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def to_np(t):
    return t.detach().numpy()


def twins(ug_layer, torch_layer):
    """Gives the unigrad layer the torch layer's parameters and buffers."""
    ug_layer.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})
    return ug_layer, torch_layer


# ---- normalization ------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 5)), ("BatchNorm1d", (8, 5, 7)), ("BatchNorm2d", (4, 5, 6, 7))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_steps_then_eval(cls, shape, momentum):
    u, t = twins(getattr(ug.nn, cls)(5, momentum=momentum), getattr(torch.nn, cls)(5, momentum=momentum))
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-0.5, 0.5)
    twins(u, t)
    count = int(np.prod(shape)) // 5  # every statistic and parameter gradient sums over a channel
    batches = [rand(*shape) * 2 + 1 for _ in range(3)]
    for x in batches:
        check_layer(u, t, x, n=count)
    # The running statistics average the batches' means and unbiased variances (weights <= 1):
    # at most the largest batch's mean |x| and Σx² / (count - 1) per channel.
    dims = tuple(d for d in range(len(shape)) if d != 1)
    terms = {"running_mean": np.max([np.abs(x).mean(dims) for x in batches], 0),
             "running_var": np.max([(x.astype(np.float64) ** 2).sum(dims) / (count - 1) for x in batches], 0),
             "num_batches_tracked": None}
    for name, magnitudes in terms.items():
        assert_close(u.state_dict()[name].numpy(), t.state_dict()[name].numpy(), terms=magnitudes,
                     n=count if magnitudes is not None else None, path=name)
    u.eval(), t.eval()
    check_layer(u, t, rand(*shape), n={"weight": count, "bias": count})  # eval: only the parameters' gradients sum


def test_batchnorm_without_running_stats_and_errors():
    check_layer(*twins(ug.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
                   torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False)), rand(2, 3, 4, 4), n=32)
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
    n = max(int(np.prod(normalized)), int(np.prod(shape)) // int(np.prod(normalized)))  # a row; a column's gradient
    check_layer(*twins(u, t), rand(*shape), n=n)
    check_layer(*twins(ug.nn.LayerNorm(normalized, elementwise_affine=False), torch.nn.LayerNorm(normalized, elementwise_affine=False)),
            rand(*shape), n=n)


def test_groupnorm_and_rmsnorm():
    u, t = ug.nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6)
    with torch.no_grad():
        t.weight.normal_()
        t.bias.normal_()
    check_layer(*twins(u, t), rand(3, 6, 4, 5), n=60)  # a group: 3 channels x 20; a channel's weight: 3 x 20
    u, t = ug.nn.RMSNorm(8), torch.nn.RMSNorm(8)
    with torch.no_grad():
        t.weight.normal_()
    check_layer(*twins(u, t), rand(5, 8))
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


@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout"])
def test_dropout_attributes_are_settable_as_torchs(cls):
    """p and inplace are plain attributes in torch (a schedule lowers p as training goes); they
    were read-only. A p outside [0, 1] is refused when set, as when given."""
    d, t = getattr(ug.nn, cls)(0.5), getattr(torch.nn, cls)(0.5)
    d.p, t.p = 0.0, 0.0
    d.inplace = t.inplace = True
    assert (d.p, d.inplace, repr(d)) == (t.p, t.inplace, repr(t))
    x = ug.randn(4, 3, 5)
    np.testing.assert_array_equal(d(x.clone()).numpy(), x.numpy())  # p = 0 keeps everything
    d.p = 1.0
    assert float(d(ug.ones(4, 3, 5)).abs().sum()) == 0
    with pytest.raises(ValueError, match=rf"\[{cls}\] p must be in \[0, 1\], got 1.5"):
        d.p = 1.5


def test_embedding_with_padding_idx():
    u, t = ug.nn.Embedding(10, 4, padding_idx=0), torch.nn.Embedding(10, 4, padding_idx=0)
    assert float(u.weight[0].abs().sum().item()) == 0
    idx = np.array([[0, 3, 9], [2, 0, 3]])
    uy, ty = check_layer(*twins(u, t), idx)
    assert float(u.weight.grad[0].abs().sum().item()) == 0
    assert repr(u) == repr(t)


@pytest.mark.parametrize("kwargs", [dict(max_norm=1.0), dict(max_norm=0.5, norm_type=1.0, padding_idx=2),
                                    dict(scale_grad_by_freq=True), dict(scale_grad_by_freq=True, padding_idx=-1),
                                    dict(max_norm=2.0, norm_type=3.0, scale_grad_by_freq=True, sparse=False)], ids=str)
def test_embedding_options_match_torch(kwargs):
    # max_norm renormalises the rows looked up in place (both tables' weights compared after);
    # scale_grad_by_freq divides each row's gradient by its index's count in the batch.
    u, t = twins(ug.nn.Embedding(10, 4, **kwargs).double(), torch.nn.Embedding(10, 4, **kwargs).double())
    idx = np.array([[0, 3, 9, 3], [2, 3, 9, 1]])
    check_layer(u, t, idx)
    np.testing.assert_allclose(u.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-12)
    assert repr(u) == repr(t)
    with pytest.raises(ValueError, match=r"\[Embedding\] sparse gradients are not supported"):
        ug.nn.Embedding(10, 4, sparse=True)


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
    check_layer(u, t, LOGITS, LABELS)


def test_cross_entropy_with_probabilities_and_large_logits():
    probs = np.abs(rand(6, 4))
    probs /= probs.sum(1, keepdims=True)
    check_layer(ug.nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), LOGITS, probs, n=24)  # 6 rows of 4 products
    big = LOGITS * 1e4
    uy, _ = check_layer(ug.nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), big, LABELS, rtol=1e-5, atol=1e-2)
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
    reduced = name != "NLLLoss" and kwargs.get("reduction") != "none"
    check_layer(getattr(ug.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), x, y, n=24 if reduced else None)


def test_bce_with_logits_pos_weight_and_cosine_embedding():
    pw = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    check_layer(ug.nn.BCEWithLogitsLoss(pos_weight=ug.tensor(pw)), torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw)),
            rand(6, 4) * 30, (rand(6, 4) > 0).astype(np.float32), n=24)
    target = np.array([1, -1, 1, -1, 1, 1], np.float32)
    check_layer(ug.nn.CosineEmbeddingLoss(margin=0.2), torch.nn.CosineEmbeddingLoss(margin=0.2), rand(6, 5), rand(6, 5),
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
    # Errors add up along a chain of sums: the projections' 17 terms, the scores' 4, the softmax's
    # and the values' 5, the output projection's 17, then back again, and the input's 3 x 16.
    (uo, uw), (to, tw) = check_layer(u, t, x, call=call, n=128)
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
        (uo, uw), (to, tw) = check_layer(u, t, q, kv, call=call)
        if tw is not None:
            np.testing.assert_allclose(uw.numpy(), to_np(tw), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", [dict(kdim=3, vdim=5), dict(add_bias_kv=True), dict(add_zero_attn=True),
                                     dict(kdim=6, vdim=6, add_bias_kv=True, add_zero_attn=True, bias=False)], ids=str)
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_kdim_vdim_bias_kv_zero_attn(options, batch_first):
    # torch's parameters by name and order; the appended positions widen the weights and stay
    # open under every mask
    u = ug.nn.MultiheadAttention(8, 2, **options, batch_first=batch_first).double()
    t = torch.nn.MultiheadAttention(8, 2, **options, batch_first=batch_first).double()
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    u, t = twins(u, t)
    kd, vd = options.get("kdim", 8), options.get("vdim", 8)
    q, k, v = rand(2, 3, 8, dtype=np.float64), rand(2, 6, kd, dtype=np.float64), rand(2, 6, vd, dtype=np.float64)
    if not batch_first:
        q, k, v = (a.transpose(1, 0, 2).copy() for a in (q, k, v))
    pad = np.array([[False] * 5 + [True], [False] * 4 + [True] * 2])
    causal = np.triu(np.ones((3, 6), bool), 1)
    for kwargs in ({}, {"key_padding_mask": pad, "attn_mask": causal}, {"attn_mask": rand(3, 6, dtype=np.float64)},
                   {"need_weights": False, "key_padding_mask": pad}, {"average_attn_weights": False}):
        def call(m, q, k, v, kwargs=kwargs):
            conv = ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor
            return m(q, k, v, **{n: conv(a) for n, a in kwargs.items() if n.endswith("mask")},
                     **{n: a for n, a in kwargs.items() if not n.endswith("mask")})
        u.zero_grad(), t.zero_grad()
        (uo, uw), (to, tw) = check_layer(u, t, q, k, v, call=call)
        assert (uw is None) == (tw is None)
        if tw is not None:
            np.testing.assert_allclose(uw.numpy(), to_np(tw), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"expected embedding sizes 8, 3 and 5"):
        ug.nn.MultiheadAttention(8, 2, kdim=3, vdim=5)(ug.zeros(2, 3, 8), ug.zeros(2, 3, 8), ug.zeros(2, 3, 5))


def test_multihead_attention_unbatched_and_errors():
    u, t = twins(ug.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2))
    check_layer(u, t, rand(4, 8), call=lambda m, x: m(x, x, x))
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
    # the chain of sums (see the attention test) through attention (~50 terms), two layer norms
    # of 16, the feed-forward's 17 and 33, and back: at most 300
    check_layer(u, t, rand(2, 7, 16), n=300)
    causal = np.triu(np.ones((7, 7), bool), 1)
    u.zero_grad(), t.zero_grad()
    check_layer(u, t, rand(2, 7, 16), call=lambda m, x: m(x, src_mask=(ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor)(causal)),
            n=300)


@pytest.mark.parametrize("decoder", [False, True])
@pytest.mark.parametrize("activation", ["function", "module", "parametrised"])
def test_transformer_layers_take_a_callable_activation(decoder, activation):
    # torch's activation may be any callable; a module is the child "activation" (printed,
    # its parameters the layer's, each copy in a TransformerEncoder/Decoder getting its own).
    name = "TransformerDecoderLayer" if decoder else "TransformerEncoderLayer"

    def make(m):
        act = {"function": lambda: m.nn.functional.silu, "module": lambda: m.nn.GELU(approximate="tanh"),
               "parametrised": lambda: m.nn.PReLU(init=0.3)}[activation]()
        return getattr(m.nn, name)(8, 2, dim_feedforward=12, dropout=0.0, activation=act, batch_first=True)

    torch.manual_seed(0)
    u, t = twins(make(ug).double(), make(torch).double())
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in u.named_children()] == [n for n, _ in t.named_children()]
    if activation != "function":
        assert repr(u.activation) == repr(t.activation) and repr(u).endswith(f"(activation): {t.activation!r}\n)")
    inputs = [rand(2, 5, 8, dtype=np.float64)] + ([rand(2, 3, 8, dtype=np.float64)] if decoder else [])
    check_layer(u, t, *inputs)
    if activation == "parametrised":
        stack = (ug.nn.TransformerDecoder if decoder else ug.nn.TransformerEncoder)(u, 2)
        with ug.no_grad():
            stack.layers[0].activation.weight.fill_(0.9)
        assert float(stack.layers[1].activation.weight.item()) == pytest.approx(0.3)
        assert float(u.activation.weight.item()) == pytest.approx(0.3)
    with pytest.raises(ValueError, match=rf'\[{name}\] activation must be "relu" or "gelu", got "tanh"'):
        getattr(ug.nn, name)(8, 2, activation="tanh")


def test_transformer_encoder_layer_eval_matches_torch_fast_path():
    u, t = twins(ug.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True))
    u.eval(), t.eval()
    with torch.no_grad():
        check_layer(u, t, rand(2, 5, 16), grads=False, n=150)  # the forward's chain of sums


def test_hooks_on_an_encoder_layers_attention_run_as_in_torch():
    """self_attn is called from C++ inside the layer: its hooks still see (x, x, x) and
    (output, None), and a replaced output or input changes the layer's result as in torch."""
    u, t = twins(ug.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True),
                 torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True))
    x = rand(2, 5, 16)

    def run(layer, lib):
        seen = []

        def look(mod, inp, out):
            seen.append(([tuple(v.shape) for v in inp], [None if v is None else tuple(v.shape) for v in out]))
            return (out[0] * 2, out[1])

        handles = [layer.self_attn.register_forward_hook(look),
                   layer.self_attn.register_forward_pre_hook(lambda mod, inp: (inp[0], inp[1] * 0, inp[2]))]
        y = layer(lib.tensor(x))
        for h in handles:
            h.remove()
        return seen, y.detach().numpy(), layer(lib.tensor(x)).detach().numpy()

    (u_seen, u_hooked, u_plain), (t_seen, t_hooked, t_plain) = run(u, ug), run(t, torch)
    assert u_seen == t_seen == [([(2, 5, 16)] * 3, [(2, 5, 16), None])]
    # the attention's ~50-term sums and a layer norm of 16, as in the encoder-layer test above
    assert_close(u_hooked, t_hooked, n=150)
    assert_close(u_plain, t_plain, n=150)
    assert not np.allclose(u_hooked, u_plain)


@pytest.mark.parametrize("norm", [False, True])
def test_transformer_encoder_matches_torch(norm):
    kwargs = dict(dropout=0.0, batch_first=True)
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 4, 32, **kwargs), 2,
                                    norm=torch.nn.LayerNorm(16) if norm else None, enable_nested_tensor=False)
    u = ug.nn.TransformerEncoder(ug.nn.TransformerEncoderLayer(16, 4, 32, **kwargs), 2,
                                 norm=ug.nn.LayerNorm(16) if norm else None)
    u, t = twins(u, t)
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    # the longest sums are one encoder layer's (see the encoder-layer test above): a second layer adds none longer
    check_layer(u, t, rand(2, 7, 16), n=300)
    causal = np.triu(np.ones((7, 7), bool), 1)
    padding = np.zeros((2, 7), bool)
    padding[1, 5:] = True
    u.zero_grad(), t.zero_grad()
    check_layer(u, t, rand(2, 7, 16), n=300, call=lambda m, x: m(
        x, mask=(ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor)(causal),
        src_key_padding_mask=(ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor)(padding)))


def _mask(m, array):
    return (ug.tensor if isinstance(m, ug.nn.Module) else torch.tensor)(array)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_decoder_layer(norm_first, activation):
    # Draws of its own, whichever tests ran before it in this worker: with some draws (2% of
    # seeds) a gradient's sums cancel below what the derived tolerance can tell, which
    # check_layer refuses, so the outcome must not depend on the order xdist runs tests in.
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    rand = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    kwargs = dict(dim_feedforward=32, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first)
    u, t = twins(ug.nn.TransformerDecoderLayer(16, 4, **kwargs), torch.nn.TransformerDecoderLayer(16, 4, **kwargs))
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    # the encoder layer's chain (see above) with a second attention over the 9-long memory and a third norm
    check_layer(u, t, rand(2, 7, 16), rand(2, 9, 16), n=400)
    causal = np.triu(np.ones((7, 7), bool), 1)
    padding = np.zeros((2, 9), bool)
    padding[0, 6:] = True
    u.zero_grad(), t.zero_grad()
    check_layer(u, t, rand(2, 7, 16), rand(2, 9, 16), n=400,
                call=lambda m, x, mem: m(x, mem, tgt_mask=_mask(m, causal), memory_key_padding_mask=_mask(m, padding)))


@pytest.mark.parametrize("norm", [False, True])
def test_transformer_decoder_matches_torch(norm):
    kwargs = dict(dropout=0.0)  # sequence-first, torch's default
    t = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(16, 4, 32, **kwargs), 2,
                                    norm=torch.nn.LayerNorm(16) if norm else None)
    u = ug.nn.TransformerDecoder(ug.nn.TransformerDecoderLayer(16, 4, 32, **kwargs), 2,
                                 norm=ug.nn.LayerNorm(16) if norm else None)
    u, t = twins(u, t)
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    causal = np.triu(np.ones((6, 6), bool), 1)
    # in float64, where the stack's chains of sums stay far inside the dtype's tolerance (the
    # float32 kernels are the decoder layer's test above): this checks the wiring
    u.to(ug.float64), t.double()
    check_layer(u, t, rand(6, 2, 16, dtype=np.float64), rand(5, 2, 16, dtype=np.float64),
                call=lambda m, x, mem: m(x, mem, tgt_mask=_mask(m, causal), tgt_is_causal=True))


def test_transformer_matches_torch_and_its_mask():
    kwargs = dict(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32, dropout=0.0,
                  batch_first=True)
    u, t = twins(ug.nn.Transformer(**kwargs), torch.nn.Transformer(**kwargs))
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    np.testing.assert_array_equal(ug.nn.Transformer.generate_square_subsequent_mask(5).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
    padding = np.zeros((2, 8), bool)
    padding[1, 6:] = True

    def call(m, src, tgt):
        mask = type(m).generate_square_subsequent_mask(6, dtype=ug.float64 if isinstance(m, ug.nn.Module) else torch.float64)
        return m(src, tgt, tgt_mask=mask, src_key_padding_mask=_mask(m, padding),
                 memory_key_padding_mask=_mask(m, padding))

    # in float64, as the decoder stack's test above: encoder into decoder, masks, final norms
    u.to(ug.float64), t.double()
    check_layer(u, t, rand(2, 8, 16, dtype=np.float64), rand(2, 6, 16, dtype=np.float64), call=call)
    with pytest.raises(ValueError, match="batch number of src and tgt"):
        u(ug.zeros(2, 8, 16), ug.zeros(3, 6, 16))
    with pytest.raises(ValueError, match="d_model"):
        u(ug.zeros(2, 8, 12), ug.zeros(2, 6, 12))
    fresh = ug.nn.Transformer(**kwargs)  # torch's init: every matrix Xavier-uniform
    w = fresh.encoder.layers[0].linear1.weight
    bound = (6 / (16 + 32)) ** 0.5
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.8 * bound


def test_a_transformer_decoders_hooks_see_target_and_memory_as_torchs_do():
    def run(lib):
        dec = lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2)
        seen = []
        for i, layer in enumerate(dec.layers):
            layer.register_forward_hook(lambda m, inp, out, i=i: seen.append((i, [tuple(v.shape) for v in inp])))
        dec(lib.ones(3, 2, 8), lib.ones(4, 2, 8))
        return seen

    assert run(ug) == run(torch) == [(0, [(3, 2, 8), (4, 2, 8)]), (1, [(3, 2, 8), (4, 2, 8)])]


def test_transformer_encoder_copies_its_layer_as_torch_does():
    def run(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        enc = lib.nn.TransformerEncoder(layer, 3)
        same = [np.array_equal(enc.layers[i].linear1.weight.detach().numpy(), layer.linear1.weight.detach().numpy())
                for i in range(3)]
        with lib.no_grad():
            enc.layers[0].linear1.weight.mul_(2)
        apart = [np.array_equal(enc.layers[i].linear1.weight.detach().numpy(), layer.linear1.weight.detach().numpy())
                 for i in range(3)]
        log = []
        for i in range(3):
            enc.layers[i].register_forward_hook(lambda m, inp, out, i=i: log.append((i, len(inp), tuple(out.shape))))
        enc(lib.ones(4, 2, 8))
        return same, apart, log, len(list(enc.parameters())), len(lib.nn.TransformerEncoder(layer, 0).layers)

    assert run(ug) == run(torch)
    assert run(ug)[:2] == ([True] * 3, [False, True, True])
    with pytest.raises(ValueError, match="num_layers must not be negative"):
        ug.nn.TransformerEncoder(ug.nn.TransformerEncoderLayer(8, 2, 16), -1)


def test_a_hook_on_a_layer_made_in_cpp_outlives_its_python_object():
    """Hooks registered through a temporary Python object of a C++-made child (a
    TransformerEncoder's copy) get the module when they run (they held the freed object)."""
    enc = ug.nn.TransformerEncoder(ug.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
    seen = []
    enc.layers[1].register_forward_hook(lambda m, inp, out: seen.append(m.linear1.weight.shape))
    enc.layers[1].register_forward_pre_hook(lambda m, inp: seen.append(type(m).__name__))
    gc.collect()
    enc(ug.ones(3, 2, 8))
    assert seen == ["TransformerEncoderLayer", (16, 8)]


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

def conv_sums(layer, x):
    """The sums a conv layer's output and gradients add: an input window (and the bias) per
    output, an output window per input, every output position (input position, for a
    transposed conv) per weight element, every output position per bias element."""
    out = layer(torch.tensor(x))
    window, groups = int(np.prod(layer.kernel_size)), layer.groups
    positions = out.numel() // out.shape[1]
    if layer.transposed:
        return {"output": layer.in_channels // groups * window + 1, 0: layer.out_channels // groups * window,
                "weight": x.size // x.shape[1], "bias": positions}
    return {"output": layer.in_channels // groups * window + (layer.bias is not None),
            0: layer.out_channels // groups * window, "weight": positions, "bias": positions}


@pytest.mark.parametrize("kwargs", [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2), groups=2),
    dict(in_channels=3, out_channels=5, kernel_size=5, padding="same", bias=False),
])
def test_conv2d_layer(kwargs):
    u, t = twins(ug.nn.Conv2d(**kwargs), torch.nn.Conv2d(**kwargs))
    x = rand(2, kwargs["in_channels"], 9, 8)
    check_layer(u, t, x, n=conv_sums(t, x))
    assert repr(u) == repr(t)


@pytest.mark.parametrize("padding_mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("dims,kwargs", [
    (1, dict(kernel_size=(3,), padding=2, stride=(2,))), (1, dict(kernel_size=4, padding="same", dilation=(2,))),
    (2, dict(kernel_size=(3, 2), padding=(1, 0), groups=2, bias=False)), (2, dict(kernel_size=(2, 3), padding="same")),
    (2, dict(kernel_size=3, padding="valid", stride=2)), (3, dict(kernel_size=(2, 3, 1), padding=(1, 1, 0))),
], ids=str)
def test_conv_padding_modes_and_1_tuples(dims, kwargs, padding_mode):
    # The input padded by the mode (for "same": the odd one out on the right), then an unpadded
    # convolution: an input element reaches up to 2 windows per dim more through the padding.
    kw = dict(in_channels=4, out_channels=2, padding_mode=padding_mode, **kwargs)
    u, t = twins(getattr(ug.nn, f"Conv{dims}d")(**kw).double(), getattr(torch.nn, f"Conv{dims}d")(**kw).double())
    x = rand(2, 4, *(7, 6, 5)[:dims], dtype=np.float64)
    n = conv_sums(t, x)
    n[0] *= 2 ** dims
    check_layer(u, t, x, n=n)
    check_layer(u, t, x[0], n=n)
    assert repr(u) == repr(t)


def test_conv_padding_mode_errors_as_torch():
    for bad in (dict(padding_mode="edge"), dict(padding="same", stride=2, padding_mode="reflect")):
        with pytest.raises(ValueError):
            torch.nn.Conv2d(2, 2, 3, **bad)
        with pytest.raises(ValueError, match=r"\[Conv2d\] (padding_mode must be one of|padding='same' is not)"):
            ug.nn.Conv2d(2, 2, 3, **bad)
    for dims in (1, 2, 3):
        name = f"ConvTranspose{dims}d"
        assert repr(getattr(ug.nn, name)(2, 2, (3,) * dims, padding_mode="zeros")) == repr(
            getattr(torch.nn, name)(2, 2, (3,) * dims, padding_mode="zeros"))
        with pytest.raises(ValueError, match=rf'\[{name}\] Only "zeros" padding mode is supported for {name}'):
            getattr(ug.nn, name)(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match=r"\[Conv1d\] kernel_size needs 1 value, got 2"):
        ug.nn.Conv1d(2, 2, (3, 3))


def test_conv1d_and_conv_transpose2d_layers():
    x = rand(2, 3, 11)
    u, t = twins(ug.nn.Conv1d(3, 4, 3, stride=2, padding=1), torch.nn.Conv1d(3, 4, 3, stride=2, padding=1))
    check_layer(u, t, x, n=conv_sums(t, x))
    kw = dict(in_channels=4, out_channels=3, kernel_size=3, stride=2, padding=1, output_padding=1)
    x = rand(2, 4, 5, 6)
    u, t = twins(ug.nn.ConvTranspose2d(**kw), torch.nn.ConvTranspose2d(**kw))
    check_layer(u, t, x, n=conv_sums(t, x), one_sign=True)  # the bias's gradient sums 240 positions


def test_pooling_layers():
    x = rand(2, 3, 9, 8)
    check_layer(ug.nn.MaxPool2d(2), torch.nn.MaxPool2d(2), x)
    check_layer(ug.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), x)
    check_layer(ug.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
            torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), x)
    check_layer(ug.nn.AdaptiveAvgPool2d((3, 2)), torch.nn.AdaptiveAvgPool2d((3, 2)), x)
    check_layer(ug.nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1), x, n={"output": 72})


@pytest.mark.parametrize("dims,kwargs", [(1, dict(kernel_size=3, stride=2, ceil_mode=True)),
                                         (2, dict(kernel_size=(2, 3), padding=1, dilation=(1, 2))),
                                         (3, dict(kernel_size=2, stride=(1, 2, 2)))], ids=str)
def test_max_pool_layers_return_indices_for_max_unpool(dims, kwargs):
    # return_indices=True: torch's (values, indices), in torch's argument order, hooks seeing the
    # tuple; MaxUnpool puts the values back at the indices.
    x = rand(2, 3, *(7, 6, 5)[:dims])
    u = getattr(ug.nn, f"MaxPool{dims}d")(**kwargs, return_indices=True)
    t = getattr(torch.nn, f"MaxPool{dims}d")(**kwargs, return_indices=True)
    assert repr(u) == repr(t) and u.return_indices
    seen = []
    u.register_forward_hook(lambda m, args, out: seen.append(type(out)))
    check_layer(u, t, x)
    (uv, ui), (tv, ti) = u(ug.tensor(x)), t(torch.tensor(x))
    np.testing.assert_array_equal(ui.numpy(), ti.numpy())
    assert seen == [tuple, tuple]
    unpool = dict(kernel_size=kwargs["kernel_size"], stride=kwargs.get("stride"), padding=kwargs.get("padding", 0))
    if "dilation" not in kwargs:
        size = x.shape[2:]
        np.testing.assert_array_equal(
            getattr(ug.nn, f"MaxUnpool{dims}d")(**unpool)(uv, ui, output_size=size).numpy(),
            getattr(torch.nn, f"MaxUnpool{dims}d")(**unpool)(tv, ti, output_size=size).numpy())
    positional = getattr(ug.nn, f"MaxPool{dims}d")(2, 2, 0, 1, True)  # torch's order: return_indices before ceil_mode
    assert positional.return_indices and isinstance(positional(ug.tensor(x)), tuple)
    assert isinstance(getattr(ug.nn, f"MaxPool{dims}d")(2)(ug.tensor(x)), ug.Tensor)


@pytest.mark.parametrize("name,size,shape", [("AdaptiveAvgPool2d", (None, 3), (2, 3, 5, 7)),
                                             ("AdaptiveMaxPool2d", (4, None), (3, 5, 7)),
                                             ("AdaptiveAvgPool3d", (2, None, None), (2, 3, 5, 4, 6)),
                                             ("AdaptiveMaxPool3d", (None, 2, None), (2, 4, 5, 3))], ids=str)
def test_adaptive_pools_keep_the_input_size_where_none(name, size, shape):
    u, t = getattr(ug.nn, name)(size), getattr(torch.nn, name)(size)
    assert repr(u) == repr(t)
    check_layer(u, t, rand(*shape))
    fn = name[len("Adaptive"):].replace("Pool", "_pool").lower()
    check_grad(lambda m, x: getattr(m.nn.functional, f"adaptive_{fn}")(x, size), arr(shape))


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
    # Errors add up along LeNet's chain of sums: 26 + 151 + 401 + 121 + 85 terms forward, then
    # back to the first convolution's weight, which sums over 4 x 28 x 28 positions. In float32
    # the worst-case tolerance of ~5000 terms could not catch a 1e-3 error (reference.py), so the
    # twins compare in float64; the float32 kernels have their own tests (test_conv, test_nn_functional).
    u, t = twins(make(ug).double(), make(torch).double())
    check_layer(u, t, rand(4, 1, 28, 28, dtype=np.float64), n=5000)


def test_dense_flatten_is_gluons_dense():
    # Gluon's Dense(units, flatten=True) collapses every dim after the first, then is Linear.
    x = rand(2, 1, 28, 28)
    gluon = ug.nn.Dense(10, flatten=True)
    out = gluon(ug.tensor(x))
    assert out.shape == (2, 10) and gluon.weight.shape == (10, 784)
    linear = torch.nn.Linear(784, 10)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(to_np(gluon.weight)))
        linear.bias.copy_(torch.tensor(to_np(gluon.bias)))
    assert_close(to_np(out), to_np(linear(torch.flatten(torch.tensor(x), 1))), n=784)
    assert gluon.flatten and "flatten=True" in repr(gluon)
    assert ug.nn.Dense(10)(ug.tensor(x)).shape == (2, 1, 28, 10)  # Keras's Dense maps the last dim
    assert ug.nn.Dense(3, flatten=True)(ug.ones(4)).shape == (4, 3)  # Gluon: 4 inputs of size 1
    net = ug.nn.Sequential(ug.nn.Dense(128, activation="relu", flatten=True), ug.nn.Dense(10))
    assert net(ug.tensor(x)).shape == (2, 10)
    with pytest.raises(ValueError, match=r"\[Dense\] expected 784 features after flattening .* got shape \[2, 3, 5\]"):
        gluon(ug.ones(2, 3, 5))
    with pytest.raises(ValueError, match=r"\[Dense\] flatten=True needs a batch dim first, got a scalar"):
        ug.nn.Dense(3, flatten=True)(ug.tensor(1.0))
