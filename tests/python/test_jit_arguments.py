"""What ug.jit / ug.function take as arguments and give back, against jax.jit and tf.function:
NumPy arrays as tensor arguments, input_signature's None dims, reduce_retracing's sizes, static
argument checks, donated tensors, and functions that return no tensor."""
import os
import warnings

import numpy as np
import pytest

import unigrad as ug

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")


@pytest.fixture
def retraces():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ug.compiled.RetraceWarning)
        yield


# ---- NumPy arguments: tensors, as jax.jit and tf.function convert them ------------------------


def test_numpy_array_arguments_are_tensor_arguments_as_in_jax():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    f = ug.jit(lambda x, w: x @ w)
    expected = np.asarray(jax.jit(lambda x, w: x @ w)(x, w))
    np.testing.assert_allclose(f(ug.tensor(x), w).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(f(x, w).numpy(), expected, rtol=1e-6)
    # a fresh array of the same dtype and shape is the same signature: no trace per array
    np.testing.assert_allclose(f(x.copy(), w.copy()).numpy(), expected, rtol=1e-6)
    assert f.cache_info().traces == 1


def test_numpy_scalars_are_traced_not_static():
    f = ug.jit(lambda x, s: x * s)
    x = np.ones(3, np.float32)
    for s in (2, 3, 4):
        got = f(x, np.float32(s))
        np.testing.assert_array_equal(got.numpy(), np.asarray(jax.jit(lambda x, s: x * s)(x, np.float32(s))))
    assert f.cache_info().traces == 1
    assert f(x, np.float32(5)).dtype == ug.float32


def test_numpy_arguments_take_ug_tensors_dtypes_and_are_read_at_every_call(retraces):
    f = ug.jit(lambda x: x * 2)
    a = np.ones(3, np.float32)
    f(a)
    a[0] = 7  # a copy is taken at each call: the program sees the new values
    assert f(a).tolist() == [14.0, 2.0, 2.0]
    assert f(np.ones(2)).dtype == ug.float64  # as ug.tensor(np.ones(2)); JAX (without x64) gives float32
    assert f(np.arange(3)).dtype == ug.int64
    reversed_view = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1]
    assert f(reversed_view).tolist() == (reversed_view * 2).tolist()


def test_numpy_leaves_inside_trees_and_keyword_arguments():
    f = ug.jit(lambda p, *, b: p["w"] * p["s"] + b)
    out = f({"w": np.full(2, 3, np.float32), "s": np.float32(2)}, b=np.ones(2, np.float32))
    assert out.tolist() == [7.0, 7.0]


def test_ug_function_converts_numpy_arrays_as_tf_function():
    @ug.function
    def double(x):
        return x * 2

    assert double(np.ones(2, np.float32)).tolist() == [2.0, 2.0]

    @ug.function(input_signature=[ug.TensorSpec((None, 3), ug.float32)])
    def g(x):
        return x + 1

    assert g(np.zeros((2, 3), np.float32)).tolist() == [[1.0] * 3] * 2


def test_python_numbers_stay_static_as_documented(retraces):
    # jax.jit traces a Python number (weakly typed); ug, as tf.function and torch.compile, keys on its value
    f = ug.jit(lambda x, n: x * n)
    for n in (1, 2, 3):
        assert f(ug.ones(2), n).tolist() == [n, n]
    assert f.cache_info().traces == 3


# ---- input_signature's None dims take any size ------------------------------------------------


def test_input_signature_none_dim_makes_one_program_for_every_size():
    @ug.function(input_signature=[ug.TensorSpec((None, 3), ug.float32)])
    def f(x):
        return x * 3

    with warnings.catch_warnings():
        warnings.simplefilter("error", ug.compiled.RetraceWarning)
        for n in [4, 5, 6, 7, 9, 1]:
            assert f(ug.full((n, 3), 2.0)).tolist() == [[6.0] * 3] * n
    info = f.cache_info()
    assert info.size == 1 and info.traces == 2  # TensorFlow traces once, symbolically
    with pytest.raises(TypeError, match="does not match the input_signature"):
        f(ug.ones(2, 4))


# ---- reduce_retracing generalizes whatever order the sizes come in ----------------------------


@pytest.mark.parametrize("fun, sizes", [
    (lambda x: x * 2, [3, 2, 4, 5]),  # a size equal to a constant of the body
    (lambda x: x * 7, [4, 7, 5, 8]),
    (lambda x: x.sum(0) * 3, [5, 3, 6, 7]),  # a size equal to the other dim's
    (lambda x: x + ug.ones(3), [5, 3, 6, 7]),
    (lambda x: x.reshape(-1), [5, 1, 6, 7]),  # a size of 1
])
def test_reduce_retracing_generalizes_when_a_size_equals_a_constant(fun, sizes):
    f = ug.function(fun, reduce_retracing=True)
    for n in sizes:
        x = ug.arange(n * 3, dtype=ug.float32).reshape(n, 3)
        assert np.allclose(f(x).numpy(), fun(x).numpy())
    # the trace at the size that coincides cannot fold in; the next one does, and takes its place
    info = f.cache_info()
    assert info.size == 1 and info.traces == 3
    assert ug.jit.explain(f, ug.ones(11, 3)) == "hit: a cached program runs"


# ---- static arguments, checked as jax.jit checks them -----------------------------------------


def test_static_argnums_out_of_range_raises_at_jit_time():
    with pytest.raises(ValueError, match="only accepts 1 positional arguments"):
        jax.jit(lambda x: x, static_argnums=3)
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\), but takes only 1 positional argument"):
        ug.jit(lambda x: x, static_argnums=3)
    with pytest.raises(ValueError, match=r"static_argnames \['z'\]"):
        ug.jit(lambda x, y: x, static_argnames="z")
    # a function of *args or **kwargs takes any
    assert ug.jit(lambda *a: a[0], static_argnums=3)(ug.ones(2)).tolist() == [1.0, 1.0]
    assert ug.jit(lambda x, **k: x * k["n"], static_argnames="n")(ug.ones(2), n=2).tolist() == [2.0, 2.0]


def test_negative_static_argnums_count_from_the_end_as_in_jax():
    f = ug.jit(lambda x, n: x * n, static_argnums=-1)
    expected = jax.jit(lambda x, n: x * n, static_argnums=-1)(np.ones(2), 3)
    assert f(ug.ones(2), 3).tolist() == np.asarray(expected).tolist()
    f(ug.ones(2), 4)
    assert f.cache_info().traces == 2


def test_an_unhashable_static_argument_is_refused():
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda x, l: x * len(l), static_argnums=1)(np.ones(2), [1, 2])
    f = ug.jit(lambda x, l: x * len(l), static_argnums=1)
    with pytest.raises(ValueError, match="static argument l must be hashable.*got list"):
        f(ug.ones(2), [1, 2])
    assert f(ug.ones(2), (1, 2)).tolist() == [2.0, 2.0]
    g = ug.jit(lambda x, d: x * d["k"], static_argnames="d")
    with pytest.raises(ValueError, match="static argument d must be hashable"):
        g(ug.ones(2), d={"k": 2})


def test_a_donated_tensor_says_it_was_donated_when_used():
    f = ug.jit(lambda x: x * 2, donate_argnums=0)
    x = ug.ones(2)
    assert f(x).tolist() == [2.0, 2.0]
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="donated to a jitted call"):
        x + 1
    with pytest.raises(RuntimeError, match="donated to a jitted call"):
        x.sum()


# ---- functions that return no tensor ---------------------------------------------------------


def test_a_function_returning_numbers_returns_tensors_as_jax_returns_arrays():
    x = ug.tensor(1.0)
    three = ug.jit(lambda x: 3.0)(x)
    assert isinstance(three, ug.Tensor) and three.dtype == ug.float32 and three.item() == 3.0
    assert float(jax.jit(lambda x: 3.0)(1.0)) == 3.0
    out = ug.jit(lambda x: {"n": 2, "name": "s"})(x)
    assert out["n"].item() == 2 and out["n"].dtype == ug.int64 and out["name"] == "s"
    # each call gives a new tensor: writing into one does not change the next
    f = ug.jit(lambda x: 3.0)
    f(x).add_(1)
    assert f(x).item() == 3.0


def test_a_function_returning_none_returns_none_and_traces_once():
    calls = []
    f = ug.jit(lambda x: calls.append(1))
    assert jax.jit(lambda x: None)(1.0) is None
    assert f(ug.ones(3)) is None and f(ug.ones(3)) is None
    assert len(calls) == 1  # as jax.jit: the Python body runs at the trace only
    assert ug.jit.explain(f, ug.ones(3)) == "hit: a cached program runs"
    f(ug.ones(4))
    assert len(calls) == 2
    with pytest.raises(ValueError, match="returns no tensors and writes no state"):
        f.lower(ug.ones(3))


def test_a_constant_result_is_a_fresh_tensor_at_each_call():
    # Eager code makes ug.tensor(3.) anew at each call: writing into one result must not change
    # what later calls return (the program used to hand out its constant's own storage).
    f = ug.jit(lambda x: (x * 1, ug.tensor(3.0), ug.zeros(2)))
    x = ug.ones(2)
    _, c, z = f(x)
    c.add_(1)
    z.fill_(7)
    _, c2, z2 = f(x)
    assert c2.item() == 3.0 and z2.tolist() == [0.0, 0.0]


# ---- static objects key programs by equality, as jax.jit's ------------------------------------


def test_equal_static_objects_share_a_program_as_in_jax():
    """Before: keyed by identity, a config object rebuilt at each call traced at each call."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Config:
        scale: float

    jax_traces, ug_traces = [], []

    def jax_fun(x, c):
        jax_traces.append(1)
        return x * c.scale

    jax_step = jax.jit(jax_fun, static_argnums=1)
    step = ug.jit(lambda x, c: x * c.scale, static_argnums=1)
    for scale in (2.0, 2.0, 2.0, 3.0, 3.0, 2.0):
        expected = np.asarray(jax_step(np.ones(2, np.float32), Config(scale)))
        assert step(ug.ones(2), Config(scale)).tolist() == expected.tolist()
        ug_traces.append(step.cache_info().traces)
    assert len(jax_traces) == 2 and ug_traces[-1] == 2
    # objects equal by identity only stay apart, each its own program
    class Plain:
        scale = 4.0

    assert step(ug.ones(2), Plain()).tolist() == [4.0, 4.0]
    assert step(ug.ones(2), Plain()).tolist() == [4.0, 4.0]
    assert step.cache_info().traces == 4


# ---- arguments that share memory: one program per way they overlap ----------------------------


def _views(kind, base):
    return {"same": (base, base), "halves": (base[:2], base[2:]), "swapped": (base[2:], base[:2]),
            "overlapping": (base[:2], base[1:3])}[kind]


@pytest.mark.parametrize("first", ["same", "halves", "overlapping"])
@pytest.mark.parametrize("then", ["same", "halves", "swapped", "overlapping"])
def test_arguments_sharing_memory_run_a_program_traced_for_their_overlap(first, then, retraces):
    """Before: every pair sharing memory keyed as "1=0", so a program traced on (t, t) read the
    first argument twice for (base[:2], base[2:]), and wrote the wrong memory."""
    def read(a, b):
        return a * 10 + b

    def write(a, b):
        a.mul_(2)
        return b + 0

    for fun in (read, write):
        if fun is write and first != "same":
            continue  # writes into views of one memory that another input reads: refused at the trace
        f = ug.jit(fun)
        f(*_views(first, ug.arange(4.0)))
        eager_base, jit_base = ug.arange(4.0), ug.arange(4.0)
        if fun is write and then != "same":
            with pytest.raises(ValueError, match="writes a view"):  # before: the (t, t) program wrote
                f(*_views(then, jit_base))
            continue
        expected = fun(*_views(then, eager_base))
        got = f(*_views(then, jit_base))
        assert got.tolist() == expected.tolist(), (fun.__name__, first, then)
        assert jit_base.tolist() == eager_base.tolist(), (fun.__name__, first, then)


# ---- reduce_retracing refuses constants made from a size --------------------------------------


@pytest.mark.parametrize("name, body", [
    ("chunk", lambda x: x.chunk(2)[0]),
    ("tensor_split", lambda x: ug.tensor_split(x, 2)[0]),
    ("split", lambda x: x.split(2)[-1]),
    ("topk", lambda x: x.topk(2).values),
    ("interpolate", lambda x: ug.nn.functional.interpolate(x[None, None], scale_factor=0.5)[0, 0]),
    ("unfold", lambda x: x.unfold(0, 2, 2).sum(1)),
])
def test_reduce_retracing_keeps_ops_whose_constants_follow_a_size_exact(name, body, retraces):
    """chunk(2) of 3 and of 4 elements both slice 2: the two traces made the same graph, and the
    program for any size then sliced 2 of 5 or of 9. Now an op that makes constants from a size
    notes it, and the traces whose notes differ stay one program per size."""
    f = ug.function(body, reduce_retracing=True)
    g = ug.function(body, input_signature=[ug.TensorSpec([None])])
    for n in (3, 4, 5, 9):
        x = ug.arange(float(n))
        for compiled in (f, g):
            assert compiled(x).tolist() == body(x).tolist(), (name, n)
    top2 = ug.function(lambda x: x.topk(2).values, reduce_retracing=True)
    top2(ug.arange(3.0)), top2(ug.arange(5.0))
    with pytest.raises(Exception, match=r"\[topk\] selected index k = 2 out of range"):
        top2(ug.arange(1.0))  # before: the program for any size gave one element
    # a size that does not differ between the traces (the width chunked here) still folds
    h = ug.function(lambda x: x.chunk(2, dim=1)[0] * 2, reduce_retracing=True)
    for n in (3, 4, 5):
        x = ug.randn(n, 4)
        np.testing.assert_array_equal(h(x).numpy(), x.chunk(2, dim=1)[0].numpy() * 2)
    assert h.cache_info().size == 1 and h.cache_info().traces == 2
