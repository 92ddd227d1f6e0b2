"""ug.onnx.load on hostile and corrupt files: each is refused with a clear error (never a crash,
hang or absurd allocation). External data is read only inside the model's folder."""
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import unigrad as ug


def model_with(nodes, inputs=None, outputs=None, initializers=(), opset=20):
    inputs = inputs if inputs is not None else [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def add_w(w):
    return model_with([helper.make_node("Add", ["x", "w"], ["y"], name="add")], initializers=[w])


def load(model, tmp_path=None):
    if tmp_path is None:
        return ug.onnx.load_bytes(model.SerializeToString())
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return ug.onnx.load(path)


def test_a_valid_model_loads_and_runs():
    w = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    m = load(add_w(w))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(m(ug.tensor(x)).numpy(), x + np.arange(3))


@pytest.mark.parametrize("data", [b"", b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\xff\x0f", b"not an onnx file at all"])
def test_bad_protobuf_bytes(data):
    with pytest.raises(ValueError, match=r"\[onnx\]"):
        ug.onnx.load_bytes(data)


@pytest.mark.parametrize("dims, message", [
    ([-1], "dim of -1"),
    ([2**40 + 1], "dim of"),
    ([2**39, 2**39], "multiply past"),
    ([0, 2**30, 2**30], "multiply past"),
    ([1000000, 1000000], "12 bytes of raw data, its dims and dtype say 4000000000000"),
    ([1] * 65, "dims"),
    ([4], "raw data"),
])
def test_absurd_dims(dims, message):
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], np.zeros(3, np.float32).tobytes(), raw=True)
    del w.dims[:]
    w.dims.extend(dims)
    with pytest.raises(ValueError, match=message):
        load(add_w(w))


def test_raw_data_size_mismatch():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], raw_data=np.zeros(2, np.float32).tobytes())
    with pytest.raises(ValueError, match="8 bytes of raw data, its dims and dtype say 12"):
        load(add_w(w))


def test_typed_data_count_mismatch():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0, 2.0])
    with pytest.raises(ValueError, match="2 values, its dims say 3"):
        load(add_w(w))


def test_dangling_node_input():
    with pytest.raises(ValueError, match="reads 'ghost', which no node, input or initializer produces"):
        load(model_with([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]))


def test_nodes_out_of_order_and_cycles():
    out_of_order = [helper.make_node("Relu", ["t"], ["y"], name="second"), helper.make_node("Neg", ["x"], ["t"], name="first")]
    with pytest.raises(ValueError, match="not in topological order"):
        load(model_with(out_of_order))
    cycle = [helper.make_node("Add", ["x", "b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
             helper.make_node("Identity", ["a"], ["y"], name="n3")]
    with pytest.raises(ValueError, match="not in topological order"):
        load(model_with(cycle))


def test_duplicate_outputs():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")]
    with pytest.raises(ValueError, match="'y' is produced twice"):
        load(model_with(nodes))
    w = numpy_helper.from_array(np.zeros(3, np.float32), "x")  # an initializer named like an input is its default
    assert load(model_with([helper.make_node("Relu", ["x"], ["y"])], initializers=[w])).inputs == []


def test_graph_output_never_produced():
    with pytest.raises(ValueError, match="graph output 'y' is never produced"):
        load(model_with([helper.make_node("Relu", ["x"], ["z"])]))


@pytest.mark.parametrize("data_type", [TensorProto.STRING, TensorProto.INT4, TensorProto.FLOAT8E4M3FN, 999])
def test_unknown_dtypes(data_type):
    w = TensorProto(name="w", data_type=data_type, dims=[1], raw_data=b"\0" * 8)
    with pytest.raises(TypeError, match="element type"):
        load(add_w(w))


def test_input_of_unknown_dtype():
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT4, [2])]
    with pytest.raises(TypeError, match="input 'x' has element type INT4"):
        load(model_with([helper.make_node("Identity", ["x"], ["y"])], inputs=inputs))


def test_missing_required_attributes():
    with pytest.raises(ValueError, match="Cast .*node 'c'.* missing its required attribute 'to'"):
        load(model_with([helper.make_node("Cast", ["x"], ["y"], name="c")]))
    with pytest.raises(ValueError, match="missing its required attribute 'axis'"):
        load(model_with([helper.make_node("Concat", ["x", "x"], ["y"], name="c")]))


def test_attribute_of_the_wrong_type():
    m = load(model_with([helper.make_node("Softmax", ["x"], ["y"], name="s", axis=1.5)]))
    with pytest.raises(TypeError, match="attribute 'axis' must be an INT"):
        m(ug.zeros((2, 3)))


def test_unsupported_op_type_names_op_node_and_opset():
    with pytest.raises(ValueError, match=r"unsupported op type 'TfIdfVectorizer' \(node 'nms', opset 19\)"):
        load(model_with([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="nms")], opset=19))
    with pytest.raises(ValueError, match="unsupported op type 'com.microsoft::FusedGemm'"):
        load(model_with([helper.make_node("FusedGemm", ["x"], ["y"], name="f", domain="com.microsoft")]))


def test_unsupported_opsets():
    with pytest.raises(ValueError, match=r"opset 29 is not supported \(ug.onnx reads opsets 13 to 28\)"):
        load(model_with([helper.make_node("Relu", ["x"], ["y"])], opset=29))
    # Older models go through ONNX's checker and version converter, which name what they refuse.
    with pytest.raises(ValueError, match="opset 9 is not supported.*could not bring the model to opset 13: .*'w'"):
        load(model_with([helper.make_node("Add", ["x", "w"], ["y"])], opset=9,
                        outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]))
    with pytest.raises(ValueError, match="Gelu' needs opset 20"):
        load(model_with([helper.make_node("Gelu", ["x"], ["y"], name="g")], opset=18))


def test_old_opsets_refused_before_libonnx_crashes_on_them():
    # libonnx's checker lets these through; its shape inference divides by the stride (SIGFPE)
    # and its version converter dereferences the undefined output (SIGSEGV).
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[1, 1], strides=[0, 1])
    with pytest.raises(ValueError, match=r"node 'pool' \(MaxPool\) has strides holding 0"):
        load(model_with([pool], opset=9, inputs=[x], outputs=[y]))
    relu = helper.make_node("Relu", ["x"], ["r"])
    with pytest.raises(ValueError, match="has output 'y', which no node, input or initializer defines"):
        load(model_with([relu], opset=9, inputs=[x], outputs=[y]))


def test_old_opset_crash_in_libonnx_is_an_error():
    # A Conv weight of higher rank than its input: libonnx 1.12's shape inference for the older
    # Conv reads the input's dims past their end (SIGSEGV), which only its child process meets.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1] + [2] * 6)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    with pytest.raises(ValueError, match=r"could not bring the model to opset 13: it crashed \(signal 11"):
        load(model_with([conv], opset=9, inputs=[x, w], outputs=[y]))
    # The process goes on, and loads the next model.
    test_a_valid_model_loads_and_runs()


def test_wrong_input_counts():
    with pytest.raises(ValueError, match="has 3 inputs; it takes 2 to 2"):
        load(model_with([helper.make_node("Add", ["x", "x", "x"], ["y"], name="a")]))


def test_absurd_sizes_at_run_time():
    shape = numpy_helper.from_array(np.array([2**20, 2**20], np.int64), "shape")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="c")]
    m = load(model_with(nodes, inputs=[], initializers=[shape]))
    with pytest.raises(ValueError, match=r"over 1073741824 elements \(LoadLimits::max_elements\)"):
        m.forward()


# ---- external data ----------------------------------------------------------------------------

def external_w(location, offset=0, length=12):
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return w


def test_external_data_relative_to_the_model(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 4 + np.array([1, 2, 3], np.float32).tobytes())
    m = load(add_w(external_w("weights.bin", offset=4)), tmp_path)
    np.testing.assert_array_equal(m.state_dict()["w"].numpy(), [1, 2, 3])
    with pytest.raises(ValueError, match="load the model from its path"):
        load(add_w(external_w("weights.bin")))


def test_external_data_past_the_end_of_the_file(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 16)
    with pytest.raises(ValueError, match="runs past the end"):
        load(add_w(external_w("weights.bin", offset=8)), tmp_path)
    with pytest.raises(ValueError, match="runs past the end"):
        load(add_w(external_w("weights.bin", offset=2**62)), tmp_path)
    with pytest.raises(ValueError, match="length 16 does not match"):
        load(add_w(external_w("weights.bin", length=16)), tmp_path)
    with pytest.raises(ValueError, match="not a byte count"):
        load(add_w(external_w("weights.bin", offset=-4)), tmp_path)
    with pytest.raises(FileNotFoundError, match="external data file"):
        load(add_w(external_w("missing.bin")), tmp_path)


def test_external_data_outside_the_folder(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 12)
    with pytest.raises(ValueError, match="is absolute"):
        load(add_w(external_w(str(secret))), model_dir)
    with pytest.raises(ValueError, match="leaves the model's folder"):
        load(add_w(external_w("../secret.bin")), model_dir)
    with pytest.raises(ValueError, match="leaves the model's folder"):
        load(add_w(external_w("sub/../../secret.bin")), model_dir)
    os.symlink(secret, model_dir / "link.bin")
    with pytest.raises(ValueError, match="outside the model's folder"):
        load(add_w(external_w("link.bin")), model_dir)
    os.symlink(tmp_path, model_dir / "up")
    with pytest.raises(ValueError, match="outside the model's folder"):
        load(add_w(external_w("up/secret.bin")), model_dir)
    (model_dir / "dir.bin").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        load(add_w(external_w("dir.bin")), model_dir)


def test_truncated_real_model_is_refused(tmp_path):
    data = add_w(numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")).SerializeToString()
    for cut in range(1, len(data), 7):
        try:
            ug.onnx.load_bytes(data[:cut])
        except (ValueError, TypeError):
            pass


def test_broadcasts_that_square_a_tensor_are_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [65536, 1])
    nodes = [helper.make_node("Transpose", ["x"], ["t"]), helper.make_node("Add", ["x", "t"], ["y"], name="square")]
    m = load(model_with(nodes, inputs=[x]))
    with pytest.raises(ValueError, match=r"Add node 'square' .*over 1073741824 elements"):
        m(ug.zeros((65536, 1)))


def test_values_alive_at_once_are_bounded():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [100])
    nodes = [helper.make_node("Neg", ["x"], [f"n{i}"]) for i in range(10)]
    nodes.append(helper.make_node("Sum", [f"n{i}" for i in range(10)], ["y"], name="sum"))
    data = model_with(nodes, inputs=[x]).SerializeToString()
    assert ug.onnx.load_bytes(data)(ug.ones(100)).shape == (100,)
    m = ug.onnx.load_bytes(data, max_elements=1000, max_live_elements=500)
    with pytest.raises(ValueError, match="pass LoadLimits::max_live_elements \\(500\\)"):
        m(ug.ones(100))
    with pytest.raises(ValueError, match="over LoadLimits::max_elements \\(50\\)"):
        ug.onnx.load_bytes(data, max_elements=50)(ug.ones(100))


def test_empty_shapes_with_absurd_dims_are_refused():
    shape = numpy_helper.from_array(np.array([0, 2**40, 2**40], np.int64), "shape")
    m = load(model_with([helper.make_node("ConstantOfShape", ["shape"], ["y"], name="c")], inputs=[], initializers=[shape]))
    with pytest.raises(ValueError, match="over 1073741824 elements"):
        m.forward()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [0])
    shape = numpy_helper.from_array(np.array([0, 2**40, 2**40], np.int64), "shape")
    m = load(model_with([helper.make_node("Reshape", ["x", "shape"], ["y"], name="r", allowzero=1)], inputs=[x],
                        initializers=[shape]))
    with pytest.raises(ValueError, match="over 1073741824 elements"):
        m(ug.zeros(0))


def test_conv_on_a_vector_is_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    w = numpy_helper.from_array(np.zeros(3, np.float32), "w")
    m = load(model_with([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], inputs=[x], initializers=[w]))
    with pytest.raises(ValueError, match=r"Conv node 'conv' .*needs input \[N, C, spatial...\]"):
        m(ug.zeros(3))
