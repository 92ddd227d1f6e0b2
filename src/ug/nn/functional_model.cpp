#include "ug/nn/functional_model.h"

#include <algorithm>

#include "ug/core/error.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/linear.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug::nn {

MergeImpl::MergeImpl(const std::string& type_name, const std::string& name)
    : Module(type_name), name_(keras_layer_name(type_name, name)) {}

namespace {
void check_inputs(const std::string& layer, const std::vector<Tensor>& inputs) {
  if (inputs.size() < 2) fail<ValueError>("[", layer, "] expects a list of at least 2 inputs, got ", inputs.size());
}
}  // namespace

Tensor AddImpl::merge(const std::vector<Tensor>& inputs) {
  check_inputs("Add", inputs);
  Tensor out = inputs[0] + inputs[1];
  for (size_t i = 2; i < inputs.size(); ++i) out = out + inputs[i];
  return out;
}

Tensor MultiplyImpl::merge(const std::vector<Tensor>& inputs) {
  check_inputs("Multiply", inputs);
  Tensor out = inputs[0] * inputs[1];
  for (size_t i = 2; i < inputs.size(); ++i) out = out * inputs[i];
  return out;
}

Tensor ConcatenateImpl::merge(const std::vector<Tensor>& inputs) {
  check_inputs("Concatenate", inputs);
  return cat(inputs, axis_);
}

KerasActivationImpl::KerasActivationImpl(const std::string& activation_name, const std::string& name,
                                         const std::string& dtype)
    : Module("Activation"),
      activation_(activation_name),
      name_(keras_layer_name("Activation", name)),
      dtypes_(dtype),
      fn_(activation(activation_name)) {}

Tensor KerasActivationImpl::forward(const Tensor& x) {
  const Tensor in = dtypes_.cast_input(x);
  return fn_ ? fn_(in) : in;
}

FunctionalImpl::FunctionalImpl(int64_t inputs, std::string name, std::vector<Shape> input_shapes,
                               std::vector<std::string> input_names)
    : Module("Functional"),
      num_inputs_(inputs),
      name_(std::move(name)),
      input_shapes_(std::move(input_shapes)),
      input_names_(std::move(input_names)) {
  if (inputs < 1) fail<ValueError>("[Functional] needs at least one input, got ", inputs);
  if (!input_shapes_.empty() && static_cast<int64_t>(input_shapes_.size()) != inputs)
    fail<ValueError>("[Functional] got ", input_shapes_.size(), " input shapes for ", inputs, " inputs");
  if (!input_names_.empty() && static_cast<int64_t>(input_names_.size()) != inputs)
    fail<ValueError>("[Functional] got ", input_names_.size(), " input names for ", inputs, " inputs");
  for (int64_t i = static_cast<int64_t>(input_names_.size()); i < inputs; ++i)
    input_names_.push_back(i == 0 ? "input_layer" : "input_layer_" + std::to_string(i));
  last_use_.assign(inputs, -1);
}

int64_t FunctionalImpl::add_layer(const std::string& name, std::shared_ptr<Module> layer) {
  auto it = std::find(layers_.begin(), layers_.end(), layer);
  if (it != layers_.end()) return it - layers_.begin();
  if (std::find(names_.begin(), names_.end(), name) != names_.end())
    fail<ValueError>("[Functional] two layers are named '", name, "'; layer names must be unique");
  register_module(name, layer);
  layers_.push_back(std::move(layer));
  names_.push_back(name);
  return static_cast<int64_t>(layers_.size()) - 1;
}

int64_t FunctionalImpl::add_node(int64_t layer, std::vector<int64_t> inputs, Shape shape) {
  if (layer < 0 || layer >= static_cast<int64_t>(layers_.size()))
    fail<ValueError>("[Functional] no layer ", layer, " (", layers_.size(), " layers)");
  const int64_t id = static_cast<int64_t>(last_use_.size());
  if (inputs.empty()) fail<ValueError>("[Functional] the node of layer '", names_[layer], "' reads no value");
  if (inputs.size() > 1 && !dynamic_cast<MergeImpl*>(layers_[layer].get()))
    fail<ValueError>("[Functional] layer '", names_[layer], "' (", layers_[layer]->type_name(),
                     ") takes one input, got ", inputs.size());
  for (int64_t v : inputs) {
    if (v < 0 || v >= id)
      fail<ValueError>("[Functional] the node of layer '", names_[layer], "' reads value ", v,
                       ", which is not an input or an earlier node");
    last_use_[v] = static_cast<int64_t>(nodes_.size());
  }
  nodes_.push_back({layer, std::move(inputs), std::move(shape)});
  last_use_.push_back(-1);
  return id;
}

void FunctionalImpl::set_outputs(std::vector<int64_t> outputs, std::vector<std::string> keys) {
  if (outputs.empty()) fail<ValueError>("[Functional] needs at least one output");
  if (!keys.empty() && keys.size() != outputs.size())
    fail<ValueError>("[Functional] ", outputs.size(), " outputs need as many keys, got ", keys.size());
  for (int64_t v : outputs)
    if (v < 0 || v >= static_cast<int64_t>(last_use_.size()))
      fail<ValueError>("[Functional] output ", v, " is not a value of the graph");
  outputs_ = std::move(outputs);
  output_keys_ = std::move(keys);
}

std::vector<std::string> FunctionalImpl::output_names() const {
  if (!output_keys_.empty()) return output_keys_;
  std::vector<std::string> names;
  for (int64_t v : outputs_) names.push_back(v < num_inputs_ ? input_names_[v] : names_[nodes_[v - num_inputs_].layer]);
  return names;
}

std::vector<Tensor> FunctionalImpl::forward_all(const std::vector<Tensor>& inputs) {
  if (static_cast<int64_t>(inputs.size()) != num_inputs_)
    fail<ValueError>("[", name_, "] expects ", num_inputs_, " inputs, got ", inputs.size());
  if (outputs_.empty()) fail<ValueError>("[", name_, "] has no outputs: call set_outputs first");
  std::vector<Tensor> values(last_use_.size());
  std::copy(inputs.begin(), inputs.end(), values.begin());
  std::vector<bool> kept(values.size(), false);  // outputs (and inputs) are never freed
  for (int64_t v : outputs_) kept[v] = true;
  for (int64_t v = 0; v < num_inputs_; ++v) kept[v] = true;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    Module& layer = *layers_[node.layer];
    Tensor out;
    if (node.inputs.size() == 1) {
      out = layer(values[node.inputs[0]]);
    } else {
      std::vector<Tensor> args;
      for (int64_t v : node.inputs) args.push_back(values[v]);
      auto* merge = static_cast<MergeImpl*>(&layer);  // add_node checked it
      out = layer.call(std::move(args),
                       [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{merge->merge(in)}; })[0];
    }
    values[num_inputs_ + n] = std::move(out);
    for (int64_t v : node.inputs)
      if (last_use_[v] == static_cast<int64_t>(n) && !kept[v]) values[v] = Tensor();
  }
  std::vector<Tensor> result;
  for (int64_t v : outputs_) result.push_back(values[v]);
  return result;
}

Tensor FunctionalImpl::forward(const Tensor& x) {
  if (outputs_.size() != 1)
    fail<ValueError>("[", name_, "] has ", outputs_.size(), " outputs: forward_all returns them all");
  return forward_all({x})[0];
}

std::string FunctionalImpl::summary() const {
  std::vector<detail::SummaryRow> rows;
  for (int64_t i = 0; i < num_inputs_; ++i) {
    Shape shape = input_shapes_.empty() ? Shape{} : input_shapes_[i];
    rows.push_back({input_names_[i], "InputLayer", shape, 0});
  }
  std::vector<bool> counted(layers_.size(), false);
  for (const Node& node : nodes_) {
    const auto& layer = layers_[node.layer];
    rows.push_back(
        {names_[node.layer], layer->type_name(), node.shape, counted[node.layer] ? 0 : layer->num_parameters()});
    counted[node.layer] = true;
  }
  return detail::summary_table(name_, rows, num_parameters(), num_parameters(true));
}

}  // namespace ug::nn
