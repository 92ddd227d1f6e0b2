"""Shape ops and indexing against PyTorch: views where torch returns views (checked by
writing through them), every index kind, assignment, joins and the gather/scatter family."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import arr, check, check_op

X = arr((2, 3, 4))


@pytest.mark.parametrize("fn", [
    lambda m, x: x.reshape(6, 4), lambda m, x: x.reshape(-1), lambda m, x: x.view(2, 12),
    lambda m, x: x.transpose(0, 2), lambda m, x: x.permute(2, 0, 1), lambda m, x: x.swapaxes(0, 1),
    lambda m, x: x.swapdims(-1, 0), lambda m, x: x.mT, lambda m, x: x[0].T, lambda m, x: x[0].t(),
    lambda m, x: x.unsqueeze(1), lambda m, x: x.unsqueeze(-1), lambda m, x: x[:, :1].squeeze(),
    lambda m, x: x[:, :1].squeeze(1), lambda m, x: x.flatten(), lambda m, x: x.flatten(1),
    lambda m, x: x.unflatten(2, (2, 2)), lambda m, x: x[:, :1].expand(2, 5, 4),
    lambda m, x: x[0, 0].broadcast_to((3, 4)), lambda m, x: x.narrow(2, 1, 2),
    lambda m, x: x.select(1, -1), lambda m, x: x.diagonal(0, 1, 2), lambda m, x: x.diagonal(1, 1, 2),
    lambda m, x: x.unbind(1), lambda m, x: x.split(2, 2), lambda m, x: x.split([1, 3], 2),
    lambda m, x: x.chunk(3, 1), lambda m, x: x.transpose(0, 2).reshape(4, 6),
    lambda m, x: x.transpose(0, 1).contiguous(), lambda m, x: x.clone(),
])
def test_shape_op(fn):
    check(fn, X)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.view(5, 5), lambda m, x: x.reshape(-1, -1), lambda m, x: x.transpose(0, 3),
    lambda m, x: x.permute(0, 1), lambda m, x: x.expand(3, 3, 4), lambda m, x: x.narrow(0, 1, 5),
    lambda m, x: x.transpose(0, 2).view(24), lambda m, x: x.unsqueeze(4), lambda m, x: x.select(0, 2),
])
def test_shape_op_errors(fn):
    check(fn, X)


@pytest.mark.parametrize("op", [
    lambda v: v.transpose(0, 2), lambda v: v.reshape(6, 4), lambda v: v[:, 1], lambda v: v[..., ::2],
    lambda v: v.narrow(1, 1, 2), lambda v: v.unsqueeze(0), lambda v: v.permute(1, 2, 0),
    lambda v: v.diagonal(0, 1, 2), lambda v: v.expand(2, 2, 3, 4)[0], lambda v: v.unfold(2, 2, 2),
    lambda v: v.unfold(1, 3, 1)[1],
])
def test_views_share_memory(op):
    for m in (torch, ug):
        x = m.zeros(2, 3, 4)
        v = op(x)
        v.fill_(1)
        assert float(x.sum()) == float(v.contiguous().sum()) if op(m.zeros(2, 3, 4)).numel() <= 24 else True
    xt, xu = torch.zeros(2, 3, 4), ug.zeros(2, 3, 4)
    op(xt).fill_(1)
    op(xu).fill_(1)
    np.testing.assert_array_equal(xt.numpy(), xu.numpy())


@pytest.mark.parametrize("dim, size, step", [(0, 2, 1), (1, 3, 2), (-1, 2, 3), (2, 4, 1), (1, 1, 5), (2, 0, 2)])
def test_unfold_windows(dim, size, step):
    check_op(lambda m, x: x.unfold(dim, size, step), arr((3, 5, 4)),
             off={"onnx": "overlapping windows have no ONNX form (export_table.cpp: unsupported)",
                  "jit": "ug.jit traces through the exporter, which has no unfold"})
    check(lambda m, x: x.transpose(0, 2).unfold(dim, size, step), arr((3, 5, 4), "int64"))  # strided input
    check(lambda m, x: x.unfold(0, 1, 1), arr((1,)).array.reshape(()))
    check(lambda m, x: x.unfold(0, 2, 1), arr((1,)).array.reshape(()))  # too large: both refuse
    check(lambda m, x: x.unfold(1, 6, 1), arr((3, 5)))
    check(lambda m, x: x.unfold(1, 2, 0), arr((3, 5)))


IDX = [
    0, -1, (1, 2), (slice(None), 1), (Ellipsis, 1), (None, 0), (slice(1, None), None, slice(None, None, 2)),
    (0, Ellipsis, None), slice(None, None, -1) if False else slice(0, 5, 3), (slice(None), slice(None), 3),
    True, False, (1, True), None,
]


@pytest.mark.parametrize("index", IDX, ids=[str(i) for i in IDX])
def test_basic_indexing(index):
    check(lambda m, x: x[index], X)


@pytest.mark.parametrize("index", [5, (0, 3), (0, 0, 4), (0, 0, 0, 0)])
def test_basic_indexing_errors(index):
    check(lambda m, x: x[index], X)


def test_advanced_indexing():
    check(lambda m, x, i: x[i], X, np.array([1, 0, 1]))
    check(lambda m, x, i: x[:, i], X, np.array([[0, 2], [1, 1]]))
    check(lambda m, x, i, j: x[i, :, j], X, np.array([0, 1]), np.array([3, 2]))
    check(lambda m, x, i, j: x[i, j], X, np.array([0, 1]), np.array([[2], [0]]))
    check(lambda m, x, i: x[..., i], X, np.array([-1, 0]))
    check(lambda m, x, mask: x[mask], X, np.array([True, False]))
    check(lambda m, x, mask: x[mask], X, np.random.default_rng(0).random((2, 3, 4)) > 0.5)
    check(lambda m, x, mask: x[:, mask], X, np.array([True, False, True]))
    check(lambda m, x: x[[0, 1], 1:, [2, 3]], X)
    check(lambda m, x, i: x[i], X, np.array([2]))
    check(lambda m, x, i: x[i], X, np.array([-3]))


def test_index_assignment():
    def assign(index, value):
        def fn(m, x):
            y = x.clone()
            y[index] = value(m) if callable(value) else value
            return y
        return fn

    check(assign(0, 5.0), X)
    check(assign((slice(None), 1), lambda m: m.tensor([1.0, 2.0, 3.0, 4.0])), X)
    check(assign((Ellipsis, 0), -1), X)
    check(assign((slice(None), slice(None, None, 2)), lambda m: m.zeros(2, 2, 4)), X)
    check(assign(([0, 1], [2, 0]), 7.0), X)
    check(assign(None, 3.0), X)
    check(assign((slice(None), [0, 2], 1), lambda m: m.tensor([9.0, 8.0])), X)

    def masked(m, x):
        y = x.clone()
        y[y > 0] = 0
        return y
    check(masked, X)


ASSIGNMENTS = [
    (lambda m: 0, (5,)), (lambda m: (slice(None), 1), (4,)), (lambda m: (slice(1, 3), slice(None, None, 2)), (2, 3)),
    (lambda m: m.tensor([0, 2]), (2, 5)), (lambda m: (m.tensor([0, 3]), m.tensor([1, 4])), (2,)),
    (lambda m: m.tensor(np.array([[True, False, True, False, True]] * 4)), (12,)), (lambda m: (Ellipsis, None, 0), ()),
    (lambda m: 1, ()), (lambda m: (m.tensor([True, False, True, False]),), (1, 5)),
]


@pytest.mark.parametrize("index,value_shape", ASSIGNMENTS, ids=[str(i) for i in range(len(ASSIGNMENTS))])
def test_index_assignment_while_recording_gradients(index, value_shape):
    # y[index] = v where y has a history and v requires grad: the gradient skips the overwritten
    # elements of y and reaches v (summed over its broadcast), as torch's.
    g = np.random.default_rng(1)
    x0, v0, w0 = g.standard_normal((4, 5)), g.standard_normal(value_shape), g.standard_normal((4, 5))

    def run(m):
        x, v = m.tensor(x0, requires_grad=True), m.tensor(v0, requires_grad=True)
        y = (x * 2).clone()
        y[index(m)] = v
        (y * m.tensor(w0)).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), v.grad.numpy()

    for expected, got in zip(run(torch), run(ug)):
        np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)  # copies, and sums of at most 4 terms


@pytest.mark.parametrize("fn", [
    lambda m, x: m.cat([x, x], 0), lambda m, x: m.cat([x, x[:, :1]], 1), lambda m, x: m.cat([x], -1),
    lambda m, x: m.stack([x, x]), lambda m, x: m.stack([x, x], 2), lambda m, x: m.stack([x, x], -1),
    lambda m, x: x.flip(0), lambda m, x: x.flip(0, 2), lambda m, x: x.roll(1), lambda m, x: x.roll(2, 1),
    lambda m, x: x.roll((1, -1), (0, 2)), lambda m, x: x.repeat(2, 1, 1), lambda m, x: x.repeat(1, 2, 1, 3),
    lambda m, x: x.tile((2,)), lambda m, x: x.tile((2, 1, 1, 1)),
    lambda m, x: x.masked_fill(x > 0, 0.5), lambda m, x: x.masked_select(x > 1),
    lambda m, x: (x > 0).nonzero(), lambda m, x: x.index_select(1, m.tensor([2, 0, 2])),
    lambda m, x: x.gather(2, m.tensor([[[0, 1], [1, 1], [3, 0]], [[2, 2], [0, 0], [1, 3]]])),
    lambda m, x: m.zeros(2, 3, 4).scatter(2, m.tensor([[[0], [1], [3]], [[2], [0], [1]]]), x),
    lambda m, x: m.zeros(2, 3, 5).scatter_add(2, m.tensor([[[0, 0], [1, 1], [3, 3]], [[2, 2], [0, 4], [1, 1]]]), x),
])
def test_join_and_gather_family(fn):
    check(fn, X)


ROWS = np.random.default_rng(3).permutation(3000)


@pytest.mark.parametrize("fn", [  # rows enough to split across threads (a shuffled batch), or not
    lambda m, x: x.index_select(0, m.tensor(ROWS[:64])), lambda m, x: x.index_select(0, m.tensor(ROWS[:21])),
    lambda m, x: x[m.tensor(ROWS[:1000])], lambda m, x: x.index_select(0, m.tensor(ROWS[:1])),
    lambda m, x: x.reshape(30, 100, 784).index_select(1, m.tensor(ROWS[:64] % 100)),
])
def test_index_select_of_many_rows(fn):
    check(fn, arr((3000, 784)))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.cat([x, x[0]], 0), lambda m, x: m.stack([x, x[:, :1]]), lambda m, x: x.index_select(1, m.tensor([3])),
    lambda m, x: x.gather(2, m.tensor([[[4]]])), lambda m, x: x[m.tensor([2])],
])
def test_join_and_gather_errors(fn):
    check(fn, X)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    check(lambda m, x: (torch.nn.functional.pad if m is torch else m.pad)(x, (1, 2, 2, 1), mode=mode), arr((1, 2, 4, 5)))
    check(lambda m, x: (torch.nn.functional.pad if m is torch else m.pad)(x, (1, 1), mode=mode), arr((2, 3, 4)))


@pytest.mark.parametrize("step", [1, 3, 9, 10, 2**62, 2**63 - 1])
def test_slice_steps_up_to_int64_max(step):
    # NumPy is the reference here: torch 2.13 answers [] for x[1::2**63 - 1] (its size overflows).
    x = np.arange(10, dtype=np.float32)
    got = ug.from_numpy(x)[1::step]
    np.testing.assert_array_equal(got.numpy(), x[1::step])
