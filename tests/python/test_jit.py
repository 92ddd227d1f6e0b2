"""The compiled mode (ug.jit, ug.function, ug.compile; python/unigrad/compiled.py over
ug/compiler): what a program runs, when it is traced again and what it says, Python control
flow on traced values, parameters read live, training steps in both styles, saved programs,
and JAX's control flow against JAX itself. Every op of the op table is compiled by the "jit"
transform of test_op_table.py."""
import collections
import os
import tempfile
import warnings

import numpy as np
import pytest
import torch

import unigrad as ug
from unigrad.tree import tree_leaves


@pytest.fixture(scope="module")
def jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


# ---- what runs --------------------------------------------------------------------------------


def test_later_calls_run_the_program_without_calling_the_function():
    calls = []

    @ug.jit
    def f(x, y):
        calls.append(1)  # a Python side effect: it happens while tracing, as in JAX
        return (x * y).sum() + ug.relu(x).mean()

    x, y = ug.randn(3, 4), ug.randn(3, 4)
    for _ in range(3):
        f(x, y)
    x2 = ug.randn(3, 4)
    close(f(x2, y), (x2 * y).sum() + ug.relu(x2).mean())
    assert len(calls) == 1
    info = f.cache_info()
    assert (info.hits, info.misses, info.traces, info.size, info.capacity) == (3, 1, 1, 1, 8)


def test_pytrees_in_and_out_and_python_values_out():
    @ug.jit
    def f(params, xs):
        a, b = xs
        return {"sum": params["w"] * a + b, "parts": [a.exp(), (b, 3)], "name": "done"}

    p, a, b = {"w": ug.randn(2)}, ug.randn(2), ug.randn(2)
    out = f(p, (a, b))
    assert set(out) == {"sum", "parts", "name"} and out["name"] == "done" and out["parts"][1][1] == 3
    close(out["sum"], p["w"] * a + b)
    close(out["parts"][0], a.exp())
    close(f(p, [a, b])["sum"], p["w"] * a + b)  # a list, not a tuple: another structure, another trace
    assert f.cache_info().traces == 2


@pytest.mark.filterwarnings("ignore::unigrad.compiled.RetraceWarning")
def test_a_call_that_hits_runs_the_program_its_signature_traced():
    """Calls that hit are keyed without _Call's strings (compiled._fast_key): every difference
    the full signature sees must still give another program."""
    @ug.jit(static_argnums=(2,))
    def f(tree, x, k):
        return {"y": tree["a"] * k + x, "k": k}

    a, x = ug.randn(3), ug.randn(3)
    for k in (2, 2.0, True):  # equal as Python values, different statics: three programs
        out = f({"a": a}, x, k)
        close(out["y"], a * k + x)
        # returned as jax.jit returns a number, a 0-d array: of the number's own dtype
        assert out["k"].dtype == {int: ug.int64, float: ug.float32, bool: ug.bool}[type(k)] and out["k"].item() == k
    assert f.cache_info().traces == 3
    close(f({"a": a}, x, 2)["y"], a * 2 + x)
    close(f({"a": a.double()}, x.double(), 2)["y"], a.double() * 2 + x.double())  # another dtype
    close(f({"a": a[:2]}, x[:2], 2)["y"], a[:2] * 2 + x[:2])  # another shape
    assert f.cache_info().traces == 5
    assert f.cache_info().hits == 1
    f({"a": a}, [x][0], 2)
    assert f.cache_info().hits == 2


@pytest.mark.filterwarnings("ignore::unigrad.compiled.RetraceWarning")
def test_the_fast_key_of_plain_trees_tells_apart_what_the_signature_does():
    """Trees of dicts (str keys), lists, tuples, None and tensors, and plain values, are keyed in
    C++ (_jit.FastKey); anything else by the Python walk. Each call here is checked against the
    function run eagerly, and the traces counted against the distinct signatures."""
    Pair = collections.namedtuple("Pair", "a b")

    def fun(tree, scale=1.0):
        return [t * scale for t in tree_leaves(tree) if isinstance(t, ug.Tensor)]

    f = ug.jit(fun)
    x, y = ug.randn(3), ug.randn(2, 3)
    calls = [  # (args, kwargs, a signature seen before: a hit)
        (({"a": x, "b": y},), {}, False),
        (({"b": y, "a": x},), {}, True),  # insertion order is not structure: keys are sorted
        (({"a": y, "b": x},), {}, False),  # the same shapes under other keys
        (([x, None],), {}, False),
        (((x, None),), {}, False),  # a tuple is not a list
        (([x, None],), {"scale": 2}, False),
        (([x, None],), {"scale": 2.0}, False),  # an int and a float are different statics
        (([x, None],), {"scale": True}, False),
        (([x, None],), {"scale": 2}, True),
        (({"é": x, "z": y, "a": x},), {}, False),  # keys sorted by code point, as sorted() does
        ((Pair(x, y),), {}, False),  # a namedtuple: the Python walk
        ((Pair(x, y),), {}, True),
        (([x, 2**70],), {}, False),  # an int over 64 bits: the Python walk
        (([x, 2**70],), {}, True),
    ]
    traces = 0
    for args, kwargs, hit in calls:
        got, want = f(*args, **kwargs), fun(*args, **kwargs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w)
        traces += not hit
        assert f.cache_info().traces == traces, (args, kwargs)
    assert f.cache_info().hits == sum(hit for *_, hit in calls)


def test_static_arguments_by_position_and_name():
    def f(x, n, mode="add"):
        y = x * n if n > 1 else x
        return y + 1 if mode == "add" else y - 1

    by_num = ug.jit(f, static_argnums=(1, 2))
    by_name = ug.jit(f, static_argnames=("n", "mode"))
    x = ug.arange(3.0)
    for g in (by_num, by_name):
        close(g(x, 3), x * 3 + 1)
        close(g(x, 1, mode="sub"), x - 1)
        close(g(x, 3), x * 3 + 1)
        assert g.cache_info().traces == 2


def test_methods_take_the_instance_as_a_static_argument():
    class Scale:
        def __init__(self, k):
            self.k = k

        @ug.jit
        def apply(self, x):
            return x * self.k

    x = ug.ones(2)
    close(Scale(2.0).apply(x), [2, 2])
    close(Scale(5.0).apply(x), [5, 5])  # another instance, another program


def test_an_object_argument_is_never_taken_for_a_freed_one():
    # Objects are static by identity; a freed object's id may come back for a new one, so the
    # cache keeps the objects of its programs alive.
    class Scale:  # hashable by identity (a SimpleNamespace is unhashable: refused as jax.jit does)
        def __init__(self, k):
            self.k = k

    f = ug.jit(lambda s, x: x * s.k, static_argnums=0, cache_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ug.compiled.RetraceWarning)
        for k in range(12):
            close(f(Scale(float(k)), ug.ones(1)), [k])


# ---- retracing, visible and bounded ----------------------------------------------------------


def test_every_trace_past_the_second_warns_naming_what_changed():
    f = ug.jit(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(ug.ones(1))
        f(ug.ones(2))
        assert not caught
        f(ug.ones(3))
        f(ug.ones(3, dtype=ug.float64))
    messages = [str(w.message) for w in caught if issubclass(w.category, ug.compiled.RetraceWarning)]
    assert len(messages) == 2
    assert "traced for the 3rd time" in messages[0] and "argument x changed from float32[2] to float32[3]" in messages[0]
    assert "from float32[3] to float64[3]" in messages[1]


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    f = ug.jit(lambda x: x * 2, cache_size=2)
    a, b, c = ug.ones(1), ug.ones(2), ug.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ug.compiled.RetraceWarning)
        f(a), f(b), f(a), f(c)  # c evicts b, the least recently used
    assert f.explain(a).startswith("hit")
    assert f.explain(b) == "miss: argument x changed from float32[3] to float32[2]"
    assert f.cache_info().size == 2


def test_explain_says_whether_a_call_hits_and_why_not():
    f = ug.jit(lambda x, k: x * k, static_argnums=1)
    assert ug.jit.explain(f, ug.ones(2), 3) == "miss: the first call traces the function"
    f(ug.ones(2), 3)
    assert ug.jit.explain(f, ug.ones(2), 3) == "hit: a cached program runs"
    assert ug.jit.explain(f, ug.ones(2), 4) == "miss: argument k changed from static 3 to static 4"


# ---- Python control flow on traced values ------------------------------------------------------


@pytest.mark.parametrize("use", ["bool", "item", "float", "int", "numpy", "tolist"])
def test_python_control_flow_on_a_traced_value_names_the_line(use):
    def f(x):
        s = x.sum()
        if use == "bool":
            return x * 2 if s > 0 else x * 3  # the line the error names
        return x * {"item": s.item, "float": lambda: float(s), "int": lambda: int(s), "numpy": s.numpy,
                    "tolist": s.tolist}[use]()

    line = f.__code__.co_firstlineno + (3 if use == "bool" else 4)
    with pytest.raises(TypeError, match=rf"traced tensor .* at {__file__}:{line}: .*ug.cond") as e:
        ug.jit(f)(ug.randn(3))
    assert "static_argnums" in str(e.value)


def test_values_not_computed_from_the_inputs_stay_concrete():
    w = ug.tensor([2.0, 3.0])

    @ug.jit
    def f(x):
        return x * w.sum().item()  # a constant of the program: Python may read it

    close(f(ug.ones(2)), [5, 5])


def test_the_tf_function_retracing_example_of_the_article(tf):
    # The article's tf.function: `if tf.reduce_sum(x) > 0: return x * 2 else: return x * 3`.
    # AutoGraph turns that `if` into tf.cond; unigrad says so and takes ug.cond.
    @tf.function
    def tf_func(x):
        if tf.reduce_sum(x) > 0:
            return x * 2
        return x * 3

    @ug.function
    def my_func(x):
        return ug.cond(x.sum() > 0, lambda x: x * 2, lambda x: x * 3, x)

    for values in ([1.0, 2.0], [-1.0, -2.0]):
        close(my_func(ug.tensor(values)), tf_func(tf.constant(values)).numpy())
    assert my_func.cache_info().traces == 1  # one program for both branches

    @ug.function
    def direct_port(x):
        if x.sum() > 0:
            return x * 2
        return x * 3

    with pytest.raises(TypeError, match="ug.cond"):
        direct_port(ug.ones(2))


def test_function_input_signature_refuses_other_inputs():
    f = ug.function(lambda x: x * 2, input_signature=[ug.TensorSpec(shape=(None, 3), dtype=ug.float32)])
    close(f(ug.ones(2, 3)), np.full((2, 3), 2.0))
    with pytest.raises(TypeError, match="does not match the input_signature"):
        f(ug.ones(2, 4))


def test_function_reduce_retracing_makes_one_program_for_any_size_nothing_depends_on():
    ug.manual_seed(0)
    conv = ug.nn.Conv2d(3, 4, 3).eval()
    traced = []  # a call each: the program's traces and the eager calls

    def features(x):
        traced.append(1)
        return conv(x).relu().sum((2, 3))

    f = ug.function(features, reduce_retracing=True)
    for shape in [(1, 3, 8, 8), (2, 3, 8, 8), (3, 3, 10, 10), (5, 3, 7, 9), (1, 3, 8, 8)]:
        x = ug.randn(*shape)
        # A sum of 4 * 3*3*3 products per output and shape[2] * shape[3] outputs per sum.
        close(f(x), features(x), tol=1e-5 * shape[2] * shape[3])
    # One trace, then one per new kind of change: the batch, then the image size.
    assert len(traced) - 5 == 3 and f.cache_info().size == 1
    assert f.explain(ug.randn(7, 3, 5, 5)) == "hit: a cached program runs"
    assert f.explain(ug.randn(7, 4, 5, 5)) == "miss: argument x changed from float32[?, 3, ?, ?] to float32[7, 4, 5, 5]"
    assert f.explain(ug.randn(7, 3, 5, 5, dtype=ug.float64)).startswith("miss")


def test_function_reduce_retracing_folds_ops_called_back_without_sizes():
    # linalg.solve and diagonal are called back with no size in their closures, and sort's TopK
    # reads its k from the shape: the traces at two batch sizes make one program, which runs
    # eager's kernels at any size.
    def body(x):
        a = x + 8 * ug.eye(4)
        return ug.linalg.solve(a, x).sort(-1)[0].diagonal(0, -2, -1)
    f = ug.function(body, reduce_retracing=True)
    for b in (1, 2, 3, 5):
        x = ug.randn(b, 4, 4)
        np.testing.assert_array_equal(f(x).numpy(), body(x).numpy())
    assert f.cache_info().traces == 2 and f.cache_info().size == 1


@pytest.mark.parametrize("body, why", [
    (lambda x: x.reshape(x.shape[0], -1).sum(1), "reads the shape of a traced tensor at"),
    # [n, 2, 3] -> [6, n]: where the size goes depends on n itself.
    (lambda x: x.reshape(6, -1).sum(0), "the two traces are different graphs"),
    (lambda x: x.flatten(1) + ug.nn.functional.dropout(x.flatten(1), 0.5), "op 'random' is called back"),
])
def test_function_reduce_retracing_refuses_what_depends_on_a_size(body, why):
    """Each refusal keeps one exact program per shape (right answers) and says why it could not
    make one for any size."""
    ug.manual_seed(0)
    f = ug.function(body, reduce_retracing=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 4):
            out = f(ug.ones(n, 2, 3))
            assert tuple(out.shape[:1]) == (n,)
    assert f.cache_info().traces == 3
    assert len(caught) == 1 and "reduce_retracing could not make one program for both sizes" in str(caught[0].message)
    assert why in str(caught[0].message), str(caught[0].message)
    if "shape" in why:
        assert f"{__file__}:" in str(caught[0].message)


class _Encoder(ug.nn.Module):
    """A transformer layer's step: q/k/v split into heads and merged back (reshapes of the
    batch and time dims), layer norms, a mean over time, a linear head."""

    def __init__(self):
        super().__init__()
        self.layer = ug.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = ug.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


_STEPS = {
    "mlp": (lambda: ug.nn.Sequential(ug.nn.Linear(20, 16), ug.nn.ReLU(), ug.nn.Linear(16, 4)), (20,)),
    "cnn": (lambda: ug.nn.Sequential(ug.nn.Conv2d(1, 4, 3), ug.nn.ReLU(), ug.nn.MaxPool2d(2), ug.nn.Flatten(),
                                     ug.nn.Linear(4 * 3 * 3, 4)), (1, 8, 8)),
    "transformer": (_Encoder, (6, 16)),
    "avg_pool": (lambda: ug.nn.Sequential(ug.nn.Conv2d(1, 4, 3, padding=1), ug.nn.AvgPool2d(2), ug.nn.Flatten(),
                                          ug.nn.LayerNorm(64), ug.nn.GELU(), ug.nn.Linear(64, 4)), (1, 8, 8)),
}


@pytest.mark.parametrize("kind", sorted(_STEPS))
def test_function_reduce_retracing_compiles_a_training_step_once_for_every_batch_size(kind):
    """TensorFlow's reduce_retracing over a training step: the last, smaller batch of an epoch
    runs the same program. Each step equals a program traced at that batch size alone, bit for
    bit (the sizes come from the inputs' shapes; the arithmetic is the same ops in the same
    order), and the parameters after the steps are equal too."""
    make_model, features = _STEPS[kind]

    def setup():
        ug.manual_seed(0)
        model = make_model()
        opt = ug.optim.Adam(model.parameters(), lr=1e-2)
        traced = []

        def step(x, y):
            traced.append(1)
            opt.zero_grad()
            loss = ug.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return model, step, traced

    relaxed_model, relaxed_step, traced = setup()
    exact_model, exact_step, _ = setup()
    f, g = ug.function(relaxed_step, reduce_retracing=True), ug.jit(exact_step)
    ug.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exact programs' retraces; len(traced) counts f's
        for n in (7, 5, 3, 7, 9):
            x, y = ug.randn(n, *features), ug.randint(0, 4, (n,))
            assert np.array_equal(f(x, y).numpy(), g(x, y).numpy()), n
    assert len(traced) == 2 and f.cache_info().size == 1
    assert f.explain(ug.randn(11, *features), ug.randint(0, 4, (11,))) == "hit: a cached program runs"
    for a, b in zip(relaxed_model.parameters(), exact_model.parameters()):
        assert np.array_equal(a.numpy(), b.numpy())


def test_function_reduce_retracing_runs_a_program_only_where_sizes_equal_in_its_traces_are_equal():
    """The graph reads a mean's count from an input of that size: traced with x and y of one
    batch, it may read y's count from x. A call where they differ is a miss that says so and
    traces again, so the gradient is always 2 y / len(y)."""
    f = ug.function(lambda x, y: (x.sum(0), ug.grad(lambda v: (v * v).mean())(y)), reduce_retracing=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n, m in ((7, 7), (5, 5), (4, 4), (9, 3)):
            x, y = ug.randn(n, 3), ug.randn(m)
            if n == 9:
                assert f.explain(x, y) == ("miss: argument x has 9 in dim 0 and argument y 3 in dim 0, which were "
                                           "equal in every trace of the program for any size")
            close(f(x, y)[1], 2 * y.numpy() / m, tol=1e-6)
    assert f.cache_info().traces == 3 and len(caught) == 1


def test_function_reduce_retracing_keeps_fixed_sizes_in_ordinary_programs():
    """Only reduce_retracing's traces read sizes from the inputs' shapes: an ordinary program of
    the same training step holds them as constants (its one Shape node is the ones_like of the
    loss's weights, ConstantOfShape's input) and has fewer nodes. Label smoothing keeps the loss
    composed of ops, whose sizes are what this is about (the fused cross_entropy holds none)."""
    ug.manual_seed(0)
    model = _STEPS["mlp"][0]()
    opt = ug.optim.SGD(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = ug.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss

    x, y = ug.randn(6, 20), ug.randint(0, 4, (6,))
    fixed = ug.jit(step).lower(x, y).node_types()
    relaxed = ug.function(step, reduce_retracing=True).lower(x, y).node_types()
    assert fixed.count("Shape") == fixed.count("ConstantOfShape") == 1 and "Concat" not in fixed
    assert relaxed.count("Shape") > 1 and "Concat" in relaxed and len(fixed) < len(relaxed)


def test_function_reduce_retracing_saves_a_file_onnxruntime_runs_at_other_sizes(tmp_path):
    """A program made for any batch and sequence length is a file whose inputs have those dims
    symbolic: ONNX Runtime runs it at sizes never traced, as the model itself computes them."""
    ort = pytest.importorskip("onnxruntime")
    ug.manual_seed(0)
    model = _Encoder().eval()
    f = ug.function(lambda x: model(x), reduce_retracing=True)
    for n, t in ((3, 6), (5, 4)):
        f(ug.randn(n, t, 16))
    assert f.cache_info().traces == 2 and f.cache_info().size == 1
    path = tmp_path / "encoder.onnx"
    ug.jit.save(f, path, ug.randn(2, 5, 16))
    session = ort.InferenceSession(str(path))
    for n, t in ((1, 3), (7, 9)):
        x = ug.randn(n, t, 16)
        with ug.no_grad():
            expected = model(x).numpy()
        (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        # Sums of 16 and 32 products per value, a softmax over t keys: a few float32 ulps each.
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


# ---- derivatives and other transforms --------------------------------------------------------


def mlp_loss(p, x, y):
    h = ug.tanh(x @ p["w1"] + p["b1"])
    return ug.nn.functional.cross_entropy(h @ p["w2"], y)


def mlp_params(dtype=ug.float32):
    ug.manual_seed(1)
    return {"w1": ug.randn(5, 7, dtype=dtype), "b1": ug.randn(7, dtype=dtype), "w2": ug.randn(7, 3, dtype=dtype)}


def test_jit_of_grad_and_grad_of_jit_match_finite_differences():
    p, x, y = mlp_params(ug.float64), ug.randn(4, 5, dtype=ug.float64), ug.tensor([0, 2, 1, 2])
    eager = ug.grad(mlp_loss)(p, x, y)
    compiled = ug.jit(ug.grad(mlp_loss))(p, x, y)
    through = ug.grad(ug.jit(mlp_loss))(p, x, y)
    for k in p:
        close(compiled[k], eager[k], 1e-12)
        close(through[k], eager[k], 1e-12)
    # Central differences of the loss in float64 for one parameter.
    w, h = p["w2"].numpy().copy(), 1e-6
    fd = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        for sign in (1, -1):
            q = dict(p, w2=ug.tensor(w + sign * h * (np.arange(w.size).reshape(w.shape) == np.ravel_multi_index(i, w.shape))))
            fd[i] += sign * mlp_loss(q, x, y).item() / (2 * h)
    close(compiled["w2"], fd, 1e-7)


def test_second_derivatives_and_vmap_compose_with_jit():
    def f(x):
        return (x.sin() * x).sum()

    x = ug.randn(4, dtype=ug.float64)
    close(ug.jit(ug.hessian(f))(x), ug.hessian(f)(x), 1e-12)
    close(ug.jit(ug.grad(ug.grad(lambda t: (t ** 3).sum() * 1.0)))(ug.tensor(2.0, dtype=ug.float64)), 12.0, 1e-12)
    xs = ug.randn(3, 4)
    close(ug.vmap(ug.jit(lambda v: (v * v).sum()))(xs), (xs * xs).sum(1), 1e-5)
    inner = ug.jit(lambda v: v.exp())
    close(ug.jit(lambda v: inner(v) * 2)(xs), xs.exp() * 2, 1e-6)  # a jitted function inside: inlined


VECTOR_MATRIX_SHAPES = {"vec@vec": ((4,), (4,)), "mat@vec": ((3, 4), (4,)), "vec@mat": ((4,), (4, 2)),
                        "mat@mat": ((3, 4), (4, 2))}


@pytest.mark.parametrize("batched", ["x", "w", "both"])
@pytest.mark.parametrize("shapes", list(VECTOR_MATRIX_SHAPES), ids=list(VECTOR_MATRIX_SHAPES))
def test_jit_of_vmap_of_grad_through_matmul_equals_the_eager_transforms(shapes, batched):
    # matmul makes a 1-D operand a matrix and squeezes the result inside its call: under vmap
    # the gradient's seed and its broadcasts are batched views the program must rebuild.
    xshape, wshape = VECTOR_MATRIX_SHAPES[shapes]
    axes = {"x": (None, 0), "w": (0, None), "both": (0, 0)}[batched]

    def f(w, x):
        return ((x @ w).sin() * (x @ w)).sum()

    g = ug.vmap(ug.grad(f), in_axes=axes)
    compiled = ug.jit(g)

    def draw(seed):
        ug.manual_seed(seed)
        w, x = ug.randn(*wshape, dtype=ug.float64), ug.randn(*xshape, dtype=ug.float64)
        return (ug.randn(5, *wshape, dtype=ug.float64) if axes[0] == 0 else w,
                ug.randn(5, *xshape, dtype=ug.float64) if axes[1] == 0 else x)

    for seed in (0, 1):  # the trace's inputs, then others: a value frozen at trace time would show
        w, x = draw(seed)
        per_example = ug.stack([ug.grad(f)(w[i] if axes[0] == 0 else w, x[i] if axes[1] == 0 else x) for i in range(5)])
        close(g(w, x), per_example, 1e-12)
        close(compiled(w, x), per_example, 1e-12)
    assert compiled.cache_info().misses == 1


def test_jit_of_vmap_of_grad_through_an_op_without_a_batching_rule():
    # index_select with an index of each example's own has no batching rule: vmap maps example
    # by example after the batched attempt raised, and the ops that attempt ran inside the trace
    # must not fail it. A third call: a value the program froze would show from the second on.
    w = ug.randn(4, dtype=ug.float64)
    index = ug.tensor([[1, 2], [0, 3], [2, 2], [3, 1], [0, 0]])

    def f(w, x, i):
        return ug.softmax(x * w, 0).index_select(0, i).sin().sum()

    compiled = ug.jit(ug.vmap(ug.grad(f), in_axes=(None, 0, 0)))
    for seed in (0, 1, 2):
        ug.manual_seed(seed)
        xs = ug.randn(5, 4, dtype=ug.float64)
        close(compiled(w, xs, index), ug.stack([ug.grad(f)(w, xs[i], index[i]) for i in range(5)]), 1e-12)


def test_jit_of_vmap_of_grad_through_a_slice():
    # Slicing's gradient (embed) runs its batching rule under the trace too: the program computes
    # the softmax's row maximum from each call's inputs.
    w = ug.randn(4, dtype=ug.float64)

    def f(w, x):
        return ug.softmax(x * w, 0)[1:].sin().sum()

    compiled = ug.jit(ug.vmap(ug.grad(f), in_axes=(None, 0)))
    before = ug._C._functional.vmap_fallbacks()
    for seed in (0, 1, 2):
        ug.manual_seed(seed)
        xs = ug.randn(5, 4, dtype=ug.float64)
        close(compiled(w, xs), ug.stack([ug.grad(f)(w, xs[i]) for i in range(5)]), 1e-12)
    assert ug._C._functional.vmap_fallbacks() == before, "the trace mapped example by example"


def test_jit_of_per_example_gradients_of_an_mlp():
    # The JAX idiom: vmap(grad(loss), in_axes=(None, 0, 0)) for one gradient per example.
    def loss(p, x, y):
        h = ug.tanh(x @ p["w1"] + p["b1"])
        return ((h @ p["w2"] + p["b2"] - y) ** 2).mean()

    per_example = ug.jit(ug.vmap(ug.grad(loss), in_axes=(None, 0, 0)))
    for seed in (0, 1):
        ug.manual_seed(seed)
        p = {"w1": ug.randn(6, 5, dtype=ug.float64), "b1": ug.randn(5, dtype=ug.float64),
             "w2": ug.randn(5, 2, dtype=ug.float64), "b2": ug.randn(2, dtype=ug.float64)}
        x, y = ug.randn(7, 6, dtype=ug.float64), ug.randn(7, 2, dtype=ug.float64)
        got = per_example(p, x, y)
        for i in range(7):
            expected = ug.grad(loss)(p, x[i], y[i])
            for k in p:
                close(got[k][i], expected[k], 1e-12)


# ---- training steps -----------------------------------------------------------------------------


def test_the_jax_optax_train_step_compiles_to_the_eager_result():
    # The articles' JAX loop: value_and_grad + optimizer.update + apply_updates under jit.
    # In float64: the program computes nll_loss and its gradient with their op forms and eager
    # code with fused kernels, summing in other orders, and Adam's first steps (about lr·sign(g))
    # would turn a float32 rounding of a near-zero gradient into a difference of 2·lr.
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Linear(20, 16), ug.nn.ReLU(), ug.nn.Linear(16, 4))
    params = ug.tree_map(lambda t: t.double(), model.init(ug.random.key(0), ug.ones(1, 20)))
    optimizer = ug.optim.Adam(model.parameters(), lr=1e-2)

    def loss_of(params, xb, yb):
        return ug.nn.functional.cross_entropy(model.apply(params, xb), yb)

    def train_step(params, opt_state, xs, ys, idx):
        xb, yb = xs[idx], ys[idx]
        loss, grads = ug.value_and_grad(loss_of)(params, xb, yb)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return ug.optim.apply_updates(params, updates), opt_state, loss

    xs, ys = ug.randn(64, 20, dtype=ug.float64), ug.randint(0, 4, (64,))
    compiled = ug.jit(train_step)
    eager_state = jit_state = (params, optimizer.init(params))
    for step in range(20):
        idx = ug.tensor(np.random.default_rng(step).permutation(64)[:16])
        *eager_state, eager_loss = train_step(*eager_state, xs, ys, idx)
        *jit_state, jit_loss = compiled(*jit_state, xs, ys, idx)
        close(jit_loss, eager_loss, 1e-10)
    for a, b in zip(tree_leaves(eager_state), tree_leaves(jit_state)):
        close(a, b, 1e-10)
    assert compiled.cache_info().traces == 1
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(ValueError, match="optimizer_update"):
        ug.jit.save(compiled, os.path.join(tmp, "step.onnx"), *jit_state, xs, ys, idx)


def test_a_step_whose_optimizer_is_gone_says_so():
    def step(params, grads):
        opt = ug.optim.SGD([ug.zeros(1)], lr=0.1)  # made inside: freed once the trace ends
        updates, _ = opt.update(grads, opt.init(params), params)
        return updates

    with pytest.raises(RuntimeError, match="create it outside the jitted function"):
        ug.jit(step)({"w": ug.ones(3)}, {"w": ug.ones(3)})


def test_closed_over_parameters_are_read_at_every_call():
    lin = ug.nn.Linear(3, 2)
    f = ug.jit(lambda x: lin(x))
    x = ug.randn(4, 3)
    close(f(x), lin(x))
    with ug.no_grad():
        lin.weight.mul_(2)
        lin.bias.add_(1)
    close(f(x), lin(x))
    assert f.cache_info().traces == 1


def test_compiled_module_follows_the_optimizer_and_the_training_mode():
    ug.manual_seed(0)
    net = ug.nn.Sequential(ug.nn.Linear(3, 4), ug.nn.BatchNorm1d(4), ug.nn.ReLU(), ug.nn.Linear(4, 2))
    compiled = ug.compile(net)
    opt = ug.optim.SGD(net.parameters(), lr=0.1)
    net.eval()
    for _ in range(3):
        x = ug.randn(8, 3)
        loss = compiled(x).pow(2).sum()
        opt.zero_grad()
        loss.backward()  # through the program, into the module's parameters
        opt.step()
        close(compiled(x), net(x), 1e-6)
    assert compiled.cache_info().traces == 1
    # Training mode is another program: batch statistics, the running statistics written back,
    # and gradients through it as through the eager module.
    net.train()
    opt.zero_grad()
    eager = ug.nn.Sequential(ug.nn.Linear(3, 4), ug.nn.BatchNorm1d(4), ug.nn.ReLU(), ug.nn.Linear(4, 2))
    eager.load_state_dict(net.state_dict())
    for _ in range(3):
        x = ug.randn(8, 3)
        out, expected = compiled(x), eager(x)
        close(out, expected, 1e-6)
        out.pow(2).sum().backward()
        expected.pow(2).sum().backward()
        for (name, p), q in zip(net.named_parameters(), eager.parameters()):
            close(p.grad, q.grad, 1e-5)
            p.grad, q.grad = None, None
        for (name, b), c in zip(net.named_buffers(), eager.buffers()):
            close(b, c, 1e-6)
    assert compiled.cache_info().traces == 2


def _line_of(fn, text):
    """The file line in fn's source that holds `text`."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_numerics_checks_in_a_program_name_the_op_and_the_line_that_traced_it():
    def f(x):
        y = x * 2
        return y.log() + 1  # the NaN's origin

    jitted = ug.jit(f)
    jitted(ug.tensor([1.0, 2.0]))  # traced on clean values; the check runs at a later call
    ug.debug.enable_check_numerics()
    try:
        with pytest.raises(RuntimeError) as err:
            jitted(ug.tensor([1.0, -1.0]))
    finally:
        ug.debug.disable_check_numerics()
    message = str(err.value)
    assert "output of log" in message and "has NaN" in message
    assert f'line {_line_of(f, "the NaN")}, in f' in message and __file__ in message


def test_an_explicit_numerics_check_runs_at_every_call_of_a_program(tmp_path):
    # tf.debugging.check_numerics inside a tf.function checks each run's values; so does
    # ug.debug.check_numerics inside ug.jit (it was checked at the trace only). A saved file
    # drops the check.
    def f(x):
        return ug.debug.check_numerics(x.log(), "log of x") * 2  # the check

    jitted = ug.jit(f)
    np.testing.assert_allclose(jitted(ug.tensor([1.0, 2.0])).numpy(), 2 * np.log([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"\[check_numerics\] log of x: .* has NaN") as err:
        jitted(ug.tensor([1.0, -1.0]))
    assert f'line {_line_of(f, "the check")}, in f' in str(err.value)
    assert jitted.cache_info().traces == 1
    ug.jit.save(f, str(tmp_path / "m.onnx"), ug.tensor([1.0, 2.0]))
    loaded = ug.onnx.load(str(tmp_path / "m.onnx"))
    np.testing.assert_allclose(loaded(ug.tensor([1.0, 3.0])).numpy(), 2 * np.log([1.0, 3.0]), rtol=1e-6)


def test_anomaly_mode_through_a_program_names_the_line_that_traced_the_op():
    def f(x):
        return x.sqrt().sum()  # infinite slope at 0

    jitted = ug.jit(f)
    x = ug.tensor([0.0, 1.0], requires_grad=True)
    jitted(x)
    with ug.autograd.detect_anomaly(), pytest.raises(RuntimeError) as err:
        jitted(x).backward()
    message = str(err.value)
    assert "backward of sqrt" in message
    assert f'line {_line_of(f, "infinite slope")}, in f' in message


def test_debug_print_prints_at_every_run_of_the_program(capsys):
    @ug.jit
    def f(x):
        y = x * 2
        ug.debug.print("y = {y}, sum {}", y.sum(), y=y)
        return y + 1

    f(ug.tensor([1.0, 2.0]))
    f(ug.tensor([3.0, 4.0]))
    lines = capsys.readouterr().out.splitlines()
    # Each call prints once, as jax.debug.print under jax.jit: the first call's program runs
    # after its trace, which prints nothing of its own.
    assert lines == ["y = tensor([2., 4.]), sum tensor(6.)", "y = tensor([6., 8.]), sum tensor(14.)"]


def test_debug_print_shows_each_example_under_vmap(capsys):
    show = lambda a: (ug.debug.print("a={}", a), a * 1)[1]  # noqa: E731
    ug.vmap(show)(ug.arange(3.0))
    ug.vmap(ug.vmap(show))(ug.arange(4.0).reshape(2, 2))  # in row-major order, as JAX prints them
    jitted = ug.jit(ug.vmap(show))
    jitted(ug.arange(3.0))
    jitted(ug.arange(3.0) + 10)
    ug.vmap(ug.jit(show))(ug.arange(2.0) + 20)
    numbers = [float(line[len("a=tensor("):-1]) for line in capsys.readouterr().out.splitlines()]
    assert numbers == [0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 10, 11, 12, 20, 21]


def test_debug_print_in_a_step_that_writes_state_prints_once_a_call(capsys):
    # A PyTorch-style compiled step returns its trace's results at its first call (the trace
    # took the step): its print is the trace's, once.
    model = ug.nn.Linear(2, 1)
    opt = ug.optim.SGD(model.parameters(), lr=0.1)

    @ug.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        ug.debug.print("{}", loss)
        loss.backward()
        opt.step()
        return loss

    losses = [step(ug.ones(1, 2)).item() for _ in range(3)]
    printed = [float(line[len("tensor("):-1]) for line in capsys.readouterr().out.splitlines()]
    assert printed == pytest.approx(losses, abs=1e-4)  # printed to 4 decimals


# ---- saved programs ----------------------------------------------------------------------------


def test_a_saved_program_runs_in_onnxruntime_and_loads_back():
    import onnxruntime as ort

    ug.manual_seed(0)
    net = ug.nn.Sequential(ug.nn.Linear(6, 5), ug.nn.GELU(), ug.nn.Linear(5, 2)).eval()
    x = ug.randn(3, 6)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "net.onnx")
        ug.jit.save(ug.compile(net), path, x)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        loaded = ug.onnx.load(path)
        close(got, net(x).detach(), 1e-5)
        close(loaded(x).detach(), net(x).detach(), 1e-6)


@pytest.mark.parametrize("pool", ["adaptive_avg_pool2d", "adaptive_max_pool2d", "area"])
def test_adaptive_pooling_to_sizes_that_do_not_divide_compiles_and_saving_it_is_refused(pool, tmp_path):
    # Windows of unequal sizes have no ONNX form: the program calls the op back, with the same
    # kernels (bit for bit), and a file, which cannot call back, is refused with the exporter's
    # reason (the op has an ONNX form where the sizes divide).
    F = ug.nn.functional
    fns = {"adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
           "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, (3, 4)),
           "area": lambda x: F.interpolate(x, size=(3, 4), mode="area")}
    f = fns[pool]
    x = ug.randn(2, 3, 7, 9, dtype=ug.float64)
    np.testing.assert_array_equal(ug.jit(f)(x).numpy(), f(x).numpy())
    loss = lambda x: (f(x) ** 2).sum()  # noqa: E731
    np.testing.assert_array_equal(ug.jit(ug.grad(loss))(x).numpy(), ug.grad(loss)(x).numpy())
    xs = ug.stack([x, 2 * x])
    np.testing.assert_array_equal(ug.vmap(ug.jit(f))(xs).numpy(), ug.stack([f(x), f(2 * x)]).numpy())
    with pytest.raises(ValueError, match=r"adaptive pooling from \[2, 3, 7, 9\] to \[2, 3, 3, 4\] has no ONNX form "
                                         r"\(the sizes must divide\)"):
        ug.jit.save(f, str(tmp_path / "pool.onnx"), x)


@pytest.mark.parametrize("op", ["linalg_solve", "linalg_cholesky", "bitwise_left_shift", "diagonal"])
def test_an_op_without_an_onnx_form_compiles_and_saving_it_is_refused(op, tmp_path):
    # The program calls the op back, with eager's kernels (bit for bit), under grad and vmap
    # too; a file, which cannot call back, is refused naming the op.
    fns = {"linalg_solve": lambda a, b: ug.linalg.solve(a + 4 * ug.eye(4, dtype=ug.float64), b),
           "linalg_cholesky": lambda a, b: ug.linalg.cholesky(a @ a.mT + 4 * ug.eye(4, dtype=ug.float64)) * b,
           # BitShift takes unsigned integers only: a signed shift is called back.
           "bitwise_left_shift": lambda a, b: a * ug.bitwise_left_shift(b.to(ug.int32), 2).to(ug.float64),
           "diagonal": lambda a, b: a.diagonal(1) * b.diagonal(-1)}
    f = fns[op]
    a, b = ug.randn(4, 4, dtype=ug.float64), ug.randn(4, 4, dtype=ug.float64)
    np.testing.assert_array_equal(ug.jit(f)(a, b).numpy(), f(a, b).numpy())
    loss = lambda a, b: (f(a, b) ** 2).sum()  # noqa: E731
    np.testing.assert_array_equal(ug.grad(ug.jit(loss))(a, b).numpy(), ug.grad(loss)(a, b).numpy())
    np.testing.assert_allclose(ug.jit(ug.grad(loss))(a, b).numpy(), ug.grad(loss)(a, b).numpy(), rtol=1e-12)
    xs, ys = ug.stack([a, 2 * a]), ug.stack([b, b + 1])
    np.testing.assert_array_equal(ug.vmap(ug.jit(f))(xs, ys).numpy(), ug.stack([f(a, b), f(2 * a, b + 1)]).numpy())
    if op == "diagonal":  # a program keeps it a view; a file has its ONNX form (a Gather)
        return
    # an op with an ONNX form for other dtypes (BitShift: unsigned) is refused by the exporter
    why = ("bitwise_left_shift of int32 tensors has no ONNX form" if op == "bitwise_left_shift"
           else f"calls unigrad back for {op}, which a file cannot hold")
    with pytest.raises(ValueError, match=why):
        ug.jit.save(f, str(tmp_path / "op.onnx"), a, b)


@pytest.mark.parametrize("view", ["diagonal", "unfold"])
def test_a_view_a_program_calls_back_is_saved_in_its_onnx_form(view, tmp_path):
    # jit.save writes such a function as ug.onnx.export does: ONNX Runtime runs the file
    import onnxruntime as ort
    fns = {"diagonal": lambda a, b: a.diagonal(1) * b.diagonal(-1),
           "unfold": lambda a, b: (a.unfold(1, 2, 1) * b[:, :3, None]).sum(-1)}
    f = fns[view]
    a, b = ug.randn(4, 4, dtype=ug.float64), ug.randn(4, 4, dtype=ug.float64)
    assert ug.jit(f).lower(a, b).called_back() == [view]
    path = str(tmp_path / f"{view}.onnx")
    ug.jit.save(f, path, a, b)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, dict(zip(names, (a.numpy(), b.numpy()))))[0]
    np.testing.assert_array_equal(got, f(a, b).numpy())  # the same products of the same elements
    # a module in training mode is not what a file in eval mode would run: refused as before
    class Diagonal(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = ug.nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x).diagonal()

    model = Diagonal()
    with pytest.raises(ValueError, match="calls unigrad back for diagonal"):
        ug.jit.save(ug.compile(model), str(tmp_path / "training.onnx"), a.float())
    model.eval()
    ug.jit.save(ug.compile(model), str(tmp_path / "eval.onnx"), a.float())
    np.testing.assert_allclose(ug.onnx.load(str(tmp_path / "eval.onnx"))(a.float()).detach().numpy(),
                               model(a.float()).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_onnx_export_takes_a_function_of_tensors_and_refuses_anything_else(tmp_path):
    import onnxruntime as ort
    a = ug.randn(3, 4)
    path = str(tmp_path / "f.onnx")
    ug.onnx.export(lambda x: (x * 2).softmax(-1), (a,), path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: a.numpy()})[0]
    np.testing.assert_allclose(got, (a * 2).softmax(-1).numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="model must be a ug.nn.Module or a function of tensors, got <class 'int'>"):
        ug.onnx.export(3, (a,), path)


def test_a_called_back_view_is_not_overwritten_by_a_later_op():
    # diagonal's call back returns a view of y: y's last reader may not write into it in
    # place (the storage has two holders), so d keeps y's values.
    def f(x):
        y = x * 2
        d = y.diagonal()
        return d, y + 1
    x = ug.randn(3, 3)
    for got, want in zip(ug.jit(f)(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_writes_into_a_traced_value_compile_functionally():
    # fill_ and index assignment on a copy: the program calls back their functional form (a new
    # tensor), never writing the caller's input.
    def f(x, v):
        y = x.clone()
        y[:, 1] = v
        return y * y.clone().fill_(3.0)
    x, v = ug.randn(3, 4), ug.randn(3)
    before = x.numpy().copy()
    np.testing.assert_array_equal(ug.jit(f)(x, v).numpy(), f(x, v).numpy())
    np.testing.assert_array_equal(x.numpy(), before)



def views_written_in_place():
    def diagonal(x):
        y = x.clone()
        y.diagonal().fill_(5.0)
        return y

    def row_then_column(x):
        y = x * 1
        y[:, 1].zero_()
        z = y[0]  # a view: it sees the write below
        y[1].mul_(2)
        return y, z, y.t()

    def an_argument(x):
        a = x[0]
        x[1].add_(a)
        x.t()[0].sub_(1)
        return a * 1, x.sum()

    def clamped(x):
        v = x[:, 0]
        v.clamp_(-0.1, 0.1)
        return v.sum(), x
    return [diagonal, row_then_column, an_argument, clamped]


@pytest.mark.parametrize("f", views_written_in_place(), ids=lambda f: f.__name__)
def test_writes_into_a_view_of_part_of_a_value_are_made_functional(f, tmp_path):
    # As torch.compile's functionalization: a write into x[0] is a scatter of the view's new
    # elements into x's value, and every other view of x (read before or after) reads x's new
    # value, as the eager views see the write (the program once refused, or kept stale views).
    jitted = ug.jit(f)
    for _ in range(3):
        x = ug.randn(3, 3)
        xe = x.clone()
        want = tree_leaves(f(xe))
        for got, w in zip(tree_leaves(jitted(x)), want):
            np.testing.assert_array_equal(got.numpy(), w.numpy())
        np.testing.assert_array_equal(x.numpy(), xe.numpy())
    assert jitted.cache_info().traces == 1
    if f.__name__ in ("an_argument", "clamped"):  # fill_ and zero_ are called back: no file form
        import onnxruntime as ort
        x = ug.randn(3, 3)
        path = str(tmp_path / "f.onnx")
        ug.jit.save(f, path, x)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        for g, w in zip(got, tree_leaves(f(x.clone()))):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("donate", [False, True])
def test_an_argument_written_in_place_is_written_back_at_every_call(donate):
    # torch-style x.add_(1) on an argument changes the caller's tensor, at the trace and at
    # every run of the program after it (a run once left it as it was).
    def f(x, y):
        x.mul_(2)
        y.sub_(x.t().t())
        return (x * y).sum()
    jitted = ug.jit(f, donate_argnums=(0,) if donate else ())
    for _ in range(3):
        x, y = ug.randn(3, 2), ug.randn(3, 2)
        xe, ye = x.clone(), y.clone()
        want = f(xe, ye)
        np.testing.assert_array_equal(jitted(x, y).numpy(), want.numpy())
        np.testing.assert_array_equal(y.numpy(), ye.numpy())
        if donate:
            assert x.is_deleted()
        else:
            np.testing.assert_array_equal(x.numpy(), xe.numpy())
    assert jitted.cache_info().traces == 1


@pytest.mark.parametrize("method", ["exp_", "neg_", "relu_", "abs_", "sqrt_", "tanh_", "sigmoid_"])
def test_a_value_written_in_place_by_a_unary_op_is_the_programs_result(method):
    # The export read an in-place op's input after naming its output, which is the same tensor:
    # the node read its own result ("not in topological order").
    def f(x):
        y = x + 0.5
        getattr(y, method)()
        return y * 2

    x = ug.rand(6)
    np.testing.assert_array_equal(ug.jit(f)(x).numpy(), f(x).numpy())


def test_an_in_place_op_on_a_value_that_requires_grad_compiles_in_a_backward():
    # Writing in place into a tensor that records gradients rebases its history on the ops'
    # own; under capture that op left its call open ("ran other ops without recording
    # itself"). mse_loss's gradient writes into the difference it makes.
    w = ug.randn(8, requires_grad=True)
    x, t = ug.randn(8), ug.randn(8)

    def step(x, t):
        loss = ug.nn.functional.mse_loss(x * w, t)
        loss.backward()
        return loss

    compiled = ug.compile(step)
    loss = compiled(x, t)
    got = w.grad.clone()
    w.grad = None
    want = step(x, t)
    close(loss, want)
    close(got, w.grad)


@pytest.mark.parametrize("fn", [lambda x: x.nonzero(), lambda x: x[x > 0], lambda x: x.masked_select(x > 0),
                                lambda x: x[(x > 0).all()]])
def test_an_output_shape_that_depends_on_the_data_is_refused_as_jax_does(fn):
    with pytest.raises(ValueError, match=r"op 'nonzero'.*depends on the data.*where\(mask, x, 0\).*count_nonzero"):
        ug.jit(fn)(ug.randn(3, 4))
    x = ug.randn(3, 4)
    assert ug.jit(ug.count_nonzero)(x).item() == ug.count_nonzero(x).item()
    with pytest.raises(ValueError, match=r"\[bincount\].*depends on the data.*scatter_add"):
        ug.jit(ug.bincount)(ug.tensor([0, 3]))
    # one_hot took its class count from the traced indices: a later call with a larger index
    # failed inside the program.
    with pytest.raises(ValueError, match=r"\[one_hot\] without num_classes.*depends on the data.*pass num_classes"):
        ug.jit(ug.nn.functional.one_hot)(ug.tensor([0, 1]))
    onehot = ug.jit(lambda i: ug.nn.functional.one_hot(i, 5))
    for i in ([0, 1], [4, 2]):
        np.testing.assert_array_equal(onehot(ug.tensor(i)).numpy(), np.eye(5, dtype=np.int64)[i])


def test_values_that_decide_what_an_op_reads_stay_traced():
    # A 0-d index (an int to torch) and histc's range from the data were read once, at the
    # trace: later calls took the traced element, or binned with the traced range.
    x = ug.randn(5, 4)
    pick = ug.jit(lambda x, i, j: (x[i] * 2, x[:, j], x[i, j]))
    histogram = ug.jit(lambda v: ug.histc(v, bins=6))
    fixed = ug.jit(lambda v: ug.histc(v, bins=4, min=-1.0, max=1.5))
    for i, j in ((1, 2), (4, -1), (-2, 0)):
        for got, want in zip(pick(x, ug.tensor(i), ug.tensor(j)), (x[i] * 2, x[:, j], x[i, j])):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        v = ug.randn(50) * (i + 3)
        for compiled, want in ((histogram, torch.histc(torch.tensor(v.numpy()), bins=6)),
                               (fixed, torch.histc(torch.tensor(v.numpy()), bins=4, min=-1.0, max=1.5))):
            np.testing.assert_array_equal(compiled(v).numpy(), want.numpy())
    assert pick.cache_info().traces == histogram.cache_info().traces == 1


def test_a_closed_over_tensor_written_in_place_retraces_once_then_is_read_live():
    # The program held the tensor's value at the trace: later calls kept adding 1 after c became 2.
    # Retraced, it reads c at every call (torch.compile's lifting): written at every step, c
    # retraced at every call, each time with the warning.
    c = ug.ones(2)
    f = ug.jit(lambda x: x + c * 3)
    np.testing.assert_array_equal(f(ug.zeros(2)).numpy(), [3, 3])
    c.add_(1)
    with pytest.warns(ug.compiled.RetraceWarning, match=r"traced again: a tensor it reads as a constant \(float32 \[2\]\) was "
                                             r"written in place since the trace.*from now on it reads this one at every call"):
        np.testing.assert_array_equal(f(ug.zeros(2)).numpy(), [6, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in range(3, 7):
            np.testing.assert_array_equal(f(ug.zeros(2)).numpy(), [3 * step - 3] * 2)
            c.add_(1)
        np.testing.assert_array_equal(f(ug.ones(2)).numpy(), [19, 19])
    assert f.cache_info().traces == 2 and f.cache_info().hits == 5
    # A step counter kept beside a module, torch style, written inside the step too.
    count = ug.zeros(())
    model = ug.nn.Linear(3, 1)

    def scaled(x):
        count.add_(1)
        return model(x) / count

    g, x = ug.jit(scaled), ug.randn(4, 3)
    for n in range(1, 5):
        np.testing.assert_allclose(g(x).numpy(), (model(x) / n).detach().numpy(), rtol=1e-6)
        if n == 2:
            count.mul_(1)  # written outside the step as well: still read live, no retrace
    assert g.cache_info().traces == 1 and float(count) == 4
    # A module's buffers are read at every call: a BatchNorm trained further eagerly needs no retrace.
    bn = ug.nn.BatchNorm1d(3).eval()
    g = ug.jit(lambda x: bn(x))
    x = ug.randn(4, 3)
    g(x)
    bn.train()
    bn(ug.randn(8, 3) * 5 + 2)
    bn.eval()
    np.testing.assert_array_equal(g(x).numpy(), bn(x).numpy())
    assert g.cache_info().traces == 1


@pytest.mark.parametrize("first", ["distinct", "shared"])
def test_arguments_sharing_memory_trace_their_own_program(first):
    # A trace follows the arguments' memory: traced on (a, a), a program read one input for
    # both (x * 2 + y of (a, zeros) gave zeros); traced on (a, b), it missed the write through x.
    def f(x, y):
        x.mul_(2)
        return x + y

    jitted = ug.jit(f)
    calls = [lambda: (ug.ones(3), ug.full((3,), 5.0)), lambda: (lambda a: (a, a))(ug.ones(3))]
    for make in calls if first == "distinct" else calls[::-1]:
        args, expected_args = make(), make()
        np.testing.assert_array_equal(jitted(*args).numpy(), f(*expected_args).numpy())
        np.testing.assert_array_equal(args[0].numpy(), expected_args[0].numpy())
    assert jitted.cache_info().traces == 2
    pure = ug.jit(lambda x, y: x * 2 + y)
    a = ug.ones(3)
    for args in ((a, a), (a, ug.zeros(3)), (a, a[:])):
        np.testing.assert_array_equal(pure(*args).numpy(), (args[0] * 2 + args[1]).numpy())
    assert pure.cache_info().traces == 2


def test_a_cpp_read_of_a_traced_value_raises_instead_of_freezing():
    # ug.equal answers a Python bool read in C++: the program would keep the trace's answer.
    f = ug.jit(lambda a, b: a * 2 if ug.equal(a, b) else a)
    with pytest.raises(TypeError, match=r"\[jit\] C\+\+ code read the value of a traced tensor \(bool \[\]\)"):
        f(ug.ones(3), ug.ones(3))
    # Checks of an input still run, on the trace's values (an index out of range here).
    g = ug.jit(lambda w, i: ug.nn.functional.embedding(i, w))
    with pytest.raises(IndexError, match="index out of range"):
        g(ug.randn(4, 2), ug.tensor([0, 7]))
    np.testing.assert_array_equal(g(ug.ones(4, 2), ug.tensor([0, 3])).numpy(), np.ones((2, 2), np.float32))


def test_masked_scatter_follows_each_calls_mask():
    # The trace's mask selected nothing, and the program kept that shortcut: later masks were ignored.
    scatter = ug.jit(lambda x, m, s: x.masked_scatter(m, s))
    x, source = np.zeros((2, 3), np.float32), np.arange(1, 7, dtype=np.float32)
    for mask in (np.zeros((2, 3), bool), np.array([[True, False, True], [False, True, True]]), np.ones((2, 3), bool)):
        want = torch.tensor(x).masked_scatter(torch.tensor(mask), torch.tensor(source))
        got = scatter(ug.tensor(x), ug.tensor(mask), ug.tensor(source))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert scatter.cache_info().traces == 1
    with pytest.raises(ValueError, match=r"\[masked_scatter\] source is empty"):
        scatter(ug.tensor(x), ug.tensor(np.zeros((2, 3), bool)), ug.zeros(0))


@pytest.mark.parametrize("stop", ["detach", "tf", "lax"])
def test_a_detach_inside_a_program_cuts_the_gradient_taken_through_it(stop, tmp_path):
    # grad(jit(f)) runs the program under autograd: the cut must be a node of the program, also
    # when the program was traced first by a call without gradients (the cache holds one).
    cut = {"detach": lambda t: t.detach(), "tf": ug.stop_gradient, "lax": ug.lax.stop_gradient}[stop]

    def f(a, m):
        return (a * cut(m) + cut(a * a)).sum()

    a, m = ug.randn(5, dtype=ug.float64), ug.randn(5, dtype=ug.float64)
    jitted = ug.jit(f)
    np.testing.assert_array_equal(jitted(a, m).numpy(), f(a, m).numpy())
    want = ug.grad(f, argnums=(0, 1))(a, m)
    np.testing.assert_array_equal(want[0].numpy(), m.numpy())
    np.testing.assert_array_equal(want[1].numpy(), np.zeros(5))
    for got in (ug.grad(jitted, argnums=(0, 1))(a, m), ug.jit(ug.grad(f, argnums=(0, 1)))(a, m)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    _, tangent = ug.jvp(jitted, (a, m), (ug.ones_like(a), ug.ones_like(m)))
    np.testing.assert_array_equal(tangent.numpy(), m.sum().numpy())
    # A file has no gradients: the cut is the value itself there, and ONNX Runtime runs it.
    import onnxruntime as ort
    path = str(tmp_path / "f.onnx")
    ug.jit.save(f, path, a, m)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, dict(zip(names, (a.numpy(), m.numpy()))))[0]
    np.testing.assert_allclose(got, f(a, m).numpy(), rtol=4 * 5 * np.finfo(np.float64).eps)


def test_a_no_grad_block_inside_a_program_cuts_the_gradient_taken_through_it(tmp_path):
    # Results of ops run inside `with no_grad()` are detached eagerly; a program that autograd
    # records through (grad of jit, an input that requires grad) once let the gradient flow
    # through them. Traced first by a call without gradients, as above.
    def f(a, m):
        with ug.no_grad():
            b = a * m
            c = ug.exp(a)
        return (a * b + c * m).sum()

    a, m = ug.randn(5, dtype=ug.float64), ug.randn(5, dtype=ug.float64)
    jitted = ug.jit(f)
    np.testing.assert_array_equal(jitted(a, m).numpy(), f(a, m).numpy())
    want = ug.grad(f, argnums=(0, 1))(a, m)
    np.testing.assert_array_equal(want[0].numpy(), (a * m).numpy())
    for got in (ug.grad(jitted, argnums=(0, 1))(a, m), ug.jit(ug.grad(f, argnums=(0, 1)))(a, m)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    x = a.clone().requires_grad_()
    jitted(x, m).backward()
    np.testing.assert_array_equal(x.grad.numpy(), want[0].numpy())
    path = str(tmp_path / "f.onnx")
    ug.jit.save(f, path, a, m)
    np.testing.assert_array_equal(ug.onnx.load(path)(a, m).detach().numpy(), f(a, m).numpy())


@pytest.mark.parametrize("first_call", ["no_grad", "inference_mode", "eval_step"])
def test_a_program_traced_without_grad_keeps_the_no_grad_blocks_of_the_function(first_call):
    # The first call, the one traced, ran with grad mode off around it (a validation pass): the
    # trace still tells the function's own no_grad blocks from that, so a later call that autograd
    # records through cuts the gradient at them, as eager does (it once let it flow).
    def f(a, m):
        with ug.no_grad():
            b = a * m
            with ug.enable_grad():
                c = a * a  # recorded again inside the block
        return (a * b + c * m).sum()

    a, m = ug.randn(5, dtype=ug.float64), ug.randn(5, dtype=ug.float64)
    jitted = ug.jit(f)
    if first_call == "eval_step":
        ug.no_grad()(jitted)(a, m)
    else:
        with (ug.no_grad() if first_call == "no_grad" else ug.inference_mode()):
            jitted(a, m)
    want = ug.grad(f)(a, m)
    np.testing.assert_allclose(want.numpy(), (a * m + 2 * a * m).numpy(), rtol=4 * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(ug.grad(jitted)(a, m).numpy(), want.numpy())
    x = a.clone().requires_grad_()
    jitted(x, m).backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.numpy())
    assert jitted.cache_info().misses == 1


# ---- control flow, against JAX -------------------------------------------------------------------


def as_jax(jax, t):
    return jax.numpy.asarray(t.numpy())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_cond_and_switch_against_jax(jax, compiled):
    lax = jax.lax
    wrap = ug.jit if compiled else (lambda f: f)
    x = ug.randn(5)

    def ug_f(x, k):
        a = ug.cond(x.sum() > k, lambda v: v.sin(), lambda v: v.cos() * 2, x)
        return ug.switch((x[0] > 0).int() + (x[1] > 0).int(), [lambda v: v, lambda v: -v, lambda v: v * v], a)

    def jax_f(x, k):
        a = lax.cond(x.sum() > k, lambda v: jax.numpy.sin(v), lambda v: jax.numpy.cos(v) * 2, x)
        return lax.switch((x[0] > 0).astype(int) + (x[1] > 0).astype(int), [lambda v: v, lambda v: -v, lambda v: v * v], a)

    for k in (-10.0, 10.0):
        close(wrap(ug_f)(x, ug.tensor(k)), jax_f(as_jax(jax, x), k), 1e-6)
    g = ug.grad(lambda x: ug_f(x, ug.tensor(0.0)).sum())(x)
    close(g, jax.grad(lambda x: jax_f(x, 0.0).sum())(as_jax(jax, x)), 1e-5)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_loops_and_scan_against_jax(jax, compiled):
    lax = jax.lax
    wrap = ug.jit if compiled else (lambda f: f)
    xs, h0 = ug.randn(6, 3), ug.randn(3)

    def ug_scan(h, xs):
        return ug.scan(lambda c, x: ((c * 0.5 + x).tanh(), c.sum()), h, xs)

    def jax_scan(h, xs):
        return lax.scan(lambda c, x: (jax.numpy.tanh(c * 0.5 + x), c.sum()), h, xs)

    # Six float32 tanh steps, each within a few ulps in either library: about 1e-6 apart.
    (hu, ysu), (hj, ysj) = wrap(ug_scan)(h0, xs), jax_scan(as_jax(jax, h0), as_jax(jax, xs))
    close(hu, hj, 1e-5)
    close(ysu, ysj, 1e-5)
    gu = ug.grad(lambda h: ug_scan(h, xs)[0].sum())(h0)
    close(gu, jax.grad(lambda h: jax_scan(h, as_jax(jax, xs))[0].sum())(as_jax(jax, h0)), 1e-5)
    fori = wrap(lambda v: ug.fori_loop(0, 4, lambda i, c: c * 2 + i, v))(h0)
    close(fori, lax.fori_loop(0, 4, lambda i, c: c * 2 + i, as_jax(jax, h0)), 1e-6)
    w = wrap(lambda h: ug.while_loop(lambda c: c.sum() < 100, lambda c: c * 2 + 1, h))(h0.abs())
    close(w, lax.while_loop(lambda c: c.sum() < 100, lambda c: c * 2 + 1, as_jax(jax, h0.abs())), 1e-6)


def newton_sqrt(lib, a):
    # Newton's iteration for sqrt(a), until the step is small or 50 steps: a carry pytree
    # (value, step count) and a condition on both.
    def cond(c):
        x, i = c
        return lib.logical_and(lib.abs(x * x - a).max() > 1e-5 * a.max(), i < 50)

    return cond, lambda c: ((c[0] + a / c[0]) * 0.5, c[1] + 1)


def test_while_loop_with_a_traced_condition_compiles_to_a_loop_against_jax(jax):
    jnp = jax.numpy

    def ug_f(a):
        cond, body = newton_sqrt(ug, a)
        return ug.while_loop(cond, body, (a, ug.tensor(0)))

    f = ug.jit(ug_f)
    for a in ([2.0, 9.0, 0.5], [100.0, 3.0, 7.0]):  # the trace's input, then another
        x, n = f(ug.tensor(a))
        cond, body = newton_sqrt(jnp, jnp.asarray(a))
        xj, nj = jax.lax.while_loop(cond, body, (jnp.asarray(a), 0))
        close(x, xj, 1e-6)
        assert int(n) == int(nj)
    assert f.cache_info().traces == 1
    assert "Loop" in f.lower(ug.tensor([2.0, 9.0, 0.5])).node_types()


def test_while_loop_counter_with_a_traced_bound_and_closures_against_jax(jax):
    jnp = jax.numpy

    def body(lib, k, w):  # closes over the traced bound and a traced tensor
        return lambda c: {"i": c["i"] + 1, "acc": lib.tanh(c["acc"] * w + k), "pair": (c["pair"][1], c["pair"][0] + 1.0)}

    def ug_f(k, w):
        init = {"i": ug.tensor(0), "acc": ug.zeros(3), "pair": (ug.tensor(1.0), ug.tensor(2.0))}
        return ug.while_loop(lambda c: c["i"] < k, body(ug, k, w), init)

    f = ug.jit(ug_f)
    for k, w in ((3, [0.5, -1.0, 2.0]), (7, [1.5, 0.25, -0.5]), (0, [1.0, 1.0, 1.0])):
        got = f(ug.tensor(k), ug.tensor(w))
        init = {"i": 0, "acc": jnp.zeros(3), "pair": (jnp.asarray(1.0), jnp.asarray(2.0))}
        want = jax.lax.while_loop(lambda c: c["i"] < k, body(jnp, k, jnp.asarray(w)), init)
        assert int(got["i"]) == int(want["i"]) == k
        close(got["acc"], want["acc"], 1e-6)
        close(got["pair"][0], want["pair"][0])
        close(got["pair"][1], want["pair"][1])
    assert f.cache_info().traces == 1


@pytest.mark.parametrize("order", ["eager", "jit_of_vmap", "vmap_of_jit"])
def test_while_loop_under_vmap_runs_each_example_to_its_own_end_against_jax(jax, order):
    jnp = jax.numpy

    def step(lib):  # a batched predicate and a closed-over batched limit
        return lambda x, limit: lib_while(lib)(lambda c: c[0].sum() < limit, lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0))

    def lib_while(lib):
        return ug.while_loop if lib is ug else jax.lax.while_loop

    f = {"eager": ug.vmap(step(ug)), "jit_of_vmap": ug.jit(ug.vmap(step(ug))),
         "vmap_of_jit": ug.vmap(ug.jit(step(ug)))}[order]
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        xs, limits = rng.uniform(0.1, 5, (4, 3)).astype(np.float32), rng.uniform(1, 300, 4).astype(np.float32)
        (x, n), (xj, nj) = f(ug.tensor(xs), ug.tensor(limits)), jax.vmap(step(jnp))(jnp.asarray(xs), jnp.asarray(limits))
        close(x, xj, 1e-6)
        np.testing.assert_array_equal(n.numpy(), np.asarray(nj))
        assert len(set(n.numpy().tolist())) > 1  # the examples stop at different steps


def test_while_loop_under_jit_is_forward_differentiable_against_jax(jax):
    jnp = jax.numpy

    def f(lib, x, k):
        return lib_while(lib)(lambda c: c[1] < k, lambda c: (lib.sin(c[0]) * 1.5 + 0.1 * c[0], c[1] + 1), (x, 0))[0]

    def lib_while(lib):
        return ug.while_loop if lib is ug else jax.lax.while_loop

    compiled = ug.jit(lambda x, t, k: ug.jvp(lambda x: f(ug, x, k), (x,), (t,)))
    for k in (4, 9):
        x, t = np.array([0.3, 0.7, -1.2], np.float32), np.array([1.0, -2.0, 0.5], np.float32)
        (y, dy), (yj, dyj) = compiled(ug.tensor(x), ug.tensor(t), ug.tensor(k)), jax.jvp(lambda x: f(jnp, x, k), (x,), (t,))
        close(y, yj, 1e-5)
        close(dy, dyj, 1e-5)


def test_fori_loop_with_traced_bounds_is_a_while_loop_against_jax(jax):
    jnp = jax.numpy

    def f(lib, x, lo, hi):
        loop = ug.fori_loop if lib is ug else jax.lax.fori_loop
        return loop(lo, hi, lambda i, c: c * 0.5 + i, x)

    compiled = ug.jit(lambda x, lo, hi: f(ug, x, lo, hi))
    for lo, hi in ((0, 4), (2, 9), (5, 5)):
        x = np.array([1.0, -2.0], np.float32)
        close(compiled(ug.tensor(x), ug.tensor(lo), ug.tensor(hi)), f(jnp, jnp.asarray(x), lo, hi), 1e-6)
    assert compiled.cache_info().traces == 1
    his = np.array([1, 3, 6])
    got = ug.jit(ug.vmap(lambda hi: f(ug, ug.ones(2), 0, hi)))(ug.tensor(his))
    close(got, jax.vmap(lambda hi: f(jnp, jnp.ones(2), 0, hi))(jnp.asarray(his)), 1e-6)


def test_forward_mode_through_a_loop_closing_over_a_value_with_a_tangent_is_refused():
    def f(w, t):
        return ug.jvp(lambda w: ug.while_loop(lambda c: c.sum() < 100, lambda c: c * w + 1, ug.ones(2)), (w,), (t,))

    with pytest.raises(ValueError, match="closes over a value with a tangent"):
        ug.jit(f)(ug.tensor(1.5), ug.tensor(1.0))


def test_while_loop_with_a_traced_condition_refuses_reverse_mode_as_jax_does(jax):
    def f(x, k):
        return ug.while_loop(lambda c: c[1] < k, lambda c: (c[0] * 2, c[1] + 1), (x, ug.tensor(0)))[0].sum()

    with pytest.raises(TypeError, match="reverse-mode differentiation does not work for a while_loop"):
        ug.jit(ug.grad(f))(ug.ones(2), ug.tensor(3))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        jax.grad(lambda x: jax.lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 2, c[1] + 1), (x, 0))[0].sum())(
            jax.numpy.ones(2))


def test_control_flow_inside_a_compiled_while_loop_body_against_jax(jax):
    jnp = jax.numpy

    def f(lib, x, k):
        loop = ug.while_loop if lib is ug else jax.lax.while_loop
        cond = ug.cond if lib is ug else jax.lax.cond

        def body(c):  # a loop and a cond on the carry, inside the body
            inner = loop(lambda d: d.sum() < c.sum() + 1, lambda d: d + 0.5, c)
            return cond(inner.sum() > 10, lambda v: v * 1.5, lambda v: v + 2, inner)

        return loop(lambda c: c.sum() < k, body, x)

    compiled = ug.jit(lambda x, k: f(ug, x, k))
    for x, k in (([1.0, 1.0], 20.0), ([3.0, 0.5], 60.0)):
        close(compiled(ug.tensor(x), ug.tensor(k)), f(jnp, jnp.asarray(x), k), 1e-6)
    with pytest.raises(TypeError, match="bool"):  # Python's if on the carry: traced, never a stand-in's value
        ug.jit(lambda x, k: ug.while_loop(lambda c: c.sum() < k, lambda c: c * 2 if c.sum() > 3 else c + 1, x))(
            ug.ones(2), ug.tensor(20.0))


def test_while_loop_checks_what_body_and_cond_return():
    f = ug.jit(lambda x, k: ug.while_loop(lambda c: c.sum() < k, lambda c: c[:1], x))
    with pytest.raises(TypeError, match=r"same shapes and dtypes: leaf 0 is float32 \[2\]"):
        f(ug.ones(2), ug.tensor(5.0))
    with pytest.raises(TypeError, match="boolean scalar"):
        ug.jit(lambda x: ug.while_loop(lambda c: c, lambda c: c * 2, x))(ug.ones(2))


def test_a_compiled_while_loop_calls_ops_back_from_its_body():
    """Ops a program calls back (cumprod, which ONNX lacks; a random draw; a fused backward
    kernel) work inside a Loop's body: each iteration calls them, as the eager loop does, so a
    seeded run draws the eager numbers, bit for bit."""

    def f(x, k):
        def body(c):
            return c.cumprod(0) * 0.5 + ug.rand(3) + ug.nn.functional.softmax(c, 0)

        return ug.while_loop(lambda c: c.sum() < k, body, x)

    compiled = ug.jit(f)
    x = ug.tensor([0.5, 0.25, 0.125])
    for k in (4.0, 9.0):
        ug.manual_seed(3)
        eager = [f(x, ug.tensor(k)) for _ in range(2)]
        ug.manual_seed(3)
        ran = [compiled(x, ug.tensor(k)) for _ in range(2)]
        for a, b in zip(ran, eager):
            assert np.array_equal(a.numpy(), b.numpy())
    types = compiled.lower(x, ug.tensor(4.0)).node_types()
    assert "Loop" in types and "UgReplay" not in types  # the replays are in the body


def test_a_saved_while_loop_runs_in_onnx_runtime():
    ort = pytest.importorskip("onnxruntime")

    def f(x, k):
        return ug.while_loop(lambda c: c.sum() < k, lambda c: c * 2 + 1, x)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "loop.onnx")
        ug.jit.save(ug.jit(f), path, ug.ones(2), ug.tensor(10.0))
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        for x, k in (([1.0, 2.0], 100.0), ([0.5, 0.25], 1000.0)):
            got = session.run(None, dict(zip(names, [np.array(x, np.float32), np.array(k, np.float32)])))[0]
            close(got, f(ug.tensor(x), ug.tensor(k)))


def test_cond_under_vmap_selects_per_example():
    xs = ug.tensor([[1.0, 2.0], [-3.0, -1.0]])
    out = ug.vmap(lambda v: ug.cond(v.sum() > 0, lambda u: u * 2, lambda u: u * 3, v))(xs)
    close(out, [[2, 4], [-9, -3]])


@pytest.mark.parametrize("index", [-5, -1, 0, 4, -6, -7, -10, -11, 5])
def test_a_programs_tensor_index_is_checked_as_eagerly(index):
    """Before: the program wrapped a negative index once and its Gather wrapped it again, so
    indices in [-2n, -n) read (and wrote) an element instead of raising."""
    x = ug.arange(5.0)
    read = ug.jit(lambda x, i: x[i])
    write = ug.jit(lambda x, i: x.clone().index_put((i.reshape(1),), ug.tensor([9.0])))
    taken = ug.jit(lambda x, i: ug.take(x, i))
    read(x, ug.tensor(1)), write(x, ug.tensor(1)), taken(x, ug.tensor(1))
    for f in (read, write, taken):
        i = ug.tensor(index)
        try:
            expected = f._fun(x, i)
        except IndexError:
            with pytest.raises(Exception, match=rf"index {index} is out of (range|bounds)") as raised:
                f(x, i)
            if f is write:  # the program's node names the line that traced it
                assert f"(at {__file__}:" in str(raised.value), raised.value
        else:
            assert f(x, i).tolist() == expected.tolist()


def test_numbers_among_the_outputs_come_back_as_the_front_ends_do():
    """jax.jit and tf.function return a number among the outputs as an array, torch.compile
    as it is: jit returned the Python numbers (JAX: Array(2.0), Array(3))."""
    import jax
    import jax.numpy as jnp

    def f(x):
        return x.sum(), 2.0, {"n": 3, "flag": True, "name": "step"}

    ours = ug.jit(f)(ug.ones(3))
    theirs = jax.jit(lambda x: (x.sum(), 2.0, {"n": 3, "flag": True}))(jnp.ones(3))
    assert all(isinstance(v, ug.Tensor) for v in (ours[1], ours[2]["n"], ours[2]["flag"]))
    assert (float(ours[1]), int(ours[2]["n"]), bool(ours[2]["flag"])) == (2.0, 3, True)
    assert float(theirs[1]) == 2.0 and ours[2]["name"] == "step"
    assert ug.function(f)(ug.ones(3))[1].item() == 2.0
    kept = ug.compile(f)(ug.ones(3))
    assert kept[1] == 2.0 and type(kept[1]) is float and kept[2]["n"] == 3
