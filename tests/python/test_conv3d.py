"""3-d convolution and pooling (conv3d, max_pool3d, avg_pool3d and their layers) against
PyTorch: outputs and gradients over strides, paddings ('same' and 'valid' too), dilations,
groups, ceil_mode and the average's divisors, float32 and float64 (finite differences in
float64), non-contiguous and unbatched inputs, and the errors for bad input."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import ABS, arr, check, check_layer, check_op
from test_conv import conv_sums, fn_of, forward_backward, rand

CONV3D_CASES = [  # C, O, kernel, stride, padding, dilation, groups, bias, D, H, W
    (2, 3, 3, 1, 0, 1, 1, True, 5, 6, 5),
    (4, 6, (3, 2, 3), (2, 1, 2), 1, (1, 2, 1), 2, True, 6, 7, 8),
    (3, 3, 2, 1, (1, 0, 1), 1, 3, False, 4, 5, 6),     # depthwise
    (2, 4, 1, 2, 0, 1, 1, True, 5, 5, 5),              # 1x1x1 strided
    (2, 4, 3, 1, "same", 1, 1, True, 4, 5, 6),
    (2, 4, (4, 2, 3), 1, "same", (1, 2, 1), 2, True, 5, 6, 5),  # even effective kernels: asymmetric
    (2, 2, 3, 1, "valid", 2, 1, False, 6, 5, 6),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONV3D_CASES, ids=[str(c) for c in CONV3D_CASES])
def test_conv3d_matches_torch(case, dtype):
    C, O, k, s, p, d, g, bias, D, H, W = case
    kd, kh, kw = (k, k, k) if isinstance(k, int) else k
    arrays = [rand((2, C, D, H, W)), rand((O, C // g, kd, kh, kw), 1), rand((O,), 2) if bias else None]
    conv = lambda F, x, w, b: F.conv3d(x, w, b, stride=s, padding=p, dilation=d, groups=g)  # noqa: E731
    forward_backward(conv, arrays, dtype, n=conv_sums(conv, arrays, g))


def test_conv3d_non_contiguous_and_unbatched():
    x, w, b = rand((2, 3, 4, 5, 6)), rand((4, 3, 2, 3, 3), 1), rand((4,), 2)
    conv = lambda F, x, w, b: F.conv3d(x, w, b, padding=1)  # noqa: E731
    forward_backward(conv, [x.transpose(0, 1, 2, 4, 3), w.transpose(0, 1, 2, 4, 3), b],
                     views=[lambda t: t.transpose(3, 4), lambda t: t.transpose(3, 4), None], n=conv_sums(conv, [x, w, b]))
    unbatched = lambda F, x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1))  # noqa: E731
    forward_backward(unbatched, [x[0], w, b], n=conv_sums(unbatched, [x[0], w, b]))


def test_conv3d_transforms():
    # vjp, finite differences, jvp, vmap, ONNX Runtime and ug.jit (the program runs the importer's Conv)
    check_op(lambda m, x, w, b: fn_of(m).conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), groups=2),
             arr((2, 4, 4, 5, 4)), arr((4, 2, 2, 3, 2), seed=1), arr((4,), seed=2), terms=ABS, n=(25, 24, 100))


MAX_POOL3D_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), ((2, 3, 2), (1, 2, 2), (1, 1, 0), 1, True),
    (3, 1, 1, (2, 1, 2), False), (2, 3, 0, 1, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", MAX_POOL3D_CASES, ids=[str(c) for c in MAX_POOL3D_CASES])
def test_max_pool3d_matches_torch(case, dtype):
    k, s, p, d, ceil = case
    forward_backward(lambda F, x: F.max_pool3d(x, k, s, p, d, ceil), [rand((2, 3, 7, 8, 6))], dtype)
    check(lambda m, x: fn_of(m).max_pool3d(x, k, s, p, d, ceil, return_indices=True), arr((2, 3, 7, 8, 6), dtype))
    check(lambda m, x: fn_of(m).max_pool3d(x, k, s, p, d, ceil, True), arr((3, 7, 8, 6), dtype))  # unbatched
    check(lambda m, x: fn_of(m).max_pool3d(x, k, s, p, d, ceil), arr((2, 3, 7, 8, 6), "bfloat16"))


AVG_POOL3D_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, False, False, None),
    (3, 2, 1, True, True, None), (3, 2, 1, True, False, None), ((2, 3, 2), (2, 1, 2), (1, 1, 0), True, False, None),
    (3, 2, 1, False, True, 5), (2, 3, 1, True, True, 3),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", AVG_POOL3D_CASES, ids=[str(c) for c in AVG_POOL3D_CASES])
def test_avg_pool3d_matches_torch(case, dtype):
    k, s, p, ceil, cip, div = case
    forward_backward(lambda F, x: F.avg_pool3d(x, k, s, p, ceil, cip, div), [rand((2, 3, 7, 8, 6))], dtype)
    check(lambda m, x: fn_of(m).avg_pool3d(x, k, s, p, ceil, cip, div), arr((3, 7, 8, 6), dtype))


def test_pool3d_transforms():
    check_op(lambda m, x: fn_of(m).max_pool3d(x, 3, 2, 1, ceil_mode=True), arr((2, 2, 5, 6, 5)))
    check_op(lambda m, x: fn_of(m).max_pool3d(x, 2, return_indices=True), arr((1, 2, 4, 4, 6)),
             off={"jit": "a program's MaxPool gives indices for 1-d and 2-d pooling only"})
    check_op(lambda m, x: fn_of(m).avg_pool3d(x, 3, 2, 1, count_include_pad=False), arr((2, 2, 5, 6, 5)))


def test_layers_match_torch():
    torch.manual_seed(0)
    for ug_layer, torch_layer in [
            (ug.nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 1), padding="valid", groups=2),
             torch.nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 1), padding="valid", groups=2)),
            (ug.nn.Conv3d(4, 2, 3, padding="same", dilation=(2, 1, 1), bias=False),
             torch.nn.Conv3d(4, 2, 3, padding="same", dilation=(2, 1, 1), bias=False))]:
        ug_layer.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})
        assert repr(ug_layer) == repr(torch_layer)
        check_layer(ug_layer, torch_layer, rand((2, 4, 6, 5, 6)).astype(np.float32), n=100)
    for ug_layer, torch_layer in [(ug.nn.MaxPool3d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool3d(3, 2, 1, ceil_mode=True)),
                                  (ug.nn.MaxPool3d((2, 3, 2)), torch.nn.MaxPool3d((2, 3, 2))),
                                  (ug.nn.AvgPool3d(3, 2, 1, count_include_pad=False),
                                   torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
                                  (ug.nn.AvgPool3d(2, divisor_override=3), torch.nn.AvgPool3d(2, divisor_override=3))]:
        assert repr(ug_layer) == repr(torch_layer)
        check_layer(ug_layer, torch_layer, rand((2, 3, 6, 7, 6)).astype(np.float32))


def test_bad_input_raises_like_torch():
    x, w = arr((2, 4, 5, 5, 5)), arr((6, 2, 3, 3, 3), seed=1)
    for f in [lambda F, x, w: F.conv3d(x[0, 0], w),                 # 3-d input
              lambda F, x, w: F.conv3d(x, w[0]),                    # 4-d weight
              lambda F, x, w: F.conv3d(x, w),                       # 4 channels, weight for 2
              lambda F, x, w: F.conv3d(x, w, groups=4),             # 6 filters in 4 groups
              lambda F, x, w: F.conv3d(x, w.double(), groups=2),    # dtypes differ
              lambda F, x, w: F.conv3d(x[:, :, :2], w, groups=2),   # kernel deeper than the input
              lambda F, x, w: F.conv3d(x, w, stride=2, padding="same", groups=2),
              lambda F, x, w: F.conv3d(x, w, torch.zeros(5) if F is torch.nn.functional else ug.zeros(5), groups=2),
              lambda F, x, w: F.conv3d(x, w, stride=(1, 2), groups=2),
              lambda F, x, w: F.max_pool3d(x[0, 0], 2),
              lambda F, x, w: F.max_pool3d(x, 3, padding=2),
              lambda F, x, w: F.max_pool3d(x, (2, 2)),
              lambda F, x, w: F.max_pool3d(x, 6),
              lambda F, x, w: F.avg_pool3d(x, 2, divisor_override=0)]:
        check(lambda m, x, w, f=f: f(fn_of(m), x, w), x, w)
    with pytest.raises(RuntimeError, match=r"\[conv3d\].*\[2, 4, 5, 5, 5\] to have 12 channels, but got 4"):
        ug.nn.functional.conv3d(ug.ones(2, 4, 5, 5, 5), ug.ones(6, 12, 1, 1, 1))
    with pytest.raises(TypeError, match=r"\[conv3d\].*input float32, weight float64"):
        ug.nn.functional.conv3d(ug.ones(2, 4, 5, 5, 5), ug.ones(6, 4, 1, 1, 1, dtype=ug.float64))
    with pytest.raises(RuntimeError, match=r"\[max_pool3d\] expected 4D \(unbatched\) or 5D.*\[5, 5, 5\]"):
        ug.nn.functional.max_pool3d(ug.ones(5, 5, 5), 2)
    with pytest.raises(TypeError, match=r"\[avg_pool3d\] expected a floating-point input, got int64"):
        ug.nn.functional.avg_pool3d(ug.ones(1, 1, 2, 5, 5, dtype=ug.int64), 2)
    with pytest.raises(RuntimeError, match=r"\[avg_pool3d\] given input size \[1, 1, 2, 5, 5\].*too small"):
        ug.nn.functional.avg_pool3d(ug.ones(1, 1, 2, 5, 5), 3)


def test_torch_export_of_a_3d_cnn_imports(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv3d(2, 4, 3, padding=1, groups=2), torch.nn.ReLU(),
                                torch.nn.MaxPool3d(2), torch.nn.Conv3d(4, 3, (2, 3, 1), stride=(1, 2, 1)),
                                torch.nn.AvgPool3d(2, ceil_mode=True)).eval()
    path = str(tmp_path / "cnn3d.onnx")
    x = torch.tensor(rand((2, 2, 8, 10, 8))).float()
    torch.onnx.export(model, (x,), path, input_names=["x"], dynamo=False)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(ug.onnx.load(path)(ug.tensor(x.numpy())).numpy(), expected, rtol=1e-5, atol=1e-6)
