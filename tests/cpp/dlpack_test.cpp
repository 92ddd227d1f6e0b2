#include "ug/io/dlpack.h"

#include <gtest/gtest.h>

#include "ug/ug.h"

namespace {

using ug::Tensor;

TEST(DLPack, ExportDescribesTheTensorsMemoryWithoutACopy) {
  Tensor a = ug::arange(12, {.dtype = ug::DType::Float32}).reshape({3, 4});
  Tensor view = a.t();  // strides (1, 4): DLPack carries them as they are
  DLManagedTensor* m = ug::to_dlpack(view);
  const DLTensor& t = m->dl_tensor;
  EXPECT_EQ(t.data, view.raw_data());
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(t.ndim, 2);
  EXPECT_EQ(t.shape[0], 4);
  EXPECT_EQ(t.shape[1], 3);
  EXPECT_EQ(t.strides[0], 1);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.dtype.code, kDLFloat);
  EXPECT_EQ(t.dtype.bits, 32);
  m->deleter(m);
}

TEST(DLPack, RoundTripSharesMemoryAndRunsTheDeleterOnce) {
  Tensor a = ug::arange(6, {.dtype = ug::DType::Int64});
  Tensor b = ug::from_dlpack(ug::to_dlpack(a));
  EXPECT_EQ(b.raw_data(), a.raw_data());
  EXPECT_EQ(b.dtype(), ug::DType::Int64);
  b.fill_(7);
  EXPECT_EQ(a.sum().item<int64_t>(), 42);
}

int deleted = 0;

TEST(DLPack, ImportWithoutStridesIsRowMajorAndFreesThroughTheDeleter) {
  static float values[7] = {-1, 1, 2, 3, 4, 5, 6};
  static int64_t shape[2] = {2, 3};
  auto* m = new DLManagedTensor{};
  m->dl_tensor = {values, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, nullptr, 4};  // byte_offset 4: from values[1]
  m->deleter = [](DLManagedTensor* self) {
    ++deleted;
    delete self;
  };
  {
    Tensor t = ug::from_dlpack(m);
    EXPECT_EQ(t.shape(), (ug::Dims{2, 3}));
    EXPECT_EQ(t.strides(), (ug::Dims{3, 1}));
    EXPECT_FLOAT_EQ(t.sum().item<float>(), 21.0F);
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, UnsupportedInputsAreErrorsAndLeaveOwnershipWithTheCaller) {
  static double values[4] = {};
  static int64_t shape[1] = {2};
  static int64_t negative[1] = {-1};
  DLManagedTensor m{};
  m.dl_tensor = {values, {kDLCUDA, 0}, 1, {kDLFloat, 64, 1}, shape, nullptr, 0};
  EXPECT_THROW(ug::from_dlpack(&m), ug::ValueError);
  m.dl_tensor.device = {kDLCPU, 0};
  m.dl_tensor.dtype = {kDLComplex, 32, 1};  // complex32: not a unigrad dtype
  EXPECT_THROW(ug::from_dlpack(&m), ug::TypeError);
  m.dl_tensor.dtype = {kDLFloat, 64, 1};
  m.dl_tensor.strides = negative;
  EXPECT_THROW(ug::from_dlpack(&m), ug::ValueError);
}

}  // namespace
