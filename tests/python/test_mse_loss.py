"""F.mse_loss's mean and sum as one op (src/ug/ops/mse_loss.cpp): one pass over input and target
that makes neither their difference nor its square, its gradient written into one buffer.
Against torch 2.13 on random inputs in float32 and float64, the gradients of both arguments,
second derivatives against float64 central differences, the composed cases (broadcasting,
16-bit, vmap, forward mode), programs (jit, its ONNX file) and the memory it does not take.
The loss sums n squares of size ~|d|^2, so two correct orders differ by ~n eps sum(d^2)."""
import numpy as np
import pytest
import torch

import unigrad as ug

F = ug.nn.functional
EPS = {ug.float32: np.finfo(np.float32).eps, ug.float64: np.finfo(np.float64).eps}
NP = {ug.float32: np.float32, ug.float64: np.float64}


def pair(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(NP[dtype]), rng.standard_normal(shape).astype(NP[dtype])


@pytest.mark.parametrize("dtype", [ug.float32, ug.float64], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (32, 64, 128), (40001,)], ids=str)
def test_value_and_gradients_match_torch(dtype, reduction, shape):
    a, b = pair(shape, dtype)
    x, t = ug.tensor(a, requires_grad=True), ug.tensor(b, requires_grad=True)
    tx, tt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss, expected = F.mse_loss(x, t, reduction=reduction), torch.nn.functional.mse_loss(tx, tt, reduction=reduction)
    loss.backward()
    expected.backward()
    n = max(a.size, 1)
    squares = float(((a.astype(np.float64) - b) ** 2).sum()) / (n if reduction == "mean" else 1)
    assert loss.dtype == dtype and loss.shape == ()
    np.testing.assert_allclose(float(loss), float(expected.detach()), rtol=0, atol=4 * n * EPS[dtype] * squares + 1e-300)
    # Each gradient element is 2 (a - b) (/ n): a few roundings of its own size.
    for ours, theirs in ((x.grad, tx.grad), (t.grad, tt.grad)):
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=4 * EPS[dtype], atol=0)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_an_empty_input_gives_torchs_nan_mean_and_zero_sum(reduction):
    x, t = ug.zeros(0, 3), ug.zeros(0, 3)
    expected = torch.nn.functional.mse_loss(torch.zeros(0, 3), torch.zeros(0, 3), reduction=reduction)
    np.testing.assert_array_equal(np.asarray(F.mse_loss(x, t, reduction=reduction)), expected.numpy())


def test_only_the_arguments_that_require_grad_get_one():
    a, b = pair((4, 5), ug.float64)
    x, t = ug.tensor(a, requires_grad=True), ug.tensor(b)
    F.mse_loss(x, t).backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * (a - b) / a.size, rtol=4 * EPS[ug.float64])
    assert t.grad is None
    x, t = ug.tensor(a), ug.tensor(b, requires_grad=True)
    F.mse_loss(x, t, reduction="sum").backward()
    np.testing.assert_allclose(np.asarray(t.grad), -2 * (a - b), rtol=4 * EPS[ug.float64])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_second_derivatives_match_central_differences(reduction):
    a, b = pair((3, 4), ug.float64, seed=2)
    t = ug.tensor(b)

    def grad_dot(x, v):  # d/dx of <grad mse(x), v>: the Hessian (2/n I or 2 I) applied to v
        (g,) = ug.autograd.grad(F.mse_loss(x, t, reduction=reduction), [x], create_graph=True)
        return (g * v).sum()

    v = ug.tensor(np.random.default_rng(3).standard_normal((3, 4)))
    x = ug.tensor(a, requires_grad=True)
    (hv,) = ug.autograd.grad(grad_dot(x, v), [x])
    h = 1e-5
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += h
        down[i] -= h
        fd[i] = (float(grad_dot(ug.tensor(up, requires_grad=True), v)) -
                 float(grad_dot(ug.tensor(down, requires_grad=True), v))) / (2 * h)
    np.testing.assert_allclose(np.asarray(hv), fd, rtol=1e-7, atol=1e-9)


def test_the_composed_cases_match_torch():
    # Broadcasting (torch warns and broadcasts), a 16-bit input, vmap and forward mode compose
    # the loss from ops; each is torch's value.
    a, b = pair((4, 5), ug.float32)
    with pytest.warns(UserWarning):
        expected = torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b[:1]))
    np.testing.assert_allclose(float(F.mse_loss(ug.tensor(a), ug.tensor(b[:1]))), float(expected), rtol=1e-6)
    half = torch.nn.functional.mse_loss(torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16())
    ours = F.mse_loss(ug.tensor(a).to(ug.bfloat16), ug.tensor(b).to(ug.bfloat16))
    assert ours.dtype == ug.bfloat16
    np.testing.assert_allclose(float(ours), float(half), rtol=2**-7)
    per_row = ug.vmap(lambda x, t: F.mse_loss(x, t))(ug.tensor(a), ug.tensor(b))
    np.testing.assert_allclose(np.asarray(per_row), ((a - b) ** 2).mean(1), rtol=1e-6)
    x, t, v = ug.tensor(a), ug.tensor(b), ug.ones(4, 5)
    _, tangent = ug.jvp(lambda x: F.mse_loss(x, t, reduction="sum"), (x,), (v,))
    np.testing.assert_allclose(float(tangent), float((2 * (a - b)).sum()), rtol=1e-5)


def test_a_program_and_its_file_compute_the_same_loss(tmp_path):
    # A program holds the loss's ONNX form (Sub, Mul, ReduceMean), run fused: its sum's order
    # is the fused blocks', not the kernel's.
    a, b = pair((8, 16), ug.float32)
    x, t = ug.tensor(a), ug.tensor(b)

    def f(x, t):
        return F.mse_loss(x, t)

    tol = 4 * a.size * EPS[ug.float32] * float(f(x, t))
    jitted = ug.jit(f)
    np.testing.assert_allclose(float(jitted(x, t)), float(f(x, t)), rtol=0, atol=tol)
    assert "ReduceMean" in jitted.lower(x, t).node_types()
    vg = ug.jit(ug.value_and_grad(f))(x, t)
    eager = ug.value_and_grad(f)(x, t)
    np.testing.assert_allclose(np.asarray(vg[1]), np.asarray(eager[1]), rtol=4 * EPS[ug.float32])
    import onnxruntime as ort
    path = tmp_path / "mse.onnx"
    ug.jit.save(f, str(path), x, t)
    session = ort.InferenceSession(str(path))
    names = [i.name for i in session.get_inputs()]
    (out,) = session.run(None, dict(zip(names, (a, b))))
    np.testing.assert_allclose(out, float(f(x, t)), rtol=4 * a.size * EPS[ug.float32])


def test_the_loss_makes_no_buffer_of_its_inputs_size():
    n = 1 << 18
    x, t = ug.randn(n, requires_grad=True), ug.randn(n)
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    loss = F.mse_loss(x, t)
    assert ug.memory.max_allocated() - before < n  # a difference would be 4 n bytes
    ug.memory.reset_peak()
    before = ug.memory.allocated()
    loss.backward()
    # The gradient (4 n bytes) is the one buffer of the input's size the backward makes.
    assert ug.memory.max_allocated() - before < 1.5 * 4 * n
