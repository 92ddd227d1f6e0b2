// Dynamic batching: requests wait in a bounded queue; a worker takes up to max_batch samples,
// waiting at most batch_wait after the oldest while more requests are being decoded, runs
// one forward for all of them (the queue's lock released) and hands each request its rows.
// At most `workers` forwards run at once. A request that finds the batcher idle runs at once
// on its own thread instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ug/serve/decode.h"
#include "ug/serve/served_model.h"

namespace ug::serve {

class Metrics;

/** One request's samples and, once done, its outputs or the error of its forward. */
struct Job {
  using Clock = std::chrono::steady_clock;

  explicit Job(Inputs in) : inputs(std::move(in)) {}

  Inputs inputs;
  Clock::time_point queued_at;
  std::vector<float> outputs;
  std::string error;
  int64_t batch_size = 0;  // samples in the forward that served it

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

class Batcher {
 public:
  struct Options {
    int64_t max_batch = 64;
    std::chrono::microseconds batch_wait{200};
    int64_t max_queue = 1024;
    int workers = 1;
  };

  Batcher(ServedModel& model, Options options, Metrics& metrics);
  /** Finishes the queued jobs, then joins the workers. */
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /** Marks a request as on its way (being decoded) until it is submitted or dropped: the
   *  workers wait for it to fill a batch. */
  class Arrival {
   public:
    explicit Arrival(Batcher& batcher);
    ~Arrival();
    Arrival(const Arrival&) = delete;
    Arrival& operator=(const Arrival&) = delete;

   private:
    friend class Batcher;
    Batcher* batcher_;
  };

  /** Runs the job on the calling thread, as a batch of its own, when that is what a worker
   *  would do at once: no forward running, nothing queued, no other request on its way. It
   *  saves the two thread hand-offs of the queue (tens of microseconds, more on a loaded
   *  machine). False, and nothing done, otherwise. */
  bool run_now(const std::shared_ptr<Job>& job, Arrival& arrival);

  /** Queues the job; false when the queue is full. */
  bool submit(const std::shared_ptr<Job>& job, Arrival& arrival);

  enum class Wait { Done, TimedOutQueued, TimedOutRunning };
  /** Waits for the job until `deadline`. A job still queued then is taken out of the queue. */
  Wait wait(const std::shared_ptr<Job>& job, Job::Clock::time_point deadline);

  int64_t queue_depth() const;

 private:
  void worker_loop();
  std::vector<std::shared_ptr<Job>> next_batch();
  void run(const std::vector<std::shared_ptr<Job>>& batch);
  void leave(Arrival& arrival);
  void finish_forward();

  ServedModel& model_;
  Options options_;
  Metrics& metrics_;
  const std::vector<int64_t> sample_shape_;
  const int64_t sample_numel_, output_numel_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int64_t queued_samples_ = 0;
  int64_t arriving_ = 0;
  int busy_ = 0;  // forwards running
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ug::serve
