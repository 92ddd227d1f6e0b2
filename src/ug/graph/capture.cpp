#include "ug/graph/capture.h"

#include <algorithm>
#include <mutex>
#include <string_view>

#include "ug/core/batching.h"
#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_def.h"

namespace ug::graph {

namespace detail {
thread_local constinit Capture* current_capture = nullptr;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::string> names;
  std::vector<Autocast> policies;  // beside names
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

OpDef::OpDef(const char* name, Autocast autocast) : name_(name), autocast_(autocast) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.names.emplace_back(name);
  r.policies.push_back(autocast);
}

Autocast autocast_policy(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (size_t i = 0; i < r.names.size(); ++i)
    if (r.names[i] == name && r.policies[i] != Autocast::None) return r.policies[i];
  return Autocast::None;
}

std::vector<std::string> registered_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names = r.names;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

uint64_t content_hash(const Tensor& t) {
  if (!t.defined() || t.device().type != DeviceType::CPU || batching::level(t) || t.numel() == 0) return 0;
  int64_t last = 0;  // the farthest element from the first, in elements
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) < 0) return 0;
    last += (t.size(d) - 1) * t.stride(d);
  }
  const size_t bytes = static_cast<size_t>(last + 1) * t.element_size();
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(t.raw_data()), bytes)) | 1;
}

bool CapturedCall::writes_in_place(size_t i) const {
  if (!op.empty() && op.back() == '_') return true;
  for (const Tensor& in : inputs)
    if (in.defined() && in.impl_ref().get() == outputs.at(i).impl_ref().get()) return true;
  return false;
}

namespace {

/** Calls each recorded call of `calls` (and the calls inside them) with fn. */
void each_call(std::vector<CapturedCall>& calls, const std::function<void(CapturedCall&)>& fn) {
  for (CapturedCall& call : calls) {
    fn(call);
    each_call(call.inner, fn);
  }
}

}  // namespace

bool Capture::relayout(const Tensor& t, const Tensor& old, const Tensor& view, uint32_t version) {
  auto each = [&](const std::function<void(CapturedCall&)>& fn) {
    each_call(calls_, fn);
    for (Open& open : open_) each_call(open.inner, fn);
  };
  bool made = false;
  each([&](CapturedCall& call) {
    for (const Tensor& out : call.outputs) made = made || out.impl_ref() == t.impl_ref();
  });
  if (!made) return false;
  each([&](CapturedCall& call) {
    for (Tensor& in : call.inputs) {
      if (in.impl_ref() == t.impl_ref()) in = old;
      else if (in.impl_ref() == view.impl_ref()) in = t;
    }
    for (size_t i = 0; i < call.outputs.size(); ++i) {
      Tensor& out = call.outputs[i];
      if (out.impl_ref() == t.impl_ref()) {
        out = old;
      } else if (out.impl_ref() == view.impl_ref()) {
        out = t;
        if (i < call.output_versions.size()) call.output_versions[i] = version;
      }
    }
  });
  return true;
}

Capture::Capture(const char* who)
    : who_(who),
      grad_sets_at_start_(GradMode::sets_made()),
      vmaps_outside_(batching::open_vmaps().size()),
      previous_(detail::current_capture) {
  if (previous_) fail<RuntimeError>("[", who, "] a capture (", previous_->who_, ") is already running on this thread");
  detail::current_capture = this;
}

Capture::~Capture() { detail::current_capture = previous_; }

std::vector<const CapturedCall*> Capture::open_parts() const {
  std::vector<const CapturedCall*> parts;
  for (const Open& open : open_)
    for (const CapturedCall& call : open.inner) parts.push_back(&call);
  return parts;
}

void Capture::check() const {
  if (!error_.empty()) fail<RuntimeError>("[", who_, "] ", error_);
}

}  // namespace ug::graph
