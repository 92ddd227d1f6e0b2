"""ug.onnx.export against the ONNX tools: every exported file passes the checker (full check)
and strict shape inference, and onnxruntime and onnx.reference give unigrad's outputs, at the
traced batch size and at another one (dynamic batch axis)."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import unigrad as ug

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UG = os.environ.get("UG_CLI", os.path.join(ROOT, "build", "cli", "ug"))
TOL = dict(rtol=1e-5, atol=1e-5)


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def run_both(path, model_proto, feeds):
    """The outputs of onnxruntime and of the reference evaluator for the same feeds."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds), ReferenceEvaluator(model_proto).run(None, feeds)


def export_and_compare(tmp_path, model, args, other_args=None, opset=17, dynamic=True, names=None):
    """Exports model(*args), checks the file, and compares it with unigrad on args and other_args
    (the same shapes but for the batch size). Returns the ModelProto."""
    args = as_tuple(args)
    in_names = names or [f"x{i}" for i in range(len(args))]
    outputs = as_tuple(model(*args))
    out_names = [f"y{i}" for i in range(len(outputs))]
    axes = {n: {0: "batch"} for n in in_names + out_names} if dynamic else None
    path = str(tmp_path / "model.onnx")
    ug.onnx.export(model, args, path, input_names=in_names, output_names=out_names, dynamic_axes=axes,
                   opset_version=opset)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    assert proto.opset_import[0].version == opset and proto.ir_version == 8
    assert proto.producer_name == "unigrad" and proto.producer_version == ug.__version__
    for inputs in [args] + ([as_tuple(other_args)] if other_args is not None else []):
        expected = [y.numpy() for y in as_tuple(model(*inputs))]
        feeds = {n: x.numpy() for n, x in zip(in_names, inputs)}
        for got in run_both(path, proto, feeds):
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, **TOL)
    return proto


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


# ---- the op table --------------------------------------------------------------------------


def test_every_traceable_op_is_exported_or_rejected():
    # The library registers each op name it can trace; the table must cover all of them.
    traced = set(ug.onnx.traceable_ops())
    mapped, rejected = set(ug.onnx.exportable_ops()), set(ug.onnx.unsupported_ops())
    assert {"add", "relu", "linear", "conv", "lstm", "gru", "layer_norm", "reshape"} <= traced
    assert not mapped & rejected
    assert traced - mapped - rejected == set()
    assert (mapped | rejected) - traced == set()  # no stale names either


# ---- whole models ---------------------------------------------------------------------------


def test_mlp(tmp_path):
    ug.manual_seed(0)
    mlp = ug.nn.Sequential(ug.nn.Linear(784, 128), ug.nn.ReLU(), ug.nn.Linear(128, 10))
    proto = export_and_compare(tmp_path, mlp, ug.randn(4, 784), ug.randn(9, 784))
    assert op_types(proto) == ["Gemm", "Relu", "Gemm", "Identity"]
    # Parameters keep their state_dict names.
    assert {i.name for i in proto.graph.initializer} == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_lenet(tmp_path):
    ug.manual_seed(0)
    proto = export_and_compare(tmp_path, ug.models.LeNet(), ug.rand(3, 1, 28, 28), ug.rand(5, 1, 28, 28))
    assert {"Conv", "MaxPool", "Flatten", "Gemm"} <= set(op_types(proto))


@pytest.mark.parametrize("opset", [17, 18, 20])
def test_transformer_classifier(tmp_path, opset):
    ug.manual_seed(0)
    model = ug.models.build(ug.models.Architecture("transformer", d_model=32, heads=4, ff=64, layers=2))
    proto = export_and_compare(tmp_path, model, ug.rand(3, 28, 28), ug.rand(6, 28, 28), opset=opset)
    ops = set(op_types(proto))
    assert {"LayerNormalization", "MatMul", "Softmax", "Transpose", "Reshape", "ReduceMean"} <= ops
    assert ("Gelu" in ops) == (opset >= 20)


class Recurrent(ug.nn.Module):
    """A sequence classifier: an LSTM/GRU/RNN layer stack, then a linear head on the last step."""

    def __init__(self, kind, **options):
        super().__init__()
        self.rnn = getattr(ug.nn, kind)(8, 16, **options)
        self.head = ug.nn.Linear(16 * (2 if options.get("bidirectional") else 1), 3)

    def forward(self, x):
        out = self.rnn(x)[0]
        return self.head(out[:, -1] if self.rnn.batch_first else out[-1])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("options", [dict(batch_first=True, num_layers=2), dict(batch_first=True, bidirectional=True),
                                     dict(num_layers=1)])
def test_recurrent_models(tmp_path, kind, options):
    ug.manual_seed(0)
    model = Recurrent(kind, **options)
    batch_first = options.get("batch_first", False)
    shape = lambda n: (n, 5, 8) if batch_first else (5, n, 8)  # noqa: E731
    if not batch_first:  # the batch is dim 1 of a time-major input
        args, other = ug.randn(*shape(4)), ug.randn(*shape(6))
        path = str(tmp_path / "model.onnx")
        ug.onnx.export(model, args, path, input_names=["x"], output_names=["y"],
                       dynamic_axes={"x": {1: "batch"}, "y": {0: "batch"}})
        proto = onnx.load(path)
        onnx.checker.check_model(proto, full_check=True)
        onnx.shape_inference.infer_shapes(proto, strict_mode=True)
        for x in (args, other):
            for got in run_both(path, proto, {"x": x.numpy()}):
                np.testing.assert_allclose(got[0], model(x).numpy(), **TOL)
    else:
        proto = export_and_compare(tmp_path, model, ug.randn(*shape(4)), ug.randn(*shape(6)))
    assert {"LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN"}[kind] in op_types(proto)


def test_lstm_with_projection_exports_as_its_ops(tmp_path):
    # ONNX's LSTM has no projection: the steps are exported one by one, for the batch size of
    # the example input (docs/deploy.md, "Limits").
    class Model(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = ug.nn.LSTM(8, 16, proj_size=4, batch_first=True, num_layers=2, bidirectional=True)

        def forward(self, x):
            return self.rnn(x)[0]
    ug.manual_seed(0)
    proto = export_and_compare(tmp_path, Model(), ug.randn(4, 5, 8), dynamic=False)
    assert "LSTM" not in op_types(proto) and "MatMul" in op_types(proto)


class TwoInputGRU(ug.nn.Module):
    """A Python module with a two-argument forward returning two tensors: the GRU's output and state."""

    def __init__(self):
        super().__init__()
        self.gru = ug.nn.GRU(6, 10, batch_first=True, num_layers=2)

    def forward(self, x, h0):
        out, h = self.gru(x, h0)
        return out.sum(1), h


def test_multi_argument_forward_and_outputs(tmp_path):
    ug.manual_seed(0)
    model = TwoInputGRU()
    x, h0 = ug.randn(3, 4, 6), ug.randn(2, 3, 10)
    path = str(tmp_path / "gru.onnx")
    ug.onnx.export(model, (x, h0), path, input_names=["x", "h0"], output_names=["out", "h"],
                   dynamic_axes={"x": {0: "batch"}, "h0": {1: "batch"}, "out": {0: "batch"}, "h": {1: "batch"}})
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    for n in (3, 5):
        x, h0 = ug.randn(n, 4, 6), ug.randn(2, n, 10)
        expected = [t.numpy() for t in model(x, h0)]
        for got in run_both(path, proto, {"x": x.numpy(), "h0": h0.numpy()}):
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, **TOL)


class DataDependent(ug.nn.Module):
    """A branch and a loop that depend on the input's values."""

    def forward(self, x):
        y = ug.cond(x.sum() > 0, lambda v: v * 2, lambda v: 1 - v, x)
        return ug.while_loop(lambda c: c.abs().sum() < 50, lambda c: c * 3, y)


def test_control_flow_on_the_inputs_is_exported_for_every_input(tmp_path):
    """The example's values are traced: ug.cond selects between its branches (Where) and
    while_loop is a Loop, so the file answers for inputs that take the other branch and another
    trip count, not the example's (it used to follow the example's branch)."""
    proto = export_and_compare(tmp_path, DataDependent(), ug.tensor([[0.5, 1.0, 2.0]]),
                               other_args=ug.tensor([[-4.0, -0.1, 0.2], [9.0, 1.0, 1.0]]))
    assert {"Where", "Loop"} <= set(op_types(proto))


def test_python_branch_on_an_input_is_refused_by_export(tmp_path):
    class Branchy(ug.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else -x  # the line the message names

    line = Branchy.forward.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"^\[onnx.export\] bool\(\) of a traced tensor .* at {__file__}:{line}: .*ug.cond"):
        ug.onnx.export(Branchy(), ug.ones(1, 3), str(tmp_path / "m.onnx"))


def test_default_names_and_static_shapes(tmp_path):
    ug.manual_seed(0)
    model = ug.nn.Linear(5, 2)
    path = str(tmp_path / "m.onnx")
    ug.onnx.export(model, ug.randn(3, 5), path)
    proto = onnx.load(path)
    assert [i.name for i in proto.graph.input] == ["input_0"]
    assert [o.name for o in proto.graph.output] == ["output_0"]
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [3, 5]
    # torch's list form of dynamic_axes names the dims itself.
    ug.onnx.export(model, ug.randn(3, 5), path, dynamic_axes={"input_0": [0], "output_0": [0]})
    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "input_0_dim_0" and dims[1].dim_value == 5


# ---- single layers ---------------------------------------------------------------------------

class Functional(ug.nn.Module):
    """A functional op with fixed extra arguments as a module."""

    def __init__(self, fn, *args):
        super().__init__()
        self.fn, self.args = fn, args

    def forward(self, x):
        return self.fn(x, *self.args)


LAYERS = {
    "conv2d": (lambda: ug.nn.Conv2d(3, 6, 3, stride=2, padding=1), (2, 3, 9, 9)),
    "conv2d_groups_dilation": (lambda: ug.nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=2), (2, 4, 7, 7)),
    "conv2d_same": (lambda: ug.nn.Conv2d(2, 3, 4, padding="same", bias=False), (2, 2, 6, 6)),
    "conv1d": (lambda: ug.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 10)),
    "conv_transpose2d": (lambda: ug.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 5)),
    "max_pool2d": (lambda: ug.nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 9, 9)),
    "avg_pool2d": (lambda: ug.nn.AvgPool2d(2), (2, 3, 8, 8)),
    "avg_pool2d_pad": (lambda: ug.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 7, 7)),
    "adaptive_avg_pool2d": (lambda: ug.nn.AdaptiveAvgPool2d(1), (2, 3, 6, 6)),
    "adaptive_avg_pool2d_windows": (lambda: ug.nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 6, 6)),
    "adaptive_max_pool1d": (lambda: Functional(ug.nn.functional.adaptive_max_pool1d, 2), (2, 3, 6)),
    "max_pool1d": (lambda: Functional(ug.nn.functional.max_pool1d, 2), (2, 3, 6)),
    "batch_norm2d": (lambda: ug.nn.BatchNorm2d(3), (4, 3, 5, 5)),
    "layer_norm": (lambda: ug.nn.LayerNorm(6), (3, 4, 6)),
    "layer_norm_2d": (lambda: ug.nn.LayerNorm([4, 6], elementwise_affine=False), (3, 4, 6)),
    "gelu": (lambda: ug.nn.GELU(), (3, 7)),
    "gelu_tanh": (lambda: ug.nn.GELU(approximate="tanh"), (3, 7)),
    "softmax": (lambda: ug.nn.Softmax(dim=1), (3, 7, 2)),
    "log_softmax": (lambda: ug.nn.LogSoftmax(dim=-1), (3, 7)),
    "dropout_eval": (lambda: ug.nn.Dropout(0.5), (3, 7)),
    "pad_constant": (lambda: Functional(ug.nn.functional.pad, (1, 2, 0, 1), "constant", 0.5), (2, 3, 4)),
    "pad_reflect": (lambda: Functional(ug.nn.functional.pad, (2, 1), "reflect"), (2, 3, 4)),
    "pad_replicate": (lambda: Functional(ug.nn.functional.pad, (1, 1, 2, 0), "replicate"), (2, 3, 4, 4)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_single_layers(tmp_path, name):
    ug.manual_seed(0)
    make, shape = LAYERS[name]
    layer = make()
    layer.eval()
    if name == "batch_norm2d":  # running statistics that are not 0 and 1
        layer.train()
        for _ in range(3):
            layer(ug.randn(*shape) * 2 + 1)
        layer.eval()
    other = (5,) + shape[1:]
    for opset in (17, 20) if name.startswith("gelu") else (17,):
        proto = export_and_compare(tmp_path, layer, ug.randn(*shape), ug.randn(*other), opset=opset)
    if name == "dropout_eval":
        assert op_types(proto) == ["Identity"]
    if name == "batch_norm2d":
        assert "BatchNormalization" in op_types(proto)
        assert {"running_mean", "running_var", "weight", "bias"} <= {i.name for i in proto.graph.initializer}


class Shapes(ug.nn.Module):
    """concat, slicing, select, gather, index_select, transpose, permute, reshape/view, flatten,
    unsqueeze/squeeze, expand and a few elementwise and reduction ops."""

    def __init__(self):
        super().__init__()
        self.register_buffer("index", ug.tensor([2, 0, 1]))

    def forward(self, x):
        n = x.shape[0]
        a = ug.cat([x, x * 2], 1)  # (N, 8, 6)
        b = a[:, 1:7:2]  # (N, 3, 6)
        c = b.transpose(1, 2).reshape(n, 18).view(n, 3, 6)
        d = ug.index_select(c, 1, self.index) + x[:, 0:1, :3].permute(0, 2, 1).mean(2, keepdim=True)
        e = ug.gather(d, 2, (d[:, :, :2] * 0).to(ug.int64) + 1)
        f = e.unsqueeze(1).expand(n, 4, 3, 2).flatten(2).squeeze(1).amax(1)
        g = ug.where(f > 0, f.exp(), f.sigmoid() - f.abs().sqrt())
        return ug.stack([g, g.softmax(-1)], 1).flatten(1) - x.select(1, 3).sum(-1, keepdim=True)


def test_shape_ops(tmp_path):
    ug.manual_seed(0)
    proto = export_and_compare(tmp_path, Shapes(), ug.randn(3, 4, 6), ug.randn(7, 4, 6))
    assert {"Concat", "Slice", "Gather", "GatherElements", "Transpose", "Reshape", "Expand", "Where"} <= set(
        op_types(proto))


class Indexing(ug.nn.Module):
    """Advanced indexing, flip, scatter_add, masked_fill_ and cumsum."""

    def __init__(self):
        super().__init__()
        self.register_buffer("columns", ug.tensor([3, 0, 2]))

    def forward(self, x):
        a = x[:, self.columns].flip([1])  # (N, 3, 5)
        index = ug.zeros_like(a[:, :2], dtype=ug.int64) + 2  # follows the batch size
        b = a.scatter_add(1, index, a[:, :2].exp())
        c = b.clone()
        c.masked_fill_(c > 1, 0.5)
        return c.cumsum(2)


def test_indexing_ops(tmp_path):
    ug.manual_seed(0)
    proto = export_and_compare(tmp_path, Indexing(), ug.randn(2, 4, 5), ug.randn(5, 4, 5))
    assert {"Gather", "ScatterElements", "Where", "CumSum"} <= set(op_types(proto))


def test_embedding_and_integer_inputs(tmp_path):
    ug.manual_seed(0)
    model = ug.nn.Sequential(ug.nn.Embedding(20, 5), ug.nn.Flatten(), ug.nn.Linear(15, 2))
    proto = export_and_compare(tmp_path, model, ug.randint(0, 20, (4, 3)), ug.randint(0, 20, (2, 3)))
    assert "Gather" in op_types(proto)


class SmallIntegers(ug.nn.Module):
    """int8 in, int16 and uint16 constants and outputs: the new element types in a file."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offset", ug.tensor([1, -2, 3], dtype=ug.int16))

    def forward(self, x):
        return x.float() * 0.5, x.to(ug.int16) + self.offset, x.to(ug.uint16)


def test_int8_int16_uint16_inputs_constants_and_outputs(tmp_path):
    x = ug.tensor(np.array([[1, -5, 100], [-128, 127, 0]], np.int8))
    proto = export_and_compare(tmp_path, SmallIntegers(), x, dynamic=False)
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT8
    assert [o.type.tensor_type.elem_type for o in proto.graph.output[1:]] == [onnx.TensorProto.INT16,
                                                                             onnx.TensorProto.UINT16]


def test_lower_opsets(tmp_path):
    ug.manual_seed(0)
    export_and_compare(tmp_path, ug.models.LeNet(), ug.rand(2, 1, 28, 28), ug.rand(3, 1, 28, 28), opset=13)
    with pytest.raises(ValueError, match="layer_norm needs opset 17"):
        ug.onnx.export(ug.nn.LayerNorm(4), ug.randn(2, 4), str(tmp_path / "m.onnx"), opset_version=13)


# ---- errors and modes --------------------------------------------------------------------------


class Cholesky(ug.nn.Module):
    def forward(self, x):
        return ug.linalg.cholesky(x @ x.mT + ug.eye(2))


class AsStrided(ug.nn.Module):
    def forward(self, x):
        return x.as_strided((2, 2), (1, 2)) * 2


class Noisy(ug.nn.Module):
    def forward(self, x):
        return x + ug.randn(*x.shape)


@pytest.mark.parametrize("model,op", [(Cholesky(), "linalg_cholesky"), (AsStrided(), "as_strided"), (Noisy(), "random")])
def test_unsupported_op_names_itself(tmp_path, model, op):
    with pytest.raises(ValueError, match=f"op '{op}' is not supported by the ONNX exporter"):
        ug.onnx.export(model, ug.randn(2, 3), str(tmp_path / "m.onnx"))


class InPlaceOnView(ug.nn.Module):
    def forward(self, x):
        y = x * 2
        y[:, 0].add_(1)  # changes y through a view: the graph would miss it
        return y


def test_in_place_write_through_a_view_is_a_scatter_refused_with_dynamic_axes(tmp_path):
    # The write is a ScatterElements of the view's elements into the value (the graph once
    # missed it, then refused it); its positions are the traced shape's, so not under dynamic axes.
    export_and_compare(tmp_path, InPlaceOnView(), ug.randn(2, 3), dynamic=False)
    with pytest.raises(ValueError, match="in-place op 'add' writes a view .* with dynamic axes"):
        ug.onnx.export(InPlaceOnView(), ug.randn(2, 3), str(tmp_path / "m.onnx"), dynamic_axes={"input_0": {0: "n"}})


def test_bad_arguments(tmp_path):
    model, x, path = ug.nn.Linear(3, 2), ug.randn(2, 3), str(tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="opset_version must be between 13 and 20"):
        ug.onnx.export(model, x, path, opset_version=12)
    with pytest.raises(ValueError, match="dynamic_axes names 'z'"):
        ug.onnx.export(model, x, path, dynamic_axes={"z": {0: "batch"}})
    with pytest.raises(ValueError, match="2 input names given for 1 inputs"):
        ug.onnx.export(model, x, path, input_names=["a", "b"])
    with pytest.raises(TypeError, match="args must be a tensor or a tuple of tensors"):
        ug.onnx.export(model, 3, path)


def test_training_mode_is_restored(tmp_path):
    model = ug.nn.Sequential(ug.nn.Linear(3, 3), ug.nn.Dropout(0.9), ug.nn.Linear(3, 1))
    model.train()
    model[2].eval()
    proto = export_and_compare(tmp_path, model.eval(), ug.randn(2, 3), ug.randn(4, 3))
    model.train()
    model[2].eval()
    ug.onnx.export(model, ug.randn(2, 3), str(tmp_path / "again.onnx"))
    assert model.training and model[1].training and not model[2].training
    assert "Identity" in op_types(proto)  # dropout in eval mode is the identity


# ---- the ug export command ----------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["mlp", "lenet"])
def test_cli_export(tmp_path, arch):
    ug.manual_seed(0)
    a = ug.models.Architecture(arch)
    model = ug.models.build(a)
    saved, out = str(tmp_path / "model.safetensors"), str(tmp_path / "model.onnx")
    ug.models.save_model(model, a, saved)
    r = subprocess.run([UG, "export", saved, out, "--batch", "3", "--opset", "18"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}" in r.stdout
    proto = onnx.load(out)
    onnx.checker.check_model(proto, full_check=True)
    onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    assert [i.name for i in proto.graph.input] == ["input"] and [o.name for o in proto.graph.output] == ["logits"]
    assert proto.opset_import[0].version == 18
    loaded = ug.models.load_model(saved)[0]
    shape = tuple(ug.models.input_shape(a))[1:]
    x = ug.rand(5, *shape)
    for got in run_both(out, proto, {"input": x.numpy()}):
        np.testing.assert_allclose(got[0], loaded(x).numpy(), **TOL)


def test_cli_export_usage(tmp_path):
    r = subprocess.run([UG, "export", "only_one.safetensors"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "expected a model file and an output file" in r.stderr
    r = subprocess.run([UG, "export", "a", "b", "--opset", "9"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--opset expects an integer from 13 to 20" in r.stderr


class IndexAssignments(ug.nn.Module):
    """x[index] = value and x[index] op= value with constant indices: written out as scatters."""

    def __init__(self):
        super().__init__()
        self.linear = ug.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        y[:, 0] += 1
        y[1] = x[0] * 2
        y[ug.tensor([2, 0]), 3] = ug.tensor([5.0, 6.0])
        y.t()[2].tanh_()
        return y


def test_index_assignments_with_constant_indices(tmp_path):
    ug.manual_seed(0)
    proto = export_and_compare(tmp_path, IndexAssignments(), ug.randn(3, 4), dynamic=False)
    # three assignments, and two writes into views: y[:, 0]'s += before Python assigns it back, tanh_
    assert op_types(proto).count("ScatterElements") == 5
    # Positions fixed at the traced sizes: refused along a dynamic axis, and for an index the
    # function computes.
    class Assignment(ug.nn.Module):
        def forward(self, x):
            y = x * 1
            y[1] = x[0] * 2
            return y

    with pytest.raises(ValueError, match=r"'index_put_' .* with dynamic axes is not exported"):
        export_and_compare(tmp_path, Assignment(), ug.randn(3, 4))

    class ComputedIndex(ug.nn.Module):
        def forward(self, x):
            y = x * 1
            y[x.argmax(1)] = 0.0
            return y

    with pytest.raises(ValueError, match=r"'index_put_' .* with an index the function computes"):
        export_and_compare(tmp_path, ComputedIndex(), ug.randn(3, 4), dynamic=False)


def test_a_float_attribute_that_float32_rounds_keeps_its_exact_value_for_unigrad(tmp_path):
    # LayerNormalization's epsilon is an ONNX FLOAT (32 bits): 1e-5 rounds. ORT reads the float;
    # unigrad reads the exact double the exporter adds, so a float64 program and a reloaded file
    # compute with eager's epsilon (rows of nearly equal values make the difference visible).
    x = ug.tensor(np.array([[1.0, 1.0, 1.0, 1.0 + 1e-4], [0.3, -0.2, 0.5, 0.1]]))
    weights = ug.arange(4.0, dtype=ug.float64)

    def f(v):
        return (ug.nn.functional.layer_norm(v, (4,), eps=1e-5) ** 2 * weights).sum()

    np.testing.assert_array_equal(ug.grad(ug.jit(f))(x).numpy(), ug.grad(f)(x).numpy())
    model = ug.nn.LayerNorm(4, eps=1e-5).double()
    path = str(tmp_path / "ln.onnx")
    ug.onnx.export(model, (x,), path)
    node = next(n for n in onnx.load(path).graph.node if n.op_type == "LayerNormalization")
    epsilon = next(a for a in node.attribute if a.name == "epsilon")
    assert epsilon.f == np.float32(1e-5)
    loaded = ug.onnx.load(path)
    with ug.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
        # ORT computes with the float: within what 1e-5's rounding (2.5e-8 of it) moves
        ort_out = ort.InferenceSession(path).run(None, {"input_0": x.numpy()})[0]
        np.testing.assert_allclose(ort_out, model(x).numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("view", [lambda x: x.diagonal(1) * 2, lambda x: x.reshape(2, 2, 6).diagonal(0, 0, 2),
                                  lambda x: x.unfold(1, 3, 2) + 1])
def test_a_strided_view_is_a_gather_of_its_elements(tmp_path, view):
    class View(ug.nn.Module):
        def forward(self, x):
            return view(x)

    x = ug.randn(4, 6)
    path = str(tmp_path / "view.onnx")
    ug.onnx.export(View(), x, path)
    got = ort.InferenceSession(path).run(None, {"input_0": x.numpy()})[0]
    np.testing.assert_array_equal(got, view(x).numpy())
    with pytest.raises(ValueError, match="dynamic ax"):  # the positions hold for one size only
        ug.onnx.export(View(), x, path, dynamic_axes={"input_0": {0: "batch"}})
