#include "ug/graph/op_call.h"

#include <exception>
#include <iterator>

#include "ug/graph/grad_mode.h"

namespace ug::graph {

void OpCall::enter() {
  Capture* c = detail::current_capture;
  if (!c->open_.empty()) c->open_.back().ran_ops = true;
  depth_ = c->open_.size();
  c->open_.emplace_back();
  capture_ = c;
}

void OpCall::leave() {
  Capture::Open& me = capture_->open_.back();
  if (!recorded_) {
    // An op that ran other ops and then recorded nothing would leave a hole in the graph; one
    // inside another op leaves its calls to the op around it. One left by an exception (an op
    // without a batching rule, after which vmap maps example by example) made no value.
    if (depth_ == 0 && me.ran_ops && capture_->error_.empty() && std::uncaught_exceptions() == 0)
      capture_->error_ = std::string("op '") + def_.name() + "' ran other ops without recording itself";
    if (depth_ > 0) {
      std::vector<CapturedCall>& parent = capture_->open_[depth_ - 1].inner;
      parent.insert(parent.end(), std::make_move_iterator(me.inner.begin()), std::make_move_iterator(me.inner.end()));
    }
  } else if (!me.inner.empty()) {  // calls made after finish(): still inside this one
    std::vector<CapturedCall>& inner = capture_->list_at(depth_)[me.recorded_at].inner;
    inner.insert(inner.end(), std::make_move_iterator(me.inner.begin()), std::make_move_iterator(me.inner.end()));
  }
  capture_->open_.pop_back();
}

void OpCall::record_capture(Inputs inputs, Outputs outputs) {
  recorded_ = true;
  Capture::Open& me = capture_->open_.back();
  // A UgReplay node's "size_free" attribute (onnx/graph_builder.cpp), read by Program::generalize.
  if (replay_ && replay_sizes_ == ReplaySizes::None) attrs_.emplace_back("size_free", int64_t{1});
  CapturedCall call{def_.name(), {}, {}, std::move(attrs_), {}, {}, std::move(replay_), std::move(me.inner)};
  me.inner.clear();
  for (const Tensor* t : inputs) {
    call.inputs.push_back(t ? *t : Tensor());
    call.input_versions.push_back(t && t->defined() ? t->version() : 0);
  }
  for (const Tensor* t : outputs) {
    call.outputs.push_back(*t);
    call.output_versions.push_back(t->defined() ? t->version() : 0);
    if (depth_ > 0) call.output_hashes.push_back(content_hash(*t));
  }
  if (depth_ == 0 && capture_->record_sources_) {
    call.where = debugging::current_source();
    // A program's graph must know a call made inside a no_grad block of the traced function:
    // autograd recording through the program must not follow its results, as it did not
    // eagerly, whatever grad mode the trace itself ran in.
    if (const GradMode::State mode = GradMode::state(); !mode.enabled && mode.set_by > capture_->grad_sets_at_start_)
      call.attrs.emplace_back("no_grad", int64_t(1));
  }
  std::vector<CapturedCall>& list = capture_->list_at(depth_);
  me.recorded_at = list.size();
  list.push_back(std::move(call));
}

}  // namespace ug::graph
