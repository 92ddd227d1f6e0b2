// Program::generalize: tf.function's reduce_retracing. Two traces of one function at two
// shapes that are the same graph depend on no size where the shapes differ: everything a size
// could enter (a constant, an attribute, a closure of a called-back op, a Python-level read)
// is compared or refused here.
#include <algorithm>
#include <cstring>
#include <set>
#include <type_traits>
#include <variant>

#include "ug/compiler/program.h"
#include "ug/onnx/export.h"
#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.nbytes())) == 0;
}

bool same_graph(const onnx::Graph& a, const onnx::Graph& b, const std::set<int64_t>& live, std::string* why);

bool same_attribute(const onnx::Attribute& a, const onnx::Attribute& b) {
  if (a.index() != b.index()) return false;
  if (const auto* t = std::get_if<Tensor>(&a)) return same_tensor(*t, std::get<Tensor>(b));
  if (const auto* g = std::get_if<std::shared_ptr<const onnx::Graph>>(&a)) {
    std::string ignored;
    return same_graph(**g, *std::get<std::shared_ptr<const onnx::Graph>>(b), {}, &ignored);
  }
  if (const auto* u = std::get_if<onnx::Unsupported>(&a)) return u->type == std::get<onnx::Unsupported>(b).type;
  return std::visit(
      [&b](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::shared_ptr<const onnx::Graph>> ||
                      std::is_same_v<T, onnx::Unsupported>)
          return false;  // compared above
        else return x == std::get<T>(b);
      },
      a);
}

/** Whether a and b compute alike; `live` are initializer ids read live at each run (their
 *  trace-time values may differ). */
bool same_graph(const onnx::Graph& a, const onnx::Graph& b, const std::set<int64_t>& live, std::string* why) {
  if (a.opset != b.opset || a.num_values != b.num_values || a.nodes.size() != b.nodes.size() ||
      a.input_ids != b.input_ids || a.output_ids != b.output_ids || a.initializer_ids != b.initializer_ids ||
      a.capture_ids != b.capture_ids) {
    *why = "the two traces are different graphs";
    return false;
  }
  for (size_t i = 0; i < a.initializers.size(); ++i)
    if (!live.contains(a.initializer_ids[i]) && !same_tensor(a.initializers[i].second, b.initializers[i].second)) {
      *why = "a constant of the program depends on a size (" + a.initializers[i].first + ")";
      return false;
    }
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const onnx::Node &x = a.nodes[n], &y = b.nodes[n];
    bool same = x.op_type == y.op_type && x.inputs == y.inputs && x.outputs == y.outputs &&
                x.implicit_inputs == y.implicit_inputs && x.attributes.size() == y.attributes.size();
    for (auto i = x.attributes.begin(), j = y.attributes.begin(); same && i != x.attributes.end(); ++i, ++j)
      same = i->first == j->first && same_attribute(i->second, j->second);
    if (!same) {
      *why = "node " + std::to_string(n) + " (" + x.op_type + ") depends on a size";
      return false;
    }
    if (x.op_type == "UgReplay") {
      const auto op = x.attributes.find("op");
      const std::string name = op == x.attributes.end() ? "?" : std::get<std::string>(op->second);
      if (!x.attributes.contains("size_free")) {  // graph::OpCall::set_replay's ReplaySizes::None
        *why = "op '" + name + "' is called back with the sizes it was traced at";
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<std::vector<bool>> Program::read_dims() const {
  std::vector<std::vector<bool>> read;
  for (const onnx::ValueInfo& in : graph_->inputs) read.emplace_back(in.shape.size(), false);
  for (const onnx::Node& n : graph_->nodes) {
    if (n.op_type != "Shape" || n.inputs.empty()) continue;
    const auto input = std::find(graph_->input_ids.begin(), graph_->input_ids.end(), n.inputs[0]);
    if (input == graph_->input_ids.end()) continue;
    std::vector<bool>& dims = read[static_cast<size_t>(input - graph_->input_ids.begin())];
    const auto start = n.attributes.find("start"), end = n.attributes.find("end");
    const int64_t rank = static_cast<int64_t>(dims.size());
    auto at = [rank](const auto& it, int64_t otherwise) {
      if (!std::holds_alternative<int64_t>(it->second)) return otherwise;
      const int64_t v = std::get<int64_t>(it->second);
      return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
    };
    const int64_t from = start == n.attributes.end() ? 0 : at(start, 0);
    const int64_t to = end == n.attributes.end() ? rank : at(end, rank);
    for (int64_t d = from; d < to; ++d) dims[static_cast<size_t>(d)] = true;
  }
  return read;
}

std::optional<Program> Program::generalize(const Program& a, const Program& b, std::string* why) {
  for (const Program* p : {&a, &b})
    if (!p->shape_read_at_.empty()) {
      *why = "the function reads the shape of a traced tensor at " + p->shape_read_at_;
      return std::nullopt;
    }
  if (a.size_reads_ != b.size_reads_) {
    const auto [x, y] =
        std::mismatch(a.size_reads_.begin(), a.size_reads_.end(), b.size_reads_.begin(), b.size_reads_.end());
    const auto& named = x != a.size_reads_.end() ? *x : *y;
    *why = "op '" + named.first + "' made constants of the program from a size that differs between the traces";
    if (x != a.size_reads_.end() && y != b.size_reads_.end())
      *why += " (" + std::to_string(x->second) + " and " + std::to_string(y->second) + ")";
    return std::nullopt;
  }
  const onnx::Graph &ga = *a.graph_, &gb = *b.graph_;
  if (ga.inputs.size() != gb.inputs.size() || a.num_results_ != b.num_results_ ||
      a.state_->size() != b.state_->size() || a.grad_sources_->size() != b.grad_sources_->size() ||
      a.writes_->size() != b.writes_->size() || a.grad_writes_->size() != b.grad_writes_->size() ||
      *a.input_writes_ != *b.input_writes_ || !a.replaying_ != !b.replaying_) {
    *why = "the two traces are different graphs";
    return std::nullopt;
  }
  std::vector<std::vector<bool>> any_size = *a.any_size_;
  for (size_t i = 0; i < ga.inputs.size(); ++i) {
    const std::vector<int64_t>&x = ga.inputs[i].shape, &y = gb.inputs[i].shape;
    if (ga.inputs[i].dtype != gb.inputs[i].dtype || x.size() != y.size()) {
      *why = "input " + std::to_string(i) + " changed its dtype or rank";
      return std::nullopt;
    }
    for (size_t d = 0; d < x.size(); ++d) any_size[i][d] = any_size[i][d] || x[d] != y[d] || (*b.any_size_)[i][d];
  }
  std::set<int64_t> live;
  for (const auto* ids : {a.state_.get(), a.grad_sources_.get()})
    for (const auto& [id, tensor] : *ids) live.insert(id);
  if (!same_graph(ga, gb, live, why)) return std::nullopt;
  // What the file says: the dims that take any size, and the outputs' dims that followed them.
  std::vector<std::vector<bool>> out_any;
  const std::string& old_bytes = *b.bytes_;
  for (size_t i = 0; i < gb.outputs.size(); ++i) {
    const std::vector<int64_t>&x = ga.outputs[i].shape, &y = gb.outputs[i].shape;
    out_any.emplace_back(y.size(), false);
    for (size_t d = 0; d < y.size() && x.size() == y.size(); ++d) out_any[i][d] = x[d] != y[d] || y[d] < 0;
  }
  Program p = b;
  if (a.replaying_) {  // the same function: b has one too
    std::optional<Program> replaying = generalize(*a.replaying_, *b.replaying_, why);
    if (!replaying) return std::nullopt;
    p.replaying_ = std::make_shared<const Program>(std::move(*replaying));
  }
  p.bytes_ = std::make_shared<const std::string>(onnx::with_symbolic_dims(old_bytes, any_size, out_any));
  p.any_size_ = std::make_shared<const std::vector<std::vector<bool>>>(std::move(any_size));
  return p;
}

}  // namespace ug::compiler
