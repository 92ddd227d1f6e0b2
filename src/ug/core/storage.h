// A block of device memory shared by a tensor and all its views. It also carries the
// version counter that in-place ops bump, shared by every view of the block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ug/core/allocator.h"
#include "ug/core/device.h"
#include "ug/core/ref.h"

namespace ug {

class Storage final : public RefCounted {
 public:
  /** Memory from the device's allocator. */
  Storage(size_t nbytes, Device device);
  /** Memory owned by someone else (a NumPy array): `release(ctx)` runs when the storage dies. */
  Storage(void* data, size_t nbytes, Device device, void (*release)(void*), void* ctx);
  ~Storage() override;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint32_t version() const { return version_; }
  void bump_version() { ++version_; }
  /** Made in inference mode (torch's inference tensors: ug::is_inference). */
  bool inference() const { return inference_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  void (*release_)(void*) = nullptr;
  void* ctx_ = nullptr;
  uint32_t version_ = 0;
  bool inference_;
};

}  // namespace ug
