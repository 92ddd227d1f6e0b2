"""The memory plan of a compiled program (docs/design.md, "Running a program"): elementwise
results and activation gradients written into a dying operand's buffer, a linear's weight
gradient before its input gradient, a cheap activation computed again for its late readers
(src/ug/compiler/remat.cpp), a projection of the inputs (an attention's q/k/v) computed again for
the backward. Each case bounds the peak of one run by the buffers its values
need, derived from their sizes (the buffers the plan saves would pass the bound), and checks
the values against eager unigrad: the plan changes where and when a kernel runs, never which
kernel on which inputs, so they are equal bit for bit where eager runs the same kernels."""
import os

import numpy as np
import pytest

import unigrad as ug

F32 = 4  # bytes


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def peak_of(fn, *args):
    """Bytes allocated at the peak of one call beyond what was live before it, and its result."""
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    out = fn(*args)
    return ug.memory.max_allocated() - before, out


def without_remat(fn, *args):
    """fn compiled with rematerialization off (UG_JIT_REMAT=0, read when a program is compiled):
    the program the plan's copies must not change a bit of."""
    os.environ["UG_JIT_REMAT"] = "0"
    try:
        jitted = ug.jit(fn)
        jitted(*args)
    finally:
        del os.environ["UG_JIT_REMAT"]
    return jitted


def test_an_activation_gradient_writes_into_the_dying_gradient():
    n = 1 << 16
    x, y = ug.randn(n), ug.randn(n)

    def f(x, y):
        _, pullback = ug.vjp(ug.nn.functional.gelu, x)
        return pullback(y * 2)[0]  # y * 2 dies at gelu_backward, which writes into it

    jitted = ug.jit(f)
    jitted(x, y)
    peak, out = peak_of(jitted, x, y)
    assert peak < 1.5 * n * F32  # one buffer of x's size (two if gelu_backward allocated)
    same(out, f(x, y))


def test_a_cheap_activation_is_computed_again_for_a_late_reader():
    n = 1 << 16

    def f(x):
        h = ug.nn.functional.gelu(x)
        early = h.sum()
        t = x
        for _ in range(6):  # a long gap during which x, an input, stays alive anyway
            t = (t * 0.5).tanh()
        return early + (h * t).sum()

    x = ug.randn(n)
    jitted = ug.jit(f)
    jitted(x)
    assert jitted.lower(x).optimizer_stats()["recomputed"] == 1
    peak, out = peak_of(jitted, x)
    # The chain holds t and the next tanh's result; h, held across it, would be a third buffer.
    assert peak < 2.5 * n * F32
    same(out, f(x))


def test_attention_probabilities_are_computed_again_from_q_and_k():
    # softmax's scores die at softmax; q and k stay alive for their own gradients, so the
    # backward's readers of the probabilities get the product and the softmax again instead of
    # the probabilities being held through the rest of the forward and backward. The
    # attention's output, read again by the first Mul's backward, is a projection of values
    # alive there (the probabilities, v), but computing it again there would make the
    # probabilities' copy that early, twice its size held instead of it: it is held.
    ug.manual_seed(0)
    q, k, v, w = ug.randn(2, 16, 8), ug.randn(2, 16, 8), ug.randn(2, 16, 8), ug.randn(8)

    def loss(q, k, v, w):
        h = ug.softmax(q @ k.transpose(-2, -1), -1) @ v
        for _ in range(4):
            h = (h * w).tanh()
        return h.sum()

    step = ug.grad(loss, argnums=(0, 1, 2, 3))
    jitted = ug.jit(step)
    program = jitted.lower(q, k, v, w)
    assert program.optimizer_stats()["recomputed"] == 2
    assert program.node_types().count("Softmax") == 2
    assert program.node_types().count("MatMul") == 2 + 1 + 4  # the forward, the scores' copy, the backward
    for a, b in zip(jitted(q, k, v, w), step(q, k, v, w)):
        same(a, b)


def test_a_value_held_away_from_the_peak_is_not_computed_again():
    # gelu(x) is read at once and again after a chain of small ops (a gap the plan would bridge
    # with a copy), but the program's peak comes after its last reader: an outer product of
    # 16 times x's size and its exp. A copy would not lower that peak, so h is held
    # (compiler/remat.h: only what is held across the peak is computed again).
    n = 1 << 14

    def f(x, s):
        h = ug.nn.functional.gelu(x)
        early = h.sum()
        t = s
        for _ in range(6):
            t = (t * 0.5).tanh()
        late = (h * t.sum()).sum()
        big = x.reshape(-1, 1) * x[:16].reshape(1, -1)
        return early + late + big.exp().sum()

    x, s = ug.randn(n), ug.randn(4)
    jitted = ug.jit(f)
    jitted(x, s)
    assert jitted.lower(x, s).optimizer_stats()["recomputed"] == 0
    peak, out = peak_of(jitted, x, s)
    # The product and its exp (16·n each) and at most two buffers of x's size (h; exp's
    # result is one more unless it takes the dying product's buffer).
    assert peak <= (2 * 16 + 2) * n * F32, peak / (n * F32)
    same(out, f(x, s))
    same(out, without_remat(f, x, s)(x, s))


def test_a_copy_that_lowers_the_peak_by_little_is_not_made():
    # The feed-forward pair of the transformer block in small: gelu's output h is read by the
    # second product and again by its weight's gradient, while gelu's input waits for
    # gelu_backward. At the peak (the backward, where the incoming gradient, the pre-activation
    # and gelu_backward's result are alive) a copy of h, made just before its late reader, is
    # alive too: it would lower the peak by nothing, so h is held from the forward, below the
    # peak the backward reaches anyway.
    ug.manual_seed(0)
    n, d, hidden = 256, 8, 512
    w1, w2, x = ug.randn(hidden, d) * 0.3, ug.randn(d, hidden) * 0.3, ug.randn(n, d)

    def loss(w1, w2, x):
        h = ug.nn.functional.gelu(ug.nn.functional.linear(x, w1))
        return ug.nn.functional.linear(h, w2).tanh().sum()

    step = ug.grad(loss, argnums=(0, 1))
    jitted = ug.jit(step)
    jitted(w1, w2, x)
    peak, out = peak_of(jitted, w1, w2, x)
    plain_peak, plain_out = peak_of(without_remat(step, w1, w2, x), w1, w2, x)
    assert peak <= plain_peak
    for a, b in zip(out, step(w1, w2, x)):
        same(a, b)
    for a, b in zip(out, plain_out):
        same(a, b)


def test_nothing_is_computed_again_after_an_effect_that_may_have_written_its_inputs():
    # opt.step() writes the weight in place while the program runs: a GELU of the weight read
    # after it must be the one computed before the step, as eagerly.
    def make():
        ug.manual_seed(0)
        model = ug.nn.Linear(64, 64)
        opt = ug.optim.SGD(model.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            h = ug.nn.functional.gelu(model.weight)
            loss = (h @ x).tanh().sum() + model(x.t()).sum()
            loss.backward()
            opt.step()
            return h * 2
        return step

    x = ug.randn(64, 8)
    eager, compiled = make(), ug.compile(make())
    for _ in range(3):
        same(compiled(x), eager(x))


def test_under_autograd_the_program_runs_without_the_copies():
    # Recording through a copy would give the GELU's input two gradient terms where the eager
    # backward sums the GELU output's first: grad(jit(f)) runs the graph without the copies
    # and equals grad(f) bit for bit.
    def f(x):
        h = ug.nn.functional.gelu(x)
        early = (h * h).sum()
        t = x
        for _ in range(6):
            t = (t * 0.5).tanh()
        return early + (h * t).sum()

    x = ug.randn(4096)
    jitted = ug.jit(f)
    assert jitted.lower(x).optimizer_stats()["recomputed"] == 1
    same(ug.grad(jitted)(x), ug.grad(f)(x))
    same(jitted(x), f(x))


def attention_then_tail(x, w, w2, heads=2, layers=8):
    """Self-attention over a q/k/v projection of the input, then a tail of tanh layers: the
    backward reads q, k and v again only after the tail's forward and backward."""
    b, n, d = x.shape
    q, k, v = ((x @ w.t()).reshape(b, n, 3 * heads, d // heads).transpose(1, 2)).split(heads, 1)
    h = ug.softmax((q * (d // heads) ** -0.5) @ k.transpose(-2, -1), -1) @ v
    h = h.transpose(1, 2).reshape(b, n, d)
    for _ in range(layers):
        h = (h @ w2).tanh()
    return h.sum()


def test_a_projection_of_the_inputs_is_computed_again_for_the_backward():
    ug.manual_seed(0)
    b, n, d = 8, 16, 64
    x, w, w2 = ug.randn(b, n, d), ug.randn(3 * d, d) * 0.2, ug.randn(d, d) * 0.2
    step = ug.value_and_grad(attention_then_tail, argnums=(0, 1, 2))
    jitted, plain = ug.jit(step), without_remat(step, x, w, w2)
    jitted(x, w, w2)
    types = jitted.lower(x, w, w2).node_types()
    # The projection and the scores (their softmax is read by softmax_backward) again.
    assert types.count("MatMul") == plain.lower(x, w, w2).node_types().count("MatMul") + 2
    peak, (value, grads) = peak_of(jitted, x, w, w2)
    plain_peak, (p_value, p_grads) = peak_of(plain, x, w, w2)
    e_value, e_grads = step(x, w, w2)
    for got in ((value, *grads), (p_value, *p_grads)):
        for a, b_ in zip(got, (e_value, *e_grads)):
            same(a, b_)
    # Held through the tail, q, k, v (the projection, one buffer of 3·n·d per batch row) and the
    # scaled q are four [b, n, d] buffers; the tail's eight tanh outputs are the peak's bulk
    # either way, and the attention's backward holds less than they do.
    act = b * n * d * F32
    assert peak <= plain_peak - 4 * act + act // 2, (peak / act, plain_peak / act)


def test_a_projection_is_not_computed_again_after_an_effect_that_may_have_written_its_weight():
    # opt.step() writes the weight in place while the program runs: the product of the weight
    # returned after it must be the one computed before the step, as eagerly.
    def make():
        ug.manual_seed(0)
        model = ug.nn.Linear(32, 32)
        opt = ug.optim.SGD(model.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            h = x @ model.weight.t()
            t = model(x)
            for _ in range(8):
                t = model(t.tanh())
            loss = t.sum() + h.sum()
            loss.backward()
            opt.step()
            return h * 2
        return step

    x = ug.randn(16, 32)
    eager, compiled = make(), ug.compile(make())
    for _ in range(3):
        same(compiled(x), eager(x))


def test_a_value_read_again_soon_is_held():
    def f(x):
        h = x.exp()
        return h.sum() + (h * 2).sum()

    x = ug.randn(64)
    jitted = ug.jit(f)
    assert jitted.lower(x).optimizer_stats()["recomputed"] == 0
    same(jitted(x), f(x))


def test_an_input_that_dies_is_not_computed_again():
    # relu_backward reads relu's output, not its input: z dies at relu, so h is held, not
    # recomputed from a value the program would have to keep alive longer.
    ug.manual_seed(0)
    w1, w2, x = ug.randn(8, 32), ug.randn(32, 1), ug.randn(16, 8)

    def loss(w1, w2, x):
        return ug.nn.functional.relu(x @ w1).matmul(w2).sum()

    step = ug.grad(loss, argnums=(0, 1))
    jitted = ug.jit(step)
    assert jitted.lower(w1, w2, x).optimizer_stats()["recomputed"] == 0
    for a, b in zip(jitted(w1, w2, x), step(w1, w2, x)):
        same(a, b)


def test_a_linear_layer_frees_its_input_before_the_input_gradient_is_made():
    n, d, hidden = 256, 8, 512
    ug.manual_seed(0)
    w1, w2 = ug.randn(hidden, d) * 0.3, ug.randn(1, hidden) * 0.3
    x = ug.randn(n, d)

    def loss(w1, w2, x):
        return ug.nn.functional.linear(ug.nn.functional.gelu(ug.nn.functional.linear(x, w1)), w2).sum()

    step = ug.value_and_grad(loss, argnums=(0, 1))
    jitted = ug.jit(step)
    jitted(w1, w2, x)
    peak, (value, grads) = peak_of(jitted, w1, w2, x)
    # Two [n, hidden] buffers at most: the pre-activation and the GELU output in the forward,
    # the pre-activation and the incoming gradient in the backward (gelu_backward writes into
    # the latter, and the GELU output died at w2's gradient, computed first); besides them the
    # gradients and small rows. Before the plan, three were (the GELU output beside them).
    small = (w1.numel() + w2.numel() + n * d + n) * F32
    assert peak < 2 * n * hidden * F32 + 2 * small
    e_value, e_grads = step(w1, w2, x)
    same(value, e_value)
    for a, b in zip(grads, e_grads):
        same(a, b)


def transformer_step(batch, seq, d, heads):
    """bench/py/transformer_jit_step.py's step (post-LN block, exact GELU, AdamW)."""
    ug.manual_seed(0)
    block = ug.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True)
    x, target = ug.randn(batch, seq, d), ug.randn(batch, seq, d)
    params = block.init(ug.random.key(0), x)
    optimizer = ug.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)

    def step(params, opt_state, x, target):
        loss, grads = ug.value_and_grad(lambda p: ug.nn.functional.mse_loss(block.apply(p, x), target))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates), opt_state, loss

    return step, params, optimizer.init(params), x, target


def test_the_transformer_step_peak_is_below_eager_and_bounded_by_its_saved_values():
    batch, seq, d, heads = 16, 64, 128, 4
    step, params, opt_state, x, target = transformer_step(batch, seq, d, heads)
    jitted = ug.jit(step)
    e_params, e_state = params, opt_state
    steps, lr = 3, 1e-3
    for _ in range(steps):
        params, opt_state, loss = jitted(params, opt_state, x, target)
        e_params, e_state, e_loss = step(e_params, e_state, x, target)
    # The compiled gradients equal the eager ones to float32 rounding (test_fused_backward.py:
    # the program's reductions may add in another order); AdamW divides each gradient element
    # by its own scale, so a last-bit difference in a near-zero element moves that parameter by
    # a small fraction of lr: 1% of lr a step at most.
    np.testing.assert_allclose(np.asarray(loss), np.asarray(e_loss), rtol=1e-5)
    for k in params:
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(e_params[k]), rtol=0, atol=steps * lr * 1e-2)

    jit_peak, out = peak_of(jitted, params, opt_state, x, target)
    eager_peak, _ = peak_of(step, params, opt_state, x, target)
    assert jit_peak < eager_peak
    # The plan's copies compute what the program without them computes, bit for bit.
    plain = without_remat(step, params, opt_state, x, target)
    for a, b in zip(ug.tree_leaves(out), ug.tree_leaves(plain(params, opt_state, x, target))):
        same(a, b)

    # At the worst points (the feed-forward's second product in the forward; its input
    # gradient's product in the backward) the program holds what the backward will read that it
    # does not compute again (the attention's output, the first layer norm's input), the layer
    # norm's output until the residual addition (in the backward: the gradient reaching the
    # residual), the feed-forward's pre-activation, its GELU output (the incoming gradient) and
    # the product's result; the q/k/v projection and the scaled q, the attention probabilities
    # and the layer norm's output are computed again in the backward (the GELU output is held:
    # its copy would be alive at the backward's peak). Beside them at most one set of gradients.
    row = batch * seq * d * F32
    hidden = 4 * row
    param_bytes = sum(p.numel() for p in params.values()) * F32
    bound = (1 + 1 + 1 + 1) * row + 2 * hidden + param_bytes
    assert jit_peak <= bound, (jit_peak / 2**20, bound / 2**20)


def test_each_block_of_a_stack_computes_its_projection_again():
    # Inside a stack a block's input is a value of the program, held anyway for its q/k/v
    # weight's gradient: the projection is computed again from it as from the first block's.
    def stack_step(layers):
        ug.manual_seed(0)
        layer = ug.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
        stack = ug.nn.TransformerEncoder(layer, layers)
        x, target = ug.randn(16, 64, 128), ug.randn(16, 64, 128)
        params = stack.init(ug.random.key(0), x)

        def step(params, x, target):
            return ug.value_and_grad(lambda p: ug.nn.functional.mse_loss(stack.apply(p, x), target))(params)

        return step, (params, x, target)

    peaks = []
    for layers in (1, 2):
        step, args = stack_step(layers)
        jitted, plain = ug.jit(step), without_remat(step, *args)
        jitted(*args)
        # Per block: the projection computed again (the scores are the fused attention's own).
        assert (jitted.lower(*args).node_types().count("MatMul")
                == plain.lower(*args).node_types().count("MatMul") + layers)
        peak, out = peak_of(jitted, *args)
        for a, b in zip(ug.tree_leaves(out), ug.tree_leaves(plain(*args))):
            same(a, b)
        peaks.append(peak)
    # A block more holds, for the backward, its attention's output, both layer norms' inputs,
    # the FFN's pre-activation (four rows) and its output (the next block's input): eight rows
    # of [16, 64, 128] (holding q, k, v and the scaled q instead, main's plan took eleven);
    # besides them at most a [128, 128] weight's gradient made before the peak.
    row = 16 * 64 * 128 * F32
    assert peaks[1] - peaks[0] <= 8 * row + 128 * 128 * F32, (peaks[1] - peaks[0]) / row


def test_a_closed_over_data_set_is_held_not_copied():
    """A step reading batches from a training set it closes over: the program holds the set
    itself (no copy in the serialized model, none parsed back out of it), so compiling it
    allocates no more than the batch it gathers; so for the parameters of a PyTorch-style step."""
    data = ug.randn(20_000, 50)  # 4 MB
    w = ug.randn(50, 3, requires_grad=True)

    @ug.jit
    def f(idx):
        return (data[idx] @ w).sum()

    idx = ug.arange(8)
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    out = f(idx)
    assert ug.memory.max_allocated() - before < data.numel() * F32 // 4
    same(out.detach(), (data[idx] @ w).sum().detach())
    data[:8] = 0  # written in place: the next call computes with the new values, as eager code does
    with pytest.warns(ug.compiled.RetraceWarning, match="was written in place since the trace"):
        same(f(idx).detach(), (data[idx] @ w).sum().detach())


def test_a_saved_program_writes_the_data_it_holds(tmp_path):
    """ug.jit.save writes a held constant's data into the file: ONNX Runtime runs it."""
    import onnxruntime as ort

    table = ug.randn(100, 4)
    f = ug.jit(lambda i: table[i] * 2)
    idx = ug.tensor([3, 7, 99])
    f(idx)
    path = str(tmp_path / "f.onnx")
    ug.jit.save(f, path, idx)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: np.asarray(idx)})
    same(got, np.asarray(table)[[3, 7, 99]] * 2)


def test_under_autocast_the_casts_and_what_they_read_are_computed_again():
    # bfloat16 autocast puts a cast between each layer and its product: the block input's cast
    # (read by the q/k/v projection and again by its weight's gradient), the first layer norm's
    # output's cast (read by the feed-forward's first product and its weight's gradient), the
    # weights' casts. Each is one pass over values alive anyway (the input; the norm's input,
    # kept for its backward; the parameters), so the plan makes them again, with the q/k/v
    # projection and the GELU, instead of holding them through the rest of the step.
    batch, seq, d, heads = 16, 64, 128, 4

    def make():
        ug.manual_seed(0)
        block = ug.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True)
        opt = ug.optim.AdamW(block.parameters(), lr=1e-3, weight_decay=0.01)

        def step(x, target):
            opt.zero_grad()
            with ug.autocast("cpu", dtype=ug.bfloat16):
                loss = ug.nn.functional.mse_loss(block(x).float(), target)
            loss.backward()
            opt.step()
            return loss

        return block, step

    x, target = ug.randn(batch, seq, d), ug.randn(batch, seq, d)
    block, step = make()
    jitted = ug.compile(step)
    jitted(x, target)
    plain_block, plain_step = make()
    plain = without_remat(ug.compile(plain_step), x, target)
    types, plain_types = jitted.lower(x, target).node_types(), plain.lower(x, target).node_types()
    for op, again in (("LayerNormalization", 1), ("Gelu", 1), ("MatMul", 1)):
        assert types.count(op) == plain_types.count(op) + again, op
    # The input's, the norm's output's, the q/k/v and first feed-forward weights' and the q/k/v
    # bias's casts.
    assert types.count("Cast") >= plain_types.count("Cast") + 5
    peak, loss = peak_of(jitted, x, target)
    plain_peak, plain_loss = peak_of(plain, x, target)
    same(loss, plain_loss)
    for p, q in zip(block.parameters(), plain_block.parameters()):
        same(p, q)
    # Held across the step's worst point without the copies: the GELU output (a [batch, seq,
    # 4d] bfloat16 buffer), q, k and v (three [batch, seq, d] bfloat16 buffers), the input's and
    # the norm output's casts (two more), nine in all; the peak moves to the backward of the
    # feed-forward, where a copy may be alive and the products' scratch differs by machine
    # (5.6 saved with AVX512-BF16 and without). At least a GELU output's worth is saved.
    row16 = batch * seq * d * 2
    assert peak <= plain_peak - 4 * row16, ((plain_peak - peak) / row16)
