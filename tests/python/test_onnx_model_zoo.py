"""The nine light model-zoo graphs the onnx wheel ships (onnx/backend/test/data/light: AlexNet,
DenseNet-121, Inception v1 and v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512, all
opset 9, weights made constant) load as shipped, through the version converter, and match
their stored outputs as onnx's backend runner checks them: its input is arange(n) / n in the
graph's input shape, its tolerances those of onnx/backend/test/case/model."""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import unigrad as ug

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
RTOL = {"densenet121": 2e-3}  # the rest 1e-3; atol 1e-7 for all
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet",
          "vgg19", "zfnet512"]


def runner_input(model: onnx.ModelProto) -> np.ndarray:
    """The input onnx's runner feeds these graphs (Runner.generate_dummy_data, random=False)."""
    inits = {i.name for i in model.graph.initializer}
    x = next(i for i in model.graph.input if i.name not in inits)
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_its_stored_output(name):
    path = LIGHT / f"light_{name}.onnx"
    model = onnx.load(path)
    assert model.opset_import[0].version == 9
    expected = numpy_helper.to_array(onnx.load_tensor(LIGHT / f"light_{name}_output_0.pb"))
    out = ug.onnx.load(str(path))(ug.from_numpy(runner_input(model))).numpy()
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=RTOL.get(name, 1e-3), atol=1e-7)
