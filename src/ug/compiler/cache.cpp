#include "ug/compiler/cache.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <utility>

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

/** The (argument, dim) of each "?" of a pattern. */
std::vector<std::pair<size_t, size_t>> any_positions(const Signature& pattern) {
  std::vector<std::pair<size_t, size_t>> at;
  for (size_t i = 0; i < pattern.parts.size(); ++i)
    if (const std::optional<Described> d = split_shape(pattern.parts[i].second))
      for (size_t k = 0; k < d->sizes.size(); ++k)
        if (d->sizes[k] == "?") at.emplace_back(i, k);
  return at;
}

std::string size_at(const Signature& sig, std::pair<size_t, size_t> at) {
  const std::optional<Described> d = split_shape(sig.parts.at(at.first).second);
  return d && at.second < d->sizes.size() ? d->sizes[at.second] : "";
}

}  // namespace

std::string ProgramCache::ties_broken(const Entry& e, const Signature& sig) {
  const std::vector<std::pair<size_t, size_t>> at = any_positions(e.accepts);
  for (size_t a = 0; a < at.size() && a < e.history.size(); ++a)
    for (size_t b = a + 1; b < at.size() && b < e.history.size(); ++b)
      if (e.history[a] == e.history[b] && (e.read[a] || e.read[b]) && size_at(sig, at[a]) != size_at(sig, at[b]))
        return "argument " + sig.parts[at[a].first].first + " has " + size_at(sig, at[a]) + " in dim " +
               std::to_string(at[a].second) + " and argument " + sig.parts[at[b].first].first + " " +
               size_at(sig, at[b]) + " in dim " + std::to_string(at[b].second) +
               ", which were equal in every trace of the program for any size";
  return "";
}

std::string describe(const Tensor& t) {
  std::ostringstream s;
  s << t.dtype() << t.shape();
  if (t.device().type != DeviceType::CPU) s << " " << t.device();
  return s.str();
}

std::vector<std::pair<size_t, size_t>> sharing(const std::vector<const void*>& storages) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 1; i < storages.size(); ++i)
    for (size_t j = 0; storages[i] && j < i; ++j)
      if (storages[i] == storages[j]) {
        pairs.emplace_back(i, j);
        break;
      }
  return pairs;
}

std::string aliasing(const std::vector<Tensor>& tensors) {
  std::vector<const void*> storages;
  for (const Tensor& t : tensors) storages.push_back(t.defined() ? t.storage().get() : nullptr);
  std::string out;
  for (const auto& [i, j] : sharing(storages)) {
    const Tensor &a = tensors[i], &b = tensors[j];
    std::ostringstream part;
    part << (out.empty() ? "" : " ") << i << "=" << j << (a.storage_offset() >= b.storage_offset() ? "+" : "")
         << a.storage_offset() - b.storage_offset() << " " << Shape(a.strides().begin(), a.strides().end()) << "/"
         << Shape(b.strides().begin(), b.strides().end());
    out += part.str();
  }
  return out.empty() ? "none" : out;
}

ProgramCache::ProgramCache(std::string name, size_t capacity, bool reduce_retracing)
    : name_(std::move(name)), capacity_(capacity), reduce_retracing_(reduce_retracing) {
  if (capacity == 0) fail("[jit] the program cache of '", name_, "' must hold at least one program");
  counts_.capacity = capacity;
}

const ProgramCache::Entry* ProgramCache::match(const Signature& sig) const {
  for (const Entry& e : entries_)
    if (e.traced == sig || (reduce_retracing_ && fits(e.accepts, sig) && ties_broken(e, sig).empty())) return &e;
  return nullptr;
}

const Program* ProgramCache::find(const Signature& sig) {
  if (const Entry* e = match(sig)) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [e](const Entry& x) { return &x == e; });
    if (std::string why = e->program.stale(); !why.empty()) {
      stale_ = std::move(why);
      for (const Tensor& t : e->program.written_constants()) {
        const bool known = std::any_of(lifted_.begin(), lifted_.end(),
                                       [&t](const auto& named) { return &named.second.impl() == &t.impl(); });
        if (!known) lifted_.emplace_back("ug_lifted_" + std::to_string(lifted_.size()), t);
      }
      entries_.erase(it);
    } else {
      entries_.splice(entries_.begin(), entries_, it);
      ++counts_.hits;
      return &entries_.front().program;
    }
  }
  ++counts_.misses;
  return nullptr;
}

const Signature* ProgramCache::traced_for(const Signature& sig) const {
  const Entry* e = match(sig);
  return e ? &e->traced : nullptr;
}

std::string ProgramCache::why_not(const Signature& sig) const {
  if (const Entry* e = match(sig)) return e->program.stale();
  if (reduce_retracing_)
    for (const Entry& e : entries_)
      if (fits(e.accepts, sig)) return ties_broken(e, sig);
  if (entries_.empty())
    return counts_.traces == 0 ? "the first call traces the function" : "the cache is empty (cleared)";
  return difference(entries_.front().accepts, sig);
}

bool ProgramCache::generalize(const Signature& sig, const Program& program, std::string* why) {
  std::string refused;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    std::optional<Signature> accepts = widen(it->accepts, sig);
    if (!accepts) continue;
    // A trace where a constant of the body equals a size that changes (`x * 2` at a batch of 2)
    // read that constant from the shape (GraphBuilder::sized_constant), so it differs from the
    // traces at other sizes: another cached program may still take this trace.
    std::optional<Program> general = Program::generalize(it->program, program, why);
    if (!general) {
      if (refused.empty()) refused = *why;
      continue;
    }
    const std::vector<std::pair<size_t, size_t>> before = any_positions(it->accepts);
    std::vector<std::string> history;
    for (const auto& at : any_positions(*accepts)) {
      const auto old = std::find(before.begin(), before.end(), at);
      std::string sizes;
      if (old != before.end()) sizes = it->history.at(static_cast<size_t>(old - before.begin()));
      else
        for (int k = 0; k < it->folds; ++k) sizes += (k ? " " : "") + size_at(it->traced, at);
      history.push_back(sizes + " " + size_at(sig, at));
    }
    // The k-th "?" is the k-th dim that takes any size, input by input: tensor arguments are
    // the program's inputs in order (an argument of several tensors has no "?": widen refuses).
    std::vector<bool> read;
    const std::vector<std::vector<bool>> reads = general->read_dims();
    for (size_t i = 0; i < reads.size(); ++i)
      for (size_t d = 0; d < reads[i].size(); ++d)
        if (general->any_size_dims()[i][d]) read.push_back(reads[i][d]);
    if (read.size() != history.size()) read.assign(history.size(), true);  // unmatched: taken as read
    *it = Entry{sig, std::move(*accepts), std::move(*general), std::move(history), std::move(read), it->folds + 1};
    entries_.splice(entries_.begin(), entries_, it);
    // The programs of sizes the new one takes (one refused above) would never run again.
    const Entry& general_entry = entries_.front();
    entries_.remove_if([&general_entry](const Entry& e) {
      return &e != &general_entry && fits(general_entry.accepts, e.traced) &&
             ties_broken(general_entry, e.traced).empty();
    });
    return true;
  }
  *why = refused.empty() ? "no cached program differs from this call in sizes only" : refused;
  return false;
}

std::string ProgramCache::insert(const Signature& sig, Program program) {
  const std::string stale = std::exchange(stale_, "");
  std::string reason = stale.empty() ? why_not(sig) : stale;
  if (reason.empty()) return "";
  ++counts_.traces;
  std::string not_general;
  if (stale.empty() && reduce_retracing_ && generalize(sig, program, &not_general)) return "";
  std::string warning;
  if (!stale.empty()) {
    // Worth knowing at once: a tensor changed this way every step retraces every step.
    warning = "[jit] '" + name_ + "' is traced again: " + stale +
              ". A compiled program holds the tensors its function closes over as constants (as jax.jit), "
              "except modules' parameters and buffers and the state it writes; from now on it reads this one at "
              "every call (as torch.compile lifts it to an input). Pass the tensor as an argument, or register it "
              "as a module's buffer, to say so from the start.";
  } else if (counts_.traces > 2) {
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
