// The one engine behind every style of differentiation: Tensor::backward, autograd::grad,
// GradientTape.gradient and the functional transforms all walk the recorded graph here.
#pragma once

#include <optional>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::autograd {

/** Adds d(outputs)/d(leaf) into every reachable leaf's .grad (Tensor::backward). With
 *  `inputs` (torch's backward(inputs=...)), only into those tensors' .grad, leaves or not;
 *  an input the outputs do not depend on is left alone. */
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false, const std::vector<Tensor>& inputs = {});

/** Returns d(outputs)/d(inputs) without touching any .grad (torch.autograd.grad). Inputs
 *  that outputs do not depend on raise unless allow_unused, and then come back undefined. */
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = {},
                         bool create_graph = false, bool allow_unused = false);

}  // namespace ug::autograd
