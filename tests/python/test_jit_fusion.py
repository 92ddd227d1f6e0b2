"""Fused elementwise chains in compiled programs (docs/design.md, "Fused elementwise chains";
src/ug/compiler/fuse.cpp): a chain of elementwise nodes, with a trailing reduction, runs the
same kernels block by block. Elementwise results are therefore the eager ones bit for bit; a
reduction over the blocked dim sums per block, then the blocks' sums, so it differs from eager
by what two summation orders of n terms may (K·n·eps·Σ|terms|). A group whose output is under
8 blocks runs whole (the unfused computation); the tests compile with blocks of 4096 elements
(UG_JIT_FUSE_BLOCK, read at compile time), so the inputs here, over 32768 elements, run in
blocks, unless a test says otherwise."""
import numpy as np
import pytest

import unigrad as ug
from reference import K

BLOCK = 4096


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setenv("UG_JIT_FUSE_BLOCK", str(BLOCK))

def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def close_sum(actual, expected, n, terms, dtype):
    """|actual - expected| <= K·n·eps·Σ|terms| elementwise (terms: the sums of magnitudes)."""
    eps = np.finfo(dtype).eps
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    bound = K * n * eps * np.asarray(terms, np.float64)
    assert a.shape == e.shape
    assert np.all(np.abs(a - e) <= bound), f"max excess {np.max(np.abs(a - e) - bound)}"


def stats(fn, *args):
    return ug.jit(fn).lower(*args).optimizer_stats()


def arithmetic(x, a, b):
    return (((x * a + b).relu() * 0.5 - b).abs() / (a.abs() + 1.0)).maximum(x)


def gelu(x):
    return 0.5 * x * (1.0 + ((x + 0.044715 * x * x * x) * 0.7978845608).tanh())


def within_ulps(got, want, scale, dtype):
    """|got - want| <= 4·eps·scale: a transcendental kernel's vector loop and its scalar tail
    differ in the last bit, and where a tail falls depends on the split of the work (eager's
    split over threads, a program's blocks), so eager itself differs by this across thread
    counts."""
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(np.asarray(got, np.float64) - want) <= 4 * eps * np.asarray(scale, np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1000003,), (333, 517), (1, 70001), (3, 1, 40000)])
def test_an_elementwise_chain_is_fused_and_equals_eager(dtype, shape):
    x = ug.randn(*shape, dtype=dtype)
    a = ug.randn(shape[-1], dtype=dtype)  # broadcast along the blocked dim
    b = ug.randn(*shape[:-1], 1, dtype=dtype)  # sliced with the blocks
    same(ug.jit(arithmetic)(x, a, b).numpy(), arithmetic(x, a, b).numpy())  # exact arithmetic: bit for bit
    want = gelu(x).numpy()
    within_ulps(ug.jit(gelu)(x).numpy(), want, np.abs(want) + np.abs(x.numpy()), dtype)
    s = stats(arithmetic, x, a, b)
    assert (s["fused"], s["fused_groups"]) == (10, 1)
    assert stats(gelu, x)["fused_groups"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_chain_with_a_sum_over_all_elements(dtype):
    x = ug.randn(1000, 301, dtype=dtype)
    a = ug.randn(301, dtype=dtype)

    def f(x, a):
        return ((x * a).relu() + 1.0).log().sum()

    got, want = ug.jit(f)(x, a).numpy(), f(x, a).numpy()
    terms = ((x * a).relu() + 1.0).log().numpy().astype(np.float64).sum()  # all terms >= 0
    close_sum(got, want, x.numel(), terms, np.dtype(dtype))
    assert stats(f, x, a)["fused"] == 5


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_a_reduction_over_the_last_axis_is_the_eager_one(reduce):
    x = ug.randn(4097, 33)

    def f(x):
        return getattr((x.tanh() * x - 0.25).abs(), reduce)(-1)

    same(ug.jit(f)(x).numpy(), f(x).numpy())  # whole rows per block: the same sums
    assert stats(f, x)["fused"] == 5


@pytest.mark.parametrize("reduce", ["mean", "amax", "amin"])
def test_a_mean_or_max_over_all_elements(reduce):
    x = ug.randn(77777)

    def f(x):
        return getattr((x * x + 0.5).sqrt(), reduce)()

    got, want = ug.jit(f)(x).numpy(), f(x).numpy()
    if reduce == "mean":
        terms = (x * x + 0.5).sqrt().numpy().astype(np.float64).mean()
        close_sum(got, want, x.numel(), terms, np.float32)
    else:
        same(got, want)  # the max of the blocks' maxima


def test_an_intermediate_read_elsewhere_is_not_fused_away():
    x = ug.randn(100000)

    def f(x):
        y = x.exp()  # an output, and read by the chain
        z = y * 2.0 - 1.0
        return y, z.relu().sum(), (z * z).sum()  # z read twice: it stays a value

    got, want = ug.jit(f)(x), f(x)
    same(got[0].numpy(), want[0].numpy())
    n = x.numel()
    close_sum(got[1].numpy(), want[1].numpy(), n, (x.exp() * 2.0 - 1.0).relu().numpy().sum(), np.float32)
    close_sum(got[2].numpy(), want[2].numpy(), n, ((x.exp() * 2.0 - 1.0) ** 2).numpy().sum(), np.float32)
    s = stats(f, x)
    # Mul and Sub into z; Relu and ReduceSum; Mul and ReduceSum. Exp stays: it is an output.
    assert (s["fused"], s["fused_groups"]) == (6, 3)


@pytest.mark.parametrize("shape", [(0,), (0, 5), (1,), (), (5, 1)])
def test_empty_and_one_element_inputs(shape):
    x = ug.randn(*shape)

    def f(x):
        return (x.sigmoid() * x + 2.0).sum(), (x - 1.0).abs().exp()

    got, want = ug.jit(f)(x), f(x)
    same(got[0].numpy(), want[0].numpy())
    same(got[1].numpy(), want[1].numpy())


def test_gradients_of_a_compiled_gradient_function():
    x = ug.randn(300, 257, dtype="float64")
    a = ug.randn(257, dtype="float64")

    def loss(x, a):
        return (((x * a).tanh() + 1.0) * x).sum()

    grad = ug.grad(loss, argnums=(0, 1))
    got, want = ug.jit(grad)(x, a), grad(x, a)
    assert stats(grad, x, a)["fused"] > 0
    # d/dx = tanh(xa) + 1 + xa·(1 - tanh²(xa)) is elementwise; d/da sums 300 terms per element.
    xa = np.abs(x.numpy() * a.numpy())
    within_ulps(got[0].numpy(), want[0].numpy(), 2 + 2 * xa, "float64")
    terms = np.abs(x.numpy()).sum(0) * 3
    close_sum(got[1].numpy(), want[1].numpy(), 300, terms, np.float64)


def test_recording_autograd_runs_the_unfused_graph():
    x = ug.randn(50000, requires_grad=True)

    def f(x):
        return ((x * 3.0).relu() + 1.0).log().sum()

    y = ug.jit(f)(x)
    y.backward()
    x2 = x.detach().requires_grad_()
    f(x2).backward()
    same(x.grad.numpy(), x2.grad.numpy())


def test_forward_mode_and_vmap_through_a_fused_program():
    x, t = ug.randn(40000), ug.randn(40000)

    def f(x):
        return (x.sin() * x + 1.0).exp()

    got = ug.jvp(ug.jit(f), (x,), (t,))
    want = ug.jvp(f, (x,), (t,))
    same(got[0].numpy(), want[0].numpy())
    same(got[1].numpy(), want[1].numpy())
    xs = ug.randn(3, 40000)
    same(ug.vmap(ug.jit(f))(xs).numpy(), ug.vmap(f)(xs).numpy())


def test_the_saved_program_is_the_unfused_graph(tmp_path):
    x = ug.randn(70000)

    def f(x):
        return (x.exp() * 2.0).sum()

    program = ug.jit(f).lower(x)
    assert program.optimizer_stats()["fused"] == 3
    assert "UgReplay" not in program.node_types()
    path = str(tmp_path / "f.onnx")
    program.save(path)
    loaded = ug.onnx.load(path)
    close_sum(loaded(x).numpy(), f(x).numpy(), x.numel(), (x.exp() * 2.0).numpy().sum(), np.float32)


def test_a_long_chain_never_materialises_its_intermediates():
    n = 1 << 22  # 16 MiB of float32
    x = ug.randn(n)
    a, b = ug.randn(n), ug.randn(n)

    def f(x, a, b):
        return (((x * a + b).relu() * a - b).exp() * 0.5).sum()

    jitted = ug.jit(f)
    jitted(x, a, b)  # traced
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    got = jitted(x, a, b)
    peak = ug.memory.max_allocated() - before
    # Unfused, the first product alone takes 4n bytes; fused, a few blocks per thread and the
    # partial sums.
    assert peak < 4 * n // 4, peak
    terms = (((x * a + b).relu() * a - b).exp() * 0.5).numpy().astype(np.float64).sum()
    close_sum(got.numpy(), f(x, a, b).numpy(), n, terms, np.float32)


def test_a_group_never_reads_a_value_made_after_its_first_node():
    # isclose: |a - b| <= atol + rtol·|b| and isfinite(|a - b|), or a == b: the And's two
    # operand chains cannot be one group (the second starts after the first's inputs exist,
    # but reads IsNaN/IsInf, made later), while the Or may join the Equal made first.
    a = ug.randn(100000)
    b = a + ug.randn(100000) * 1e-6
    same(ug.jit(ug.isclose)(a, b).numpy(), ug.isclose(a, b).numpy())
    assert stats(ug.isclose, a, b)["fused_groups"] >= 2


def binary_chain(x, a):
    return ((x * a + 1.0) * 0.5 - a) / 3.0


def peak_of(fn, *args):
    """Bytes allocated at the peak of fn(*args) beyond what was allocated before, and its result."""
    before = ug.memory.allocated()
    ug.memory.reset_peak()
    out = fn(*args)
    return ug.memory.max_allocated() - before, out


def test_a_small_group_runs_whole_writing_into_an_input_it_holds_alone():
    # Under 8 blocks the group is the unfused computation: each binary node writes into its
    # dying operand, here the donated x, so the run allocates nothing.
    n = 5 * BLOCK
    x, a = ug.randn(n), ug.randn(n)
    want = binary_chain(x, a).numpy()
    step = ug.jit(binary_chain, donate_argnums=0)
    step(x.clone(), a)  # traced
    assert step.lower(x, a).optimizer_stats()["fused_groups"] == 1
    peak, got = peak_of(step, x.clone(), a)
    same(got.numpy(), want)
    assert peak == 0, peak


def test_a_blocked_group_puts_its_result_into_an_input_it_holds_alone():
    # Over 8 blocks: the blocks' results go into the donated x's rows (each after its block read
    # them), so the run allocates only a few blocks' intermediates per thread, not a 4n-byte
    # output.
    n = 50 * BLOCK + 7
    x, a = ug.randn(n), ug.randn(n)
    want = binary_chain(x, a).numpy()
    step = ug.jit(binary_chain, donate_argnums=0)
    step(x.clone(), a)
    peak, got = peak_of(step, x.clone(), a)
    same(got.numpy(), want)
    assert 0 < peak <= 2 * ug.get_num_threads() * 4 * BLOCK * 4, peak  # <= 2 blocks' 4 values per thread


def test_a_group_writes_into_a_product_it_reads_last(monkeypatch):
    # The product y dies at the group: its buffer takes the group's result. Unfused in place
    # or fused into y, the peak is y's 4n bytes (a size class over it: at most 25% more) and
    # the blocks'; a fresh output would add 4n.
    n = 50 * BLOCK

    def f(x, w):
        return ((x @ w) * 2.0 + 1.0) * 0.5 - 3.0

    x, w = ug.randn(n // 64, 64), ug.randn(64, 64)
    want = f(x, w).numpy()
    for block in (BLOCK, 1 << 30):  # blocked, and whole (one block would hold it all)
        monkeypatch.setenv("UG_JIT_FUSE_BLOCK", str(block))
        step = ug.jit(f)
        step(x, w)
        peak, got = peak_of(step, x, w)
        same(got.numpy(), want)
        assert peak <= 5 * n + 2 * ug.get_num_threads() * 3 * BLOCK * 4, (block, peak)


@pytest.mark.parametrize("n", [5 * BLOCK, 50 * BLOCK])
def test_a_group_never_writes_into_an_input_the_caller_holds(n):
    x, a = ug.randn(n), ug.randn(n)
    x0, a0 = x.numpy().copy(), a.numpy().copy()
    got = ug.jit(binary_chain)(x, a)
    same(got.numpy(), binary_chain(x, a).numpy())
    same(x.numpy(), x0)
    same(a.numpy(), a0)
