"""TensorScatter beyond the node suite's cases: 4-d caches on either sequence axis, circular writes
that wrap (write indices past the end too), against onnx's reference; gradients of the cache and
the update against torch's scatter; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import unigrad as ug

F, I64 = TensorProto.FLOAT, TensorProto.INT64
rng = np.random.default_rng(0)


def model(**attrs):
    g = helper.make_graph([helper.make_node("TensorScatter", ["cache", "update", "idx"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("cache", F, None), helper.make_tensor_value_info("update", F, None),
                           helper.make_tensor_value_info("idx", I64, None)], [helper.make_tensor_value_info("y", F, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)], ir_version=10)


@pytest.mark.parametrize("axis,mode,idx", [(-2, "circular", [3, 9]), (2, "linear", [0, 2]), (1, "circular", [1, 0])])
def test_tensor_scatter_matches_the_reference_with_gradients(axis, mode, idx):
    cache = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    shape = list(cache.shape)
    shape[axis] = 3 if axis % 4 == 2 else 2
    update = rng.standard_normal(shape).astype(np.float32)
    feeds = {"cache": cache, "update": update, "idx": np.array(idx, np.int64)}
    m = model(axis=axis, mode=mode)
    expected = ReferenceEvaluator(m).run(None, feeds)[0]
    uc, uu = ug.tensor(cache, requires_grad=True), ug.tensor(update, requires_grad=True)
    y = ug.onnx.load_bytes(m.SerializeToString()).forward(uc, uu, ug.tensor(feeds["idx"]))
    np.testing.assert_array_equal(y.numpy(), expected)
    w = rng.standard_normal(expected.shape).astype(np.float32)
    (y * ug.tensor(w)).sum().backward()
    a = axis % 4
    pos = (np.array(idx)[:, None] + np.arange(shape[a])[None]) % cache.shape[a]
    view = [1] * 4
    view[0], view[a] = 2, shape[a]
    index = torch.tensor(np.broadcast_to(pos.reshape(view), shape).copy())
    tc, tu = torch.tensor(cache, requires_grad=True), torch.tensor(update, requires_grad=True)
    (tc.scatter(a, index, tu) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(uc.grad.numpy(), tc.grad.numpy())
    np.testing.assert_allclose(uu.grad.numpy(), tu.grad.numpy())


def test_tensor_scatter_refuses_a_linear_write_past_the_end():
    m = ug.onnx.load_bytes(model().SerializeToString())
    with pytest.raises(ValueError, match=r"TensorScatter node .* write index 3 with 2 steps does not fit the cache's 4"):
        m.forward(ug.zeros(1, 4, 2), ug.zeros(1, 2, 2), ug.tensor(np.array([3], np.int64)))
