// The control-flow ops (If, Loop, Scan): their bodies are subgraphs run by the same interpreter
// as the model's graph, one iteration at a time, so autograd records through every iteration.
// Under vmap (a compiled program run on batched values) a condition may differ between
// examples: If then runs both branches and picks per example, and Loop iterates until no
// example goes on, each example keeping its values from when its condition stopped holding
// (JAX's batching rules of cond and while_loop).
#include <limits>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/value_checks.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

constexpr size_t kMany = std::numeric_limits<size_t>::max();

bool truth(const OpContext& c, const Tensor& t, std::string_view what) {
  if (t.numel() != 1) c.fail(what, " must have one element, got shape ", t.shape());
  return batching::level(t) ? ops::any_true(t.detach().ne(0)) : t.detach().item<double>() != 0;
}

/** Stacks each iteration's value of scan output k, refusing what a hostile body could pile up. */
void append_scan(const OpContext& c, std::vector<Outputs>& scans, size_t k, Tensor t, int64_t& elements) {
  if (!scans[k].empty() && scans[k].front().shape() != t.shape())
    c.fail("scan output ", k, " changes shape between iterations, from ", scans[k].front().shape(), " to ", t.shape());
  elements += t.numel();
  if (elements > c.max_elements())
    c.fail("its scan outputs pass ", c.max_elements(), " elements (LoadLimits::max_elements)");
  scans[k].push_back(std::move(t));
}

Outputs if_op(const OpContext& c) {
  const Tensor& cond = c.input(0);
  if (!batching::level(cond)) {
    Outputs out = c.run_subgraph(truth(c, cond, "the condition") ? "then_branch" : "else_branch", {});
    if (out.size() < c.num_outputs()) c.fail("has ", c.num_outputs(), " outputs, its branch gives ", out.size());
    return out;
  }
  if (cond.numel() != 1) c.fail("the condition must have one element, got shape ", cond.shape());
  const Outputs yes = c.run_subgraph("then_branch", {}), no = c.run_subgraph("else_branch", {});
  if (yes.size() < c.num_outputs() || no.size() < c.num_outputs())
    c.fail("has ", c.num_outputs(), " outputs, its branches give ", yes.size(), " and ", no.size());
  const Tensor pick = cond.ne(0).reshape({});
  Outputs out;
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    if (yes[i].shape() != no[i].shape()) throw_no_batching_rule();  // each example its own shape
    out.push_back(where(pick, yes[i], no[i]));
  }
  return out;
}

Outputs loop_op(const OpContext& c) {
  const Graph& body = c.attr_graph("body");
  if (c.num_inputs() < 2)
    c.fail("has ", c.num_inputs(), " inputs; it takes a trip count and a condition (either may be empty) first");
  const size_t n = c.num_inputs() - 2;  // loop-carried values
  if (body.inputs.size() != n + 2)
    c.fail("its body takes ", body.inputs.size(), " inputs; with ", n, " loop-carried values it must take ", n + 2,
           " (iteration number, condition, the values)");
  if (body.outputs.size() < n + 1)
    c.fail("its body gives ", body.outputs.size(), " outputs; it must give at least ", n + 1,
           " (condition, the loop-carried values)");
  const size_t k = body.outputs.size() - 1 - n;  // scan outputs
  if (c.num_outputs() > n + k) c.fail("has ", c.num_outputs(), " outputs; its body gives ", n + k);
  if (!c.has_input(0) && !c.has_input(1)) c.fail("has neither a trip count nor a condition: it would never end");
  const int64_t trips = c.has_input(0) ? static_cast<int64_t>(c.scalar_input(0)) : std::numeric_limits<int64_t>::max();
  // The condition as a tensor: under vmap, each example's own.
  Tensor cond = c.has_input(1) ? c.input(1).ne(0) : scalar_tensor(true, {.dtype = DType::Bool});
  if (cond.numel() != 1) c.fail("the condition must have one element, got shape ", cond.shape());
  cond = cond.reshape({});
  Outputs carried;
  for (size_t i = 0; i < n; ++i) carried.push_back(c.input(2 + i));
  std::vector<Outputs> scans(k);
  int64_t elements = 0;
  int64_t it = 0;
  for (; it < trips && truth(c, cond, "the condition"); ++it) {
    Outputs args = {scalar_tensor(it, {.dtype = DType::Int64}), cond};
    args.insert(args.end(), carried.begin(), carried.end());
    Outputs out = c.run_subgraph("body", args);
    if (out[0].numel() != 1) c.fail("the body's condition output must have one element, got shape ", out[0].shape());
    const Tensor next = out[0].ne(0).reshape({});
    if (batching::level(cond) || batching::level(next)) {
      if (k) throw_no_batching_rule();  // scan outputs of each example's own length
      // An example whose condition no longer holds keeps its values (of one shape throughout).
      for (size_t i = 0; i < n; ++i) {
        if (out[1 + i].shape() != carried[i].shape()) throw_no_batching_rule();
        carried[i] = where(cond, out[1 + i], carried[i]);
      }
      cond = cond.logical_and(next);
      continue;
    }
    cond = next;
    for (size_t i = 0; i < n; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t j = 0; j < k; ++j) append_scan(c, scans, j, std::move(out[1 + n + j]), elements);
  }
  Outputs results = std::move(carried);
  for (size_t j = 0; j < k; ++j) {
    if (scans[j].empty() && c.wants_output(n + j)) c.fail("ran no iteration, so its scan output ", j, " has no shape");
    results.push_back(scans[j].empty() ? Tensor() : stack(scans[j], 0));
  }
  return results;
}

/** Attribute `name`'s value for each of `count` inputs or outputs: 0 where it is absent. */
std::vector<int64_t> per_scan(const OpContext& c, std::string_view name, size_t count) {
  std::vector<int64_t> v = c.attr_ints(name).value_or(std::vector<int64_t>(count, 0));
  if (v.size() != count) c.fail("attribute '", name, "' has ", v.size(), " values for ", count, " scans");
  return v;
}

Outputs scan_op(const OpContext& c) {
  const Graph& body = c.attr_graph("body");
  const int64_t m_attr = c.attr_int("num_scan_inputs");
  if (m_attr < 1 || static_cast<size_t>(m_attr) > c.num_inputs())
    c.fail("num_scan_inputs is ", m_attr, "; it must be in [1, ", c.num_inputs(), "]");
  const size_t m = static_cast<size_t>(m_attr), n = c.num_inputs() - m;
  if (body.inputs.size() != n + m)
    c.fail("its body takes ", body.inputs.size(), " inputs; it must take ", n + m, " (", n, " states, ", m,
           " scan inputs)");
  if (body.outputs.size() < n)
    c.fail("its body gives ", body.outputs.size(), " outputs, fewer than its ", n, " states");
  const size_t k = body.outputs.size() - n;
  if (c.num_outputs() > n + k) c.fail("has ", c.num_outputs(), " outputs; its body gives ", n + k);
  const std::vector<int64_t> in_axes = per_scan(c, "scan_input_axes", m);
  const std::vector<int64_t> in_dirs = per_scan(c, "scan_input_directions", m);
  const std::vector<int64_t> out_axes = per_scan(c, "scan_output_axes", k);
  const std::vector<int64_t> out_dirs = per_scan(c, "scan_output_directions", k);

  std::vector<Tensor> scan_inputs;  // each with its scan axis first
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    const Tensor& x = c.input(n + j);
    const int64_t rank = x.dim(), axis = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
    if (axis < 0 || axis >= rank) c.fail("scan input ", j, " of shape ", x.shape(), " has no axis ", in_axes[j]);
    if (length >= 0 && x.size(axis) != length)
      c.fail("its scan inputs have different lengths (", length, " and ", x.size(axis), ")");
    length = x.size(axis);
    scan_inputs.push_back(axis == 0 ? x : x.movedim(axis, 0));
  }
  Outputs states;
  for (size_t i = 0; i < n; ++i) states.push_back(c.input(i));
  std::vector<Outputs> scans(k);
  int64_t elements = 0;
  for (int64_t t = 0; t < length; ++t) {
    Outputs args = states;
    for (size_t j = 0; j < m; ++j) args.push_back(scan_inputs[j].select(0, in_dirs[j] ? length - 1 - t : t));
    Outputs out = c.run_subgraph("body", args);
    for (size_t i = 0; i < n; ++i) states[i] = std::move(out[i]);
    for (size_t j = 0; j < k; ++j) append_scan(c, scans, j, std::move(out[n + j]), elements);
  }
  Outputs results = std::move(states);
  for (size_t j = 0; j < k; ++j) {
    if (scans[j].empty()) {
      if (c.wants_output(n + j)) c.fail("scans a length of 0, so its scan output ", j, " has no shape");
      results.emplace_back();
      continue;
    }
    if (out_dirs[j]) std::reverse(scans[j].begin(), scans[j].end());
    const int64_t rank = scans[j].front().dim() + 1, axis = out_axes[j] < 0 ? out_axes[j] + rank : out_axes[j];
    if (axis < 0 || axis >= rank) c.fail("scan output ", j, " of rank ", rank, " has no axis ", out_axes[j]);
    results.push_back(stack(scans[j], axis));
  }
  return results;
}

}  // namespace

void add_control_flow_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"If", if_op, 1, 1, kMany, 1, {"then_branch", "else_branch"}});
  ops.push_back({"Loop", loop_op, 0, kMany, kMany, 1, {"body"}});  // its first two inputs may be empty names
  ops.push_back({"Scan", scan_op, 1, kMany, kMany, 9, {"body", "num_scan_inputs"}});
}

}  // namespace ug::onnx
