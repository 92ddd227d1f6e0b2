#include "ug/log/summary_writer.h"

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "tensorboard.pb.h"
#include "ug/core/error.h"
#include "ug/log/run_info.h"

namespace ug::logging {

namespace {

/** torch's default: runs/<Mon DD_HH-MM-SS>_<host><comment>, in local time. */
std::string default_log_dir(const std::string& comment) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  return (std::filesystem::path("runs") / (std::string(stamp) + "_" + host_name() + comment)).string();
}

std::string event_bytes(tensorboard::Summary summary, std::optional<int64_t> step, std::optional<double> walltime) {
  tensorboard::Event event;
  event.set_wall_time(walltime.value_or(wall_time()));
  if (step) event.set_step(*step);
  event.mutable_summary()->Swap(&summary);
  return event.SerializeAsString();
}

tensorboard::Summary scalar_summary(const std::string& tag, double value) {
  tensorboard::Summary summary;
  auto* v = summary.add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return summary;
}

std::vector<double> elements_as_double(const Tensor& values) {
  Tensor t = values.detach().to(float64).contiguous();
  const double* p = t.data_ptr<double>();
  return {p, p + t.numel()};
}

}  // namespace

SummaryWriter::SummaryWriter(std::string log_dir, SummaryWriterOptions options)
    : log_dir_(log_dir.empty() ? default_log_dir(options.comment) : std::move(log_dir)), options_(std::move(options)) {
  auto main =
      std::make_unique<EventFileWriter>(log_dir_, options_.max_queue, options_.flush_secs, options_.filename_suffix);
  if (options_.purge_step) {
    // A session START at step T tells TensorBoard to drop the events at steps >= T before it.
    tensorboard::Event version, start;
    version.set_wall_time(wall_time());
    version.set_step(*options_.purge_step);
    version.set_file_version("brain.Event:2");
    start.set_wall_time(wall_time());
    start.set_step(*options_.purge_step);
    start.mutable_session_log()->set_status(tensorboard::SessionLog::START);
    main->add_event(version.SerializeAsString());
    main->add_event(start.SerializeAsString());
  }
  writers_.emplace(log_dir_, std::move(main));
}

void SummaryWriter::add_event(const std::string& dir, std::string event) {
  std::lock_guard lock(mutex_);
  auto it = writers_.find(dir);
  if (it == writers_.end()) {
    auto writer =
        std::make_unique<EventFileWriter>(dir, options_.max_queue, options_.flush_secs, options_.filename_suffix);
    it = writers_.emplace(dir, std::move(writer)).first;
  }
  it->second->add_event(std::move(event));
}

void SummaryWriter::add_scalar(const std::string& tag, double value, std::optional<int64_t> global_step,
                               std::optional<double> walltime) {
  add_event(log_dir_, event_bytes(scalar_summary(tag, value), global_step, walltime));
}

void SummaryWriter::add_scalars(const std::string& main_tag,
                                const std::vector<std::pair<std::string, double>>& tag_scalar_dict,
                                std::optional<int64_t> global_step, std::optional<double> walltime) {
  double time = walltime.value_or(wall_time());  // one time for the whole group
  std::string run_prefix = main_tag;
  std::replace(run_prefix.begin(), run_prefix.end(), '/', '_');
  for (const auto& [tag, value] : tag_scalar_dict)
    add_event(log_dir_ + "/" + run_prefix + "_" + tag, event_bytes(scalar_summary(main_tag, value), global_step, time));
}

void SummaryWriter::add_text(const std::string& tag, const std::string& text, std::optional<int64_t> global_step,
                             std::optional<double> walltime) {
  tensorboard::Summary summary;
  auto* v = summary.add_value();
  v->set_tag(tag + "/text_summary");
  // The text plugin's data is TextPluginData{version: 0}, which serializes to no bytes.
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  auto* tensor = v->mutable_tensor();
  tensor->set_dtype(tensorboard::DT_STRING);
  tensor->mutable_tensor_shape()->add_dim()->set_size(1);
  tensor->add_string_val(text);
  add_event(log_dir_, event_bytes(std::move(summary), global_step, walltime));
}

void SummaryWriter::add_histogram(const std::string& tag, const Tensor& values, std::optional<int64_t> global_step,
                                  const HistogramBins& bins, std::optional<double> walltime,
                                  std::optional<int64_t> max_bins) {
  Histogram h = make_histogram(elements_as_double(values), bins, max_bins);
  tensorboard::Summary summary;
  auto* v = summary.add_value();
  v->set_tag(tag);
  auto* histo = v->mutable_histo();
  histo->set_min(h.min);
  histo->set_max(h.max);
  histo->set_num(h.num);
  histo->set_sum(h.sum);
  histo->set_sum_squares(h.sum_squares);
  histo->mutable_bucket_limit()->Add(h.bucket_limit.begin(), h.bucket_limit.end());
  histo->mutable_bucket()->Add(h.bucket.begin(), h.bucket.end());
  add_event(log_dir_, event_bytes(std::move(summary), global_step, walltime));
}

void SummaryWriter::flush() {
  std::lock_guard lock(mutex_);
  for (auto& [dir, writer] : writers_) writer->flush();
}

void SummaryWriter::close() {
  std::map<std::string, std::unique_ptr<EventFileWriter>> closing;
  {
    std::lock_guard lock(mutex_);
    closing.swap(writers_);
  }
  std::string first_error;
  for (auto& [dir, writer] : closing) {
    try {
      writer->close();
    } catch (const RuntimeError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) throw RuntimeError(first_error);
}

}  // namespace ug::logging
