"""ug.optim against torch 2.13: identical parameters and hand-set gradients, several steps,
every optimizer with the option combinations that change its update rule; schedulers' lr
sequences; clipping; state dicts; the functional (optax-style) form."""
import math

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_close

SHAPES = [(4, 3), (7,), (2, 3, 2)]
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def arrays(dtype, seed, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def close(u, t, dtype):
    np.testing.assert_allclose(u.numpy(), t.detach().numpy(), **TOL[dtype])


def run_pair(name, kwargs, dtype="float32", steps=6, skip=None, ug_kwargs=None):
    """Steps torch's single-tensor optimizer and ours on the same params and grads; `skip`
    (step, param) pairs get no gradient that step; ug_kwargs go to ours alone."""
    init = arrays(dtype, 0)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    up = [ug.tensor(a).requires_grad_() for a in init]
    topt = getattr(torch.optim, name)(tp, foreach=False, **kwargs)
    uopt = getattr(ug.optim, name)(up, **kwargs, **(ug_kwargs or {}))
    for s in range(steps):
        for i, (t, u, g) in enumerate(zip(tp, up, arrays(dtype, 100 + s))):
            none = skip is not None and (s, i) in skip
            t.grad = None if none else torch.tensor(g)
            u.grad = None if none else ug.tensor(g)
        topt.step()
        uopt.step()
    for t, u in zip(tp, up):
        close(u, t, dtype)
    return topt, uopt, tp, up


def check_state(topt, uopt, dtype):
    ts, us = topt.state_dict()["state"], uopt.state_dict()["state"]
    assert sorted(ts) == sorted(us)
    for k in ts:
        assert sorted(ts[k]) == sorted(us[k]), (ts[k].keys(), us[k].keys())
        for name, t in ts[k].items():
            close(us[k][name], t, dtype)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.9), amsgrad=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-4, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, eps=1e-3, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_optimizer_matches_torch(name, kwargs):
    topt, uopt, _, _ = run_pair(name, kwargs, skip={(1, 0), (2, 2)})
    check_state(topt, uopt, "float32")


@pytest.mark.parametrize("name,kwargs", [CASES[2], CASES[7], CASES[13], CASES[18], CASES[22]])
def test_optimizer_matches_torch_float64(name, kwargs):
    topt, uopt, _, _ = run_pair(name, kwargs, dtype="float64")
    check_state(topt, uopt, "float64")


# The optimizers after the first five, over more steps and in both dtypes.
MORE_CASES = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.9), momentum_decay=0.01, eps=1e-6, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),  # rho_t > 5 from step 6 on: both branches
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.04), maximize=True)),  # both clamps reached
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.1, lambd=0.05, alpha=0.5, t0=4, weight_decay=0.1)),  # averaging from step 5 on
    ("ASGD", dict(lr=0.05, lambd=1e-3, t0=0, maximize=True)),  # averaging from the first step
    # SHAPES has a matrix, a vector and a 3-d tensor: factored over its last two dimensions
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-4, 1e-2), d=1.5, weight_decay=0.1, maximize=True)),
    ("Adafactor", dict(lr=0.5, eps=(None, 0.5))),  # lr above 1/sqrt(step) from step 5 on
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", MORE_CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in MORE_CASES])
def test_more_optimizers_match_torch(name, kwargs, dtype):
    topt, uopt, _, _ = run_pair(name, kwargs, dtype=dtype, steps=12, skip={(1, 0), (2, 2)})
    check_state(topt, uopt, dtype)


@pytest.mark.parametrize("name,kwargs", [MORE_CASES[1], MORE_CASES[6], MORE_CASES[9], MORE_CASES[11], MORE_CASES[13],
                                         MORE_CASES[15], MORE_CASES[18]])
def test_more_optimizers_resume_from_state_dict_as_torch_continues(name, kwargs):
    """Saved after 4 steps and loaded into a fresh optimizer over copies of the parameters, the
    run goes on as torch's uninterrupted one."""
    dtype = "float32"
    init = arrays(dtype, 7)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    up = [ug.tensor(a).requires_grad_() for a in init]
    topt = getattr(torch.optim, name)(tp, foreach=False, **kwargs)
    uopt = getattr(ug.optim, name)(up, **kwargs)

    def steps(ups, uo, which):
        for s in which:
            for t, u, g in zip(tp, ups, arrays(dtype, 400 + s)):
                t.grad, u.grad = torch.tensor(g), ug.tensor(g)
            topt.step()
            uo.step()

    steps(up, uopt, range(4))
    sd = uopt.state_dict()
    resumed = [ug.tensor(p.numpy().copy()).requires_grad_() for p in up]
    ropt = getattr(ug.optim, name)(resumed, **kwargs)
    ropt.load_state_dict(sd)
    steps(resumed, ropt, range(4, 12))
    for t, u in zip(tp, resumed):
        close(u, t, dtype)
    check_state(topt, ropt, dtype)


@pytest.mark.parametrize("name,kwargs,message", [
    ("NAdam", dict(lr=-1.0), "Invalid learning rate: -1"),
    ("NAdam", dict(momentum_decay=-0.1), "Invalid momentum_decay value: -0.1"),
    ("RAdam", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1"),
    ("RAdam", dict(weight_decay=-1.0), "Invalid weight_decay value: -1"),
    ("Adamax", dict(eps=-1.0), "Invalid epsilon value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Rprop", dict(etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    ("ASGD", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("ASGD", dict(weight_decay=-1.0), "Invalid weight_decay value: -1"),
    ("Adafactor", dict(lr=-1.0), "Learning rate should be >= 0 but is: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
])
def test_more_optimizers_reject_bad_arguments_as_torch(name, kwargs, message):
    p = ug.zeros(3).requires_grad_()
    with pytest.raises(ValueError, match=message):
        getattr(torch.optim, name)([torch.zeros(3, requires_grad=True)], **kwargs)
    with pytest.raises(ug.errors.ValueError, match=f"\\[{name}\\] {message}"):
        getattr(ug.optim, name)([p], **kwargs)


def test_large_parameter_uses_threads_and_matches():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    t = torch.tensor(a, requires_grad=True)
    u = ug.tensor(a).requires_grad_()
    topt = torch.optim.AdamW([t], lr=1e-2, foreach=False)
    uopt = ug.optim.AdamW([u], lr=1e-2)
    for s in range(3):
        g = rng.standard_normal(a.shape).astype(np.float32)
        t.grad, u.grad = torch.tensor(g), ug.tensor(g)
        topt.step()
        uopt.step()
    close(u, t, "float32")


def test_param_groups_with_their_own_lr():
    init = arrays("float32", 0)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    up = [ug.tensor(a).requires_grad_() for a in init]
    topt = torch.optim.SGD([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9,
                           foreach=False)
    uopt = ug.optim.SGD([{"params": up[:2]}, {"params": up[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9)
    assert uopt.param_groups[1]["lr"] == 0.01 and uopt.param_groups[0]["momentum"] == 0.9
    for s in range(4):
        if s == 2:  # changing a group's lr by hand takes effect at the next step
            topt.param_groups[0]["lr"] = 0.3
            uopt.param_groups[0]["lr"] = 0.3
        for t, u, g in zip(tp, up, arrays("float32", 10 + s)):
            t.grad, u.grad = torch.tensor(g), ug.tensor(g)
        topt.step()
        uopt.step()
    for t, u in zip(tp, up):
        close(u, t, "float32")
    g = uopt.param_groups[0]
    assert set(g.keys()) == {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"}
    assert len(g["params"]) == 2 and "lr" in g and g.get("nope", 5) == 5


def test_zero_grad_set_to_none_or_zeros():
    p = ug.tensor([1.0, 2.0]).requires_grad_()
    opt = ug.optim.SGD([p], lr=0.1)
    p.grad = ug.tensor([1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.numpy().tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: nothing changes
    assert p.numpy().tolist() == [1.0, 2.0]


def test_step_with_closure_and_no_grad_recording():
    w = ug.tensor([1.0, -2.0]).requires_grad_()
    opt = ug.optim.SGD([w], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    assert w.is_leaf and w.grad_fn is None


@pytest.mark.parametrize("name,kwargs", [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("RMSprop", dict(momentum=0.5, centered=True)), ("Adagrad", dict(lr_decay=0.1))])
def test_state_dict_round_trip_is_bit_identical(name, kwargs):
    init = arrays("float32", 3)
    grads = [arrays("float32", 200 + s) for s in range(6)]

    def make():
        ps = [ug.tensor(a).requires_grad_() for a in init]
        return ps, getattr(ug.optim, name)(ps, **kwargs)

    def steps(ps, opt, which):
        for s in which:
            for p, g in zip(ps, grads[s]):
                p.grad = ug.tensor(g)
            opt.step()

    ref_p, ref_opt = make()
    steps(ref_p, ref_opt, range(6))
    a_p, a_opt = make()
    steps(a_p, a_opt, range(3))
    sd = a_opt.state_dict()
    b_p = [ug.tensor(p.numpy().copy()).requires_grad_() for p in a_p]
    b_opt = getattr(ug.optim, name)(b_p, **kwargs)
    b_opt.load_state_dict(sd)
    steps(a_p, a_opt, range(3, 6))  # the original goes on: the loaded copy must not share its state
    steps(b_p, b_opt, range(3, 6))
    for r, a, b in zip(ref_p, a_p, b_p):
        assert np.array_equal(r.numpy(), b.numpy()) and np.array_equal(r.numpy(), a.numpy())
    if name != "SGD":  # SGD keeps no step count
        assert b_opt.state_dict()["state"][0]["step"].item() == 6


def test_loads_a_torch_state_dict():
    init = arrays("float32", 4)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    topt = torch.optim.Adam(tp, lr=0.01, amsgrad=True, foreach=False)
    for s in range(2):
        for t, g in zip(tp, arrays("float32", 50 + s)):
            t.grad = torch.tensor(g)
        topt.step()
    sd = topt.state_dict()
    up = [ug.tensor(t.detach().numpy().copy()).requires_grad_() for t in tp]
    uopt = ug.optim.Adam(up)
    uopt.load_state_dict({"param_groups": sd["param_groups"],
                          "state": {k: {n: ug.tensor(v.numpy()) for n, v in st.items()} for k, st in sd["state"].items()}})
    assert uopt.param_groups[0]["lr"] == 0.01 and uopt.param_groups[0]["amsgrad"]
    for s in range(2, 4):
        for t, u, g in zip(tp, up, arrays("float32", 50 + s)):
            t.grad, u.grad = torch.tensor(g), ug.tensor(g)
        topt.step()
        uopt.step()
    for t, u in zip(tp, up):
        close(u, t, "float32")


def test_state_dict_structure_and_errors():
    ps = [ug.tensor(a).requires_grad_() for a in arrays("float32", 0)]
    opt = ug.optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.1}])
    for p in ps:
        p.grad = ug.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert sd["param_groups"][1]["lr"] == 0.1 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sorted(sd["state"][2]) == ["exp_avg", "exp_avg_sq", "step"]
    assert ps[0] in opt.state and sorted(opt.state[ps[0]]) == ["exp_avg", "exp_avg_sq", "step"]
    other = ug.optim.Adam([ug.zeros(2).requires_grad_()])
    with pytest.raises(ug.errors.ValueError):
        other.load_state_dict(sd)


def test_bad_arguments_raise():
    p = ug.zeros(3).requires_grad_()
    with pytest.raises(ug.errors.ValueError):
        ug.optim.Adam([p], lr=-1.0)
    with pytest.raises(ug.errors.ValueError):
        ug.optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ug.errors.ValueError):
        ug.optim.SGD([p], nesterov=True)
    with pytest.raises(ug.errors.ValueError):
        ug.optim.SGD([])
    with pytest.raises(ug.errors.TypeError):
        ug.optim.SGD(p)
    with pytest.raises(ug.errors.ValueError):
        ug.optim.SGD([p, p])
    q = ug.zeros(3, dtype=ug.int64)
    opt = ug.optim.SGD([q])
    q.grad = ug.zeros(3, dtype=ug.int64)
    with pytest.raises(ug.errors.TypeError):
        opt.step()


def test_non_contiguous_parameter():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    u = ug.tensor(a).t()
    u.requires_grad_()
    assert not u.is_contiguous()
    t = torch.tensor(a).t().requires_grad_()
    g = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    uopt, topt = ug.optim.Adam([u], lr=0.1), torch.optim.Adam([t], lr=0.1, foreach=False)
    for _ in range(2):
        u.grad, t.grad = ug.tensor(g), torch.tensor(g)
        uopt.step()
        topt.step()
    close(u, t, "float32")


# ---- functional (optax-style) ------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [("AdamW", dict(lr=0.01, weight_decay=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("RMSprop", dict(centered=True)), ("Adagrad", dict()),
                                         # Adam's functional update reads one array, writes another
                                         ("Adam", dict(lr=0.01)),
                                         ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
                                         *MORE_CASES])
def test_functional_update_equals_step(name, kwargs):
    init = arrays("float32", 5)
    names = ["w", "b", "c"]
    params = {n: ug.tensor(a) for n, a in zip(names, init)}
    ps = [ug.tensor(a).requires_grad_() for a in init]
    opt = getattr(ug.optim, name)(ps, **kwargs)
    fopt = getattr(ug.optim, name)(**kwargs)
    state = fopt.init(params)
    for s in range(4):
        gs = arrays("float32", 300 + s)
        for p, g in zip(ps, gs):
            p.grad = ug.tensor(g)
        opt.step()
        grads = {n: ug.tensor(g) for n, g in zip(names, gs)}
        before = {n: p.numpy().copy() for n, p in params.items()}
        state_before = {n: {k: v.numpy().copy() for k, v in st.items()} for n, st in state.items()}
        updates, new_state = fopt.update(grads, state, params)
        for n in names:  # inputs untouched
            assert np.array_equal(params[n].numpy(), before[n])
            for k, v in state[n].items():
                assert np.array_equal(v.numpy(), state_before[n][k])
        params = ug.optim.apply_updates(params, updates)
        state = new_state
    for n, p in zip(names, ps):
        np.testing.assert_allclose(params[n].numpy(), p.numpy(), rtol=1e-5, atol=1e-6)
        for k, v in opt.state[p].items():
            np.testing.assert_allclose(state[n][k].numpy(), v.numpy(), rtol=1e-6, atol=1e-7)


def test_functional_lists_and_missing_grads():
    params = [ug.tensor([1.0, 2.0]), ug.tensor([3.0])]
    opt = ug.optim.SGD(lr=0.5)
    state = opt.init(params)
    assert isinstance(state, list) and len(state) == 2
    updates, state = opt.update([ug.tensor([1.0, -1.0]), None], state, params)
    assert updates[1].numpy().tolist() == [0.0]
    new = ug.optim.apply_updates(params, updates)
    assert new[0].numpy().tolist() == [0.5, 2.5] and new[1].numpy().tolist() == [3.0]


# ---- gradient accumulation -----------------------------------------------------------------

def test_gradient_accumulation_equals_one_big_batch():
    rng = np.random.default_rng(7)
    k, b, d = 4, 8, 5
    x = rng.standard_normal((k * b, d)).astype(np.float64)
    y = rng.standard_normal((k * b, 1)).astype(np.float64)
    w0 = rng.standard_normal((d, 1)).astype(np.float64)

    def loss(w, xs, ys):
        r = ug.matmul(ug.tensor(xs), w) - ug.tensor(ys)
        return (r * r).mean()

    big = ug.tensor(w0).requires_grad_()
    opt = ug.optim.SGD([big], lr=0.1, momentum=0.9)
    loss(big, x, y).backward()
    opt.step()
    acc = ug.tensor(w0).requires_grad_()
    opt2 = ug.optim.SGD([acc], lr=0.1, momentum=0.9)
    opt2.zero_grad()
    for i in range(k):
        (loss(acc, x[i * b:(i + 1) * b], y[i * b:(i + 1) * b]) / k).backward()
    opt2.step()
    # The gradient sums 32 rows' terms (2/N)·r·x, in four chunks or at once; one step moves w by
    # lr times it.
    r = x @ w0 - y
    terms = 0.1 * (2 / (k * b)) * np.abs(x).T @ np.abs(r)
    assert_close(acc.numpy(), big.numpy(), rtol=1e-12, atol=1e-14, terms=terms, n=k * b)


# ---- clipping ------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    gs = arrays("float32", 9)
    tp = [torch.zeros(g.shape, requires_grad=True) for g in gs]
    up = [ug.zeros(g.shape).requires_grad_() for g in gs]
    for t, u, g in zip(tp, up, gs):
        t.grad, u.grad = torch.tensor(g), ug.tensor(g)
    tn = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type=norm_type)
    un = ug.nn.utils.clip_grad_norm_(up, 1.5, norm_type=norm_type)
    # The total norm sums the 31 gradients' elements (their terms are >= 0: the norm bounds them),
    # and the clipped gradients are scaled by it.
    n = None if norm_type == math.inf else sum(g.size for g in gs)
    assert_close(float(un), float(tn), "float32", rtol=1e-6, atol=0, terms=float(tn), n=n)
    for t, u in zip(tp, up):
        assert_close(u.grad.numpy(), t.grad.numpy(), "float32", **TOL["float32"], terms=np.abs(t.grad.numpy()), n=n)


@pytest.mark.parametrize("norm_type", [2.0, 3.0, math.inf])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    # clip_grad_norm_'s two halves: the same sums as above, and one product per element.
    gs = arrays("float64", 11)
    tn = torch.nn.utils.get_total_norm([torch.tensor(g) for g in gs], norm_type=norm_type)
    un = ug.nn.utils.get_total_norm([ug.tensor(g) for g in gs], norm_type=norm_type, foreach=True)
    n = None if norm_type == math.inf else sum(g.size for g in gs)
    assert_close(float(un), float(tn), "float64", rtol=1e-15, atol=0, terms=float(tn), n=n)
    tp = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in gs]
    up = [ug.zeros(g.shape, dtype=ug.float64).requires_grad_() for g in gs]
    for t, u, g in zip(tp, up, gs):
        t.grad, u.grad = torch.tensor(g), ug.tensor(g)
    up[1].grad, tp[1].grad = None, None  # a parameter without a gradient is skipped
    for max_norm in (1.0, 1e3):  # scaled down, then left as it is
        torch.nn.utils.clip_grads_with_norm_(tp, max_norm, tn)
        ug.nn.utils.clip_grads_with_norm_(up, max_norm, un)
        for t, u in zip(tp, up):
            if t.grad is not None:
                np.testing.assert_allclose(u.grad.numpy(), t.grad.numpy(), rtol=4e-15, atol=0)
    assert float(ug.nn.utils.get_total_norm([])) == 0.0
    p = ug.tensor([1.0, float("inf")])
    with pytest.raises(RuntimeError, match="non-finite"):
        ug.nn.utils.get_total_norm([p], error_if_nonfinite=True)


def test_parameters_to_vector_and_back_as_torch():
    init = arrays("float64", 12)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    up = [ug.tensor(a).requires_grad_() for a in init]
    tv, uv = torch.nn.utils.parameters_to_vector(tp), ug.nn.utils.parameters_to_vector(up)
    assert uv.shape == tuple(tv.shape)
    np.testing.assert_array_equal(uv.numpy(), tv.detach().numpy())
    (uv * ug.tensor(np.arange(uv.shape[0], dtype=np.float64))).sum().backward()  # differentiable, as torch's
    offset = 0
    for p in up:
        np.testing.assert_array_equal(p.grad.numpy().reshape(-1), np.arange(offset, offset + p.numel()))
        offset += p.numel()
    new = np.random.default_rng(13).standard_normal(tv.shape[0] + 2)  # a longer vector: its tail unused, as torch
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tp)
    ug.nn.utils.vector_to_parameters(ug.tensor(new), up)
    for t, u in zip(tp, up):
        np.testing.assert_array_equal(u.numpy(), t.detach().numpy())
    with pytest.raises(TypeError, match="expected a Tensor, but got: list"):
        ug.nn.utils.vector_to_parameters([1.0, 2.0], up)
    with pytest.raises(ug.errors.ValueError, match=r"\[vector_to_parameters\] a vector of shape \[3\] for parameters"):
        ug.nn.utils.vector_to_parameters(ug.zeros(3), up)


def test_clip_grad_norm_nonfinite_and_value():
    p = ug.zeros(3).requires_grad_()
    p.grad = ug.tensor([1.0, float("nan"), 0.0])
    with pytest.raises(RuntimeError):
        ug.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isnan(float(ug.nn.utils.clip_grad_norm_(p, 1.0)))
    q = ug.zeros(3).requires_grad_()
    q.grad = ug.tensor([-3.0, 0.5, 2.0])
    ug.nn.utils.clip_grad_value_([q], 1.0)
    assert q.grad.numpy().tolist() == [-1.0, 0.5, 1.0]
    small = ug.zeros(2).requires_grad_()
    small.grad = ug.tensor([0.3, 0.4])
    assert abs(float(ug.nn.utils.clip_grad_norm_([small], 10.0)) - 0.5) < 1e-7
    np.testing.assert_allclose(small.grad.numpy(), [0.3, 0.4])  # below max_norm: unchanged


@pytest.mark.parametrize("name,flags", [
    ("SGD", dict(foreach=True, differentiable=False, fused=None)), ("SGD", dict(fused=True)),
    ("Adam", dict(foreach=False, capturable=True, fused=True)), ("AdamW", dict(foreach=None, capturable=False)),
    ("RMSprop", dict(capturable=False, foreach=True, differentiable=False)), ("Adagrad", dict(fused=False)),
    ("NAdam", dict(foreach=True, capturable=True)), ("RAdam", dict(foreach=False, differentiable=False)),
    ("Adamax", dict(foreach=True, capturable=False)), ("Adadelta", dict(foreach=None, capturable=True)),
    ("Rprop", dict(foreach=True, capturable=False)), ("ASGD", dict(foreach=True, capturable=True)),
    ("Adafactor", dict(foreach=True)),
])
def test_torch_implementation_flags_are_accepted(name, flags):
    # foreach, fused and capturable choose torch's kernels, not the results: the steps are the
    # plain ones (run_pair compares them with torch's single-tensor loop).
    run_pair(name, dict(lr=0.05), dtype="float64", ug_kwargs=flags)


def test_torch_implementation_flags_errors():
    params = [ug.zeros(2).requires_grad_()]
    with pytest.raises(RuntimeError, match=r"\[SGD\] `fused` and `foreach` cannot be `True` together"):
        ug.optim.SGD(params, foreach=True, fused=True)
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD"):
        with pytest.raises(ValueError, match=rf"\[{name}\] differentiable=True .* is not supported"):
            getattr(ug.optim, name)(params, differentiable=True)
    # torch's positional order: RMSprop(..., centered, capturable, foreach, maximize),
    # Adagrad(..., eps, foreach)
    run_pair("RMSprop", dict(lr=0.01), dtype="float64")
    tp, up = [torch.ones(2, requires_grad=True)], [ug.ones(2).requires_grad_()]
    for t, u in zip(tp, up):
        t.grad, u.grad = torch.full((2,), 0.5), ug.full((2,), 0.5)
    topt = torch.optim.RMSprop(tp, 0.01, 0.9, 1e-8, 0.0, 0.0, False, False, None, True)
    uopt = ug.optim.RMSprop(up, 0.01, 0.9, 1e-8, 0.0, 0.0, False, False, None, True)
    topt.step()
    uopt.step()
    close(up[0], tp[0], "float32")
    assert uopt.param_groups[0]["maximize"] and ug.optim.Adagrad(up, 0.1, 0.0, 0.0, 0.0, 1e-10, None).defaults


# ---- schedulers ------------------------------------------------------------------------------

def sched_pair(opt_name="SGD", opt_kwargs=None, two_groups=True):
    opt_kwargs = opt_kwargs if opt_kwargs is not None else dict(lr=0.1, momentum=0.9)
    tp = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    up = [ug.zeros(2).requires_grad_(), ug.zeros(3).requires_grad_()]
    if two_groups:
        tg = [{"params": tp[:1]}, {"params": tp[1:], "lr": 0.03}]
        ugg = [{"params": up[:1]}, {"params": up[1:], "lr": 0.03}]
    else:
        tg, ugg = tp, up
    return getattr(torch.optim, opt_name)(tg, **opt_kwargs), getattr(ug.optim, opt_name)(ugg, **opt_kwargs)


def same_lrs(topt, uopt, tsched, usched, steps=30, momentum_key=None):
    for s in range(steps + 1):
        assert usched.get_last_lr() == tsched.get_last_lr(), s
        assert [g["lr"] for g in uopt.param_groups] == [g["lr"] for g in topt.param_groups], s
        if momentum_key:
            assert [g[momentum_key] for g in uopt.param_groups] == [g[momentum_key] for g in topt.param_groups], s
        if s < steps:
            topt.step()
            uopt.step()
            tsched.step()
            usched.step()


TS, US = torch.optim.lr_scheduler, ug.optim.lr_scheduler

SCHEDULERS = [
    ("StepLR", dict(step_size=7, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[5, 12, 12, 20], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, total_iters=8)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=12)),
    ("ConstantLR", dict()), ("ConstantLR", dict(factor=0.4, total_iters=9)),
    ("PolynomialLR", dict()), ("PolynomialLR", dict(total_iters=17, power=2.5)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 0.95 ** epoch / (1 + epoch % 3))),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1 / (e + 1), lambda e: min(1.0, (e + 1) / 10)])),
    ("MultiplicativeLR", dict(lr_lambda=lambda epoch: 0.9 if epoch % 4 else 1.1)),
    ("MultiplicativeLR", dict(lr_lambda=(lambda e: 0.97, lambda e: 1.0 - e / 100))),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] + str(i) for i, s in enumerate(SCHEDULERS)])
def test_scheduler_matches_torch(name, kwargs):
    topt, uopt = sched_pair()
    same_lrs(topt, uopt, getattr(TS, name)(topt, **kwargs), getattr(US, name)(uopt, **kwargs))


@pytest.mark.parametrize("T_0,T_mult,eta_min", [(4, 1, 0.0), (3, 2, 0.001), (2, 3, 0.01)])
def test_cosine_annealing_warm_restarts(T_0, T_mult, eta_min):
    # step() and torch's step(epoch) with whole and fractional epochs, and a state_dict resume
    topt, uopt = sched_pair()
    ts = TS.CosineAnnealingWarmRestarts(topt, T_0, T_mult, eta_min)
    us = US.CosineAnnealingWarmRestarts(uopt, T_0, T_mult, eta_min)
    same_lrs(topt, uopt, ts, us, steps=25)
    for epoch in (3, 7.5, 0.25, 30, 12.75, 2):
        ts.step(epoch)
        us.step(epoch)
        assert us.get_last_lr() == ts.get_last_lr() and us.last_epoch == ts.last_epoch, epoch
    resumed = US.CosineAnnealingWarmRestarts(uopt, T_0, T_mult, eta_min)
    resumed.load_state_dict(us.state_dict())
    for _ in range(10):
        ts.step()
        resumed.step()
        assert resumed.get_last_lr() == ts.get_last_lr()
    with pytest.raises(ValueError, match=r"\[CosineAnnealingWarmRestarts\] Expected positive integer T_0, but got 0"):
        US.CosineAnnealingWarmRestarts(uopt, 0)
    with pytest.raises(ValueError, match=r"\[CosineAnnealingWarmRestarts\] Expected non-negative epoch"):
        us.step(-1.0)


def test_sequential_warmup_then_cosine():
    topt, uopt = sched_pair()
    tw, uw = TS.LinearLR(topt, start_factor=0.1, total_iters=5), US.LinearLR(uopt, start_factor=0.1, total_iters=5)
    tc, uc = TS.CosineAnnealingLR(topt, T_max=25), US.CosineAnnealingLR(uopt, T_max=25)
    ts = TS.SequentialLR(topt, [tw, tc], milestones=[5])
    us = US.SequentialLR(uopt, [uw, uc], milestones=[5])
    same_lrs(topt, uopt, ts, us)


def test_chained_schedulers_compose_like_torch():
    topt, uopt = sched_pair()
    t1, u1 = TS.StepLR(topt, 4, 0.5), US.StepLR(uopt, 4, 0.5)
    t2, u2 = TS.ExponentialLR(topt, 0.95), US.ExponentialLR(uopt, 0.95)
    for _ in range(20):
        topt.step()
        for s in (t1, t2, u1, u2):
            s.step()
        assert [g["lr"] for g in uopt.param_groups] == [g["lr"] for g in topt.param_groups]


@pytest.mark.parametrize("opt_name,opt_kwargs,key", [("SGD", dict(lr=0.1, momentum=0.9), "momentum"),
                                                     ("Adam", dict(lr=0.1), "betas")])
@pytest.mark.parametrize("kw", [dict(), dict(anneal_strategy="linear"), dict(three_phase=True, pct_start=0.25)])
def test_one_cycle_with_momentum(opt_name, opt_kwargs, key, kw):
    topt, uopt = sched_pair(opt_name, opt_kwargs)
    ts = TS.OneCycleLR(topt, max_lr=[1.0, 0.5], total_steps=30, **kw)
    us = US.OneCycleLR(uopt, max_lr=[1.0, 0.5], total_steps=30, **kw)
    same_lrs(topt, uopt, ts, us, steps=29, momentum_key=key)
    topt.step()
    ts.step()
    us.step()
    with pytest.raises(ValueError):
        us.step()


CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.05], step_size_up=3, step_size_down=5, mode="triangular2"),
    dict(base_lr=0.001, max_lr=0.1, step_size_up=2.5, mode="exp_range", gamma=0.9),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4, base_momentum=[0.7, 0.75], max_momentum=0.95),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + x % 3), scale_mode="iterations"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="bogus", scale_fn=lambda c: 0.8 ** c),
]


@pytest.mark.parametrize("opt_name,opt_kwargs,key", [("SGD", dict(lr=0.1, momentum=0.9), "momentum"),
                                                     ("Adam", dict(lr=0.1), "betas"),
                                                     ("SGD", dict(lr=0.1), None)])
@pytest.mark.parametrize("kw", CYCLIC, ids=[str(i) for i in range(len(CYCLIC))])
def test_cyclic_lr_matches_torch(opt_name, opt_kwargs, key, kw):
    topt, uopt = sched_pair(opt_name, opt_kwargs)
    kw = dict(kw, cycle_momentum=key is not None)
    ts, us = TS.CyclicLR(topt, **kw), US.CyclicLR(uopt, **kw)
    same_lrs(topt, uopt, ts, us, steps=25, momentum_key=key)
    if key:
        assert [g["base_momentum"] for g in uopt.param_groups] == [g["base_momentum"] for g in topt.param_groups]


def test_cyclic_lr_state_dict_and_errors():
    _, opt_a = sched_pair()
    sa = US.CyclicLR(opt_a, 0.01, 0.1, step_size_up=3, mode="triangular2")
    for _ in range(5):
        sa.step()
    _, opt_b = sched_pair()
    opt_b.load_state_dict(opt_a.state_dict())
    sb = US.CyclicLR(opt_b, 0.01, 0.1, step_size_up=3, mode="triangular2", last_epoch=4)
    sb.load_state_dict(sa.state_dict())
    for _ in range(10):
        sa.step()
        sb.step()
        assert sa.get_last_lr() == sb.get_last_lr()
        assert [g["momentum"] for g in opt_a.param_groups] == [g["momentum"] for g in opt_b.param_groups]
    topt, uopt = sched_pair("Adagrad", dict(lr=0.1))
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        TS.CyclicLR(topt, 0.01, 0.1)
    with pytest.raises(ug.errors.ValueError, match=r"\[CyclicLR\] optimizer must support momentum or beta1"):
        US.CyclicLR(uopt, 0.01, 0.1)
    with pytest.raises(ug.errors.ValueError, match=r"\[CyclicLR\] mode is invalid and scale_fn is None"):
        US.CyclicLR(uopt, 0.01, 0.1, mode="bogus", cycle_momentum=False)
    with pytest.raises(ug.errors.ValueError, match="max_lr must have the same length"):
        US.CyclicLR(uopt, 0.01, [0.1, 0.2, 0.3], cycle_momentum=False)


def test_chained_scheduler_matches_torch():
    topt, uopt = sched_pair()
    tc = TS.ChainedScheduler([TS.ConstantLR(topt, factor=0.1, total_iters=2), TS.ExponentialLR(topt, gamma=0.9),
                              TS.CyclicLR(topt, 0.01, 0.1, step_size_up=3)])
    uc = US.ChainedScheduler([US.ConstantLR(uopt, factor=0.1, total_iters=2), US.ExponentialLR(uopt, gamma=0.9),
                              US.CyclicLR(uopt, 0.01, 0.1, step_size_up=3)], optimizer=uopt)
    same_lrs(topt, uopt, tc, uc, steps=12, momentum_key="momentum")
    # Resumed as torch's: schedulers made, their state loaded, then the optimizer's (whose
    # groups hold the lr and momentum the chain had set).
    _, uopt2 = sched_pair()
    uc2 = US.ChainedScheduler([US.ConstantLR(uopt2, factor=0.1, total_iters=2), US.ExponentialLR(uopt2, gamma=0.9),
                               US.CyclicLR(uopt2, 0.01, 0.1, step_size_up=3)])
    uc2.load_state_dict(uc.state_dict())
    uopt2.load_state_dict(uopt.state_dict())
    for _ in range(6):
        for c in (uc, uc2, tc):
            c.step()
        assert uc2.get_last_lr() == uc.get_last_lr() == tc.get_last_lr()


def test_chained_scheduler_errors_as_torch():
    topt, uopt = sched_pair()
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        TS.ChainedScheduler([])
    with pytest.raises(ug.errors.ValueError, match=r"\[ChainedScheduler\] expects at least one scheduler"):
        US.ChainedScheduler([])
    # also with the optimizer given (torch's check does not depend on it)
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        TS.ChainedScheduler([], topt)
    with pytest.raises(ug.errors.ValueError, match=r"\[ChainedScheduler\] expects at least one scheduler"):
        US.ChainedScheduler([], uopt)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        US.ChainedScheduler([US.ExponentialLR(uopt, 0.9), US.ReduceLROnPlateau(uopt)])
    _, other = sched_pair()
    with pytest.raises(ug.errors.ValueError, match="expects all schedulers to belong to the same optimizer"):
        US.ChainedScheduler([US.ExponentialLR(uopt, 0.9), US.ExponentialLR(other, 0.9)])


@pytest.mark.parametrize("kw", [dict(patience=2, cooldown=1), dict(mode="max", patience=1, threshold_mode="abs",
                                                                   threshold=0.05, factor=0.5, min_lr=[0.01, 0.02])])
def test_reduce_lr_on_plateau(kw):
    topt, uopt = sched_pair()
    ts, us = TS.ReduceLROnPlateau(topt, **kw), US.ReduceLROnPlateau(uopt, **kw)
    losses = [1.0, 0.9, 0.95, 0.91, 0.92, 0.93, 0.89, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    for i, x in enumerate(losses):
        ts.step(x)
        us.step(ug.tensor(np.float64(x)) if i % 2 else x)  # a number or a one-element tensor
        assert us.get_last_lr() == ts.get_last_lr()
        assert us.num_bad_epochs == ts.num_bad_epochs and us.best == ts.best


def test_scheduler_state_dict_resumes():
    _, opt_a = sched_pair()
    sa = US.CosineAnnealingLR(opt_a, T_max=10)
    for _ in range(4):
        sa.step()
    _, opt_b = sched_pair()
    opt_b.load_state_dict(opt_a.state_dict())
    sb = US.CosineAnnealingLR(opt_b, T_max=10)
    sb.load_state_dict(sa.state_dict())
    assert sb.state_dict()["last_epoch"] == 4
    for _ in range(8):
        sa.step()
        sb.step()
        assert sa.get_last_lr() == sb.get_last_lr()


def test_scheduler_bad_arguments():
    _, uopt = sched_pair()
    with pytest.raises(ValueError):
        US.LinearLR(uopt, start_factor=0.0)
    with pytest.raises(ValueError):
        US.OneCycleLR(uopt, max_lr=1.0)
    with pytest.raises(ValueError):
        US.ReduceLROnPlateau(uopt, factor=2.0)
    with pytest.raises(ValueError):
        US.SequentialLR(uopt, [US.StepLR(uopt, 2)], milestones=[3])
    with pytest.raises(ValueError, match=r"\[ConstantLR\] Constant multiplicative factor expected to be between 0 and 1"):
        US.ConstantLR(uopt, factor=1.5)
    for name in ("LambdaLR", "MultiplicativeLR"):
        with pytest.raises(ValueError, match=rf"\[{name}\] Expected 2 lr_lambdas, but got 1"):
            getattr(US, name)(uopt, [lambda e: 1.0])
    with pytest.raises(TypeError, match=r"\[MultiplicativeLR\] lr_lambda should be a function, but got float"):
        US.MultiplicativeLR(uopt, 0.5)
    plain = ug.optim.Adagrad([ug.zeros(2).requires_grad_()])
    with pytest.raises(ValueError):
        US.OneCycleLR(plain, max_lr=1.0, total_steps=10)


def test_apply_gradients_is_the_tensorflow_step():
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Linear(3, 4), ug.nn.Linear(4, 2))
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p, q in zip(model.parameters(), reference.parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    opt = ug.optim.Adam(model.parameters(), lr=0.1)
    ref_opt = torch.optim.Adam(reference[0].parameters(), lr=0.1)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    first = list(model[0].parameters())
    model[1].weight.grad = ug.ones(2, 4)  # a gradient apply_gradients must neither use nor lose
    for _ in range(3):
        with ug.GradientTape() as tape:
            loss = (model(ug.tensor(x)) ** 2).mean()
        grads = tape.gradient(loss, first)
        untouched = model[1].weight.numpy().copy()
        opt.apply_gradients(zip(grads, first))
        ref_opt.zero_grad()
        (reference(torch.from_numpy(x)) ** 2).mean().backward()
        ref_opt.step()
        for p, q in zip(first, reference[0].parameters()):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert np.array_equal(model[1].weight.numpy(), untouched)
        assert np.array_equal(model[1].weight.grad.numpy(), np.ones((2, 4), np.float32))
        assert first[0].grad is None
    with pytest.raises(ValueError, match="not one of its parameters"):
        opt.apply_gradients([(ug.zeros(2), ug.zeros(2))])
    with pytest.raises(ValueError, match="gradient of shape"):
        opt.apply_gradients([(ug.zeros(3), first[1])])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_rounds_each_operation_of_its_rule_on_every_instruction_set(dtype):
    """The update kernels are cloned per instruction set (AVX-512, AVX2, plain) and compiled
    without fusing multiplies into adds, so each clone gives the rule evaluated one rounded
    operation at a time, as NumPy does here, bit for bit (a length past every vector width and
    not a multiple of one, so the vector loops and their tails both run)."""
    n, lr, beta1, beta2, eps = 100003, 1e-2, 0.9, 0.999, 1e-8
    t = np.dtype(dtype).type
    rng = np.random.default_rng(0)
    p = rng.standard_normal(n).astype(dtype)
    opt = ug.optim.Adam([ug.zeros(1)], lr=lr)
    params = {"w": ug.tensor(p)}
    state = opt.init(params)
    m, v = np.zeros(n, dtype), np.zeros(n, dtype)
    for step in range(1, 4):
        g = rng.standard_normal(n).astype(dtype)
        updates, state = opt.update({"w": ug.tensor(g)}, state, params)
        params = ug.optim.apply_updates(params, updates)
        m = m + t(1 - beta1) * (g - m)  # torch's lerp for a weight under 0.5
        v = v * t(beta2) + (t(1 - beta2) * g) * g
        bc2_sqrt = math.sqrt(1 - beta2**step)  # torch's sqrt(v) / bc2_sqrt + eps, times bc2_sqrt
        new = p + (t(-(lr / (1 - beta1**step)) * bc2_sqrt) * m) / (np.sqrt(v) + t(eps * bc2_sqrt))
        p = p + (new - p)  # apply_updates(p, new - p), as the functional form writes it
        np.testing.assert_array_equal(params["w"].numpy(), p)
        np.testing.assert_array_equal(state["w"]["exp_avg_sq"].numpy(), v)


# ---- LBFGS -----------------------------------------------------------------------------------

def rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def lbfgs_pair(make_params, loss_fn, kwargs, steps):
    """torch's and our LBFGS from the same float64 starting point, `steps` step(closure) calls;
    returns both optimizers, parameter lists and the losses each step returned."""
    init = make_params()
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    up = [ug.tensor(a).requires_grad_() for a in init]
    topt, uopt = torch.optim.LBFGS(tp, **kwargs), ug.optim.LBFGS(up, **kwargs)

    def closure(opt, ps):
        def run():
            opt.zero_grad()
            loss = loss_fn(ps)
            loss.backward()
            return loss
        return run

    losses = [(float(topt.step(closure(topt, tp)).detach()), float(uopt.step(closure(uopt, up)))) for _ in range(steps)]
    return topt, uopt, tp, up, losses


def least_squares():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((20, 4)), rng.standard_normal((20, 2))
    return [rng.standard_normal((2, 4)), rng.standard_normal(2)], x, y


LBFGS_CASES = [
    dict(),
    dict(lr=0.5, max_iter=7, history_size=3),  # the history drops its oldest pairs
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", max_iter=12, max_eval=15, history_size=2),  # max_eval ends the search
    dict(lr=0.8, tolerance_change=1e-4, tolerance_grad=1e-3, line_search_fn="strong_wolfe"),  # tolerances stop it
]


@pytest.mark.parametrize("kwargs", LBFGS_CASES, ids=[str(k) for k in LBFGS_CASES])
@pytest.mark.parametrize("problem", ["rosenbrock", "least_squares"])
def test_lbfgs_matches_torch(kwargs, problem):
    # float64 throughout. Our reductions (dot products, norms) sum in another order than
    # torch's BLAS: each differs by a few ulps of its terms' magnitudes, and L-BFGS's
    # iterations carry that on (the line search's branch decisions are the same here), so the
    # comparison allows 1e-9 relative, ~1e7 ulps; the func_evals and n_iter counts are exact.
    if problem == "rosenbrock":
        def make():
            return [np.random.default_rng(0).standard_normal(6) * 0.5]

        def loss_fn(ps):
            return rosenbrock(ps[0])
    else:
        init, x, y = least_squares()

        def make():
            return init

        def loss_fn(ps):
            lib = torch if isinstance(ps[0], torch.Tensor) else ug
            pred = lib.tensor(x) @ ps[0].t() + ps[1]
            return ((pred - lib.tensor(y)) ** 2).mean()
    topt, uopt, tp, up, losses = lbfgs_pair(make, loss_fn, kwargs, steps=4)
    for t_loss, u_loss in losses:
        assert u_loss == pytest.approx(t_loss, rel=1e-9, abs=1e-12)
    for t, u in zip(tp, up):
        np.testing.assert_allclose(u.numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-11)
    ts, us = topt.state[tp[0]], uopt.state[up[0]]
    assert int(us["func_evals"]) == ts["func_evals"] and int(us["n_iter"]) == ts["n_iter"]
    np.testing.assert_allclose(us["d"].numpy(), ts["d"].numpy(), rtol=1e-7, atol=1e-11)
    assert us["old_dirs"].shape[0] == len(ts["old_dirs"])
    if ts["old_dirs"]:
        np.testing.assert_allclose(us["old_stps"].numpy(), torch.stack(ts["old_stps"]).numpy(), rtol=1e-7, atol=1e-11)
    assert uopt.param_groups[0]["line_search_fn"] == kwargs.get("line_search_fn")


def test_lbfgs_float32_follows_torch():
    # float32: torch rounds its scalars (dot products, step sizes) to float32 too; without the
    # line search those are the same operations, so the runs agree to float32 rounding carried
    # over 2 x 5 iterations of a well-conditioned least-squares problem.
    init, x, y = least_squares()
    init = [a.astype(np.float32) for a in init]

    def loss_fn(ps):
        lib = torch if isinstance(ps[0], torch.Tensor) else ug
        pred = lib.tensor(x.astype(np.float32)) @ ps[0].t() + ps[1]
        return ((pred - lib.tensor(y.astype(np.float32))) ** 2).mean()
    _, _, tp, up, _ = lbfgs_pair(lambda: init, loss_fn, dict(max_iter=5, lr=0.5), steps=2)
    for t, u in zip(tp, up):
        np.testing.assert_allclose(u.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_lbfgs_state_dict_round_trip():
    """Saved after 2 steps and loaded into a fresh LBFGS over copies of the parameters, the run
    goes on bit for bit as the uninterrupted one."""
    x0 = np.random.default_rng(3).standard_normal(5)
    kwargs = dict(max_iter=4, history_size=3, line_search_fn="strong_wolfe")

    def run(p, opt, n):
        def closure():
            opt.zero_grad()
            loss = rosenbrock(p)
            loss.backward()
            return loss
        for _ in range(n):
            opt.step(closure)

    ref = ug.tensor(x0).requires_grad_()
    ref_opt = ug.optim.LBFGS([ref], **kwargs)
    run(ref, ref_opt, 5)
    a = ug.tensor(x0).requires_grad_()
    a_opt = ug.optim.LBFGS([a], **kwargs)
    run(a, a_opt, 2)
    sd = a_opt.state_dict()
    assert sd["param_groups"][0]["line_search_fn"] == "strong_wolfe" and sd["state"][0]["old_dirs"].shape[1] == 5
    b = ug.tensor(a.numpy().copy()).requires_grad_()
    b_opt = ug.optim.LBFGS([b], **kwargs)
    b_opt.load_state_dict(sd)
    run(a, a_opt, 3)  # the original goes on: the loaded copy must not share its state
    run(b, b_opt, 3)
    assert np.array_equal(ref.numpy(), b.numpy()) and np.array_equal(ref.numpy(), a.numpy())
    assert int(b_opt.state[b]["n_iter"]) == int(ref_opt.state[ref]["n_iter"])


def test_lbfgs_bad_arguments_as_torch():
    p, q = ug.zeros(3).requires_grad_(), ug.zeros(2).requires_grad_()
    tq = [torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        torch.optim.LBFGS([{"params": tq[:1]}, {"params": tq[1:]}])
    with pytest.raises(ug.errors.ValueError, match=r"\[LBFGS\] doesn't support per-parameter options"):
        ug.optim.LBFGS([{"params": [p]}, {"params": [q]}])
    with pytest.raises(ug.errors.ValueError, match=r"\[LBFGS\] Invalid learning rate: -1"):
        ug.optim.LBFGS([p], lr=-1.0)
    opt = ug.optim.LBFGS([p], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match=r"only 'strong_wolfe' is supported"):
        opt.step(closure)
    with pytest.raises(TypeError):
        ug.optim.LBFGS([p]).step()  # the closure is required, as torch's
    with pytest.raises(ug.errors.ValueError, match=r"\[LBFGS\] step needs a closure"):
        ug.optim.LBFGS([p]).apply_gradients([(ug.ones(3), p)])
    with pytest.raises(RuntimeError, match=r"\[LBFGS\] has no per-parameter update"):
        ug.optim.LBFGS([p]).init([p])


def _bfloat16_round(a):
    return torch.tensor(a).to(torch.bfloat16).float()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,kwargs", [CASES[1], CASES[7], CASES[12], CASES[18], CASES[22], MORE_CASES[0],
                                         MORE_CASES[4], MORE_CASES[10], MORE_CASES[14], MORE_CASES[17]],
                         ids=lambda v: v if isinstance(v, str) else "-".join(v))
def test_16_bit_parameters_update_in_float32_and_round_once(name, kwargs, dtype):
    """Parameters in float16 or bfloat16 (torch's optimizers take them; ours refused them):
    the update runs in float32, the state kept in float32, the result rounded once into the
    parameter. The reference: torch's float32 optimizer on the same 16-bit values and
    gradients, its parameters rounded to the 16-bit dtype after each step. Its float32 kernel
    and ours may round the last float32 bit apart, which moves a rounded element by one ulp at
    most, and rarely."""
    tdtype = getattr(torch, dtype)
    init = [torch.tensor(a).to(tdtype).float() for a in arrays("float32", 0)]
    tp = [t.clone().requires_grad_() for t in init]
    up = [ug.tensor(t.numpy()).to(getattr(ug, dtype)).requires_grad_() for t in init]
    topt = getattr(torch.optim, name)(tp, foreach=False, **kwargs) if name != "Adafactor" else \
        torch.optim.Adafactor(tp, foreach=False, **kwargs)
    uopt = getattr(ug.optim, name)(up, **kwargs)
    for s in range(8):
        for t, u, g in zip(tp, up, arrays("float32", 100 + s)):
            g16 = torch.tensor(g).to(tdtype)
            t.grad, u.grad = g16.float(), ug.tensor(g16.float().numpy()).to(getattr(ug, dtype))
        topt.step()
        uopt.step()
        with torch.no_grad():
            for t in tp:
                t.copy_(t.to(tdtype).float())
    for t, u in zip(tp, up):
        assert u.dtype == getattr(ug, dtype) and u.grad.dtype == u.dtype
        ours, theirs = u.float().numpy(), t.detach().numpy()
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(theirs), 2.0 ** -14))) - (7 if dtype == "bfloat16" else 10))
        assert np.all(np.abs(ours - theirs) <= ulp), (name, dtype)
        assert np.mean(ours == theirs) >= 0.9, (name, dtype)
    state = next(iter(uopt.state_dict()["state"].values()))
    assert all(v.dtype in (ug.float32,) for k, v in state.items() if k != "step")
