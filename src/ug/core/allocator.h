// Device memory allocators. Each device's allocator counts what it hands out, so memory
// statistics exist on every device (PyTorch offers them for CUDA only). The CPU allocator
// caches freed blocks by size class: a fresh 64 MB result does not fault in new pages. Large
// blocks cached never take the footprint of large blocks beyond the most ever in use at
// once: one of a size no longer asked for (a file's bytes after their conversion) goes back
// to the system when a block of another size is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ug/core/device.h"

namespace ug {

struct MemoryStats {
  int64_t allocated = 0;      // bytes in live blocks
  int64_t max_allocated = 0;  // peak of `allocated` since the last reset_peak()
  int64_t reserved = 0;       // bytes held from the system: live blocks plus the cache
  int64_t max_reserved = 0;
  int64_t num_allocs = 0;  // allocation calls since start
  int64_t num_frees = 0;
  int64_t cache_hits = 0;       // allocations served from the cache
  int64_t allocated_total = 0;  // bytes handed out since start
  int64_t freed_total = 0;      // bytes given back since start
  int64_t num_ooms = 0;         // allocations refused (the limit, or the system)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  /** Returns a block of at least nbytes (64-byte aligned); never null (throws RuntimeError). */
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak() = 0;
  /** Returns cached, unused blocks to the system. */
  virtual void empty_cache() = 0;
  /** Caps the bytes in live blocks (0: no cap); an allocation past it throws OutOfMemoryError
   *  after the cache has been given back, instead of the system killing the process. */
  virtual void set_limit(int64_t bytes) = 0;
  virtual int64_t limit() const = 0;
};

/** The CPU allocator: size classes of a quarter power of two, a cache per class (at most
 *  2 GiB). When a large block (4 MiB and up) is not in the cache, cached large blocks are
 *  freed, largest first, until the large blocks held, the new one included, fit within the
 *  high-water mark of large blocks in use. Small blocks stay cached: their churn is per op. */
class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  MemoryStats stats() const override;
  void reset_peak() override;
  void empty_cache() override;
  void set_limit(int64_t bytes) override;
  int64_t limit() const override;
  ~CachingCpuAllocator() override;

  /** The block size an allocation of nbytes really takes. */
  static size_t round_size(size_t nbytes);

 private:
  static int size_class(size_t rounded);
  static size_t class_size(int cls);
  /** Takes cached large blocks out, largest first, until the large blocks held fit under
   *  the high-water mark; the caller frees them outside the lock. */
  std::vector<void*> evict_large();
  mutable std::mutex mu_;
  std::vector<std::vector<void*>> free_lists_ = std::vector<std::vector<void*>>(256);
  int64_t cached_bytes_ = 0;
  // Large blocks: bytes live, bytes cached, the most ever live at once (reset_peak leaves it).
  int64_t large_live_ = 0, large_cached_ = 0, large_high_water_ = 0;
  MemoryStats stats_;
  int64_t limit_ = 0;
};

Allocator& allocator_for(Device device);

namespace detail {
/** The innermost op this thread is running (graph::OpCall sets it), so that an error raised
 *  below the op layer, an allocation over the memory limit, can name it. */
extern thread_local constinit const char* current_op;
}  // namespace detail
/** PyTorch-style multi-line table of the statistics for one device. */
std::string memory_summary(Device device);

}  // namespace ug
