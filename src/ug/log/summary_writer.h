// ug::log::SummaryWriter: TensorBoard event files, with the names, arguments and on-disk
// layout of torch.utils.tensorboard.SummaryWriter. TensorBoard reads what it writes as its
// own; writes go through a background thread (EventFileWriter), so logging costs a training
// step only the time to serialize the event.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/log/event_file_writer.h"
#include "ug/log/histogram.h"

namespace ug::logging {

/** torch.utils.tensorboard.SummaryWriter's arguments after log_dir. */
struct SummaryWriterOptions {
  /** Appended to the default log_dir; ignored when a log_dir is given. */
  std::string comment;
  /** Hides in TensorBoard the events of an earlier run in this log_dir at steps >= purge_step
   *  (resuming after a crash). */
  std::optional<int64_t> purge_step;
  /** Events that wait before the background thread writes them. */
  int max_queue = 10;
  /** The longest time an event waits before it reaches the file. */
  double flush_secs = 120;
  std::string filename_suffix;
};

class SummaryWriter {
 public:
  /** An empty log_dir means runs/<Mon DD_HH-MM-SS>_<host><comment>, as torch's default. */
  explicit SummaryWriter(std::string log_dir = "", SummaryWriterOptions options = {});

  const std::string& log_dir() const { return log_dir_; }

  /** A scalar, stored as float32 (Summary.Value.simple_value). walltime defaults to now;
   *  an absent global_step is stored as 0, as torch does. */
  void add_scalar(const std::string& tag, double value, std::optional<int64_t> global_step = std::nullopt,
                  std::optional<double> walltime = std::nullopt);
  /** Several scalars on one chart: as torch, each goes to its own run, the sub-directory
   *  <log_dir>/<main_tag with '/' -> '_'>_<tag>, under the tag main_tag. */
  void add_scalars(const std::string& main_tag, const std::vector<std::pair<std::string, double>>& tag_scalar_dict,
                   std::optional<int64_t> global_step = std::nullopt, std::optional<double> walltime = std::nullopt);
  /** Text for TensorBoard's text plugin, under the tag <tag>/text_summary. */
  void add_text(const std::string& tag, const std::string& text, std::optional<int64_t> global_step = std::nullopt,
                std::optional<double> walltime = std::nullopt);
  /** A histogram of values' elements (see make_histogram for bins and max_bins). */
  void add_histogram(const std::string& tag, const Tensor& values, std::optional<int64_t> global_step = std::nullopt,
                     const HistogramBins& bins = std::string("tensorflow"),
                     std::optional<double> walltime = std::nullopt, std::optional<int64_t> max_bins = std::nullopt);

  /** Writes every event added so far to disk. */
  void flush();
  /** Flushes and closes every file. Adding afterwards opens new files, as torch does. */
  void close();

 private:
  /** Queues a serialized Event in the file of dir, opening one if needed. */
  void add_event(const std::string& dir, std::string event);

  std::string log_dir_;
  SummaryWriterOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<EventFileWriter>> writers_;  // by directory; log_dir_ is the main one
};

}  // namespace ug::logging
