"""ug.onnx.load's control flow (If, Loop, Scan) beyond the node suite's cases: bodies that read the
enclosing graphs' values (through nested subgraphs too), early exits, scan axes and directions,
against onnxruntime; gradients through the iterations against torch; the refusals."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import unigrad as ug
from test_onnx_import_ops import node, randn, run_both

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def graph(nodes, inputs, outputs, name="body"):
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                             [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])


def load(nodes, inputs, outputs, consts=None):
    g = graph(nodes, inputs, outputs, "g")
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in (consts or {}).items())
    return ug.onnx.load_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString())


# An If whose branches read the graph's input x and initializer-free outer values.
IF_NODES = [node("ReduceSum", ["x"], ["s"], keepdims=0), node("Greater", ["s", "zero"], ["c"]),
            node("If", ["c"], ["y"], then_branch=graph([node("Mul", ["x", "x"], ["t"])], [], [("t", F, None)], "then"),
                 else_branch=graph([node("Sub", ["x", "zero"], ["e"])], [], [("e", F, None)], "else"))]

# A while loop: y doubles until its sum passes the limit (at most 10 trips); an If inside the body
# reads the graph's input w two scopes out; the scan output keeps each iteration's y.
LOOP_BODY = graph(
    [node("Mul", ["y_in", "two"], ["d"]),
     node("If", ["always"], ["y_out"], then_branch=graph([node("Add", ["d", "w"], ["a"])], [], [("a", F, None)], "t"),
          else_branch=graph([node("Identity", ["d"], ["b"])], [], [("b", F, None)], "e")),
     node("ReduceSum", ["y_out"], ["s"], keepdims=0), node("Less", ["s", "limit"], ["c_out"]),
     node("Identity", ["y_out"], ["scan"])],
    [("i", I64, []), ("c_in", B, []), ("y_in", F, None)], [("c_out", B, []), ("y_out", F, None), ("scan", F, None)])
LOOP_NODES = [node("Loop", ["trips", "", "v0"], ["y0", "y1"], body=LOOP_BODY)]
LOOP_CONSTS = {"trips": np.array(10, np.int64), "two": np.array(2, np.float32), "limit": np.array(40, np.float32),
               "always": np.array(True)}


@pytest.mark.parametrize("sign", [1, -1])
def test_if_branches_read_the_enclosing_graph(sign):
    run_both(IF_NODES, {"x": sign * (np.abs(randn(3, 4)) + 0.1)}, {"zero": np.array(0, np.float32)})


def test_loop_stops_on_its_condition_and_reads_values_two_scopes_out():
    run_both(LOOP_NODES, {"v0": np.abs(randn(2, 3)), "w": randn(3)}, LOOP_CONSTS, n_out=2)


def test_loop_iteration_number_and_trip_count():
    body = graph([node("Cast", ["i"], ["f"], to=F), node("Add", ["acc_in", "f"], ["acc"]),
                  node("Identity", ["c_in"], ["c_out"])],
                 [("i", I64, []), ("c_in", B, []), ("acc_in", F, [2])], [("c_out", B, []), ("acc", F, [2])])
    run_both([node("Loop", ["n", "go", "acc0"], ["y"], body=body)],
             {"n": np.array(4, np.int64), "go": np.array(True), "acc0": randn(2)})


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [(1, 1, 0, 0), (0, 0, 1, 1), (-1, 0, -1, 0), (1, 1, 1, 1)])
def test_scan_axes_and_directions(in_axis, in_dir, out_axis, out_dir):
    body = graph([node("Add", ["acc_in", "x_t"], ["acc"]), node("Mul", ["acc", "w"], ["out"])],
                 [("acc_in", F, [3]), ("x_t", F, [3])], [("acc", F, [3]), ("out", F, [3])])
    x = randn(3, 4) if in_axis != 0 else randn(4, 3)
    run_both([node("Scan", ["acc0", "x"], ["y0", "y1"], body=body, num_scan_inputs=1, scan_input_axes=[in_axis],
                   scan_input_directions=[in_dir], scan_output_axes=[out_axis], scan_output_directions=[out_dir])],
             {"acc0": randn(3), "x": x, "w": randn(3)}, n_out=2)


def test_gradients_flow_through_if_loop_and_scan():
    x, y0, w = np.abs(randn(3, 4)) + 0.1, np.abs(randn(2, 3)), randn(3)
    m = load(IF_NODES, [("x", F, [3, 4])], [("y", F, None)], {"zero": np.array(0, np.float32)})
    ux = ug.tensor(x, requires_grad=True)
    m(ux).sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), 2 * x, rtol=1e-6)

    m = load(LOOP_NODES, [("v0", F, [2, 3]), ("w", F, [3])], [("y0", F, None), ("y1", F, None)], LOOP_CONSTS)
    uy, uw = ug.tensor(y0, requires_grad=True), ug.tensor(w, requires_grad=True)
    y, ys = m.forward(uy, uw)
    (y.sum() + (ys * ys).sum()).backward()
    ty, tw = torch.tensor(y0, requires_grad=True), torch.tensor(w, requires_grad=True)
    v, outs = ty, []
    for _ in range(10):
        v = v * 2 + tw
        outs.append(v)
        if v.sum() >= 40:
            break
    (v.sum() + (torch.stack(outs) ** 2).sum()).backward()
    assert ys.shape == (len(outs), 2, 3)
    np.testing.assert_allclose(uy.grad.numpy(), ty.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(uw.grad.numpy(), tw.grad.numpy(), rtol=1e-5)

    body = graph([node("Mul", ["h_in", "x_t"], ["p"]), node("Tanh", ["p"], ["h"])],
                 [("h_in", F, [3]), ("x_t", F, [3])], [("h", F, [3])])
    m = load([node("Scan", ["h0", "x"], ["h"], body=body, num_scan_inputs=1, scan_input_directions=[1])],
             [("h0", F, [3]), ("x", F, [5, 3])], [("h", F, None)])
    h0, xs = randn(3), randn(5, 3)
    uh, ux = ug.tensor(h0, requires_grad=True), ug.tensor(xs, requires_grad=True)
    m.forward(uh, ux).sum().backward()
    th, tx = torch.tensor(h0, requires_grad=True), torch.tensor(xs, requires_grad=True)
    h = th
    for t in reversed(range(5)):
        h = torch.tanh(h * tx[t])
    h.sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(uh.grad.numpy(), th.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_control_flow_refusals():
    body = graph([node("Identity", ["c_in"], ["c_out"]), node("Identity", ["v_in"], ["v"])],
                 [("i", I64, []), ("c_in", B, []), ("v_in", F, [2])], [("c_out", B, []), ("v", F, [2]), ("v", F, [2])])
    endless = load([node("Loop", ["", "", "v0"], ["v", "vs"], body=body)], [("v0", F, [2])],
                   [("v", F, None), ("vs", F, None)])
    with pytest.raises(ValueError, match=r"Loop node .* neither a trip count nor a condition"):
        endless(ug.tensor(randn(2)))
    none = load([node("Loop", ["n", "", "v0"], ["v", "vs"], body=body)], [("v0", F, [2])],
                [("v", F, None), ("vs", F, None)], {"n": np.array(0, np.int64)})
    with pytest.raises(ValueError, match=r"Loop node .* ran no iteration, so its scan output 0 has no shape"):
        none(ug.tensor(randn(2)))
    two = load(IF_NODES[2:], [("c", B, [2]), ("x", F, [2]), ("zero", F, [])], [("y", F, None)])
    with pytest.raises(ValueError, match=r"If node .* the condition must have one element, got shape \[2\]"):
        two.forward(ug.tensor(np.array([True, False])), ug.tensor(randn(2)), ug.tensor(np.float32(0)))
    seq = helper.make_graph([node("Identity", ["s"], ["o"])], "b",
                            [helper.make_tensor_sequence_value_info("s", F, None)], [helper.make_tensor_value_info("o", F, None)])
    with pytest.raises(TypeError, match=r"subgraph input 's' is not a tensor"):
        load([node("If", ["c"], ["y"], then_branch=seq, else_branch=seq)], [("c", B, [])], [("y", F, None)])
    with pytest.raises(ValueError, match=r"Scan node .* scan inputs have different lengths \(4 and 5\)"):
        sbody = graph([node("Add", ["a", "b"], ["o"])], [("a", F, [3]), ("b", F, [3])], [("o", F, [3])])
        load([node("Scan", ["a", "b"], ["o"], body=sbody, num_scan_inputs=2)], [("a", F, [4, 3]), ("b", F, [5, 3])],
             [("o", F, None)]).forward(ug.tensor(randn(4, 3)), ug.tensor(randn(5, 3)))


def test_subgraphs_nested_too_deep_are_refused():
    leaf = graph([node("Identity", ["x"], ["o"])], [], [("o", F, None)], "leaf")
    inner = leaf
    for depth in range(20):
        inner = graph([node("If", ["c"], [f"o{depth}"], then_branch=inner, else_branch=leaf)], [],
                      [(f"o{depth}", F, None)], f"level{depth}")
    with pytest.raises(ValueError, match=r"subgraphs are nested over 16 deep"):
        load(inner.node, [("c", B, []), ("x", F, [2])], [("o19", F, None)])


def test_optional_ops_on_tensors_match_the_reference_and_keep_gradients():
    from onnx.reference import ReferenceEvaluator

    x = randn(3)
    nodes = [node("OptionalHasElement", ["x"], ["present"]), node("OptionalHasElement", [""], ["absent"]),
             node("OptionalGetElement", ["x"], ["got"]), node("Mul", ["got", "got"], ["sq"])]
    g = graph(nodes, [("x", F, [3])], [("present", B, []), ("absent", B, []), ("sq", F, [3])], "g")
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    ux = ug.tensor(x, requires_grad=True)
    actual = ug.onnx.load_bytes(model.SerializeToString()).forward(ux)
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a.numpy(), e)
    actual[2].sum().backward()
    np.testing.assert_allclose(ux.grad.numpy(), 2 * x)
