"""The passes over a compiled program's graph (src/ug/compiler/simplify.cpp): constant folding,
common subexpressions, dead code; the graph before and after (node types and counts, what
Program.optimizer_stats says) and the values against eager unigrad. The passes change which
node computes a value, never how (a merged node is the same op on the same inputs, a folded
one ran the same op at compile time), so the values are compared bit for bit."""
import numpy as np
import pytest

import unigrad as ug


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_repeated_computation_is_computed_once():
    def f(x):
        return (x.exp() + 1) * (x.exp() + 1) - x.exp()

    x = ug.randn(4, 5)
    program = ug.jit(f).lower(x)
    types = program.node_types()
    assert types.count("Exp") == 1 and types.count("Add") == 1
    assert program.optimizer_stats()["merged"] == 3  # the second exp, its + 1, the third exp
    same(ug.jit(f)(x), f(x))


def test_merging_follows_the_inputs_and_attributes():
    def f(x):
        # Same op, other attributes or inputs: nothing to merge.
        return x.sum(0), x.sum(1), (x + 1).sum(0)

    x = ug.randn(3, 4)
    program = ug.jit(f).lower(x)
    assert program.node_types().count("ReduceSum") == 3 and program.optimizer_stats()["merged"] == 0
    for a, b in zip(ug.jit(f)(x), f(x)):
        same(a, b)


def test_attributes_are_compared_exactly():
    def f(x):  # epsilons that agree to six decimals
        ln = ug.nn.functional.layer_norm
        return ln(x, (5,), eps=1e-7) - ln(x, (5,), eps=3e-7)

    x = ug.randn(4, 5) * 1e-3  # a variance of 1e-6: the epsilons change the result
    program = ug.jit(f).lower(x)
    assert program.node_types().count("LayerNormalization") == 2
    out = ug.jit(f)(x)
    same(out, f(x))
    assert np.abs(np.asarray(out)).max() > 1e-3


def test_random_draws_are_never_merged():
    def f(x):
        return x + ug.rand(3), x + ug.rand(3)

    x = ug.zeros(3)
    ug.manual_seed(7)
    eager = f(x)
    jitted = ug.jit(f)
    ug.manual_seed(7)
    a, b = jitted(x)
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    same(a, eager[0])
    same(b, eager[1])
    assert jitted.lower(x).node_types().count("UgReplay") == 2


def test_keyed_draws_are_never_merged_either():
    # Equal keys give equal numbers, but a replayed op is never assumed pure.
    def f(key):
        return ug.random.normal(key, (3,)) + ug.random.normal(key, (3,))

    key = ug.random.key(0)
    program = ug.jit(f).lower(key)
    assert program.optimizer_stats()["merged"] == 0
    same(ug.jit(f)(key), f(key))


def test_a_checkpointed_region_is_recomputed_not_merged_with_its_first_run():
    """Merging the recomputation into the first run would keep the first run's values alive
    until backward, undoing the checkpoint: the recomputation reads the region's inputs
    through an optimization barrier (a replayed op, never merged)."""
    w = ug.randn(16, 16) / 4

    def block(h, w):
        return ug.tanh(h @ w) @ w

    def loss(w, x, remat):
        h = x
        for _ in range(3):
            h = ug.checkpoint(block)(h, w) if remat else block(h, w)
        return h.pow(2).mean()

    x = ug.randn(8, 16)
    with_remat = ug.jit(ug.grad(loss), static_argnums=2).lower(w, x, True)
    without = ug.jit(ug.grad(loss), static_argnums=2).lower(w, x, False)
    assert with_remat.node_types().count("Tanh") == 6  # three regions, each run twice
    assert without.node_types().count("Tanh") == 3
    # The program adds the two uses' contributions to w's gradient in another order than eager
    # autograd: each element sums about 2·8·16 products of values below 1 (float32).
    np.testing.assert_allclose(np.asarray(ug.jit(ug.grad(loss), static_argnums=2)(w, x, True)),
                               np.asarray(ug.grad(loss)(w, x, True)), rtol=0, atol=256 * 1.2e-7)


def test_constants_are_folded_at_compile_time():
    c = ug.arange(4.0)

    def f(x):
        return x * (c.exp() + 1)

    x = ug.randn(3, 4)
    program = ug.jit(f).lower(x)
    assert program.node_types() == ["Mul"]
    assert program.optimizer_stats()["folded"] == 2
    same(ug.jit(f)(x), f(x))


def test_parameters_and_large_constants_are_not_folded():
    layer = ug.nn.Linear(4, 4)
    big = ug.randn(100, 100)  # 10^4 elements: a program would hold their exp as a constant

    def f(x):
        return x @ (layer.weight.t() * 2) + big.exp()[:3, :4]

    x = ug.randn(3, 4)
    jitted = ug.jit(f)
    program = jitted.lower(x)
    assert program.optimizer_stats()["folded"] == 0 and "Exp" in program.node_types()
    same(jitted(x), f(x))
    with ug.no_grad():
        layer.weight.mul_(3)  # a parameter is read live at every run, never a constant
    same(jitted(x), f(x))


@pytest.mark.parametrize("remat", [False, True])
def test_training_step_values_equal_eager_after_the_passes(remat):
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Linear(6, 8), ug.nn.ReLU(), ug.nn.Linear(8, 3))  # its parameters' tree
    params = model.init(ug.random.key(0), ug.ones(1, 6))
    opt = ug.optim.Adam(model.parameters(), lr=1e-2)

    def hidden(w, b, x):
        return ug.relu(x @ w.t() + b)

    def loss_fn(p, x, y):
        h = (ug.checkpoint(hidden) if remat else hidden)(p["0.weight"], p["0.bias"], x)
        return ug.nn.functional.cross_entropy(h @ p["2.weight"].t() + p["2.bias"], y)

    def step(p, s, x, y):
        loss, g = ug.value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s, p)
        return ug.optim.apply_updates(p, u), s, loss

    # The program's graph sums in places in another order than eager autograd (the batch
    # mean of the loss, a bias's gradient): float32 roundings of sums of a few terms of order 1,
    # which three Adam steps of lr 1e-2 carry into the parameters at most lr-scaled.
    def close(a, b):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)

    x, y = ug.randn(5, 6), ug.randint(0, 3, (5,))
    pj, sj = params, opt.init(params)
    pe, se = params, opt.init(params)
    jitted = ug.jit(step)
    for _ in range(3):
        pj, sj, lj = jitted(pj, sj, x, y)
        pe, se, le = step(pe, se, x, y)
        close(lj, le)
    for k in pe:
        close(pj[k], pe[k])


# ---- elementwise results written into a dying operand (onnx::run_graph) -------------------


def test_an_elementwise_chain_reuses_one_buffer():
    x = ug.randn(1 << 20)

    def f(x):
        return ((x.exp() + 1) * 2 - 3) / 4

    jitted = ug.jit(f)
    jitted(x)
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    out = jitted(x)
    # exp's result is the only buffer made: + 1, * 2, - 3 and / 4 write into it in turn (two
    # buffers of x's size would be alive at once otherwise).
    assert ug.memory.max_allocated() - before < 1.5 * x.numel() * 4
    same(out, f(x))


def test_in_place_never_clobbers_a_value_still_read():
    def f(x, y):
        t = x.exp()
        view = t.reshape(-1)  # shares t's storage: t must not be overwritten while it is read
        a = t + y  # t is read again below
        b = t * 3
        c = (a - b) / y  # a and b die here
        return c, view * 2, t, x + 1  # t is also an output

    x, y = ug.randn(4, 5), ug.randn(5) + 3
    x_before = np.asarray(x).copy()
    for a, b in zip(ug.jit(f)(x, y), f(x, y)):
        same(a, b)
    same(x, x_before)  # an input is the caller's: never written


def test_in_place_is_off_while_autograd_records():
    def f(x):
        return (((x * 2).exp() + 1) * x).sum()

    x = ug.randn(3, 4)
    same(ug.grad(ug.jit(f))(x), ug.grad(f)(x))
    xr = ug.randn(3, 4, requires_grad=True)
    y = ug.jit(f)(xr)
    y.backward()
    same(xr.grad, ug.grad(f)(xr.detach()))


# ---- apply_updates folded into the optimizer's update (compiler/fuse.cpp) ------------------


def _functional_step(opt):
    def step(p, s, g):
        u, s = opt.update(g, s, p)
        return ug.optim.apply_updates(p, u), s

    return step


@pytest.mark.parametrize("make", [
    lambda ps: ug.optim.Adam(ps, lr=1e-2),
    lambda ps: ug.optim.Adam(ps, lr=1e-2, weight_decay=0.1, amsgrad=True),
    lambda ps: ug.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: ug.optim.SGD(ps, lr=1e-2, momentum=0.9),  # no kernel of its own: the generic form
], ids=["adam", "adam-amsgrad-wd", "adamw", "sgd-momentum"])
@pytest.mark.parametrize("dtype", [ug.float32, ug.float64])
@pytest.mark.parametrize("donate", [False, True])
def test_the_update_makes_the_new_parameter_bit_for_bit(make, dtype, donate):
    # Each parameter's p + u is made by its update's own pass, which computes p + (new - p):
    # the very roundings of the unfused subtraction and addition, so the results are equal
    # bit for bit to eager's over several steps (donated: the update writes the state in place).
    ug.manual_seed(0)
    params = {"w": ug.randn(33, 70, dtype=dtype), "b": ug.randn(70, dtype=dtype)}
    opt = make([ug.zeros(1)])
    step = _functional_step(opt)
    jitted = ug.jit(step, donate_argnums=(1,) if donate else ())
    grads = [{k: ug.randn(*v.shape, dtype=dtype) for k, v in params.items()} for _ in range(4)]
    assert jitted.lower(params, opt.init(params), grads[0]).optimizer_stats()["applied"] == 2
    pj, sj = params, opt.init(params)
    pe, se = params, opt.init(params)
    for g in grads:
        pj, sj = jitted(pj, sj, g)
        pe, se = step(pe, se, g)
        for k in params:
            same(pj[k], pe[k])
            for name in se[k]:
                same(sj[k][name], se[k][name])


def test_an_update_read_elsewhere_is_not_folded():
    # The update is also a result: the program must make it, and adds it to the parameter as
    # the trace did.
    opt = ug.optim.Adam([ug.zeros(1)], lr=1e-2)

    def step(p, s, g):
        u, s = opt.update(g, s, p)
        return ug.optim.apply_updates(p, u), u, s

    p, g = {"w": ug.randn(8, 9)}, {"w": ug.randn(8, 9)}
    jitted = ug.jit(step)
    assert jitted.lower(p, opt.init(p), g).optimizer_stats()["applied"] == 0
    for a, b in zip(ug.tree_leaves(jitted(p, opt.init(p), g)), ug.tree_leaves(step(p, opt.init(p), g))):
        same(a, b)


def test_an_update_added_to_another_tensor_is_not_folded():
    opt = ug.optim.Adam([ug.zeros(1)], lr=1e-2)

    def step(p, s, g, q):
        u, s = opt.update(g, s, p)
        return ug.optim.apply_updates(q, u), s

    p, g, q = {"w": ug.randn(8, 9)}, {"w": ug.randn(8, 9)}, {"w": ug.randn(8, 9)}
    jitted = ug.jit(step)
    assert jitted.lower(p, opt.init(p), g, q).optimizer_stats()["applied"] == 0
    for a, b in zip(ug.tree_leaves(jitted(p, opt.init(p), g, q)), ug.tree_leaves(step(p, opt.init(p), g, q))):
        same(a, b)
