#include "ug/io/dlpack.h"

#include <vector>

#include "ug/core/error.h"

namespace ug {
namespace {

// DLPack 0.8 added the bool code; Debian's 0.6 header predates it, the value is the ABI's.
constexpr uint8_t kDLBoolCode = 6;

/** Each dtype's DLPack (code, bits), read both ways. */
struct DTypeCode {
  DType dtype;
  uint8_t code, bits;
};
constexpr DTypeCode kCodes[] = {
    {DType::Float16, kDLFloat, 16},   {DType::Float32, kDLFloat, 32},     {DType::Float64, kDLFloat, 64},
    {DType::BFloat16, kDLBfloat, 16}, {DType::Int8, kDLInt, 8},           {DType::Int16, kDLInt, 16},
    {DType::Int32, kDLInt, 32},       {DType::Int64, kDLInt, 64},         {DType::UInt8, kDLUInt, 8},
    {DType::UInt16, kDLUInt, 16},     {DType::UInt32, kDLUInt, 32},       {DType::UInt64, kDLUInt, 64},
    {DType::Bool, kDLBoolCode, 8},    {DType::Complex64, kDLComplex, 64}, {DType::Complex128, kDLComplex, 128},
};

DLDataType dl_dtype(DType d) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == d) return {c.code, c.bits, 1};
  fail("[to_dlpack] unknown dtype ", d);
}

std::optional<DType> ug_dtype(DLDataType t) {
  for (const DTypeCode& c : kCodes)
    if (t.lanes == 1 && t.code == c.code && t.bits == c.bits) return c.dtype;
  return std::nullopt;
}

/** What an exported DLManagedTensor owns: a reference to the tensor and the arrays it points to. */
struct Exported {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  if (t.device().type != DeviceType::CPU)
    fail("[to_dlpack] only CPU tensors can be exported, got a tensor on ", t.device());
  auto* e = new Exported{t, {t.shape().begin(), t.shape().end()}, {t.strides().begin(), t.strides().end()}};
  e->managed.dl_tensor = {.data = t.raw_data(),
                          .device = {kDLCPU, 0},
                          .ndim = static_cast<int32_t>(t.dim()),
                          .dtype = dl_dtype(t.dtype()),
                          .shape = e->shape.data(),
                          .strides = e->strides.data(),
                          .byte_offset = 0};
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); };
  return &e->managed;
}

Tensor from_dlpack(DLManagedTensor* src) {
  if (src == nullptr) fail("[from_dlpack] got a null DLManagedTensor");
  const DLTensor& t = src->dl_tensor;
  // Pinned host memory (kDLCUDAHost) is ordinary CPU-addressable memory.
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost)
    fail("[from_dlpack] only CPU memory can be shared, got memory on DLPack device type ", int(t.device.device_type),
         t.device.device_type == kDLCUDA ? " (CUDA)" : "", "; copy it to the CPU first");
  const std::optional<DType> dtype = ug_dtype(t.dtype);
  if (!dtype)
    fail<TypeError>("[from_dlpack] unsupported DLPack dtype (code ", int(t.dtype.code), ", ", int(t.dtype.bits),
                    " bits, ", t.dtype.lanes, " lanes); supported: float16/32/64, bfloat16, int8-64, uint8-64, bool, ",
                    "complex64/128");
  if (t.ndim < 0) fail("[from_dlpack] negative ndim ", t.ndim);
  Dims shape(t.shape, t.shape + t.ndim), strides(t.ndim);
  int64_t compact = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (shape[d] < 0) fail("[from_dlpack] negative size ", shape[d], " in dim ", d);
    strides[d] = t.strides != nullptr ? t.strides[d] : compact;  // no strides: compact row-major
    if (strides[d] < 0) {
      if (shape[d] > 1)
        fail("[from_dlpack] negative strides are not supported (dim ", d, " has stride ", strides[d],
             "); make the array contiguous first");
      strides[d] = compact;  // a dim of size 0 or 1 is never stepped along
    }
    compact *= shape[d];
  }
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  auto release = [](void* ctx) {
    auto* m = static_cast<DLManagedTensor*>(ctx);
    if (m->deleter != nullptr) m->deleter(m);
  };
  return from_blob(data, shape, strides, *dtype, release, src);
}

}  // namespace ug
