// Counters for GET /metrics in Prometheus's text format: requests by status code, request
// latency and batch size histograms, the predictions in progress and the queue depth gauges.
// Lock-free: every request adds to atomics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace ug::serve {

class Metrics {
 public:
  void observe_request(int status, std::chrono::nanoseconds latency);
  void observe_batch(int64_t samples);

  /** Counts a POST /predict from its decoding to its answer, for the in-progress gauge. */
  class Prediction {
   public:
    explicit Prediction(Metrics& metrics) : metrics_(metrics) { metrics_.in_progress_.fetch_add(1); }
    ~Prediction() { metrics_.in_progress_.fetch_sub(1); }
    Prediction(const Prediction&) = delete;
    Prediction& operator=(const Prediction&) = delete;

   private:
    Metrics& metrics_;
  };

  std::string render(int64_t queue_depth) const;

 private:
  // Upper bounds of the latency buckets, in seconds, and of the batch size buckets.
  static constexpr std::array<double, 14> kLatencyBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
  static constexpr std::array<int64_t, 11> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

  std::array<std::atomic<uint64_t>, 600> requests_{};  // by status code
  std::array<std::atomic<uint64_t>, kLatencyBounds.size() + 1> latency_counts_{};
  std::atomic<uint64_t> latency_ns_sum_{0};
  std::array<std::atomic<uint64_t>, kBatchBounds.size() + 1> batch_counts_{};
  std::atomic<uint64_t> batch_sum_{0};
  std::atomic<int64_t> in_progress_{0};
};

}  // namespace ug::serve
