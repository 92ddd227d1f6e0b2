"""ug.optim.swa_utils (AveragedModel, SWALR, update_bn and the averaging functions) against
torch.optim.swa_utils 2.13: the same small model trained the same steps in both."""
import numpy as np
import pytest
import torch
from torch.optim import swa_utils as tsu

import unigrad as ug
from unigrad.optim import swa_utils as usu

RNG = np.random.default_rng(0)
X = [RNG.standard_normal((8, 4)).astype(np.float32) for _ in range(5)]
Y = [RNG.standard_normal((8, 2)).astype(np.float32) for _ in range(5)]


def models():
    """A torch model and a unigrad one with the same weights: Linear, BatchNorm1d, ReLU, Linear."""
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    u = ug.nn.Sequential(ug.nn.Linear(4, 6), ug.nn.BatchNorm1d(6), ug.nn.ReLU(), ug.nn.Linear(6, 2))
    u.load_state_dict({k: ug.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, u


def train_step(m, model, opt, i):
    opt.zero_grad()
    out = model(m.tensor(X[i]))
    ((out - m.tensor(Y[i])) ** 2).mean().backward()
    opt.step()


def assert_same_state(t, u, rtol=2e-5, atol=2e-6):
    want, got = t.state_dict(), u.state_dict()
    assert list(got) == list(want)
    for k in want:
        # float32 after a few SGD steps and averages: a few roundings of values ~1
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("kind", ["swa", "ema_avg_fn", "ema_multi", "swa_multi", "swa_buffers", "ema_multi_buffers"])
def test_averaged_model_matches_torch(kind):
    t, u = models()
    kwargs = {"swa": ({}, {}),
              "ema_avg_fn": ({"avg_fn": tsu.get_ema_avg_fn(0.8)}, {"avg_fn": usu.get_ema_avg_fn(0.8)}),
              "ema_multi": ({"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.7)},
                            {"multi_avg_fn": usu.get_ema_multi_avg_fn(0.7)}),
              "swa_multi": ({"multi_avg_fn": tsu.get_swa_multi_avg_fn()}, {"multi_avg_fn": usu.get_swa_multi_avg_fn()}),
              "swa_buffers": ({"use_buffers": True}, {"use_buffers": True}),
              "ema_multi_buffers": ({"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.6), "use_buffers": True},
                                    {"multi_avg_fn": usu.get_ema_multi_avg_fn(0.6), "use_buffers": True})}[kind]
    ta, ua = tsu.AveragedModel(t, **kwargs[0]), usu.AveragedModel(u, **kwargs[1])
    topt, uopt = torch.optim.SGD(t.parameters(), lr=0.1), ug.optim.SGD(u.parameters(), lr=0.1)
    for i in range(5):
        train_step(torch, t, topt, i)
        train_step(ug, u, uopt, i)
        ta.update_parameters(t)
        ua.update_parameters(u)
    assert ua.n_averaged.item() == ta.n_averaged.item() == 5
    assert_same_state(ta, ua)
    ta.eval()
    ua.eval()
    np.testing.assert_allclose(ua(ug.tensor(X[0])).detach().numpy(), ta(torch.tensor(X[0])).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_update_bn_matches_torch():
    t, u = models()
    loader = [(x, y) for x, y in zip(X, Y)]
    t.eval()
    u.eval()
    tsu.update_bn([(torch.tensor(x), torch.tensor(y)) for x, y in loader], t)
    usu.update_bn([(ug.tensor(x), ug.tensor(y)) for x, y in loader], u)
    assert_same_state(t, u)
    assert not u.training and u[1].momentum == 0.1 and u[1].num_batches_tracked.item() == 5
    usu.update_bn([ug.tensor(x) for x in X[:2]], u, device="cpu")  # bare tensors; reset first
    assert u[1].num_batches_tracked.item() == 2
    usu.update_bn([ug.tensor(x) for x in X], ug.nn.Linear(4, 2))  # no batch norm: nothing to do


def test_swa_multi_avg_fn_refuses_integer_buffers_as_torch():
    t, u = models()
    ta = tsu.AveragedModel(t, multi_avg_fn=tsu.get_swa_multi_avg_fn(), use_buffers=True)
    ua = usu.AveragedModel(u, multi_avg_fn=usu.get_swa_multi_avg_fn(), use_buffers=True)
    ta.update_parameters(t)  # the first call copies; the second averages
    ua.update_parameters(u)
    with pytest.raises(RuntimeError, match="Integer division"):
        ta.update_parameters(t)
    with pytest.raises(RuntimeError, match=r"\[swa_update\] cannot average a .*int64 tensor in place"):
        ua.update_parameters(u)


def test_batch_norm_momentum_and_reset_running_stats():
    t, u = models()
    for m, model in ((torch, t), (ug, u)):
        model.train()
        model[1].momentum = None  # a cumulative average
        for x in X[:3]:
            model(m.tensor(x))
    assert u[1].momentum is None
    assert_same_state(t, u)
    t[1].reset_running_stats()
    u[1].reset_running_stats()
    assert_same_state(t, u)
    assert u[1].running_var.tolist() == [1.0] * 6 and u[1].num_batches_tracked.item() == 0
    u[1].momentum = 0.3
    assert u[1].momentum == 0.3 and "momentum=0.3" in repr(u[1])


def test_averaged_model_copies_and_checks():
    t, u = models()
    ua = usu.AveragedModel(u)
    assert ua.module is not u and ua.module[0].weight is not u[0].weight
    assert ua.n_averaged.dtype == ug.int64 and ua.n_averaged.item() == 0
    with pytest.raises(TypeError, match=r"\[AveragedModel\] expected a Module, got list"):
        usu.AveragedModel([u])
    with pytest.raises(ValueError, match=r"\[AveragedModel.update_parameters\] model has 2 tensors to average, "
                                         r"the averaged copy 6"):
        ua.update_parameters(ug.nn.Linear(4, 2))


def sgd_pair(groups):
    tp = [torch.nn.Parameter(torch.zeros(2)) for _ in groups]
    up = [ug.nn.Parameter(ug.zeros(2)) for _ in groups]
    return (torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(tp, groups)], lr=0.1),
            ug.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(up, groups)], lr=0.1))


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3, 10])
def test_swalr_lr_sequence_matches_torch(strategy, anneal_epochs):
    topt, uopt = sgd_pair([0.5, 0.2])
    swa_lr = [0.05, 0.01] if anneal_epochs % 2 else 0.05
    ts = tsu.SWALR(topt, swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    us = usu.SWALR(uopt, swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    for epoch in range(14):
        np.testing.assert_allclose(us.get_last_lr(), ts.get_last_lr(), rtol=1e-14, err_msg=str(epoch))
        if epoch == 6:  # a change by hand carries on, as in torch
            topt.param_groups[0]["lr"] = uopt.param_groups[0]["lr"] = 0.3
        topt.step()
        uopt.step()
        ts.step()
        us.step()
    assert [g["swa_lr"] for g in uopt.param_groups] == [g["swa_lr"] for g in topt.param_groups]
    state = us.state_dict()
    assert state["anneal_epochs"] == anneal_epochs and state["last_epoch"] == ts.last_epoch
    assert us.anneal_epochs == anneal_epochs and us.anneal_strategy == strategy


def test_swalr_defaults_and_errors():
    topt, uopt = sgd_pair([1.0])
    ts, us = tsu.SWALR(topt, swa_lr=0.1), usu.SWALR(uopt, swa_lr=0.1)
    for _ in range(12):
        topt.step()
        uopt.step()
        ts.step()
        us.step()
        np.testing.assert_allclose(us.get_last_lr(), ts.get_last_lr(), rtol=1e-14)
    assert us.anneal_epochs == 10 and us.anneal_strategy == "cos"
    with pytest.raises(ValueError, match=r"\[SWALR\] anneal_strategy must be one of 'cos' or 'linear', instead got "
                                         r"exp"):
        usu.SWALR(uopt, 0.1, anneal_strategy="exp")
    for bad in (-1, 2.5):
        with pytest.raises(ValueError, match=r"\[SWALR\] anneal_epochs must be equal or greater than 0"):
            usu.SWALR(uopt, 0.1, anneal_epochs=bad)
        with pytest.raises(ValueError):
            tsu.SWALR(topt, 0.1, anneal_epochs=bad)
    with pytest.raises(ValueError, match=r"swa_lr must have the same length as optimizer.param_groups"):
        usu.SWALR(uopt, [0.1, 0.2])


def test_the_functions_match_torch():
    a, c = RNG.standard_normal(5), RNG.standard_normal(5)
    n = 3
    for tf, uf in ((tsu.get_ema_avg_fn(0.9), usu.get_ema_avg_fn(0.9)), (tsu.get_swa_avg_fn(), usu.get_swa_avg_fn())):
        np.testing.assert_allclose(uf(ug.tensor(a), ug.tensor(c), ug.tensor(n)).numpy(),
                                   tf(torch.tensor(a), torch.tensor(c), torch.tensor(n)).numpy(), rtol=1e-15)
    for tf, uf in ((tsu.get_ema_multi_avg_fn(0.9), usu.get_ema_multi_avg_fn(0.9)),
                   (tsu.get_swa_multi_avg_fn(), usu.get_swa_multi_avg_fn())):
        ta, ua = [torch.tensor(a)], [ug.tensor(a)]
        tf(ta, [torch.tensor(c)], torch.tensor(n))
        uf(ua, [ug.tensor(c)], ug.tensor(n))
        # lerp's weight is a float32 tensor in torch's swa update: its rounding, on values ~1
        np.testing.assert_allclose(ua[0].numpy(), ta[0].numpy(), rtol=1e-7, atol=1e-7)


def test_averaged_model_on_a_device_and_module_to():
    t, u = models()
    # Module.to takes a device as torch's does ("cpu", ug.device): it once read every string as a dtype
    assert u.to("cpu") is u and u.to(ug.device("cpu")) is u and u.to("float32") is u
    with pytest.raises(TypeError, match=r"\[dtype\] unknown dtype 'float33'"):
        u.to("float33")
    ta, ua = tsu.AveragedModel(t, device="cpu"), usu.AveragedModel(u, device="cpu")
    for _ in range(2):
        ta.update_parameters(t)
        ua.update_parameters(u)
    assert ua.n_averaged.device == ug.device("cpu") and ua.n_averaged.item() == 2
    assert_same_state(ta, ua)
