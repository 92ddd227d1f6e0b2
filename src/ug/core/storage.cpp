#include "ug/core/storage.h"

#include "ug/core/inference_mode.h"

namespace ug {

Storage::Storage(size_t nbytes, Device device)
    : data_(allocator_for(device).allocate(nbytes)),
      nbytes_(nbytes),
      device_(device),
      inference_(InferenceMode::is_enabled()) {}

Storage::Storage(void* data, size_t nbytes, Device device, void (*release)(void*), void* ctx)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      release_(release),
      ctx_(ctx),
      inference_(InferenceMode::is_enabled()) {}

Storage::~Storage() {
  if (release_) release_(ctx_);
  else allocator_for(device_).deallocate(data_, nbytes_);
}

}  // namespace ug
