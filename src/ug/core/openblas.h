// OpenBLAS picks its kernels when it is loaded, from a table of the CPU models it knows, and
// reads OPENBLAS_CORETYPE then to be told instead. Debian 12's OpenBLAS 0.3.21 does not know
// CPUs newer than itself and gives them its oldest x86-64 kernels (Prescott, SSE3): on an
// Emerald Rapids Xeon (model 207) float32 products ran 3x slower than with the AVX-512 kernels
// it ships. These functions say what the CPU can run and, for a program's main(), set it.
#pragma once

#include <string>
#include <string_view>

namespace ug {

/** The OpenBLAS kernels this CPU's features run: "Cooperlake" with AVX512-BF16, "SkylakeX" with
 *  AVX-512 (F, BW, DQ, VL), "" otherwise (OpenBLAS 0.3.21 knows the AVX2 CPUs). Python's
 *  unigrad/_openblas.py applies the same rule from /proc/cpuinfo before it loads the library. */
std::string_view openblas_core_for_cpu();
/** The kernels OpenBLAS picked at load ("Cooperlake", "Prescott", ...). */
std::string openblas_core();
/** Whether OpenBLAS runs kernels older than openblas_core_for_cpu() names: it did not know the
 *  CPU and OPENBLAS_CORETYPE was not set. */
bool openblas_core_outdated();
/** For a program's main(), before anything else: when openblas_core_outdated() and
 *  OPENBLAS_CORETYPE is unset, runs the program again with it set to openblas_core_for_cpu()
 *  (execv of /proc/self/exe, same arguments and process); returns where nothing is to be done
 *  or the exec failed. The `ug` program and ug_bench call it. */
void rerun_with_openblas_core(char** argv);

}  // namespace ug
