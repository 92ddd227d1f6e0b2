#include "ug/compiler/simplify.h"

#include <numeric>
#include <string>
#include <variant>
#include <vector>

#include "ug/onnx/graph.h"

namespace ug::compiler {

namespace {

/** A node run for what it does, not for its outputs (a print, an optimizer's step): kept even
 *  when nothing reads them. */
bool has_side_effect(const onnx::Node& n) {
  if (n.op_type != "UgReplay") return false;
  auto it = n.attributes.find("effect");
  return it != n.attributes.end() && std::holds_alternative<int64_t>(it->second) && std::get<int64_t>(it->second) != 0;
}

}  // namespace

SimplifyStats simplify(onnx::Graph& g) {
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

  std::vector<bool> needed(g.num_values, false);
  for (int64_t id : g.output_ids) needed[static_cast<size_t>(id)] = true;
  std::vector<bool> live(kept.size(), false);
  for (size_t i = kept.size(); i-- > 0;) {
    const onnx::Node& n = kept[i];
    bool used = has_side_effect(n);
    for (int64_t id : n.outputs) used = used || (id >= 0 && needed[static_cast<size_t>(id)]);
    if (!used) continue;
    live[i] = true;
    for (const auto* ids : {&n.inputs, &n.implicit_inputs})
      for (int64_t id : *ids)
        if (id >= 0) needed[static_cast<size_t>(id)] = true;
  }
  g.nodes.clear();
  for (size_t i = 0; i < kept.size(); ++i) {
    if (live[i]) g.nodes.push_back(std::move(kept[i]));
    else ++stats.dead;
  }
  onnx::plan_liveness(g);
  return stats;
}

}  // namespace ug::compiler
