"""ug.onnx.load's normalizations, pooling of any rank, indexing ops, Det and Resize's modes beyond
the official node suite: forms it does not cover against onnxruntime (or onnx's reference where
onnxruntime differs), gradients against torch, and the refusals of what is not supported."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug
from test_onnx_import_ops import ints, node, randn, run_both

F = TensorProto.FLOAT


def reference(feeds):
    return lambda data: ReferenceEvaluator(data).run(None, feeds)


CASES = {
    "lrn": ([node("LRN", ["x"], size=5, alpha=0.01, beta=0.6, bias=1.5)], {"x": randn(2, 7, 3, 4)}, {}),
    "lrn_window_past_the_channels": ([node("LRN", ["x"], size=9)], {"x": randn(1, 3, 2, 2)}, {}),
    "instance_norm_3d": ([node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-3)], {"x": randn(2, 3, 4, 2, 3)},
                         {"s": randn(3), "b": randn(3)}),
    "mvn_axes": ([node("MeanVarianceNormalization", ["x"], axes=[1, 2])], {"x": randn(2, 3, 4)}, {}),
    "shrink": ([node("Shrink", ["x"], lambd=0.7, bias=0.2)], {"x": randn(4, 5)}, {}),
    "maxpool_3d_pads_ceil": ([node("MaxPool", ["x"], kernel_shape=[3, 2, 2], pads=[2, 0, 1, 1, 1, 0], strides=[2, 2, 1],
                                   ceil_mode=1)], {"x": randn(1, 2, 7, 6, 5)}, {}),
    "averagepool_dilated_pads": ([node("AveragePool", ["x"], kernel_shape=[2, 3], dilations=[2, 1], pads=[1, 2, 1, 2],
                                       count_include_pad=1)], {"x": randn(2, 2, 6, 7)}, {}),
    "averagepool_3d_asymmetric": ([node("AveragePool", ["x"], kernel_shape=[2, 2, 3], pads=[1, 0, 0, 0, 1, 2])],
                                  {"x": randn(1, 3, 4, 5, 6)}, {}),
    "conv_transpose_3d": ([node("ConvTranspose", ["x", "w", "b"], strides=[2, 1, 2], dilations=[1, 2, 1], group=2,
                                pads=[1, 0, 1, 0, 2, 1], output_padding=[1, 0, 0])],
                          {"x": randn(2, 4, 3, 2, 3)}, {"w": randn(4, 3, 3, 2, 2), "b": randn(6)}),
    "lppool_1d_pads": ([node("LpPool", ["x"], kernel_shape=[3], pads=[1, 1], strides=[2], p=3)], {"x": randn(2, 3, 9)}, {}),
    "scatter_nd_duplicates_mul": ([node("ScatterND", ["x", "i", "u"], reduction="mul")], {"x": randn(4, 3), "u": randn(3, 3)},
                                  {"i": ints(1, 3, 1).reshape(3, 1)}, 1, 18),
    "scatter_nd_elements_add": ([node("ScatterND", ["x", "i", "u"], reduction="add")], {"x": randn(2, 3), "u": randn(3)},
                                {"i": ints(0, 1, 1, 2, 0, 1).reshape(3, 2)}, 1, 18),
    "scatter_elements_max_axis1": ([node("ScatterElements", ["x", "i", "u"], axis=1, reduction="max")],
                                   {"x": randn(3, 4), "u": randn(3, 2)}, {"i": ints(0, 0, 3, -1, 2, 2).reshape(3, 2)}, 1, 18),
    "gather_nd_batch_dims": ([node("GatherND", ["x", "i"], batch_dims=1)], {"x": randn(2, 3, 4)},
                             {"i": ints(2, 0, 1, -1).reshape(2, 2, 1)}),
    "reverse_sequence_batch_first": ([node("ReverseSequence", ["x", "l"], time_axis=1, batch_axis=0)],
                                     {"x": randn(3, 4, 2)}, {"l": ints(4, 1, 3)}),
    "det_batched": ([node("Det", ["x"])], {"x": randn(3, 4, 4)}, {}),
    "det_singular": ([node("Det", ["x"])], {"x": np.array([[1, 2], [2, 4]], np.float32)}, {}),
    "max_unpool_1d": ([node("MaxUnpool", ["x", "i"], kernel_shape=[2], strides=[2])],
                      {"x": randn(1, 2, 3)}, {"i": ints(1, 2, 5, 6, 9, 10).reshape(1, 2, 3)}),
}

# onnxruntime has no kernel for these forms (Mod fmod=0 of floats), or computes them otherwise
# than onnx's reference, which the node suite follows (Resize, ConvTranspose's grown output).
REFERENCE_CASES = {
    "unique_rows_unsorted": ([node("Unique", ["x"], ["y0", "y1", "y2", "y3"], axis=0, sorted=0)],
                             {"x": np.array([[2, 1], [0, 3], [2, 1], [0, 2]], np.float32)}, {}, 4),
    "center_crop_pad_axes": ([node("CenterCropPad", ["x", "s"], axes=[-1, 1])], {"x": randn(2, 5, 4)}, {"s": ints(7, 2)}),
    "resize_antialias_cubic_axes": ([node("Resize", ["x", "", "sc"], mode="cubic", antialias=1, axes=[2, 3])],
                                    {"x": randn(1, 2, 9, 7)}, {"sc": np.array([0.4, 0.7], np.float32)}),
    "resize_antialias_linear_sizes": ([node("Resize", ["x", "", "", "sz"], mode="linear", antialias=1)],
                                      {"x": randn(1, 2, 9, 7)}, {"sz": ints(1, 2, 4, 3)}),
    "resize_linear_align_corners_fractional": (
        [node("Resize", ["x", "", "sc"], mode="linear", coordinate_transformation_mode="align_corners")],
        {"x": randn(1, 1, 5, 4)}, {"sc": np.array([1, 1, 1.5, 0.7], np.float32)}),
    "resize_not_smaller": ([node("Resize", ["x", "", "", "sz"], mode="linear", keep_aspect_ratio_policy="not_smaller",
                                 axes=[3, 2])], {"x": randn(1, 2, 4, 6)}, {"sz": ints(5, 5)}),
    "resize_crop_nearest_extrapolation": (
        [node("Resize", ["x", "roi", "", "sz"], coordinate_transformation_mode="tf_crop_and_resize",
              extrapolation_value=-2.0, axes=[2])],
        {"x": randn(1, 2, 6, 3)}, {"roi": np.array([-0.2, 0.85], np.float32), "sz": ints(5)}),
    "conv_transpose_grown_bias": ([node("ConvTranspose", ["x", "w", "b"], strides=[2, 1], output_shape=[9, 4])],
                                  {"x": randn(1, 2, 4, 3)}, {"w": randn(2, 3, 2, 2), "b": randn(3)}),
    "mod_float_python_sign": ([node("Mod", ["a", "b"])], {"a": randn(6) * 5, "b": randn(6) + 0.1}, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_onnxruntime(case):
    nodes, feeds, consts, *rest = CASES[case]
    run_both(nodes, feeds, consts, n_out=rest[0] if rest else 1, opset=rest[1] if len(rest) > 1 else 20, atol=1e-4)


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_op_matches_onnx_reference(case):
    nodes, feeds, consts, *rest = REFERENCE_CASES[case]
    run_both(nodes, feeds, consts, n_out=rest[0] if rest else 1, opset=19, atol=1e-5, reference=reference(feeds))


def test_batch_norm_training_mode_outputs_match_onnx_reference():
    feeds = {"x": randn(3, 2, 4, 5)}
    consts = {"s": randn(2), "b": randn(2), "m": randn(2), "v": np.abs(randn(2)) + 0.5}
    nodes = [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y0", "y1", "y2"], training_mode=1, momentum=0.8)]
    run_both(nodes, feeds, consts, n_out=3, opset=15, reference=reference(feeds))


def test_lstm_peepholes_match_onnxruntime():
    nodes = [node("LSTM", ["x", "w", "r", "b", "", "", "", "p"], ["y0", "y1", "y2"], hidden_size=3,
                  direction="bidirectional")]
    consts = {"w": randn(2, 12, 4), "r": randn(2, 12, 3), "b": randn(2, 24), "p": randn(2, 9)}
    run_both(nodes, {"x": randn(5, 2, 4)}, consts, n_out=3)


def test_training_dropout_mask_marks_the_kept_values():
    nodes = [node("Dropout", ["x", "r", "t"], ["y0", "y1"])]
    consts = {"r": np.array(0.4, np.float32), "t": np.array(True)}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [50, 40])],
                              [helper.make_tensor_value_info("y0", F, None), helper.make_tensor_value_info("y1", 9, None)],
                              initializer=[helper.make_tensor(k, TensorProto.FLOAT if v.dtype == np.float32 else 9, [],
                                                              [v.item()]) for k, v in consts.items()])
    m = ug.onnx.load_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString())
    x = randn(50, 40)
    y, mask = (t.numpy() for t in m(ug.tensor(x)))
    np.testing.assert_allclose(y, np.where(mask, x / 0.6, 0), rtol=1e-6)
    assert 0.5 < mask.mean() < 0.7


def load(nodes, inputs, opset=20):
    """A model of `nodes` with float inputs of the given shapes (int64 for one named "i")."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, TensorProto.INT64 if k == "i" else F, v)
                                           for k, v in inputs.items()],
                              [helper.make_tensor_value_info(o, F, None) for o in nodes[-1].output])
    return ug.onnx.load_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())


def grads_of(m, *arrays):
    xs = [ug.tensor(a, requires_grad=True) for a in arrays]
    y = m(*xs)
    (y * ug.tensor(np.cos(np.arange(y.numel(), dtype=np.float32)).reshape(y.shape))).sum().backward()
    return [x.grad.numpy() for x in xs]


def torch_grads(fn, *arrays):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*xs)
    (y * torch.cos(torch.arange(y.numel(), dtype=torch.float32)).reshape(y.shape)).sum().backward()
    return [x.grad.numpy() for x in xs]


T = torch.nn.functional
GRAD_CASES = {
    "lrn": ([node("LRN", ["x"], size=3, alpha=0.1, beta=0.75, bias=1.0)], {"x": [2, 5, 3, 3]},
            lambda x: T.local_response_norm(x, 3, alpha=0.1, beta=0.75, k=1.0)),
    "group_norm": ([node("GroupNormalization", ["x", "s", "b"], num_groups=2)], {"x": [2, 4, 3], "s": [4], "b": [4]},
                   lambda x, s, b: T.group_norm(x, 2, s, b), 21),
    "instance_norm": ([node("InstanceNormalization", ["x", "s", "b"])], {"x": [2, 3, 5], "s": [3], "b": [3]},
                      lambda x, s, b: T.instance_norm(x, weight=s, bias=b)),
    "mish": ([node("Mish", ["x"])], {"x": [3, 4]}, T.mish),
    "swiglu": ([node("SwiGLU", ["a", "b"], alpha=1.5)], {"a": [3, 4], "b": [3, 4]},
               lambda a, b: a * torch.sigmoid(1.5 * a) * b, 28),
    "lppool": ([node("LpPool", ["x"], kernel_shape=[2, 2], p=2)], {"x": [1, 2, 4, 4]}, lambda x: T.lp_pool2d(x, 2, 2, 1)),
    "maxpool_3d": ([node("MaxPool", ["x"], kernel_shape=[2, 2, 2], strides=[2, 2, 2])], {"x": [1, 2, 4, 4, 4]},
                   lambda x: T.max_pool3d(x, 2)),
    "averagepool_3d": ([node("AveragePool", ["x"], kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1])], {"x": [1, 1, 4, 5, 3]},
                       lambda x: T.avg_pool3d(x, 3, 1, 1, count_include_pad=False)),
    "conv_transpose_3d": ([node("ConvTranspose", ["x", "w"], strides=[3, 1, 2], pads=[1, 0, 1, 1, 1, 1])],
                          {"x": [1, 2, 3, 3, 2], "w": [2, 2, 2, 3, 2]},
                          lambda x, w: T.conv_transpose3d(x, w, stride=(3, 1, 2))[:, :, 1:-1, :-1, 1:-1]),
    "det": ([node("Det", ["x"])], {"x": [2, 3, 3]}, torch.linalg.det),
    "asin_acos_atan": ([node("Asin", ["x"], ["a"]), node("Acos", ["x"], ["b"]), node("Atan", ["x"], ["c"]),
                        node("Atanh", ["x"], ["d"]), node("Sum", ["a", "b", "c", "d"])], {"x": [3, 4]},
                       lambda x: torch.asin(x) + torch.acos(x) + torch.atan(x) + torch.atanh(x)),
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_gradients_match_torch(case):
    nodes, shapes, fn, *rest = GRAD_CASES[case]
    arrays = [np.tanh(randn(*s)) * (0.9 if case == "asin_acos_atan" else 3) for s in shapes.values()]
    m = load(nodes, shapes, opset=rest[0] if rest else 20)
    for got, want in zip(grads_of(m, *arrays), torch_grads(fn, *arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("nodes, inputs, message", [
    ([node("GroupNormalization", ["x", "s", "s"], num_groups=2, stash_type=11)], {"x": [1, 4, 2], "s": [4]},
     "only stash_type=1"),
    ([node("GroupNormalization", ["x", "s", "s"], num_groups=3)], {"x": [1, 4, 2], "s": [4]}, "does not divide"),
    ([node("Resize", ["x", "", "s"], antialias=1)], {"x": [1, 1, 4, 4], "s": [4]}, "antialias applies to linear"),
    ([node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2])], {"x": [1, 1, 4, 4, 4]}, "indices are supported for"),
    ([node("ScatterND", ["x", "i", "x"], reduction="sub")], {"x": [2], "i": [2, 1]}, "reduction must be none, add"),
    ([node("ScatterElements", ["x", "i", "x"], reduction="sub")], {"x": [2], "i": [2]}, "reduction must be none, add"),
    ([node("LRN", ["x"], size=0)], {"x": [1, 2, 3]}, "size must be positive"),
    ([node("Det", ["x"])], {"x": [2, 3]}, r"must be \[..., n, n\]"),
])
def test_unsupported_forms_are_refused_naming_the_op(nodes, inputs, message):
    feeds = [np.zeros(s, np.int64) if k == "i" else np.ones(s, np.float32) for k, s in inputs.items()]
    m = load(nodes, inputs, opset=21)
    with pytest.raises(ValueError, match=f"{nodes[0].op_type} node .*{message}"):
        m(*[ug.tensor(f) for f in feeds])


def test_scatter_indices_out_of_range_are_refused():
    m = load([node("ScatterND", ["x", "i", "u"])], {"x": [3], "i": [1, 1], "u": [1]})
    with pytest.raises(ValueError, match="index 3 is out of range for a dim of 3"):
        m(ug.tensor(randn(3)), ug.tensor(ints(3).reshape(1, 1)), ug.tensor(randn(1)))
    m = load([node("ScatterElements", ["x", "i", "u"], axis=0)], {"x": [2, 3], "i": [1, 2], "u": [1, 2]})
    with pytest.raises(ValueError, match="index -3 is out of range for a dim of 2"):
        m(ug.tensor(randn(2, 3)), ug.tensor(ints(0, -3).reshape(1, 2)), ug.tensor(randn(1, 2)))


def test_work_past_the_element_limit_is_refused():
    """Scatter reductions rewrite the data once per repeat of a target, pooling reads every window's
    cells: both are bounded by LoadLimits::max_elements like the tensors a file asks for."""
    nodes = [node("ScatterElements", ["x", "i", "u"], reduction="max")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [100]),
                                           helper.make_tensor_value_info("i", TensorProto.INT64, [20]),
                                           helper.make_tensor_value_info("u", F, [20])],
                              [helper.make_tensor_value_info("y", F, None)])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()
    m = ug.onnx.load_bytes(data, max_elements=1000)
    with pytest.raises(ValueError, match="repeat a target 20 times over 100 elements"):
        m(ug.tensor(randn(100)), ug.tensor(np.zeros(20, np.int64)), ug.tensor(randn(20)))
    np.testing.assert_allclose(m(ug.tensor(np.zeros(100, np.float32)), ug.tensor(np.arange(20)),
                                 ug.tensor(np.ones(20, np.float32))).numpy(), np.r_[np.ones(20), np.zeros(80)])
    graph = helper.make_graph([node("MaxPool", ["x"], kernel_shape=[4, 4, 4])], "g",
                              [helper.make_tensor_value_info("x", F, [1, 1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", F, None)])
    m = ug.onnx.load_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString(),
                           max_elements=5000)
    with pytest.raises(ValueError, match="LoadLimits::max_elements"):
        m(ug.tensor(randn(1, 1, 8, 8, 8)))
