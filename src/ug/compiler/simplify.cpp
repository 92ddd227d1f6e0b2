#include "ug/compiler/simplify.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/onnx/graph.h"
#include "ug/onnx/op_table.h"

namespace ug::compiler {

namespace {

/** A node run for what it does, not for its outputs (a print, an optimizer's step): kept even
 *  when nothing reads them. */
bool has_side_effect(const onnx::Node& n) {
  if (n.op_type != "UgReplay") return false;
  auto it = n.attributes.find("effect");
  return it != n.attributes.end() && std::holds_alternative<int64_t>(it->second) && std::get<int64_t>(it->second) != 0;
}

/** Whether two runs of the node on the same inputs give the same values: not a draw, not a
 *  call back into an op without a graph form (a draw, an optimizer's update: replays are
 *  never assumed pure), not a node holding a subgraph or a tensor the comparison would have
 *  to look into. */
bool is_pure(const onnx::Node& n) {
  static const std::vector<std::string_view> kDraws{
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  if (n.op_type == "UgReplay" || std::ranges::find(kDraws, n.op_type) != kDraws.end()) return false;
  if (!n.implicit_inputs.empty()) return false;
  for (const auto& [name, value] : n.attributes)
    if (!std::holds_alternative<double>(value) && !std::holds_alternative<int64_t>(value) &&
        !std::holds_alternative<std::string>(value) && !std::holds_alternative<std::vector<double>>(value) &&
        !std::holds_alternative<std::vector<int64_t>>(value) &&
        !std::holds_alternative<std::vector<std::string>>(value))
      return false;
  return true;
}

/** What makes two pure nodes compute the same values. */
using NodeKey = std::tuple<std::string, std::vector<int64_t>, std::string>;

/** A double by its bits: std::to_string's six decimals would make 1e-7 and 2e-7 one key. */
std::string exact(double x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return std::to_string(bits);
}

std::string attributes_key(const onnx::Node& n) {
  std::string key;
  for (const auto& [name, value] : n.attributes) {
    key += name;
    key += '=';
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, double>) key += exact(v);
          else if constexpr (std::is_same_v<V, int64_t>) key += std::to_string(v);
          else if constexpr (std::is_same_v<V, std::string>) key += std::to_string(v.size()) + ":" + v;
          else if constexpr (std::is_same_v<V, std::vector<double>>)
            for (double x : v) key += exact(x) + ",";
          else if constexpr (std::is_same_v<V, std::vector<int64_t>>)
            for (int64_t x : v) key += std::to_string(x) + ",";
          else if constexpr (std::is_same_v<V, std::vector<std::string>>)
            for (const auto& x : v) key += std::to_string(x.size()) + ":" + x + ",";
        },
        value);
    key += ';';
  }
  return key;
}

/** Folded results larger than this stay computed at run time: a program should not hold a
 *  broadcast of a scalar to an activation's size as a constant. */
constexpr int64_t kMaxFoldedElements = 1 << 12;

size_t fold_constants(onnx::Graph& g, const std::unordered_set<int64_t>& live) {
  std::vector<Tensor> constant(g.num_values);
  for (size_t i = 0; i < g.initializer_ids.size(); ++i)
    if (!live.contains(g.initializer_ids[i]))
      constant[static_cast<size_t>(g.initializer_ids[i])] = g.initializers[i].second;
  NoGradGuard no_grad;
  size_t folded = 0;
  std::vector<onnx::Node> kept;
  for (onnx::Node& n : g.nodes) {
    bool foldable = is_pure(n) && !n.inputs.empty();
    for (int64_t id : n.inputs) foldable = foldable && (id < 0 || constant[static_cast<size_t>(id)].defined());
    const onnx::OpSpec* spec = foldable ? onnx::find_op(n.op_type) : nullptr;
    if (!spec) {
      kept.push_back(std::move(n));
      continue;
    }
    std::vector<Tensor> args;
    for (int64_t id : n.inputs) args.push_back(id < 0 ? Tensor() : constant[static_cast<size_t>(id)]);
    const onnx::OpContext ctx(n, args, g.opset, g.limits.max_elements);
    std::vector<Tensor> results;
    try {
      results = spec->run(ctx);
    } catch (const std::exception&) {
      // Left to run time, which raises it if the program needs the value (a dead node's
      // error must not fail the compile).
      kept.push_back(std::move(n));
      continue;
    }
    bool small = results.size() >= n.outputs.size();
    for (size_t o = 0; small && o < n.outputs.size(); ++o)
      small = n.outputs[o] < 0 || (results[o].defined() && results[o].numel() <= kMaxFoldedElements);
    if (!small) {
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int64_t id = n.outputs[o];
      if (id < 0) continue;
      Tensor value = results[o].contiguous();
      constant[static_cast<size_t>(id)] = value;
      g.initializers.emplace_back(g.value_names[static_cast<size_t>(id)], value);
      g.initializer_ids.push_back(id);
    }
    ++folded;
  }
  g.nodes = std::move(kept);
  return folded;
}

/** Makes equal small constants one value (each `+ 1` of a trace is an initializer of its own),
 *  so that the nodes reading them can merge. */
void share_constants(const onnx::Graph& g, const std::unordered_set<int64_t>& live, std::vector<int64_t>& same) {
  std::map<std::tuple<DType, std::vector<int64_t>, std::string>, int64_t> seen;
  for (size_t i = 0; i < g.initializers.size(); ++i) {
    const int64_t id = g.initializer_ids[i];
    const Tensor& t = g.initializers[i].second;
    if (live.contains(id) || !t.defined() || t.numel() > kMaxFoldedElements || t.device().type != DeviceType::CPU)
      continue;
    const Tensor c = t.contiguous();
    std::string bytes(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * c.element_size());
    auto [it, fresh] =
        seen.try_emplace({t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()), std::move(bytes)}, id);
    if (!fresh) same[static_cast<size_t>(id)] = it->second;
  }
}

size_t merge_common(onnx::Graph& g, std::vector<int64_t>& same) {
  auto resolve = [&](int64_t id) { return id < 0 ? id : same[static_cast<size_t>(id)]; };
  std::map<NodeKey, size_t> seen;  // -> the index in kept of the node that computes it
  std::vector<onnx::Node> kept;
  size_t merged = 0;
  for (onnx::Node& n : g.nodes) {
    for (int64_t& id : n.inputs) id = resolve(id);
    for (int64_t& id : n.implicit_inputs) id = resolve(id);
    if (!is_pure(n)) {
      kept.push_back(std::move(n));
      continue;
    }
    NodeKey key{n.op_type, n.inputs, attributes_key(n)};
    auto it = seen.find(key);
    bool same_outputs = it != seen.end() && kept[it->second].outputs.size() == n.outputs.size();
    for (size_t o = 0; same_outputs && o < n.outputs.size(); ++o)
      same_outputs = n.outputs[o] < 0 || kept[it->second].outputs[o] >= 0;
    if (!same_outputs) {
      seen[key] = kept.size();
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) same[static_cast<size_t>(n.outputs[o])] = kept[it->second].outputs[o];
    ++merged;
  }
  g.nodes = std::move(kept);
  for (int64_t& id : g.output_ids) id = resolve(id);
  return merged;
}

}  // namespace

SimplifyStats simplify(onnx::Graph& g, const std::unordered_set<int64_t>& live) {
  SimplifyStats stats;
  std::vector<int64_t> same(g.num_values);  // the value each value is (after forwarding)
  std::iota(same.begin(), same.end(), 0);
  auto resolve = [&](int64_t id) { return id < 0 ? id : same[static_cast<size_t>(id)]; };
  std::vector<onnx::Node> kept;
  for (onnx::Node& n : g.nodes) {
    for (int64_t& id : n.inputs) id = resolve(id);
    for (int64_t& id : n.implicit_inputs) id = resolve(id);
    if (n.op_type == "Identity" && n.inputs.size() == 1 && n.inputs[0] >= 0 && n.outputs.size() == 1 &&
        n.outputs[0] >= 0) {
      same[static_cast<size_t>(n.outputs[0])] = n.inputs[0];
      ++stats.identities;
      continue;
    }
    kept.push_back(std::move(n));
  }
  for (int64_t& id : g.output_ids) id = resolve(id);
  g.nodes = std::move(kept);
  stats.folded = fold_constants(g, live);
  share_constants(g, live, same);
  stats.merged = merge_common(g, same);

  std::vector<bool> needed(g.num_values, false);
  for (int64_t id : g.output_ids) needed[static_cast<size_t>(id)] = true;
  std::vector<bool> used(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const onnx::Node& n = g.nodes[i];
    bool wanted = has_side_effect(n);
    for (int64_t id : n.outputs) wanted = wanted || (id >= 0 && needed[static_cast<size_t>(id)]);
    if (!wanted) continue;
    used[i] = true;
    for (const auto* ids : {&n.inputs, &n.implicit_inputs})
      for (int64_t id : *ids)
        if (id >= 0) needed[static_cast<size_t>(id)] = true;
  }
  kept.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (used[i]) kept.push_back(std::move(g.nodes[i]));
    else ++stats.dead;
  }
  g.nodes = std::move(kept);
  // Constants that only dead nodes read, or that merged into an equal one, go too.
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<int64_t> initializer_ids;
  for (size_t i = 0; i < g.initializers.size(); ++i) {
    const int64_t id = g.initializer_ids[i];
    if (!needed[static_cast<size_t>(id)] && !live.contains(id)) continue;
    initializers.push_back(std::move(g.initializers[i]));
    initializer_ids.push_back(id);
  }
  g.initializers = std::move(initializers);
  g.initializer_ids = std::move(initializer_ids);
  onnx::plan_run(g);
  return stats;
}

}  // namespace ug::compiler
