// ug::optim::LBFGS: limited-memory BFGS, as torch.optim.LBFGS. Its step(closure) runs up to
// max_iter iterations, each a search direction from the last history_size (step, gradient
// change) pairs and a fixed step or a strong-Wolfe line search, evaluating the loss through
// the closure. One parameter group; the parameters are treated as one flat vector.
#pragma once

#include <optional>
#include <string>

#include "ug/optim/optimizer.h"

namespace ug::optim {

struct LBFGSOptions {
  LBFGSOptions(double lr = 1) : lr_(lr) {}
  UG_OPTIM_ARG(double, lr);
  UG_OPTIM_ARG(int64_t, max_iter) = 20;
  UG_OPTIM_ARG(std::optional<int64_t>, max_eval);  // default: max_iter * 5 / 4
  UG_OPTIM_ARG(double, tolerance_grad) = 1e-7;
  UG_OPTIM_ARG(double, tolerance_change) = 1e-9;
  UG_OPTIM_ARG(int64_t, history_size) = 100;
  UG_OPTIM_ARG(std::optional<std::string>, line_search_fn);  // none or "strong_wolfe"

 public:
  operator Hyper() const;
};

class LBFGS : public Optimizer {
 public:
  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
  explicit LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults = {});
  /** Minimizes by up to max_iter iterations; closure re-evaluates the loss and its gradients
   *  (zero_grad, forward, backward) and is required. Returns the first evaluation's loss. The
   *  state (of the first parameter, as torch's) holds the history as stacked rows. */
  Tensor step(const LossClosure& closure) override;

 protected:
  TensorDict init_state(const Tensor& param, const Hyper& group) const override;
  bool flat_state(const std::string&) const override { return true; }
  void update_param(const Hyper& group, const Tensor& param, const Tensor& grad, TensorDict& state) const override;
};

}  // namespace ug::optim
