#include "ug/core/openblas.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>

// Declared here rather than through <cblas.h>: Debian's cblas.h alternative may be another
// BLAS's header, and this function exists only in OpenBLAS (which unigrad links).
extern "C" char* openblas_get_corename(void);

namespace ug {

std::string_view openblas_core_for_cpu() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  return "";
}

std::string openblas_core() { return openblas_get_corename(); }

bool openblas_core_outdated() {
  const std::string_view want = openblas_core_for_cpu();
  if (want.empty()) return false;
  // The AVX-512 kernels of OpenBLAS's x86-64 builds, oldest first, newer ones included: a
  // core before the wanted one (or none of them: SSE3, AVX2) is outdated. Debian's 0.3.21
  // gives an AMX-capable Xeon (family 6, model 167 as the hypervisor reports it) SkylakeX: the
  // `ug` program then runs the kernels that Python's import names, Cooperlake.
  constexpr std::array<std::string_view, 3> kAvx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  const auto rank = [&](std::string_view core) { return std::find(kAvx512.begin(), kAvx512.end(), core); };
  const auto have = rank(openblas_core());
  return have == kAvx512.end() || have < rank(want);
}

void rerun_with_openblas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || !openblas_core_outdated()) return;
  if (setenv("OPENBLAS_CORETYPE", std::string(openblas_core_for_cpu()).c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // the exec failed: go on with the kernels picked
}

}  // namespace ug
