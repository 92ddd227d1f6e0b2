#include "ug/onnx/trace.h"

#include <algorithm>
#include <mutex>

#include "ug/core/error.h"

namespace ug::onnx {

namespace detail {
thread_local constinit Tracer* current_tracer = nullptr;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::string> names;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

TracedOp::TracedOp(const char* name) : name_(name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.names.emplace_back(name);
}

std::vector<std::string> traceable_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names = r.names;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Tracer::Tracer() : previous_(detail::current_tracer) {
  if (previous_) fail<RuntimeError>("[onnx.export] a trace is already running on this thread");
  detail::current_tracer = this;
}

Tracer::~Tracer() { detail::current_tracer = previous_; }

void Tracer::check() const {
  if (!error_.empty()) fail<RuntimeError>("[onnx.export] ", error_);
}

void TraceScope::enter(const TracedOp& op) {
  Tracer* t = detail::current_tracer;
  if (t->busy_) {
    ++t->hidden_;
    return;
  }
  t->busy_ = true;
  t->hidden_ = 0;
  tracer_ = t;
  op_ = &op;
}

void TraceScope::leave() {
  tracer_->busy_ = false;
  // An op that hid the ops it ran and then recorded nothing would leave a hole in the graph.
  if (!recorded_ && tracer_->hidden_ > 0 && tracer_->error_.empty())
    tracer_->error_ = std::string("op '") + op_->name() + "' ran other ops without recording itself";
}

void TraceScope::record(std::vector<Tensor> inputs, std::vector<Tensor> outputs, Attrs attrs) {
  if (!tracer_) return;
  recorded_ = true;
  tracer_->calls_.push_back({op_->name(), std::move(inputs), std::move(outputs), std::move(attrs)});
}

}  // namespace ug::onnx
