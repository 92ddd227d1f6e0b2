#include "ug/compiler/cache.h"

#include <sstream>

#include "ug/core/error.h"

namespace ug::compiler {

namespace {

std::string ordinal(int64_t n) {
  const int64_t tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

std::string labels(const Signature& sig) {
  std::string s;
  for (const auto& [label, what] : sig.parts) s += (s.empty() ? "" : ", ") + label;
  return "(" + s + ")";
}

/** What differs from `before` in `now`: the first argument that changed, from what to what. */
std::string difference(const Signature& before, const Signature& now) {
  if (before.parts.size() != now.parts.size())
    return "the arguments changed from " + labels(before) + " to " + labels(now);
  for (size_t i = 0; i < now.parts.size(); ++i) {
    const auto& [label, what] = now.parts[i];
    if (label != before.parts[i].first) return "the arguments changed from " + labels(before) + " to " + labels(now);
    if (what != before.parts[i].second)
      return "argument " + label + " changed from " + before.parts[i].second + " to " + what;
  }
  return "";
}

}  // namespace

std::string describe(const Tensor& t) {
  std::ostringstream s;
  s << t.dtype() << t.shape();
  if (t.device().type != DeviceType::CPU) s << " " << t.device();
  return s.str();
}

ProgramCache::ProgramCache(std::string name, size_t capacity) : name_(std::move(name)), capacity_(capacity) {
  if (capacity == 0) fail("[jit] the program cache of '", name_, "' must hold at least one program");
  counts_.capacity = capacity;
}

const Program* ProgramCache::find(const Signature& sig) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == sig) {
      entries_.splice(entries_.begin(), entries_, it);
      ++counts_.hits;
      return &entries_.front().second;
    }
  }
  ++counts_.misses;
  return nullptr;
}

std::string ProgramCache::why_not(const Signature& sig) const {
  for (const auto& [cached, program] : entries_)
    if (cached == sig) return "";
  if (entries_.empty())
    return counts_.traces == 0 ? "the first call traces the function" : "the cache is empty (cleared)";
  return difference(entries_.front().first, sig);
}

std::string ProgramCache::insert(const Signature& sig, Program program) {
  std::string reason = why_not(sig);
  if (reason.empty()) return "";
  ++counts_.traces;
  std::string warning;
  if (counts_.traces > 2) {
    warning = "[jit] '" + name_ + "' is traced for the " + ordinal(counts_.traces) + " time: " + reason +
              ". Each new shape, dtype, device or static value compiles a new program; keep them fixed, or pass "
              "changing numbers as tensors.";
    if (entries_.size() == capacity_)
      warning += " The cache holds " + std::to_string(capacity_) + " programs, so the least recently used is dropped.";
  }
  if (entries_.size() == capacity_) entries_.pop_back();
  entries_.emplace_front(sig, std::move(program));
  return warning;
}

CacheInfo ProgramCache::info() const {
  CacheInfo info = counts_;
  info.size = entries_.size();
  return info;
}

void ProgramCache::clear() { entries_.clear(); }

}  // namespace ug::compiler
