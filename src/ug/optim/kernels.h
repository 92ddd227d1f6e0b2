// The optimizers' update rules as fused loops over contiguous float32/float64 arrays: one
// pass reads a parameter's gradient and state and writes the new parameter and state, in the
// operation order of torch's single-tensor implementations (scalars rounded to T as torch
// does). Each rule updates elements [begin, end), so the caller can split the work.
#pragma once

#include <cstdint>

namespace ug::optim::kernels {

template <class T>
struct SgdArgs {
  T* param;
  const T* grad;
  T* momentum_buffer;  // null without momentum
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  bool first_step;  // the buffer starts as the (decayed) gradient
};

template <class T>
struct AdamArgs {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;  // null without amsgrad
  double lr, beta1, beta2, eps, weight_decay, step;
  bool decoupled_weight_decay, maximize;
};

template <class T>
struct RmspropArgs {
  T* param;
  const T* grad;
  T* square_avg;
  T* momentum_buffer;  // null without momentum
  T* grad_avg;         // null unless centered
  double lr, alpha, eps, weight_decay, momentum;
  bool maximize;
};

template <class T>
struct AdagradArgs {
  T* param;
  const T* grad;
  T* sum;
  double clr, eps, weight_decay;  // clr: the learning rate after lr_decay
  bool maximize;
};

void sgd(const SgdArgs<float>& a, int64_t begin, int64_t end);
void sgd(const SgdArgs<double>& a, int64_t begin, int64_t end);
void adam(const AdamArgs<float>& a, int64_t begin, int64_t end);
void adam(const AdamArgs<double>& a, int64_t begin, int64_t end);
void rmsprop(const RmspropArgs<float>& a, int64_t begin, int64_t end);
void rmsprop(const RmspropArgs<double>& a, int64_t begin, int64_t end);
void adagrad(const AdagradArgs<float>& a, int64_t begin, int64_t end);
void adagrad(const AdagradArgs<double>& a, int64_t begin, int64_t end);

}  // namespace ug::optim::kernels
