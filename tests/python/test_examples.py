"""The examples/ programs run, and the Python and C++ versions of the main job agree: same
data order, same initial weights, same updates, so the same metrics and predictions."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def results(stdout):
    """The lines after training: the test accuracy and the predictions."""
    lines = stdout.splitlines()
    return [line for line in lines if line.startswith(("test accuracy", "test image"))]


def test_python_and_cpp_main_jobs_agree(tmp_path):
    py = run([sys.executable, "examples/train_fashion_mnist.py", "--epochs", "1", "--limit", "3000",
              "--out", str(tmp_path / "py")])
    cpp = run([os.path.join(ROOT, "build", "examples", "train_fashion_mnist"), "1", "3000", str(tmp_path / "cpp")])
    assert len(results(py)) == 6
    assert results(py) == results(cpp)
    for out in ("py", "cpp"):
        for name in ("model.safetensors", "checkpoint.safetensors", "metrics.csv", "history.svg", "logs"):
            assert os.path.exists(tmp_path / out / name), (out, name)
    assert (tmp_path / "py" / "model.safetensors").read_bytes() == (tmp_path / "cpp" / "model.safetensors").read_bytes()
