// The threading core of the data pipeline: worker threads produce the items of a stream
// ahead of its consumer, at most `capacity` items ahead, and the consumer receives them in
// order whatever the threads' timing. Item type T is a template parameter, so the same
// queue carries tensors (ug::data::Example) or, in the Python binding, Python objects.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ug/core/error.h"

namespace ug::data {

template <class T> class Prefetcher {
 public:
  /** Item `i` of the stream, or nullopt when the stream ends before it. Called with rising
   *  i by one worker at a time per i; with several workers, for several i at once. */
  using Produce = std::function<std::optional<T>(int64_t)>;
  /** Runs first on each worker thread, with its number; what it throws is the error of the
   *  first item that worker takes. */
  using WorkerStart = std::function<void(int)>;

  /** `workers` threads (0: items are produced on the consumer's thread when asked for).
   *  next() waits at most `timeout_s` seconds for an item from them (0: without limit). */
  Prefetcher(Produce produce, int workers, int64_t capacity, WorkerStart on_start = {}, double timeout_s = 0)
      : produce_(std::move(produce)),
        on_start_(std::move(on_start)),
        inline_(workers == 0),
        capacity_(capacity),
        timeout_s_(timeout_s) {
    if (workers < 0) fail("[DataLoader] num_workers must be non-negative, got ", workers);
    if (capacity < 1) fail("[DataLoader] the prefetch queue needs room for at least one batch, got ", capacity);
    if (inline_) return;
    slots_.resize(static_cast<size_t>(capacity));
    threads_.reserve(static_cast<size_t>(workers));
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w] { work(w); });
  }
  ~Prefetcher() { stop(); }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /** The next item, waiting for it if needed; nullopt at the end. An exception thrown while
   *  producing it is rethrown here, and the stream ends after it. */
  std::optional<T> next() {
    if (inline_) {
      if (consumed_ >= end_) return std::nullopt;
      const int64_t i = consumed_++;
      std::optional<T> item;
      try {
        item = produce_(i);
      } catch (...) {
        end_ = consumed_;
        throw;
      }
      if (!item) end_ = i;
      return item;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (consumed_ >= end_) return std::nullopt;
    Slot& slot = slots_[static_cast<size_t>(consumed_ % capacity_)];
    const auto ready = [&] { return slot.done || stopping_; };
    if (timeout_s_ <= 0) to_consumer_.wait(lock, ready);
    else if (!to_consumer_.wait_for(lock, std::chrono::duration<double>(timeout_s_), ready))
      fail<RuntimeError>("DataLoader timed out after ", timeout_s_, " seconds");
    if (!slot.done) return std::nullopt;  // stopped: the pass ends here
    Slot taken = std::move(slot);
    slot = Slot{};
    if (taken.value || taken.error) ++consumed_;
    lock.unlock();
    to_workers_.notify_all();
    if (taken.error) std::rethrow_exception(taken.error);
    return std::move(taken.value);
  }

  /** Stops the workers once their current item is done; the stream ends there. Idempotent. */
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    to_workers_.notify_all();
    to_consumer_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  struct Slot {
    std::optional<T> value;
    std::exception_ptr error;
    bool done = false;
  };

  void work(int worker) {
    std::exception_ptr start_error;
    if (on_start_) {
      try {
        on_start_(worker);
      } catch (...) {
        start_error = std::current_exception();
      }
    }
    for (;;) {
      int64_t i;
      {
        std::unique_lock<std::mutex> lock(mu_);
        to_workers_.wait(lock, [&] { return stopping_ || claimed_ >= end_ || claimed_ < consumed_ + capacity_; });
        if (stopping_ || claimed_ >= end_) return;
        i = claimed_++;
      }
      Slot slot;
      try {
        if (start_error) std::rethrow_exception(start_error);
        slot.value = produce_(i);
      } catch (...) {
        slot.error = std::current_exception();
      }
      slot.done = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!slot.value) end_ = std::min(end_, slot.error ? i + 1 : i);
        slots_[static_cast<size_t>(i % capacity_)] = std::move(slot);
      }
      to_consumer_.notify_one();
      to_workers_.notify_all();
    }
  }

  Produce produce_;
  WorkerStart on_start_;
  const bool inline_;
  const int64_t capacity_;
  const double timeout_s_;
  std::vector<Slot> slots_;  // item i waits in slot i % capacity
  std::mutex mu_;
  std::condition_variable to_workers_, to_consumer_;
  int64_t claimed_ = 0, consumed_ = 0;
  int64_t end_ = INT64_MAX;  // the first index past the stream, once known
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ug::data
