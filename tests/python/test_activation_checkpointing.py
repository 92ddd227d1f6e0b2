"""Activation checkpointing (ug.utils.checkpoint, ug.checkpoint / ug.remat; ug/autograd/
checkpoint.h): the gradients equal those of the plain run, against torch.utils.checkpoint on
the same weights too; dropout inside a region gives the same gradients (the random state is
replayed); the policies decide what is recomputed; memory falls."""
import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import unigrad as ug
from unigrad.utils.checkpoint import checkpoint, checkpoint_sequential


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def blocks(n=3, dropout=0.0):
    ug.manual_seed(0)
    return [ug.nn.Sequential(ug.nn.Linear(16, 32), ug.nn.GELU(), ug.nn.Dropout(dropout), ug.nn.Linear(32, 16))
            for _ in range(n)]


def run(stack, x, checkpointed, seed=5):
    ug.manual_seed(seed)
    h = x
    for b in stack:
        h = checkpoint(b, h, use_reentrant=False) if checkpointed else b(h)
    loss = (h * h).sum()
    return loss, ug.autograd.grad(loss, [x] + [p for b in stack for p in b.parameters()])


@pytest.mark.parametrize("dropout", [0.0, 0.3], ids=["plain", "dropout"])
def test_gradients_equal_the_plain_run(dropout):
    stack = blocks(dropout=dropout)
    x = ug.randn(8, 16, requires_grad=True)
    loss0, grads0 = run(stack, x, False)
    loss1, grads1 = run(stack, x, True)
    close(loss1, loss0, 0)
    for a, b in zip(grads1, grads0):
        close(a, b, 0)  # the same ops on the same values (and the same dropout masks): bit for bit


def test_under_autocast_the_region_runs_again_in_bfloat16():
    """Backward runs after the autocast region was left; the recomputation enters the region
    the first run saw, so its products run in bfloat16 again and the gradients are the plain
    run's bit for bit (a recomputation in float32 gave other values and bfloat16 gradients
    read from float32 tensors)."""
    stack = blocks(dropout=0.3)
    x = ug.randn(8, 16, requires_grad=True)
    results = []
    for checkpointed in (False, True):
        ug.manual_seed(5)
        with ug.autocast("cpu"):
            h = x
            for b in stack:
                h = checkpoint(b, h, use_reentrant=False) if checkpointed else b(h)
            loss = (h.float() * h.float()).sum()
        results.append(ug.autograd.grad(loss, [x] + [p for b in stack for p in b.parameters()]))
    for a, b in zip(*results):
        close(a, b, 0)


def test_gradients_match_torch_utils_checkpoint():
    stack = blocks()
    x = ug.randn(8, 16, dtype=ug.float64)
    twins = []
    for b in stack:
        t = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16)).double()
        with torch.no_grad():
            for tp, up in zip(t.parameters(), b.parameters()):
                tp.copy_(torch.tensor(up.detach().numpy()))
        twins.append(t)
    for b in stack:
        b.to(ug.float64)
    xt = torch.tensor(x.numpy(), requires_grad=True)
    h = xt
    for t in twins:
        h = torch.utils.checkpoint.checkpoint(t, h, use_reentrant=False)
    (h * h).sum().backward()
    xu = x.requires_grad_(True)
    _, grads = run(stack, xu, True)
    close(grads[0], xt.grad, 1e-10)
    for g, p in zip(grads[1:], [p for t in twins for p in t.parameters()]):
        close(g, p.grad, 1e-10)


def test_backward_and_second_calls_of_a_module():
    # torch's habit: checkpoint(module, x) in forward, then loss.backward() into .grad.
    stack = blocks(2)
    x = ug.randn(4, 16)
    loss = sum((checkpoint(b, x) * 1.0).sum() for b in stack)
    loss.backward()
    plain = [p.grad.clone() for b in stack for p in b.parameters()]
    for b in stack:
        b.zero_grad()
    sum(b(x).sum() for b in stack).backward()
    for a, b in zip(plain, [p.grad for b in stack for p in b.parameters()]):
        close(a, b, 0)


def test_policies_decide_what_is_recomputed():
    calls = []

    def f(v):
        calls.append(1)
        return (v.sin() @ v.T).tanh().sum()

    v = ug.randn(4, 4)
    want = ug.grad(f)(v)
    for policy, runs in ((None, 2), (ug.checkpoint_policies.nothing_saveable, 2),
                         (ug.checkpoint_policies.everything_saveable, 1)):
        calls.clear()
        close(ug.grad(ug.checkpoint(f, policy=policy))(v), want, 0)
        assert len(calls) == runs, (policy, len(calls))
    # dots_saveable keeps matmul's saved tensors, so only the others are recomputed.
    calls.clear()
    close(ug.grad(ug.remat(f, policy=ug.checkpoint_policies.dots_saveable))(v), want, 0)
    assert len(calls) == 2


def test_checkpoint_sequential_equals_the_sequential():
    ug.manual_seed(0)
    seq = ug.nn.Sequential(*[ug.nn.Linear(8, 8) for _ in range(6)])
    x = ug.randn(3, 8, requires_grad=True)
    y = checkpoint_sequential(seq, 3, x)
    close(y.detach(), seq(x).detach(), 0)
    gx = ug.autograd.grad(y.sum(), [x])[0]
    close(gx, ug.autograd.grad(seq(x).sum(), [x])[0], 0)


@pytest.mark.parametrize("n, segments", [(5, 3), (6, 3), (7, 2), (4, 4)])
def test_checkpoint_sequential_splits_as_torchs(n, segments):
    """Which modules run again in backward (a checkpointed module's forward starts twice; torch's
    run again stops early, before its forward hooks): torch's
    split, segments - 1 runs of n // segments modules and the rest run plainly (before, 5
    modules in 3 segments checkpointed [0, 1] and [2, 3], torch [0] and [1])."""
    def counts(nn, seq, x, run):
        calls = [0] * n
        for i, m in enumerate(seq):
            m.register_forward_pre_hook(lambda *_, i=i: calls.__setitem__(i, calls[i] + 1))
        run(seq, segments, x).sum().backward()
        return calls

    theirs = counts(torch.nn, torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(n)]),
                    torch.randn(2, 4, requires_grad=True),
                    lambda seq, k, x: torch.utils.checkpoint.checkpoint_sequential(seq, k, x, use_reentrant=False))
    ours = counts(ug.nn, ug.nn.Sequential(*[ug.nn.Linear(4, 4) for _ in range(n)]), ug.randn(2, 4, requires_grad=True),
                  checkpoint_sequential)
    assert ours == theirs


def test_under_jit_a_region_run_again_reads_its_first_draws():
    """jit(grad(remat(f))) with dropout in f: the program's run again of the region drew new
    masks (the generator had moved on), and the gradient was another function's."""
    ug.manual_seed(0)
    w, x = ug.randn(16, 16), ug.randn(8, 16)

    def f(w):
        return (ug.nn.functional.dropout(x @ w, 0.5, training=True).tanh() ** 2 + ug.randn(8, 16) * w[0]).sum()

    ug.manual_seed(3)
    expected = ug.grad(f)(w)
    after = ug.randn(2)
    for region in (ug.remat(f), lambda w: checkpoint(f, w, use_reentrant=False)):
        compiled = ug.jit(ug.grad(region))
        for _ in range(2):  # the trace's run, then the program's
            ug.manual_seed(3)
            close(compiled(w), expected, 1e-5)
            close(ug.randn(2), after, 0)  # the generator advanced by the first run's draws only


def test_memory_falls_to_the_regions_inputs():
    ug.manual_seed(0)
    # Activations (1024 rows of 256 per hidden layer) outweigh the parameters and their gradients.
    stack = [ug.nn.Sequential(ug.nn.Linear(64, 256), ug.nn.GELU(), ug.nn.Linear(256, 64)) for _ in range(6)]
    x = ug.randn(1024, 64)

    def peak(checkpointed):
        ug.memory.reset_peak()
        live = ug.memory.allocated()
        h = x
        for b in stack:
            h = checkpoint(b, h) if checkpointed else b(h)
        h.sum().backward()
        for b in stack:
            b.zero_grad()
        return ug.memory.max_allocated() - live

    plain, checkpointed = peak(False), peak(True)
    assert checkpointed < 0.5 * plain, (checkpointed, plain)


def test_a_region_that_computes_differently_the_second_time_says_so():
    state = {"n": 0}

    def f(v):
        state["n"] += 1
        return v.exp().sin() if state["n"] == 1 else v.exp()  # another graph when run again

    v = ug.randn(3, requires_grad=True)
    y = checkpoint(f, v).sum()
    with pytest.raises(RuntimeError, match="must compute the same way each time"):
        y.backward()


def test_a_region_inside_forward_mode_runs_plainly_and_every_order_is_right():
    """Inside a jvp's level a region runs as it is (its run again would lack the tangents of what
    it saved): reverse over forward (before: NotImplementedError) and forward over reverse
    (hessian; before: silently wrong) equal the plain function's."""
    x, v = ug.randn(3, dtype=ug.float64), ug.randn(3, dtype=ug.float64)
    plain = lambda y: (y.sin() * y).sum()  # noqa: E731
    f = lambda y: checkpoint(lambda z: z.sin() * z, y).sum()  # noqa: E731
    _, tangent = ug.jvp(f, (x,), (v,))
    assert np.allclose(tangent.numpy(), ((x.cos() * x + x.sin()) * v).sum().numpy(), rtol=1e-14)
    reverse_over_forward = ug.grad(lambda x: ug.jvp(f, (x,), (v,))[1])(x)
    close(reverse_over_forward, ug.grad(lambda x: ug.jvp(plain, (x,), (v,))[1])(x), 1e-14)
    close(ug.hessian(f)(x), ug.hessian(plain)(x), 1e-14)


def test_under_jit_the_program_recomputes_the_region():
    ug.manual_seed(0)
    w1, w2 = ug.randn(16, 64) * 0.2, ug.randn(64, 16) * 0.2

    def block(x, w1, w2):
        return ug.nn.functional.gelu(x @ w1) @ w2

    def loss(ws, x):
        h = x
        for _ in range(3):
            h = ug.checkpoint(block)(h, *ws)
        return h.pow(2).mean()

    f = ug.jit(ug.grad(loss))
    f((w1, w2), ug.randn(8, 16))
    x = ug.randn(8, 16)
    for a, b in zip(f((w1, w2), x), ug.grad(loss)((w1, w2), x)):
        close(a, b, 1e-5)
    # The program recomputes each block (its GELU once more per block): the recomputation
    # reads its inputs through an optimization barrier, so the program's common-subexpression
    # pass cannot turn it back into a read of the first run's values.
    def plain(ws, x):
        h = x
        for _ in range(3):
            h = block(h, *ws)
        return h.pow(2).mean()

    program, plain_program = f.lower((w1, w2), x), ug.jit(ug.grad(plain)).lower((w1, w2), x)
    types, plain_types = program.node_types(), plain_program.node_types()

    def traced_gelus(program, types):  # not counting the copies for late readers (compiler/remat.h)
        return types.count("Gelu") - program.optimizer_stats()["recomputed"]
    assert traced_gelus(program, types) == traced_gelus(plain_program, plain_types) + 3
    # the barriers (the fused backward kernels, called back in both programs, are replays too)
    assert types.count("UgReplay") == plain_types.count("UgReplay") + 3


def test_nested_regions():
    ug.manual_seed(0)
    a, b = ug.nn.Linear(8, 8), ug.nn.Linear(8, 8)
    x = ug.randn(4, 8, requires_grad=True)

    def outer(h):
        return checkpoint(lambda v: ug.tanh(b(v)), ug.nn.functional.gelu(a(h))) * 2

    params = [x, *a.parameters(), *b.parameters()]
    nested = ug.autograd.grad(checkpoint(outer, x).pow(2).sum(), params)
    plain = ug.autograd.grad(outer(x).pow(2).sum(), params)
    for u, v in zip(nested, plain):
        close(u, v, 0)


def test_an_input_changed_in_place_raises_as_torchs():
    """Before: the region ran again on the changed input, and the gradients were silently those
    of other values. torch raises in both cases."""
    def torch_fails(fn, change):
        x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        z = x * 1
        y = torch.utils.checkpoint.checkpoint(fn(torch), z, use_reentrant=False)
        change(z, torch)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    in_region = (lambda m: lambda a: a.mul_(2).exp(), lambda z, m: None)
    after = (lambda m: m.sin, _no_grad_add)
    for fn, change in (in_region, after):
        torch_fails(fn, change)
        x = ug.tensor([1.0, 2.0, 3.0], dtype=ug.float64, requires_grad=True)
        z = x * 1
        y = checkpoint(fn(ug), z, use_reentrant=False)
        change(z, ug)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation: input 0 of a checkpointed region "
                                               r"\(float64 \[3\]\)"):
            y.sum().backward()
    z = ug.tensor([1.0, 2.0], requires_grad=True) * 1
    y = ug.remat(ug.sin)(z)
    with ug.no_grad():
        z.mul_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def _no_grad_add(z, m):
    with m.no_grad():
        z.add_(1.0)


def test_second_derivatives_through_a_region_match_torch():
    """Before: a gradient taken with create_graph through a region could not be differentiated
    again ("a recomputed tensor was unpacked")."""
    x0 = np.random.default_rng(0).standard_normal((3, 4))

    def f(m):
        return lambda a: m.tanh(a).pow(3).sum()

    xt = torch.tensor(x0, requires_grad=True)
    gt, = torch.autograd.grad(torch.utils.checkpoint.checkpoint(f(torch), xt, use_reentrant=False), xt,
                              create_graph=True)
    ht, = torch.autograd.grad((gt * gt).sum(), xt)
    for checkpointed in (lambda a: checkpoint(f(ug), a, use_reentrant=False), ug.remat(f(ug))):
        x = ug.tensor(x0, requires_grad=True)
        g, = ug.autograd.grad(checkpointed(x), x, create_graph=True)
        h, = ug.autograd.grad((g * g).sum(), x)
        close(g.detach(), gt.detach(), 1e-12)
        close(h, ht, 1e-12)
    hess = ug.hessian(ug.remat(f(ug)))(ug.tensor(x0))
    plain = ug.hessian(f(ug))(ug.tensor(x0))
    close(hess, plain, 1e-12)
