// Reverse-mode execution: count dependencies from the roots, then run nodes newest-first
// (a node runs when every node that feeds it a gradient has run), summing gradients per
// input, calling hooks, checking NaN/Inf in anomaly mode, and freeing saved tensors unless
// the graph is retained.
#include "ug/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ug/autograd/grad_trace.h"
#include "ug/graph/capture.h"
#include "ug/graph/gradient_graph.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/node.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug::autograd {

namespace {

struct Capture {
  Node* node;
  uint32_t input_nr;
  size_t index;  // position in the inputs of autograd::grad
};

struct NodeOrder {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

Tensor zeros_for(const Node::OutputInfo& o) { return zeros(o.shape, {.dtype = o.dtype, .device = o.device}); }

[[noreturn]] void backward_in_trace() {
  fail<RuntimeError>(
      "[onnx.export] backward() inside an exported function writes the parameters' .grad, which a "
      "graph file cannot; export the model's forward, or compile the training step with ug.jit / ug.compile");
}

/** g added into leaf.grad, eagerly. */
void add_into_grad(const Tensor& leaf, Tensor g) {
  AutogradMeta& m = meta(leaf);
  if (!m.grad.defined()) {
    // Keep the incoming gradient when nobody else can see it; otherwise own a copy, so a
    // later in-place accumulation never writes into a broadcast view or another tensor.
    if (GradMode::is_enabled()) m.grad = g;
    else if (g.is_contiguous() && g.storage()->use_count() == 1 && g.storage_offset() == 0) m.grad = g.detach();
    else m.grad = g.detach().clone();
  } else if (GradMode::is_enabled()) {
    m.grad = m.grad + g;  // create_graph: the sum stays differentiable
  } else {
    m.grad.add_(g.detach());
  }
}

/** What a leaf's AccumulateGrad does: g, after the leaf's hooks, added into leaf.grad. The
 *  engine runs it (the node's own layer is below the ops that add). */
void accumulate(AccumulateGrad& acc, Tensor g, bool create_graph) {
  g = acc.run_hooks(std::move(g));
  if (graph::detail::current_capture) {
    // A compiled step's trace: the program reads and writes .grad (autograd/grad_trace.h).
    GradTrace* trace = GradTrace::current();
    if (!trace) backward_in_trace();
    if (create_graph) fail<RuntimeError>("[jit] backward(create_graph=True) inside a compiled step is not supported");
    trace->accumulate(acc.leaf(), g);
  } else {
    add_into_grad(acc.leaf(), std::move(g));
  }
  // Traced too: what the hooks do (DistributedDataParallel's bucket all-reduce) is then part
  // of the program, as in torch.compile's compiled autograd.
  for (const auto& hook : meta(acc.leaf()).post_accumulate_hooks) hook(acc.leaf());
}

void check_finite(const Tensor& g, Node* node) {
  if (!g.defined() || !is_inexact(g.dtype())) return;
  if (ops::all_true(g.isfinite())) return;
  std::string where = node->forward_trace().empty() ? "" : "\nThe op ran forward at:\n" + node->forward_trace();
  fail<RuntimeError>("[anomaly] the backward of ", node->name(), " returned NaN or Inf values (gradient shape ",
                     g.shape(), ", dtype ", g.dtype(), ")", where);
}

Tensor root_gradient(const Tensor& out, const Tensor& given, size_t i) {
  if (given.defined()) {
    if (!(given.shape() == out.shape()))
      fail("[backward] gradient ", i, " has shape ", given.shape(), " but the output has shape ", out.shape());
    return given;
  }
  if (out.numel() != 1)
    fail<RuntimeError>("[backward] grad can be implicitly created only for scalar outputs; output ", i, " has shape ",
                       out.shape(), ": pass a gradient");
  return ones_like(out);
}

/** Runs the graph under `roots`. With captures, gradients reaching them are returned and
 *  leaves are left alone; without, AccumulateGrad nodes add into .grad. */
std::vector<Tensor> execute(const std::vector<Edge>& roots, std::vector<Tensor> root_grads, bool retain_graph,
                            bool create_graph, const std::vector<Capture>& captures, size_t n_captures) {
  // Backward ops run in the dtypes the forward chose (the casts' own rules convert back), as
  // PyTorch says of backward under autocast.
  autocast::ExcludeGuard no_autocast;
  // Dependencies: how many gradient contributions each node waits for.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      deps[e.node.get()]++;
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  // With captures, only nodes that lead to a captured edge need to run.
  std::unordered_set<Node*> capture_nodes;
  for (const Capture& c : captures) capture_nodes.insert(c.node);
  std::unordered_map<Node*, bool> needed;
  std::function<bool(Node*)> leads_to_capture = [&](Node* n) -> bool {
    auto it = needed.find(n);
    if (it != needed.end()) return it->second;
    needed[n] = false;
    bool result = capture_nodes.count(n) > 0;
    for (const Edge& e : n->next_edges())
      if (e.valid() && leads_to_capture(e.node.get())) result = true;
    needed[n] = result;
    return result;
  };
  const bool capturing = !captures.empty() || n_captures > 0;

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to = [&](Node* n, uint32_t input_nr, Tensor g) {
    auto& buf = buffers[n];
    if (buf.size() <= input_nr) buf.resize(std::max<size_t>(n->outputs().size(), input_nr + 1));
    buf[input_nr] = buf[input_nr].defined() ? buf[input_nr] + g : std::move(g);
  };
  std::priority_queue<Node*, std::vector<Node*>, NodeOrder> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    add_to(roots[i].node.get(), roots[i].input_nr, std::move(root_grads[i]));
  }
  for (Node* n : seen)
    if (deps[n] == 0) ready.push(n);

  std::vector<Tensor> captured(n_captures);
  // Under a capture (ug.jit tracing a step) the rules run as for create_graph: their op forms,
  // which the capture records, rather than fused kernels it could not follow.
  AutoGradMode mode(create_graph || graph::detail::current_capture);
  graph::GradientGraphScope asked(create_graph);
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(std::max(grads.size(), node->outputs().size()));
    for (auto& [nr, hook] : node->output_hooks()) {
      if (nr < grads.size() && grads[nr].defined()) {
        Tensor replaced = hook(grads[nr]);
        if (replaced.defined()) grads[nr] = replaced;
      }
    }
    if (capturing)
      if (auto* acc = dynamic_cast<AccumulateGrad*>(node); acc && !grads.empty() && grads[0].defined())
        grads[0] = acc->run_hooks(std::move(grads[0]));  // a leaf's hooks see its gradient here too
    for (const Capture& c : captures)
      if (c.node == node && c.input_nr < grads.size() && grads[c.input_nr].defined())
        captured[c.index] = captured[c.index].defined() ? captured[c.index] + grads[c.input_nr] : grads[c.input_nr];

    bool run = !capturing;
    for (const Edge& e : node->next_edges())  // with captures: only nodes on a path to one
      if (capturing && e.valid() && leads_to_capture(e.node.get())) run = true;
    bool any_defined = false;
    for (const Tensor& g : grads) any_defined |= g.defined();
    if (run && any_defined) {
      for (size_t i = 0; i < grads.size() && i < node->outputs().size(); ++i)
        if (!grads[i].defined()) grads[i] = zeros_for(node->outputs()[i]);
      auto* leaf = dynamic_cast<AccumulateGrad*>(node);
      if (leaf) accumulate(*leaf, std::move(grads[0]), create_graph);
      if (!retain_graph) node->release_saved_on_apply();
      std::vector<Tensor> input_grads = leaf ? std::vector<Tensor>() : node->apply(std::move(grads));
      const auto& edges = node->next_edges();
      for (size_t i = 0; i < edges.size() && i < input_grads.size(); ++i) {
        if (!edges[i].valid() || !input_grads[i].defined()) continue;
        if (AnomalyMode::is_enabled()) check_finite(input_grads[i], node);
        add_to(edges[i].node.get(), edges[i].input_nr, std::move(input_grads[i]));
      }
    }
    if (!retain_graph) node->release_saved();
    for (const Edge& e : node->next_edges()) {
      if (!e.valid()) continue;
      if (--deps[e.node.get()] == 0) ready.push(e.node.get());
    }
  }
  return captured;
}

std::vector<Edge> root_edges(const std::vector<Tensor>& outputs, const char* op) {
  if (graph::detail::current_capture && !GradTrace::current() && std::string_view(op) == "backward")
    backward_in_trace();
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Edge e = gradient_edge(outputs[i]);
    if (!e.valid())
      fail<RuntimeError>("[", op, "] output ", i,
                         " does not require grad and has no grad_fn: nothing to "
                         "differentiate (did you forget requires_grad=True, or compute it under no_grad?)");
    roots.push_back(std::move(e));
  }
  return roots;
}

std::vector<Tensor> root_gradients(const std::vector<Tensor>& outputs, const std::vector<Tensor>& given) {
  if (!given.empty() && given.size() != outputs.size())
    fail("[backward] got ", given.size(), " gradients for ", outputs.size(), " outputs");
  std::vector<Tensor> grads;
  for (size_t i = 0; i < outputs.size(); ++i)
    grads.push_back(root_gradient(outputs[i], given.empty() ? Tensor() : given[i], i));
  return grads;
}

/** d(outputs)/d(inputs), undefined where an input is unused; `op` names the caller in errors. */
std::vector<Tensor> captured_grads(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                                   bool create_graph, const char* op) {
  std::vector<Edge> roots = root_edges(outputs, op);
  std::vector<Capture> captures;
  std::vector<Edge> keep_alive;  // accumulators made here must live through the walk
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    if (!e.valid())
      fail<RuntimeError>("[", op, "] input ", i, " does not require grad (shape ", inputs[i].shape(), ", dtype ",
                         inputs[i].dtype(), ")");
    captures.push_back({e.node.get(), e.input_nr, i});
    keep_alive.push_back(std::move(e));
  }
  return execute(roots, root_gradients(outputs, grad_outputs), retain_graph.value_or(create_graph), create_graph,
                 captures, inputs.size());
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) {
    std::vector<Edge> roots = root_edges(outputs, "backward");
    execute(roots, root_gradients(outputs, grad_outputs), retain_graph.value_or(create_graph), create_graph, {}, 0);
    return;
  }
  std::vector<Tensor> grads = captured_grads(outputs, inputs, grad_outputs, retain_graph, create_graph, "backward");
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A non-leaf that retains its grad has had this gradient added by its hook during the walk.
    if (!grads[i].defined() || inputs[i].retains_grad()) continue;
    const Tensor old = inputs[i].grad();
    inputs[i].set_grad(old.defined() ? old + grads[i] : grads[i]);
    if (const AutogradMeta* m = meta_if(inputs[i]); m && !m->grad_fn)
      for (const auto& hook : m->post_accumulate_hooks) hook(inputs[i]);
  }
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  std::vector<Tensor> result = captured_grads(outputs, inputs, grad_outputs, retain_graph, create_graph, "grad");
  for (size_t i = 0; i < result.size(); ++i)
    if (!result[i].defined() && !allow_unused)
      fail<RuntimeError>("[grad] input ", i, " (shape ", inputs[i].shape(),
                         ") was not used to compute the outputs; "
                         "pass allow_unused=True if this is expected");
  return result;
}

}  // namespace ug::autograd
