// One TensorBoard event file, written by a background thread: add_event only queues the
// serialized Event, so a training step never waits on the disk. The thread writes the queue
// out, and flushes it to the operating system, once max_queue events wait, every flush_secs,
// and on flush() and close() (which the destructor calls).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ug/log/record_writer.h"

namespace ug::logging {

class EventFileWriter {
 public:
  /** Creates log_dir and in it events.out.tfevents.<secs>.<host>.<pid>.<n><filename_suffix>,
   *  named as TensorBoard's own writer names it, starting with the file_version event. */
  explicit EventFileWriter(std::string log_dir, int max_queue = 10, double flush_secs = 120,
                           const std::string& filename_suffix = "");
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /** Queues one serialized tensorboard.Event. */
  void add_event(std::string event);
  /** Returns once every event added before is written and flushed. */
  void flush();
  /** Writes what is queued and closes the file; later calls do nothing. */
  void close();

  const std::string& log_dir() const { return log_dir_; }
  const std::string& path() const { return records_.path(); }

 private:
  void run();
  /** Has the worker write out the queue and end; false when it was already told to. */
  bool stop_worker();
  void raise_if_failed() const;

  size_t max_queue_;
  std::chrono::steady_clock::duration flush_interval_;
  std::string log_dir_;
  RecordWriter records_;  // touched by the worker only, until it has joined

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the worker: events to write, a flush or close wanted
  std::condition_variable written_;  // flush(): the worker has flushed up to some event
  std::vector<std::string> queue_;
  uint64_t added_ = 0;         // events added so far
  uint64_t flush_wanted_ = 0;  // flush everything up to this event
  uint64_t flushed_ = 0;       // events written and flushed
  bool closing_ = false;
  std::string error_;  // the worker's failure, raised by the next call
  std::thread worker_;
};

}  // namespace ug::logging
