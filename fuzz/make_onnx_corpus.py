"""Writes onnx_fuzz's seed corpus into fuzz/corpus/onnx_fuzz/: tiny valid models covering the op
families of torch's exports (dense, convolution, attention-style shape arithmetic). Run once;
the files are committed. Needs numpy and onnx (requirements-dev.txt)."""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, nodes, inputs, outputs, initializers=(), opset=20):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    folder = os.path.join(HERE, "corpus", "onnx_fuzz")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def tensor(name, shape, dtype=np.float32):
    return numpy_helper.from_array((np.arange(np.prod(shape)) % 7 - 3).astype(dtype).reshape(shape), name)


def value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def main():
    write("gemm_relu", [helper.make_node("Gemm", ["x", "fc.w", "fc.b"], ["h"], transB=1),
                        helper.make_node("Relu", ["h"], ["y"])],
          [value("x", ["batch", 4])], [value("y", None)], [tensor("fc.w", [3, 4]), tensor("fc.b", [3])])
    write("conv_pool", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 0, 1, 2], strides=[1, 2]),
                        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2]),
                        helper.make_node("Flatten", ["p"], ["y"])],
          [value("x", [1, 2, 5, 5])], [value("y", None)], [tensor("w", [3, 2, 3, 3])])
    # An opset before 13 goes through ONNX's checker, shape inference and version converter first.
    write("conv_pool_opset9", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 0, 1, 2], strides=[1, 2]),
                               helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2]),
                               helper.make_node("Softmax", ["p"], ["s"], axis=1),
                               helper.make_node("Flatten", ["s"], ["y"])],
          [value("x", [1, 2, 5, 5])], [value("y", [1, 24])], [tensor("w", [3, 2, 3, 3])], opset=9)
    write("shape_ops", [helper.make_node("Shape", ["x"], ["s"]),
                        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
                        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
                        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
                        helper.make_node("Reshape", ["x", "shape"], ["r"]),
                        helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["y"])],
          [value("x", [2, 3, 4])], [value("y", None)],
          [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array([0], np.int64), "zero1"),
           numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
           numpy_helper.from_array(np.array([-1], np.int64), "starts"), numpy_helper.from_array(np.array([-100], np.int64), "ends"),
           numpy_helper.from_array(np.array([1], np.int64), "axes"), numpy_helper.from_array(np.array([-2], np.int64), "steps")])
    write("attention", [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
                        helper.make_node("Transpose", ["n"], ["t"], perm=[0, 2, 1]),
                        helper.make_node("MatMul", ["n", "t"], ["s"]),
                        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                        helper.make_node("MatMul", ["p", "n"], ["o"]),
                        helper.make_node("ReduceMean", ["o", "ax"], ["m"], keepdims=0),
                        helper.make_node("Split", ["o"], ["y", "z"], axis=2, num_outputs=2)],
          [value("x", [1, 3, 4])], [value("y", None), value("m", None)],
          [tensor("g", [4]), tensor("b", [4]), numpy_helper.from_array(np.array([1], np.int64), "ax")])
    write("constants", [helper.make_node("Constant", [], ["c"], value=tensor("v", [2, 2])),
                        helper.make_node("ConstantOfShape", ["shape"], ["z"], value=numpy_helper.from_array(np.array([1.5], np.float32))),
                        helper.make_node("Expand", ["c", "shape"], ["e"]),
                        helper.make_node("Add", ["e", "z"], ["a"]),
                        helper.make_node("Trilu", ["a"], ["y"], upper=0)],
          [], [value("y", None)], [numpy_helper.from_array(np.array([3, 2, 2], np.int64), "shape")])
    write("recurrent", [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "h", "c"], hidden_size=2, direction="bidirectional"),
                        helper.make_node("GRU", ["x", "gw", "gr"], ["g"], hidden_size=2, linear_before_reset=1)],
          [value("x", [3, 1, 2])], [value("y", None), value("g", None)],
          [tensor("w", [2, 8, 2]), tensor("r", [2, 8, 2]), tensor("b", [2, 16]), tensor("gw", [1, 6, 2]),
           tensor("gr", [1, 6, 2])])


if __name__ == "__main__":
    main()
