"""torch.jit's names (trace, script, load) and torch.nn.DataParallel, against torch 2.13 on the
same weights, and the saved files run by ONNX Runtime."""
import itertools

import numpy as np
import pytest
import torch

import unigrad as ug


def _pair():
    """The same conv net in torch and unigrad (eval mode)."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                             torch.nn.Linear(4 * 6 * 6, 5)).eval()
    um = ug.nn.Sequential(ug.nn.Conv2d(1, 4, 3), ug.nn.ReLU(), ug.nn.Flatten(), ug.nn.Linear(4 * 6 * 6, 5)).eval()
    um.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, um


def _close(u, t):
    # A 144-term dot product after a 9-term conv: float32 sums agree to ~150 eps of their size.
    np.testing.assert_allclose(u.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_traced_module_matches_torchs_trace_and_loads_at_any_batch(tmp_path):
    tm, um = _pair()
    x = np.random.default_rng(1).standard_normal((2, 1, 8, 8)).astype(np.float32)
    ttraced = torch.jit.trace(tm, torch.tensor(x))
    traced = ug.jit.trace(um, ug.tensor(x))
    _close(traced(ug.tensor(x)), ttraced(torch.tensor(x)))
    assert isinstance(traced, ug.jit.ScriptModule) and len(list(traced.parameters())) == 4
    path = tmp_path / "net.onnx"
    traced.save(path)
    batch = np.random.default_rng(2).standard_normal((7, 1, 8, 8)).astype(np.float32)
    loaded = ug.jit.load(path)
    assert not loaded.training
    _close(loaded(ug.tensor(batch)), ttraced(torch.tensor(batch)))
    ort = pytest.importorskip("onnxruntime")
    (out,) = ort.InferenceSession(str(path)).run(None, {"input_0": batch})
    _close(ug.tensor(out), tm(torch.tensor(batch)))


def test_scripted_module_saves_after_its_first_call(tmp_path):
    _, um = _pair()
    scripted = ug.jit.script(um)
    with pytest.raises(ValueError, match=r"\[jit.save\].*first call"):
        scripted.save(tmp_path / "s.onnx")
    x = ug.randn(3, 1, 8, 8)
    _close(scripted(x), um(x))
    scripted.save(tmp_path / "s.onnx")
    _close(ug.jit.load(tmp_path / "s.onnx")(x), um(x))
    assert ug.jit.script(scripted) is scripted


def test_script_takes_torchs_example_inputs(tmp_path):
    _, um = _pair()
    x = ug.randn(2, 1, 8, 8)
    ug.jit.script(um, example_inputs=[(x,)]).save(tmp_path / "e.onnx")
    _close(ug.jit.load(tmp_path / "e.onnx")(x), um(x))
    with pytest.raises(TypeError, match=r"\[jit.script\] example_inputs"):
        ug.jit.script(um, example_inputs=x)


def test_traced_function_with_several_inputs(tmp_path):
    def f(a, b):
        return (a * b).sum(1) + a.exp()[:, 0]

    a, b = ug.randn(3, 4), ug.randn(3, 4)
    traced = ug.jit.trace(f, (a, b))
    assert traced.__name__ == "f"
    _close(traced(a, b), f(a, b))
    traced.save(tmp_path / "f.onnx")
    loaded = ug.jit.load(tmp_path / "f.onnx")
    _close(loaded(a, b), f(a, b))
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    _close(loaded(a, b), torch.jit.trace(lambda x, y: (x * y).sum(1) + x.exp()[:, 0], (ta, tb))(ta, tb))


def test_check_trace_catches_a_function_that_depends_on_python_state():
    counter = itertools.count(1)

    def drifting(x):
        return x * next(counter)

    with pytest.raises(ValueError, match=r"\[jit.trace\].*differ from eager"):
        ug.jit.trace(drifting, ug.ones(2))
    assert ug.jit.trace(drifting, ug.ones(2), check_trace=False) is not None


def test_trace_and_load_errors():
    with pytest.raises(TypeError, match=r"\[jit.trace\] example_inputs is required"):
        ug.jit.trace(ug.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"\[jit.trace\] expected a module or a function"):
        ug.jit.trace(3, ug.ones(1))
    with pytest.raises(ValueError, match=r"\[jit.load\] only map_location='cpu'"):
        ug.jit.load("x.onnx", map_location="cuda:0")


def test_data_parallel_is_torchs_on_one_device():
    tm = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    um = ug.nn.DataParallel(ug.nn.Linear(3, 2))
    assert list(um.state_dict()) == list(tm.state_dict()) == ["module.weight", "module.bias"]
    um.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    _close(um(ug.tensor(x)), tm(torch.tensor(x)))
    assert um.device_ids == tm.device_ids == [] and isinstance(um.module, ug.nn.Linear)
    assert ug.nn.parallel.DataParallel is ug.nn.DataParallel
    with pytest.raises(TypeError, match=r"\[DataParallel\] expected a Module"):
        ug.nn.DataParallel(lambda x: x)
