// Each collective posts MPI's nonblocking call plus an "arrived" token to every other rank
// on a second communicator. Waiting polls both; at the deadline, the tokens that have not
// come name the ranks that never entered the collective.
#include "ug/distributed/mpi_process_group.h"

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

#include "ug/ops/binary.h"

namespace ug::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// MPI is initialised with MPI_THREAD_MULTIPLE where the library provides it; otherwise the
// calls are serialised here, so any thread may wait on a Work.
std::mutex g_mpi_mutex;
bool g_serialise = true;
// A timed-out collective leaves requests MPI cannot cancel: MPI_Finalize would wait on them.
std::atomic<bool> g_timed_out = false;

struct MpiLock {
  std::unique_lock<std::mutex> lock;
  MpiLock() : lock(g_mpi_mutex, std::defer_lock) {
    if (g_serialise) lock.lock();
  }
};

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
  g_serialise = provided < MPI_THREAD_MULTIPLE;
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

int count_of(int64_t n, std::string_view op) {
  if (n > INT_MAX) fail("[", op, "] ", n, " elements is more than one MPI call carries (", INT_MAX, ")");
  return static_cast<int>(n);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

class MpiWork final : public Work {
 public:
  MpiWork(std::string op, std::vector<int> world_ranks, int world_rank, Timeout timeout)
      : op_(std::move(op)),
        world_ranks_(std::move(world_ranks)),
        world_rank_(world_rank),
        timeout_(timeout),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout)) {}
  ~MpiWork() override {
    if (failed_) {
      new std::vector<Tensor>(std::move(keep_));  // MPI may still write into them: never freed
      return;
    }
    try {
      wait();
    } catch (...) {  // a destructor cannot raise; a later collective reports the broken group
    }
  }

  void wait() override {
    while (!is_completed()) {
      if (Clock::now() > deadline_) fail_timeout();
      std::this_thread::yield();
    }
  }

  bool is_completed() override {
    if (done_) return true;
    if (failed_) fail_timeout();
    {
      MpiLock lock;
      if (!test_all()) return false;
    }
    done_ = true;
    if (finish_) finish_();
    finish_ = nullptr;
    keep_.clear();
    return true;
  }

  std::vector<MPI_Request> requests;  // the operation's, then the arrival tokens'
  std::vector<int> token_peers;       // group rank of each arrival receive, in request order
  size_t n_tokens_sent = 0;
  std::vector<int> tokens;        // the buffers of the arrival messages
  std::vector<Tensor> keep_;      // buffers MPI reads or writes until completion
  std::function<void()> finish_;  // copies results out once every request is done
  std::string peer_hint;          // send/recv: the peer, named in a timeout

 private:
  bool test_all() {
    bool all = true;
    for (MPI_Request& r : requests) {
      if (r == MPI_REQUEST_NULL) continue;
      int flag = 0;
      check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), op_);
      all &= flag != 0;
    }
    return all;
  }

  [[noreturn]] void fail_timeout() {
    if (!failed_) {
      failed_ = true;
      g_timed_out = true;
    }
    std::vector<int> missing;
    size_t first_token = requests.size() - token_peers.size();
    for (size_t i = 0; i < token_peers.size(); ++i)
      if (requests[first_token + i] != MPI_REQUEST_NULL) missing.push_back(world_ranks_[token_peers[i]]);
    std::ostringstream os;
    os << "[" << op_ << "] timed out after " << timeout_.count() << " s on rank " << world_rank_ << " (group of ranks "
       << rank_list(world_ranks_) << "): ";
    if (!peer_hint.empty()) os << peer_hint << " did not arrive";
    else if (!missing.empty())
      os << "rank" << (missing.size() > 1 ? "s " : " ") << rank_list(missing) << " did not arrive";
    else
      os << "every rank arrived but the collective did not finish (do all ranks call the same collectives, "
            "in the same order, with the same shapes?)";
    fail<RuntimeError>(os.str());
  }

  std::string op_;
  std::vector<int> world_ranks_;
  int world_rank_;
  Timeout timeout_;
  Clock::time_point deadline_;
  bool done_ = false;
  bool failed_ = false;
};

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
  }
  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || comm_ == MPI_COMM_NULL) return;
    MpiLock lock;
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
    return start(
        "all_reduce", {tensor, buf},
        [&](MPI_Request* r) {
          return MPI_Iallreduce(MPI_IN_PLACE, buf.raw_data(), count, type, mpi_op(op, buf.dtype()), comm_, r);
        },
        [tensor, buf, op, n = size()]() mutable {
          if (op == ReduceOp::Avg) buf.div_(n);
          if (!buf.shares_storage(tensor)) tensor.copy_(buf);
        });
  }

  WorkPtr broadcast(Tensor tensor, int src) override {
    member("broadcast");
    check_rank(src, "broadcast", "src");
    Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "broadcast");
    return start(
        "broadcast", {tensor, buf},
        [&](MPI_Request* r) { return MPI_Ibcast(buf.raw_data(), count, MPI_BYTE, src, comm_, r); },
        [tensor, buf]() mutable {
          if (!buf.shares_storage(tensor)) tensor.copy_(buf);
        });
  }

  WorkPtr all_gather(std::vector<Tensor> outputs, Tensor input) override {
    member("all_gather");
    if (static_cast<int>(outputs.size()) != size())
      fail("[all_gather] needs one output tensor per rank (", size(), "), got ", outputs.size());
    for (const Tensor& o : outputs)
      if (!(o.shape() == input.shape()) || o.dtype() != input.dtype())
        fail("[all_gather] output of shape ", o.shape(), " and dtype ", o.dtype(), " for an input of shape ",
             input.shape(), " and dtype ", input.dtype());
    Tensor in = input.contiguous();
    Tensor buf = empty({size(), input.numel()}, {.dtype = input.dtype()});
    int count = count_of(static_cast<int64_t>(in.nbytes()), "all_gather");
    std::vector<Tensor> keep = outputs;
    keep.push_back(in);
    keep.push_back(buf);
    return start(
        "all_gather", keep,
        [&](MPI_Request* r) {
          return MPI_Iallgather(in.raw_data(), count, MPI_BYTE, buf.raw_data(), count, MPI_BYTE, comm_, r);
        },
        [outputs, buf]() mutable {
          for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_(buf.select(0, i).view(outputs[i].shape()));
        });
  }

  WorkPtr reduce_scatter(Tensor output, std::vector<Tensor> inputs, ReduceOp op) override {
    member("reduce_scatter");
    if (static_cast<int>(inputs.size()) != size())
      fail("[reduce_scatter] needs one input tensor per rank (", size(), "), got ", inputs.size());
    for (const Tensor& t : inputs)
      if (!(t.shape() == output.shape()) || t.dtype() != output.dtype())
        fail("[reduce_scatter] input of shape ", t.shape(), " and dtype ", t.dtype(), " for an output of shape ",
             output.shape(), " and dtype ", output.dtype());
    if (op == ReduceOp::Avg && !output.is_floating_point())
      fail<TypeError>("[reduce_scatter] ReduceOp.AVG needs a floating dtype, got ", output.dtype());
    DType wire = wire_dtype(output.dtype());
    Tensor send_buf = empty({size(), output.numel()}, {.dtype = wire});
    for (int i = 0; i < size(); ++i) send_buf.select(0, i).copy_(inputs[i].reshape({-1}));
    Tensor recv_buf = empty({output.numel()}, {.dtype = wire});
    MPI_Datatype type = mpi_type(wire, "reduce_scatter");
    int count = count_of(output.numel(), "reduce_scatter");
    return start(
        "reduce_scatter", {output, send_buf, recv_buf},
        [&](MPI_Request* r) {
          return MPI_Ireduce_scatter_block(send_buf.raw_data(), recv_buf.raw_data(), count, type, mpi_op(op, wire),
                                           comm_, r);
        },
        [output, recv_buf, op, n = size()]() mutable {
          if (op == ReduceOp::Avg) recv_buf.div_(n);
          output.copy_(recv_buf.view(output.shape()));
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
    MpiLock lock;
    check(MPI_Isend(buf.raw_data(), count, MPI_BYTE, dst, tag, comm_, work->requests.data()), "send");
    return work;
  }

  WorkPtr recv(Tensor tensor, int src, int tag) override {
    member("recv");
    check_rank(src, "recv", "src");
    Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
    int count = count_of(static_cast<int64_t>(buf.nbytes()), "recv");
    auto work = make_work("recv");
    work->peer_hint = "rank " + std::to_string(world_ranks_[src]) + " (the sender)";
    work->keep_ = {tensor, buf};
    work->finish_ = [tensor, buf]() mutable {
      if (!buf.shares_storage(tensor)) tensor.copy_(buf);
    };
    work->requests.resize(1);
    MpiLock lock;
    check(MPI_Irecv(buf.raw_data(), count, MPI_BYTE, src, tag, comm_, work->requests.data()), "recv");
    return work;
  }

  WorkPtr barrier() override {
    member("barrier");
    return start(
        "barrier", {}, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); }, nullptr);
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
    {
      MpiLock lock;
      check(MPI_Comm_split(comm_, key >= 0 ? 0 : MPI_UNDEFINED, key, &comm), "new_group");
    }
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

  std::shared_ptr<MpiWork> make_work(std::string op) {
    return std::make_shared<MpiWork>(std::move(op), world_ranks_, world_rank_, timeout_);
  }

  /** Posts the arrival tokens, then the collective `post`; `finish` runs once all are done. */
  template <class Post>
  WorkPtr start(const char* op, std::vector<Tensor> keep, Post post, std::function<void()> finish) {
    auto work = make_work(op);
    work->keep_ = std::move(keep);
    work->finish_ = std::move(finish);
    const int n = size();
    const int tag = static_cast<int>(sequence_++ & 0x7fff);  // MPI guarantees tags up to 32767
    work->requests.resize(1 + 2 * static_cast<size_t>(n - 1), MPI_REQUEST_NULL);
    work->tokens.assign(static_cast<size_t>(n), tag);
    MpiLock lock;
    size_t r = 1;
    for (int peer = 0; peer < n; ++peer)
      if (peer != rank_)
        check(MPI_Isend(&work->tokens[rank_], 1, MPI_INT, peer, tag, tokens_, &work->requests[r++]), op);
    for (int peer = 0; peer < n; ++peer) {
      if (peer == rank_) continue;
      work->token_peers.push_back(peer);
      check(MPI_Irecv(&work->tokens[peer], 1, MPI_INT, peer, tag, tokens_, &work->requests[r++]), op);
    }
    check(post(&work->requests[0]), op);
    return work;
  }

  MPI_Comm comm_;
  MPI_Comm tokens_ = MPI_COMM_NULL;  // the arrival tokens: never mixed with the data
  std::vector<int> world_ranks_;
  Timeout timeout_;
  int rank_ = -1;
  int world_rank_ = 0;
  uint32_t sequence_ = 0;
};

void check_environment(const char* name, int actual) {
  const char* value = std::getenv(name);
  if (!value || !*value) return;
  if (std::atoi(value) != actual)
    fail<RuntimeError>("[init_process_group] the environment sets ", name, "=", value, " but MPI says ", actual,
                       " (launch with mpirun or `ug launch`, which set both)");
}

}  // namespace

ProcessGroupPtr mpi_world_group(Timeout timeout) {
  ensure_mpi();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_environment("RANK", rank);
  check_environment("WORLD_SIZE", size);
  MPI_Comm comm = MPI_COMM_NULL;
  {
    MpiLock lock;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "init_process_group");
  }
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<size_t>(i)] = i;
  return std::make_shared<MpiProcessGroup>(comm, std::move(ranks), timeout);
}

}  // namespace ug::distributed
