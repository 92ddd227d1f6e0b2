#include "ug/autograd/tape.h"

#include "ug/autograd/engine.h"
#include "ug/graph/record.h"

namespace ug {

namespace {
thread_local int t_tapes_recording = 0;
}  // namespace

bool GradientTape::any_recording() { return t_tapes_recording > 0; }

GradientTape::GradientTape(bool persistent) : persistent_(persistent) {}

GradientTape::~GradientTape() {
  if (recording_) stop();
}

void GradientTape::start() {
  if (recording_) fail<RuntimeError>("[GradientTape] the tape is already recording");
  recording_ = true;
  ++t_tapes_recording;
  grad_mode_ = std::make_unique<AutoGradMode>(true);
  for (Watch& w : watches_) w.tensor.requires_grad_(true);  // a re-entered tape records again
}

void GradientTape::stop() {
  if (!recording_) return;
  recording_ = false;
  --t_tapes_recording;
  grad_mode_.reset();
  // Watching lent requires_grad to plain tensors only while recording: restore them.
  for (Watch& w : watches_)
    if (w.restore_requires_grad && w.tensor.is_leaf()) autograd::meta(w.tensor).requires_grad = false;
}

void GradientTape::watch(const Tensor& t) {
  if (!is_floating(t.dtype()))
    fail<TypeError>("[GradientTape.watch] only floating point tensors can be watched, got ", t.dtype());
  for (const Watch& w : watches_)
    if (w.tensor.impl_ref() == t.impl_ref()) return;
  const bool lent = !t.requires_grad();
  if (lent) autograd::meta(t).requires_grad = true;
  watches_.push_back({t, autograd::gradient_edge(t), lent});
}

std::vector<Tensor> GradientTape::watched() const {
  std::vector<Tensor> out;
  for (const Watch& w : watches_) out.push_back(w.tensor);
  return out;
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                                           const std::vector<Tensor>& output_gradients) {
  if (used_ && !persistent_)
    fail<RuntimeError>(
        "[GradientTape.gradient] a non-persistent GradientTape can only be used to compute one set "
        "of gradients; create it with persistent=True to call gradient() again");
  used_ = true;
  std::vector<Tensor> weights = output_gradients;
  if (weights.empty())
    for (const Tensor& t : targets) weights.push_back(ones_like(t));  // TF differentiates the sum of a target
  // Sources are reached through the edge fixed when they were watched (their requires_grad
  // may be restored since); tensors that require grad are watched automatically.
  std::vector<Tensor> handles;
  for (const Tensor& s : sources) {
    Tensor h = s;
    for (const Watch& w : watches_)
      if (w.tensor.impl_ref() == s.impl_ref() && w.restore_requires_grad && !s.requires_grad()) {
        autograd::meta(h).requires_grad = true;  // briefly, so the engine finds its accumulator
      }
    handles.push_back(h);
  }
  std::vector<Tensor> roots;
  for (const Tensor& t : targets)
    if (t.requires_grad()) roots.push_back(t);
  std::vector<Tensor> result(sources.size());
  if (!roots.empty()) {
    std::vector<Tensor> used_weights;
    for (size_t i = 0; i < targets.size(); ++i)
      if (targets[i].requires_grad()) used_weights.push_back(weights[i]);
    std::vector<Tensor> live_sources;
    std::vector<size_t> live_index;
    for (size_t i = 0; i < handles.size(); ++i)
      if (handles[i].requires_grad()) {
        live_sources.push_back(handles[i]);
        live_index.push_back(i);
      }
    if (!live_sources.empty()) {
      // A gradient taken while another tape records must itself be differentiable (nesting).
      const bool create_graph = any_recording();
      std::vector<Tensor> grads =
          autograd::grad(roots, live_sources, used_weights, persistent_ || create_graph, create_graph, true);
      for (size_t k = 0; k < live_index.size(); ++k) result[live_index[k]] = grads[k];
    }
  }
  for (const Watch& w : watches_)
    if (w.restore_requires_grad && !recording_ && w.tensor.is_leaf()) autograd::meta(w.tensor).requires_grad = false;
  return result;
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source) {
  return gradient(std::vector<Tensor>{target}, std::vector<Tensor>{source})[0];
}

}  // namespace ug
