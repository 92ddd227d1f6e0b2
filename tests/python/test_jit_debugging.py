"""The compiled mode's debugging and inspection tools, against the frameworks that name them:
jax.disable_jit and tf.config.run_functions_eagerly (jitted functions run their Python body),
tf.function's experimental_get_tracing_count, jax.eval_shape / ShapeDtypeStruct (checked against
JAX 0.10.2 on the same functions) and jax.block_until_ready."""
import inspect
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import unigrad as ug


def counting(fn):
    """fn jitted, with a count of the calls that ran its Python body."""
    calls = [0]

    @ug.jit
    def jitted(*args):
        calls[0] += 1
        return fn(*args)
    return jitted, calls


def test_disable_jit_runs_the_python_body_at_every_call_and_traces_nothing():
    f, calls = counting(lambda x: x * 2 if x.sum().item() > 0 else x * 3)  # data-dependent: eager only
    with ug.disable_jit():
        assert ug.equal(f(ug.ones(3)), ug.full((3,), 2.0))
        assert ug.equal(f(-ug.ones(3)), ug.full((3,), -3.0))
    assert calls[0] == 2 and f.cache_info().traces == 0
    with pytest.raises(TypeError, match="ug.cond"):  # compiled again outside
        f(ug.ones(3))


def test_disable_jit_nests_decorates_and_is_per_thread():
    f, calls = counting(lambda x: x + 1)
    f(ug.ones(2))
    assert calls[0] == 1 and f.cache_info().traces == 1

    @ug.disable_jit()
    def debug():
        f(ug.ones(2))
        with ug.disable_jit(False):  # compiled inside
            f(ug.ones(2))
        f(ug.ones(2))
    debug()
    assert calls[0] == 3 and f.cache_info().hits == 1
    seen = []
    with ug.disable_jit():
        thread = threading.Thread(target=lambda: seen.append(f(ug.ones(2))))
        thread.start()
        thread.join()
    assert calls[0] == 3 and f.cache_info().hits == 2  # the other thread still ran the program
    assert ug.equal(seen[0], ug.full((2,), 2.0))


def test_run_functions_eagerly_covers_function_jit_and_compile():
    f, calls = counting(lambda x: x - 1)
    g = ug.function(lambda x: x * 5)
    model = ug.nn.Linear(3, 2)
    compiled = ug.compile(model)
    x = ug.randn(4, 3)
    eager_out = model(x)
    assert not ug.config.functions_run_eagerly()
    ug.config.run_functions_eagerly(True)
    try:
        assert ug.config.functions_run_eagerly()
        f(ug.ones(2))
        f(ug.ones(2))
        assert ug.equal(g(ug.ones(2)), ug.full((2,), 5.0))
        assert ug.equal(compiled(x), eager_out)
        assert calls[0] == 2
        with ug.disable_jit(False):
            f(ug.ones(2))
        assert calls[0] == 3
    finally:
        ug.config.run_functions_eagerly(False)
    assert (f.cache_info().traces, g.experimental_get_tracing_count(), compiled.cache_info().traces) == (1, 0, 0)
    f(ug.ones(2))
    assert calls[0] == 3  # the program traced under disable_jit(False) runs


def test_experimental_get_tracing_count_counts_traces_as_tensorflow():
    # tf.function's own figures for this sequence: a trace per new shape, none for a repeat.
    g = ug.function(lambda x: x + 1)
    counts = []
    for shape in [(2,), (2,), (3,), (2,), (3, 1)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ug.compiled.RetraceWarning)  # the third trace warns
            g(ug.ones(*shape))
        counts.append(g.experimental_get_tracing_count())
    assert counts == [1, 1, 2, 2, 3]
    signed = ug.function(lambda x: x * 2, input_signature=[ug.TensorSpec([None], ug.float32)])
    signed(ug.ones(2))
    assert signed.experimental_get_tracing_count() == 1


def test_eval_shape_matches_jax():
    def ug_fn(x, w, scale):
        h = (x @ w).relu()
        return {"h": h * scale, "pooled": h.mean(0), "argmax": h.argmax(1), "pair": (h.t(), x.sum())}

    def jax_fn(x, w, scale):
        h = jax.nn.relu(x @ w)
        return {"h": h * scale, "pooled": h.mean(0), "argmax": h.argmax(1), "pair": (h.T, x.sum())}

    got = ug.eval_shape(ug_fn, ug.ShapeDtypeStruct((8, 5), ug.float32), ug.randn(5, 3), 2.0)
    want = jax.eval_shape(jax_fn, jax.ShapeDtypeStruct((8, 5), jnp.float32), jnp.ones((5, 3)), 2.0)
    assert sorted(got) == sorted(want)
    for key in want:  # JAX orders a dict's leaves by key, unigrad as inserted: compared key by key
        got_leaves, want_leaves = ug.tree_util.tree_leaves(got[key]), jax.tree_util.tree_leaves(want[key])
        assert len(got_leaves) == len(want_leaves), key
        for g, w in zip(got_leaves, want_leaves):
            if isinstance(w, jax.ShapeDtypeStruct):
                # JAX's default integer is int32 (without x64); unigrad's is torch's int64.
                want_dtype = "int64" if w.dtype == jnp.int32 else str(w.dtype)
                assert (g.shape, str(g.dtype).removeprefix("unigrad.")) == (tuple(w.shape), want_dtype), key
    assert got["h"] == ug.ShapeDtypeStruct((8, 3), ug.float32) and got["h"].ndim == 2 and got["h"].size == 24
    assert repr(got["pooled"]) == "ShapeDtypeStruct(shape=(3,), dtype=float32)"
    assert got["pair"][1].shape == ()
    # A result that is not a tensor stays as it is (as ug.jit returns it; JAX makes it an array).
    assert ug.eval_shape(lambda x: (x, 7, "tag"), ug.ShapeDtypeStruct((1,), ug.int64))[1:] == (7, "tag")


def test_eval_shape_needs_no_values_and_raises_where_jit_would():
    spec = ug.ShapeDtypeStruct((2, 3), ug.bfloat16)
    assert ug.eval_shape(lambda x: x.to(ug.float32).exp(), spec) == ug.ShapeDtypeStruct((2, 3), ug.float32)
    with pytest.raises(TypeError, match="ug.cond"):
        ug.eval_shape(lambda x: x if x.sum() > 0 else -x, spec)


def test_block_until_ready_returns_its_argument():
    tree = {"a": ug.ones(2), "b": [np.float32(1), ug.zeros(1)]}
    assert ug.block_until_ready(tree) is tree


def test_a_lowered_program_reads_as_text_with_the_lines_that_traced_it():
    @ug.jit
    def f(x, w):
        h = (x @ w).relu()  # line A
        return ((h * 2 + 1).exp() - 1).sum(1)  # line B

    program = f.lower(ug.randn(3, 4), ug.randn(4, 5))
    text = program.as_text().splitlines()
    source, first = inspect.getsourcelines(f.__wrapped__)
    line_a = first + next(i for i, line in enumerate(source) if line.endswith("# line A\n"))
    assert text[0] == "graph(%input_0: float32[3, 4], %input_1: float32[4, 5]) {" and text[-1] == "}"
    assert "constant float32[] [2]" in "\n".join(text)  # small constants show their values
    matmul = next(t for t in text if "= MatMul(%input_0, %input_1)" in t)
    assert matmul.endswith(f"test_jit_debugging.py:{line_a} in f: h = (x @ w).relu()  # line A")
    assert [t.split(" = ")[1].split("(")[0].split("[")[0] for t in text if " = " in t and "constant" not in t] == [
        "MatMul", "Relu", "Mul", "Add", "Exp", "Sub", "ReduceSum"]
    assert text[-2].startswith("  return %")
    run = program.as_text(as_run=True)
    assert 'UgReplay[index=0, op="fused"]' in run and "Exp(" not in run  # the chain and its sum: one group


def test_a_program_keeps_no_constant_that_nothing_reads():
    # (x + 1) * (x + 1): the second `+ 1` merges into the first, and its constant goes with it
    text = ug.jit(lambda x: (x + 1) * (x + 1) + 2).lower(ug.ones(3)).as_text()
    constants = [line.split(" = ")[0].strip() for line in text.splitlines() if " = constant" in line]
    assert len(constants) == 2
    for name in constants:
        assert f"{name})" in text or f"{name}," in text, f"{name} is read by no node:\n{text}"


def test_clear_caches_and_is_compiling():
    f, calls = counting(lambda x: x + 1)
    model = ug.compile(ug.nn.Linear(2, 2))
    seen = []

    @ug.function
    def g(x):
        seen.append(ug.compiler.is_compiling())
        return x * 2

    f(ug.ones(2))
    model(ug.ones(1, 2))
    g(ug.ones(2))
    g(ug.ones(2))
    assert seen == [True] and not ug.compiler.is_compiling()
    with ug.disable_jit():
        g(ug.ones(2))
    assert seen == [True, False]
    ug.clear_caches()  # jax.clear_caches; torch.compiler.reset is the same
    assert (f.cache_info().size, model.cache_info().size, g.cache_info().size) == (0, 0, 0)
    f(ug.ones(2))
    g(ug.ones(2))
    assert calls[0] == 2 and seen == [True, False, True]  # traced again
    ug.compiler.reset()
    assert f.cache_info().size == 0


def test_debug_callback_runs_at_every_call_with_that_calls_values():
    seen = []

    @ug.jit
    def f(x, scale):
        y = x * scale
        ug.debug.callback(lambda total, pair, tag="": seen.append((total.item(), pair[1].tolist(), tag)),
                          y.sum(), (2, y[:2]), tag="step")
        return y

    f(ug.ones(3), 2.0)
    f(ug.full((3,), 2.0), 2.0)
    # Traced at the first call, where the callback waits for the program, which calls back at both runs.
    assert seen == [(6.0, [2.0, 2.0], "step"), (12.0, [4.0, 4.0], "step")]
    assert f.cache_info().traces == 1
