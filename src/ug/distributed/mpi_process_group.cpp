// Each collective posts an "arrived" token (its signature) to every other rank on a second
// communicator, then runs as MPI's blocking call once every token has come and agrees: on the
// group's thread, or on the caller's when it waits for a collective that is next in line, or
// when it waits at once (start_and_wait) and the group's thread is idle.
// Waiting has a deadline; at it, the tokens that have not come name the ranks that never entered.
// A float all_reduce of at most 1 MiB (DDP's buckets of a small model) in a group on one host
// runs through the group's shared memory instead: OpenMPI takes 1.5-5x as long there (its
// shared-memory transport moves a message in handshaked pieces), while from a few MiB on its
// bandwidth is the higher. UG_ALLREDUCE_SHM=0 keeps every collective on MPI.
#include "ug/distributed/mpi_process_group.h"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

#include "ug/distributed/shm_all_reduce.h"
#include "ug/distributed/start_and_wait.h"
#include "ug/ops/binary.h"

namespace ug::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// A timed-out collective leaves requests MPI cannot cancel: MPI_Finalize would wait on them.
std::atomic<bool> g_timed_out = false;
// What a collective's run returns when its deadline passed inside it (MPI's codes are >= 0).
constexpr int kTimedOut = -1;
// The largest all_reduce the shared memory carries (see the top of the file).
constexpr int64_t kShmAllReduceBytes = int64_t{1} << 20;
// Set by start_and_wait while its `start` runs: the caller waits for this collective at once.
thread_local bool t_waits_at_once = false;

void check(int rc, std::string_view op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail<RuntimeError>("[", op, "] MPI error: ", std::string(text, len));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_timed_out) MPI_Finalize();
}

void ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "init_process_group");
  // Each group's collectives run on a thread of their own (CommThread) while other threads call MPI.
  if (provided < MPI_THREAD_MULTIPLE)
    fail<RuntimeError>("[init_process_group] this MPI library lacks MPI_THREAD_MULTIPLE, which ug.distributed needs");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

MPI_Datatype mpi_type(DType t, std::string_view op) {
  switch (t) {
    case DType::Bool: return MPI_C_BOOL;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Int8: return MPI_INT8_T;
    case DType::Int16: return MPI_INT16_T;
    case DType::UInt16: return MPI_UINT16_T;
    case DType::Int32: return MPI_INT32_T;
    case DType::UInt32: return MPI_UINT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::UInt64: return MPI_UINT64_T;
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    default: fail<TypeError>("[", op, "] MPI has no type for ", t);
  }
}

/** Bool reduces as torch's gloo does it: sum and max are "or", prod and min are "and". */
MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::Bool) return op == ReduceOp::Sum || op == ReduceOp::Max ? MPI_LOR : MPI_LAND;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Product: return MPI_PROD;
  }
  return MPI_SUM;
}

/** Half floats have no MPI type: they travel (and reduce) as float32. */
DType wire_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }

/** A contiguous tensor of the wire dtype holding t's values: t itself where it already is one. */
Tensor staged(const Tensor& t) {
  if (wire_dtype(t.dtype()) != t.dtype()) return t.to(wire_dtype(t.dtype())).contiguous();
  return t.is_contiguous() ? t : t.contiguous();
}

/** A collective's list of one tensor per rank, each of `like`'s shape and dtype. */
void check_list(const std::vector<Tensor>& list, const Tensor& like, int ranks, std::string_view op,
                std::string_view what) {
  if (static_cast<int>(list.size()) != ranks)
    fail("[", op, "] ", what, " needs one tensor per rank (", ranks, "), got ", list.size());
  for (const Tensor& t : list)
    if (!(t.shape() == like.shape()) || t.dtype() != like.dtype())
      fail("[", op, "] ", what, " holds a tensor of shape ", t.shape(), " and dtype ", t.dtype(), " for one of shape ",
           like.shape(), " and dtype ", like.dtype());
}

/** A rooted collective's list: given on the root, absent elsewhere (as torch requires). */
void check_rooted_list(const std::vector<Tensor>& list, const Tensor& like, int ranks, bool root, std::string_view op,
                       std::string_view what) {
  if (root) return check_list(list, like, ranks, op, what);
  if (!list.empty())
    fail("[", op, "] ", what, " must be given on the ", op == "gather" ? "destination" : "source", " rank only");
}

int count_of(int64_t n, std::string_view op) {
  if (n > INT_MAX) fail("[", op, "] ", n, " elements is more than one MPI call carries (", INT_MAX, ")");
  return static_cast<int>(n);
}

/** What every rank must agree on for a collective: element type and count, and the reduction
 *  or root. */
std::string describe(DType dtype, int count, int operation) {
  return std::string(dtype_name(dtype)) + " " + std::to_string(count) + " " + std::to_string(operation);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

class CommThread;

/** A collective's progress. Collectives run on their group's thread (CommThread), or on the
 *  waiting thread when it is the group's next one; send and recv are MPI requests polled by
 *  the waiting thread. */
class MpiWork final : public Work {
 public:
  MpiWork(std::string op, std::vector<int> world_ranks, int world_rank, Timeout timeout)
      : op_(std::move(op)),
        world_ranks_(std::move(world_ranks)),
        world_rank_(world_rank),
        timeout_(timeout),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout)) {}
  ~MpiWork() override {
    if (state_ == State::Failed) {
      new std::vector<Tensor>(std::move(keep_));  // MPI may still write into them: never freed
      return;
    }
    try {
      wait();
    } catch (...) {  // a destructor cannot raise; a later collective reports the broken group
    }
  }

  void wait() override;
  void wait_here() {
    while (!is_completed()) {
      std::unique_lock lock(mutex_);
      if (state_ == State::Pending && requests.empty()) cv_.wait_until(lock, deadline_);
      else std::this_thread::yield();
    }
  }

  bool is_completed() override {
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::Pending && !requests.empty() && test_requests()) state_ = State::Done;
      if (state_ == State::Pending && Clock::now() > deadline_) time_out_locked();
      if (state_ == State::Failed) fail<RuntimeError>(error_);
      if (state_ == State::Pending) return false;
    }
    if (finish_) {
      auto finish = std::move(finish_);
      finish_ = nullptr;
      finish();
    }
    keep_.clear();
    return true;
  }

  // ---- for the group's thread ----
  bool expired() {
    std::lock_guard lock(mutex_);
    return state_ != State::Pending || Clock::now() > deadline_;
  }
  void arrived(size_t token) {
    std::lock_guard lock(mutex_);
    arrived_[token] = true;
  }
  void time_out() {
    std::lock_guard lock(mutex_);
    if (state_ == State::Pending) time_out_locked();
    cv_.notify_all();
  }
  void complete(int rc, const std::string& error) {
    std::lock_guard lock(mutex_);
    if (state_ == State::Pending) {
      state_ = rc == MPI_SUCCESS ? State::Done : State::Failed;
      error_ = error;
    }
    cv_.notify_all();
  }
  const std::string& op() const { return op_; }
  void mismatch(const std::vector<int>& ranks) {
    std::lock_guard lock(mutex_);
    if (state_ != State::Pending) return;
    state_ = State::Failed;
    error_ = "[" + op_ + "] rank" + (ranks.size() > 1 ? "s " : " ") + rank_list(ranks) +
             " entered another collective at this point (another op, dtype, element count, reduction or root): "
             "every rank must call the same collectives in the same order";
    cv_.notify_all();
  }

  std::function<int()> run;              // the blocking collective
  std::weak_ptr<CommThread> thread;      // the group's thread, which runs it unless the waiter does
  int signature = 0;                     // what the tokens carry: op, dtype, count, operation, root
  std::vector<MPI_Request> token_sends;  // the arrival tokens this rank sends
  std::vector<MPI_Request> token_recvs;  // and receives, from token_peers (group ranks)
  std::vector<int> token_peers;
  std::vector<int> tokens;            // the buffers of the arrival messages
  std::vector<MPI_Request> requests;  // send/recv: the operation's request
  bool records_source = false;        // recv: notes the sender (source_rank)
  std::vector<Tensor> keep_;          // buffers MPI reads or writes until completion
  std::function<void()> finish_;      // copies results out, on the waiting thread
  std::string peer_hint;              // send/recv: the peer, named in a timeout

  void expect_tokens(size_t n) { arrived_.assign(n, false); }
  int world_ranks_of(int group_rank) const { return world_ranks_[static_cast<size_t>(group_rank)]; }
  int source_rank() const override { return source_; }

 private:
  enum class State { Pending, Done, Failed };

  bool test_requests() {
    bool all = true;
    for (MPI_Request& r : requests) {
      if (r == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Status status;
      check(MPI_Test(&r, &flag, records_source ? &status : MPI_STATUS_IGNORE), op_);
      if (flag && records_source) source_ = world_ranks_of(status.MPI_SOURCE);
      all &= flag != 0;
    }
    return all;
  }

  void time_out_locked() {
    state_ = State::Failed;
    g_timed_out = true;
    std::vector<int> missing;
    for (size_t i = 0; i < arrived_.size(); ++i)
      if (!arrived_[i]) missing.push_back(world_ranks_[token_peers[i]]);
    std::ostringstream os;
    os << "[" << op_ << "] timed out after " << timeout_.count() << " s on rank " << world_rank_ << " (group of ranks "
       << rank_list(world_ranks_) << "): ";
    if (!peer_hint.empty()) os << peer_hint << " did not arrive";
    else if (!missing.empty())
      os << "rank" << (missing.size() > 1 ? "s " : " ") << rank_list(missing) << " did not arrive";
    else
      os << "every rank arrived but the collective did not finish (do all ranks call the same collectives, "
            "in the same order, with the same shapes?)";
    error_ = os.str();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::string op_;
  std::vector<int> world_ranks_;
  int world_rank_;
  Timeout timeout_;
  Clock::time_point deadline_;
  State state_ = State::Pending;
  std::string error_;
  std::vector<bool> arrived_;
  std::atomic<int> source_ = -1;
};

/** Runs a group's collectives one after another, in the order they were started. MPI's
 *  blocking collectives are much faster than its nonblocking ones (OpenMPI's libnbc); on this
 *  thread they overlap the caller's work all the same. A caller that waits for the collective
 *  next in line while the thread is idle runs it itself (run_inline): that saves two thread
 *  hand-overs, most of a small collective's cost. Each waits first, until the deadline, for
 *  the arrival tokens of every rank, and fails at once where a token names another collective. */
class CommThread {
 public:
  CommThread() : thread_([this] { loop(); }) {}
  ~CommThread() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (g_timed_out) thread_.detach();  // it may sit in a collective that never ends
    else thread_.join();
  }
  void push(std::shared_ptr<MpiWork> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_all();
  }
  /** Runs `work` on this thread if it is next and the group's thread is idle; false if not. */
  bool run_inline(const MpiWork* work) {
    std::shared_ptr<MpiWork> mine;
    {
      std::lock_guard lock(mutex_);
      if (busy_ || queue_.empty() || queue_.front().get() != work) return false;
      mine = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    run_here(*mine);
    return true;
  }
  /** Runs `work`, not yet queued, on this thread if nothing is queued or running; false if not. */
  bool run_now(MpiWork& work) {
    {
      std::lock_guard lock(mutex_);
      if (busy_ || !queue_.empty()) return false;
      busy_ = true;
    }
    run_here(work);
    return true;
  }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<MpiWork> work;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || (!queue_.empty() && !busy_); });
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      execute(*work);
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
  }

  /** Runs `work` on the calling thread, which set busy_. Wakes the group's thread only if
   *  collectives were queued meanwhile: a needless wake-up preempts this rank or its peer. */
  void run_here(MpiWork& work) {
    execute(work);
    bool queued = false;
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      queued = !queue_.empty();
    }
    if (queued) cv_.notify_all();
  }

  void execute(MpiWork& work) {
    if (broken_) {
      work.complete(MPI_ERR_OTHER, "[" + work.op() + "] not run: an earlier collective of its group timed out");
      return;
    }
    if (!wait_for_tokens(work)) {
      work.time_out();
      broken_ = true;
      return;
    }
    std::vector<int> others;  // world ranks whose token names another collective
    for (size_t i = 0; i < work.token_peers.size(); ++i)
      if (work.tokens[static_cast<size_t>(work.token_peers[i])] != work.signature)
        others.push_back(work.world_ranks_of(work.token_peers[i]));
    if (!others.empty()) {
      work.mismatch(others);
      return;
    }
    int rc = work.run();
    if (rc == kTimedOut) {
      work.time_out();
      broken_ = true;
      return;
    }
    std::string error;
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      error = "[" + work.op() + "] MPI error: " + std::string(text, len);
    }
    work.complete(rc, error);
  }

  static bool wait_for_tokens(MpiWork& w) {
    for (;;) {
      bool all = true;
      for (size_t i = 0; i < w.token_recvs.size(); ++i) {
        if (w.token_recvs[i] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        MPI_Test(&w.token_recvs[i], &flag, MPI_STATUS_IGNORE);
        if (flag) w.arrived(i);
        else all = false;
      }
      if (all) break;
      if (w.expired()) return false;
      std::this_thread::yield();
    }
    MPI_Waitall(static_cast<int>(w.token_sends.size()), w.token_sends.data(), MPI_STATUSES_IGNORE);
    return true;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<MpiWork>> queue_;
  bool busy_ = false;  // a collective is running, here or inline
  bool stop_ = false;
  // An earlier collective timed out: the later ones cannot run. Only the one running sets it.
  std::atomic<bool> broken_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

void MpiWork::wait() {
  if (auto t = thread.lock(); t && t->run_inline(this)) {
    (void)is_completed();  // raises the collective's error, runs finish
    return;
  }
  wait_here();
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  /** Takes ownership of comm (MPI_COMM_NULL: this process is not a member). */
  MpiProcessGroup(MPI_Comm comm, std::vector<int> world_ranks, Timeout timeout)
      : comm_(comm), world_ranks_(std::move(world_ranks)), timeout_(timeout) {
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    if (comm_ == MPI_COMM_NULL) return;
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    check(MPI_Comm_dup(comm_, &tokens_), "new_group");
    if (size() > 1) shm_ = map_shared_memory();
    thread_ = std::make_shared<CommThread>();
  }
  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    thread_.reset();
    shm_.reset();
    if (finalized || comm_ == MPI_COMM_NULL) return;
    MPI_Comm_free(&tokens_);
    MPI_Comm_free(&comm_);
  }

  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  const std::vector<int>& world_ranks() const override { return world_ranks_; }
  Timeout timeout() const override { return timeout_; }

  WorkPtr all_reduce(Tensor tensor, ReduceOp op) override {
    member("all_reduce");
    if (op == ReduceOp::Avg && !tensor.is_floating_point())
      fail<TypeError>("[all_reduce] ReduceOp.AVG needs a floating dtype, got ", tensor.dtype());
    Tensor buf = staged(tensor);
    MPI_Datatype type = mpi_type(buf.dtype(), "all_reduce");
    int count = count_of(buf.numel(), "all_reduce");
    std::function<int()> run = [data = buf.raw_data(), count, type, mop = mpi_op(op, buf.dtype()), comm = comm_] {
      return MPI_Allreduce(MPI_IN_PLACE, data, count, type, mop, comm);
    };
    const bool shared = shm_ && ShmAllReduce::supports(buf.dtype(), op) &&
                        buf.numel() * static_cast<int64_t>(buf.element_size()) <= kShmAllReduceBytes;
    if (shared)
      run = [shm = shm_, data = buf.raw_data(), count, dtype = buf.dtype(), op,
             deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_)] {
        return shm->run(data, count, dtype, op, deadline) ? MPI_SUCCESS : kTimedOut;
      };
    return start(
        "all_reduce", describe(buf.dtype(), count, static_cast<int>(op)), {tensor, buf}, std::move(run),
        [tensor, buf, divide = op == ReduceOp::Avg && !shared && size() > 1, n = size()]() mutable {
          if (divide) buf.div_(n);
          if (!buf.shares_storage(tensor)) tensor.copy_(buf);
        },
        shared);
  }

  WorkPtr broadcast(Tensor tensor, int src) override {
    member("broadcast");
    check_rank(src, "broadcast", "src");
    Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "broadcast");
    return start(
        "broadcast", describe(DType::UInt8, count, src), {tensor, buf},
        [data = buf.raw_data(), count, src, comm = comm_] { return MPI_Bcast(data, count, MPI_BYTE, src, comm); },
        [tensor, buf]() mutable {
          if (!buf.shares_storage(tensor)) tensor.copy_(buf);
        });
  }

  WorkPtr all_gather(std::vector<Tensor> outputs, Tensor input) override {
    member("all_gather");
    check_list(outputs, input, size(), "all_gather", "tensor_list");
    Tensor in = input.contiguous();
    Tensor buf = empty({size(), input.numel()}, {.dtype = input.dtype()});
    int count = count_of(static_cast<int64_t>(in.nbytes()), "all_gather");
    std::vector<Tensor> keep = outputs;
    keep.push_back(in);
    keep.push_back(buf);
    return start(
        "all_gather", describe(DType::UInt8, count, 0), keep,
        [in = in.raw_data(), out = buf.raw_data(), count, comm = comm_] {
          return MPI_Allgather(in, count, MPI_BYTE, out, count, MPI_BYTE, comm);
        },
        [outputs, buf]() mutable {
          for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_(buf.select(0, i).view(outputs[i].shape()));
        });
  }

  WorkPtr reduce_scatter(Tensor output, std::vector<Tensor> inputs, ReduceOp op) override {
    member("reduce_scatter");
    check_list(inputs, output, size(), "reduce_scatter", "input_list");
    if (op == ReduceOp::Avg && !output.is_floating_point())
      fail<TypeError>("[reduce_scatter] ReduceOp.AVG needs a floating dtype, got ", output.dtype());
    DType wire = wire_dtype(output.dtype());
    Tensor send_buf = empty({size(), output.numel()}, {.dtype = wire});
    for (int i = 0; i < size(); ++i) send_buf.select(0, i).copy_(inputs[i].reshape({-1}));
    Tensor recv_buf = empty({output.numel()}, {.dtype = wire});
    MPI_Datatype type = mpi_type(wire, "reduce_scatter");
    int count = count_of(output.numel(), "reduce_scatter");
    return start(
        "reduce_scatter", describe(wire, count, static_cast<int>(op)), {output, send_buf, recv_buf},
        [in = send_buf.raw_data(), out = recv_buf.raw_data(), count, type, mop = mpi_op(op, wire), comm = comm_] {
          return MPI_Reduce_scatter_block(in, out, count, type, mop, comm);
        },
        [output, recv_buf, op, n = size()]() mutable {
          if (op == ReduceOp::Avg) recv_buf.div_(n);
          output.copy_(recv_buf.view(output.shape()));
        });
  }

  WorkPtr reduce(Tensor tensor, int dst, ReduceOp op) override {
    member("reduce");
    check_rank(dst, "reduce", "dst");
    if (op == ReduceOp::Avg && !tensor.is_floating_point())
      fail<TypeError>("[reduce] ReduceOp.AVG needs a floating dtype, got ", tensor.dtype());
    Tensor buf = staged(tensor);
    MPI_Datatype type = mpi_type(buf.dtype(), "reduce");
    int count = count_of(buf.numel(), "reduce");
    const bool root = rank_ == dst;
    return start(
        "reduce", describe(buf.dtype(), count, static_cast<int>(op)) + " to " + std::to_string(dst), {tensor, buf},
        [data = buf.raw_data(), count, type, mop = mpi_op(op, buf.dtype()), dst, root, comm = comm_] {
          return MPI_Reduce(root ? MPI_IN_PLACE : data, root ? data : nullptr, count, type, mop, dst, comm);
        },
        [tensor, buf, root, divide = op == ReduceOp::Avg && size() > 1, n = size()]() mutable {
          if (!root) return;
          if (divide) buf.div_(n);
          if (!buf.shares_storage(tensor)) tensor.copy_(buf);
        });
  }

  WorkPtr gather(std::vector<Tensor> outputs, Tensor input, int dst) override {
    member("gather");
    check_rank(dst, "gather", "dst");
    const bool root = rank_ == dst;
    check_rooted_list(outputs, input, size(), root, "gather", "gather_list");
    Tensor in = input.contiguous();
    Tensor buf = root ? empty({size(), input.numel()}, {.dtype = input.dtype()}) : Tensor();
    int count = count_of(static_cast<int64_t>(in.nbytes()), "gather");
    std::vector<Tensor> keep = outputs;
    keep.push_back(in);
    if (root) keep.push_back(buf);
    return start(
        "gather", describe(DType::UInt8, count, dst), keep,
        [in = in.raw_data(), out = root ? buf.raw_data() : nullptr, count, dst, comm = comm_] {
          return MPI_Gather(in, count, MPI_BYTE, out, count, MPI_BYTE, dst, comm);
        },
        [outputs, buf]() mutable {
          for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_(buf.select(0, i).view(outputs[i].shape()));
        });
  }

  WorkPtr scatter(Tensor output, std::vector<Tensor> inputs, int src) override {
    member("scatter");
    check_rank(src, "scatter", "src");
    const bool root = rank_ == src;
    check_rooted_list(inputs, output, size(), root, "scatter", "scatter_list");
    Tensor send_buf = root ? empty({size(), output.numel()}, {.dtype = output.dtype()}) : Tensor();
    for (size_t i = 0; i < inputs.size(); ++i) send_buf.select(0, i).copy_(inputs[i].reshape({-1}));
    Tensor buf = output.is_contiguous() ? output : output.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "scatter");
    std::vector<Tensor> keep{output, buf};
    if (root) keep.push_back(send_buf);
    return start(
        "scatter", describe(DType::UInt8, count, src), keep,
        [in = root ? send_buf.raw_data() : nullptr, out = buf.raw_data(), count, src, comm = comm_] {
          return MPI_Scatter(in, count, MPI_BYTE, out, count, MPI_BYTE, src, comm);
        },
        [output, buf]() mutable {
          if (!buf.shares_storage(output)) output.copy_(buf);
        });
  }

  WorkPtr all_to_all(std::vector<Tensor> outputs, std::vector<Tensor> inputs) override {
    member("all_to_all");
    const int n = size();
    if (static_cast<int>(outputs.size()) != n || static_cast<int>(inputs.size()) != n)
      fail("[all_to_all] needs one output and one input tensor per rank (", n, "), got ", outputs.size(), " and ",
           inputs.size());
    const DType dtype = inputs.front().dtype();
    for (const auto* list : {&inputs, &outputs})
      for (const Tensor& t : *list)
        if (t.dtype() != dtype)
          fail<TypeError>("[all_to_all] every tensor must have one dtype, got ", dtype, " and ", t.dtype());
    // Each list packed end to end; MPI moves bytes, so counts and offsets are in bytes.
    auto layout = [&](const std::vector<Tensor>& list, std::vector<int>& counts, std::vector<int>& offsets) {
      int64_t total = 0;
      for (const Tensor& t : list) {
        offsets.push_back(count_of(total * itemsize(dtype), "all_to_all"));
        counts.push_back(count_of(t.numel() * itemsize(dtype), "all_to_all"));
        total += t.numel();
      }
      return total;
    };
    std::vector<int> send_counts, send_offsets, recv_counts, recv_offsets;
    Tensor send_buf = empty({layout(inputs, send_counts, send_offsets)}, {.dtype = dtype});
    Tensor recv_buf = empty({layout(outputs, recv_counts, recv_offsets)}, {.dtype = dtype});
    for (int i = 0, at = 0; i < n; at += static_cast<int>(inputs[i].numel()), ++i)
      send_buf.narrow(0, at, inputs[i].numel()).copy_(inputs[i].reshape({-1}));
    std::vector<Tensor> keep = outputs;
    keep.push_back(send_buf);
    keep.push_back(recv_buf);
    return start(
        "all_to_all", describe(dtype, n, 0), keep,
        [in = send_buf.raw_data(), out = recv_buf.raw_data(), send_counts, send_offsets, recv_counts, recv_offsets,
         comm = comm_] {
          return MPI_Alltoallv(in, send_counts.data(), send_offsets.data(), MPI_BYTE, out, recv_counts.data(),
                               recv_offsets.data(), MPI_BYTE, comm);
        },
        [outputs, recv_buf]() mutable {
          int64_t at = 0;
          for (Tensor& o : outputs) {
            o.copy_(recv_buf.narrow(0, at, o.numel()).view(o.shape()));
            at += o.numel();
          }
        });
  }

  WorkPtr send(Tensor tensor, int dst, int tag) override {
    member("send");
    check_rank(dst, "send", "dst");
    Tensor buf = tensor.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "send");
    auto work = make_work("send");
    work->peer_hint = "rank " + std::to_string(world_ranks_[dst]) + " (the receiver)";
    work->keep_ = {buf};
    work->requests.resize(1);
    check(MPI_Isend(buf.raw_data(), count, MPI_BYTE, dst, tag, comm_, work->requests.data()), "send");
    return work;
  }

  WorkPtr recv(Tensor tensor, int src, int tag) override {
    member("recv");
    if (src != -1) check_rank(src, "recv", "src");
    Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "recv");
    auto work = make_work("recv");
    work->peer_hint =
        src == -1 ? "no rank (recv from any)" : "rank " + std::to_string(world_ranks_[src]) + " (the sender)";
    work->records_source = true;
    work->keep_ = {tensor, buf};
    work->finish_ = [tensor, buf]() mutable {
      if (!buf.shares_storage(tensor)) tensor.copy_(buf);
    };
    work->requests.resize(1);
    check(
        MPI_Irecv(buf.raw_data(), count, MPI_BYTE, src == -1 ? MPI_ANY_SOURCE : src, tag, comm_, work->requests.data()),
        "recv");
    return work;
  }

  WorkPtr barrier() override {
    member("barrier");
    return start(
        "barrier", "", {}, [comm = comm_] { return MPI_Barrier(comm); }, nullptr);
  }

  ProcessGroupPtr new_group(const std::vector<int>& ranks, Timeout timeout) override {
    member("new_group");
    std::vector<int> world;
    int key = -1;
    for (size_t i = 0; i < ranks.size(); ++i) {
      check_rank(ranks[i], "new_group", "ranks");
      for (size_t j = 0; j < i; ++j)
        if (ranks[j] == ranks[i]) fail("[new_group] rank ", ranks[i], " is listed twice");
      world.push_back(world_ranks_[ranks[i]]);
      if (ranks[i] == rank_) key = static_cast<int>(i);
    }
    MPI_Comm comm = MPI_COMM_NULL;
    { check(MPI_Comm_split(comm_, key >= 0 ? 0 : MPI_UNDEFINED, key, &comm), "new_group"); }
    return std::make_shared<MpiProcessGroup>(comm, std::move(world), timeout);
  }

 private:
  void member(std::string_view op) const {
    if (comm_ == MPI_COMM_NULL)
      fail<RuntimeError>("[", op, "] rank ", world_rank_, " is not a member of the group of ranks ",
                         rank_list(world_ranks_));
  }
  void check_rank(int r, std::string_view op, std::string_view what) const {
    if (r < 0 || r >= size()) fail("[", op, "] ", what, " rank ", r, " is outside the group of ", size(), " ranks");
  }

  /** The shared-memory all-reduce when every rank of the group runs on this host and can map
   *  the segment (every rank agrees); null otherwise, and MPI carries all_reduce. Collective. */
  std::shared_ptr<ShmAllReduce> map_shared_memory() {
    static std::atomic<unsigned> segments = 0;
    MPI_Comm host = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host), "new_group");
    int host_size = 0;
    MPI_Comm_size(host, &host_size);
    MPI_Comm_free(&host);
    if (host_size != size()) return nullptr;
    const char* off = std::getenv("UG_ALLREDUCE_SHM");
    const bool wanted = !(off && std::string_view(off) == "0");  // a rank that opts out makes all fall back
    char name[64] = {};
    std::shared_ptr<ShmAllReduce> shm;
    if (rank_ == 0 && wanted) {
      std::snprintf(name, sizeof name, "/ug-allreduce-%d-%u", static_cast<int>(getpid()), segments++);
      shm = ShmAllReduce::map(name, 0, size(), true);
    }
    int created = shm != nullptr;
    check(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm_), "new_group");
    check(MPI_Bcast(&created, 1, MPI_INT, 0, comm_), "new_group");
    if (!created) return nullptr;
    if (rank_ != 0 && wanted) shm = ShmAllReduce::map(name, rank_, size(), false);
    int mapped = shm != nullptr, everywhere = 0;
    check(MPI_Allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_LAND, comm_), "new_group");
    if (rank_ == 0) ShmAllReduce::unlink(name);
    return everywhere ? shm : nullptr;
  }

  std::shared_ptr<MpiWork> make_work(std::string op) {
    return std::make_shared<MpiWork>(std::move(op), world_ranks_, world_rank_, timeout_);
  }

  /** Posts the arrival tokens and queues `run` (the blocking collective) on the group's
   *  thread, or runs it here for start_and_wait; `finish` runs once it is done, on the thread
   *  that waits. `what` (the dtype, count, reduction or root) must be the same on every rank:
   *  the tokens carry a hash of it. A `yielding` run (the segment's, whose waits yield the core)
   *  always goes to the group's thread: on a loaded machine the scheduler gives the core back
   *  sooner to that thread, asleep between collectives, than to the caller (DDP's 2-rank MLP
   *  step under load 4.4-7: a median 251k samples/s run here, 283k there). */
  WorkPtr start(const char* op, const std::string& what, std::vector<Tensor> keep, std::function<int()> run,
                std::function<void()> finish, bool yielding = false) {
    auto work = make_work(op);
    work->keep_ = std::move(keep);
    work->run = std::move(run);
    work->finish_ = std::move(finish);
    work->thread = thread_;
    work->signature = static_cast<int>(std::hash<std::string>{}(std::string(op) + " " + what) & 0x7fffffff);
    const int n = size();
    const int tag = static_cast<int>(sequence_++ & 0x7fff);  // MPI guarantees tags up to 32767
    work->tokens.assign(static_cast<size_t>(n), work->signature);
    work->token_sends.assign(static_cast<size_t>(n - 1), MPI_REQUEST_NULL);
    work->token_recvs.assign(static_cast<size_t>(n - 1), MPI_REQUEST_NULL);
    work->expect_tokens(static_cast<size_t>(n - 1));
    size_t k = 0;
    for (int peer = 0; peer < n; ++peer) {
      if (peer == rank_) continue;
      work->token_peers.push_back(peer);
      check(MPI_Isend(&work->tokens[rank_], 1, MPI_INT, peer, tag, tokens_, &work->token_sends[k]), op);
      check(MPI_Irecv(&work->tokens[peer], 1, MPI_INT, peer, tag, tokens_, &work->token_recvs[k]), op);
      ++k;
    }
    if (!t_waits_at_once || yielding || !thread_->run_now(*work)) thread_->push(work);
    return work;
  }

  MPI_Comm comm_;
  MPI_Comm tokens_ = MPI_COMM_NULL;  // the arrival tokens: never mixed with the data
  std::vector<int> world_ranks_;
  Timeout timeout_;
  int rank_ = -1;
  int world_rank_ = 0;
  uint32_t sequence_ = 0;
  std::shared_ptr<ShmAllReduce> shm_;  // all_reduce's path when the group is on one host
  std::shared_ptr<CommThread> thread_;
};

void check_environment(const char* name, int actual) {
  const char* value = std::getenv(name);
  if (!value || !*value) return;
  if (std::atoi(value) != actual)
    fail<RuntimeError>("[init_process_group] the environment sets ", name, "=", value, " but MPI says ", actual,
                       " (launch with mpirun or `ug launch`, which set both)");
}

}  // namespace

WorkPtr start_and_wait(const std::function<WorkPtr()>& start) {
  WorkPtr work;
  {
    struct Scope {
      Scope() { t_waits_at_once = true; }
      ~Scope() { t_waits_at_once = false; }
    } scope;
    work = start();
  }
  work->wait();
  return work;
}

ProcessGroupPtr mpi_world_group(Timeout timeout) {
  ensure_mpi();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_environment("RANK", rank);
  check_environment("WORLD_SIZE", size);
  MPI_Comm comm = MPI_COMM_NULL;
  { check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "init_process_group"); }
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<size_t>(i)] = i;
  return std::make_shared<MpiProcessGroup>(comm, std::move(ranks), timeout);
}

}  // namespace ug::distributed
