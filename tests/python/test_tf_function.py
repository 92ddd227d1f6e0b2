"""tf.function's concrete functions (ug.function(...).get_concrete_function), against TensorFlow's:
the signature and output specs they report, the values they compute, and the calls they refuse."""
import numpy as np
import pytest

import unigrad as ug


def spec_tuple(spec):
    """A TensorSpec (ours or TensorFlow's) as (shape, dtype name, name)."""
    shape = tuple(spec.shape) if not hasattr(spec.shape, "as_list") else tuple(spec.shape.as_list())
    return shape, str(spec.dtype).removeprefix("unigrad.").removeprefix("<dtype: '").removesuffix("'>"), spec.name


def pair(x, y):
    return {"sum": x + y, "dots": (x * y).sum(1)}


def tf_pair(tf):
    return tf.function(lambda x, y: {"sum": x + y, "dots": tf.reduce_sum(x * y, axis=1)})


def test_a_concrete_function_reports_tensorflows_signature_and_outputs(tf):
    ours = ug.function(pair).get_concrete_function(ug.TensorSpec([None, 3]), ug.TensorSpec([None, 3]))
    theirs = tf_pair(tf).get_concrete_function(tf.TensorSpec([None, 3], tf.float32),
                                               tf.TensorSpec([None, 3], tf.float32))
    (ours_args, ours_kwargs), (their_args, their_kwargs) = ours.structured_input_signature, \
        theirs.structured_input_signature
    assert [spec_tuple(s) for s in ours_args] == [spec_tuple(s) for s in their_args] == [
        ((None, 3), "float32", "x"), ((None, 3), "float32", "y")]
    assert ours_kwargs == their_kwargs == {}
    assert {k: spec_tuple(v)[:2] for k, v in ours.structured_outputs.items()} == {
        k: spec_tuple(v)[:2] for k, v in theirs.structured_outputs.items()} == {
        "sum": ((None, 3), "float32"), "dots": ((None,), "float32")}
    assert ours.output_shapes == {"sum": (None, 3), "dots": (None,)}
    assert ours.output_dtypes == {"sum": ug.float32, "dots": ug.float32}
    assert "x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 3)" in ours.pretty_printed_signature()


def test_a_concrete_function_computes_what_tensorflow_computes_at_every_size_from_one_program(tf):
    runs = []

    def counted(x, y):
        runs.append(1)  # Python runs only while traced (x.shape here would tie the program to it)
        return pair(x, y)

    concrete = ug.function(counted).get_concrete_function(ug.TensorSpec([None, 3]), ug.TensorSpec([None, 3]))
    theirs = tf_pair(tf)
    rng = np.random.default_rng(0)
    for n in [4, 1, 7, 2]:
        x, y = rng.standard_normal((2, n, 3)).astype(np.float32)
        got, expected = concrete(ug.tensor(x), y=ug.tensor(y)), theirs(x, y)
        np.testing.assert_array_equal(got["sum"].numpy(), expected["sum"].numpy())
        # Three products summed: orders of summation differ by an ulp or two of the largest term.
        np.testing.assert_allclose(got["dots"].numpy(), expected["dots"].numpy(), rtol=0,
                                   atol=3 * np.finfo(np.float32).eps * np.abs(x * y).sum(1).max())
    assert len(runs) == 2  # the traces at sizes 2 and 3, at get_concrete_function; every call runs the program


def test_a_concrete_function_refuses_tensors_that_do_not_fit_its_specs():
    concrete = ug.function(lambda x, y: (x * 2, y + 1)).get_concrete_function(ug.TensorSpec([None, 3]), ug.ones(2, 3))
    assert [s.shape for s in concrete.structured_input_signature[0]] == [(None, 3), (2, 3)]
    with pytest.raises(TypeError, match=r"argument x \(float64\[2, 3\]\) does not fit TensorSpec\(shape=\(None, 3\)"):
        concrete(ug.ones(2, 3, dtype=ug.float64), ug.ones(2, 3))
    with pytest.raises(TypeError, match=r"argument y \(float32\[4, 3\]\) does not fit TensorSpec\(shape=\(2, 3\)"):
        concrete(ug.ones(4, 3), ug.ones(4, 3))
    with pytest.raises(TypeError, match=r"argument x \(float32\[2\]\) does not fit"):
        concrete(ug.ones(2), ug.ones(2, 3))
    with pytest.raises(TypeError, match="missing the tensor arguments \\['y'\\]"):
        concrete(ug.ones(2, 3))
    with pytest.raises(TypeError, match="takes 2 tensor arguments"):
        concrete(ug.ones(2, 3), ug.ones(2, 3), ug.ones(2, 3))
    with pytest.raises(TypeError, match="given no TensorSpec"):
        ug.function(pair).get_concrete_function(1.0, 2.0)
    # A size of None takes sizes 11 and 13 in the traces: one that only a size 2 fits says so.
    with pytest.raises(ValueError, match=r"dimension 0: 11 vs 2") as raised:
        ug.function(pair).get_concrete_function(ug.TensorSpec([None, 3]), ug.ones(2, 3))
    assert "the specs' None sizes at 11" in str(raised.value.__notes__)


def test_python_arguments_are_bound_at_get_concrete_function_as_tensorflow_binds_them(tf):
    def scaled(x, scale, training=False):
        return x * scale if training else x

    ours = ug.function(scaled).get_concrete_function(ug.TensorSpec([None]), 2.0, training=True)
    theirs = tf.function(scaled).get_concrete_function(tf.TensorSpec([None], tf.float32), 2.0, training=True)
    ours_args, their_args = ours.structured_input_signature[0], theirs.structured_input_signature[0]
    assert spec_tuple(ours_args[0]) == spec_tuple(their_args[0]) and ours_args[1:] == their_args[1:] == (2.0, True)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(ours(x).numpy(), theirs(tf.constant(x)).numpy())
    np.testing.assert_array_equal(ours(x, training=True).numpy(), 2 * x)
    with pytest.raises(TypeError, match="training is bound to True"):
        ours(x, training=False)


def test_the_input_signature_and_methods_give_concrete_functions(tf):
    sig = [ug.TensorSpec([2, None], ug.float64)]
    double = ug.function(lambda x: x * 2, input_signature=sig).get_concrete_function()
    assert [spec_tuple(s) for s in double.structured_input_signature[0]] == [((2, None), "float64", "x")]
    np.testing.assert_array_equal(double(ug.ones(2, 5, dtype=ug.float64)).numpy(), np.full((2, 5), 2.0))

    class Shifter(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = ug.nn.Parameter(ug.ones(1, dtype=ug.float64))

        @ug.function(input_signature=sig)
        def __call__(self, x):
            return x + self.shift

    class TFShifter(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2, None], tf.float64)])
        def __call__(self, x):
            return x + 1

    shifter = Shifter()
    ours, theirs = shifter.__call__.get_concrete_function(), TFShifter().__call__.get_concrete_function()
    assert [spec_tuple(s) for s in ours.structured_input_signature[0]] == [
        spec_tuple(s) for s in theirs.structured_input_signature[0]]
    assert ours.output_shapes == tuple(theirs.output_shapes.as_list()) == (2, None)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ours(x=x).numpy(), theirs(x=x).numpy())
    with ug.no_grad():
        shifter.shift.fill_(5.0)  # a parameter is read as it is at each call
    np.testing.assert_array_equal(ours(x).numpy(), x + 5)
    with pytest.raises(TypeError, match="does not match the input_signature"):
        shifter(np.ones((3, 3)))


def test_sizes_an_output_does_not_take_from_the_none_dims_stay_known():
    concrete = ug.function(lambda x, w: (x @ w).sum(0)).get_concrete_function(ug.TensorSpec([None, 4]), ug.ones(4, 5))
    assert concrete.output_shapes == (5,)
    with pytest.raises(TypeError, match="has no rank"):
        ug.function(lambda x: x).get_concrete_function(ug.TensorSpec(None))


def test_a_saved_concrete_function_runs_in_onnxruntime_at_any_size_of_its_none_dims(tmp_path):
    """tf.saved_model.save(module, path, signatures=concrete)'s role: ug.jit.save(concrete, path)
    writes the program for any size in the specs' None dims, symbolic in the file."""
    ort = pytest.importorskip("onnxruntime")
    ug.manual_seed(0)
    layer = ug.nn.Linear(16, 8)

    @ug.function
    def features(x):
        return ug.tanh(layer(x)).mean(1)

    concrete = features.get_concrete_function(ug.TensorSpec([None, None, 16]))
    assert concrete.output_shapes == (None, 8)
    assert "Gemm" in str(concrete.graph) or "MatMul" in str(concrete.graph)
    path = tmp_path / "features.onnx"
    ug.jit.save(concrete, path)
    session = ort.InferenceSession(str(path))
    assert [isinstance(d, str) for d in session.get_inputs()[0].shape] == [True, True, False]
    for n, t in ((1, 5), (7, 2)):
        x = ug.randn(n, t, 16)
        (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        # A sum of 16 products and the bias a value, in any order (tanh and the mean over t do
        # not enlarge its error), plus tanh's and the mean's own roundings.
        terms = np.abs(x.numpy()) @ np.abs(layer.weight.detach().numpy()).T + np.abs(layer.bias.detach().numpy())
        atol = 17 * np.finfo(np.float32).eps * terms.max() + 4 * np.finfo(np.float32).eps
        np.testing.assert_allclose(out, concrete(x).numpy(), rtol=0, atol=atol)
    with pytest.raises(TypeError, match="specs give its arguments"):
        ug.jit.save(concrete, path, ug.randn(2, 2, 16))


@pytest.mark.parametrize("body", ["x * 2", "x + 3.0", "x.softmax(-1) * 2", "x ** 2 / 3"])
def test_small_literals_of_the_body_keep_the_none_dims_symbolic(body, tmp_path):
    """Before: traced at sizes 2 and 3, a literal 2 or 3 was read as that size at one of them,
    the traces differed, and the file held the size-2 program."""
    ort = pytest.importorskip("onnxruntime")
    fun = eval("lambda x: " + body)  # noqa: S307 (the parametrized bodies above)
    concrete = ug.function(fun, input_signature=[ug.TensorSpec([None, 4])]).get_concrete_function()
    path = tmp_path / "f.onnx"
    ug.jit.save(concrete, path)
    session = ort.InferenceSession(str(path))
    assert isinstance(session.get_inputs()[0].shape[0], str)
    x = ug.randn(5, 4)
    (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    np.testing.assert_allclose(out, fun(x).numpy(), rtol=4 * np.finfo(np.float32).eps, atol=0)
