// The losses compile() takes by Keras's names, each a function of (output, target).
//
// Logits or probabilities: Keras's string losses take probabilities (from_logits=False) and
// most Keras models end in a softmax or sigmoid, while PyTorch-style models end in a Linear
// layer and their losses take logits. So, unless told otherwise, a named loss takes
// probabilities when the model visibly ends in the matching activation (a Softmax, Sigmoid,
// or Dense(..., activation="softmax"/"sigmoid") layer, looked for through nested Sequentials)
// and logits otherwise: a model whose output is not visibly normalised is never read as
// probabilities, where a wrong guess would train badly without an error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/nn/module.h"

namespace ug::train {

/** loss(output, target) -> a scalar, in torch's argument order (ug::nn's loss modules and
 *  functions fit it as they are: CompileOptions{.loss = nn::CrossEntropyLoss()}). */
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/** The names loss_by_name knows, for error messages. */
const std::vector<std::string>& loss_names();

/** Keras's loss of that name: "sparse_categorical_crossentropy" (integer class targets),
 *  "categorical_crossentropy" (one-hot or probability targets), "binary_crossentropy",
 *  "mse"/"mean_squared_error", "mae"/"mean_absolute_error", "huber", "kl_divergence"/"kld"
 *  (probabilities in, as Keras's; from_logits does not apply). Probabilities are
 *  clipped into [1e-7, 1 - 1e-7] before the log, as Keras does. Unknown names raise a
 *  ValueError listing the known ones. */
LossFn loss_by_name(const std::string& name, bool from_logits);

/** The same loss per sample, unreduced (Keras's reduction="none"): the elementwise losses
 *  averaged over the last dim (summed, for categorical_crossentropy), the class losses one
 *  value per sample; a 1-D output's losses are elementwise. huber_delta: Huber's delta. */
LossFn per_sample_loss_by_name(const std::string& name, bool from_logits, double huber_delta = 1.0);

/** The canonical name ("mse" for "mean_squared_error"); throws for unknown names. */
std::string canonical_loss_name(const std::string& name);

/** "softmax" or "sigmoid" when the module's last step is that activation, "" otherwise. */
std::string output_activation(nn::Module& module);

/** Whether a named loss reads the model's output as logits (the rule above). */
bool loss_takes_logits(const std::string& loss_name, nn::Module& module);

}  // namespace ug::train
