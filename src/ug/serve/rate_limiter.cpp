#include "ug/serve/rate_limiter.h"

#include <algorithm>

namespace ug::serve {

RateLimiter::RateLimiter(double rate, double burst, size_t max_clients)
    : rate_(rate), burst_(std::max(burst, 1.0)), max_clients_(std::max<size_t>(max_clients, 1)) {}

double RateLimiter::acquire(const std::string& client, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_clients_) make_room(now);
    it = buckets_.emplace(client, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  const double elapsed = std::chrono::duration<double>(now - b.updated).count();
  b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * rate_);
  b.updated = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return 0;
  }
  return (1 - b.tokens) / rate_;
}

size_t RateLimiter::clients() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

void RateLimiter::make_room(Clock::time_point now) {
  // A full bucket is what a new client gets anyway: forgetting it changes nothing.
  const double refill_s = burst_ / rate_;
  std::erase_if(buckets_, [&](const auto& entry) {
    return std::chrono::duration<double>(now - entry.second.updated).count() >= refill_s;
  });
  if (buckets_.size() < max_clients_) return;
  auto oldest = std::min_element(buckets_.begin(), buckets_.end(),
                                 [](const auto& a, const auto& b) { return a.second.updated < b.second.updated; });
  buckets_.erase(oldest);
}

}  // namespace ug::serve
