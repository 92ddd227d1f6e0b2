#include "ug/graph/op_call.h"

namespace ug::graph {

void OpCall::enter() {
  Capture* c = detail::current_capture;
  if (c->busy_) {
    ++c->hidden_;
    return;
  }
  c->busy_ = true;
  c->hidden_ = 0;
  capture_ = c;
}

void OpCall::leave() {
  capture_->busy_ = false;
  // An op that hid the ops it ran and then recorded nothing would leave a hole in the graph.
  if (!recorded_ && capture_->hidden_ > 0 && capture_->error_.empty())
    capture_->error_ = std::string("op '") + def_.name() + "' ran other ops without recording itself";
}

void OpCall::record_capture(Inputs inputs, Outputs outputs) {
  recorded_ = true;
  CapturedCall call{def_.name(), {}, {}, std::move(attrs_), {}, {}, std::move(replay_)};
  for (const Tensor* t : inputs) {
    call.inputs.push_back(t ? *t : Tensor());
    call.input_versions.push_back(t && t->defined() ? t->version() : 0);
  }
  for (const Tensor* t : outputs) {
    call.outputs.push_back(*t);
    call.output_versions.push_back(t->defined() ? t->version() : 0);
  }
  capture_->calls_.push_back(std::move(call));
}

}  // namespace ug::graph
