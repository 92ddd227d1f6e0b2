// ctc_loss: the connectionist temporal classification loss, as torch.nn.functional has it.
#pragma once

#include <string_view>

#include "ug/core/tensor.h"

namespace ug::nn::functional {

/** -log p(targets | log_probs) per sample, summed over the alignments (Graves et al. 2006):
 *  log_probs [T, N, C] (or unbatched [T, C]), targets [N, S] padded or 1-d concatenated,
 *  input_lengths and target_lengths [N] integers. "mean" divides each loss by its target length
 *  (at least 1) before the batch mean; zero_infinity makes impossible alignments' losses and
 *  gradients zero. As torch's, the gradient is exp(log_probs) minus the alignments' posteriors:
 *  the gradient through a log_softmax of the logits, which is how CTC is used. */
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, std::string_view reduction = "mean",
                bool zero_infinity = false);

}  // namespace ug::nn::functional
