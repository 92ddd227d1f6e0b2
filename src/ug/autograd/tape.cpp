#include "ug/autograd/tape.h"

#include "ug/autograd/engine.h"
#include "ug/graph/record.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug {

namespace {
thread_local int t_tapes_recording = 0;
}  // namespace

bool GradientTape::any_recording() { return t_tapes_recording > 0; }

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : persistent_(persistent), watch_accessed_variables_(watch_accessed_variables) {}

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
  if (!is_inexact(t.dtype()))
    fail<TypeError>("[GradientTape.watch] only floating point and complex tensors can be watched, got ", t.dtype());
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

void GradientTape::use(const char* what) {
  if (used_ && !persistent_)
    fail<RuntimeError>("[GradientTape.", what,
                       "] a non-persistent GradientTape can only be used to compute one set "
                       "of gradients; create it with persistent=True to call it again");
  used_ = true;
}

std::vector<Tensor> GradientTape::backward(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                                           const std::vector<Tensor>& weights, bool retain) {
  // Sources are reached through the edge fixed when they were watched (their requires_grad
  // may be restored since); tensors that require grad are watched automatically, unless
  // watch_accessed_variables is off: then leaves not watched count as unconnected.
  std::vector<Tensor> handles;
  std::vector<bool> live(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const Tensor& s = sources[i];
    Tensor h = s;
    bool watched = false;
    for (const Watch& w : watches_)
      if (w.tensor.impl_ref() == s.impl_ref()) {
        watched = true;
        if (w.restore_requires_grad && !s.requires_grad())
          autograd::meta(h).requires_grad = true;  // briefly, so the engine finds its accumulator
      }
    live[i] = h.requires_grad() && (watch_accessed_variables_ || watched || !s.is_leaf());
    handles.push_back(h);
  }
  std::vector<Tensor> roots, used_weights;
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].requires_grad()) {
      roots.push_back(targets[i]);
      used_weights.push_back(weights[i]);
    }
  std::vector<Tensor> result(sources.size());
  std::vector<Tensor> live_sources;
  std::vector<size_t> live_index;
  for (size_t i = 0; i < handles.size(); ++i)
    if (live[i]) {
      live_sources.push_back(handles[i]);
      live_index.push_back(i);
    }
  if (!roots.empty() && !live_sources.empty()) {
    // A gradient taken while another tape records must itself be differentiable (nesting).
    const bool create_graph = any_recording();
    std::vector<Tensor> grads =
        autograd::grad(roots, live_sources, used_weights, retain || create_graph, create_graph, true);
    for (size_t k = 0; k < live_index.size(); ++k) result[live_index[k]] = grads[k];
  }
  for (const Watch& w : watches_)
    if (w.restore_requires_grad && !recording_ && w.tensor.is_leaf()) autograd::meta(w.tensor).requires_grad = false;
  return result;
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                                           const std::vector<Tensor>& output_gradients,
                                           UnconnectedGradients unconnected) {
  use("gradient");
  std::vector<Tensor> weights = output_gradients;
  if (weights.empty())
    for (const Tensor& t : targets) weights.push_back(ones_like(t));  // TF differentiates the sum of a target
  std::vector<Tensor> result = backward(targets, sources, weights, persistent_);
  if (unconnected == UnconnectedGradients::Zero)
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].defined()) result[i] = zeros_like(sources[i]);
  return result;
}

std::vector<Tensor> GradientTape::jacobian(const Tensor& target, const std::vector<Tensor>& sources,
                                           UnconnectedGradients unconnected) {
  use("jacobian");
  // Row r of each Jacobian is the gradient of target's element r: one backward pass each,
  // on a graph kept until the last.
  const int64_t n = target.numel();
  std::vector<std::vector<Tensor>> rows(sources.size());
  std::vector<bool> connected(sources.size(), n > 0);
  for (int64_t r = 0; r < n; ++r) {
    Tensor unit;
    {
      NoGradGuard no_grad;
      unit = (arange(n, {.dtype = DType::Int64, .device = target.device()}) == r).to(target.dtype());
    }
    std::vector<Tensor> g = backward({target}, sources, {unit.view(target.shape())}, persistent_ || r + 1 < n);
    for (size_t i = 0; i < sources.size(); ++i) {
      connected[i] = connected[i] && g[i].defined();
      rows[i].push_back(g[i]);
    }
  }
  std::vector<Tensor> result(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    Dims shape(target.shape().begin(), target.shape().end());
    for (int64_t d : sources[i].shape()) shape.push_back(d);
    if (connected[i]) result[i] = stack(rows[i]).reshape(shape);
    else if (unconnected == UnconnectedGradients::Zero) result[i] = zeros(shape, {.dtype = sources[i].dtype()});
  }
  return result;
}

Tensor GradientTape::batch_jacobian(const Tensor& target, const Tensor& source, UnconnectedGradients unconnected) {
  if (target.dim() == 0 || source.dim() == 0 || target.size(0) != source.size(0))
    fail<ValueError>("[GradientTape.batch_jacobian] target and source need the same batch size (dim 0), got shapes ",
                     target.shape(), " and ", source.shape());
  // The rows are independent, so d sum_b target[b] / d source[b'] is d target[b'] / d source[b']:
  // the Jacobian of the batch sum, [T..., B, S...], with the batch dim moved to the front.
  Tensor summed;
  {
    EnableGradGuard enable;  // the sum joins the recorded graph, as TensorFlow's would
    summed = target.sum({0});
  }
  Tensor jac = jacobian(summed, {source}, unconnected)[0];
  if (!jac.defined()) return jac;
  return jac.movedim(summed.dim(), 0);
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source) {
  return gradient(std::vector<Tensor>{target}, std::vector<Tensor>{source})[0];
}

}  // namespace ug
