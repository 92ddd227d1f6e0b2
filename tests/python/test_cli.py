"""The `ug` program as a shell user meets it: help on every subcommand, exit codes (0 ok,
1 error, 2 usage) and messages without stack traces."""
import os
import subprocess

import numpy as np
import pytest

import unigrad as ug

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UG = os.environ.get("UG_CLI", os.path.join(ROOT, "build", "cli", "ug"))


def ug_run(*args, timeout=120):
    return subprocess.run([UG, *args], capture_output=True, text=True, timeout=timeout)


def commands():
    out = ug_run("--help").stdout
    return [line.split()[0] for line in out.split("commands:\n")[1].split("\n\n")[0].splitlines()]


def test_version_and_help():
    r = ug_run("--version")
    assert r.returncode == 0 and r.stdout == f"unigrad {ug.__version__}\n"
    r = ug_run("--help")
    assert r.returncode == 0 and "usage: ug <command>" in r.stdout
    assert {"env", "summary"} <= set(commands())


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_subcommand_has_help(flag):
    for command in commands():
        r = ug_run(command, flag)
        assert r.returncode == 0, command
        assert r.stdout.startswith(f"usage: ug {command}"), (command, r.stdout)


def test_bad_arguments_give_usage_and_exit_2():
    r = ug_run()
    assert r.returncode == 2 and "usage: ug" in r.stderr
    r = ug_run("frobnicate")
    assert r.returncode == 2 and "unknown command or option 'frobnicate'" in r.stderr
    r = ug_run("summary", "--bogus")
    assert r.returncode == 2 and "unknown option '--bogus'" in r.stderr and "usage: ug summary" in r.stderr
    r = ug_run("env", "extra")
    assert r.returncode == 2 and "unexpected argument 'extra'" in r.stderr


def test_library_errors_exit_1_without_a_trace(tmp_path):
    r = ug_run("summary", str(tmp_path / "missing.safetensors"))
    assert r.returncode == 1
    assert r.stderr.startswith("ug summary: error: ") and "No such file" in r.stderr
    assert "Traceback" not in r.stderr and "terminate called" not in r.stderr


def test_summary_lists_layers_shapes_and_counts(tmp_path):
    arch = ug.models.Architecture("lenet")
    path = str(tmp_path / "lenet.safetensors")
    ug.models.save_model(ug.models.build(arch), arch, path)
    r = ug_run("summary", path)
    assert r.returncode == 0, r.stderr
    assert "architecture: lenet (classes=10, in_channels=1)" in r.stdout
    assert "conv2 (Conv2d)   (None, 16, 10, 10)   2416" in r.stdout
    assert "Total params: 61706" in r.stdout


def test_env_reports_the_build():
    r = ug_run("env")
    assert r.returncode == 0
    keys = [line.split()[0] for line in r.stdout.splitlines()]
    assert keys[:4] == ["unigrad", "compiler", "standard", "BLAS"]
    assert {"SIMD", "threads", "devices", "parts"} <= set(keys)
    assert "thread per call inside unigrad's pool" in r.stdout  # OpenBLAS runs single-threaded in our tasks
    assert "protobuf 3." in r.stdout and "libzip 1." in r.stdout


def fashion_slice(tmp_path, n_train=2000, n_test=500):
    """A slice of Fashion-MNIST as NPY files, so that a training run takes a second."""
    images = ug.data.read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").numpy()
    labels = ug.data.read_idx("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz").numpy()
    paths = {}
    for split, lo, hi in (("train", 0, n_train), ("test", n_train, n_train + n_test)):
        for kind, array in (("images", images[lo:hi]), ("labels", labels[lo:hi].astype(np.int64))):
            paths[f"--{split}-{kind}"] = str(tmp_path / f"{split}-{kind}.npy")
            np.save(paths[f"--{split}-{kind}"], array)
    return [arg for kv in paths.items() for arg in kv]


def test_train_writes_model_checkpoint_logs_and_chart_and_resumes_bit_identically(tmp_path):
    import xml.etree.ElementTree as ET
    data = fashion_slice(tmp_path)
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    r = ug_run("train", *data, "--epochs", "2", "--out", straight, "--verbose", "2", "--schedule", "cosine")
    assert r.returncode == 0, r.stderr
    assert "Epoch 2/2" in r.stdout and "val_accuracy" in r.stdout
    accuracy = float(r.stdout.split("test accuracy ")[1].split(",")[0])
    assert accuracy > 0.6  # 2,000 images, 2 epochs
    for name in ("model.safetensors", "checkpoint.safetensors", "metrics.csv", "history.svg"):
        assert os.path.exists(os.path.join(straight, name)), name
    assert sorted(os.listdir(os.path.join(straight, "logs"))) == ["train", "validation"]
    lines = open(os.path.join(straight, "metrics.csv")).read().splitlines()
    assert lines[0] == "epoch,accuracy,learning_rate,loss,val_accuracy,val_loss" and len(lines) == 3
    assert float(lines[2].split(",")[2]) == pytest.approx(1e-3 * 0.5 * (1 + np.cos(np.pi / 2)))  # cosine at epoch 1
    svg = ET.parse(os.path.join(straight, "history.svg")).getroot()
    assert svg.tag.endswith("svg")

    assert ug_run("train", *data, "--epochs", "1", "--out", resumed, "--verbose", "0", "--schedule", "cosine",
                  "--lr", "0.001").returncode == 0
    r = ug_run("train", *data, "--epochs", "2", "--out", resumed, "--verbose", "0", "--schedule", "cosine", "--resume")
    assert r.returncode == 0, r.stderr
    assert "resuming from" in r.stdout and "after epoch 1" in r.stdout
    with open(os.path.join(straight, "model.safetensors"), "rb") as a, \
            open(os.path.join(resumed, "model.safetensors"), "rb") as b:
        assert a.read() == b.read()
    assert len(open(os.path.join(resumed, "metrics.csv")).read().splitlines()) == 3

    model = os.path.join(straight, "model.safetensors")
    r = ug_run("eval", model, *data)
    assert r.returncode == 0 and f"accuracy {accuracy:.4f}" in r.stdout
    r = ug_run("predict", model, *data, "--index", "0", "3")
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert len(rows) == 2 and rows[0].startswith("test image 0: ") and rows[1].startswith("test image 3: ")
    assert "true: class " in rows[0]  # labels from files are numbered, not named


def test_train_with_jit_compiles_the_step_and_trains_as_eager_does(tmp_path):
    data = fashion_slice(tmp_path)
    losses = {}
    for flags in ((), ("--jit",)):
        out = str(tmp_path / ("jit" if flags else "eager"))
        r = ug_run("train", *data, "--epochs", "2", "--out", out, "--verbose", "0", *flags)
        assert r.returncode == 0, r.stderr
        rows = open(os.path.join(out, "metrics.csv")).read().splitlines()[1:]
        losses[flags] = [float(row.split(",")[2]) for row in rows]
    # float32 steps whose backward sums run in other orders: equal to a few float32 ulps per step
    np.testing.assert_allclose(losses[("--jit",)], losses[()], rtol=1e-4)


def test_predict_names_fashion_classes_and_checks_indices(tmp_path):
    arch = ug.models.Architecture("mlp")
    model = str(tmp_path / "m.safetensors")
    ug.models.save_model(ug.models.build(arch), arch, model)
    r = ug_run("predict", model, "--index", "0")
    assert r.returncode == 0 and "true: Ankle boot" in r.stdout  # the first Fashion-MNIST test image
    r = ug_run("predict", model, "--index", "10000")
    assert r.returncode == 1 and "index 10000 is out of range for 10000 test images" in r.stderr


def test_train_and_predict_read_csv_files(tmp_path):
    images = ug.data.read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").numpy()[:300]
    labels = ug.data.read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").numpy()[:300]
    np.savetxt(tmp_path / "x.csv", images.reshape(300, -1), fmt="%d", delimiter=",")
    np.savetxt(tmp_path / "y.csv", labels, fmt="%d", header="label", comments="")
    files = ["--train-images", str(tmp_path / "x.csv"), "--train-labels", str(tmp_path / "y.csv"),
             "--test-images", str(tmp_path / "x.csv"), "--test-labels", str(tmp_path / "y.csv")]
    r = ug_run("train", *files, "--epochs", "1", "--out", str(tmp_path / "run"), "--verbose", "0")
    assert r.returncode == 0, r.stderr
    assert "on 300 images, testing on 300" in r.stdout
    r = ug_run("predict", str(tmp_path / "run" / "model.safetensors"), "--file", str(tmp_path / "x.csv"))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 300


def test_train_bad_arguments(tmp_path):
    r = ug_run("train", "--schedule", "linear")
    assert r.returncode == 2 and "--schedule expects constant, step or cosine" in r.stderr
    r = ug_run("train", "--epochs", "0")
    assert r.returncode == 2 and "--epochs expects an integer from 1" in r.stderr
    r = ug_run("train", "--train-images", "x.npy")
    assert r.returncode == 2 and "give both --train-images and --train-labels" in r.stderr
    r = ug_run("train", "--model", "resnet", "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and "unknown model 'resnet'" in r.stderr
    r = ug_run("train", "--data", str(tmp_path), "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and "missing" in r.stderr and "train-images-idx3-ubyte.gz" in r.stderr
    r = ug_run("train", "--out", str(tmp_path / "fresh"), "--resume")
    assert r.returncode == 1 and "no checkpoint" in r.stderr


def test_missing_fashion_mnist_says_how_to_install(tmp_path):
    env = dict(os.environ, FASHION_MNIST_DIR=str(tmp_path))
    r = subprocess.run([UG, "eval", "nothing.safetensors"], capture_output=True, text=True, env=env)
    assert r.returncode == 1
    arch = ug.models.Architecture("mlp")
    model = str(tmp_path / "m.safetensors")
    ug.models.save_model(ug.models.build(arch), arch, model)
    r = subprocess.run([UG, "eval", model], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "sudo apt-get install dataset-fashion-mnist" in r.stderr
