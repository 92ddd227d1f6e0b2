// CTCLoss: functional::ctc_loss with its options held.
#pragma once

#include "ug/nn/functional/ctc_loss.h"
#include "ug/nn/layers/loss.h"

namespace ug::nn {

/** forward(log_probs, targets, input_lengths, target_lengths). */
class CTCLossImpl : public LossImpl {
  UG_CLONEABLE(CTCLossImpl)
 public:
  explicit CTCLossImpl(int64_t blank = 0, std::string reduction = "mean", bool zero_infinity = false)
      : LossImpl("CTCLoss", std::move(reduction)), blank_(blank), zero_infinity_(zero_infinity) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) {
    return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank_, reduction(), zero_infinity_);
  }

 private:
  int64_t blank_;
  bool zero_infinity_;
};
UG_MODULE(CTCLoss);

}  // namespace ug::nn
