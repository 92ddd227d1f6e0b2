// The user-facing profiler (torch.profiler): a Profile collects the op calls of a region
// (graph/profiler.h), key_averages() sums them per op, table() prints them like torch's
// table and export_chrome_trace() writes the Chrome trace-event JSON Perfetto opens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ug/graph/profiler.h"

namespace ug::profiler {

using Options = graph::profiling::Options;
using Event = graph::profiling::OpEvent;

/** One row of key_averages(): the calls of one op (and input shapes, when grouped by them). */
struct EventAverage {
  std::string key;
  int64_t count = 0;
  int64_t cpu_time_total_ns = 0;       // the calls' whole durations
  int64_t self_cpu_time_total_ns = 0;  // minus the time spent in the ops they called
  int64_t cpu_memory_usage = 0;        // net bytes allocated during the calls (profile_memory)
  int64_t self_cpu_memory_usage = 0;   // minus those of the ops they called
  std::vector<Shape> input_shapes;     // group_by_input_shape
  double cpu_time_avg_ns() const { return count ? static_cast<double>(cpu_time_total_ns) / count : 0.0; }
};

struct TableOptions {
  std::string sort_by = "self_cpu_time_total";  // or cpu_time_total, count, cpu_memory_usage, self_cpu_memory_usage
  int64_t row_limit = 100;                      // -1: all rows
};

class KeyAverages : public std::vector<EventAverage> {
 public:
  /** torch's table: one row per key, sorted descending by `sort_by`, and the total self time. */
  std::string table(const TableOptions& options = {}) const;
  /** torch's total_average(): the rows summed into one, keyed "Total". */
  EventAverage total_average() const;
  bool shapes = false;  // rows keyed by input shapes too: the table shows them
  bool memory = false;  // the profile recorded memory: the table shows it
  int64_t self_cpu_time_total_ns = 0;
};

/** Self time and memory of each event: its own minus those of the events nested in it. */
struct SelfCosts {
  std::vector<int64_t> time_ns, bytes;
};
SelfCosts self_costs(const std::vector<Event>& events);

/** Profiles from construction until stop() or destruction; profiles do not nest. */
class Profile {
 public:
  explicit Profile(const Options& options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  void stop();
  const std::vector<Event>& events() const { return events_; }
  KeyAverages key_averages(bool group_by_input_shape = false) const;
  /** The Chrome trace-event JSON ("traceEvents", complete events in microseconds). */
  std::string chrome_trace() const;
  void export_chrome_trace(const std::string& path) const;

 private:
  Options options_;
  bool running_ = true;
  std::vector<Event> events_;
};

/** A user range (torch.profiler.record_function): an event named `name` while it lives. */
class RecordFunction {
 public:
  explicit RecordFunction(const std::string& name);
  ~RecordFunction();
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  graph::profiling::Span* span_ = nullptr;
};

}  // namespace ug::profiler
