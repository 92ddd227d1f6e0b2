// Loss modules: each holds its options and calls its function in ug::nn::functional.
// forward(input, target).
#pragma once

#include <string>

#include "ug/nn/functional/loss.h"
#include "ug/nn/module.h"

namespace ug::nn {

/** The reduction every loss takes: "mean", "sum" or "none". */
class LossImpl : public Module {
  UG_CLONEABLE(LossImpl)
 public:
  /** KLDivLoss also takes "batchmean". */
  LossImpl(std::string type_name, std::string reduction, bool batchmean_allowed = false);
  const std::string& reduction() const { return reduction_; }
  std::string extra_repr() const override { return ""; }

 private:
  std::string reduction_;
};

class CrossEntropyLossImpl : public LossImpl {
  UG_CLONEABLE(CrossEntropyLossImpl)
 public:
  explicit CrossEntropyLossImpl(Tensor weight = {}, int64_t ignore_index = -100, std::string reduction = "mean",
                                double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target);

 private:
  int64_t ignore_index_;
  double label_smoothing_;
};
UG_MODULE(CrossEntropyLoss);

class NLLLossImpl : public LossImpl {
  UG_CLONEABLE(NLLLossImpl)
 public:
  explicit NLLLossImpl(Tensor weight = {}, int64_t ignore_index = -100, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target);

 private:
  int64_t ignore_index_;
};
UG_MODULE(NLLLoss);

class MSELossImpl : public LossImpl {
  UG_CLONEABLE(MSELossImpl)
 public:
  explicit MSELossImpl(std::string reduction = "mean") : LossImpl("MSELoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) { return functional::mse_loss(input, target, reduction()); }
};
UG_MODULE(MSELoss);

class L1LossImpl : public LossImpl {
  UG_CLONEABLE(L1LossImpl)
 public:
  explicit L1LossImpl(std::string reduction = "mean") : LossImpl("L1Loss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) { return functional::l1_loss(input, target, reduction()); }
};
UG_MODULE(L1Loss);

class SmoothL1LossImpl : public LossImpl {
  UG_CLONEABLE(SmoothL1LossImpl)
 public:
  explicit SmoothL1LossImpl(std::string reduction = "mean", double beta = 1.0)
      : LossImpl("SmoothL1Loss", std::move(reduction)), beta_(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::smooth_l1_loss(input, target, reduction(), beta_);
  }

 private:
  double beta_;
};
UG_MODULE(SmoothL1Loss);

class HuberLossImpl : public LossImpl {
  UG_CLONEABLE(HuberLossImpl)
 public:
  explicit HuberLossImpl(std::string reduction = "mean", double delta = 1.0)
      : LossImpl("HuberLoss", std::move(reduction)), delta_(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::huber_loss(input, target, reduction(), delta_);
  }

 private:
  double delta_;
};
UG_MODULE(HuberLoss);

class BCELossImpl : public LossImpl {
  UG_CLONEABLE(BCELossImpl)
 public:
  explicit BCELossImpl(Tensor weight = {}, std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target);
};
UG_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public LossImpl {
  UG_CLONEABLE(BCEWithLogitsLossImpl)
 public:
  explicit BCEWithLogitsLossImpl(Tensor weight = {}, std::string reduction = "mean", Tensor pos_weight = {});
  Tensor forward(const Tensor& input, const Tensor& target);
};
UG_MODULE(BCEWithLogitsLoss);

class KLDivLossImpl : public LossImpl {
  UG_CLONEABLE(KLDivLossImpl)
 public:
  explicit KLDivLossImpl(std::string reduction = "mean", bool log_target = false)
      : LossImpl("KLDivLoss", std::move(reduction), true), log_target_(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::kl_div(input, target, reduction(), log_target_);
  }

 private:
  bool log_target_;
};
UG_MODULE(KLDivLoss);

class PoissonNLLLossImpl : public LossImpl {
  UG_CLONEABLE(PoissonNLLLossImpl)
 public:
  explicit PoissonNLLLossImpl(bool log_input = true, bool full = false, double eps = 1e-8,
                              std::string reduction = "mean")
      : LossImpl("PoissonNLLLoss", std::move(reduction)), log_input_(log_input), full_(full), eps_(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::poisson_nll_loss(input, target, log_input_, full_, eps_, reduction());
  }

 private:
  bool log_input_, full_;
  double eps_;
};
UG_MODULE(PoissonNLLLoss);

class GaussianNLLLossImpl : public LossImpl {
  UG_CLONEABLE(GaussianNLLLossImpl)
 public:
  explicit GaussianNLLLossImpl(bool full = false, double eps = 1e-6, std::string reduction = "mean")
      : LossImpl("GaussianNLLLoss", std::move(reduction)), full_(full), eps_(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) {
    return functional::gaussian_nll_loss(input, target, var, full_, eps_, reduction());
  }

 private:
  bool full_;
  double eps_;
};
UG_MODULE(GaussianNLLLoss);

}  // namespace ug::nn
