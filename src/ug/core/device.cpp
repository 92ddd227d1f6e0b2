#include "ug/core/device.h"

#include <cctype>
#include <charconv>

#include "ug/core/error.h"

namespace ug {

namespace {

/** The "kind:N" part of a device name: TensorFlow's "/CPU:0", "/device:GPU:1" and
 *  "/job:localhost/replica:0/task:0/device:CPU:0" name devices by their last part. */
std::string_view device_part(std::string_view spec) {
  if (spec.empty() || spec.front() != '/') return spec;
  const size_t at = spec.rfind("device:");
  return at != std::string_view::npos ? spec.substr(at + 7) : spec.substr(spec.rfind('/') + 1);
}

}  // namespace

Device::Device(std::string_view given) {
  const std::string_view spec = device_part(given);
  std::string name(spec.substr(0, spec.find(':')));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // TensorFlow's "CPU"
  if (name == "cpu") type = DeviceType::CPU;
  else if (name == "cuda" || name == "gpu") type = DeviceType::CUDA;
  else fail("[device] unknown device '", given, "' (expected 'cpu', 'cuda' or 'cuda:N', or TensorFlow's '/CPU:0')");
  index = 0;
  if (name.size() < spec.size()) {
    std::string_view num = spec.substr(name.size() + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    if (ec != std::errc() || ptr != num.data() + num.size() || index < 0)
      fail("[device] bad device index in '", given, "'");
  }
}

std::string Device::str() const {
  std::string s = type == DeviceType::CPU ? "cpu" : "cuda";
  if (type != DeviceType::CPU || index != 0) s.append(1, ':').append(std::to_string(index));
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ug
