#include "ug/serve/batcher.h"

#include <algorithm>
#include <exception>

#include "ug/core/error.h"
#include "ug/serve/metrics.h"

namespace ug::serve {

Batcher::Batcher(ServedModel& model, Options options, Metrics& metrics)
    : model_(model),
      options_(options),
      metrics_(metrics),
      sample_shape_(model.sample_shape()),
      sample_numel_(model.sample_numel()),
      output_numel_([&] {
        int64_t n = 1;
        for (int64_t d : model.output_sample_shape()) n *= d;
        return n;
      }()) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { worker_loop(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

Batcher::Arrival::Arrival(Batcher& batcher) : batcher_(&batcher) {
  std::lock_guard lock(batcher.mu_);
  ++batcher.arriving_;
}

Batcher::Arrival::~Arrival() {
  if (batcher_) batcher_->leave(*this);
}

void Batcher::leave(Arrival& arrival) {
  {
    std::lock_guard lock(mu_);
    --arriving_;
    arrival.batcher_ = nullptr;
  }
  cv_.notify_all();  // a worker waiting for this request to fill its batch goes now
}

bool Batcher::run_now(const std::shared_ptr<Job>& job, Arrival& arrival) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || busy_ > 0 || !queue_.empty() || arriving_ > 1) return false;
    --arriving_;
    arrival.batcher_ = nullptr;
    ++busy_;
  }
  run({job});
  finish_forward();
  return true;
}

void Batcher::finish_forward() {
  bool queued = false;
  {
    std::lock_guard lock(mu_);
    --busy_;
    queued = !queue_.empty();
  }
  if (queued) cv_.notify_all();  // a worker may start the next forward; idle ones sleep on
}

bool Batcher::submit(const std::shared_ptr<Job>& job, Arrival& arrival) {
  bool queued = false;
  {
    std::lock_guard lock(mu_);
    --arriving_;
    arrival.batcher_ = nullptr;
    if (static_cast<int64_t>(queue_.size()) < options_.max_queue) {
      job->queued_at = Job::Clock::now();
      queue_.push_back(job);
      queued_samples_ += job->inputs.rows;
      queued = true;
    }
  }
  cv_.notify_all();
  return queued;
}

Batcher::Wait Batcher::wait(const std::shared_ptr<Job>& job, Job::Clock::time_point deadline) {
  {
    std::unique_lock lock(job->mu);
    if (job->cv.wait_until(lock, deadline, [&] { return job->done; })) return Wait::Done;
  }
  {
    std::lock_guard lock(mu_);
    if (auto it = std::find(queue_.begin(), queue_.end(), job); it != queue_.end()) {
      queued_samples_ -= job->inputs.rows;
      queue_.erase(it);
      return Wait::TimedOutQueued;
    }
  }
  std::lock_guard lock(job->mu);
  return job->done ? Wait::Done : Wait::TimedOutRunning;
}

int64_t Batcher::queue_depth() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

void Batcher::worker_loop() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch = next_batch();
    if (batch.empty()) return;
    run(batch);
    finish_forward();
  }
}

std::vector<std::shared_ptr<Job>> Batcher::next_batch() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && busy_ < options_.workers); });
    if (queue_.empty()) return {};  // stopping, and every queued job is done
    // Waiting only helps while another request is being decoded: with none on its way (a
    // single client, say) the batch goes at once.
    const auto deadline = queue_.front()->queued_at + options_.batch_wait;
    while (!stopping_ && !queue_.empty() && queued_samples_ < options_.max_batch && arriving_ > 0 &&
           cv_.wait_until(lock, deadline) == std::cv_status::no_timeout) {}
    if (queue_.empty()) continue;  // another worker took them, or they timed out
    std::vector<std::shared_ptr<Job>> batch;
    int64_t samples = 0;
    // A request larger than max_batch runs alone rather than being split.
    while (!queue_.empty() && (batch.empty() || samples + queue_.front()->inputs.rows <= options_.max_batch)) {
      samples += queue_.front()->inputs.rows;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_samples_ -= samples;
    ++busy_;
    return batch;
  }
}

void Batcher::run(const std::vector<std::shared_ptr<Job>>& batch) {
  int64_t samples = 0;
  for (const auto& job : batch) samples += job->inputs.rows;
  std::string error;
  Tensor outputs;
  try {
    Dims shape{samples};
    for (int64_t d : sample_shape_) shape.push_back(d);
    Tensor inputs = empty(shape, {.dtype = DType::Float32});
    float* at = inputs.data_ptr<float>();
    for (const auto& job : batch) at = std::copy(job->inputs.values.begin(), job->inputs.values.end(), at);
    outputs = model_.predict(inputs);
    if (outputs.dtype() != DType::Float32 || outputs.numel() != samples * output_numel_)
      fail<RuntimeError>("[serve] the model answered ", samples, " samples with a ", dtype_name(outputs.dtype()),
                         " tensor of shape ", outputs.shape(), ", expected ", output_numel_,
                         " float32 values per sample");
  } catch (const std::exception& e) {
    error = e.what();
  }
  metrics_.observe_batch(samples);
  const float* rows = error.empty() ? outputs.data_ptr<float>() : nullptr;
  for (const auto& job : batch) {
    const int64_t n = job->inputs.rows * output_numel_;
    {
      std::lock_guard lock(job->mu);
      if (rows) job->outputs.assign(rows, rows + n);
      job->error = error;
      job->batch_size = samples;
      job->done = true;
    }
    job->cv.notify_one();
    if (rows) rows += n;
  }
}

}  // namespace ug::serve
