// ug::logging: CRC-32C and TFRecord framing, the event file writer's queue, histogram bins,
// axis ticks and SVG charts. The Python tests read the event files back with TensorBoard.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"
#include "ug/log/axis_ticks.h"
#include "ug/log/crc32c.h"
#include "ug/log/event_file_writer.h"
#include "ug/log/histogram.h"
#include "ug/log/record_writer.h"
#include "ug/log/summary_writer.h"

namespace ug::logging {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ug_logging_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t u32_at(const std::string& s, size_t pos) {
  uint32_t v;
  std::memcpy(&v, s.data() + pos, 4);
  return v;
}

/** The payloads of a TFRecord file, checking both CRCs of every record. */
std::vector<std::string> read_records(const std::string& data) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < data.size()) {
    uint64_t n;
    std::memcpy(&n, data.data() + pos, 8);
    EXPECT_EQ(u32_at(data, pos + 8), masked_crc32c(data.substr(pos, 8)));
    std::string payload = data.substr(pos + 12, n);
    EXPECT_EQ(u32_at(data, pos + 12 + n), masked_crc32c(payload));
    out.push_back(payload);
    pos += 16 + n;
  }
  EXPECT_EQ(pos, data.size());
  return out;
}

TEST(Crc32c, MatchesTheCastagnoliCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);  // RFC 3720 B.4
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62a8ab43u);
  uint32_t c = crc32c("123456789");
  EXPECT_EQ(masked_crc32c("123456789"), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TfRecord, FramesLengthDataAndTheirCrcs) {
  std::string record = tfrecord("hello");
  ASSERT_EQ(record.size(), 5u + 16u);
  EXPECT_EQ(record.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(record.substr(12, 5), "hello");
  EXPECT_EQ(read_records(record), std::vector<std::string>{"hello"});
}

TEST(EventFileWriter, QueuesEventsUntilFlushAndWritesThemInOrder) {
  fs::path dir = fresh_dir("queue") / "run";
  EventFileWriter w(dir.string(), 100, 1000, ".test");
  ASSERT_TRUE(fs::exists(w.path()));
  EXPECT_EQ(fs::path(w.path()).parent_path(), dir);
  EXPECT_TRUE(fs::path(w.path()).filename().string().starts_with("events.out.tfevents."));
  EXPECT_TRUE(w.path().ends_with(".test"));
  EXPECT_EQ(read_records(read_file(w.path())).size(), 1u);  // the file_version event
  for (int i = 0; i < 5; ++i) w.add_event("event " + std::to_string(i));
  EXPECT_EQ(read_records(read_file(w.path())).size(), 1u);
  w.flush();
  std::vector<std::string> records = read_records(read_file(w.path()));
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[5], "event 4");
  w.add_event("last");
  w.close();
  w.close();
  EXPECT_EQ(read_records(read_file(w.path())).back(), "last");
  EXPECT_THROW(w.add_event("late"), RuntimeError);
}

TEST(EventFileWriter, RejectsBadSettings) {
  std::string dir = fresh_dir("settings").string();
  EXPECT_THROW(EventFileWriter(dir, 0, 10), ValueError);
  EXPECT_THROW(EventFileWriter(dir, 10, 0), ValueError);
  EXPECT_THROW(EventFileWriter(dir, 10, std::nan("")), ValueError);
}

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().starts_with("events.out.tfevents.")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SummaryWriter, WritesScalarsTextHistogramsAndOneRunPerAddScalarsTag) {
  fs::path dir = fresh_dir("summary");
  {
    SummaryWriter w(dir.string(), {.purge_step = 3, .flush_secs = 1000});
    EXPECT_EQ(w.log_dir(), dir.string());
    w.add_scalar("loss", 0.5, 1);
    w.add_text("notes", "hello", 1);
    w.add_histogram("w", arange(10.0), 1, int64_t{5});
    w.add_scalars("m/all", {{"train", 1.0}, {"val", 2.0}}, 1, 123.0);
    w.flush();
    std::vector<fs::path> files = event_files(dir);
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[0].parent_path(), dir);
    EXPECT_EQ(files[1].parent_path(), dir / "m_all_train");
    EXPECT_EQ(files[2].parent_path(), dir / "m_all_val");
    EXPECT_EQ(read_records(read_file(files[0])).size(), 1u + 2u + 3u);  // version, purge pair, three summaries
    EXPECT_EQ(read_records(read_file(files[1])).size(), 2u);
    EXPECT_THROW(w.add_histogram("w", zeros({0})), ValueError);
  }
  EXPECT_THROW(SummaryWriter(dir.string(), {.max_queue = 0}), ValueError);
}

TEST(Histogram, CountsEqualWidthBinsLikeNumpy) {
  std::vector<double> v = {0, 1, 1, 2, 3, 4};
  Histogram h = make_histogram(v, int64_t{4});
  EXPECT_EQ(h.bucket_limit, (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(h.bucket, (std::vector<double>{0, 1, 2, 1, 2}));  // a leading empty bucket; the last bin is closed
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 4);
  EXPECT_EQ(h.num, 6);
  EXPECT_EQ(h.sum, 11);
  EXPECT_EQ(h.sum_squares, 31);
}

TEST(Histogram, TrimsToTheNonEmptyBucketsOfTheDefaultEdges) {
  const std::vector<double>& edges = tensorflow_bins();
  EXPECT_EQ(edges.size() % 2, 1u);
  EXPECT_EQ(edges[edges.size() / 2], 0.0);
  EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end()));
  std::vector<double> v = {1.0, 1.05, 2.0};
  Histogram h = make_histogram(v);
  EXPECT_EQ(h.bucket.front(), 0);
  EXPECT_NE(h.bucket.back(), 0);
  EXPECT_EQ(h.bucket.size(), h.bucket_limit.size());
  EXPECT_LE(h.bucket_limit.front(), 1.0);
  EXPECT_GT(h.bucket_limit.back(), 2.0);
  double total = 0;
  for (double c : h.bucket) total += c;
  EXPECT_EQ(total, 3);
}

TEST(Histogram, RejectsWhatItCannotBin) {
  std::vector<double> none, nan = {1, std::nan("")}, v = {1, 2};
  EXPECT_THROW(make_histogram(none), ValueError);
  EXPECT_THROW(make_histogram(nan), ValueError);
  EXPECT_THROW(make_histogram(v, std::string("auto")), ValueError);
  EXPECT_THROW(make_histogram(v, int64_t{0}), ValueError);
  EXPECT_THROW(make_histogram(v, std::vector<double>{2, 1}), ValueError);
  EXPECT_THROW(make_histogram(v, std::vector<double>{5, 6}), ValueError);
  EXPECT_THROW(make_histogram(v, int64_t{4}, 0), ValueError);
}

TEST(AxisTicks, AreRoundAndCoverTheRange) {
  AxisTicks t = nice_ticks(0.3, 0.93, 6);
  std::vector<std::string> labels;
  for (double v : t.values) labels.push_back(tick_label(v, t));
  EXPECT_EQ(labels, (std::vector<std::string>{"0.2", "0.4", "0.6", "0.8", "1.0"}));
  EXPECT_EQ(nice_ticks(0.28, 2.3, 6).values, (std::vector<double>{0, 1, 2, 3}));
  AxisTicks flat = nice_ticks(3, 3);
  EXPECT_LT(flat.lo, 3);
  EXPECT_GT(flat.hi, 3);
  AxisTicks epochs = ticks_within(0.5, 1.5, 6, true);
  EXPECT_EQ(epochs.values, std::vector<double>{1});
  EXPECT_EQ(tick_label(1, epochs), "1");
  AxisTicks tiny = nice_ticks(-1e-9, 1e-9);
  for (double v : tiny.values) EXPECT_NE(tick_label(v, tiny), "-0");
}

TEST(SvgChart, DrawsEachRunOfFiniteValuesAndEscapesText) {
  double nan = std::nan("");
  Panel panel{"loss", "loss", "epoch", {Series{"loss", {3, 2, nan, 1}}, Series{"v", {nan, 5}}}};
  ChartSpec spec{"a <b> & c", {panel}};
  std::string svg = chart_svg(spec);
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; c"), std::string::npos);
  size_t polylines = 0, circles = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++polylines;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++circles;
  EXPECT_EQ(polylines, 1u);  // 3, 2
  EXPECT_EQ(circles, 2u);    // 1 after the gap, and v's only value
  EXPECT_THROW(chart_svg(ChartSpec{}), ValueError);
}

TEST(HistoryChart, PairsEachMetricWithItsValidationSeries) {
  MetricHistory h = {{"loss", {1, 0.5}}, {"accuracy", {0.5, 0.7}}, {"val_loss", {1.2, 0.9}}, {"val_top5", {0.9}}};
  ChartSpec spec = history_chart(h);
  ASSERT_EQ(spec.panels.size(), 3u);
  EXPECT_EQ(spec.panels[0].title, "loss");
  ASSERT_EQ(spec.panels[0].series.size(), 2u);
  EXPECT_EQ(spec.panels[0].series[1].name, "val_loss");
  EXPECT_EQ(spec.panels[1].series.size(), 1u);
  EXPECT_EQ(spec.panels[2].title, "val_top5");
  EXPECT_THROW(history_chart({}), ValueError);
}

}  // namespace
}  // namespace ug::logging
