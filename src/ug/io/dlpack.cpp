#include "ug/io/dlpack.h"

#include <vector>

#include "ug/core/error.h"

namespace ug {
namespace {

// DLPack 0.8 added the bool code; Debian's 0.6 header predates it, the value is the ABI's.
constexpr uint8_t kDLBoolCode = 6;

DLDataType dl_dtype(DType d) {
  const auto bits = static_cast<uint8_t>(8 * itemsize(d));
  switch (d) {
    case DType::Float16:
    case DType::Float32:
    case DType::Float64: return {kDLFloat, bits, 1};
    case DType::BFloat16: return {kDLBfloat, bits, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: return {kDLInt, bits, 1};
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64: return {kDLUInt, bits, 1};
    case DType::Bool: return {kDLBoolCode, 8, 1};
  }
  fail("[to_dlpack] unknown dtype");
}

std::optional<DType> ug_dtype(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 64) return DType::Int64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::UInt8;
      if (t.bits == 16) return DType::UInt16;
      if (t.bits == 32) return DType::UInt32;
      if (t.bits == 64) return DType::UInt64;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return DType::Bool;
      break;
    default: break;
  }
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
                    " bits, ", t.dtype.lanes, " lanes); supported: float16/32/64, bfloat16, int8-64, uint8-64, bool",
                    t.dtype.code == kDLComplex ? " (unigrad has no complex dtypes)" : "");
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
