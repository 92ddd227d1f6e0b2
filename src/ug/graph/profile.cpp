#include "ug/graph/profile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "ug/core/error.h"
#include "ug/graph/profiling.h"

namespace ug::profiler {

namespace {

/** Indices of the events in the order they began on each thread, outer spans first. */
std::vector<size_t> by_start(const std::vector<Event>& events) {
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::ranges::sort(order, [&](size_t a, size_t b) {
    const Event &x = events[a], &y = events[b];
    return std::tie(x.thread, x.start_ns, x.depth) < std::tie(y.thread, y.start_ns, y.depth);
  });
  return order;
}

std::string shapes_text(const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    os << (i ? ", " : "") << "[";
    if (shapes[i].size() != 1 || shapes[i][0] != -1)  // an absent input reads [] as in torch
      for (size_t d = 0; d < shapes[i].size(); ++d) os << (d ? ", " : "") << shapes[i][d];
    os << "]";
  }
  os << "]";
  return os.str();
}

/** torch's format_time: microseconds, milliseconds or seconds with three decimals. */
std::string time_text(double ns) {
  char buf[32];
  const double us = ns / 1e3;
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3) std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

/** torch's format_memory: B, KB, MB or GB (of 1024), keeping the sign. */
std::string memory_text(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes), a = std::abs(b);
  if (a >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GB", b / (1024.0 * 1024 * 1024));
  else if (a >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MB", b / (1024.0 * 1024));
  else if (a >= 1024.0) std::snprintf(buf, sizeof buf, "%.2f KB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

std::string percent_text(int64_t part, int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%",
                whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

int64_t sort_value(const EventAverage& e, const std::string& sort_by) {
  if (sort_by == "self_cpu_time_total") return e.self_cpu_time_total_ns;
  if (sort_by == "cpu_time_total") return e.cpu_time_total_ns;
  if (sort_by == "cpu_time") return static_cast<int64_t>(e.cpu_time_avg_ns());
  if (sort_by == "count") return e.count;
  if (sort_by == "cpu_memory_usage") return e.cpu_memory_usage;
  if (sort_by == "self_cpu_memory_usage") return e.self_cpu_memory_usage;
  fail<ValueError>(
      "[profiler.table] sort_by must be self_cpu_time_total, cpu_time_total, cpu_time, count, "
      "cpu_memory_usage or self_cpu_memory_usage, got '",
      sort_by, "'");
}

}  // namespace

SelfCosts self_costs(const std::vector<Event>& events) {
  SelfCosts self;
  for (const Event& e : events) {
    self.time_ns.push_back(e.end_ns - e.start_ns);
    self.bytes.push_back(e.bytes);
  }
  constexpr size_t none = ~size_t{0};
  std::vector<size_t> open;  // open[d]: the event at depth d enclosing the current one (none: began earlier)
  uint64_t thread = ~uint64_t{0};
  for (size_t i : by_start(events)) {
    const Event& e = events[i];
    if (e.thread != thread) open.clear(), thread = e.thread;
    const auto depth = static_cast<size_t>(e.depth);
    open.resize(depth, none);
    if (depth > 0 && open[depth - 1] != none) {
      self.time_ns[open[depth - 1]] -= e.end_ns - e.start_ns;
      self.bytes[open[depth - 1]] -= e.bytes;
    }
    open.push_back(i);
  }
  return self;
}

EventAverage KeyAverages::total_average() const {
  EventAverage total{.key = "Total"};
  for (const EventAverage& e : *this) {
    total.count += e.count;
    total.cpu_time_total_ns += e.cpu_time_total_ns;
    total.self_cpu_time_total_ns += e.self_cpu_time_total_ns;
    total.cpu_memory_usage += e.cpu_memory_usage;
    total.self_cpu_memory_usage += e.self_cpu_memory_usage;
  }
  return total;
}

std::string KeyAverages::table(const TableOptions& options) const {
  std::vector<const EventAverage*> rows;
  for (const EventAverage& e : *this) rows.push_back(&e);
  for (const EventAverage& e : *this) sort_value(e, options.sort_by);  // names a bad sort_by even when empty
  std::ranges::stable_sort(rows, [&](const EventAverage* a, const EventAverage* b) {
    return sort_value(*a, options.sort_by) > sort_value(*b, options.sort_by);
  });
  if (options.row_limit >= 0 && rows.size() > static_cast<size_t>(options.row_limit))
    rows.resize(static_cast<size_t>(options.row_limit));

  size_t name_width = 4, shapes_width = 12;
  for (const EventAverage* e : rows) {
    name_width = std::max(name_width, std::min<size_t>(e->key.size(), 55));
    if (shapes) shapes_width = std::max(shapes_width, std::min<size_t>(shapes_text(e->input_shapes).size(), 80));
  }
  std::vector<std::string> headers = {"Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (memory) headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
  headers.push_back("# of Calls");

  std::ostringstream os;
  auto cell = [&](const std::string& text, size_t width) {
    os << std::string(width > text.size() ? width - text.size() : 0, ' ') << text << "  ";
  };
  auto rule = [&] {
    os << std::string(name_width, '-') << "  ";
    for (size_t i = 0; i < headers.size(); ++i) os << std::string(12, '-') << "  ";
    if (shapes) os << std::string(shapes_width, '-') << "  ";
    os << "\n";
  };
  rule();
  cell("Name", name_width);
  for (const std::string& h : headers) cell(h, 12);
  if (shapes) cell("Input Shapes", shapes_width);
  os << "\n";
  rule();
  for (const EventAverage* e : rows) {
    cell(e->key.size() > name_width ? e->key.substr(0, name_width - 3) + "..." : e->key, name_width);
    cell(percent_text(e->self_cpu_time_total_ns, self_cpu_time_total_ns), 12);
    cell(time_text(static_cast<double>(e->self_cpu_time_total_ns)), 12);
    cell(percent_text(e->cpu_time_total_ns, self_cpu_time_total_ns), 12);
    cell(time_text(static_cast<double>(e->cpu_time_total_ns)), 12);
    cell(time_text(e->cpu_time_avg_ns()), 12);
    if (memory) {
      cell(memory_text(e->cpu_memory_usage), 12);
      cell(memory_text(e->self_cpu_memory_usage), 12);
    }
    cell(std::to_string(e->count), 12);
    if (shapes) cell(shapes_text(e->input_shapes), shapes_width);
    os << "\n";
  }
  rule();
  os << "Self CPU time total: " << time_text(static_cast<double>(self_cpu_time_total_ns)) << "\n";
  return os.str();
}

Profile::Profile(const Options& options) : options_(options) { graph::profiling::start(options); }

Profile::~Profile() {
  if (running_) graph::profiling::stop();
}

void Profile::stop() {
  if (!running_) fail<RuntimeError>("[profiler] stop(): the profile has already stopped");
  running_ = false;
  events_ = graph::profiling::stop();
}

KeyAverages Profile::key_averages(bool group_by_input_shape) const {
  if (running_) fail<RuntimeError>("[profiler] key_averages(): stop the profile first");
  if (group_by_input_shape && !options_.record_shapes)
    fail<ValueError>("[profiler] key_averages(group_by_input_shape=True) needs a profile with record_shapes=True");
  const SelfCosts self = self_costs(events_);
  KeyAverages rows;
  rows.shapes = group_by_input_shape;
  rows.memory = options_.profile_memory;
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    const std::string key = group_by_input_shape ? e.name + "\n" + shapes_text(e.input_shapes) : e.name;
    auto [it, added] = row_of.try_emplace(key, rows.size());
    if (added) {
      rows.emplace_back().key = e.name;
      if (group_by_input_shape) rows.back().input_shapes = e.input_shapes;
    }
    EventAverage& row = rows[it->second];
    row.count += 1;
    row.cpu_time_total_ns += e.end_ns - e.start_ns;
    row.self_cpu_time_total_ns += self.time_ns[i];
    row.cpu_memory_usage += e.bytes;
    row.self_cpu_memory_usage += self.bytes[i];
    rows.self_cpu_time_total_ns += self.time_ns[i];
  }
  return rows;
}

std::string Profile::chrome_trace() const {
  if (running_) fail<RuntimeError>("[profiler] export_chrome_trace(): stop the profile first");
  nlohmann::json trace_events = nlohmann::json::array();
  const int pid = static_cast<int>(getpid());
  for (size_t i : by_start(events_)) {
    const Event& e = events_[i];
    nlohmann::json args = nlohmann::json::object();
    if (options_.record_shapes) {
      nlohmann::json dims = nlohmann::json::array(), types = nlohmann::json::array();
      for (size_t k = 0; k < e.input_shapes.size(); ++k) {
        const Shape& s = e.input_shapes[k];
        const bool absent = s.size() == 1 && s[0] == -1;
        dims.push_back(absent ? std::vector<int64_t>{} : std::vector<int64_t>(s.begin(), s.end()));
        types.push_back(absent ? std::string() : std::string(dtype_name(e.input_dtypes[k])));
      }
      args["Input Dims"] = dims;
      args["Input type"] = types;
    }
    if (options_.profile_memory) args["Bytes"] = e.bytes;
    if (options_.with_stack) args["Call stack"] = e.stack;
    trace_events.push_back({{"ph", "X"},
                            {"cat", e.user_range ? "user_annotation" : "cpu_op"},
                            {"name", e.name},
                            {"pid", pid},
                            {"tid", e.thread},
                            {"ts", static_cast<double>(e.start_ns) / 1e3},
                            {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1e3},
                            {"args", args}});
  }
  return nlohmann::json{{"displayTimeUnit", "ms"}, {"traceEvents", trace_events}}.dump();
}

void Profile::export_chrome_trace(const std::string& path) const {
  const std::string text = chrome_trace();
  std::ofstream file(path, std::ios::binary);
  if (!file) fail<FileNotFoundError>("[profiler] export_chrome_trace: cannot write '", path, "'");
  file << text;
  if (!file.flush()) fail<RuntimeError>("[profiler] export_chrome_trace: writing '", path, "' failed");
}

RecordFunction::RecordFunction(const std::string& name) {
  if (graph::profiling::enabled()) span_ = graph::profiling::begin_range(name);
}

RecordFunction::~RecordFunction() {
  if (span_) graph::profiling::end(span_);
}

}  // namespace ug::profiler
