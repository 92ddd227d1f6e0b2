// The profiler from C++ (graph/profile.h): the events are the op calls made, nesting gives
// consistent self times, shapes and bytes are recorded, the Chrome trace parses as the
// trace-event format, user ranges appear, nothing is recorded when off, profiles do not nest.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ug/ug.h"

namespace {

using ug::Tensor;
namespace prof = ug::profiler;

std::vector<std::string> top_level_names(const std::vector<prof::Event>& events) {
  std::vector<const prof::Event*> top;
  for (const prof::Event& e : events)
    if (e.depth == 0) top.push_back(&e);
  std::ranges::sort(top, [](const prof::Event* a, const prof::Event* b) { return a->start_ns < b->start_ns; });
  std::vector<std::string> names;
  for (const prof::Event* e : top) names.push_back(e->name);
  return names;
}

TEST(Profiler, EventsAreTheOpsCalledInOrder) {
  Tensor x = ug::randn({4, 3}), w = ug::randn({5, 3}), b = ug::randn({5});
  prof::Profile p;
  Tensor y = ug::linear(x, w, b).relu().sum();
  p.stop();
  EXPECT_EQ(top_level_names(p.events()), (std::vector<std::string>{"linear", "relu", "sum"}));
  std::map<std::string, int64_t> count;
  for (const prof::EventAverage& row : p.key_averages()) count[row.key] = row.count;
  EXPECT_EQ(count["linear"], 1);
  EXPECT_EQ(count["relu"], 1);
}

TEST(Profiler, SelfTimesAddUpToTheRoots) {
  Tensor x = ug::randn({8, 6}).requires_grad_(), w = ug::randn({4, 6}).requires_grad_();
  prof::Profile p;
  {
    prof::RecordFunction range("step");
    ug::linear(x, w).tanh().sum().backward();
  }
  p.stop();
  const prof::SelfCosts self = prof::self_costs(p.events());
  int64_t self_sum = 0, roots = 0;
  for (size_t i = 0; i < p.events().size(); ++i) {
    const prof::Event& e = p.events()[i];
    EXPECT_GE(self.time_ns[i], 0) << e.name;
    EXPECT_LE(self.time_ns[i], e.end_ns - e.start_ns) << e.name;
    self_sum += self.time_ns[i];
    if (e.depth == 0) roots += e.end_ns - e.start_ns;
  }
  EXPECT_EQ(self_sum, roots);  // integer nanoseconds: exact
  prof::KeyAverages rows = p.key_averages();
  EXPECT_EQ(rows.self_cpu_time_total_ns, roots);
  const auto step = std::ranges::find(rows, std::string("step"), &prof::EventAverage::key);
  ASSERT_NE(step, rows.end());
  EXPECT_EQ(step->cpu_time_total_ns, roots);  // the range encloses every op of the step
}

TEST(Profiler, RecordsShapesDtypesAndBytes) {
  Tensor a = ug::randn({3, 4}), big = ug::randn({256, 128});
  prof::Profile p({.record_shapes = true, .profile_memory = true});
  Tensor c = ug::matmul(a, a.t());
  Tensor e = big.exp();  // its result, 128 KiB of float32, outlives the call
  p.stop();
  std::vector<const prof::Event*> top;
  for (const prof::Event& ev : p.events())
    if (ev.depth == 0) top.push_back(&ev);
  const auto mm = std::ranges::find(top, std::string("matmul"), &prof::Event::name);
  const auto exp = std::ranges::find(top, std::string("exp"), &prof::Event::name);
  ASSERT_NE(mm, top.end());
  ASSERT_NE(exp, top.end());
  ASSERT_EQ((*mm)->input_shapes.size(), 2u);
  EXPECT_EQ((*mm)->input_shapes[0], ug::Shape({3, 4}));
  EXPECT_EQ((*mm)->input_shapes[1], ug::Shape({4, 3}));
  EXPECT_EQ((*mm)->input_dtypes[0], ug::DType::Float32);
  EXPECT_EQ((*exp)->bytes, 256 * 128 * 4);
  std::string table = p.key_averages(true).table({.sort_by = "self_cpu_memory_usage"});
  EXPECT_NE(table.find("Input Shapes"), std::string::npos);
  EXPECT_NE(table.find("[[3, 4], [4, 3]]"), std::string::npos);
  EXPECT_NE(table.find("Self CPU Mem"), std::string::npos);
  EXPECT_NE(table.find("128.00 KB"), std::string::npos);
}

TEST(Profiler, ChromeTraceIsTraceEventJson) {
  Tensor x = ug::randn({6, 6}).requires_grad_();
  prof::Profile p({.record_shapes = true});
  {
    prof::RecordFunction range("forward");
    (x * x).exp().sum().backward();
  }
  p.stop();
  const nlohmann::json trace = nlohmann::json::parse(p.chrome_trace());
  ASSERT_TRUE(trace.at("traceEvents").is_array());
  EXPECT_EQ(trace.at("traceEvents").size(), p.events().size());
  std::map<int64_t, double> last_ts;
  bool saw_range = false;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_TRUE(e.at("name").is_string());
    EXPECT_TRUE(e.at("pid").is_number_integer());
    EXPECT_TRUE(e.at("tid").is_number_integer());
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    const double ts = e.at("ts").get<double>();
    const int64_t tid = e.at("tid").get<int64_t>();
    if (last_ts.contains(tid)) EXPECT_GE(ts, last_ts[tid]);
    last_ts[tid] = ts;
    EXPECT_TRUE(e.at("args").at("Input Dims").is_array());
    saw_range |= e.at("name") == "forward" && e.at("cat") == "user_annotation";
  }
  EXPECT_TRUE(saw_range);
}

TEST(Profiler, OffRecordsNothingAndProfilesDoNotNest) {
  Tensor x = ug::randn({3});
  prof::Profile p;
  (void)x.exp();
  EXPECT_THROW(prof::Profile inner, ug::RuntimeError);
  p.stop();
  const size_t recorded = p.events().size();
  EXPECT_EQ(recorded, 1u);
  {
    prof::RecordFunction range("after the profile");
    (void)x.exp();
  }
  prof::Profile q;  // a new profile starts empty: nothing was kept while none ran
  q.stop();
  EXPECT_TRUE(q.events().empty());
  EXPECT_EQ(p.events().size(), recorded);
  EXPECT_THROW(p.stop(), ug::RuntimeError);
  EXPECT_THROW((void)p.key_averages().table({.sort_by = "nonsense"}), ug::ValueError);
}

}  // namespace
