"""The `ug` program as a shell user meets it: help on every subcommand, exit codes (0 ok,
1 error, 2 usage) and messages without stack traces."""
import os
import subprocess

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
    assert "SIMD" in keys and "devices" in keys
