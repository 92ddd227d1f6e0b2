"""embedding_bag and nn.EmbeddingBag against PyTorch: every mode over 2-d inputs and over 1-d
inputs with offsets (empty bags, include_last_offset), per_sample_weights, padding_idx and
max_norm, float32 and float64, values and the weight's (and per-sample weights') gradients,
finite differences in float64, and the errors for bad input."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_grad, check_layer, check_op

INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7, 7])


def F(m):
    return torch.nn.functional if m is torch else ug.nn.functional


def ints(values, rolls=True):
    return Arg(np.asarray(values, np.int64), rolls=rolls)


# offsets: with an empty bag (2, 2) and a last bag of one entry; include_last_offset: CSR's
OFFSETS = {False: [0, 2, 2, 5, 10], True: [0, 2, 2, 5, 10, 11]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 4, -3])
def test_offsets_match_torch(mode, include_last_offset, padding_idx, dtype):
    check_grad(lambda m, w, i, o: F(m).embedding_bag(i, w, o, mode=mode, include_last_offset=include_last_offset,
                                                     padding_idx=padding_idx),
               arr((10, 3), dtype), ints(INDICES), ints(OFFSETS[include_last_offset]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_two_dimensional_input_matches_torch(mode):
    index = np.random.default_rng(1).integers(0, 6, (4, 5))
    check_grad(lambda m, w, i: F(m).embedding_bag(i, w, mode=mode), arr((6, 4), "float64"), ints(index))
    check_grad(lambda m, w, i: F(m).embedding_bag(i, w, mode=mode, padding_idx=0), arr((6, 4)), ints(index))
    check(lambda m, w, i: F(m).embedding_bag(i, w, mode=mode), arr((6, 4), "bfloat16"), ints(index))


def test_per_sample_weights_and_max_norm():
    check_grad(lambda m, w, i, o, p: F(m).embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
               arr((10, 3), "float64"), ints(INDICES), ints(OFFSETS[False]), arr((11,), "float64", seed=2))
    check_grad(lambda m, w, i, p: F(m).embedding_bag(i, w, mode="sum", per_sample_weights=p, padding_idx=7),
               arr((10, 3)), ints(INDICES[:10].reshape(2, 5)), arr((2, 5), seed=2))
    # max_norm renormalises the looked-up rows of the weight in place first, as embedding does
    check(lambda m, w, i, o: (F(m).embedding_bag(i, w, o, max_norm=1.5), w)[1], arr((10, 3)), ints(INDICES),
          ints(OFFSETS[False]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_export_compile_and_jvp(mode):
    # ONNX Runtime (opset 18: max is ScatterElements' "max") and ug.jit against eager unigrad
    check_op(lambda m, w, i, o: F(m).embedding_bag(i, w, o, mode=mode, padding_idx=2), arr((10, 3)), ints(INDICES),
             ints(OFFSETS[False], rolls=False), only=("onnx", "jit"), opset=18)
    # torch has no forward-mode rule for embedding_bag (nor a second derivative): every mode is
    # linear in the weight near a point without ties, so torch's central difference is exact
    # up to rounding
    rng = np.random.default_rng(5)
    w, t = rng.uniform(-1, 1, (10, 3)), rng.uniform(-1, 1, (10, 3))

    def f(m, w):
        return F(m).embedding_bag(m.tensor(INDICES), w, m.tensor(OFFSETS[False]), mode=mode)
    h = 1e-3
    expected = (f(torch, torch.tensor(w + h * t)) - f(torch, torch.tensor(w - h * t))) / (2 * h)
    _, actual = ug.jvp(lambda w: f(ug, w), (ug.tensor(w),), (ug.tensor(t),))
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-9, atol=1e-11)


def test_scale_grad_by_freq_follows_embedding():
    # torch 2.13's embedding_bag counts the frequencies wrongly (with these indices row 4, there
    # twice, keeps a gradient of 2 while row 3, there once, gets 0.5); ours divides each row's
    # gradient by its count in the batch as torch's embedding does: the bags' sums over it
    def bags(m, w, i):
        rows = F(m).embedding(i, w, scale_grad_by_freq=True)
        return m.stack([rows[a:b].sum(0) for a, b in zip(OFFSETS[False], OFFSETS[False][1:] + [len(INDICES)])])
    check_grad(lambda m, w, i: bags(m, w, i) if m is torch else F(m).embedding_bag(
        i, w, m.tensor(OFFSETS[False]), mode="sum", scale_grad_by_freq=True), arr((10, 3), "float64"), ints(INDICES),
        off={"fd": "scale_grad_by_freq rescales the gradient on purpose: it is not the derivative"})


def test_layer_matches_torch():
    torch.manual_seed(0)
    for kwargs in [{}, {"mode": "max", "padding_idx": 2}, {"mode": "sum", "include_last_offset": True},
                   {"mode": "sum", "max_norm": 1.0, "norm_type": 3.0}]:
        ug_layer, torch_layer = ug.nn.EmbeddingBag(10, 3, **kwargs), torch.nn.EmbeddingBag(10, 3, **kwargs)
        assert repr(ug_layer) == repr(torch_layer)
        if "padding_idx" in kwargs:
            assert not ug_layer.weight.numpy()[2].any()
        ug_layer.load_state_dict({"weight": ug.tensor(torch_layer.weight.detach().numpy())})
        offsets = np.array(OFFSETS[kwargs.get("include_last_offset", False)])
        check_layer(ug_layer, torch_layer, INDICES, offsets)
    layer = ug.nn.EmbeddingBag(10, 3, mode="sum")
    psw = np.random.default_rng(3).uniform(-1, 1, (11,)).astype(np.float32)
    twin = torch.nn.EmbeddingBag(10, 3, mode="sum")
    layer.load_state_dict({"weight": ug.tensor(twin.weight.detach().numpy())})
    check_layer(layer, twin, INDICES, np.array(OFFSETS[False]), psw,
                call=lambda m, i, o, p: m(i, o, per_sample_weights=p))


def test_bad_input_raises_like_torch():
    w = arr((10, 3))
    for f in [lambda m, w: F(m).embedding_bag(m.tensor([[1, 2], [3, 4]]), w, m.tensor([0, 1])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([1, 2])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 4])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([[0, 2]])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 13]), w, m.tensor([0, 2])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 2]), mode="foo"),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 2]), mode="mean",
                                              per_sample_weights=m.ones(3)),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 2]), mode="sum",
                                              per_sample_weights=m.ones(2)),
              lambda m, w: F(m).embedding_bag(m.tensor([1.0, 2.0]), w, m.tensor([0, 1])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w[0], m.tensor([0, 2])),
              lambda m, w: F(m).embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 2]), padding_idx=11)]:
        check(f, w)
    with pytest.raises(RuntimeError, match=r"\[embedding_bag\] index 13 is out of range for weight of shape \[10, 3\]"):
        ug.nn.functional.embedding_bag(ug.tensor([1, 13]), ug.ones(10, 3), ug.tensor([0]))
    with pytest.raises(RuntimeError, match=r"\[embedding_bag\] offsets must be non-decreasing"):
        ug.nn.functional.embedding_bag(ug.tensor([1, 2, 3]), ug.ones(10, 3), ug.tensor([0, 3, 2]))
    with pytest.raises(RuntimeError, match=r"\[embedding_bag\] per_sample_weights of dtype float64.*float32"):
        ug.nn.functional.embedding_bag(ug.tensor([1, 2]), ug.ones(10, 3), ug.tensor([0]), mode="sum",
                                       per_sample_weights=ug.ones(2, dtype=ug.float64))
    with pytest.raises(ValueError, match=r"\[EmbeddingBag\] mode has to be one of sum, mean or max, got 'min'"):
        ug.nn.EmbeddingBag(10, 3, mode="min")


@pytest.mark.parametrize("freeze", [True, False])
def test_from_pretrained_matches_torch(freeze):
    table = np.random.default_rng(5).uniform(-1, 1, (10, 3))
    t_emb = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=2)
    u_src = ug.tensor(table)
    u_emb = ug.nn.Embedding.from_pretrained(u_src, freeze=freeze, padding_idx=2)
    assert repr(u_emb) == repr(t_emb) and u_emb.weight.requires_grad == (not freeze)
    np.testing.assert_array_equal(u_emb.weight.numpy(), table)  # the padding row kept, as torch
    idx = np.array([[1, 2, 9], [2, 0, 4]])
    np.testing.assert_array_equal(u_emb(ug.tensor(idx)).numpy(), t_emb(torch.tensor(idx)).detach().numpy())
    assert not u_src.requires_grad  # the caller's tensor is left as it was, its storage shared
    with ug.no_grad():
        u_emb.weight[0, 0] = 7.0
    assert u_src[0, 0].item() == 7.0
    t_bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), freeze=freeze, mode="sum")
    u_bag = ug.nn.EmbeddingBag.from_pretrained(ug.tensor(table), freeze=freeze, mode="sum")
    assert repr(u_bag) == repr(t_bag) and u_bag.weight.requires_grad == (not freeze)
    check_layer(u_bag, t_bag, INDICES, np.array(OFFSETS[False]), grads=not freeze)
    with pytest.raises(ValueError, match=r"Embedding.from_pretrained\] .*2-dimensional, got shape \[10\]"):
        ug.nn.Embedding.from_pretrained(ug.ones(10))
    with pytest.raises(ValueError, match=r"EmbeddingBag.from_pretrained\] .*2-dimensional"):
        ug.nn.EmbeddingBag.from_pretrained(ug.ones(2, 3, 4))
