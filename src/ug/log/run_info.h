// When and where event files are written: the wall time events carry, and the host name in
// the names TensorBoard's writers give files and run directories.
#pragma once

#include <unistd.h>

#include <chrono>
#include <string>

namespace ug::logging {

/** Seconds since the Unix epoch, as Python's time.time(). */
inline double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/** Python's socket.gethostname(). */
inline std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace ug::logging
