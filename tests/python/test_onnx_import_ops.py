"""The op table of ug.onnx.load, one small graph per case, against onnxruntime on random inputs:
the attribute and input forms of each op (pads, strides, negative steps, 0 and -1 in Reshape,
axes as attribute or input per opset...)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

import unigrad as ug

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(*values):
    return np.array(values, np.int64)


def run_both(nodes, feeds, consts=None, opset=20, n_out=1, atol=1e-5, reference=None):
    """Builds a graph with `feeds` as inputs and `consts` as initializers, runs it in ug and in
    onnxruntime (or `reference`, a runner of the model's bytes), compares."""
    consts = consts or {}
    elem = {np.dtype(np.float32): F, np.dtype(np.int64): I64, np.dtype(bool): B}
    inputs = [helper.make_tensor_value_info(k, elem[v.dtype], v.shape) for k, v in feeds.items()]
    outputs = [ValueInfoProto(name=f"y{i}" if n_out > 1 else "y") for i in range(n_out)]
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    data = shape_inference.infer_shapes(model, strict_mode=True).SerializeToString()  # fills in the output types
    expected = (reference or (lambda d: ort.InferenceSession(d).run(None, feeds)))(data)
    m = ug.onnx.load_bytes(data)
    actual = m.forward(*[ug.tensor(v) for v in feeds.values()])
    actual = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape
        np.testing.assert_allclose(a.numpy(), e, rtol=1e-5, atol=atol)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


CASES = {
    "gemm_trans_alpha_beta": ([node("Gemm", ["a", "b", "c"], transA=1, alpha=0.5, beta=2.0)],
                              {"a": randn(4, 3), "b": randn(4, 5), "c": randn(1, 5)}, {}),
    "gemm_no_bias": ([node("Gemm", ["a", "b"], transB=1)], {"a": randn(2, 3), "b": randn(4, 3)}, {}),
    "matmul_batched": ([node("MatMul", ["a", "b"])], {"a": randn(2, 1, 3, 4), "b": randn(3, 4, 5)}, {}),
    "arith": ([node("Add", ["a", "b"], ["s"]), node("Mul", ["s", "a"], ["m"]), node("Sub", ["m", "b"], ["d"]),
               node("Div", ["d", "b"], ["q"]), node("Pow", ["a", "b2"], ["p"]), node("Add", ["q", "p"], ["y"])],
              {"a": randn(3, 4), "b": randn(4) + 3, "b2": np.full((1,), 2.0, np.float32)}, {}),
    "unary": ([node("Abs", ["x"], ["a"]), node("Sqrt", ["a"], ["s"]), node("Log", ["s"], ["l"]), node("Exp", ["l"], ["e"]),
               node("Neg", ["e"], ["n"]), node("Tanh", ["n"], ["t"]), node("Sigmoid", ["t"], ["g"]), node("Erf", ["g"], ["r"]),
               node("Reciprocal", ["r"], ["y"])], {"x": randn(3, 4) + 0.1}, {}),
    "activations": ([node("Gelu", ["x"], ["g"], approximate="tanh"), node("LeakyRelu", ["g"], ["l"], alpha=0.2),
                     node("Elu", ["l"], ["e"]), node("HardSigmoid", ["e"], ["h"]), node("HardSwish", ["h"], ["y"])],
                    {"x": randn(3, 4)}, {}),
    "softmax_logsoftmax": ([node("Softmax", ["x"], ["s"], axis=1), node("LogSoftmax", ["s"], ["y"], axis=0)],
                           {"x": randn(3, 4, 2)}, {}),
    "integer_div_mod": ([node("Div", ["a", "b"], ["d"]), node("Mod", ["a", "b"], ["m"]), node("Mod", ["a", "b"], ["f"], fmod=1),
                         node("Concat", ["d", "m", "f"], axis=0)],
                        {"a": ints(7, -7, 7, -7, 9), "b": ints(2, 2, -2, -2, 3)}, {}),
    "compare_where": ([node("Less", ["a", "b"], ["l"]), node("Greater", ["a", "b"], ["g"]), node("Equal", ["a", "a"], ["e"]),
                       node("Not", ["l"], ["n"]), node("And", ["n", "e"], ["c"]), node("Or", ["c", "g"], ["o"]),
                       node("Where", ["o", "a", "b"], ["y"])], {"a": randn(3, 4), "b": randn(4)}, {}),
    "cast_castlike": ([node("Cast", ["x"], ["i"], to=I64), node("CastLike", ["i", "x"], ["y"])], {"x": randn(5) * 4}, {}),
    "conv_asymmetric_pads_strides_dilations": (
        [node("Conv", ["x", "w", "b"], pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2])],
        {"x": randn(2, 3, 7, 8)}, {"w": randn(4, 3, 3, 2), "b": randn(4)}),
    "conv_groups_same_upper": ([node("Conv", ["x", "w"], group=2, auto_pad="SAME_UPPER", strides=[2, 2])],
                               {"x": randn(1, 4, 6, 5)}, {"w": randn(6, 2, 3, 3)}),
    "conv_1d": ([node("Conv", ["x", "w"], pads=[1, 1])], {"x": randn(2, 3, 9)}, {"w": randn(4, 3, 3)}),
    "conv_transpose": ([node("ConvTranspose", ["x", "w", "b"], strides=[2, 2], pads=[1, 0, 0, 1], output_padding=[1, 0])],
                       {"x": randn(1, 3, 4, 5)}, {"w": randn(3, 2, 3, 3), "b": randn(2)}),
    "conv_transpose_output_shape": ([node("ConvTranspose", ["x", "w"], strides=[2], output_shape=[10])],
                                    {"x": randn(1, 2, 5)}, {"w": randn(2, 3, 3)}),
    "max_pool_pads_ceil": ([node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
                           {"x": randn(1, 2, 7, 6)}, {}),
    "max_pool_asymmetric": ([node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[0, 1, 1, 0])], {"x": randn(1, 2, 5, 5)}, {}),
    "max_pool_indices": ([node("MaxPool", ["x"], ["y0", "y1"], kernel_shape=[2, 2], strides=[2, 2])],
                         {"x": randn(2, 3, 4, 6)}, {}, 2),
    "average_pool_excluding_pads": ([node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                                    {"x": randn(1, 2, 5, 5)}, {}),
    "average_pool_asymmetric": ([node("AveragePool", ["x"], kernel_shape=[2, 3], pads=[0, 1, 1, 2], strides=[1, 2])],
                                {"x": randn(1, 2, 5, 6)}, {}),
    "average_pool_including_pads": ([node("AveragePool", ["x"], kernel_shape=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)],
                                    {"x": randn(1, 1, 4, 4)}, {}),
    "global_pools": ([node("GlobalAveragePool", ["x"], ["a"]), node("GlobalMaxPool", ["x"], ["m"]), node("Add", ["a", "m"])],
                     {"x": randn(2, 3, 4, 5)}, {}),
    "batch_norm": ([node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)], {"x": randn(2, 3, 4, 4)},
                   {"s": randn(3), "b": randn(3), "m": randn(3), "v": np.abs(randn(3)) + 0.5}),
    "layer_norm_axis": ([node("LayerNormalization", ["x", "s", "b"], axis=1, epsilon=1e-3)], {"x": randn(2, 3, 4)},
                        {"s": randn(3, 4), "b": randn(3, 4)}),
    "dropout_inference": ([node("Dropout", ["x"], ["y0", "y1"])], {"x": randn(3, 4)}, {}, 2),
    "reshape_zero_minus_one": ([node("Reshape", ["x", "s"])], {"x": randn(2, 3, 4)}, {"s": ints(0, -1, 2)}),
    "flatten_transpose": ([node("Transpose", ["x"], ["t"], perm=[2, 0, 1]), node("Flatten", ["t"], axis=2)],
                          {"x": randn(2, 3, 4)}, {}),
    "split_sizes_and_equal": ([node("Split", ["x", "s"], ["a", "b"], axis=1), node("Split", ["x"], ["c", "d", "e"], axis=1, num_outputs=3),
                               node("Concat", ["b", "a", "e", "d", "c"], axis=1)], {"x": randn(2, 7)}, {"s": ints(3, 4)}),
    "slice_negative_steps": ([node("Slice", ["x", "st", "en", "ax", "sp"])], {"x": randn(5, 6, 7)},
                             {"st": ints(-1, 1, 100), "en": ints(-100, 5, 0), "ax": ints(0, 1, 2), "sp": ints(-2, 3, -3)}),
    "slice_huge_steps": ([node("Slice", ["x", "st", "en", "ax", "sp"])], {"x": randn(5, 6)},
                         {"st": ints(1, -1), "en": ints(2**62, -2**62), "ax": ints(0, 1), "sp": ints(2**62, -2**62)}),
    "slice_default_axes": ([node("Slice", ["x", "st", "en"])], {"x": randn(5, 6)}, {"st": ints(1, -4), "en": ints(2**62, -1)}),
    "gather_negative_and_matrix_indices": ([node("Gather", ["x", "i"], axis=1)], {"x": randn(3, 5, 2)},
                                           {"i": np.array([[0, -1], [2, -5]], np.int64)}),
    "gather_scalar_index": ([node("Gather", ["x", "i"])], {"x": randn(4, 3)}, {"i": np.array(-2, np.int64)}),
    "gather_elements": ([node("GatherElements", ["x", "i"], axis=1)], {"x": randn(3, 4)}, {"i": ints(0, 3, -1, 2).reshape(1, 4).repeat(3, 0)}),
    "squeeze_unsqueeze": ([node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u", "b"], ["s"]), node("Squeeze", ["s"])],
                          {"x": randn(3, 1, 4)}, {"a": ints(0, -1), "b": ints(-1)}),
    "shape_size": ([node("Shape", ["x"], ["s"], start=1, end=-1), node("Size", ["x"], ["n"]), node("Unsqueeze", ["n", "z"], ["u"]),
                    node("Concat", ["s", "u"], axis=0)], {"x": randn(2, 3, 4, 5)}, {"z": ints(0)}),
    "constants": ([node("Constant", [], ["a"], value=numpy_helper.from_array(randn(2, 3))),
                   node("Constant", [], ["b"], value_float=2.5), node("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0]),
                   node("Mul", ["a", "b"], ["m"]), node("Add", ["m", "c"])], {}, {}),
    "constant_of_shape_expand_tile": ([node("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.array([3], np.int64))),
                                       node("Cast", ["c"], ["f"], to=F), node("Expand", ["x", "e"], ["x2"]),
                                       node("Tile", ["x2", "t"], ["x3"]), node("Add", ["x3", "f"])],
                                      {"x": randn(3, 1)}, {"s": ints(2, 3, 4), "e": ints(2, 1, 2), "t": ints(1, 1, 2)}),
    "range_int_and_float": ([node("Range", ["a", "b", "c"], ["r"]), node("Range", ["fa", "fb", "fc"], ["f"]),
                             node("Cast", ["r"], ["rf"], to=F), node("Concat", ["rf", "f"], axis=0)],
                            {}, {"a": np.array(10, np.int64), "b": np.array(-3, np.int64), "c": np.array(-3, np.int64),
                                 "fa": np.array(0.5, np.float32), "fb": np.array(2.0, np.float32), "fc": np.array(0.25, np.float32)}),
    "trilu": ([node("Trilu", ["x", "k"], ["u"]), node("Trilu", ["x"], ["l"], upper=0), node("Add", ["u", "l"])],
              {"x": randn(2, 4, 5)}, {"k": np.array(1, np.int64)}),
    "reduce_axes_input": ([node("ReduceMean", ["x", "a"], ["m"]), node("ReduceSum", ["x", "a"], ["s"], keepdims=0),
                           node("ReduceMax", ["x", "a"], ["x1"]), node("ReduceMin", ["x"], ["x2"], keepdims=0),
                           node("ReduceL2", ["x", "a"], ["l2"]), node("ReduceLogSumExp", ["x", "a"], ["ls"]),
                           node("ReduceProd", ["x", "a"], ["p"]), node("ReduceSumSquare", ["x", "a"], ["q"]),
                           node("Unsqueeze", ["s", "a"], ["su"]), node("Sum", ["m", "su", "x1", "x2", "l2", "ls", "p", "q"])],
                          {"x": randn(2, 3, 4)}, {"a": ints(1, -1)}),
    "reduce_axes_attribute_opset13": ([node("ReduceMean", ["x"], ["m"], axes=[0]), node("ReduceSum", ["x", "a"], ["s"]),
                                       node("Add", ["m", "s"])], {"x": randn(3, 4)}, {"a": ints(0)}, 1, 13),
    "reduce_noop": ([node("ReduceSum", ["x", "a"], noop_with_empty_axes=1)], {"x": randn(3, 4)}, {"a": np.zeros(0, np.int64)}),
    "argmax_last_index": ([node("ArgMax", ["x"], ["a"], axis=1, select_last_index=1), node("ArgMin", ["x"], ["b"], axis=0, keepdims=0),
                           node("Unsqueeze", ["b", "z"], ["bu"]), node("Concat", ["a", "bu"], axis=1)],
                          {"x": np.round(randn(4, 4))}, {"z": ints(1)}),
    "pad_modes": ([node("Pad", ["x", "p", "v"], ["a"]), node("Pad", ["x", "p"], ["b"], mode="reflect"),
                   node("Pad", ["x", "p"], ["c"], mode="edge"), node("Add", ["a", "b"], ["ab"]), node("Add", ["ab", "c"])],
                  {"x": randn(3, 4)}, {"p": ints(1, 2, 0, 1), "v": np.array(1.5, np.float32)}),
    "clip_min_max": ([node("Clip", ["x", "lo", "hi"])], {"x": randn(3, 4)}, {"lo": np.array(-0.5, np.float32), "hi": np.array(0.3, np.float32)}),
    "cumsum_reverse_exclusive": ([node("CumSum", ["x", "a"], reverse=1, exclusive=1)], {"x": randn(3, 4)}, {"a": np.array(1, np.int64)}),
    "variadic_max_min_mean": ([node("Max", ["a", "b", "c"], ["m"]), node("Min", ["a", "b"], ["n"]), node("Mean", ["m", "n", "c"])],
                              {"a": randn(3, 4), "b": randn(4), "c": randn(3, 1)}, {}),
    "lstm_bidirectional_with_state": ([node("LSTM", ["x", "w", "r", "b", "", "h", "c"], ["y0", "y1", "y2"], hidden_size=3,
                                           direction="bidirectional")],
                                     {"x": randn(4, 2, 5)}, {"w": randn(2, 12, 5), "r": randn(2, 12, 3), "b": randn(2, 24),
                                                             "h": randn(2, 2, 3), "c": randn(2, 2, 3)}, 3),
    "gru_reset_after": ([node("GRU", ["x", "w", "r", "b"], ["y0", "y1"], hidden_size=3, linear_before_reset=1)],
                        {"x": randn(4, 2, 5)}, {"w": randn(1, 9, 5), "r": randn(1, 9, 3), "b": randn(1, 18)}, 2),
    "gru_reset_before_bidirectional": ([node("GRU", ["x", "w", "r", "b", "", "h"], ["y0", "y1"], hidden_size=3,
                                             direction="bidirectional")],
                                       {"x": randn(4, 2, 5)}, {"w": randn(2, 9, 5), "r": randn(2, 9, 3), "b": randn(2, 18),
                                                               "h": randn(2, 2, 3)}, 2),
    "isnan_isinf": ([node("IsInf", ["x"], ["i"], detect_negative=0), node("IsNaN", ["x"], ["n"]), node("Or", ["i", "n"])],
                    {"x": np.array([1.0, np.inf, -np.inf, np.nan], np.float32)}, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_onnxruntime(case):
    nodes, feeds, consts, *rest = CASES[case]
    n_out = rest[0] if rest else 1
    opset = rest[1] if len(rest) > 1 else 20
    run_both(nodes, feeds, consts, opset=opset, n_out=n_out)


def test_op_gradients_flow_through_shape_arithmetic():
    """Reshape with a shape computed by Shape/Gather/Concat keeps the gradient of its data."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "z"], ["n"]), node("Unsqueeze", ["n", "z1"], ["n1"]),
             node("Concat", ["n1", "m1"], ["shape"], axis=0), node("Reshape", ["x", "shape"], ["r"]),
             node("Mul", ["r", "w"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["n", 3, 4])],
                              [helper.make_tensor_value_info("y", F, None)],
                              initializer=[numpy_helper.from_array(np.array(0, np.int64), "z"),
                                           numpy_helper.from_array(ints(0), "z1"), numpy_helper.from_array(ints(-1), "m1"),
                                           numpy_helper.from_array(randn(12), "w")])
    m = ug.onnx.load_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString())
    assert [n for n, _ in m.named_parameters()] == ["w"]
    assert sorted(n for n, _ in m.named_buffers()) == ["m1", "z", "z1"]
    x = ug.tensor(randn(2, 3, 4), requires_grad=True)
    m(x).sum().backward()
    np.testing.assert_allclose(m.w.grad.numpy(), x.detach().numpy().reshape(2, 12).sum(0), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(m.w.detach().numpy(), (2, 12)).reshape(2, 3, 4))


def test_lstm_batch_first_layout_matches_the_reference_evaluator():
    """onnxruntime has no layout=1 recurrences; onnx's reference implementation does."""
    feeds = {"x": randn(2, 4, 5)}
    nodes = [node("LSTM", ["x", "w", "r", "", "", "h"], ["y0", "y1"], hidden_size=3, direction="reverse", layout=1)]
    run_both(nodes, feeds, {"w": randn(1, 12, 5), "r": randn(1, 12, 3), "h": randn(2, 1, 3)}, n_out=2,
             reference=lambda data: ReferenceEvaluator(data).run(None, feeds))


def test_initializer_names_become_dotted_paths_where_they_can():
    names = ["enc.fc.weight", "enc.fc.bias", "a", "a.b", "x..y", ".lead", "onnx::MatMul_7", "steps"]
    consts = {n: randn(3) for n in names[:-1]}
    consts["steps"] = ints(1, 2, 3)
    nodes = [node("Sum", names[:-1], ["s"]), node("Cast", ["steps"], ["f"], to=F), node("Add", ["s", "f"])]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", F, [3])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = ug.onnx.load_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString())
    # This module's own tensors come first, then its children's (as Module orders them).
    assert [n for n, _ in m.named_parameters()] == ["a", "a_b", "x__y", "_lead", "onnx::MatMul_7", "enc.fc.weight",
                                                    "enc.fc.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps"]
    assert sorted(m.state_dict()) == sorted([n for n, _ in m.named_parameters()] + ["steps"])
    np.testing.assert_allclose(m().numpy(), sum(consts[n] for n in names[:-1]) + consts["steps"], rtol=1e-6)


# Ops whose form changed between these opsets and 13, which ONNX's version converter rewrites
# (attributes become inputs, Softmax's 2-D coercion becomes a per-axis softmax); and opsets past
# 21, whose versions of these ops only added element types.
OPSET_CASES = {
    "softmax_opset11": (11, [node("Softmax", ["x"], axis=1)], {"x": randn(2, 3, 4)}),
    "slice_opset9": (9, [node("Slice", ["x"], starts=[1, 0], ends=[3, -1], axes=[0, 2])], {"x": randn(4, 3, 5)}),
    "unsqueeze_squeeze_opset11": (11, [node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), node("Squeeze", ["u"], axes=[0])],
                                  {"x": randn(2, 3)}),
    "reduce_sum_opset11": (11, [node("ReduceSum", ["x"], axes=[1], keepdims=0)], {"x": randn(2, 3, 4)}),
    "split_opset7": (7, [node("Split", ["x"], ["y0", "y1"], axis=1, split=[1, 2])], {"x": randn(2, 3)}),
    "reshape_transpose_opset23": (23, [node("Reshape", ["x", "s"], ["r"]), node("Transpose", ["r"], perm=[1, 0])],
                                  {"x": randn(2, 3), "s": ints(3, 2)}),
}


@pytest.mark.parametrize("case", OPSET_CASES)
def test_opsets_before_13_and_after_21_match_onnxruntime(case):
    opset, nodes, feeds = OPSET_CASES[case]
    run_both(nodes, feeds, opset=opset, n_out=len(nodes[-1].output))


def targets(*shape, classes=5, ignore=None):
    t = rng.integers(0, classes, shape).astype(np.int64)
    if ignore is not None:
        t.flat[::3] = ignore
    return t


MORE_OP_CASES = {
    "nll_mean": (20, [node("NegativeLogLikelihoodLoss", ["x", "t"])], {"x": randn(4, 5), "t": targets(4)}),
    "nll_weight_ignore_sum": (20, [node("NegativeLogLikelihoodLoss", ["x", "t", "w"], reduction="sum", ignore_index=-1)],
                              {"x": randn(3, 5, 2), "t": targets(3, 2, ignore=-1), "w": randn(5) + 2}),
    "nll_weight_ignore_none": (20, [node("NegativeLogLikelihoodLoss", ["x", "t", "w"], reduction="none", ignore_index=2)],
                             {"x": randn(2, 5, 3, 2), "t": targets(2, 3, 2, ignore=2), "w": randn(5) + 2}),
    "sce_mean_log_prob": (20, [node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y0", "y1"])],
                          {"x": randn(4, 5, 3), "t": targets(4, 3)}),
    "sce_weight_ignore_mean": (20, [node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ignore_index=0)],
                               {"x": randn(6, 5), "t": targets(6, ignore=0), "w": randn(5) + 2}),
    "rms_norm_last_axes": (23, [node("RMSNormalization", ["x", "s"], axis=-2, epsilon=1e-3)],
                           {"x": randn(2, 3, 4), "s": randn(3, 4)}),
    "rms_norm_broadcast_scale": (23, [node("RMSNormalization", ["x", "s"])], {"x": randn(2, 3, 4), "s": randn(4)}),
    "celu_hardmax_lp_norm": (20, [node("Celu", ["x"], ["c"], alpha=0.7), node("Hardmax", ["c"], ["h"], axis=1),
                                  node("LpNormalization", ["x"], ["l"], axis=0, p=1), node("Add", ["h", "l"])],
                             {"x": randn(3, 4, 2)}),
    "attention_4d_gqa_causal_past": (
        23, [node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y0", "y1", "y2"], is_causal=1)],
        {"q": randn(2, 4, 3, 8), "k": randn(2, 2, 3, 8), "v": randn(2, 2, 3, 5), "pk": randn(2, 2, 4, 8),
         "pv": randn(2, 2, 4, 5)}),
    "attention_3d_float_mask_scale_probs": (
        23, [node("Attention", ["q", "k", "v", "m"], ["y0", "", "", "y1"], q_num_heads=2, kv_num_heads=2, scale=0.3,
                  qk_matmul_output_mode=3)],
        {"q": randn(2, 3, 8), "k": randn(2, 5, 8), "v": randn(2, 5, 6), "m": randn(3, 5)}),
    "attention_bool_mask_softcap": (
        23, [node("Attention", ["q", "k", "v", "m"], softcap=2.0)],
        {"q": randn(1, 2, 3, 4), "k": randn(1, 2, 5, 4), "v": randn(1, 2, 5, 4),
         "m": np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)}),
    "top_k_ties_smallest": (20, [node("TopK", ["x", "k"], ["y0", "y1"], axis=0, largest=0)],
                            {"x": np.array([[3, 1], [1, 1], [2, 0], [1, 5]], np.float32), "k": ints(3)}),
    "top_k_largest_last_axis": (20, [node("TopK", ["x", "k"], ["y0", "y1"])], {"x": randn(3, 6), "k": ints(2)}),
    "scatter_elements_add_negative_indices": (
        20, [node("ScatterElements", ["x", "i", "u"], axis=1, reduction="add")],
        {"x": randn(3, 4), "i": np.array([[0, -1], [2, 2], [-4, 1]], np.int64), "u": randn(3, 2)}),
    "scatter_elements": (20, [node("ScatterElements", ["x", "i", "u"])],
                         {"x": randn(3, 4), "i": np.array([[2, 0, 1, 1]], np.int64), "u": randn(1, 4)}),
    "one_hot_axis_negative_indices": (20, [node("OneHot", ["i", "d", "v"], axis=0)],
                                      {"i": np.array([[0, -1], [7, 2]], np.int64), "d": ints(4),
                                       "v": np.array([-2, 3], np.float32)}),
    "resize_nearest_asymmetric_floor": (
        20, [node("Resize", ["x", "", "s"], mode="nearest", coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor")], {"x": randn(1, 2, 3, 4), "s": np.array([1, 1, 2.5, 1.5], np.float32)}),
    "resize_nearest_half_pixel_round": (20, [node("Resize", ["x", "", "", "z"])],
                                        {"x": randn(1, 1, 5, 4), "z": ints(1, 1, 3, 7)}),
    "resize_linear_sizes_axes": (20, [node("Resize", ["x", "", "", "z"], mode="linear", axes=[3, 2])],
                                 {"x": randn(2, 1, 4, 6), "z": ints(4, 7)}),
    "resize_cubic_exclude_outside_pytorch": (
        20, [node("Resize", ["x", "", "s"], mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5,
                  coordinate_transformation_mode="pytorch_half_pixel")],
        {"x": randn(1, 2, 4, 4), "s": np.array([1, 1, 0.5, 1.75], np.float32)}),
    "resize_linear_align_corners_whole": (
        20, [node("Resize", ["x", "", "s"], mode="linear", coordinate_transformation_mode="align_corners")],
        {"x": randn(1, 1, 3, 4), "s": np.array([1, 1, 2, 0.5], np.float32)}),
    "rotary_4d_interleaved_positions_partial": (
        23, [node("RotaryEmbedding", ["x", "c", "s", "p"], interleaved=1, rotary_embedding_dim=4)],
        {"x": randn(2, 3, 5, 6), "c": randn(8, 2), "s": randn(8, 2), "p": np.array([[0, 1, 2, 3, 4], [7, 6, 5, 4, 3]])}),
    "rotary_3d_halves": (23, [node("RotaryEmbedding", ["x", "c", "s"], num_heads=2)],
                         {"x": randn(2, 5, 8), "c": randn(2, 5, 2), "s": randn(2, 5, 2)}),
    "compress_axis_short_condition": (20, [node("Compress", ["x", "m"], axis=-1)],
                                      {"x": randn(2, 3, 5), "m": np.array([1, 0, 1, 1], bool)}),
    "compress_flattened": (20, [node("Compress", ["x", "m"])], {"x": randn(2, 3), "m": np.array([0, 1, 0, 0, 1, 1], bool)}),
    "depth_to_space_dcr_crd": (20, [node("DepthToSpace", ["x"], ["d"], blocksize=2),
                                    node("DepthToSpace", ["x"], ["e"], blocksize=2, mode="CRD"), node("Sub", ["d", "e"])],
                               {"x": randn(2, 8, 2, 3)}),
    "space_to_depth": (20, [node("SpaceToDepth", ["x"], blocksize=3)], {"x": randn(1, 2, 6, 3)}),
    "einsum_batch_matmul_spaces": (20, [node("Einsum", ["a", "b"], equation="bij, bjk -> bik")],
                                   {"a": randn(2, 3, 4), "b": randn(2, 4, 5)}),
    "einsum_ellipsis_implicit": (20, [node("Einsum", ["a"], equation="...ii")], {"a": randn(2, 3, 3)}),
    "thresholded_relu_eye_like": (20, [node("ThresholdedRelu", ["x"], ["t"], alpha=0.3),
                                       node("EyeLike", ["x"], ["e"], k=-1), node("Add", ["t", "e"])], {"x": randn(4, 5)}),
    "lp_norm_zero_vector": (20, [node("LpNormalization", ["x"])], {"x": np.array([[0, 0], [3, 4]], np.float32)}),
    "reduce_log_sum": (20, [node("ReduceLogSum", ["x", "a"], keepdims=0)], {"x": randn(3, 4) ** 2, "a": ints(1)}),
    "swish": (24, [node("Swish", ["x"], alpha=0.5)], {"x": randn(3, 4)}),
    "cum_prod_exclusive_reverse": (26, [node("CumProd", ["x", "a"], exclusive=1, reverse=1)],
                                   {"x": randn(3, 4), "a": np.array(1, np.int64)}),
}


@pytest.mark.parametrize("case", MORE_OP_CASES)
def test_more_ops_match_onnxruntime(case):
    opset, nodes, feeds = MORE_OP_CASES[case]
    run_both(nodes, feeds, opset=opset, n_out=len([o for o in nodes[-1].output if o]))


def test_nll_loss_refuses_targets_out_of_range():
    with pytest.raises(ValueError, match=r"NegativeLogLikelihoodLoss node .*target values must be in \[0, 5\)"):
        run_both([node("NegativeLogLikelihoodLoss", ["x", "t"])], {"x": randn(2, 5), "t": ints(1, 5)},
                 reference=lambda data: [np.zeros(())])
