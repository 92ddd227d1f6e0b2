"""NonMaxSuppression, RoiAlign and Col2Im beyond the node suite's cases: random overlapping boxes in
both box formats against onnxruntime; RoiAlign's modes, coordinate transforms and sampling grids
against onnxruntime, its gradient against finite differences; Col2Im with padding, strides and dilations against torch's fold
(outputs and gradients) and, in 1-d and 3-d, against onnx's reference; the refusals."""
import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug

F, I64 = TensorProto.FLOAT, TensorProto.INT64
rng = np.random.default_rng(0)


def model_bytes(op, inputs, **attrs):
    g = helper.make_graph([helper.make_node(op, [n for n, _, _ in inputs], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", I64 if op == "NonMaxSuppression" else inputs[0][1], None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_non_max_suppression_matches_onnxruntime(center, score_threshold):
    xy = rng.uniform(0, 4, (2, 30, 2)).astype(np.float32)
    wh = rng.uniform(0.5, 2, (2, 30, 2)).astype(np.float32)
    # Corner boxes with either corner first; centre boxes as [x, y, w, h].
    flip = rng.random((2, 30, 1)) < 0.5
    corners = np.where(flip, np.concatenate([xy + wh, xy], -1), np.concatenate([xy, xy + wh], -1))
    boxes = np.concatenate([xy, wh], -1) if center else corners
    feeds = {"boxes": boxes.astype(np.float32), "scores": rng.random((2, 3, 30)).astype(np.float32),
             "max": np.array([7], np.int64), "iou": np.array([0.2], np.float32)}
    names = ["boxes", "scores", "max", "iou"]
    if score_threshold is not None:
        feeds["score"] = np.array([score_threshold], np.float32)
        names.append("score")
    types = {"boxes": F, "scores": F, "max": I64, "iou": F, "score": F}
    data = model_bytes("NonMaxSuppression", [(n, types[n], list(feeds[n].shape)) for n in names], center_point_box=center)
    expected = ort.InferenceSession(data).run(None, feeds)[0]
    actual = ug.onnx.load_bytes(data).forward(*[ug.tensor(feeds[n]) for n in names]).numpy()
    assert len(expected) > 10
    np.testing.assert_array_equal(actual, expected)


def col2im(x, image, block, **attrs):
    data = model_bytes("Col2Im", [("x", F, list(x.shape)), ("image", I64, [len(image)]), ("block", I64, [len(block)])],
                       **attrs)
    return data, [x, np.array(image, np.int64), np.array(block, np.int64)]


def test_col2im_matches_torch_fold_with_gradients():
    x = rng.standard_normal((2, 3 * 2 * 3, 4 * 2)).astype(np.float32)
    data, feeds = col2im(x, [5, 6], [2, 3], pads=[1, 0, 2, 1], strides=[2, 2], dilations=[1, 2])
    ux = ug.tensor(x, requires_grad=True)
    y = ug.onnx.load_bytes(data).forward(ux, *[ug.tensor(v) for v in feeds[1:]])
    tx = torch.tensor(x, requires_grad=True)
    # torch's fold pads symmetrically: fold into the padded image, then crop it.
    ty = torch.nn.functional.fold(tx, (5 + 3, 6 + 1), (2, 3), dilation=(1, 2), stride=(2, 2))[:, :, 1:6, 0:6]
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    w = rng.standard_normal(ty.shape).astype(np.float32)
    (y * ug.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("image,block,attrs", [([9], [3], {"strides": [2], "pads": [1, 2]}),
                                               ([4, 3, 5], [2, 1, 3], {"dilations": [1, 2, 1], "pads": [0, 1, 1, 1, 0, 0]})])
def test_col2im_1d_and_3d_match_the_reference(image, block, attrs):
    counts = []
    pads = attrs.get("pads", [0] * 2 * len(image))
    for i, (n, k) in enumerate(zip(image, block)):
        span = attrs.get("dilations", [1] * len(image))[i] * (k - 1) + 1
        counts.append((n + pads[i] + pads[len(image) + i] - span) // attrs.get("strides", [1] * len(image))[i] + 1)
    x = rng.standard_normal((1, 2 * int(np.prod(block)), int(np.prod(counts)))).astype(np.float32)
    data, feeds = col2im(x, image, block, **attrs)
    expected = ReferenceEvaluator(data).run(None, dict(zip(["x", "image", "block"], feeds)))[0]
    actual = ug.onnx.load_bytes(data).forward(*[ug.tensor(v) for v in feeds]).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)


def test_detection_refusals():
    data = model_bytes("NonMaxSuppression", [("b", F, [1, 2, 3]), ("s", F, [1, 1, 2])])
    with pytest.raises(ValueError, match=r"NonMaxSuppression node .* boxes must have shape \[batches, boxes, 4\]"):
        ug.onnx.load_bytes(data).forward(ug.zeros(1, 2, 3), ug.zeros(1, 1, 2))
    data, feeds = col2im(np.zeros((1, 4, 5), np.float32), [3, 3], [2, 2])
    with pytest.raises(ValueError, match=r"Col2Im node .* does not hold blocks of 4 values at 4 positions"):
        ug.onnx.load_bytes(data).forward(*[ug.tensor(v) for v in feeds])


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_matches_onnxruntime(mode, transform, ratio):
    x = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
    # Boxes inside, across the border, tiny and past the image.
    rois = np.array([[0.5, 1, 6, 5.5], [-2, -1, 4, 3], [3, 3, 3.4, 3.2], [7, 5, 12, 11], [1, 0, 8.9, 6.9]], np.float32)
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    data = model_bytes("RoiAlign", [("x", F, [2, 3, 7, 9]), ("rois", F, [5, 4]), ("batch", I64, [5])], mode=mode,
                       coordinate_transformation_mode=transform, sampling_ratio=ratio, output_height=3,
                       output_width=2, spatial_scale=0.9)
    feeds = {"x": x, "rois": rois, "batch": batch}
    expected = ort.InferenceSession(data).run(None, feeds)[0]
    actual = ug.onnx.load_bytes(data).forward(*[ug.tensor(v) for v in feeds.values()]).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_roi_align_gradient_matches_finite_differences():
    x = rng.standard_normal((1, 2, 5, 6))
    rois, batch = np.array([[0.3, 0.7, 4.2, 3.9]]), np.array([0], np.int64)
    data = model_bytes("RoiAlign", [("x", TensorProto.DOUBLE, [1, 2, 5, 6]), ("rois", TensorProto.DOUBLE, [1, 4]),
                                    ("batch", I64, [1])], output_height=2, output_width=3)
    m = ug.onnx.load_bytes(data)
    w = rng.standard_normal((1, 2, 2, 3))

    def loss(v):
        return float((m.forward(ug.tensor(v), ug.tensor(rois), ug.tensor(batch)).numpy() * w).sum())

    ux = ug.tensor(x, requires_grad=True)
    (m.forward(ux, ug.tensor(rois), ug.tensor(batch)) * ug.tensor(w)).sum().backward()
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        numeric[i] = (loss(x + step) - loss(x - step)) / 2e-6
    np.testing.assert_allclose(ux.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)
