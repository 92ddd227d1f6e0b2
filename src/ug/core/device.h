// Where a tensor's memory lives. Only the CPU backend exists today; asking for another
// device raises a clear error, and a new backend registers itself without op changes.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace ug {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  /** Parses "cpu", "cuda", "cuda:1" ("gpu" for "cuda") and TensorFlow's "/CPU:0",
   *  "/device:GPU:1"; throws ValueError for anything else. */
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}

  std::string str() const;
  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
};

std::ostream& operator<<(std::ostream& os, const Device& d);

/** True when tensors can be placed on `device` in this build. */
bool device_available(Device device);

namespace cuda {
/** Whether a CUDA device can be used (torch.cuda.is_available()). */
bool is_available();
int device_count();
}  // namespace cuda

}  // namespace ug
