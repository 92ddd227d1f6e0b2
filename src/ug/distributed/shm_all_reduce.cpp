#include "ug/distributed/shm_all_reduce.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <thread>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace ug::distributed {

namespace {

using Clock = std::chrono::steady_clock;
using Counter = std::atomic<uint64_t>;
static_assert(Counter::is_always_lock_free, "the phase counters live in memory two processes share");

// Each rank's phase counter on a line of its own (two lines: the neighbour prefetcher pairs them).
constexpr size_t kCounterStride = 128;
// The slot each rank copies its buffer into: larger buffers go through in pieces of this size.
constexpr size_t kSlotBytes = size_t{1} << 20;

size_t header_bytes(int size) { return (static_cast<size_t>(size) * kCounterStride + 4095) / 4096 * 4096; }

// Elements of a piece are reduced in blocks of this many (a multiple of 16: every share starts on
// a cache line).
constexpr int64_t kBlock = 512;

/** Whether copies into the slots bypass this core's cache, by what was measured on each kind of
 *  CPU. On AMD's Zen 4 they do: a plain store to a line that another core read last must first
 *  take the line back from that core, one at a time, 3-10x slower than sending it to memory. On
 *  Intel's (an Emerald Rapids Xeon) plain stores win: the other core reads the lines from the
 *  shared L3 rather than from memory (ug / MPI_Allreduce at 0.25 and 1 MiB went from 0.72-0.75
 *  and 0.82-0.84 to 0.84-0.88 and 1.00). */
bool stream_stores() {
#if defined(__SSE2__)
  static const bool amd = __builtin_cpu_is("amd");
  return amd;
#else
  return false;
#endif
}

/** dst[0, n) = src[0, n) for the other ranks to read (dst 16-byte aligned): with stores that
 *  bypass this core's cache where stream_stores(). */
template <class T> void stream_copy(T* dst, const T* src, int64_t n) {
  size_t bytes = static_cast<size_t>(n) * sizeof(T);
  if (!stream_stores()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if defined(__SSE2__)
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = reinterpret_cast<const __m128i*>(src);
  for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
  std::memcpy(reinterpret_cast<char*>(dst) + bytes / 16 * 16, reinterpret_cast<const char*>(src) + bytes / 16 * 16,
              bytes % 16);
#else
  std::memcpy(dst, src, bytes);
#endif
}

/** dst[0, n) = src[0, n), src another rank's slot (in memory, not in this core's cache):
 *  prefetched ahead of the copy. */
template <class T> void copy_in(T* dst, const T* src, int64_t n) {
  constexpr int64_t kStep = 1024 / sizeof(T), kLine = 64 / sizeof(T);
  for (int64_t i = 0; i < n; i += kStep) {
    for (int64_t j = i + kStep; j < std::min(n, i + 2 * kStep); j += kLine) __builtin_prefetch(src + j);
    std::memcpy(dst + i, src + i, static_cast<size_t>(std::min(kStep, n - i)) * sizeof(T));
  }
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

std::unique_ptr<ShmAllReduce> ShmAllReduce::map(const std::string& name, int rank, int size, bool create) {
  const size_t bytes = header_bytes(size) + static_cast<size_t>(size) * kSlotBytes;
  int fd = create ? shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600) : shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return nullptr;
  void* base = MAP_FAILED;
  // posix_fallocate, not ftruncate: a full /dev/shm fails here rather than with SIGBUS at first use.
  if (!create || posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0)
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    if (create) shm_unlink(name.c_str());
    return nullptr;
  }
  if (create)
    for (int r = 0; r < size; ++r) new (static_cast<char*>(base) + static_cast<size_t>(r) * kCounterStride) Counter(0);
  return std::unique_ptr<ShmAllReduce>(new ShmAllReduce(base, bytes, rank, size));
}

void ShmAllReduce::unlink(const std::string& name) { shm_unlink(name.c_str()); }

ShmAllReduce::~ShmAllReduce() { munmap(base_, bytes_); }

bool ShmAllReduce::supports(DType dtype, ReduceOp op) {
  return (dtype == DType::Float32 || dtype == DType::Float64) && (op == ReduceOp::Sum || op == ReduceOp::Avg);
}

char* ShmAllReduce::slot(int r) const {
  return static_cast<char*>(base_) + header_bytes(size_) + static_cast<size_t>(r) * kSlotBytes;
}

void ShmAllReduce::publish(uint64_t step) {
#if defined(__SSE2__)
  _mm_sfence();  // the streaming stores are not ordered by the release store below
#endif
  auto* counter = reinterpret_cast<Counter*>(static_cast<char*>(base_) + static_cast<size_t>(rank_) * kCounterStride);
  counter->store(step, std::memory_order_release);
  step_ = step;
}

/** Until every rank has finished phase `step`: spins first (the ranks of a collective arrive
 *  together), then yields the core (more ranks than cores). */
bool ShmAllReduce::wait_all(uint64_t step, Clock::time_point deadline) const {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const auto* counter =
        reinterpret_cast<const Counter*>(static_cast<const char*>(base_) + static_cast<size_t>(q) * kCounterStride);
    for (uint32_t spins = 0; counter->load(std::memory_order_acquire) < step; ++spins) {
      if (spins < 128) {  // about 8 µs here
        cpu_relax();
        continue;
      }
      if (spins % 64 == 0 && Clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
  return true;
}

template <class T> bool ShmAllReduce::run_typed(T* data, int64_t count, bool mean, Clock::time_point deadline) {
  const int64_t piece = static_cast<int64_t>(kSlotBytes / sizeof(T));
  const T n = static_cast<T>(size_);
  // Dividing by a power of two is multiplying by its exact inverse, a third of the time here.
  const T inverse = 1 / n;
  const bool exact_inverse = (size_ & (size_ - 1)) == 0;
  for (int64_t offset = 0; offset < count; offset += piece) {
    const int64_t m = std::min(piece, count - offset);
    // Rank q reduces elements [lo(q), lo(q + 1)) of the piece: whole blocks each.
    const int64_t share = ((m + size_ - 1) / size_ + kBlock - 1) / kBlock * kBlock;
    auto lo = [&](int q) { return std::min(m, share * q); };
    T* in = data + offset;
    T* mine = reinterpret_cast<T*>(slot(rank_));
    // 1. My slot is free once every rank has copied out the last piece. The others read all of
    //    it but my share.
    const uint64_t base = step_;
    if (!wait_all(base, deadline)) return false;
    stream_copy(mine, in, lo(rank_));
    stream_copy(mine + lo(rank_ + 1), in + lo(rank_ + 1), m - lo(rank_ + 1));
    publish(base + 1);
    if (!wait_all(base + 1, deadline)) return false;
    // 2. My share, summed in rank order (one rank computes each element: the same bits on every
    //    rank), a block at a time; my own values come from `in`, which takes the result too.
    T block[kBlock];
    auto source = [&](int q) { return q == rank_ ? in : reinterpret_cast<const T*>(slot(q)); };
    for (int64_t a = lo(rank_), b = lo(rank_ + 1); a < b; a += kBlock) {
      const int64_t k = std::min(kBlock, b - a);
      const T* first = source(0) + a;
      const T* second = source(1) + a;
      for (int64_t i = 0; i < k; ++i) block[i] = first[i] + second[i];
      for (int q = 2; q < size_; ++q) {
        const T* src = source(q) + a;
        for (int64_t i = 0; i < k; ++i) block[i] += src[i];
      }
      if (mean && exact_inverse)
        for (int64_t i = 0; i < k; ++i) block[i] *= inverse;
      else if (mean)
        for (int64_t i = 0; i < k; ++i) block[i] /= n;
      stream_copy(mine + a, block, k);
      std::copy(block, block + k, in + a);
    }
    publish(base + 2);
    if (!wait_all(base + 2, deadline)) return false;
    // 3. The other shares out of their owners' slots.
    for (int q = 0; q < size_; ++q)
      if (q != rank_) copy_in(in + lo(q), reinterpret_cast<const T*>(slot(q)) + lo(q), lo(q + 1) - lo(q));
    publish(base + 3);
  }
  return true;
}

bool ShmAllReduce::run(void* data, int64_t count, DType dtype, ReduceOp op, Clock::time_point deadline) {
  const bool mean = op == ReduceOp::Avg;
  if (dtype == DType::Float64) return run_typed(static_cast<double*>(data), count, mean, deadline);
  return run_typed(static_cast<float*>(data), count, mean, deadline);
}

}  // namespace ug::distributed
