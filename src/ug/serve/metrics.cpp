#include "ug/serve/metrics.h"

#include <algorithm>
#include <cstdio>

namespace ug::serve {

namespace {

/** "name_bucket{le=...} count" lines (cumulative), then _sum and _count. */
template <class Bounds, class Counts>
void write_histogram(std::string& out, const char* name, const Bounds& bounds, const Counts& counts, double sum) {
  char line[160];
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    total += counts[i].load(std::memory_order_relaxed);
    if (i < bounds.size())
      std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name, static_cast<double>(bounds[i]),
                    static_cast<unsigned long long>(total));
    else
      std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n", name, static_cast<unsigned long long>(total));
    out += line;
  }
  std::snprintf(line, sizeof line, "%s_sum %.9g\n%s_count %llu\n", name, sum, name,
                static_cast<unsigned long long>(total));
  out += line;
}

}  // namespace

void Metrics::observe_request(int status, std::chrono::nanoseconds latency) {
  requests_[static_cast<size_t>(std::clamp(status, 0, static_cast<int>(requests_.size()) - 1))].fetch_add(
      1, std::memory_order_relaxed);
  const double seconds = std::chrono::duration<double>(latency).count();
  const size_t bucket =
      std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) - kLatencyBounds.begin();
  latency_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_ns_sum_.fetch_add(static_cast<uint64_t>(latency.count()), std::memory_order_relaxed);
}

void Metrics::observe_batch(int64_t samples) {
  const size_t bucket = std::lower_bound(kBatchBounds.begin(), kBatchBounds.end(), samples) - kBatchBounds.begin();
  batch_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  batch_sum_.fetch_add(static_cast<uint64_t>(samples), std::memory_order_relaxed);
}

std::string Metrics::render(int64_t queue_depth) const {
  std::string out;
  char line[160];
  out +=
      "# HELP ug_requests_total HTTP requests answered, by status code.\n"
      "# TYPE ug_requests_total counter\n";
  for (size_t code = 0; code < requests_.size(); ++code)
    if (const uint64_t n = requests_[code].load(std::memory_order_relaxed)) {
      std::snprintf(line, sizeof line, "ug_requests_total{code=\"%zu\"} %llu\n", code,
                    static_cast<unsigned long long>(n));
      out += line;
    }
  out +=
      "# HELP ug_request_duration_seconds Time from a request's headers to its answer.\n"
      "# TYPE ug_request_duration_seconds histogram\n";
  write_histogram(out, "ug_request_duration_seconds", kLatencyBounds, latency_counts_,
                  static_cast<double>(latency_ns_sum_.load(std::memory_order_relaxed)) * 1e-9);
  out +=
      "# HELP ug_batch_size Samples per forward pass.\n"
      "# TYPE ug_batch_size histogram\n";
  write_histogram(out, "ug_batch_size", kBatchBounds, batch_counts_,
                  static_cast<double>(batch_sum_.load(std::memory_order_relaxed)));
  std::snprintf(line, sizeof line,
                "# HELP ug_predictions_in_progress POST /predict requests read and not yet answered.\n"
                "# TYPE ug_predictions_in_progress gauge\n"
                "ug_predictions_in_progress %lld\n",
                static_cast<long long>(in_progress_.load()));
  out += line;
  std::snprintf(line, sizeof line,
                "# HELP ug_queue_depth Requests waiting for the model.\n"
                "# TYPE ug_queue_depth gauge\n"
                "ug_queue_depth %lld\n",
                static_cast<long long>(queue_depth));
  out += line;
  return out;
}

}  // namespace ug::serve
