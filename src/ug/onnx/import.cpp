// OnnxModule: the parsed graph's initializers registered as parameters and buffers, and a
// forward that runs the nodes in order through the op table.
#include "ug/onnx/import.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "ug/graph/debugging.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/onnx/fuse_conv.h"
#include "ug/onnx/graph.h"
#include "ug/onnx/op_table.h"

namespace ug::onnx {
namespace {

/** The parts of a dotted name, or nothing when a part is empty ("a..b", ".a", "a."). */
std::optional<std::vector<std::string>> dotted_parts(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (parts.back().empty()) return std::nullopt;
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

bool taken(const nn::Module& m, const std::string& name) {
  return m.has_parameter(name) || m.has_buffer(name) || m.has_module(name);
}

void register_initializer(nn::Module& m, const std::string& name, const Tensor& value) {
  if (is_floating(value.dtype())) m.register_parameter(name, value);
  else m.register_buffer(name, value);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

}  // namespace

OnnxModule::OnnxModule(Graph graph) : nn::Module("OnnxModule") {
  // Initializer "fc1.weight" becomes child module "fc1" with parameter "weight": the state
  // dict keys are then the ONNX names, so torch's exports take torch's state dicts. A name that
  // cannot be such a path (an empty part, a part that is already a tensor) is registered on
  // this module with its dots turned into underscores, underscores appended until unique.
  for (const auto& [name, value] : graph.initializers) {
    std::string module_path, local;
    nn::Module* m = this;
    auto parts = dotted_parts(name);
    for (size_t i = 0; parts && i + 1 < parts->size(); ++i) {
      const std::string& p = (*parts)[i];
      if (m->has_module(p)) m = m->child(p).get();
      else if (taken(*m, p)) parts.reset();
      else m = m->register_module(p, std::make_shared<nn::Module>("OnnxScope")).get();
      if (parts) module_path += (i ? "." : "") + p;
    }
    if (parts && !taken(*m, parts->back())) {
      local = parts->back();
      register_initializer(*m, local, value);
    } else {
      module_path.clear();
      local = name;
      std::replace(local.begin(), local.end(), '.', '_');
      if (local.empty()) local.push_back('_');
      while (taken(*this, local)) local.push_back('_');
      register_initializer(*this, local, value);
    }
    initializer_slots_.emplace_back(module_path, local);
  }
  graph.initializers.clear();  // the module holds them now
  graph_ = std::make_shared<const Graph>(std::move(graph));
}

OnnxModule::~OnnxModule() = default;

const std::vector<ValueInfo>& OnnxModule::inputs() const { return graph_->inputs; }
const std::vector<ValueInfo>& OnnxModule::outputs() const { return graph_->outputs; }
int64_t OnnxModule::opset() const { return graph_->opset; }

Tensor OnnxModule::initializer(size_t i) {
  const auto& [path, name] = initializer_slots_[i];
  nn::Module* m = this;
  for (size_t start = 0; !path.empty();) {
    const size_t dot = path.find('.', start);
    m = m->child(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start)).get();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return m->has_parameter(name) ? m->parameter(name) : m->buffer(name);
}

std::vector<Tensor> OnnxModule::forward(const std::vector<Tensor>& inputs) {
  const Graph& g = *graph_;
  if (inputs.size() != g.inputs.size())
    fail("[onnx] the model takes ", g.inputs.size(), " input(s), got ", inputs.size());
  std::vector<Tensor> values(g.num_values);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = g.inputs[i];
    const Tensor& x = inputs[i];
    if (!x.defined()) fail("[onnx] input '", info.name, "' is an undefined tensor");
    if (x.dtype() != info.dtype)
      fail<TypeError>("[onnx] input '", info.name, "' must have dtype ", info.dtype, ", got ", x.dtype());
    bool fits = !g.input_has_shape[i] || static_cast<size_t>(x.dim()) == info.shape.size();
    for (size_t d = 0; fits && g.input_has_shape[i] && d < info.shape.size(); ++d)
      fits = info.shape[d] < 0 || info.shape[d] == x.size(static_cast<int64_t>(d));
    if (!fits) fail("[onnx] input '", info.name, "' must have shape ", shape_string(info.shape), ", got ", x.shape());
    values[static_cast<size_t>(g.input_ids[i])] = x;
  }
  for (size_t i = 0; i < g.initializer_ids.size(); ++i)
    values[static_cast<size_t>(g.initializer_ids[i])] = initializer(i);

  return run_graph(g, std::move(values));
}

namespace {

/** A compiled program's call back into an op without a graph form (Replay): it takes the
 *  arguments, so that those read here for the last time are held by it alone. */
std::vector<Tensor> replay(const Graph& g, const NodePlan& plan, const OpContext& ctx, std::vector<Tensor>& args) {
  const int64_t index = plan.replay;
  if (ctx.node().op_type != "UgReplay") ctx.fail("is not an op of the table");
  if (index < 0 || static_cast<size_t>(index) >= g.replays.size())
    ctx.fail("runs an op of the program that traced it (", ctx.attr_string("op", "?"),
             "); a graph read from a file cannot hold one");
  return g.replays[static_cast<size_t>(index)](std::move(args));
}

}  // namespace

/** Whether `out` may take the elementwise result of `out` op `other` in place: its buffer is the
 *  node's alone (one reference to the tensor and one to its storage: no other value, view,
 *  caller or autograd node holds it, so the graph has read it for the last time), contiguous,
 *  of the result's dtype and shape, and no gradient is recorded through it (no forward-mode
 *  tangent either: a program run under jvp computes out of place). */
bool overwritable(const Tensor& out, const Tensor& other) {
  if (!out.defined() || !other.defined() || out.dtype() != other.dtype() || !is_floating(out.dtype())) return false;
  if (out.impl_ref()->use_count() != 1 || out.storage()->use_count() != 1 || !out.is_contiguous()) return false;
  if (out.impl().batch() || other.impl().batch()) return false;
  if (GradMode::is_enabled() && (out.requires_grad() || other.requires_grad())) return false;
  if (forward::has_tangent(out) || forward::has_tangent(other)) return false;
  const Shape& a = out.shape();
  const Shape& b = other.shape();
  if (b.size() > a.size()) return false;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != 1 && b[i] != a[a.size() - b.size() + i]) return false;
  return true;
}

/** The elementwise op a node computes that may write into a dying operand, and whether either
 *  operand may take it (Add and Mul commute bit for bit) or only the first: ONNX's float
 *  arithmetic, and the activations' gradients a program calls back (g times the derivative at
 *  v, written into g: the kernel reads and writes each element at its own index). */
std::optional<std::pair<ops::BinaryOp, bool>> elementwise(const Node& node) {
  using ops::BinaryOp;
  const std::string& op = node.op_type;
  if (op == "Add") return std::pair{BinaryOp::Add, true};
  if (op == "Mul") return std::pair{BinaryOp::Mul, true};
  if (op == "Sub") return std::pair{BinaryOp::Sub, false};
  if (op == "Div") return std::pair{BinaryOp::Div, false};
  if (op != "UgReplay") return std::nullopt;
  auto called = node.attributes.find("op");
  const auto* name = called == node.attributes.end() ? nullptr : std::get_if<std::string>(&called->second);
  if (!name) return std::nullopt;
#define UG_GRAD(Op, method) \
  if (*name == #method) return std::pair{BinaryOp::Op, false};
  UG_BINARY_GRADS(UG_GRAD)
#undef UG_GRAD
  return std::nullopt;
}

int in_place_operands(const Node& node) {
  const auto op = elementwise(node);
  return !op || node.inputs.size() != 2 || node.outputs.size() != 1 ? 0 : op->second ? 2 : 1;
}

/** An elementwise node (`elementwise`) computed into an operand whose buffer is overwritable:
 *  the value stays where it is in cache and nothing is allocated. Empty when no operand can
 *  take it. */
std::optional<Tensor> in_place(const NodePlan& plan, const Node& node, std::vector<Tensor>& args) {
  const auto& op = plan.in_place;
  if (!op || args.size() != 2 || node.outputs.size() != 1) return std::nullopt;
  for (size_t i = 0; i < (op->second ? 2u : 1u); ++i) {
    if (!overwritable(args[i], args[1 - i])) continue;
    Tensor out = std::move(args[i]);
    ops::binary_inplace(op->first, out, args[1 - i]);
    return out;
  }
  return std::nullopt;
}

void plan_run(Graph& graph) {
  // Intermediate values are dropped after their last reader; graph outputs are kept.
  std::vector<int64_t> last_reader(graph.num_values, -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto* ids : {&graph.nodes[i].inputs, &graph.nodes[i].implicit_inputs})
      for (int64_t id : *ids)
        if (id >= 0) last_reader[static_cast<size_t>(id)] = static_cast<int64_t>(i);
  graph.read.assign(graph.num_values, false);
  for (size_t id = 0; id < graph.num_values; ++id) graph.read[id] = last_reader[id] >= 0;
  for (int64_t id : graph.output_ids) {
    last_reader[static_cast<size_t>(id)] = -1;
    graph.read[static_cast<size_t>(id)] = true;
  }
  graph.last_uses.assign(graph.nodes.size(), {});
  for (size_t id = 0; id < graph.num_values; ++id)
    if (last_reader[id] >= 0) graph.last_uses[static_cast<size_t>(last_reader[id])].push_back(static_cast<int64_t>(id));
  std::vector<int64_t> initializer_at(graph.num_values, -1);  // by value id
  for (size_t i = 0; i < graph.initializer_ids.size(); ++i)
    initializer_at[static_cast<size_t>(graph.initializer_ids[i])] = static_cast<int64_t>(i);
  graph.initializer_outputs.clear();
  for (size_t k = 0; k < graph.output_ids.size(); ++k)
    if (const int64_t i = initializer_at[static_cast<size_t>(graph.output_ids[k])]; i >= 0)
      graph.initializer_outputs.emplace_back(k, static_cast<size_t>(i));

  graph.plans.assign(graph.nodes.size(), {});
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    NodePlan& plan = graph.plans[n];
    if (node.op_type == "UgReplay") plan.replay = OpContext(node, {}, graph.opset, 0).attr_int("index", -1);
    else plan.op = find_op(node.op_type);
    plan.in_place = elementwise(node);
    // An input read here for the last time moves into the call, unless the node reads it again
    // (a later slot or a subgraph's capture) or a graph output keeps it.
    plan.moves.assign(node.inputs.size(), false);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int64_t id = node.inputs[k];
      if (id < 0 || last_reader[static_cast<size_t>(id)] != static_cast<int64_t>(n)) continue;
      const bool again = std::find(node.inputs.begin() + static_cast<std::ptrdiff_t>(k) + 1, node.inputs.end(), id) !=
                             node.inputs.end() ||
                         std::ranges::find(node.implicit_inputs, id) != node.implicit_inputs.end();
      plan.moves[k] = !again;
    }
  }
}

std::vector<Tensor> run_graph(const Graph& g, std::vector<Tensor> values) {
  if (g.plans.size() != g.nodes.size()) fail<RuntimeError>("[onnx] the graph's run was not planned (plan_run)");
  std::vector<bool> produced(g.num_values);  // by a node (inputs, initializers and captures are not counted)
  // Elements of the node outputs alive now: a hostile graph cannot keep piling them up.
  int64_t live = 0;
  std::vector<Tensor> args, implicit;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const NodePlan& plan = g.plans[n];
    for (int64_t id : g.last_uses[n])
      if (produced[static_cast<size_t>(id)]) live -= values[static_cast<size_t>(id)].numel();
    args.clear();
    implicit.clear();
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int64_t id = node.inputs[k];
      if (id < 0) args.emplace_back();
      else if (plan.moves[k]) args.push_back(std::move(values[static_cast<size_t>(id)]));
      else args.push_back(values[static_cast<size_t>(id)]);
    }
    for (int64_t id : node.implicit_inputs) implicit.push_back(values[static_cast<size_t>(id)]);
    for (int64_t id : g.last_uses[n]) values[static_cast<size_t>(id)] = Tensor();
    const OpContext ctx(node, args, g.opset, g.limits.max_elements, &implicit);
    const debugging::TracedAt traced_at(node.doc);
    std::vector<Tensor> results;
    if (std::optional<Tensor> done = in_place(plan, node, args)) results.push_back(std::move(*done));
    else if (plan.op && plan.op->op_type == node.op_type) results = plan.op->run(ctx);
    else if (plan.op) ctx.fail("was rewritten after its graph's run was planned (plan_run)");
    else results = replay(g, plan, ctx, args);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] < 0) continue;
      if (o >= results.size() || !results[o].defined())
        ctx.fail("output ", o, " ('", g.value_names[static_cast<size_t>(node.outputs[o])], "') is not computed");
      const int64_t numel = results[o].numel();
      if (numel > g.limits.max_elements)
        ctx.fail("output ", o, " has ", numel, " elements, over LoadLimits::max_elements (", g.limits.max_elements,
                 ")");
      if (!g.read[static_cast<size_t>(node.outputs[o])]) continue;
      live += numel;
      if (live > g.limits.max_live_elements)
        ctx.fail("the values alive at once pass LoadLimits::max_live_elements (", g.limits.max_live_elements, ")");
      produced[static_cast<size_t>(node.outputs[o])] = true;
      values[static_cast<size_t>(node.outputs[o])] = std::move(results[o]);
    }
  }
  std::vector<Tensor> out;
  for (int64_t id : g.output_ids) out.push_back(values[static_cast<size_t>(id)]);
  return out;
}

const Graph& OpContext::attr_graph(std::string_view name) const {
  auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) fail("missing required attribute '", name, "'");
  const auto* g = std::get_if<std::shared_ptr<const Graph>>(&it->second);
  if (!g) fail<TypeError>("attribute '", name, "' must be a GRAPH");
  return **g;
}

std::vector<Tensor> OpContext::run_subgraph(std::string_view name, const std::vector<Tensor>& inputs) const {
  const Graph& g = attr_graph(name);
  if (inputs.size() != g.input_ids.size())
    fail("subgraph '", name, "' takes ", g.input_ids.size(), " input(s), the op gives it ", inputs.size());
  std::vector<Tensor> values(g.num_values);
  for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(g.input_ids[i])] = inputs[i];
  for (size_t i = 0; i < g.initializer_ids.size(); ++i)
    values[static_cast<size_t>(g.initializer_ids[i])] = g.initializers[i].second;
  for (size_t i = 0; i < g.capture_ids.size(); ++i)
    values[static_cast<size_t>(g.capture_ids[i])] = (*implicit_inputs_)[g.capture_slots[i]];
  std::vector<Tensor> out = run_graph(g, std::move(values));
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].defined()) fail("subgraph '", name, "' output ", i, " ('", g.outputs[i].name, "') is not computed");
  return out;
}

Tensor OnnxModule::forward(const Tensor& x) {
  if (graph_->inputs.size() != 1)
    fail("[onnx] forward(x) needs a model with one input; this one takes ", graph_->inputs.size(),
         ": call forward with a list");
  return forward(std::vector<Tensor>{x}).front();
}

std::string OnnxModule::extra_repr() const {
  std::string s =
      "opset=" + std::to_string(graph_->opset) + ", nodes=" + std::to_string(graph_->nodes.size()) + ", inputs=[";
  for (size_t i = 0; i < graph_->inputs.size(); ++i)
    s += (i ? ", " : "") + graph_->inputs[i].name + ": " + shape_string(graph_->inputs[i].shape);
  return s + "]";
}

std::shared_ptr<OnnxModule> load_bytes(std::string_view bytes, const std::string& base_dir, const LoadLimits& limits) {
  Graph graph = parse_model(bytes, base_dir, limits);
  fuse_conv_relu(graph);  // a model file's run only: compiled programs keep their traced ops
  return std::make_shared<OnnxModule>(std::move(graph));
}

std::shared_ptr<OnnxModule> load(const std::string& path, const LoadLimits& limits) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail<FileNotFoundError>("[onnx] no such model file: ", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<FileNotFoundError>("[onnx] cannot open ", path);
  if (std::filesystem::file_size(path, ec) > static_cast<uintmax_t>(INT_MAX))
    fail("[onnx] ", path, " is over 2 GiB, protobuf's limit; keep the weights in external data");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return load_bytes(bytes, base_dir.empty() ? "." : base_dir, limits);
}

}  // namespace ug::onnx
