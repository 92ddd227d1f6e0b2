#include "ug/core/device.h"

#include <charconv>

#include "ug/core/error.h"

namespace ug {

Device::Device(std::string_view spec) {
  std::string_view name = spec.substr(0, spec.find(':'));
  if (name == "cpu") type = DeviceType::CPU;
  else if (name == "cuda" || name == "gpu") type = DeviceType::CUDA;
  else fail("[device] unknown device '", spec, "' (expected 'cpu', 'cuda' or 'cuda:N')");
  index = 0;
  if (name.size() < spec.size()) {
    std::string_view num = spec.substr(name.size() + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    if (ec != std::errc() || ptr != num.data() + num.size() || index < 0)
      fail("[device] bad device index in '", spec, "'");
  }
}

std::string Device::str() const {
  std::string s = type == DeviceType::CPU ? "cpu" : "cuda";
  if (type != DeviceType::CPU || index != 0) s.append(1, ':').append(std::to_string(index));
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ug
