"""cross_entropy over class indices on [N, C] logits is one op (cross_entropy: log_softmax and
nll_loss in one call) whose gradient is the op cross_entropy_backward (softmax minus the one-hot
targets, scaled: one kernel). Backward, grad and a compiled program run the same kernels, a
program holds one node each way instead of the composed loss's dozen and more, and the backward
op's own rule gives every higher derivative. Checked against torch 2.13 and float64 finite
differences; the first-order rows (every transform) are in op_table.py."""
import os
import tempfile

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_same, check_central_differences

TARGETS = np.array([0, 2, 4, 1, 2, 3])
CLASS_WEIGHTS = np.array([0.5, 1.5, 2.0, 0.25, 1.0])
CASES = {  # name -> cross_entropy's keywords ("weight": the class weights above)
    "mean": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weighted.ignore": {"weight": True, "ignore_index": 2},
    "weighted.none.ignore": {"weight": True, "reduction": "none", "ignore_index": 0},
}


def rand(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def loss(m, name, x, target=None):
    kw = dict(CASES[name])
    if kw.pop("weight", False):
        kw["weight"] = m.tensor(CLASS_WEIGHTS, dtype=x.dtype)
    target = m.tensor(TARGETS) if target is None else target
    return (torch.nn.functional if m is torch else ug.nn.functional).cross_entropy(x, target, **kw)


def logits(m, seed=0, requires_grad=True, dtype="float64"):
    return m.tensor(rand((6, 5), seed), dtype=getattr(m, dtype), requires_grad=requires_grad)


def second_order(m, name, x):
    """The gradients of <d<f, c>/dx, e> with respect to x and to c: double backward through the
    fused backward op."""
    y = loss(m, name, x)
    c = m.tensor(rand(tuple(y.shape), 7), requires_grad=True)
    (first,) = m.autograd.grad(y, [x], c, create_graph=True)
    total = (first * m.tensor(rand((6, 5), 8))).sum()
    return [g.detach() for g in m.autograd.grad(total, [x, c])], first.detach()


@pytest.mark.parametrize("name", list(CASES))
def test_double_backward_matches_torch(name):
    expected, e_first = second_order(torch, name, logits(torch))
    actual, a_first = second_order(ug, name, logits(ug))
    assert_same(e_first, a_first, path="first-order gradient")
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, path=f"second-order gradient {i}")


@pytest.mark.parametrize("name", list(CASES))
def test_double_backward_matches_finite_differences(name):
    """The gradient of h(x) = <d<f, c>/dx, e> by double backward against central differences
    of h, which runs only the first-order (fused) backward, in float64."""
    x = logits(ug)
    c = ug.tensor(rand(tuple(loss(ug, name, x).shape), 7))
    e = ug.tensor(rand((6, 5), 8))

    def h(t):
        (gx,) = ug.autograd.grad(loss(ug, name, t), [t], c, create_graph=True)
        return (gx * e).sum()
    (analytic,) = ug.autograd.grad(h(x), [x])
    check_central_differences(h, x, analytic, atol=1e-6)


def third_order(m, name, x):
    """The gradient of h(x) = <d|g1|^2/dx, e>, g1 = d<f, c>/dx."""
    def h(t):
        y = loss(m, name, t)
        (g1,) = m.autograd.grad((y * m.tensor(rand(tuple(y.shape), 7))).sum(), [t], create_graph=True)
        (g2,) = m.autograd.grad((g1 * g1).sum(), [t], create_graph=True)
        return (g2 * m.tensor(rand((6, 5), 9))).sum()
    (g3,) = m.autograd.grad(h(x), [x])
    return h, g3.detach()


@pytest.mark.parametrize("name", ["mean", "weighted.none.ignore"])
def test_third_derivative_matches_torch_and_finite_differences(name):
    _, expected = third_order(torch, name, logits(torch))
    x = logits(ug)
    h, actual = third_order(ug, name, x)
    assert_same(expected, actual, path="third derivative")
    check_central_differences(h, x, actual, atol=1e-5)


@pytest.mark.parametrize("name", ["mean", "none", "weighted.ignore"])
def test_jacobian_under_vmap_takes_the_formula(name):
    """jacrev maps the pullback over the cotangents: the backward op, called on batched
    gradients, takes its formula (and so does its own rule under jacfwd of that)."""
    x = logits(ug, requires_grad=False)
    expected = torch.autograd.functional.jacobian(lambda t: loss(torch, name, t), logits(torch, requires_grad=False))
    assert_same(expected, ug.jacrev(lambda t: loss(ug, name, t))(x), path="jacrev")
    expected = torch.autograd.functional.hessian(lambda t: loss(torch, "mean", t).sum(),
                                                 logits(torch, requires_grad=False))
    assert_same(expected, ug.hessian(lambda t: loss(ug, "mean", t))(x), path="hessian")


def grad_step(name):
    def scalar_loss(x):
        y = loss(ug, name, x)
        return (y * ug.tensor(rand(tuple(y.shape), 7), dtype=x.dtype)).sum()
    return ug.value_and_grad(scalar_loss)


@pytest.mark.parametrize("name", list(CASES))
def test_jit_runs_the_fused_ops(name):
    """jit(f) and jit(value_and_grad(f)) against eager, on inputs other than the trace's: in
    float32 bit for bit, since the program runs the same kernels (its SoftmaxCrossEntropyLoss
    node is the cross_entropy op; the backward op is called back), one node each way."""
    trace_x = logits(ug, requires_grad=False, dtype="float32")
    x = trace_x * 0.5 + 0.25
    forward = ug.jit(lambda t: loss(ug, name, t))
    forward(trace_x)
    np.testing.assert_array_equal(forward(x).numpy(), loss(ug, name, x).numpy())
    step = grad_step(name)
    compiled = ug.jit(step)
    compiled(trace_x)
    (e_value, e_grad), (a_value, a_grad) = step(x), compiled(x)
    np.testing.assert_array_equal(a_value.numpy(), e_value.numpy())
    np.testing.assert_array_equal(a_grad.numpy(), e_grad.numpy())
    types = compiled.lower(x).node_types()
    assert types.count("SoftmaxCrossEntropyLoss") == 1 and types.count("UgReplay") == 1, types
    assert "LogSoftmax" not in types and "Gather" not in types, types
    assert compiled.cache_info().traces == 1


@pytest.mark.parametrize("name", ["mean", "weighted.none.ignore"])
def test_vmap_and_jvp_of_a_compiled_gradient(name):
    """A program traced on plain tensors, run under vmap and jvp: its loss node and its
    called-back backward op take their formulas."""
    x = logits(ug, requires_grad=False)
    step = grad_step(name)
    compiled = ug.jit(step)
    compiled(x)
    batch = ug.stack([x, x * 0.5 + 0.25, -x])
    mapped = ug.vmap(compiled)(batch)
    for b in range(3):
        for j, (e, a) in enumerate(zip(step(batch[b]), mapped)):
            assert_same(e, a[b], path=f"vmap example {b}, output {j}")
    tangent = ug.tensor(rand((6, 5), 20))
    expected, actual = ug.jvp(step, (x,), (tangent,)), ug.jvp(compiled, (x,), (tangent,))
    for part, e_all, a_all in zip(("primal", "tangent"), expected, actual):
        for j, (e, a) in enumerate(zip(e_all, a_all)):
            assert_same(e, a, path=f"jvp {part} {j}")


@pytest.mark.parametrize("name", ["mean", "none", "weighted.ignore"])
def test_export_of_a_gradient_writes_the_formula(name):
    """A file has no callbacks: ug.onnx.export of a function returning the loss and its
    gradient writes SoftmaxCrossEntropyLoss and the backward op's formula, which ONNX Runtime
    runs to the eager values."""
    import onnxruntime as ort

    step = grad_step(name)

    class Grad(ug.nn.Module):
        def forward(self, x):
            with ug.enable_grad():
                return tuple(step(x))
    trace_x = logits(ug, requires_grad=False, dtype="float32")
    x = trace_x * 0.5 + 0.25
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grad.onnx")
        ug.onnx.export(Grad(), (trace_x,), path, input_names=["x"])
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})
        imported = ug.onnx.load(path)(x)
    for i, (g, e) in enumerate(zip(got, step(x))):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"output {i}")
    for i, (a, e) in enumerate(zip(imported, step(x))):
        assert_same(e, a, path=f"imported output {i}")


def test_a_loop_body_gets_the_formula():
    """A Loop's body cannot call back: there the backward op is written as its formula."""
    target = ug.tensor(TARGETS)

    def descend(x):
        def body(c):
            i, v = c
            return i + 1, v - 0.5 * ug.grad(lambda t: ug.nn.functional.cross_entropy(t, target))(v)
        return ug.while_loop(lambda c: c[0] < 3, body, (ug.tensor(0), x))[1]
    x = logits(ug, requires_grad=False, dtype="float32")
    compiled = ug.jit(descend)
    compiled(x)
    assert "Loop" in compiled.lower(x * 0.5).node_types()
    assert_same(descend(x * 0.5), compiled(x * 0.5), path="loop result")


def test_the_mlp_train_step_traces_one_node_each_way():
    """bench/py/mlp_jit_epoch.py's step (smaller): the loss is one node and its gradient one
    call back, and the compiled step equals the eager one bit for bit."""
    ug.manual_seed(0)
    nn = ug.nn
    model = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4))
    params = model.init(ug.random.key(0), ug.ones(1, 12))
    optimizer = ug.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(params, opt_state, xs, ys, idx):
        x, y = xs[idx], ys[idx]
        value, grads = ug.value_and_grad(lambda p: nn.functional.cross_entropy(model.apply(p, x), y))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates), opt_state, value

    xs, ys = ug.randn(32, 12), ug.randint(0, 4, (32,))
    compiled = ug.jit(train_step)
    eager_state = jit_state = (params, optimizer.init(params))
    for step in range(5):
        idx = ug.tensor(np.random.default_rng(step).permutation(32)[:16])
        *eager_state, e_loss = train_step(*eager_state, xs, ys, idx)
        *jit_state, a_loss = compiled(*jit_state, xs, ys, idx)
        np.testing.assert_array_equal(a_loss.numpy(), e_loss.numpy())
    for a, e in zip(ug.tree_leaves(jit_state), ug.tree_leaves(eager_state)):
        np.testing.assert_array_equal(a.numpy(), e.numpy())
    types = compiled.lower(*jit_state, xs, ys, idx).node_types()
    assert types.count("SoftmaxCrossEntropyLoss") == 1 and "LogSoftmax" not in types, types


def test_out_of_range_targets_raise():
    with pytest.raises(IndexError, match=r"Target 5 is out of bounds: class indices must be in \[0, 5\)"):
        ug.nn.functional.cross_entropy(ug.randn(2, 5), ug.tensor([1, 5]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        ug.jit(lambda x, t: ug.nn.functional.cross_entropy(x, t))(ug.randn(2, 5), ug.tensor([1, -1]))


def test_a_compiled_loss_can_still_be_saved():
    """The loss is SoftmaxCrossEntropyLoss in the program (no call back): jit.save writes it, and
    the file loaded back gives the eager loss bit for bit (the importer runs the same op)."""
    f = ug.jit(lambda x, t: loss(ug, "weighted.ignore", x, t))
    x, target = logits(ug, requires_grad=False, dtype="float32"), ug.tensor(TARGETS)
    f(x, target)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "loss.onnx")
        ug.jit.save(f, path, x, target)
        np.testing.assert_array_equal(ug.onnx.load(path)(x, target).numpy(), loss(ug, "weighted.ignore", x).numpy())
