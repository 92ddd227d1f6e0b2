"""softmax's, log_softmax's and layer_norm's fused backward kernels are ops of their own
(softmax_backward, log_softmax_backward, layer_norm_backward): backward, grad and a compiled
program run the same kernel, a program's trace holds one node per backward kernel, and their
own rules give every higher derivative. Checked against torch 2.13 and float64 finite
differences; the first-order rows are in op_table.py."""
import os
import tempfile

import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_same, check_central_differences



def rand(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def layer_norm(m, x, w, b):
    F = torch.nn.functional if m is torch else ug.nn.functional
    return F.layer_norm(x, (x.shape[-1],), w, b)


CASES = {  # name -> (fn(m, x, *params), params' shapes); x is (2, 3, 5)
    "softmax": (lambda m, x: x.softmax(-1), ()),
    "gelu": (lambda m, x: (torch.nn.functional if m is torch else ug.nn.functional).gelu(x), ()),
    "log_softmax": (lambda m, x: x.log_softmax(-1), ()),
    "layer_norm": (layer_norm, ((5,), (5,))),
    "layer_norm.no_affine": (lambda m, x: layer_norm(m, x, None, None), ()),
    "layer_norm.weight_only": (lambda m, x, w: layer_norm(m, x, w, None), ((5,),)),
    "group_norm": (lambda m, x, w, b: (torch.nn.functional if m is torch else ug.nn.functional).group_norm(
        x.reshape(2, 3, 5, 1), 3, w, b), ((3,), (3,))),
}


def inputs(m, name, requires_grad=True):
    _, shapes = CASES[name]
    arrays = [rand((2, 3, 5), 0)] + [rand(s, 1 + i) for i, s in enumerate(shapes)]
    return [m.tensor(a, requires_grad=requires_grad) for a in arrays]


def second_order(m, name, ins):
    """The gradients of <d<f, c>/d(ins), e> (c, e fixed) with respect to the inputs and to c:
    double backward through the fused backward op."""
    fn, _ = CASES[name]
    y = fn(m, *ins)
    c = m.tensor(rand(tuple(y.shape), 7), requires_grad=True)
    first = m.autograd.grad(y, ins, c, create_graph=True)
    e = [m.tensor(rand(tuple(t.shape), 8 + i)) for i, t in enumerate(ins)]
    total = sum((g * ei).sum() for g, ei in zip(first, e))
    wrt = [*ins, c]
    grads = m.autograd.grad(total, wrt, allow_unused=True)  # a bias's gradient does not depend on it
    return [m.zeros_like(w).detach() if g is None else g.detach() for g, w in zip(grads, wrt)], first


@pytest.mark.parametrize("name", list(CASES))
def test_double_backward_matches_torch(name):
    expected, e_first = second_order(torch, name, inputs(torch, name))
    actual, a_first = second_order(ug, name, inputs(ug, name))
    for i, (e, a) in enumerate(zip(e_first, a_first)):
        assert_same(e.detach(), a.detach(), path=f"first-order gradient {i}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, path=f"second-order gradient {i}")


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "group_norm"])
def test_double_backward_matches_finite_differences(name):
    """The gradient of h(x) = <d<f, c>/dx, e> by double backward against central differences
    of h, which runs only the first-order (fused) backward, in float64."""
    fn, _ = CASES[name]
    ins = inputs(ug, name)
    c = ug.tensor(rand(tuple(fn(ug, *ins).shape), 7))
    e = ug.tensor(rand((2, 3, 5), 8))

    def h(x):
        (gx,) = ug.autograd.grad(fn(ug, x, *ins[1:]), [x], c, create_graph=True)
        return (gx * e).sum()

    x = ins[0]
    (analytic,) = ug.autograd.grad(h(x), [x])
    check_central_differences(h, x, analytic, atol=1e-6, every=4)


def third_order(m, name, x, params):
    """<d/dx <d/dx |d<f, c>/dx|^2 ... >: the gradient of h(x) = <d|g1|^2/dx, e>, g1 = d<f, c>/dx."""
    fn, _ = CASES[name]

    def h(t):
        (g1,) = m.autograd.grad((fn(m, t, *params) * m.tensor(rand((2, 3, 5), 7))).sum(), [t], create_graph=True)
        (g2,) = m.autograd.grad((g1 * g1).sum(), [t], create_graph=True)
        return (g2 * m.tensor(rand((2, 3, 5), 9))).sum()
    (g3,) = m.autograd.grad(h(x), [x])
    return h, g3.detach()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_third_derivative_matches_torch(name):
    x, *params = inputs(torch, name)
    _, expected = third_order(torch, name, x, params)
    x, *params = inputs(ug, name)
    _, actual = third_order(ug, name, x, params)
    assert_same(expected, actual, path="third derivative")


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm"])
def test_third_derivative_matches_finite_differences(name):
    """Against central differences of the second-order function. For layer_norm, torch 2.13's
    third derivative on the CPU differs from the differences of its own second derivative
    (-2.81 against -2.23 at element 0 here): its double-backward formula is not differentiated
    through the saved statistics, so torch is no reference at this order."""
    x, *params = inputs(ug, name)
    h, analytic = third_order(ug, name, x, params)
    check_central_differences(h, x, analytic, atol=1e-5, every=4)


def grad_step(name):
    fn, _ = CASES[name]

    def loss(x, *params):
        return (fn(ug, x, *params) * ug.tensor(rand((2, 3, 5), 7), dtype=x.dtype)).sum()
    return ug.grad(loss, argnums=tuple(range(1 + len(CASES[name][1]))))


BACKWARD_OP = {"softmax": "softmax_backward", "gelu": "gelu_backward", "log_softmax": "log_softmax_backward",
               "layer_norm": "layer_norm_backward", "layer_norm.no_affine": "layer_norm_backward"}


@pytest.mark.parametrize("name", list(BACKWARD_OP))
def test_jit_runs_the_fused_kernels(name):
    """jit(f) and jit(grad(f)) against eager, on inputs other than the trace's. In float32 the
    program's gradient is bit for bit the eager one: the same kernels run; the program holds one
    node for the backward kernel, which it calls back."""
    fn, _ = CASES[name]
    trace_ins = [t.detach().float() for t in inputs(ug, name, requires_grad=False)]
    ins = [t * 0.5 + 0.25 for t in trace_ins]
    forward = ug.jit(lambda *a: fn(ug, *a))
    forward(*trace_ins)
    np.testing.assert_array_equal(forward(*ins).numpy(), fn(ug, *ins).numpy())
    step = grad_step(name)
    compiled = ug.jit(step)
    compiled(*trace_ins)
    for e, a in zip(step(*ins), compiled(*ins)):
        np.testing.assert_array_equal(a.numpy(), e.numpy())
    types = compiled.lower(*ins).node_types()
    assert types.count("UgReplay") == 1, types
    assert compiled.cache_info().traces == 1


def test_transformer_block_step_traces_one_node_per_backward_kernel():
    """The benchmark's block (bench/py/transformer_jit_step.py, smaller): one gelu_backward, two
    layer_norm_backward and the attention's fused kernel each way (its softmax inside) calls back, and the compiled
    gradients equal the eager ones (to float32 rounding: the program's other reductions may add in another order)."""
    ug.manual_seed(0)
    block = ug.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
    x, target = ug.randn(2, 5, 16), ug.randn(2, 5, 16)
    params = block.init(ug.random.key(0), x)

    def loss_fn(params, x, target):
        return ug.nn.functional.mse_loss(block.apply(params, x), target)
    step = ug.value_and_grad(loss_fn)
    compiled = ug.jit(step)
    compiled(params, x, target)
    x2 = ug.randn(2, 5, 16)
    (e_loss, e_grads), (a_loss, a_grads) = step(params, x2, target), compiled(params, x2, target)
    assert_same(e_loss, a_loss, path="loss")
    for k in e_grads:
        assert_same(e_grads[k], a_grads[k], path=k)
    types = compiled.lower(params, x, target).node_types()
    assert types.count("UgReplay") == 5 and "Softmax" not in types, types
    # no backward formula: gelu's Erf, layer_norm's means (the one left is the loss's)
    assert "Erf" not in types and types.count("ReduceMean") == 1, types


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "layer_norm.no_affine",
                                  "layer_norm.weight_only"])
def test_export_of_a_gradient_writes_the_formula(name):
    """A file has no callbacks: ug.onnx.export of a function returning gradients writes each
    backward op's formula, which ONNX Runtime runs to the eager gradients."""
    import onnxruntime as ort

    fn, _ = CASES[name]
    step = grad_step(name)

    class Grad(ug.nn.Module):
        def forward(self, *xs):
            with ug.enable_grad():
                return tuple(step(*xs))
    trace_ins = [t.detach().float() for t in inputs(ug, name, requires_grad=False)]
    ins = [t * 0.5 + 0.25 for t in trace_ins]
    names = [f"x{i}" for i in range(len(ins))]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grad.onnx")
        ug.onnx.export(Grad(), tuple(trace_ins), path, input_names=names)
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
            None, {n: t.numpy() for n, t in zip(names, ins)})
    for i, (g, e) in enumerate(zip(got, step(*ins))):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"gradient {i}")


def test_a_loop_body_gets_the_formulas():
    """A Loop's body cannot call back: there the backward ops are written as their formulas."""
    w = ug.tensor(rand((2, 5), 3), dtype=ug.float32)

    def loss(t):
        return (ug.nn.functional.layer_norm(ug.nn.functional.gelu(t), (5,)).softmax(-1) * w).sum()

    def descend(x):
        def body(c):
            i, v = c
            return i + 1, v - 0.1 * ug.grad(loss)(v)
        return ug.while_loop(lambda c: c[0] < 3, body, (ug.tensor(0), x))[1]
    x = ug.tensor(rand((2, 5), 4), dtype=ug.float32)
    compiled = ug.jit(descend)
    compiled(x)
    assert "Loop" in compiled.lower(x * 0.5).node_types()
    assert_same(descend(x * 0.5), compiled(x * 0.5), path="loop result")


@pytest.mark.parametrize("name", list(BACKWARD_OP))
def test_vmap_and_jvp_of_a_compiled_gradient(name):
    """vmap and jvp of a compiled gradient, reusing the program traced on plain tensors."""
    ins = [t.detach() for t in inputs(ug, name, requires_grad=False)]
    step = grad_step(name)
    compiled = ug.jit(step)
    compiled(*ins)  # traced on plain tensors: the runs below reuse the program where they can
    batch = ug.stack([ins[0], ins[0] * 0.5 + 0.25, -ins[0]])
    mapped = ug.vmap(lambda x: compiled(x, *ins[1:]))(batch)
    for b in range(3):
        for j, (e, a) in enumerate(zip(step(batch[b], *ins[1:]), mapped)):
            assert_same(e, a[b], path=f"vmap example {b}, gradient {j}")
    tangents = tuple(ug.tensor(rand(tuple(t.shape), 20 + i)) for i, t in enumerate(ins))
    expected = ug.jvp(step, tuple(ins), tangents)
    actual = ug.jvp(compiled, tuple(ins), tangents)
    for part, e_all, a_all in zip(("primal", "tangent"), expected, actual):
        for j, (e, a) in enumerate(zip(e_all, a_all)):
            assert_same(e, a, path=f"jvp {part} {j}")
