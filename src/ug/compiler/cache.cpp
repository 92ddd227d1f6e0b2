#include "ug/compiler/cache.h"

#include <algorithm>
#include <cctype>
#include <optional>
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

/** A tensor's description split at its shape: "float32", {"64", "784"}, " cuda:0". */
struct Described {
  std::string before, after;
  std::vector<std::string> sizes;
};

std::optional<Described> split_shape(const std::string& what) {
  if (what.starts_with("static ")) return std::nullopt;
  const size_t open = what.find('['), close = what.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  Described d{what.substr(0, open), what.substr(close + 1), {}};
  std::istringstream sizes(what.substr(open + 1, close - open - 1));
  for (std::string size; std::getline(sizes, size, ',');) {
    if (size.starts_with(' ')) size.erase(0, 1);
    if (size.empty() || !(size == "?" || std::all_of(size.begin(), size.end(), [](char c) { return std::isdigit(c); })))
      return std::nullopt;
    d.sizes.push_back(size);
  }
  return d;
}

/** The pattern `accepts` widened to take `sig` too, where the two differ in tensor sizes only
 *  ("float32[64, 784]" and "float32[10, 784]" give "float32[?, 784]"); nullopt otherwise. */
std::optional<Signature> widen(const Signature& accepts, const Signature& sig) {
  if (accepts.parts.size() != sig.parts.size()) return std::nullopt;
  Signature out;
  for (size_t i = 0; i < sig.parts.size(); ++i) {
    const auto& [label, pattern] = accepts.parts[i];
    if (label != sig.parts[i].first) return std::nullopt;
    if (pattern == sig.parts[i].second) {
      out.parts.emplace_back(label, pattern);
      continue;
    }
    const std::optional<Described> x = split_shape(pattern), y = split_shape(sig.parts[i].second);
    if (!x || !y || x->before != y->before || x->after != y->after || x->sizes.size() != y->sizes.size())
      return std::nullopt;
    std::string widened = x->before + "[";
    for (size_t d = 0; d < x->sizes.size(); ++d)
      widened += (d ? ", " : "") + (x->sizes[d] == y->sizes[d] ? x->sizes[d] : std::string("?"));
    out.parts.emplace_back(label, widened + "]" + x->after);
  }
  return out;
}

/** Whether a signature's description fits a pattern's, where a size "?" stands for any size. */
bool fits(const std::string& pattern, const std::string& what) {
  if (pattern == what) return true;
  const std::optional<Described> x = split_shape(pattern), y = split_shape(what);
  if (!x || !y || x->before != y->before || x->after != y->after || x->sizes.size() != y->sizes.size()) return false;
  for (size_t d = 0; d < x->sizes.size(); ++d)
    if (x->sizes[d] != "?" && x->sizes[d] != y->sizes[d]) return false;
  return true;
}

bool fits(const Signature& pattern, const Signature& sig) {
  if (pattern.parts.size() != sig.parts.size()) return false;
  for (size_t i = 0; i < sig.parts.size(); ++i)
    if (pattern.parts[i].first != sig.parts[i].first || !fits(pattern.parts[i].second, sig.parts[i].second))
      return false;
  return true;
}

}  // namespace

std::string describe(const Tensor& t) {
  std::ostringstream s;
  s << t.dtype() << t.shape();
  if (t.device().type != DeviceType::CPU) s << " " << t.device();
  return s.str();
}

ProgramCache::ProgramCache(std::string name, size_t capacity, bool reduce_retracing)
    : name_(std::move(name)), capacity_(capacity), reduce_retracing_(reduce_retracing) {
  if (capacity == 0) fail("[jit] the program cache of '", name_, "' must hold at least one program");
  counts_.capacity = capacity;
}

const ProgramCache::Entry* ProgramCache::match(const Signature& sig) const {
  for (const Entry& e : entries_)
    if (e.traced == sig || (reduce_retracing_ && fits(e.accepts, sig))) return &e;
  return nullptr;
}

const Program* ProgramCache::find(const Signature& sig) {
  if (const Entry* e = match(sig)) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [e](const Entry& x) { return &x == e; });
    entries_.splice(entries_.begin(), entries_, it);
    ++counts_.hits;
    return &entries_.front().program;
  }
  ++counts_.misses;
  return nullptr;
}

const Signature* ProgramCache::traced_for(const Signature& sig) const {
  const Entry* e = match(sig);
  return e ? &e->traced : nullptr;
}

std::string ProgramCache::why_not(const Signature& sig) const {
  if (match(sig)) return "";
  if (entries_.empty())
    return counts_.traces == 0 ? "the first call traces the function" : "the cache is empty (cleared)";
  return difference(entries_.front().accepts, sig);
}

bool ProgramCache::generalize(const Signature& sig, const Program& program, std::string* why) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    std::optional<Signature> accepts = widen(it->accepts, sig);
    if (!accepts) continue;
    std::optional<Program> general = Program::generalize(it->program, program, why);
    if (!general) return false;
    *it = Entry{sig, std::move(*accepts), std::move(*general)};
    entries_.splice(entries_.begin(), entries_, it);
    return true;
  }
  *why = "no cached program differs from this call in sizes only";
  return false;
}

std::string ProgramCache::insert(const Signature& sig, Program program) {
  std::string reason = why_not(sig);
  if (reason.empty()) return "";
  ++counts_.traces;
  std::string not_general;
  if (reduce_retracing_ && generalize(sig, program, &not_general)) return "";
  std::string warning;
  if (counts_.traces > 2) {
    warning = "[jit] '" + name_ + "' is traced for the " + ordinal(counts_.traces) + " time: " + reason +
              ". Each new shape, dtype, device or static value compiles a new program; keep them fixed, or pass "
              "changing numbers as tensors.";
    if (reduce_retracing_)
      warning += " reduce_retracing could not make one program for both sizes: " + not_general + ".";
    if (entries_.size() == capacity_)
      warning += " The cache holds " + std::to_string(capacity_) + " programs, so the least recently used is dropped.";
  }
  if (entries_.size() == capacity_) entries_.pop_back();
  entries_.push_front(Entry{sig, sig, std::move(program)});
  return warning;
}

CacheInfo ProgramCache::info() const {
  CacheInfo info = counts_;
  info.size = entries_.size();
  return info;
}

void ProgramCache::clear() { entries_.clear(); }

}  // namespace ug::compiler
