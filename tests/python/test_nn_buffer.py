"""ug.nn.Buffer (torch 2.5's nn.Buffer): a tensor that registers as a buffer when assigned to a
module attribute, persistent or not; against torch 2.13."""
import copy

import numpy as np
import pytest
import torch

import unigrad as ug


def make(m):
    class Net(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = m.nn.Linear(2, 3)
            self.mean = m.nn.Buffer(m.zeros(3))
            self.scratch = m.nn.Buffer(m.ones(2), persistent=False)
            self.plain = m.zeros(1)  # a plain tensor attribute: no buffer

        def forward(self, x):
            return self.lin(x) - self.mean

    return Net()


def test_registers_buffers_as_torch():
    t, u = make(torch), make(ug)
    assert [n for n, _ in u.named_buffers()] == [n for n, _ in t.named_buffers()] == ["mean", "scratch"]
    assert list(u.state_dict()) == list(t.state_dict()) == ["mean", "lin.weight", "lin.bias"]
    assert "scratch" not in u.state_dict() and "plain" not in u.state_dict()
    assert isinstance(u.mean, ug.nn.Buffer) and isinstance(t.mean, torch.nn.Buffer)
    assert not isinstance(u.plain, ug.nn.Buffer) and not isinstance(t.plain, torch.nn.Buffer)
    assert not isinstance(u.lin.weight, ug.nn.Buffer)
    assert u.mean.tolist() == [0.0] * 3 and not u.mean.requires_grad


def test_buffer_shares_memory_and_keeps_requires_grad():
    data = ug.arange(3.0, requires_grad=True)
    b = ug.nn.Buffer(data)
    tb = torch.nn.Buffer(torch.arange(3.0, requires_grad=True))
    assert b.requires_grad == tb.requires_grad is True and b.grad_fn is None
    plain = ug.zeros(2)
    buf = ug.nn.Buffer(plain)
    buf.add_(1)
    assert plain.tolist() == [1.0, 1.0]
    assert tuple(ug.nn.Buffer().shape) == tuple(torch.nn.Buffer().shape) == (0,)


def test_reassigning_changes_persistence_and_state_round_trips():
    t, u = make(torch), make(ug)
    for m, mod in ((torch, t), (ug, u)):
        mod.mean = m.nn.Buffer(m.ones(3), persistent=False)
        mod.scratch = m.nn.Buffer(m.full((2,), 5.0))
    assert sorted(u.state_dict()) == sorted(t.state_dict()) == ["lin.bias", "lin.weight", "scratch"]
    assert u.mean.tolist() == [1.0] * 3
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.ones((4, 2), dtype=np.float32)
    np.testing.assert_allclose(u(ug.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    c = copy.deepcopy(u)
    assert [n for n, _ in c.named_buffers()] == ["mean", "scratch"] and "mean" not in c.state_dict()


def test_bad_assignments_raise():
    u = make(ug)
    with pytest.raises(TypeError, match=r"cannot assign a plain Tensor to parameter 'weight'"):
        u.lin.weight = ug.nn.Buffer(ug.zeros(3, 2))
    with pytest.raises(TypeError):
        make(torch).lin.weight = torch.nn.Buffer(torch.zeros(3, 2))
    with pytest.raises(TypeError, match=r"\[Buffer\] data must be a Tensor, got list"):
        ug.nn.Buffer([1.0, 2.0])
