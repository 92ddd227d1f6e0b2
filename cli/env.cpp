// `ug env`: what this build runs with, for bug reports and benchmark write-ups.
#include <cstdio>
#include <string>

#include "cli.h"
#include "ug/backend/cpu/cpu_backend.h"
#include "ug/core/thread_pool.h"

// Declared here rather than through <cblas.h>: Debian's cblas.h alternative may be another
// BLAS's header, and these two functions exist only in OpenBLAS (which unigrad links).
extern "C" char* openblas_get_config(void);
extern "C" int openblas_get_num_threads(void);

namespace ug::cli {

namespace {

std::string cxx_standard() {
  switch (__cplusplus) {
    case 202002L: return "C++20";
    case 202302L: return "C++23";
    default: return "C++ (__cplusplus " + std::to_string(__cplusplus) + ")";
  }
}

}  // namespace

int run_env(const Args& args) {
  if (!args.empty()) throw UsageError("unexpected argument '" + std::string(args[0]) + "'");
  const auto row = [](const char* key, const std::string& value) { std::printf("%-10s %s\n", key, value.c_str()); };
  row("unigrad", UG_VERSION " (" UG_BUILD_TYPE " build)");
#if defined(__clang__)
  row("compiler", __VERSION__);  // already reads "Clang x.y.z ..."
#else
  row("compiler", "GCC " __VERSION__);
#endif
  row("standard", cxx_standard());
  const int threads = ug::get_num_threads();  // starts the pool, which sets OpenBLAS to 1 thread
  row("BLAS", std::string(openblas_get_config()) + ", " + std::to_string(openblas_get_num_threads()) +
                  " thread per call inside unigrad's pool");
  row("SIMD", ug::cpu::cpu_backend().isa());
  row("bfloat16", std::string("products on ") + ug::cpu::cpu_backend().bf16_kernel());
  row("threads", std::to_string(threads));
  row("devices", "cpu; cuda: not built");
  row("parts", "TensorBoard logs (protobuf " UG_PROTOBUF_VERSION "), .npz (libzip " UG_LIBZIP_VERSION
               "), safetensors (nlohmann-json " UG_JSON_VERSION "); ONNX, serving: not built");
  return 0;
}

}  // namespace ug::cli
