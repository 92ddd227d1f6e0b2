"""ug.nn.utils.rnn (PackedSequence, pack/pad and friends), the recurrent layers on packed
variable-length batches, and LSTM's proj_size, against torch: the same values, and the same
gradients through packing, padding and the layers. Packing and padding copy values (each
output element is one input element or the padding value), so they and their gradients must
be equal; the layers' sums are at most IN + HIDDEN terms long, below reference.LONG_SUM, so
they compare at the dtype's tolerance (reference.TOLERANCES)."""
import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import unigrad as ug
from reference import TOLERANCES

urnn = ug.nn.utils.rnn
IN, HIDDEN, PROJ = 4, 6, 3


def tol(dtype):
    rtol, atol = TOLERANCES[dtype]
    return dict(rtol=rtol, atol=atol)


def rand(*shape, seed=0, dtype="float64"):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)


def pair(x, grad=True):
    """A torch tensor and a ug tensor of the same values."""
    return torch.tensor(x, requires_grad=grad), ug.tensor(x, requires_grad=grad)


def numpy(t):
    return None if t is None else t.detach().numpy()


def assert_packed_equal(u, t):
    assert isinstance(u, urnn.PackedSequence) and isinstance(u, tuple) and len(u) == 4
    for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        a, e = getattr(u, name), getattr(t, name)
        assert (a is None) == (e is None), name
        if e is not None:
            assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], name
            np.testing.assert_array_equal(numpy(a), numpy(e), err_msg=name)


# ---- packing and padding -----------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 1, 3], False),
                                                    ([3, 5, 3, 5], False), ([4, 4, 4, 4], True)])
@pytest.mark.parametrize("feature", [(2,), (2, 3)], ids=str)
def test_pack_and_pad_match_torch_with_gradients(batch_first, lengths, enforce_sorted, feature):
    steps, batch = 6, len(lengths)
    x = rand(*((batch, steps) if batch_first else (steps, batch)), *feature)
    tx, ux = pair(x)
    tp = trnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    up = urnn.pack_padded_sequence(ux, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert_packed_equal(up, tp)
    for total in (None, 7):
        tpad, tlen = trnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=-2.5, total_length=total)
        upad, ulen = urnn.pad_packed_sequence(up, batch_first=batch_first, padding_value=-2.5, total_length=total)
        np.testing.assert_array_equal(numpy(upad), numpy(tpad))
        np.testing.assert_array_equal(numpy(ulen), numpy(tlen))
        assert ulen.dtype == ug.int64
    w = rand(*tpad.shape, seed=1)
    (tpad * torch.tensor(w)).sum().backward()
    (upad * ug.tensor(w)).sum().backward()
    np.testing.assert_array_equal(numpy(ux.grad), numpy(tx.grad))
    # lengths as a tensor, as torch takes them
    again = urnn.pack_padded_sequence(ux, ug.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(numpy(again.data), numpy(tp.data))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_with_gradients(batch_first, padding_side):
    seqs = [rand(n, 2, 3, seed=n) for n in (3, 5, 1, 5)]
    tin, uin = zip(*(pair(s) for s in seqs))
    t = trnn.pad_sequence(list(tin), batch_first=batch_first, padding_value=1.5, padding_side=padding_side)
    u = urnn.pad_sequence(list(uin), batch_first=batch_first, padding_value=1.5, padding_side=padding_side)
    np.testing.assert_array_equal(numpy(u), numpy(t))
    w = rand(*t.shape, seed=9)
    (t * torch.tensor(w)).sum().backward()
    (u * ug.tensor(w)).sum().backward()
    for a, e in zip(uin, tin):
        np.testing.assert_array_equal(numpy(a.grad), numpy(e.grad))
    stacked = rand(4, 3, 2)  # one tensor: its slices along dim 0 are the sequences
    np.testing.assert_array_equal(numpy(urnn.pad_sequence(ug.tensor(stacked))),
                                  numpy(trnn.pad_sequence(torch.tensor(stacked))))


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_unpack_and_unpad_match_torch(enforce_sorted):
    lengths = (5, 3, 2) if enforce_sorted else (2, 5, 3)
    seqs = [rand(n, 3, seed=n) for n in lengths]
    tin, uin = zip(*(pair(s) for s in seqs))
    tp, up = trnn.pack_sequence(list(tin), enforce_sorted), urnn.pack_sequence(list(uin), enforce_sorted)
    assert_packed_equal(up, tp)
    tout, uout = trnn.unpack_sequence(tp), urnn.unpack_sequence(up)
    assert len(uout) == len(tout)
    for a, e in zip(uout, tout):
        np.testing.assert_array_equal(numpy(a), numpy(e))
    sum(((a * (i + 1)).sum() for i, a in enumerate(tout)), torch.tensor(0.0, dtype=torch.float64)).backward()
    sum(((a * (i + 1)).sum() for i, a in enumerate(uout)), ug.tensor(0.0, dtype=ug.float64)).backward()
    for a, e in zip(uin, tin):
        np.testing.assert_array_equal(numpy(a.grad), numpy(e.grad))
    for batch_first in (False, True):
        padded = rand(3, 5, 2) if batch_first else rand(5, 3, 2)
        t = trnn.unpad_sequence(torch.tensor(padded), torch.tensor(lengths), batch_first=batch_first)
        u = urnn.unpad_sequence(ug.tensor(padded), list(lengths), batch_first=batch_first)
        for a, e in zip(u, t):
            np.testing.assert_array_equal(numpy(a), numpy(e))


def test_packed_sequence_is_torchs_named_tuple():
    p = urnn.pack_padded_sequence(ug.tensor(rand(4, 3, 2, dtype="float32")), [2, 4, 1], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert p[0] is data and p[-1] is unsorted_indices and p[1:3] == (batch_sizes, sorted_indices)
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    d = p.to(ug.float64)
    assert d.data.dtype == ug.float64 and d.batch_sizes is p.batch_sizes and d.sorted_indices.dtype == ug.int64
    assert p.double().data.dtype == ug.float64 and d.float().data.dtype == ug.float32
    assert p.to("cpu").data.device == ug.device("cpu") and not p.is_cuda
    # Made by hand, the inverse permutation comes with it; a pair (data, batch_sizes) as torch's.
    q = urnn.PackedSequence(p.data, p.batch_sizes, p.sorted_indices)
    np.testing.assert_array_equal(q.unsorted_indices.numpy(), p.unsorted_indices.numpy())
    assert urnn.PackedSequence((p.data, p.batch_sizes)).sorted_indices is None
    padded, lengths = urnn.pad_packed_sequence(q)
    assert lengths.tolist() == [2, 4, 1]
    assert ug.nn.utils.rnn is urnn and "pack_padded_sequence" in urnn.__all__
    from unigrad.nn.utils.rnn import pack_padded_sequence  # noqa: F401


# ---- the layers on packed batches ------------------------------------------------------------


def make(kind, *args, **kwargs):
    """The torch module and its ug twin holding the same parameters."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(*args, **kwargs)
    um = getattr(ug.nn, kind)(*args, **kwargs)
    assert [n for n, _ in um.named_parameters()] == [n for n, _ in tm.named_parameters()]
    um.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, um


def flat(result):
    """(packed, (h, c)) or (out, h) ... as a flat list of tensors, a PackedSequence as its data."""
    if isinstance(result, (trnn.PackedSequence, urnn.PackedSequence)):
        return [result.data]
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result]


def run_both(kind, config, lengths, enforce_sorted, with_state, dtype, batch_first=False, packed=True):
    """Both modules forward and backward on one random padded batch (packed unless packed is
    False); compares every result and every gradient."""
    tm, um = make(kind, IN, HIDDEN, batch_first=batch_first, **config)
    if dtype == "float64":
        tm, um = tm.double(), um.double()
    steps, batch = max(lengths) + 1, len(lengths)
    x = rand(*((batch, steps) if batch_first else (steps, batch)), IN, dtype=dtype)
    tx, ux = pair(x)
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    h_size = config.get("proj_size") or HIDDEN
    states = []
    if with_state:
        states = [pair(rand(layers, batch, h_size, seed=3, dtype=dtype))]
        if kind == "LSTM":
            states.append(pair(rand(layers, batch, HIDDEN, seed=4, dtype=dtype)))
    t_args, u_args = [tx], [ux]
    if packed:
        t_args = [trnn.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)]
        u_args = [urnn.pack_padded_sequence(ux, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)]
    if states:
        t_args.append(tuple(t for t, _ in states) if kind == "LSTM" else states[0][0])
        u_args.append(tuple(u for _, u in states) if kind == "LSTM" else states[0][1])
    t_res, u_res = tm(*t_args), um(*u_args)
    if packed:
        assert isinstance(u_res[0], urnn.PackedSequence)
        assert_packed_equal(u_res[0]._replace(data=t_res[0].data), t_res[0])
    out_t, out_u = flat(t_res), flat(u_res)
    assert len(out_t) == len(out_u)
    loss_t, loss_u = 0, 0
    for i, (a, b) in enumerate(zip(out_t, out_u)):
        assert tuple(b.shape) == tuple(a.shape), f"result {i}"
        np.testing.assert_allclose(numpy(b), numpy(a), **tol(dtype), err_msg=f"result {i}")
        w = rand(*a.shape, seed=10 + i, dtype=dtype)
        loss_t = loss_t + (a * torch.tensor(w)).sum()
        loss_u = loss_u + (b * ug.tensor(w)).sum()
    loss_t.backward()
    loss_u.backward()
    named = dict(um.named_parameters())
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(numpy(named[name].grad), numpy(p.grad), **tol(dtype), err_msg=name)
    for i, (t, u) in enumerate([(tx, ux)] + states):
        np.testing.assert_allclose(numpy(u.grad), numpy(t.grad), **tol(dtype), err_msg=f"input {i} grad")
    if packed:  # the padded view of the output too
        tpad, tlen = trnn.pad_packed_sequence(t_res[0], batch_first=batch_first)
        upad, ulen = urnn.pad_packed_sequence(u_res[0], batch_first=batch_first)
        np.testing.assert_allclose(numpy(upad), numpy(tpad), **tol(dtype))
        np.testing.assert_array_equal(numpy(ulen), numpy(tlen))


KINDS = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]
CONFIGS = [dict(), dict(num_layers=2), dict(bidirectional=True), dict(num_layers=2, bidirectional=True, bias=False)]
LENGTHS = [([5, 3, 3, 1], True), ([2, 5, 1, 3], False), ([4, 2, 4, 1, 2], False)]


@pytest.mark.parametrize("kind,extra", KINDS, ids=lambda v: v if isinstance(v, str) else str(v))
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("lengths,enforce_sorted", LENGTHS, ids=str)
@pytest.mark.parametrize("with_state", [False, True])
def test_packed_layers_match_torch(kind, extra, config, lengths, enforce_sorted, with_state):
    run_both(kind, {**config, **extra}, lengths, enforce_sorted, with_state, "float32")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_layers_match_torch_float64(kind, batch_first):
    config = dict(num_layers=2, bidirectional=True)
    run_both(kind, config, [2, 6, 1, 3], False, True, "float64", batch_first=batch_first)


def test_packed_batch_equals_each_sequence_alone():
    # The definition: a sequence's output and final state are those of running it by itself.
    _, lstm = make("LSTM", IN, HIDDEN, num_layers=2, bidirectional=True)
    lstm = lstm.double()
    seqs = [ug.tensor(rand(n, IN, seed=n)) for n in (3, 6, 1)]
    out, (h, c) = lstm(urnn.pack_sequence(seqs, enforce_sorted=False))
    for b, (s, o) in enumerate(zip(seqs, urnn.unpack_sequence(out))):
        o1, (h1, c1) = lstm(s)
        np.testing.assert_allclose(o.numpy(), o1.numpy(), **tol("float64"))
        np.testing.assert_allclose(h[:, b].numpy(), h1.numpy(), **tol("float64"))
        np.testing.assert_allclose(c[:, b].numpy(), c1.numpy(), **tol("float64"))


def test_packed_gradcheck_and_gradgradcheck():
    # float64 finite differences through pack -> LSTM (with projection) -> pad, in the input,
    # the initial state and every parameter.
    lstm = ug.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2).double()
    names = [n for n, _ in lstm.named_parameters()]
    x = ug.tensor(rand(4, 3, 3), requires_grad=True)
    h0 = ug.tensor(rand(4, 3, 2, seed=1), requires_grad=True)
    c0 = ug.tensor(rand(4, 3, 4, seed=2), requires_grad=True)

    def f(x, h0, c0, *params):
        packed = urnn.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        out, (h, c) = ug.nn.functional_call(lstm, dict(zip(names, params)), (packed, (h0, c0)))
        return urnn.pad_packed_sequence(out, padding_value=0.5)[0], h, c

    params = [p.detach().clone().requires_grad_() for p in lstm.parameters()]
    assert ug.autograd.gradcheck(f, (x, h0, c0, *params))
    gru = ug.nn.GRU(3, 2).double()
    assert ug.autograd.gradgradcheck(
        lambda x: gru(urnn.pack_padded_sequence(x, [1, 4, 2], enforce_sorted=False))[1], (x,))


def test_packed_dropout_between_layers_in_training():
    _, gru = make("GRU", IN, HIDDEN, num_layers=2, dropout=0.5)
    packed = urnn.pack_sequence([ug.tensor(rand(n, IN, seed=n, dtype="float32")) for n in (4, 2)])
    gru.train()
    ug.manual_seed(1)
    a, _ = gru(packed)
    ug.manual_seed(1)
    b, _ = gru(packed)
    np.testing.assert_array_equal(a.data.numpy(), b.data.numpy())
    gru.eval()
    c, _ = gru(packed)
    assert not np.allclose(a.data.numpy(), c.data.numpy())


# ---- LSTM's proj_size ----------------------------------------------------------------------------


@pytest.mark.parametrize("config", [dict(), dict(num_layers=2, bidirectional=True), dict(bias=False, num_layers=2)],
                         ids=str)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_proj_size_matches_torch(config, packed, with_state):
    run_both("LSTM", {**config, "proj_size": PROJ}, [4, 1, 3], False, with_state, "float32", packed=packed)


def test_lstm_proj_size_parameters_repr_and_float64():
    tm, um = make("LSTM", IN, HIDDEN, proj_size=PROJ, num_layers=2, bidirectional=True)
    assert [(n, tuple(p.shape)) for n, p in um.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert repr(um) == repr(tm) and um.proj_size == PROJ
    bound = 1 / np.sqrt(HIDDEN)  # torch's init: every parameter U(-1/sqrt(H), 1/sqrt(H))
    assert all(np.abs(p.numpy()).max() <= bound for p in ug.nn.LSTM(IN, HIDDEN, proj_size=PROJ).parameters())
    run_both("LSTM", dict(num_layers=2, bidirectional=True, proj_size=PROJ), [3, 5, 1], False, True, "float64",
             batch_first=True)
    run_both("LSTM", dict(proj_size=PROJ), [3, 5, 1], False, True, "float64", packed=False)


def test_lstm_proj_size_unbatched():
    tm, um = make("LSTM", IN, HIDDEN, proj_size=PROJ)
    x = rand(5, IN, dtype="float32")
    (to, (th, tc)), (uo, (uh, uc)) = tm(torch.tensor(x)), um(ug.tensor(x))
    for a, e in [(uo, to), (uh, th), (uc, tc)]:
        assert tuple(a.shape) == tuple(e.shape)
        np.testing.assert_allclose(numpy(a), numpy(e), **tol("float32"))


# ---- bad input ---------------------------------------------------------------------------------

X = ug.zeros(5, 3, IN)
BAD = [
    (lambda: urnn.pack_padded_sequence(X, [3, 5, 2]), RuntimeError, "sorted in decreasing order.*enforce_sorted"),
    (lambda: urnn.pack_padded_sequence(X, [5, 0, 2], enforce_sorted=False), RuntimeError, "greater than 0"),
    (lambda: urnn.pack_padded_sequence(X, [6, 5, 2]), RuntimeError, "longer than the sequence.*5 steps"),
    (lambda: urnn.pack_padded_sequence(X, [3, 4, 1, 1, 1], batch_first=True, enforce_sorted=False), RuntimeError,
     r"longer than the sequence.*\[5, 3, 4\] has 3 steps"),
    (lambda: urnn.pack_padded_sequence(X, [3, 2]), ValueError, "batch_size"),
    (lambda: urnn.pack_padded_sequence(X, ug.tensor([[3, 2, 1]])), RuntimeError, "1-D"),
    (lambda: urnn.pack_padded_sequence(X, [3.5, 2, 1]), TypeError, r"sequence of ints, got \[3.5, 2, 1\]"),
    (lambda: urnn.pack_padded_sequence(ug.zeros(5), [5]), ValueError, "at least 2 dims"),
    (lambda: urnn.pad_packed_sequence(urnn.pack_padded_sequence(X, [5, 3, 2]), total_length=4), ValueError,
     "total_length=4 and max sequence length being 5"),
    (lambda: urnn.pad_sequence([ug.zeros(2, 3), ug.zeros(2, 4)]), ValueError, r"trailing shape.*\[2, 4\]"),
    (lambda: urnn.pad_sequence([ug.zeros(2, 3)], padding_side="up"), ValueError, "left or right"),
    (lambda: urnn.pack_sequence([ug.zeros(2, 3), ug.zeros(0, 3)]), RuntimeError, "greater than 0"),
    (lambda: ug.nn.LSTM(IN, HIDDEN)(urnn.pack_padded_sequence(ug.zeros(5, 3, IN + 1), [5, 3, 2])), ValueError,
     "input_size"),
    (lambda: ug.nn.GRU(IN, HIDDEN)(urnn.pack_padded_sequence(X, [5, 3, 2]), ug.zeros(1, 2, HIDDEN)), ValueError,
     r"h0 of shape \[1, 3, 6\]"),
    (lambda: ug.nn.LSTM(IN, HIDDEN, proj_size=PROJ)(X, (ug.zeros(1, 3, HIDDEN), ug.zeros(1, 3, HIDDEN))),
     ValueError, r"h0 of shape \[1, 3, 3\].*proj_size"),
    (lambda: ug.nn.LSTM(IN, HIDDEN, proj_size=HIDDEN), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: ug.nn.LSTM(IN, HIDDEN, proj_size=-1), ValueError, "positive integer or zero"),
]


@pytest.mark.parametrize("fn,error,words", BAD)
def test_bad_input_raises_clear_errors(fn, error, words):
    with pytest.raises(error, match=words):
        fn()
