"""Mixed precision: ug.autocast against torch.autocast on the CPU (result dtypes and values),
the op table's policies against PyTorch's documented lists, GradScaler step by step against
torch.amp.GradScaler, and Keras's mixed-precision policies."""
import warnings

import numpy as np
import pytest
import torch
from reference import ABS, arr, assert_close, check

import unigrad as ug

BF16 = {"device_type": "cpu", "dtype": "bfloat16"}


def autocast(m, dtype="bfloat16"):
    return m.autocast("cpu", dtype=getattr(m, dtype))


# ---- what each op does: PyTorch's lists ---------------------------------------------------------

# torch.amp's CPU list of ops that run in the low dtype, as far as unigrad has them
# (https://pytorch.org/docs/stable/amp.html#cpu-ops-that-can-autocast-to-bfloat16).
LOWER = {"matmul", "linear", "conv", "conv_transpose", "scaled_dot_product_attention"}
# torch.amp's CUDA float32 list (its CPU list names none of these ops but the losses):
# softmax, log_softmax, the norms, the losses, sum/prod/cumsum/cumprod, exp/log and friends,
# pow. unigrad adds mean and batch_norm (documented in docs/performance.md).
FLOAT32 = {"softmax", "log_softmax", "layer_norm", "group_norm", "instance_norm", "batch_norm", "nll_loss", "mse_loss",
           "cross_entropy", "binary_cross_entropy", "sum", "prod", "mean", "cumsum", "cumprod", "exp", "expm1", "log",
           "log2", "log10", "log1p", "reciprocal", "rsqrt", "tan", "sinh", "cosh", "asin", "acos", "pow"}


def test_every_op_has_the_policy_of_the_lists():
    for op in ug.registered_ops():
        expected = "lower_precision" if op in LOWER else "float32" if op in FLOAT32 else "none"
        assert ug.amp.policy(op) == expected, op
    assert LOWER | FLOAT32 <= set(ug.registered_ops())


# ---- against torch.autocast on the CPU ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matmul_runs_in_the_low_dtype(dtype):
    def f(m, a, b):
        with autocast(m, dtype):
            return a @ b

    check(f, arr((5, 40)), arr((40, 7), seed=1), terms=ABS, n=40)


@pytest.mark.parametrize("shapes", [((700, 300), (300, 900)), ((64, 32, 48), (64, 48, 32)), ((3, 520, 40), (40, 530))],
                         ids=["panels", "batch chunks", "broadcast"])
def test_bfloat16_products_in_widened_blocks(shapes):
    """Large products are widened block by block (no float32 copy of a whole operand); each
    block's path is checked against torch's bfloat16 product."""
    a, b = shapes
    check(lambda m, x, y: x @ y, arr(a, "bfloat16", low=0.0, high=1.0), arr(b, "bfloat16", low=0.0, high=1.0, seed=1),
          terms=ABS, n=a[-1])


def test_linear_and_bmm_against_torch():
    def lin(m, x, w, b):
        with autocast(m):
            return m.nn.functional.linear(x, w, b)

    check(lin, arr((6, 32)), arr((10, 32), seed=1), arr((10,), seed=2), terms=ABS, n=33)

    def bmm(m, a, b):
        with autocast(m):
            return m.bmm(a, b)

    check(bmm, arr((2, 3, 24)), arr((2, 24, 5), seed=1), terms=ABS, n=24)


# Composite products: torch's lower-precision list names addmm, baddbmm and addbmm (the bias is
# cast too) and einsum is its bmm; mv, addmv, addr, dot and vdot are on no list and run in
# their inputs' dtype, although unigrad builds them on matmul.
COMPOSITE_PRODUCTS = [
    ("addmm", lambda m, a, b, c: m.addmm(a, b, c), [(5, 6), (5, 7), (7, 6)], 7),
    ("baddbmm", lambda m, a, b, c: m.baddbmm(a, b, c), [(2, 5, 6), (2, 5, 7), (2, 7, 6)], 7),
    ("addbmm", lambda m, a, b, c: m.addbmm(a, b, c), [(5, 6), (2, 5, 7), (2, 7, 6)], 14),
    ("einsum", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), [(2, 5, 7), (2, 7, 6)], 7),
    ("prelu", lambda m, a, w: m.nn.functional.prelu(a, w), [(4, 3, 5), (3,)], 1),
    ("mv", lambda m, a, v: m.mv(a, v), [(5, 7), (7,)], 7),
    ("addmv", lambda m, c, a, v: m.addmv(c, a, v), [(5,), (5, 7), (7,)], 8),
    ("addr", lambda m, c, u, v: m.addr(c, u, v), [(5, 7), (5,), (7,)], 2),
    ("dot", lambda m, u, v: m.dot(u, v), [(7,), (7,)], 7),
    ("vdot", lambda m, u, v: m.vdot(u, v), [(7,), (7,)], 7),
]


@pytest.mark.parametrize("name,f,shapes,n", COMPOSITE_PRODUCTS, ids=[c[0] for c in COMPOSITE_PRODUCTS])
def test_composite_products_follow_torchs_lists(name, f, shapes, n):
    def under_autocast(m, *xs):
        with autocast(m):
            return f(m, *xs)

    check(under_autocast, *[arr(s, seed=i) for i, s in enumerate(shapes)], terms=ABS, n=n)


def test_conv2d_against_torch():
    def f(m, x, w, b):
        with autocast(m):
            return m.nn.functional.conv2d(x, w, b, padding=1)

    check(f, arr((2, 3, 8, 8)), arr((4, 3, 3, 3), seed=1), arr((4,), seed=2), terms=ABS, n=28)


def test_float64_is_never_cast():
    def f(m, a, b):
        with autocast(m):
            return a @ b

    check(f, arr((4, 6), "float64"), arr((6, 3), "float64", seed=1))


def test_float32_ops_cast_low_inputs_up():
    """A float32-policy op given bfloat16 inputs computes on their float32 values."""
    x = ug.randn(4, 9).to(ug.bfloat16)
    with ug.autocast("cpu"):
        for name, fn in [("softmax", lambda t: t.softmax(-1)), ("log_softmax", lambda t: t.log_softmax(-1)),
                         ("exp", lambda t: t.exp()), ("sum", lambda t: t.sum(-1)), ("mean", lambda t: t.mean(-1)),
                         ("cumsum", lambda t: t.cumsum(-1)), ("pow", lambda t: t ** 2),
                         ("layer_norm", lambda t: ug.nn.functional.layer_norm(t, (9,))),
                         ("mse_loss", lambda t: ug.nn.functional.mse_loss(t, t * 0.5))]:
            y = fn(x)
            assert y.dtype == ug.float32, name
            with ug.autocast("cpu", enabled=False):
                expected = fn(x.float())
            np.testing.assert_array_equal(y.numpy(), expected.numpy(), err_msg=name)


def test_ops_without_a_policy_keep_their_dtypes():
    a, b = ug.randn(3, 4).to(ug.bfloat16), ug.randn(3, 4)
    with ug.autocast("cpu"):
        assert (a * a).dtype == ug.bfloat16
        assert a.relu().dtype == ug.bfloat16
        assert (a + b).dtype == ug.float32  # promotion, as without autocast
        assert ug.cat([a, b]).dtype == ug.float32


def test_gradients_come_back_in_the_parameters_dtype_and_match_torch():
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.uniform(-1, 1, s).astype(np.float32) for s in [(8, 16), (32, 16), (4, 32)])

    def run(m):
        ws = [m.tensor(w, requires_grad=True) for w in (w1, w2)]
        with autocast(m):
            h = m.nn.functional.linear(m.tensor(x), ws[0]).relu()
            out = m.nn.functional.linear(h, ws[1])
            loss = out.float().pow(2).mean()
        loss.backward()
        return out, loss, [w.grad for w in ws]

    t_out, t_loss, t_grads = run(torch)
    u_out, u_loss, u_grads = run(ug)
    assert u_out.dtype == ug.bfloat16 and u_loss.dtype == ug.float32
    assert [g.dtype for g in u_grads] == [ug.float32, ug.float32]
    # Each value passes through bfloat16 roundings in both: a few bfloat16 ulps of its size,
    # (2^-8 each) relative to the magnitudes that reach it.
    ulps = 4 * 2.0 ** -8
    assert_close(u_out.detach().float().numpy(), t_out.detach().float().numpy(), "float32", rtol=ulps,
                 atol=ulps * float(np.abs(t_out.detach().float().numpy()).max()))
    for u, t in zip(u_grads, t_grads):
        assert_close(u.numpy(), t.numpy(), "float32", rtol=ulps, atol=ulps * float(np.abs(t.numpy()).max()))


# ---- what float32 ops on 16-bit inputs keep for backward -------------------------------------


def attention_weights(m, scores, v, consumer):
    """softmax of bf16 scores under autocast (float32), then `consumer`: a bf16 product or a
    float32 op; the scores' gradient for a fixed cotangent."""
    s = m.tensor(scores).to(m.bfloat16).requires_grad_()
    with autocast(m):
        p = s.softmax(-1)
        out = p @ m.tensor(v) if consumer == "product" else p * m.tensor(v[:, :1].T)
    out.backward(m.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))).to(out.dtype))
    return p, out, s.grad


def test_softmax_keeps_its_float32_output_beside_the_products_bfloat16_copy():
    """softmax (float32) keeps its float32 output for its own gradient and the product keeps
    the bfloat16 copy it multiplies: the softmax gradient is not rounded through bfloat16.
    (Attention need not pay for this: scaled_dot_product_attention keeps no probabilities.)"""
    scores, v = np.random.default_rng(1).normal(size=(2, 64, 64)).astype(np.float32), np.ones((64, 8), np.float32)
    s = ug.tensor(scores).to(ug.bfloat16).requires_grad_()
    vv = ug.tensor(v)
    before = ug.memory.allocated()
    with ug.autocast("cpu"):
        out = s.softmax(-1) @ vv
    n = scores.size
    # kept: the float32 softmax output (4n bytes), its bf16 copy (2n), the bf16 copy of v, the product
    assert ug.memory.allocated() - before == 4 * n + 2 * n + 2 * v.size + 2 * out.numel()
    del out


def test_softmax_gradient_reads_its_float32_output():
    """Under autocast the gradient is the one of the same ops written out by hand (softmax in
    float32, the product of bfloat16 copies), bit for bit; torch's CPU autocast runs softmax in
    bfloat16, so its gradient reads the output rounded: within a few bfloat16 roundings."""
    rng = np.random.default_rng(2)
    scores, v = rng.normal(size=(3, 16, 24)).astype(np.float32), rng.normal(size=(24, 8)).astype(np.float32)
    _, t_out, t_grad = attention_weights(torch, scores, v, "product")
    u_p, u_out, u_grad = attention_weights(ug, scores, v, "product")
    np.testing.assert_array_equal(u_out.detach().float().numpy(), t_out.detach().float().numpy())
    s = ug.tensor(scores).to(ug.bfloat16).requires_grad_()
    out = s.float().softmax(-1).to(ug.bfloat16) @ ug.tensor(v).to(ug.bfloat16)
    out.backward(ug.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))).to(out.dtype))
    np.testing.assert_array_equal(u_grad.float().numpy(), s.grad.float().numpy())
    y = u_p.detach().float().numpy().astype(np.float64)
    gp = torch.tensor(np.linspace(-1, 1, u_out.numel(), dtype=np.float32).reshape(u_out.shape)).bfloat16()
    gp = (gp @ torch.tensor(v).bfloat16().T).double().numpy()
    terms = y * (np.abs(gp) + (np.abs(gp) * y).sum(-1, keepdims=True))
    u, t = u_grad.float().numpy(), t_grad.float().numpy()
    # torch's y is rounded to bfloat16 (relative 2^-9 each time it is read: 2^-8 of the terms),
    # both results are rounded to bfloat16 once, and the float32 sums differ by ~n eps terms.
    bound = 2.0 ** -8 * (np.abs(u) + np.abs(t) + terms) + 48 * np.finfo(np.float32).eps * terms + 1e-30
    np.testing.assert_array_less(np.abs(u - t), bound)


def test_softmax_output_without_a_16_bit_consumer_stays_float32():
    """No bfloat16 copy is made: the float32 output stays saved and the gradient is the one of
    the same float32 ops outside autocast, bit for bit."""
    rng = np.random.default_rng(3)
    scores, v = rng.normal(size=(3, 16, 24)).astype(np.float32), rng.normal(size=(24, 8)).astype(np.float32)
    _, _, grad = attention_weights(ug, scores, v, "float32")
    s = ug.tensor(scores).to(ug.bfloat16).float().requires_grad_()
    out = s.softmax(-1) * ug.tensor(v[:, :1].T)
    out.backward(ug.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))))
    np.testing.assert_array_equal(grad.float().numpy(), s.grad.to(ug.bfloat16).float().numpy())


def test_a_float32_op_keeps_its_16_bit_input_not_the_float32_copy():
    """layer_norm of a bfloat16 input keeps that input for backward, not the float32 copy
    autocast made of it; the gradient is the float32 one bit for bit (the values are equal)."""
    x_np = np.random.default_rng(4).normal(size=(64, 256)).astype(np.float32)
    x = ug.tensor(x_np).to(ug.bfloat16).requires_grad_()
    before = ug.memory.allocated()
    with ug.autocast("cpu"):
        y = ug.nn.functional.layer_norm(x, (256,))
    # kept: y (float32) and the per-row mean and 1/std (float32); the float32 copy of x is freed
    assert ug.memory.allocated() - before == 4 * y.numel() + 2 * 4 * 64
    g = ug.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32).reshape(64, 256))
    y.backward(g)
    x32 = x.detach().float().requires_grad_()
    ug.nn.functional.layer_norm(x32, (256,)).backward(g)
    np.testing.assert_array_equal(x.grad.float().numpy(), x32.grad.to(ug.bfloat16).float().numpy())


def test_a_product_keeps_its_leaves_not_their_bfloat16_copies():
    """linear under autocast keeps the float32 weight and input (leaves, alive anyway) rather
    than their bfloat16 copies, and casts them again in backward: the gradients are those of
    the same casts written out by hand, bit for bit; a leaf changed in place before backward
    raises, as without autocast."""
    rng = np.random.default_rng(5)
    x_np, w_np = rng.normal(size=(64, 256)).astype(np.float32), rng.normal(size=(128, 256)).astype(np.float32)
    g = ug.tensor(np.linspace(-1, 1, 64 * 128, dtype=np.float32).reshape(64, 128)).to(ug.bfloat16)
    x, w = ug.tensor(x_np), ug.tensor(w_np).requires_grad_()
    before = ug.memory.allocated()
    with ug.autocast("cpu"):
        y = ug.nn.functional.linear(x, w)
    assert ug.memory.allocated() - before == 2 * y.numel()  # the bfloat16 output alone
    y.backward(g)
    w2 = ug.tensor(w_np).requires_grad_()
    (x.to(ug.bfloat16) @ w2.to(ug.bfloat16).T).backward(g)
    np.testing.assert_array_equal(w.grad.numpy(), w2.grad.numpy())
    with ug.autocast("cpu"):
        y = ug.nn.functional.linear(x, w)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*linear"):
        y.backward(g)


def test_a_saved_float32_output_changed_in_place_still_raises():
    s = ug.randn(4, 8).to(ug.bfloat16).requires_grad_()
    with ug.autocast("cpu"):
        p = s.softmax(-1)
    p.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*softmax"):
        p.sum().backward()


def test_regions_nest_disable_and_decorate():
    a = ug.randn(2, 2)
    assert not ug.is_autocast_enabled("cpu")
    with ug.autocast("cpu"):
        assert ug.is_autocast_enabled("cpu") and (a @ a).dtype == ug.bfloat16
        with ug.autocast("cpu", enabled=False):
            assert (a @ a).dtype == ug.float32
        with ug.autocast("cpu", dtype=ug.float16):
            assert (a @ a).dtype == ug.float16
        assert (a @ a).dtype == ug.bfloat16
    assert (a @ a).dtype == ug.float32

    @ug.autocast("cpu")
    def product(x):
        return x @ x

    assert product(a).dtype == ug.bfloat16
    assert ug.amp.autocast is ug.autocast
    with pytest.raises(ZeroDivisionError):
        with ug.autocast("cpu"):
            1 / 0
    assert not ug.is_autocast_enabled("cpu")


def test_backward_runs_outside_autocast_even_inside_a_region():
    w = ug.randn(4, 4, requires_grad=True)
    with ug.autocast("cpu"):
        y = (ug.randn(3, 4) @ w).float().sum()
        y.backward()
    assert w.grad.dtype == ug.float32


def test_cuda_autocast_without_cuda_warns_and_is_disabled_like_torch():
    a = ug.randn(2, 2)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = ug.cuda.amp.autocast()
    with region:
        assert (a @ a).dtype == ug.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autocast("cuda"):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_torch_cpu_amp_names_are_torchs():
    # torch.cpu.amp.autocast (deprecated in torch for torch.amp.autocast("cpu"), still written)
    a = ug.randn(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with torch.cpu.amp.autocast():
            want = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        scaler = torch.cpu.amp.GradScaler(init_scale=8.0)
    with ug.cpu.amp.autocast():
        assert str((a @ a).dtype).split(".")[-1] == str(want).split(".")[-1] == "bfloat16"
    with ug.cpu.amp.autocast(dtype=ug.float16):
        assert (a @ a).dtype == ug.float16
    assert ug.cpu.amp.GradScaler(init_scale=8.0).get_scale() == scaler.get_scale()
    assert (ug.cpu.is_available(), ug.cpu.device_count()) == (torch.cpu.is_available(), torch.cpu.device_count())


def _custom_functions(m):
    class ProductKeepingAutocast(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)

    class SquaresInFloat32(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=m.float32)
        def forward(ctx, a):
            ctx.save_for_backward(a)
            ctx.product_dtype = (a @ a.t()).dtype  # autocast is off inside
            return (a * a).sum()

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    return ProductKeepingAutocast, SquaresInFloat32


def test_custom_fwd_and_custom_bwd_are_torchs():
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    results = []
    for m in (ug, torch):
        product, squares = _custom_functions(m)
        a, b = m.tensor(a_np, requires_grad=True), m.tensor(b_np, requires_grad=True)
        with m.autocast("cpu"):
            y = product.apply(a, b)  # the forward under autocast: a bfloat16 product
            low = a.to(m.bfloat16)
            s = squares.apply(low)  # cast back to float32, autocast off
        (y.float().sum() + s).backward()  # custom_bwd: the product's backward under autocast again
        results.append((str(y.dtype).split(".")[-1], str(s.dtype).split(".")[-1], a.grad.float().numpy(),
                        b.grad.float().numpy()))
    (ug_y, ug_s, ug_da, ug_db), (t_y, t_s, t_da, t_db) = results
    assert (ug_y, ug_s) == (t_y, t_s) == ("bfloat16", "float32")
    # The backward products (bfloat16 inputs, as both cast them alike; float32 sums of 5 or 4
    # terms rounded to bfloat16) may round to neighbouring bfloat16 values: 2^-8 of the sum of
    # |terms| apiece (the incoming gradient is ones), once for the product's result and once for
    # its sum with the float32 part.
    ulp = 2.0 ** -8
    np.testing.assert_array_less(np.abs(ug_da - t_da), 2 * ulp * (np.abs(b_np).sum(1)[None, :] + np.abs(t_da)))
    np.testing.assert_array_less(np.abs(ug_db - t_db), 2 * ulp * (np.abs(a_np).sum(0)[:, None] + np.abs(t_db)))


def test_a_region_that_ends_inside_backward_leaves_backward_uncast():
    # Backward runs in the forward's dtypes, also when called inside a region; a region opened
    # and closed in backward (a hook's, custom_bwd's) casts until it ends and then leaves the
    # rest of backward uncast (it turned casting back on, before).
    x = ug.randn(8, 8, requires_grad=True)
    h = x * 2
    seen = []

    def hook(g):
        a = ug.randn(4, 4)
        with ug.autocast("cpu", enabled=False):
            pass
        seen.append((a @ a).dtype)
        with ug.autocast("cpu"):
            seen.append((a @ a).dtype)
        seen.append((a @ a).dtype)
        return g

    h.register_hook(hook)
    with ug.autocast("cpu"):
        h.sum().backward()
        assert (ug.ones(2, 2) @ ug.ones(2, 2)).dtype == ug.bfloat16  # the region itself goes on
    assert seen == [ug.float32, ug.bfloat16, ug.float32]
    assert (ug.ones(2, 2) @ ug.ones(2, 2)).dtype == ug.float32


def test_bad_autocast_arguments():
    with pytest.raises(ValueError, match="device_type"):
        ug.autocast("tpu")
    with pytest.warns(UserWarning, match="not supported"):
        region = ug.autocast("cpu", dtype=ug.float64)
    with region:
        assert (ug.ones(2, 2) @ ug.ones(2, 2)).dtype == ug.float32


# ---- GradScaler against torch.amp.GradScaler ------------------------------------------------------


def scaler_run(m, steps, bad_steps, **options):
    """A linear model trained by SGD through a GradScaler; the gradients of the steps in
    bad_steps are poisoned with inf. Returns the scales, the weights and the state dict."""
    w = m.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    opt = m.optim.SGD([w], lr=0.1)
    scaler = m.amp.GradScaler("cpu", **options)
    x = m.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    scales, weights = [], []
    for step in range(steps):
        opt.zero_grad()
        loss = (x @ w.t()).pow(2).mean()
        scaler.scale(loss).backward()
        if step in bad_steps:
            w.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(w.detach().numpy().copy())
    return scales, weights, scaler.state_dict()


def test_grad_scaler_matches_torch_step_by_step():
    options = {"init_scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.25, "growth_interval": 3}
    bad = {1, 5, 6}
    t_scales, t_weights, t_state = scaler_run(torch, 12, bad, **options)
    u_scales, u_weights, u_state = scaler_run(ug, 12, bad, **options)
    assert u_scales == t_scales
    for u, t in zip(u_weights, t_weights):
        assert_close(u, t, "float32")
    assert u_state == t_state


def test_grad_scaler_in_a_compiled_step_decides_at_every_run():
    # The scale was a number read at the trace, and so was whether a gradient held inf: a
    # compiled step kept both for every later step.
    def run(m, compiled):
        m.manual_seed(0)
        model = m.nn.Linear(3, 2)
        with (torch.no_grad() if m is torch else ug.no_grad()):
            model.weight.copy_(m.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)))
            model.bias.zero_()
        opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scaler = m.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss

        if compiled:
            step = ug.compile(step)
        scales, weights = [], []
        for i in range(7):
            x = np.full((4, 3), i / 4, np.float32)
            if i in (2, 5):
                x[0, 0] = np.inf if i == 2 else np.nan
            step(m.tensor(x))
            scales.append(scaler.get_scale())
            weights.append(model.weight.detach().numpy().copy())
        return scales, weights, step

    t_scales, t_weights, _ = run(torch, False)
    e_scales, e_weights, _ = run(ug, False)
    c_scales, c_weights, compiled = run(ug, True)
    assert c_scales == e_scales == t_scales == [4.0, 8.0, 4.0, 4.0, 8.0, 4.0, 4.0]
    for c, e, t in zip(c_weights, e_weights, t_weights):
        np.testing.assert_array_equal(c, e)
        assert_close(e, t, "float32")
    assert compiled.cache_info().traces == 1


def test_grad_scaler_unscale_skip_and_errors():
    w = ug.ones(3, requires_grad=True)
    opt = ug.optim.SGD([w], lr=1.0)
    scaler = ug.amp.GradScaler(init_scale=8.0)
    scaler.scale((w * 2).sum()).backward()
    assert w.grad.tolist() == [16.0, 16.0, 16.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert w.tolist() == [-1.0, -1.0, -1.0]
    with pytest.raises(RuntimeError, match="no inf checks"):
        scaler.update()
    with pytest.raises(RuntimeError, match="closure"):
        scaler.step(opt, lambda: None)
    with pytest.raises(ValueError, match="growth_factor"):
        ug.amp.GradScaler(growth_factor=0.5)
    off = ug.amp.GradScaler(enabled=False)
    assert off.get_scale() == 1.0 and off.state_dict() == {} and not off.is_enabled()


def test_grad_scaler_state_dict_round_trip_and_checkpoint(tmp_path):
    a = ug.amp.GradScaler(init_scale=512.0, growth_interval=7)
    b = ug.amp.GradScaler()
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict() == torch.amp.GradScaler("cpu", init_scale=512.0,
                                                                     growth_interval=7).state_dict()
    model = ug.nn.Linear(2, 2)
    path = str(tmp_path / "ckpt.safetensors")
    ug.train.save_checkpoint(path, model=model, scaler=a, epoch=1)
    c = ug.amp.GradScaler()
    ug.train.load_checkpoint(path, model=model, scaler=c)
    assert c.state_dict() == a.state_dict()
    assert ug.load(path)["scaler"]["scale"] == 512.0


# ---- Keras's policies -------------------------------------------------------------------------------


@pytest.fixture
def policy():
    yield ug.mixed_precision
    ug.mixed_precision.set_global_policy("float32")


def test_policies_match_keras(keras, policy):
    for name in ["mixed_float16", "mixed_bfloat16", "float32", "float16", "bfloat16", "float64"]:
        ours, theirs = ug.keras.mixed_precision.Policy(name), keras.mixed_precision.Policy(name)
        assert (ours.compute_dtype, ours.variable_dtype) == (theirs.compute_dtype, theirs.variable_dtype), name
    with pytest.raises(ValueError, match="unknown policy"):
        ug.mixed_precision.set_global_policy("mixed_float8")


def test_dense_under_a_mixed_policy_matches_keras(keras, policy):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    for name, dtype in [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")]:
        policy.set_global_policy(name)
        keras.mixed_precision.set_global_policy(name)
        ours, theirs = ug.nn.Dense(3, "relu", input_dim=6), keras.layers.Dense(3, activation="relu")
        theirs.build((None, 6))
        theirs.set_weights([ours.weight.detach().numpy().T, ours.bias.detach().numpy()])
        y, expected = ours(ug.tensor(x)), theirs(x)
        assert ours.weight.dtype == ug.float32 and theirs.kernel.dtype == "float32"
        assert repr(y.dtype) == f"unigrad.{dtype}" and expected.dtype.name == dtype
        e = np.asarray(expected, dtype=np.float32)
        ulp = 2.0 ** (-10 if dtype == "float16" else -7)
        assert_close(y.float().numpy(), e, "float32", rtol=4 * ulp, atol=4 * ulp * float(np.abs(e).max()))
    keras.mixed_precision.set_global_policy("float32")


def test_dense_under_a_plain_16_or_64_bit_policy_matches_keras(keras, policy):
    """Before: "float16", "bfloat16" and "float64" were reported by global_policy() but Dense
    kept float32 weights and outputs. Keras builds the weights in the policy's dtype and casts a
    floating input to it."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    try:
        for name, ulp in [("float16", 2.0 ** -10), ("bfloat16", 2.0 ** -7), ("float64", 2.0 ** -52)]:
            policy.set_global_policy(name)
            keras.mixed_precision.set_global_policy(name)
            ours, theirs = ug.keras.layers.Dense(3, activation="relu"), keras.layers.Dense(3, activation="relu")
            y = ours(ug.tensor(x))
            theirs.build((None, 6))
            theirs.set_weights([ours.weight.detach().double().numpy().T, ours.bias.detach().double().numpy()])
            expected = theirs(x)
            assert repr(ours.weight.dtype) == f"unigrad.{name}" == f"unigrad.{theirs.kernel.dtype}"
            assert repr(y.dtype) == f"unigrad.{name}" and expected.dtype.name == name
            e = np.asarray(expected, dtype=np.float64)
            # 6 products and the bias in the policy's dtype, each rounding, in any order
            assert_close(y.double().numpy(), e, "float64", rtol=8 * ulp, atol=8 * ulp * float(np.abs(e).max()))
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _check_keras_dtypes(ours, weight, y, theirs, expected, terms):
    """Our layer's policy, dtype names, weight and output dtypes are Keras's layer's, and its
    output theirs within `terms` roundings of the compute dtype."""
    names = ("compute_dtype", "variable_dtype", "dtype")
    assert ours.dtype_policy.name == theirs.dtype_policy.name
    assert [getattr(ours, a) for a in names] == [getattr(theirs, a) for a in names]
    assert repr(y.dtype) == f"unigrad.{expected.dtype.name}"
    assert weight is None or repr(weight.dtype) == f"unigrad.{theirs.variable_dtype}"
    u = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}
    u = u[expected.dtype.name]
    e = np.asarray(expected, dtype=np.float64)
    assert_close(y.double().numpy(), e, "float64", rtol=terms * u, atol=terms * u * float(np.abs(e).max()))


@pytest.mark.parametrize("global_policy, dtype", [("mixed_float16", "float64"), ("float32", "mixed_bfloat16"),
                                                  ("mixed_bfloat16", None), ("float32", "float16"),
                                                  ("float64", ug.float32)])
def test_dense_dtype_argument_is_its_own_policy_as_keras(keras, policy, global_policy, dtype):
    """Keras's Dense(dtype=...) is the layer's policy, over the global one: Dense(dtype="float64")
    under "mixed_float16" computed in float16 (the global policy's) before. dtype_policy,
    compute_dtype, variable_dtype and dtype are Keras's; so are the outputs."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    try:
        policy.set_global_policy(global_policy)
        keras.mixed_precision.set_global_policy(global_policy)
        keras_dtype = "float32" if dtype is ug.float32 else dtype
        ours, theirs = ug.keras.layers.Dense(3, dtype=dtype), keras.layers.Dense(3, dtype=keras_dtype)
        y = ours(ug.tensor(x))
        theirs.build((None, 6))
        theirs.set_weights([ours.weight.detach().double().numpy().T, ours.bias.detach().double().numpy()])
        # 6 products and the bias in the compute dtype, each rounding, in any order
        _check_keras_dtypes(ours, ours.weight, y, theirs, theirs(x), terms=8)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_weights_and_variables_are_keras_lists(keras):
    """layer.weights / variables: the trainable ones, then the others (BatchNormalization's
    moving statistics), as Keras lists them; trainable_weights and non_trainable_weights too."""
    ours, theirs = ug.keras.layers.BatchNormalization(), keras.layers.BatchNormalization()
    ours(ug.ones(2, 3)), theirs(np.ones((2, 3), np.float32))
    for a in ("weights", "variables", "trainable_weights", "non_trainable_weights", "trainable_variables",
              "non_trainable_variables"):
        assert [tuple(w.shape) for w in getattr(ours, a)] == [tuple(w.shape) for w in getattr(theirs, a)], a
    model = ug.keras.Sequential([ug.keras.Input((4,)), ug.keras.layers.Dense(3), ug.keras.layers.BatchNormalization()])
    reference = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()])
    assert [type(m).__name__ for m in model.layers] == [type(m).__name__ for m in reference.layers]
    frozen = model.layers[0].bias
    frozen.requires_grad_(False)
    assert [w.data_ptr() for w in model.non_trainable_weights][0] == frozen.data_ptr()
    assert len(model.weights) == len(model.trainable_weights) + len(model.non_trainable_weights) == 6


def test_conv_under_a_mixed_policy_matches_keras(keras, policy):
    """Keras's rule for every layer with weights, conv layers as Dense: built under a mixed
    policy, float32 weights and the product in the 16-bit dtype (Keras's Conv2D on the same
    weights, channels last: TensorFlow's CPU convolution takes no other layout)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 3, 7, 7)).astype(np.float32)
    for name, dtype in [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")]:
        policy.set_global_policy(name)
        keras.mixed_precision.set_global_policy(name)
        ours = ug.nn.Conv2d(3, 4, 3, padding="same")
        theirs = keras.layers.Conv2D(4, 3, padding="same")
        theirs.build((None, 7, 7, 3))
        theirs.set_weights([ours.weight.detach().numpy().transpose(2, 3, 1, 0), ours.bias.detach().numpy()])
        y, expected = ours(ug.tensor(x)), theirs(x.transpose(0, 2, 3, 1))
        assert ours.weight.dtype == ug.float32 and repr(y.dtype) == f"unigrad.{dtype}"
        assert expected.dtype.name == dtype
        e = np.asarray(expected, dtype=np.float32).transpose(0, 3, 1, 2)
        # 27 products of 16-bit operands summed in float32, then rounded to the 16-bit dtype.
        ulp = 2.0 ** (-10 if dtype == "float16" else -7)
        assert_close(y.float().numpy(), e, "float32", rtol=4 * ulp, atol=4 * ulp * float(np.abs(e).max()))
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("global_policy, dtype", [("float32", "float64"), ("float16", None), ("bfloat16", None),
                                                  ("mixed_float16", "float64"), ("float32", "mixed_bfloat16")])
def test_keras_conv_takes_its_policy_as_keras(keras, policy, global_policy, dtype):
    """Keras's Conv2D under a plain 16- or 64-bit policy, or with its own dtype=: weights and
    outputs in that dtype, the input cast to it (they kept float32 weights before, and took no
    dtype=). Against Keras's Conv2D on the same weights, channels last."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (2, 7, 7, 3)).astype(np.float32)
    try:
        policy.set_global_policy(global_policy)
        keras.mixed_precision.set_global_policy(global_policy)
        ours = ug.keras.layers.Conv2D(4, 3, padding="same", dtype=dtype)
        theirs = keras.layers.Conv2D(4, 3, padding="same", dtype=dtype)
        y = ours(ug.tensor(x))
        theirs.build((None, 7, 7, 3))
        theirs.set_weights([ours.kernel.detach().double().numpy(), ours.bias.detach().double().numpy()])
        # 27 products and the bias in the compute dtype (16-bit ones summed in float32), each rounding
        _check_keras_dtypes(ours, ours.kernel, y, theirs, theirs(x), terms=16)
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("global_policy, dtype", [("mixed_float16", None), ("mixed_bfloat16", None),
                                                  ("bfloat16", None), ("float32", "float64"),
                                                  ("mixed_float16", "float32"), ("float32", "mixed_float16")])
def test_batch_normalization_and_activation_take_their_policy_as_keras(keras, policy, global_policy, dtype):
    """Keras's BatchNormalization and Activation under a policy or with their own dtype=: the
    input cast to the compute dtype, a 16-bit one normalized in float32, the moving statistics in
    the variable dtype (both ignored every policy before, and took no dtype=)."""
    x = (3 + 2 * np.random.default_rng(3).standard_normal((8, 5))).astype(np.float32)
    try:
        policy.set_global_policy(global_policy)
        keras.mixed_precision.set_global_policy(global_policy)
        for make in (lambda layers: layers.BatchNormalization(dtype=dtype),
                     lambda layers: layers.Activation("tanh", dtype=dtype)):
            ours, theirs = make(ug.keras.layers), make(keras.layers)
            y = ours.train()(ug.tensor(x))
            expected = theirs(x, training=True)
            # Both round the input to the compute dtype, work in float32 or wider (Keras's order
            # and ours differ by a few float32 ulps) and round the output once.
            _check_keras_dtypes(ours, next(iter(ours.parameters()), None), y, theirs, expected, terms=2)
            for ours_stat, their_stat in zip(ours.buffers(), theirs.non_trainable_weights):
                assert repr(ours_stat.dtype) == f"unigrad.{their_stat.dtype}"
                np.testing.assert_allclose(ours_stat.double().numpy(), np.asarray(their_stat, np.float64), rtol=1e-2)
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("make, shape", [
    (lambda: ug.nn.Linear(6, 3), (4, 6)),
    (lambda: ug.nn.Conv1d(3, 4, 3), (2, 3, 9)),
    (lambda: ug.nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    (lambda: ug.nn.ConvTranspose2d(3, 2, 3, stride=2), (2, 3, 5, 5)),
])
def test_layers_with_weights_take_the_policy_they_are_built_under(policy, make, shape):
    """The output is what autocast gives the same layer built under float32, bit for bit; the
    gradients come back in float32; a layer built before the policy changed keeps its own."""
    ug.manual_seed(0)
    x = ug.randn(*shape)
    plain = make()
    policy.set_global_policy("mixed_bfloat16")
    mixed = make()
    mixed.load_state_dict(plain.state_dict())
    y = mixed(x)
    with ug.autocast("cpu", dtype=ug.bfloat16):
        expected = plain(x)
    assert y.dtype == ug.bfloat16 and plain(x).dtype == ug.float32
    np.testing.assert_array_equal(y.float().numpy(), expected.float().numpy())
    y.float().sum().backward()
    assert mixed.weight.dtype == mixed.weight.grad.dtype == ug.float32
    policy.set_global_policy("float32")
    assert mixed(x).dtype == ug.bfloat16 and make()(x).dtype == ug.float32


def test_fit_under_mixed_float16_scales_the_loss(policy):
    policy.set_global_policy("mixed_float16")
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Dense(16, "relu", input_dim=8), ug.nn.Dense(3))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = ug.randn(64, 8)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    history = model.fit(x, y, epochs=8, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] and all(np.isfinite(losses))
    assert model.loss_scaler.get_scale() == 32768.0  # Keras's initial scale, no overflow yet
    assert model.predict(x).dtype == ug.float16


@pytest.mark.parametrize("accumulate", [1, 2])
def test_fit_under_mixed_float16_compiles_the_scaled_step_once(policy, capfd, accumulate):
    """jit_compile=True with the loss scaled: the scale's update is part of the one program, or,
    where gradients accumulate and the optimizer steps outside it, the program reads the scale
    live; either way no retrace when it changes, and the compiled fit holds what eager fit holds,
    overflowing steps included (targets of 1e3 overflow float16's gradients at the initial scale
    32768)."""
    policy.set_global_policy("mixed_float16")
    x = ug.randn(96, 8, generator=ug.Generator().manual_seed(1))
    y = ug.randn(96, 2, generator=ug.Generator().manual_seed(2)) * 1e3
    models = []
    for jit in (False, True):
        ug.manual_seed(0)
        model = ug.nn.Sequential(ug.nn.Dense(16, "relu", input_dim=8), ug.nn.Dense(2))
        model.compile(optimizer="adam", loss="mse", jit_compile=jit, gradient_accumulation_steps=accumulate)
        model.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0)
        models.append(model)
    eager, compiled = models
    assert "[jit]" not in capfd.readouterr().err
    assert compiled.loss_scaler.get_scale() == eager.loss_scaler.get_scale() < 32768.0
    for a, b in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_a_compiled_function_keeps_a_program_per_autocast_region():
    """Before: a function first compiled inside a bfloat16 region ran its casts at every later
    call outside it (and one first compiled outside ran uncast inside)."""
    w, x = ug.randn(4, 4), ug.randn(2, 4)
    for first_inside in (True, False):
        f = ug.jit(lambda a: a @ w)
        calls = [True, False, True] if first_inside else [False, True, False]
        for inside in calls:
            with ug.autocast("cpu", dtype=ug.bfloat16, enabled=inside):
                got, expected = f(x), x @ w
            assert got.dtype == expected.dtype == (ug.bfloat16 if inside else ug.float32)
            np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
        assert f.cache_info().traces == 2
    with ug.autocast("cpu", dtype=ug.float16):
        assert ug.jit(lambda a: a @ w)(x).dtype == ug.float16


def test_a_grad_scaler_copies_and_pickles_as_torchs():
    import copy
    import pickle

    ours = ug.amp.GradScaler(init_scale=8.0, growth_interval=3, backoff_factor=0.25)
    theirs = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3, backoff_factor=0.25)
    for copied, twin in ((copy.copy(ours), copy.copy(theirs)), (copy.deepcopy(ours), copy.deepcopy(theirs)),
                         (pickle.loads(pickle.dumps(ours)), pickle.loads(pickle.dumps(theirs)))):
        assert copied.state_dict() == {k: (v.item() if hasattr(v, "item") else v) for k, v in twin.state_dict().items()}
        assert copied.is_enabled() == twin.is_enabled()
    assert not copy.deepcopy(ug.amp.GradScaler(enabled=False)).is_enabled()


def test_a_grad_scaler_refuses_steps_it_cannot_check_as_torchs():
    """Before: a step before any scale(), or with no gradient to check, passed silently."""
    for framework in (torch, ug):
        model = framework.nn.Linear(2, 2)
        opt = framework.optim.SGD(model.parameters(), 0.1)
        scaler = torch.amp.GradScaler("cpu") if framework is torch else ug.amp.GradScaler()
        with pytest.raises(AssertionError, match="scale"):
            scaler.step(opt)
        scaler.scale(model(framework.ones(1, 2)).sum())
        with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
            scaler.step(opt)
        scaler = torch.amp.GradScaler("cpu") if framework is torch else ug.amp.GradScaler()
        scaler.scale(model(framework.ones(1, 2)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 65536.0
    assert ug.amp.GradScaler(enabled=False).step(ug.optim.SGD(ug.nn.Linear(2, 2).parameters(), 0.1)) is None


def test_grad_scaler_scales_what_torchs_scales():
    """A generator of losses gives a map; a number raises torch's ValueError (before: a binding's
    signature error)."""
    for framework, scaler in ((torch, torch.amp.GradScaler("cpu")), (ug, ug.amp.GradScaler())):
        losses = (framework.ones(()) * k for k in (1.0, 2.0))
        scaled = scaler.scale(losses)
        assert isinstance(scaled, map) and [float(t) for t in scaled] == [65536.0, 131072.0]
        assert [float(t) for t in scaler.scale((framework.ones(()), [framework.ones(())]))[1]] == [65536.0]
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
            scaler.scale(3.0)


@pytest.mark.parametrize("built, compiled", [("mixed_float16", "float32"), ("float32", "mixed_float16"),
                                             ("mixed_float16", "mixed_float16")])
def test_compile_follows_the_policy_the_model_was_built_under_as_keras(keras, policy, built, compiled):
    """Keras's model.dtype_policy is the policy when the model was built: compile wraps the
    optimizer in a LossScaleOptimizer for a model built under mixed_float16, whatever the policy
    at compile time. Before: the policy at compile time decided."""
    try:
        for set_policy in (policy.set_global_policy, keras.mixed_precision.set_global_policy):
            set_policy(built)
        ours = ug.keras.Sequential([ug.keras.Input((3,)), ug.keras.layers.Dense(4)])
        theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)])
        for set_policy in (policy.set_global_policy, keras.mixed_precision.set_global_policy):
            set_policy(compiled)
        ours.compile(optimizer="sgd", loss="mse")
        theirs.compile(optimizer="sgd", loss="mse")
        assert (ours.loss_scaler is not None) == (type(theirs.optimizer).__name__ == "LossScaleOptimizer")
        x = np.ones((2, 3), np.float32)
        assert repr(ours.predict(x, verbose=0).dtype) == f"unigrad.{theirs.predict(x, verbose=0).dtype}"
    finally:
        keras.mixed_precision.set_global_policy("float32")
