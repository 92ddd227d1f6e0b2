#include "ug/log/event_file_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>

#include "tensorboard.pb.h"
#include "ug/core/error.h"
#include "ug/log/run_info.h"

namespace ug::logging {

namespace {

/** TensorBoard's EventFileWriter name; n counts the files this process opened, so two
 *  writers created within the same second never share a file. */
std::string event_file_path(const std::string& log_dir, const std::string& suffix) {
  static std::atomic<uint64_t> files_opened{0};
  char secs[32];
  std::snprintf(secs, sizeof secs, "%010lld", static_cast<long long>(wall_time()));
  std::string name = std::string("events.out.tfevents.") + secs + "." + host_name() + "." + std::to_string(::getpid()) +
                     "." + std::to_string(files_opened++) + suffix;
  return (std::filesystem::path(log_dir) / name).string();
}

size_t checked_max_queue(int max_queue) {
  if (max_queue < 1) fail("[SummaryWriter] max_queue must be at least 1, got ", max_queue);
  return static_cast<size_t>(max_queue);
}

std::chrono::steady_clock::duration checked_flush_interval(double flush_secs) {
  if (!(flush_secs > 0)) fail("[SummaryWriter] flush_secs must be positive, got ", flush_secs);
  // Capped so that the interval fits in the clock's 64-bit nanosecond count.
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::min(flush_secs, 1e9)));
}

std::string make_dir(std::string log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) fail<RuntimeError>("[SummaryWriter] cannot create log directory ", log_dir, ": ", ec.message());
  return log_dir;
}

}  // namespace

EventFileWriter::EventFileWriter(std::string log_dir, int max_queue, double flush_secs,
                                 const std::string& filename_suffix)
    : max_queue_(checked_max_queue(max_queue)),
      flush_interval_(checked_flush_interval(flush_secs)),
      log_dir_(make_dir(std::move(log_dir))),
      records_(event_file_path(log_dir_, filename_suffix)) {
  worker_ = std::thread([this] { run(); });
  tensorboard::Event first;
  first.set_wall_time(wall_time());
  first.set_file_version("brain.Event:2");
  first.mutable_source_metadata()->set_writer("unigrad");
  try {
    add_event(first.SerializeAsString());
    flush();
  } catch (...) {
    stop_worker();
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor cannot raise; close() called explicitly reports the same failure.
  }
}

void EventFileWriter::add_event(std::string event) {
  std::lock_guard lock(mutex_);
  if (closing_) fail<RuntimeError>("[SummaryWriter] ", path(), " is closed");
  raise_if_failed();
  queue_.push_back(std::move(event));
  ++added_;
  if (queue_.size() >= max_queue_) wake_.notify_one();
}

void EventFileWriter::flush() {
  std::unique_lock lock(mutex_);
  if (closing_) return;
  uint64_t target = added_;
  flush_wanted_ = std::max(flush_wanted_, target);
  wake_.notify_one();
  written_.wait(lock, [&] { return flushed_ >= target || !error_.empty(); });
  raise_if_failed();
}

bool EventFileWriter::stop_worker() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return false;
    closing_ = true;
  }
  wake_.notify_one();
  worker_.join();
  return true;
}

void EventFileWriter::close() {
  if (!stop_worker()) return;
  std::lock_guard lock(mutex_);
  if (error_.empty()) {
    try {
      records_.close();
    } catch (const RuntimeError& e) {
      error_ = e.what();
    }
  }
  raise_if_failed();
}

void EventFileWriter::raise_if_failed() const {
  if (!error_.empty()) throw RuntimeError(error_);
}

void EventFileWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    auto deadline = std::chrono::steady_clock::now() + flush_interval_;
    wake_.wait_until(lock, deadline,
                     [&] { return closing_ || flush_wanted_ > flushed_ || queue_.size() >= max_queue_; });
    std::vector<std::string> batch;
    batch.swap(queue_);
    uint64_t through = added_;
    bool last = closing_;
    lock.unlock();
    std::string failure;
    try {
      for (const std::string& event : batch) records_.write(event);
      records_.flush();
    } catch (const RuntimeError& e) {
      failure = e.what();
    }
    lock.lock();
    if (error_.empty()) error_ = failure;
    flushed_ = through;
    written_.notify_all();
    if (last) return;
  }
}

}  // namespace ug::logging
