"""OpenBLAS's kernels: Debian 12's OpenBLAS 0.3.21 gave a CPU newer than itself (an Emerald
Rapids Xeon, model 207) its SSE3 kernels, and float32 products ran 3x slower. unigrad names the
kernels for the CPU's features (unigrad/_openblas.py before _C loads the library, and
ug::rerun_with_openblas_core for the `ug` program), unless the user set OPENBLAS_CORETYPE."""
import os
import subprocess
import sys

import pytest

import unigrad as ug
from unigrad import _openblas

UG = os.environ.get("UG_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "cli", "ug"))
AVX512 = "avx512f avx512dq avx512cd avx512bw avx512vl"


@pytest.mark.parametrize("flags, core", [
    (f"fpu sse2 avx2 fma {AVX512} avx_vnni avx512_bf16 amx_bf16 amx_tile", "Cooperlake"),  # Sapphire/Emerald Rapids, Zen 4
    (f"fpu sse2 avx2 fma {AVX512} avx512_vnni", "SkylakeX"),  # Skylake-SP to Ice Lake
    ("fpu sse2 avx2 fma avx512f", ""),  # AVX-512 without BW/DQ/VL (Knights Landing): OpenBLAS decides
    ("fpu sse2 avx2 fma", ""),
])
def test_the_rule_reads_the_cpus_flags(tmp_path, flags, core):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert _openblas.core_for_cpu(str(cpuinfo)) == core
    assert _openblas.core_for_cpu(str(tmp_path / "missing")) == ""


def test_python_and_cpp_apply_one_rule_on_this_cpu():
    assert _openblas.core_for_cpu() == ug._C._openblas_core_for_cpu()


def clean_env(**extra):
    return {**{k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}, **extra}


def test_importing_unigrad_picks_the_cpus_kernels_and_restores_the_environment():
    code = "import os, unigrad as ug; print(ug._C._openblas_core(), os.environ.get('OPENBLAS_CORETYPE'))"
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, check=True)
    core, env = out.stdout.split()
    assert env == "None"  # a library loaded later picks its own kernels
    want = _openblas.core_for_cpu()
    if want:
        assert core == want
    # The user's choice stands.
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(OPENBLAS_CORETYPE="Haswell"),
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Haswell", "Haswell"]


def test_the_ug_program_runs_again_with_the_cpus_kernels():
    blas = [line for line in subprocess.run([UG, "env"], env=clean_env(), capture_output=True, text=True,
                                            check=True).stdout.splitlines() if line.startswith("BLAS")]
    want = _openblas.core_for_cpu()
    assert len(blas) == 1 and (not want or f" {want} " in blas[0]), blas
    blas = subprocess.run([UG, "env"], env=clean_env(OPENBLAS_CORETYPE="Haswell"), capture_output=True, text=True,
                          check=True).stdout
    assert " Haswell " in blas
