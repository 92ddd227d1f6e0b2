"""ug.nn.utils.parametrize and ug.nn.utils.parametrizations against torch.nn.utils': the
layout (parametrizations.weight.original*), state dict keys and round trips, outputs and
gradients with the same originals, spectral_norm's power iteration on the same u and v,
orthogonal's maps, and parametrizations written in Python."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_close, check_layer
from unigrad.nn.utils import parametrizations as UP
from unigrad.nn.utils import parametrize as UZ

TP = torch.nn.utils.parametrizations
TZ = torch.nn.utils.parametrize
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


def to_np(t):
    return t.detach().numpy()


def load_from(u, t):
    """Gives u torch's state (originals and buffers); both must have the same keys."""
    state = t.state_dict()
    assert list(u.state_dict()) == list(state)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in state.items()})


LAYERS = {  # name: (constructor arguments, input shape)
    "linear": ("Linear", (6, 4), (5, 6)),
    "conv2d": ("Conv2d", (3, 4, 3), (2, 3, 6, 6)),
    "convT2d": ("ConvTranspose2d", (3, 4, 3), (2, 3, 5, 5)),
}


def twins(kind):
    """A float64 unigrad layer with the torch twin's parameters, the twin and an input shape."""
    name, args, shape = LAYERS[kind]
    t = getattr(torch.nn, name)(*args).double()
    u = getattr(ug.nn, name)(*args).double()
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return u, t, shape


# ---- weight_norm ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["linear", "conv2d", "convT2d"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(kind, dim):
    u, t, shape = twins(kind)
    UP.weight_norm(u, dim=dim)
    TP.weight_norm(t, dim=dim)
    assert type(u).__name__ == type(t).__name__.replace("Parametrized", "") and repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    # The originals g and v that right_inverse made from the same weight.
    for key, value in t.state_dict().items():
        assert_close(to_np(u.state_dict()[key]), value.numpy(), path=key)
    assert_close(to_np(u.weight), to_np(t.weight))
    check_layer(u, t, rand(*shape))


def test_weight_norm_gradients_by_finite_differences():
    u = UP.weight_norm(ug.nn.Linear(3, 2, dtype=ug.float64))
    x = ug.tensor(rand(4, 3))
    g, v = u.parametrizations.weight.original0, u.parametrizations.weight.original1
    (u(x) ** 2).sum().backward()
    for p in (g, v):
        analytic, values, h = to_np(p.grad), to_np(p).copy(), 1e-6
        for i in np.ndindex(values.shape):
            def loss(delta):
                w = values.copy()
                w[i] += delta
                with ug.no_grad():
                    p.copy_(ug.tensor(w))
                    return float((u(x) ** 2).sum().item())
            numeric = (loss(h) - loss(-h)) / (2 * h)
            loss(0)
            assert abs(numeric - analytic[i]) <= 1e-6 * (1 + abs(numeric))


def test_weight_norm_state_dict_round_trip_and_removal():
    u, t, shape = twins("linear")
    UP.weight_norm(u)
    TP.weight_norm(t)
    with torch.no_grad():
        t.parametrizations.weight.original0.mul_(2)
    load_from(u, t)
    assert_close(to_np(u.weight), to_np(t.weight))
    UZ.remove_parametrizations(u, "weight")
    TZ.remove_parametrizations(t, "weight")
    assert repr(u) == repr(t) and not UZ.is_parametrized(u)
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()] == ["bias", "weight"]
    assert_close(to_np(u.weight), to_np(t.weight))
    check_layer(u, t, rand(*shape))


def test_weight_norm_loads_a_state_saved_with_the_hook_based_form():
    t = torch.nn.Sequential(torch.nn.Linear(4, 3, dtype=torch.float64))
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(t[0])
    old = t.state_dict()  # 0.bias, 0.weight_g, 0.weight_v
    u = ug.nn.Sequential(UP.weight_norm(ug.nn.Linear(4, 3, dtype=ug.float64)))
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in old.items()})
    tp = torch.nn.Sequential(TP.weight_norm(torch.nn.Linear(4, 3, dtype=torch.float64)))
    tp.load_state_dict(old)  # torch's own hook renames the keys the same way
    for key, value in tp.state_dict().items():
        np.testing.assert_array_equal(to_np(u.state_dict()[key]), value.numpy(), err_msg=key)


# ---- spectral_norm ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["linear", "conv2d", "convT2d"])
@pytest.mark.parametrize("iterations,eps", [(1, 1e-12), (3, 1e-3)])
def test_spectral_norm_power_iteration_matches_torch(kind, iterations, eps):
    u, t, shape = twins(kind)
    UP.spectral_norm(u, n_power_iterations=iterations, eps=eps)
    TP.spectral_norm(t, n_power_iterations=iterations, eps=eps)
    assert repr(u) == repr(t)
    assert list(u.state_dict()) == list(t.state_dict())
    sn = u.parametrizations.weight[0]
    assert (sn.dim, sn.n_power_iterations, sn.eps) == (1 if kind == "convT2d" else 0, iterations, eps)
    # Our u and v were drawn from our generator: start both from torch's.
    load_from(u, t)
    for step in range(2):  # training: each forward moves u and v
        check_layer(u, t, rand(*shape), seed=step)
        for name in ("_u", "_v"):
            assert_close(to_np(getattr(sn, name)), to_np(getattr(t.parametrizations.weight[0], name)), path=name)
    u.eval()
    t.eval()
    before = to_np(sn._u).copy()
    check_layer(u, t, rand(*shape))
    np.testing.assert_array_equal(to_np(sn._u), before)  # eval leaves them
    assert_close(to_np(sn._u), to_np(t.parametrizations.weight[0]._u))


def test_spectral_norm_normalises_by_the_largest_singular_value():
    u = ug.nn.Linear(7, 5, dtype=ug.float64)
    sigma = np.linalg.svd(to_np(u.weight), compute_uv=False)[0]
    UP.spectral_norm(u, n_power_iterations=1)
    for _ in range(30):
        u(ug.zeros(1, 7, dtype=ug.float64))
    u.eval()
    # 15 + 30 power iterations converge at the rate (s2/s1)^2 per step.
    s = np.linalg.svd(to_np(u.parametrizations.weight.original), compute_uv=False)
    assert abs(sigma - s[0]) == 0
    assert abs(np.linalg.svd(to_np(u.weight), compute_uv=False)[0] - 1) <= 4 * (s[1] / s[0]) ** 90 + 1e-12


def test_spectral_norm_bad_arguments():
    with pytest.raises(IndexError, match="spectral_norm"):
        UP.spectral_norm(ug.nn.Linear(3, 2), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        UP.spectral_norm(ug.nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer"):
        UP.spectral_norm(ug.nn.Linear(3, 2), name="kernel")


# ---- orthogonal -------------------------------------------------------------------------------


@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (3, 6)])
def test_orthogonal_matches_torch(orthogonal_map, shape):
    out_f, in_f = shape
    t = torch.nn.Linear(in_f, out_f, dtype=torch.float64)
    u = ug.nn.Linear(in_f, out_f, dtype=ug.float64)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    UP.orthogonal(u, orthogonal_map=orthogonal_map)
    TP.orthogonal(t, orthogonal_map=orthogonal_map)
    expected_map = orthogonal_map or ("matrix_exp" if out_f == in_f else "householder")
    assert u.parametrizations.weight[0].orthogonal_map == expected_map
    assert list(u.state_dict()) == list(t.state_dict())
    if out_f == in_f:  # the base comes from the weight alone (a non-square one adds random columns)
        for key, value in t.state_dict().items():
            assert_close(to_np(u.state_dict()[key]), value.numpy(), rtol=1e-9, atol=1e-12, path=key)
    w = to_np(u.weight)
    small = w if out_f >= in_f else w.T
    assert_close(small.T @ small, np.eye(min(shape)), atol=1e-12)
    # Move the original off -I so that the map's derivative is exercised, then compare.
    with torch.no_grad():
        t.parametrizations.weight.original.add_(torch.tensor(rand(*shape) * 0.3))
    load_from(u, t)
    check_layer(u, t, rand(4, in_f), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley"])
def test_orthogonal_without_trivialization(orthogonal_map):
    t = torch.nn.Linear(4, 4, dtype=torch.float64)
    u = ug.nn.Linear(4, 4, dtype=ug.float64)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    UP.orthogonal(u, orthogonal_map=orthogonal_map, use_trivialization=False)
    TP.orthogonal(t, orthogonal_map=orthogonal_map, use_trivialization=False)
    assert list(u.state_dict()) == list(t.state_dict())  # no base
    check_layer(u, t, rand(3, 4), rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="right_inverse"):
        u.weight = ug.eye(4, dtype=ug.float64)
    with pytest.raises(ValueError, match="householder"):
        UP.orthogonal(ug.nn.Linear(3, 4), use_trivialization=False)


def test_orthogonal_assignment():
    u = UP.orthogonal(ug.nn.Linear(4, 4, dtype=ug.float64))
    q = np.linalg.qr(rand(4, 4))[0]
    u.weight = ug.tensor(q)  # through right_inverse: base becomes q, original -I
    assert_close(to_np(u.weight), q, atol=1e-12)
    with pytest.raises(ValueError, match="expected a matrix"):
        UP.orthogonal(ug.nn.PReLU(3), name="weight")


# ---- parametrize with modules written in Python -------------------------------------------


def python_parametrizations(m):
    """The same parametrization classes for unigrad (m = ug) and torch (m = torch)."""
    class Symmetric(m.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT

        def right_inverse(self, a):
            return a.triu()

    class Scale(m.nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s

        def forward(self, x):
            return x * self.s

    class RankOne(m.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, z):
            return z[:, 0].clone(), z[0].clone()

    return Symmetric, Scale, RankOne


Symmetric, Scale, RankOne = python_parametrizations(ug)
TSymmetric, TScale, TRankOne = python_parametrizations(torch)


def test_python_parametrizations_chain_assign_and_remove():
    u, t = ug.nn.Linear(5, 5, dtype=ug.float64), torch.nn.Linear(5, 5, dtype=torch.float64)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    sym = Symmetric()
    UZ.register_parametrization(u, "weight", sym)
    UZ.register_parametrization(u, "weight", Scale(2.0))
    TZ.register_parametrization(t, "weight", TSymmetric())
    TZ.register_parametrization(t, "weight", TScale(2.0))
    assert u.parametrizations.weight[0] is sym and len(u.parametrizations.weight) == 2
    assert UZ.is_parametrized(u) and UZ.is_parametrized(u, "weight") and not UZ.is_parametrized(u, "bias")
    assert list(u.state_dict()) == list(t.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_close(to_np(u.weight), to_np(t.weight))
    check_layer(u, t, rand(3, 5))
    # Scale has no right_inverse: assignment needs every one.
    with pytest.raises(RuntimeError, match="right_inverse"):
        u.weight = ug.tensor(rand(5, 5))
    UZ.remove_parametrizations(u, "weight", leave_parametrized=False)
    TZ.remove_parametrizations(t, "weight", leave_parametrized=False)
    assert_close(to_np(u.weight), to_np(t.weight))
    assert not UZ.is_parametrized(u) and type(u).__name__ == "Linear" and repr(u) == repr(t)


def test_assignment_goes_through_right_inverse():
    u = ug.nn.Linear(4, 4, dtype=ug.float64)
    UZ.register_parametrization(u, "weight", Symmetric())
    a = rand(4, 4)
    u.weight = ug.tensor(a)
    assert_close(to_np(u.parametrizations.weight.original), np.triu(a))
    assert_close(to_np(u.weight), np.triu(a) + np.triu(a, 1).T)


def test_several_originals():
    u, t = ug.nn.Linear(4, 3, dtype=ug.float64), torch.nn.Linear(4, 3, dtype=torch.float64)
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    UZ.register_parametrization(u, "weight", RankOne())
    TZ.register_parametrization(t, "weight", TRankOne())
    assert list(u.state_dict()) == list(t.state_dict())
    assert u.parametrizations.weight.ntensors == 2 and not u.parametrizations.weight.is_tensor
    check_layer(u, t, rand(2, 4))
    with pytest.raises(ValueError, match="leave_parametrized"):
        UZ.remove_parametrizations(u, "weight", leave_parametrized=False)
    UZ.remove_parametrizations(u, "weight")
    TZ.remove_parametrizations(t, "weight")
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert_close(to_np(u.weight), to_np(t.weight))


def test_cached_computes_once():
    calls = []

    class Counted(ug.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2

    u = ug.nn.Linear(3, 3)
    UZ.register_parametrization(u, "weight", Counted())
    calls.clear()
    u.weight, u.weight
    assert len(calls) == 2
    with UZ.cached():
        a, b = u.weight, u.weight
        u(ug.randn(2, 3))
    assert len(calls) == 3  # once inside the block
    np.testing.assert_array_equal(to_np(a), to_np(b))
    u.weight
    assert len(calls) == 4


def test_parametrized_buffer_and_python_module_host():
    class Host(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("m", ug.tensor(rand(3, 3)))

        def forward(self, x):
            return x @ self.m

    h = Host()
    UZ.register_parametrization(h, "m", Symmetric())
    assert list(h.state_dict()) == ["parametrizations.m.original"] and not list(h.parameters())
    x = rand(2, 3)
    m = to_np(h.m)
    assert_close(m, m.T)
    assert_close(to_np(h(ug.tensor(x))), x @ m)


def test_bad_registrations():
    class Shrink(ug.nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError, match="shape"):
        UZ.register_parametrization(ug.nn.Linear(3, 2), "weight", Shrink())
    u = UZ.register_parametrization(ug.nn.Linear(3, 2), "weight", Shrink(), unsafe=True)
    assert tuple(u.weight.shape) == (1, 3)
    with pytest.raises(ValueError, match="no parameter, buffer"):
        UZ.register_parametrization(ug.nn.Linear(3, 2), "kernel", Symmetric())
    with pytest.raises(ValueError, match="no parametrization"):
        UZ.remove_parametrizations(ug.nn.Linear(3, 2), "weight")


def test_deepcopy_and_training_step():
    import copy

    u = UP.weight_norm(ug.nn.Linear(4, 3))
    v = copy.deepcopy(u)
    assert list(v.state_dict()) == list(u.state_dict())
    x = ug.randn(5, 4)
    assert_close(to_np(v(x)), to_np(u(x)))
    expected = to_np(v(x))
    opt = ug.optim.SGD(u.parameters(), lr=0.1)
    before = to_np(u.weight).copy()
    u(x).sum().backward()
    opt.step()
    assert not np.allclose(to_np(u.weight), before)
    np.testing.assert_array_equal(to_np(v(x)), expected)  # the copy's originals are its own


# ---- the hook-based weight_norm and spectral_norm -------------------------------------------


@pytest.mark.parametrize("kind", ["linear", "conv2d"])
@pytest.mark.parametrize("dim", [0, None])
def test_hook_weight_norm_matches_torch(kind, dim):
    u, t, shape = twins(kind)
    with pytest.warns(FutureWarning, match="deprecated"):
        ug.nn.utils.weight_norm(u, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(t, dim=dim)
    assert list(u.state_dict()) == list(t.state_dict())
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    for key, value in t.state_dict().items():
        assert_close(to_np(u.state_dict()[key]), value.numpy(), path=key)
    assert_close(to_np(u.weight), to_np(t.weight))
    check_layer(u, t, rand(*shape))
    with pytest.raises(RuntimeError, match="two weight_norm"), pytest.warns(FutureWarning):
        ug.nn.utils.weight_norm(u)
    ug.nn.utils.remove_weight_norm(u)
    torch.nn.utils.remove_weight_norm(t)
    assert [n for n, _ in u.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert_close(to_np(u.weight), to_np(t.weight))
    check_layer(u, t, rand(*shape))
    with pytest.raises(ValueError, match="not found"):
        ug.nn.utils.remove_weight_norm(u)


@pytest.mark.parametrize("kind", ["linear", "conv2d", "convT2d"])
def test_hook_spectral_norm_matches_torch(kind):
    u, t, shape = twins(kind)
    ug.nn.utils.spectral_norm(u, n_power_iterations=2)
    torch.nn.utils.spectral_norm(t, n_power_iterations=2)
    assert list(u.state_dict()) == list(t.state_dict())
    load_from(u, t)  # the same u and v to start from
    for step in range(2):
        check_layer(u, t, rand(*shape), seed=step)
        for name in ("weight_u", "weight_v"):
            assert_close(to_np(getattr(u, name)), to_np(getattr(t, name)), path=name)
    u.eval()
    t.eval()
    check_layer(u, t, rand(*shape))
    assert_close(to_np(u.weight), to_np(t.weight))
    ug.nn.utils.remove_spectral_norm(u)
    torch.nn.utils.remove_spectral_norm(t)
    assert list(u.state_dict()) == list(t.state_dict())
    assert_close(to_np(u.weight), to_np(t.weight))
    with pytest.raises(ValueError, match="not found"):
        ug.nn.utils.remove_spectral_norm(u)


def test_a_forward_that_raised_leaves_no_stale_weight_behind():
    u = UP.weight_norm(ug.nn.Linear(3, 2, dtype=ug.float64))
    with pytest.raises(ValueError):
        u(ug.zeros(4, 5, dtype=ug.float64))  # the slot was filled, the forward raised
    with ug.no_grad():
        u.parametrizations.weight.original0.mul_(3)
    x = rand(4, 3)
    expected = x @ to_np(UZ.ParametrizationList.forward(u.parametrizations.weight)).T + to_np(u.bias)
    assert_close(to_np(u(ug.tensor(x))), expected)
    assert [n for n, _ in u.named_parameters()] == ["bias", "parametrizations.weight.original0",
                                                    "parametrizations.weight.original1"]


def test_transfer_parametrizations_and_params():
    src_u, src_t = ug.nn.Linear(4, 3, dtype=ug.float64), torch.nn.Linear(4, 3, dtype=torch.float64)
    src_u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in src_t.state_dict().items()})
    UP.weight_norm(src_u)
    TP.weight_norm(src_t)
    dst_u, dst_t = ug.nn.Linear(4, 3, dtype=ug.float64), torch.nn.Linear(4, 3, dtype=torch.float64)
    UZ.transfer_parametrizations_and_params(src_u, dst_u)
    TZ.transfer_parametrizations_and_params(src_t, dst_t)
    assert list(dst_u.state_dict()) == list(dst_t.state_dict())
    assert_close(to_np(dst_u.weight), to_np(dst_t.weight))
    # The originals are shared: a step on the source moves the destination too.
    with ug.no_grad():
        src_u.parametrizations.weight.original0.mul_(2)
    assert_close(to_np(dst_u.weight), 2 * to_np(dst_t.weight))
    assert UZ.transfer_parametrizations_and_params(ug.nn.Linear(2, 2), dst_u) is dst_u  # nothing to transfer
