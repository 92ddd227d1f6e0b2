#include "ug/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "ug/core/error.h"

extern "C" void openblas_set_num_threads(int);

namespace ug {
namespace {

thread_local bool t_inside_pool = false;

class ThreadPool {
 public:
  explicit ThreadPool(int n) { resize(n); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return num_threads_; }

  void resize(int n) {
    stop_workers();
    num_threads_ = std::max(1, n);
    stopping_ = false;
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    int64_t pieces = std::min<int64_t>(num_threads_, (n + grain - 1) / grain);
    if (pieces <= 1 || t_inside_pool) {
      fn(0, n);
      return;
    }
    std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &fn;
      job_n_ = n;
      job_pieces_ = pieces;
      next_piece_.store(0);
      pending_.store(static_cast<int>(pieces));
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work();
    spin_until([this] { return pending_.load() == 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_.load() == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    bool was_inside = t_inside_pool;
    t_inside_pool = true;
    for (;;) {
      int64_t piece = next_piece_.fetch_add(1);
      int64_t pieces = job_pieces_.load(), n = job_n_.load();
      if (piece >= pieces) break;
      try {
        (*job_.load())(n * piece / pieces, n * (piece + 1) / pieces);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_all();
      }
    }
    t_inside_pool = was_inside;
  }

  /** Polls `ready` for a short while before the caller blocks: kernels come in quick
   *  succession, and waking a sleeping thread costs tens of microseconds. The bound (kSpin)
   *  outlasts the Python work between two steps of a training loop (50-100 µs); at 50 µs
   *  the worker slept there and the MLP epoch of bench/py/mlp_jit_epoch.py took 10% longer. */
  template <class Ready> static void spin_until(Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    // The clock is read every 64 polls: reading it each time cost 2% of a training step.
    for (unsigned polls = 1; !ready(); ++polls) {
      if (polls % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load() != seen || stopping_.load(); });
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_); });
        if (stopping_) return;
        seen = generation_.load();
      }
      work();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::atomic<const std::function<void(int64_t, int64_t)>*> job_{nullptr};
  std::atomic<int64_t> job_n_{0}, job_pieces_{0};
  std::atomic<int64_t> next_piece_{0};
  std::atomic<int> pending_{0};
  std::exception_ptr error_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  static constexpr std::chrono::microseconds kSpin{400};
};

int default_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

ThreadPool& pool() {
  // One pool runs everything: OpenBLAS stays on the calling thread (its own pool would spin
  // against ours for the same cores), and the matrix-product kernels split work into tasks.
  static auto* p = [] {
    openblas_set_num_threads(1);
    return new ThreadPool(default_threads());  // never destroyed: workers outlive statics
  }();
  return *p;
}

}  // namespace

void set_num_threads(int n) {
  if (n < 1) fail("[set_num_threads] expected a positive number of threads, got ", n);
  pool().resize(n);
}

int get_num_threads() { return pool().size(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  pool().run(n, std::max<int64_t>(grain, 1), fn);
}

}  // namespace ug
