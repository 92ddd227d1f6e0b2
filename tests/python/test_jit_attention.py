"""scaled_dot_product_attention under ug.jit: a program whose backward reads the attention runs
the fused kernels eager code runs (the op and attention_backward, called back: one node each
way), so its values and gradients are the eager ones; a program without the backward, and an
ONNX file, take the composition (matmul, softmax), which ONNX Runtime runs to the same values.
Tolerances come from the sums the kernels and the composition make (n eps times the terms'
magnitudes)."""
import os
import tempfile

import numpy as np
import pytest

import unigrad as ug

F = ug.nn.functional


def rand(shape, seed, dtype):
    return ug.tensor(np.random.default_rng(seed).uniform(-2, 2, shape), dtype=dtype)


def masks(kind, b, h, l, s, dtype):
    """(attn_mask, is_causal) of each kind; a bool mask has a row that attends nothing."""
    rng = np.random.default_rng(7)
    if kind == "none":
        return None, False
    if kind == "causal":
        return None, True
    if kind == "bool":
        keep = rng.random((b, 1, l, s)) > 0.3
        keep[:, :, 1, :] = False
        return ug.tensor(keep), False
    add = rng.uniform(-2, 2, (h, l, s))
    add[rng.random((h, l, s)) > 0.8] = -np.inf
    return ug.tensor(add, dtype=dtype), False


def magnitudes(q, k, v, g, mask, causal, scale, group):
    """Per output element, the sum of |terms| of out, dq, dk and dv as the kernels sum them (in
    float64, with the probabilities p): out = sum_j p v, dp = g v^T, D = sum(g out),
    ds = p (dp - D), dq = scale ds k, dk = scale ds^T q, dv = p^T g."""
    q, k, v, g = (np.asarray(t, dtype=np.float64) for t in (q, k, v, g))
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = scale * q @ k.swapaxes(-1, -2)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    elif mask is not None:
        m = np.asarray(mask)
        s = np.where(m, s, -np.inf) if m.dtype == bool else s + m
    top = s.max(-1, keepdims=True)
    e = np.where(np.isfinite(top), np.exp(s - np.where(np.isfinite(top), top, 0)), 0)
    p = e / np.maximum(e.sum(-1, keepdims=True), np.finfo(np.float64).tiny)
    out = np.abs(p) @ np.abs(v)
    dp = np.abs(g) @ np.abs(v).swapaxes(-1, -2)
    ds = p * (dp + (np.abs(g) * out).sum(-1, keepdims=True))

    def fold(d):
        return d.reshape(d.shape[0], -1, group, *d.shape[2:]).sum(2)
    return (out, scale * ds @ np.abs(k), fold(scale * ds.swapaxes(-1, -2) @ np.abs(q)),
            fold(p.swapaxes(-1, -2) @ np.abs(g)))


def assert_close(got, want, mag, n, dtype, what):
    eps = np.finfo(np.float32 if dtype == ug.float32 else np.float64).eps
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    bound = 4 * n * eps * mag + np.finfo(np.float64).tiny
    worst = np.max(np.abs(got - want) / bound)
    assert worst <= 1, f"{what}: off by {worst:.2f} of the bound"


def attention_case(kind, dtype, gqa=False):
    b, h, l, s, e, ev = 2, 4, 6, 9, 8, 5
    hk = 2 if gqa else h
    if kind == "causal":
        s = l
    q, k, v = rand((b, h, l, e), 0, dtype), rand((b, hk, s, e), 1, dtype), rand((b, hk, s, ev), 2, dtype)
    g = rand((b, h, l, ev), 3, dtype)
    mask, causal = masks(kind, b, h, l, s, dtype)

    def loss(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=causal,
                                               enable_gqa=gqa) * g).sum()
    return (q, k, v, g, mask, causal, h // hk, e), loss


@pytest.mark.parametrize("dtype", [ug.float32, ug.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kind,gqa", [("none", False), ("bool", False), ("additive", False), ("causal", False),
                                      ("none", True), ("causal", True)],
                         ids=["no mask", "bool mask", "additive mask", "causal", "gqa", "gqa causal"])
def test_jitted_attention_equals_eager_in_value_and_gradient(kind, gqa, dtype):
    (q, k, v, g, mask, causal, group, e), loss = attention_case(kind, dtype, gqa)
    step = ug.value_and_grad(loss, argnums=(0, 1, 2))
    jitted = ug.jit(step)
    (value, grads), (e_value, e_grads) = jitted(q, k, v), step(q, k, v)
    types = jitted.lower(q, k, v).node_types()
    # The fused op each way, called back: no softmax, no product of scores.
    assert types.count("UgReplay") == 2 and "Softmax" not in types and "MatMul" not in types, types
    out_mag, *grad_mags = magnitudes(q, k, v, g, mask, causal, 1 / np.sqrt(e), group)
    s = k.shape[2]
    # The loss sums out * g over every element: each out element's S-term sum, then the total.
    total = (out_mag * np.abs(np.asarray(g, dtype=np.float64))).sum()
    assert_close(value, e_value, total, s + g.numel(), dtype, "value")
    for got, want, mag, name in zip(grads, e_grads, grad_mags, ("dq", "dk", "dv")):
        # dq: S terms over dp's Ev-term sums; dk and dv: the group's L query rows each.
        n = s + e + v.shape[-1] if name == "dq" else group * q.shape[2] + e + v.shape[-1]
        assert_close(got, want, mag, n, dtype, name)


def test_a_program_without_the_backward_takes_the_composition_and_saves(tmp_path):
    """Inference: nothing reads the log-sum-exp, so the program is the composition, a plain ONNX
    graph that jit.save writes and ONNX Runtime runs."""
    ort = pytest.importorskip("onnxruntime")
    (q, k, v, g, mask, causal, group, e), _ = attention_case("additive", ug.float32)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    jitted = ug.jit(f)
    types = jitted.lower(q, k, v).node_types()
    assert "UgReplay" not in types and "Softmax" in types, types
    out_mag = magnitudes(q, k, v, g, mask, False, 1 / np.sqrt(e), group)[0]
    want = f(q, k, v)
    assert_close(jitted(q, k, v), want, out_mag, k.shape[2] + e, ug.float32, "jit")
    path = str(tmp_path / "attention.onnx")
    ug.jit.save(jitted, path, q, k, v)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), (q, k, v))})
    assert_close(got, want, out_mag, k.shape[2] + e, ug.float32, "onnxruntime")


@pytest.mark.parametrize("kind,gqa", [("bool", False), ("additive", False), ("causal", True)],
                         ids=["bool mask", "additive mask", "gqa causal"])
def test_onnx_export_writes_the_composition_and_the_gradient_formula(kind, gqa):
    """A file has no callbacks: ug.onnx.export of the attention and of its gradient writes their
    formulas, which ONNX Runtime runs to the eager values and gradients."""
    ort = pytest.importorskip("onnxruntime")
    (q, k, v, g, mask, causal, group, e), loss = attention_case(kind, ug.float32, gqa)
    step = ug.grad(loss, argnums=(0, 1, 2))

    class Both(ug.nn.Module):
        def forward(self, q, k, v):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=gqa)
            with ug.enable_grad():
                return (out, *step(q, k, v))
    names = ["q", "k", "v"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "attention.onnx")
        ug.onnx.export(Both(), (q, k, v), path, input_names=names)
        ins = [t * 0.5 + 0.25 for t in (q, k, v)]  # other values than the trace's
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
            None, {n: t.numpy() for n, t in zip(names, ins)})
    with ug.no_grad():
        want = [F.scaled_dot_product_attention(*ins, attn_mask=mask, is_causal=causal, enable_gqa=gqa)]
    want += list(step(*ins))
    mags = magnitudes(*ins, g, mask, causal, 1 / np.sqrt(e), group)
    s, ev, l = k.shape[2], v.shape[-1], q.shape[2]
    ns = (s + e, s + e + ev, group * l + e + ev, group * l + e + ev)
    for got_i, want_i, mag, n, name in zip(got, want, mags, ns, ("out", "dq", "dk", "dv")):
        assert_close(got_i, want_i, mag, n, ug.float32, name)


def same(got, want):
    """Bit for bit: the program runs the ops eager code runs, in the same order."""
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_grad_of_grad_under_jit_takes_the_formula():
    """A graph of the gradient (a second derivative inside the program) takes the formula written
    with ops, as eager create_graph does: the jitted second derivative is the eager one."""
    (q, k, v, g, mask, causal, group, e), loss = attention_case("bool", ug.float64)

    def curvature(q, k, v):
        dq = ug.grad(loss)(q, k, v)
        return (dq * dq).sum()
    second = ug.grad(curvature, argnums=(0, 1, 2))
    for got, want in zip(ug.jit(second)(q, k, v), second(q, k, v)):
        same(got, want)


def test_a_program_run_under_vmap_or_recording_takes_the_formula():
    """The program traced once runs again under vmap (batched operands) and under a gradient of
    its gradient (a run that records): there the kernels' calls take the composition, whose
    values are the eager ones to rounding and whose own rules differentiate the gradient (as
    eager create_graph does, bit for bit)."""
    (q, k, v, g, mask, causal, group, e), loss = attention_case("additive", ug.float64)
    step = ug.grad(loss, argnums=(0, 1, 2))
    jitted = ug.jit(step)
    jitted(q, k, v)
    qs = ug.stack([q, q * 0.5])
    batched = ug.vmap(jitted, in_axes=(0, None, None))(qs, k, v)
    ev, l = v.shape[-1], q.shape[2]
    for i in range(2):  # the composition against the eager kernel
        mags = magnitudes(qs[i], k, v, g, mask, causal, 1 / np.sqrt(e), group)[1:]
        for got, want, mag, n in zip(batched, step(qs[i], k, v), mags, (k.shape[2] + e + ev, l + e + ev, l + e + ev)):
            assert_close(got[i], want, mag, n, ug.float64, "vmap")

    def norm(f):
        return lambda q, k, v: sum((d * d).sum() for d in f(q, k, v))
    for got, want in zip(ug.grad(norm(jitted), argnums=(0, 1, 2))(q, k, v),
                         ug.grad(norm(step), argnums=(0, 1, 2))(q, k, v)):
        same(got, want)
    assert jitted.cache_info().traces == 1  # both ran the program traced first
