"""OpenBLAS picks its kernels when unigrad._C loads it, from a table of the CPU models it knows:
Debian 12's 0.3.21 gives a newer CPU its oldest x86-64 kernels (SSE3; float32 products 3x
slower on an Emerald Rapids Xeon). OPENBLAS_CORETYPE, read at that load, names the kernels
instead: this sets it for the load from the CPU's features, by the rule of C++'s
ug::openblas_core_for_cpu (src/ug/core/openblas.h), unless the user set it, and puts the
environment back after (so that another library's OpenBLAS loaded later picks its own)."""
import contextlib
import os


def core_for_cpu(cpuinfo="/proc/cpuinfo"):
    """'Cooperlake' with AVX512-BF16, 'SkylakeX' with AVX-512 (F, BW, DQ, VL), else ''."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return ""
    if not {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return ""
    return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"


@contextlib.contextmanager
def pinned_core():
    """While loading the library: OPENBLAS_CORETYPE set to core_for_cpu() unless already set."""
    core = "" if "OPENBLAS_CORETYPE" in os.environ else core_for_cpu()
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
    try:
        yield
    finally:
        if core:
            del os.environ["OPENBLAS_CORETYPE"]
