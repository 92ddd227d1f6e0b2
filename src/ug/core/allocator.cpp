#include "ug/core/allocator.h"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <iomanip>
#include <optional>
#include <sstream>

#include "ug/core/error.h"

namespace ug {

namespace {
constexpr size_t kAlignment = 64;
constexpr int64_t kMaxCachedBytes = int64_t{2} << 30;  // keep at most 2 GiB of free blocks
// Blocks from 4 MiB up sit on 2 MiB boundaries and ask for transparent huge pages, as
// NumPy's large arrays do: 512 times fewer page faults on first touch and TLB misses after
// (streaming 64 MiB ran at 17 instead of 20-26 GB/s on 4 KiB pages).
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeFrom = size_t{4} << 20;

void* aligned_block(size_t size) {
  const size_t align = size >= kHugeFrom ? kHugePage : kAlignment;
  void* p = std::aligned_alloc(align, (size + align - 1) / align * align);
#ifdef MADV_HUGEPAGE
  if (p && align == kHugePage) madvise(p, (size + align - 1) / align * align, MADV_HUGEPAGE);
#endif
  return p;
}
}  // namespace

size_t CachingCpuAllocator::round_size(size_t nbytes) {
  if (nbytes <= 64) return 64;
  // Four classes per power of two: waste is at most 25%.
  int top = 63 - std::countl_zero(static_cast<uint64_t>(nbytes - 1));
  size_t step = size_t{1} << (top - 2);
  return (nbytes + step - 1) / step * step;
}

int CachingCpuAllocator::size_class(size_t rounded) {
  if (rounded <= 64) return 0;
  int top = 63 - std::countl_zero(static_cast<uint64_t>(rounded - 1));
  size_t step = size_t{1} << (top - 2);
  int quarter = static_cast<int>((rounded - 1) / step) - 4;  // 0..3 within [2^top, 2^(top+1))
  return (top - 5) * 4 + quarter + 1;
}

size_t CachingCpuAllocator::class_size(int cls) {
  if (cls == 0) return 64;
  const int top = (cls - 1) / 4 + 5, quarter = (cls - 1) % 4;
  return (size_t{4} + static_cast<size_t>(quarter) + 1) << (top - 2);
}

std::vector<void*> CachingCpuAllocator::evict_large() {
  std::vector<void*> out;
  auto over = [&] { return large_live_ + large_cached_ > large_high_water_; };
  for (int cls = static_cast<int>(free_lists_.size()) - 1; cls >= size_class(kHugeFrom) && over(); --cls) {
    auto& list = free_lists_[cls];
    if (list.empty()) continue;  // the top classes are sizes no block has (class_size would overflow)
    const auto bytes = static_cast<int64_t>(class_size(cls));
    while (!list.empty() && over()) {
      out.push_back(list.back());
      list.pop_back();
      cached_bytes_ -= bytes;
      large_cached_ -= bytes;
      stats_.reserved -= bytes;
    }
  }
  return out;
}

void* CachingCpuAllocator::allocate(size_t nbytes) {
  size_t size = round_size(nbytes);
  int cls = size_class(size);
  const bool large = size >= kHugeFrom;
  std::vector<void*> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit_ > 0 && stats_.allocated + static_cast<int64_t>(size) > limit_) {
      stats_.num_ooms++;
      // The limit and the bytes in use count blocks, as memory_allocated does: a size class's
      // block holds up to a quarter more than was asked for.
      fail<OutOfMemoryError>("[allocator] out of memory: ", nbytes, " bytes asked for on cpu (a block of ", size, "), ",
                             stats_.allocated, " in use in blocks, would pass the limit of ", limit_,
                             " bytes set by memory set_limit");
    }
    stats_.num_allocs++;
    stats_.allocated += static_cast<int64_t>(size);
    stats_.allocated_total += static_cast<int64_t>(size);
    stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
    if (large) {
      large_live_ += static_cast<int64_t>(size);
      large_high_water_ = std::max(large_high_water_, large_live_);
    }
    auto& list = free_lists_[cls];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      cached_bytes_ -= static_cast<int64_t>(size);
      if (large) large_cached_ -= static_cast<int64_t>(size);
      stats_.cache_hits++;
      return p;
    }
    if (large) evicted = evict_large();
    stats_.reserved += static_cast<int64_t>(size);
    stats_.max_reserved = std::max(stats_.max_reserved, stats_.reserved);
  }
  for (void* p : evicted) std::free(p);
  // aligned_alloc wants a multiple of the alignment; the size class itself may not be one.
  void* p = aligned_block(size);
  if (!p) {
    empty_cache();
    p = aligned_block(size);
  }
  if (!p) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated -= static_cast<int64_t>(size);
    stats_.allocated_total -= static_cast<int64_t>(size);
    stats_.num_allocs--;
    stats_.num_ooms++;
    stats_.reserved -= static_cast<int64_t>(size);
    if (large) large_live_ -= static_cast<int64_t>(size);
    fail<OutOfMemoryError>("[allocator] out of memory: the system refused ", nbytes, " bytes on cpu (",
                           stats_.allocated, " bytes in use)");
  }
  return p;
}

void CachingCpuAllocator::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  size_t size = round_size(nbytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool large = size >= kHugeFrom;
    stats_.num_frees++;
    stats_.allocated -= static_cast<int64_t>(size);
    stats_.freed_total += static_cast<int64_t>(size);
    if (large) large_live_ -= static_cast<int64_t>(size);
    if (cached_bytes_ + static_cast<int64_t>(size) <= kMaxCachedBytes) {
      free_lists_[size_class(size)].push_back(ptr);
      cached_bytes_ += static_cast<int64_t>(size);
      if (large) large_cached_ += static_cast<int64_t>(size);
      return;
    }
    stats_.reserved -= static_cast<int64_t>(size);
  }
  std::free(ptr);
}

MemoryStats CachingCpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingCpuAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.max_allocated = stats_.allocated;
  stats_.max_reserved = stats_.reserved;
}

void CachingCpuAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& list : free_lists_) {
    for (void* p : list) std::free(p);
    list.clear();
  }
  stats_.reserved -= cached_bytes_;
  cached_bytes_ = 0;
  large_cached_ = 0;
}

void CachingCpuAllocator::set_limit(int64_t bytes) {
  if (bytes < 0) fail("[memory] set_limit: the limit must be >= 0 bytes (0: none), got ", bytes);
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes;
}

int64_t CachingCpuAllocator::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}

CachingCpuAllocator::~CachingCpuAllocator() { empty_cache(); }

Allocator& allocator_for(Device device) {
  if (device.type != DeviceType::CPU)
    fail<RuntimeError>("[allocator] device ", device, " is not available in this build");
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static auto* cpu = new CachingCpuAllocator();
  return *cpu;
}

namespace {

/** A byte count as torch's memory_summary writes it: whole units, the largest unit that
 *  keeps the preferred size (the row's peak) at 768 or more of it. */
std::string format_size(int64_t bytes, int64_t preferred) {
  static const char* units[] = {"B  ", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double pref = static_cast<double>(preferred);
  while (u < 4 && pref >= 768.0 * 1024.0) {
    bytes /= 1024;
    pref /= 1024.0;
    ++u;
  }
  std::ostringstream os;
  os << std::setw(6) << bytes << ' ' << units[u];
  return os.str();
}

std::string cell(const std::string& text) {
  std::ostringstream os;
  os << ' ' << std::setw(10) << text << " |";
  return os.str();
}

}  // namespace

std::string memory_summary(Device device) {
  Allocator& a = allocator_for(device);
  const MemoryStats s = a.stats();
  const int64_t limit = a.limit();
  const std::string rule(75, '='), thin(75, '-');
  std::ostringstream os;
  auto line = [&](const std::string& text) { os << '|' << std::left << std::setw(75) << text << std::right << "|\n"; };
  auto bytes_row = [&](const char* name, int64_t cur, int64_t peak, std::optional<int64_t> total,
                       std::optional<int64_t> freed) {
    os << "| " << std::left << std::setw(21) << name << std::right << " |" << cell(format_size(cur, peak))
       << cell(format_size(peak, peak)) << cell(total ? format_size(*total, *total) : "-")
       << cell(freed ? format_size(*freed, *freed) : "-") << '\n';
  };
  auto count_row = [&](const char* name, int64_t cur, std::optional<int64_t> total, std::optional<int64_t> freed) {
    os << "| " << std::left << std::setw(21) << name << std::right << " |" << cell(std::to_string(cur)) << cell("-")
       << cell(total ? std::to_string(*total) : "-") << cell(freed ? std::to_string(*freed) : "-") << '\n';
  };
  os << '|' << rule << "|\n";
  std::string title = "unigrad memory summary, device " + detail::cat(device);
  line(std::string((75 - title.size()) / 2, ' ') + title);
  os << '|' << thin << "|\n";
  line("  Out-of-memory errors: " + std::to_string(s.num_ooms) +
       "    Limit: " + (limit > 0 ? std::to_string(limit) + " bytes" : std::string("none")));
  os << '|' << rule << "|\n";
  os << "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n";
  os << '|' << thin << "|\n";
  bytes_row("Allocated memory", s.allocated, s.max_allocated, s.allocated_total, s.freed_total);
  bytes_row("Reserved memory", s.reserved, s.max_reserved, std::nullopt, std::nullopt);
  bytes_row("Cached free memory", s.reserved - s.allocated, s.max_reserved, std::nullopt, std::nullopt);
  os << '|' << thin << "|\n";
  count_row("Allocations", s.num_allocs - s.num_frees, s.num_allocs, s.num_frees);
  count_row("Served from cache", s.cache_hits, std::nullopt, std::nullopt);
  os << '|' << rule << "|\n";
  return os.str();
}

}  // namespace ug
