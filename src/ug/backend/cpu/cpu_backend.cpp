#include "ug/backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <string_view>

#include "ug/backend/cpu/cpu_bf16_gemm.h"
#include "ug/backend/cpu/cpu_int8_gemm.h"
#include "ug/backend/cpu/kernels.h"

namespace ug::cpu {

namespace {
std::string_view forced_isa() { return std::getenv("UG_CPU_ISA") ? std::getenv("UG_CPU_ISA") : ""; }

CpuBackend::Isa pick_isa() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  // UG_CPU_ISA=generic, avx2 or avx512 caps the kernel set (to test the others on a newer
  // machine); avx512 leaves out the bfloat16 GEMM and the VNNI int8 one, avx512bf16 the AMX microkernel.
  const std::string_view forced = forced_isa();
  if (forced == "generic") return CpuBackend::Isa::Generic;
  if (forced == "avx2") return avx2 ? CpuBackend::Isa::Avx2 : CpuBackend::Isa::Generic;
  return avx512 ? CpuBackend::Isa::Avx512 : avx2 ? CpuBackend::Isa::Avx2 : CpuBackend::Isa::Generic;
}
}  // namespace

CpuBackend::CpuBackend()
    : isa_(pick_isa()),
      bf16_gemm_(isa_ == Isa::Avx512 && forced_isa() != "avx512" && cpu_has_avx512_bf16()),
      amx_bf16_(bf16_gemm_ && forced_isa() != "avx512bf16" && cpu_has_amx_bf16()),
      vnni_(isa_ == Isa::Avx512 && forced_isa() != "avx512" && cpu_has_avx512_vnni()) {}

const char* CpuBackend::isa() const {
  switch (isa_) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Generic: break;
  }
  return "generic";
}

#define UG_ISA_CALL(fn, ...) \
  (isa_ == Isa::Avx512 ? avx512::fn(__VA_ARGS__) : isa_ == Isa::Avx2 ? avx2::fn(__VA_ARGS__) : generic::fn(__VA_ARGS__))

void CpuBackend::copy(const Tensor& src, const Tensor& dst) { UG_ISA_CALL(copy, src, dst); }
void CpuBackend::matmul_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& out) {
  const auto* pa = static_cast<const uint8_t*>(a.raw_data());
  auto* po = static_cast<int32_t*>(out.raw_data());
  const auto za = static_cast<int32_t>(a_zero_point);
  if (b.dtype() == DType::Int32)  // pack_u8s8's form
    return gemm_u8s8_packed(pa, za, static_cast<const int32_t*>(b.raw_data()), po, a.size(0), out.size(1), a.size(1));
  gemm_u8s8(pa, za, static_cast<const int8_t*>(b.raw_data()), po, a.size(0), b.size(0), a.size(1), vnni_);
}
void CpuBackend::linear_u8s8(const Tensor& a, int64_t a_zero_point, const Tensor& b, const Tensor& scale,
                             const Tensor& bias, const Tensor& out) {
  const bool packed = b.dtype() == DType::Int32;  // pack_u8s8's form
  ug::cpu::linear_u8s8(static_cast<const uint8_t*>(a.raw_data()), static_cast<int32_t>(a_zero_point),
                       packed ? nullptr : static_cast<const int8_t*>(b.raw_data()),
                       packed ? static_cast<const int32_t*>(b.raw_data()) : nullptr,
                       static_cast<const float*>(scale.raw_data()),
                       bias.defined() ? static_cast<const float*>(bias.raw_data()) : nullptr,
                       static_cast<float*>(out.raw_data()), a.size(0), out.size(1), a.size(1), vnni_);
}
Tensor CpuBackend::pack_u8s8(const Tensor& b) {
  if (!vnni_) return {};
  const int64_t N = b.size(0), K = b.size(1);
  Tensor packed = empty({ug::cpu::packed_u8s8_words(N, K)}, {.dtype = DType::Int32, .device = b.device()});
  ug::cpu::pack_u8s8(static_cast<const int8_t*>(b.raw_data()), N, K, static_cast<int32_t*>(packed.raw_data()));
  return packed;
}
void CpuBackend::quantize_u8(const Tensor& x, float inv_scale, int64_t zero_point, const Tensor& out) {
  ug::cpu::quantize_u8(static_cast<const float*>(x.raw_data()), x.numel(), inv_scale, static_cast<int32_t>(zero_point),
                       static_cast<uint8_t*>(out.raw_data()), vnni_);
}
std::pair<double, double> CpuBackend::float_range(const Tensor& x) {
  return ug::cpu::float_range(static_cast<const float*>(x.raw_data()), x.numel(), vnni_);
}
Tensor contiguous(const Tensor& src, DType dtype) {
  if (src.dtype() == dtype && src.is_contiguous()) return src;
  Tensor out = empty(src.shape(), {.dtype = dtype, .device = src.device()});
  backend_for(src.device()).copy(src, out);
  return out;
}
void CpuBackend::fill(const Tensor& dst, const Scalar& value) { UG_ISA_CALL(fill, dst, value); }
void CpuBackend::unary(ops::UnaryOp op, const Tensor& x, const Tensor& out) { UG_ISA_CALL(unary, op, x, out); }
void CpuBackend::binary(ops::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  UG_ISA_CALL(binary, op, a, b, out);
}
void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  UG_ISA_CALL(where, cond, a, b, out);
}
void CpuBackend::reduce(ops::ReduceOp op, const Tensor& x, int64_t outer, int64_t reduced, int64_t inner,
                        const Tensor& out) {
  UG_ISA_CALL(reduce, op, x, outer, reduced, inner, out);
}
#undef UG_ISA_CALL

CpuBackend& cpu_backend() {
  static auto* backend = new CpuBackend();
  return *backend;
}

}  // namespace ug::cpu

namespace ug {

bool device_available(Device device) { return device.type == DeviceType::CPU && device.index == 0; }

namespace cuda {
bool is_available() { return device_count() > 0; }
int device_count() { return 0; }  // no CUDA backend in this build
}  // namespace cuda

Backend& backend_for(Device device) {
  if (device.type == DeviceType::CPU) {
    if (device.index != 0) fail<RuntimeError>("[device] cpu has only index 0, got ", device);
    return cpu::cpu_backend();
  }
  fail<RuntimeError>("[device] ", device, " is not available: this build of unigrad has the CPU backend only");
}

}  // namespace ug
