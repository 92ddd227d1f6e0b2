// Per-client token buckets: each client address may send `rate` requests per second on
// average and `burst` at once. The table of clients is bounded: when it is full, clients
// whose buckets have refilled (idle ones) are forgotten first, then the least recently seen.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ug::serve {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double rate, double burst, size_t max_clients = 65536);

  /** Takes a token from the client's bucket: 0 when the request may go, otherwise the
   *  seconds until a token is back (for Retry-After). */
  double acquire(const std::string& client, Clock::time_point now = Clock::now());

  size_t clients() const;

 private:
  struct Bucket {
    double tokens;
    Clock::time_point updated;
  };
  void make_room(Clock::time_point now);

  double rate_, burst_;
  size_t max_clients_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace ug::serve
