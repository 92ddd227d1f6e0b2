// The settings of `ug serve`, with the defaults the command documents.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ug::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;              // 0: a free port picked by the kernel
  std::string token_file;       // empty: no authentication (loopback hosts only)
  double rate = 1000;           // requests per second per client address; 0 turns the limit off
  double burst = 0;             // bucket size; 0: the same as `rate` (at least 1)
  int64_t max_batch = 64;       // samples per forward
  int64_t batch_wait_us = 200;  // longest wait for more samples after the first
  int64_t max_body = 1 << 20;   // bytes
  int64_t max_queue = 1024;     // requests waiting for the model
  int64_t timeout_ms = 5000;    // reading a request, waiting for its answer, writing it
  int threads = 1;              // kernel threads (ug::set_num_threads)
  int workers = 1;              // threads running forwards
  int http_threads = 128;       // connections served at once (one per thread, keep-alive)
  bool access_log = true;
};

/** Raises ValueError for settings out of range, and for a host other than a loopback one
 *  without a token file: the server must not be open to the network unauthenticated. */
void validate(const ServeOptions& options);

/** Whether `host` only accepts connections from this machine: 127.0.0.0/8, ::1 or "localhost". */
bool is_loopback(std::string_view host);

}  // namespace ug::serve
