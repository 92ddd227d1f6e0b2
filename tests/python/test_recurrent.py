"""ug.nn.RNN, LSTM, GRU and their cells against torch.nn: the same parameters give the same
outputs, final states and gradients (of every parameter, the input and the initial state)."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}
SEQ, BATCH, IN, HIDDEN = 5, 3, 4, 6


def make(kind, *args, **kwargs):
    """The torch module and its ug twin holding the same parameters."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(*args, **kwargs)
    um = getattr(ug.nn, kind)(*args, **kwargs)
    um.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, um


def flat(result):
    """(out, (h, c)) or (out, h) or (h, c) or h as a flat list of tensors."""
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result]


def compare(tm, um, x, hx=None, dtype="float32", call=None):
    """Runs both modules forward and backward on x (and the state hx, numpy arrays) and
    compares every result and gradient."""
    if dtype == "float64":
        tm, um = tm.double(), um.double()
    x = x.astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    ux = ug.tensor(x, requires_grad=True)
    args_t, args_u = [tx], [ux]
    hs_t, hs_u = [], []
    if hx is not None:
        parts = [h.astype(dtype) for h in (hx if isinstance(hx, tuple) else (hx,))]
        hs_t = [torch.tensor(h, requires_grad=True) for h in parts]
        hs_u = [ug.tensor(h, requires_grad=True) for h in parts]
        args_t.append(tuple(hs_t) if isinstance(hx, tuple) else hs_t[0])
        args_u.append(tuple(hs_u) if isinstance(hx, tuple) else hs_u[0])
    call = call or (lambda m, *a: m(*a))
    out_t, out_u = flat(call(tm, *args_t)), flat(call(um, *args_u))
    assert len(out_t) == len(out_u)
    rng = np.random.default_rng(1)
    loss_t, loss_u = 0, 0
    for i, (a, b) in enumerate(zip(out_t, out_u)):
        assert tuple(b.shape) == tuple(a.shape), f"result {i}: shape {tuple(b.shape)} != {tuple(a.shape)}"
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **TOL[dtype], err_msg=f"result {i}")
        w = rng.standard_normal(tuple(a.shape)).astype(dtype)
        loss_t = loss_t + (a * torch.tensor(w)).sum()
        loss_u = loss_u + (b * ug.tensor(w)).sum()
    loss_t.backward()
    loss_u.backward()
    named_u = dict(um.named_parameters())
    names_t = [n for n, _ in tm.named_parameters()]
    assert list(named_u) == names_t
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(named_u[name].grad.numpy(), p.grad.numpy(), **TOL[dtype], err_msg=name)
    for i, (a, b) in enumerate(zip([tx] + hs_t, [ux] + hs_u)):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), **TOL[dtype], err_msg=f"input {i} grad")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape)


def state(kind, layers, batch=BATCH, hidden=HIDDEN, seed=3):
    shape = (layers, batch, hidden) if batch else (layers, hidden)
    if kind == "LSTM":
        return rand(*shape, seed=seed), rand(*shape, seed=seed + 1)
    return rand(*shape, seed=seed)


KINDS = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]
CONFIGS = [
    dict(),
    dict(batch_first=True),
    dict(num_layers=2),
    dict(num_layers=2, batch_first=True, bias=False),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(bias=False, bidirectional=True),
]


@pytest.mark.parametrize("kind,extra", KINDS, ids=lambda v: v if isinstance(v, str) else str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("with_state", [False, True])
def test_layers_match_torch(kind, extra, config, with_state):
    tm, um = make(kind, IN, HIDDEN, **config, **extra)
    x = rand(BATCH, SEQ, IN) if config.get("batch_first") else rand(SEQ, BATCH, IN)
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    compare(tm, um, x, state(kind, layers) if with_state else None)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("config", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)], ids=str)
def test_layers_match_torch_float64(kind, config):
    tm, um = make(kind, IN, HIDDEN, **config)
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    x = rand(BATCH, SEQ, IN) if config.get("batch_first") else rand(SEQ, BATCH, IN)
    compare(tm, um, x, state(kind, layers), dtype="float64")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("with_state", [False, True])
def test_unbatched_input(kind, with_state):
    tm, um = make(kind, IN, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
    compare(tm, um, rand(SEQ, IN), state(kind, 4, batch=None) if with_state else None)


def test_single_step_and_single_batch():
    tm, um = make("LSTM", IN, HIDDEN, num_layers=2)
    compare(tm, um, rand(1, 1, IN))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_dropout_in_eval_mode_is_off(kind):
    tm, um = make(kind, IN, HIDDEN, num_layers=3, dropout=0.5)
    tm.eval()
    um.eval()
    compare(tm, um, rand(SEQ, BATCH, IN))


def test_dropout_in_training_mode():
    # p = 1 zeroes the inputs of the upper layers: deterministic, comparable with torch.
    tm, um = make("LSTM", IN, HIDDEN, num_layers=2, dropout=1.0)
    compare(tm, um, rand(SEQ, BATCH, IN))
    # 0 < p < 1: random masks, a different result from eval mode, the same in eval mode.
    _, um = make("GRU", IN, HIDDEN, num_layers=2, dropout=0.5)
    x = ug.tensor(rand(SEQ, BATCH, IN).astype(np.float32))
    train_out, _ = um(x)
    um.eval()
    eval_out, _ = um(x)
    eval_again, _ = um(x)
    assert not np.allclose(train_out.numpy(), eval_out.numpy())
    np.testing.assert_array_equal(eval_out.numpy(), eval_again.numpy())


CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("kind,extra", CELLS, ids=lambda v: v if isinstance(v, str) else str(v))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_cells_match_torch(kind, extra, bias, batched, with_state):
    tm, um = make(kind, IN, HIDDEN, bias=bias, **extra)
    x = rand(BATCH, IN) if batched else rand(IN)
    hx = None
    if with_state:
        shape = (BATCH, HIDDEN) if batched else (HIDDEN,)
        hx = (rand(*shape, seed=3), rand(*shape, seed=4)) if kind == "LSTMCell" else rand(*shape, seed=3)
    compare(tm, um, x, hx)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_cells_float64(kind):
    tm, um = make(kind, IN, HIDDEN)
    hx = (rand(BATCH, HIDDEN, seed=3), rand(BATCH, HIDDEN, seed=4)) if kind == "LSTMCell" else rand(BATCH, HIDDEN)
    compare(tm, um, rand(BATCH, IN), hx, dtype="float64")


def test_cell_unrolled_equals_layer():
    _, lstm = make("LSTM", IN, HIDDEN)
    cell = ug.nn.LSTMCell(IN, HIDDEN)
    cell.load_state_dict({k[: -len("_l0")]: v for k, v in lstm.state_dict().items()})
    x = ug.tensor(rand(SEQ, BATCH, IN).astype(np.float32))
    out, (h_n, c_n) = lstm(x)
    h = c = None
    for t in range(SEQ):
        h, c = cell(x[t], None if h is None else (h, c))
        np.testing.assert_allclose(out[t].numpy(), h.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h_n[0].numpy(), h.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c_n[0].numpy(), c.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "kind,args",
    [("LSTM", dict(num_layers=2, bidirectional=True)), ("GRU", dict(bias=False)), ("RNN", {}),
     ("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {})],
)
def test_parameter_names_shapes_and_default_init(kind, args):
    hidden = 50
    tm = getattr(torch.nn, kind)(30, hidden, **args)
    um = getattr(ug.nn, kind)(30, hidden, **args)
    expected = [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert [(n, tuple(p.shape)) for n, p in um.named_parameters()] == expected
    assert list(um.state_dict()) == list(tm.state_dict())
    bound = 1 / math.sqrt(hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in um.parameters()])
    assert all(p.requires_grad for p in um.parameters())
    assert values.min() >= -bound and values.max() <= bound
    # U(-b, b): mean 0, std b / sqrt(3); thousands of draws pin both down.
    assert abs(values.mean()) < 0.05 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound
    um.reset_parameters()
    redrawn = np.concatenate([p.detach().numpy().ravel() for p in um.parameters()])
    assert not np.array_equal(values, redrawn)
    assert redrawn.min() >= -bound and redrawn.max() <= bound


@pytest.mark.parametrize(
    "kind,args",
    [("LSTM", dict(num_layers=2, batch_first=True)), ("GRU", dict(bias=False, dropout=0.5, num_layers=2)),
     ("LSTM", dict(bidirectional=True)), ("RNN", dict(nonlinearity="relu")), ("LSTMCell", {}),
     ("GRUCell", dict(bias=False)), ("RNNCell", dict(nonlinearity="relu"))],
)
def test_repr_and_attributes(kind, args):
    tm = getattr(torch.nn, kind)(10, 20, **args)
    um = getattr(ug.nn, kind)(10, 20, **args)
    assert repr(um) == repr(tm)
    for name in ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional",
                 "nonlinearity"):
        if hasattr(tm, name) and not isinstance(getattr(tm, name), torch.Tensor):
            assert getattr(um, name) == getattr(tm, name), name


def test_call_forms_and_sequential():
    lstm = ug.nn.LSTM(IN, HIDDEN, num_layers=2, batch_first=True)
    x = ug.randn(BATCH, SEQ, IN)
    out, (h, c) = lstm(x)
    assert tuple(out.shape) == (BATCH, SEQ, HIDDEN) and tuple(h.shape) == tuple(c.shape) == (2, BATCH, HIDDEN)
    out2, (h2, c2) = lstm(x, (h, c))
    out3, _ = lstm(x, hx=(h, c))
    out4, _ = lstm.forward(x, (h, c))
    np.testing.assert_array_equal(out2.numpy(), out3.numpy())
    np.testing.assert_array_equal(out2.numpy(), out4.numpy())
    # In a Sequential (the one-tensor C++ forward) the layer passes on its output only.
    model = ug.nn.Sequential(lstm, ug.nn.Linear(HIDDEN, 2))
    y = model(x)
    assert tuple(y.shape) == (BATCH, SEQ, 2)
    np.testing.assert_allclose(y.numpy(), model[1](out).numpy(), rtol=1e-6, atol=1e-6)
    gru = ug.nn.GRU(IN, HIDDEN)
    out, h = gru(x.transpose(0, 1))
    assert tuple(h.shape) == (1, BATCH, HIDDEN)
    assert isinstance(ug.nn.GRUCell(IN, HIDDEN)(x[:, 0]), ug.Tensor)


def test_forward_hooks_see_the_tuple():
    lstm = ug.nn.LSTM(IN, HIDDEN)
    seen = []
    handle = lstm.register_forward_hook(lambda m, inputs, output: seen.append((len(inputs), type(output))))
    lstm(ug.randn(SEQ, BATCH, IN))
    handle.remove()
    lstm(ug.randn(SEQ, BATCH, IN))
    assert seen == [(1, tuple)]


def test_functional_call_and_init():
    tm, um = make("GRU", IN, HIDDEN, num_layers=2)
    own = {k: v.numpy().copy() for k, v in um.state_dict().items()}
    params = um.init(ug.random.key(0))
    assert list(params) == [n for n, _ in tm.named_parameters()]
    x = rand(SEQ, BATCH, IN).astype(np.float32)
    out, h = ug.nn.functional_call(um, params, (ug.tensor(x),))
    for name, value in params.items():
        tm.get_parameter(name).data = torch.tensor(value.numpy())
    expected, _ = tm(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    for name, value in um.state_dict().items():  # the module's own parameters are untouched
        np.testing.assert_array_equal(value.numpy(), own[name])


def test_gradcheck_and_gradgradcheck():
    lstm = ug.nn.LSTM(3, 2, num_layers=2, bidirectional=True).double()
    gru = ug.nn.GRU(3, 2).double()
    x = ug.tensor(rand(3, 2, 3), requires_grad=True)
    names = [n for n, _ in lstm.named_parameters()]

    def f(x, *params):
        return ug.nn.functional_call(lstm, dict(zip(names, params)), (x,))[0]

    params = [p.detach().clone().requires_grad_() for p in lstm.parameters()]
    assert ug.autograd.gradcheck(f, (x, *params))
    assert ug.autograd.gradgradcheck(lambda x: gru(x)[1], (x,))


def test_long_sequence_gradient_matches_torch():
    # The weights' gradients sum 200 steps x 2 sequences of terms, after a chain of 200 steps'
    # sums: in float32 no worst-case tolerance of that length could catch a 1e-3 error
    # (reference.py), so this one compares in float64.
    tm, um = make("LSTM", IN, HIDDEN)
    compare(tm, um, rand(200, 2, IN) * 0.5, dtype="float64")


def test_module_conversion_keeps_working():
    tm, um = make("LSTM", IN, HIDDEN, num_layers=2)
    compare(tm, um, rand(SEQ, BATCH, IN), state("LSTM", 2), dtype="float64")


BAD = [
    (lambda m: m(ug.randn(2, 3, 4, IN)), ug.errors.ValueError, "2-D"),
    (lambda m: m(ug.randn(SEQ, BATCH, IN + 1)), ug.errors.ValueError, "input_size"),
    (lambda m: m(ug.randn(SEQ, BATCH, IN), (ug.randn(1, BATCH, HIDDEN), ug.randn(2, BATCH, HIDDEN))), ug.errors.ValueError,
     "c0"),
    (lambda m: m(ug.randn(SEQ, BATCH, IN), (ug.randn(1, BATCH + 1, HIDDEN), ug.randn(1, BATCH, HIDDEN))),
     ug.errors.ValueError, "h0"),
    (lambda m: m(ug.randn(SEQ, IN), (ug.randn(1, 1, HIDDEN), ug.randn(1, 1, HIDDEN))), ug.errors.ValueError, "h0"),
    (lambda m: m(ug.randn(SEQ, BATCH, IN).double()), ug.errors.TypeError, "dtype"),
    (lambda m: m(ug.randn(SEQ, BATCH, IN), ug.randn(1, BATCH, HIDDEN)), ug.errors.TypeError, "tuple"),
    (lambda m: m(ug.randn(0, BATCH, IN)), ug.errors.ValueError, "non-empty"),
]


@pytest.mark.parametrize("fn,error,words", BAD)
def test_bad_inputs_raise_clear_errors(fn, error, words):
    lstm = ug.nn.LSTM(IN, HIDDEN)
    with pytest.raises(error, match=words):
        fn(lstm)


def test_bad_cell_inputs_and_arguments():
    cell = ug.nn.GRUCell(IN, HIDDEN)
    with pytest.raises(ug.errors.ValueError, match="1-D"):
        cell(ug.randn(2, 3, IN))
    with pytest.raises(ug.errors.ValueError, match="hx"):
        cell(ug.randn(BATCH, IN), ug.randn(BATCH + 1, HIDDEN))
    with pytest.raises(ug.errors.ValueError, match="hx"):
        cell(ug.randn(IN), ug.randn(1, HIDDEN))
    with pytest.raises(ug.errors.ValueError, match="input_size"):
        ug.nn.LSTMCell(IN, HIDDEN)(ug.randn(BATCH, IN + 1))
    with pytest.raises(ug.errors.ValueError, match="hidden_size"):
        ug.nn.LSTM(IN, 0)
    with pytest.raises(ug.errors.ValueError, match="num_layers"):
        ug.nn.GRU(IN, HIDDEN, num_layers=0)
    with pytest.raises(ug.errors.ValueError, match="dropout"):
        ug.nn.LSTM(IN, HIDDEN, dropout=1.5)
    with pytest.raises(ug.errors.ValueError, match="nonlinearity"):
        ug.nn.RNN(IN, HIDDEN, nonlinearity="sigmoid")
    with pytest.raises(ug.errors.ValueError, match="proj_size has to be smaller than hidden_size"):
        ug.nn.LSTM(IN, HIDDEN, proj_size=HIDDEN)
