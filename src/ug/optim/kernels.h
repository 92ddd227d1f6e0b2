// The optimizers' update rules as fused loops over contiguous float32/float64 arrays: one
// pass reads a parameter's gradient and state and writes the new parameter and state, in the
// operation order of torch's single-tensor implementations (scalars rounded to T as torch
// does), or of Keras's for the keras_* rules. Each rule updates elements [begin, end), so
// the caller can split the work.
#pragma once

#include <cstdint>

namespace ug::optim::kernels {

template <class T> struct SgdArgs {
  T* param;
  const T* grad;
  T* momentum_buffer;  // null without momentum
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  bool first_step;  // the buffer starts as the (decayed) gradient
};

template <class T> struct AdamArgs {
  T* param;
  const T* grad;  // may be param: element i is read before it is written
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;  // null without amsgrad
  double lr, beta1, beta2, eps, weight_decay, step;
  bool decoupled_weight_decay, maximize;
  /** Where the parameter and state are read from when not where they are written (the
   *  functional update: one pass instead of a copy and an update in place); null: in place.
   *  With param_in, param receives the update (the new value minus param_in, rounded as
   *  update()'s subtraction was), so that no pass of its own subtracts; with applied too,
   *  param_in + that update (apply_updates' addition, folded into the same pass). param_in
   *  without the state's *_in: the state is updated in place (a donated compiled step's). */
  const T* param_in = nullptr;
  const T* exp_avg_in = nullptr;
  const T* exp_avg_sq_in = nullptr;
  const T* max_exp_avg_sq_in = nullptr;
  bool applied = false;
};

template <class T> struct RmspropArgs {
  T* param;
  const T* grad;
  T* square_avg;
  T* momentum_buffer;  // null without momentum
  T* grad_avg;         // null unless centered
  double lr, alpha, eps, weight_decay, momentum;
  bool maximize;
};

template <class T> struct AdagradArgs {
  T* param;
  const T* grad;
  T* sum;
  double clr, eps, weight_decay;  // clr: the learning rate after lr_decay
  bool maximize;
};

template <class T> struct NadamArgs {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  // c_grad = -lr (1 - mu) / (1 - mu_product), c_avg = -lr mu_next / (1 - mu_product mu_next)
  double lr, beta1, beta2, eps, weight_decay, bias_correction2, c_grad, c_avg;
  bool decoupled_weight_decay, maximize;
};

template <class T> struct RadamArgs {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  double lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2;
  double rect;  // the rectification term where rho_t > 5; 0: the un-adapted step
  bool decoupled_weight_decay, maximize;
};

template <class T> struct AdamaxArgs {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_inf;
  double clr, beta1, beta2, eps, weight_decay;  // clr: lr / (1 - beta1^step)
  bool maximize;
};

template <class T> struct AdadeltaArgs {
  T* param;
  const T* grad;
  T* square_avg;
  T* acc_delta;
  double lr, rho, eps, weight_decay;
  bool maximize;
};

template <class T> struct RpropArgs {
  T* param;
  const T* grad;
  T* prev;
  T* step_size;
  double etaminus, etaplus, step_size_min, step_size_max;
  bool maximize;
};

// Keras's rules (keras/src/optimizers/*.py): every scalar is made in T and combined in
// Keras's order, so float32 steps round as Keras's do. weight_decay != 0 first shrinks the
// parameter, var -= var * weight_decay * lr, as Keras's base optimizer does before each step.

template <class T> struct AsgdArgs {
  T* param;
  const T* grad;
  T* ax;
  double eta, lambd, mu, weight_decay;  // mu == 1: the average is the parameter itself
  bool maximize;
};

template <class T> struct AdafactorArgs {
  T* param;
  const T* grad;
  T* row_var;   // [batch, rows] where factored (2 or more dimensions), else null
  T* col_var;   // [batch, cols] where factored, else null
  T* variance;  // [numel] where not factored, else null
  int64_t numel, batch, rows, cols;
  double lr, weight_decay, one_minus_beta2, rho, eps1, eps2, d;
  bool maximize;
};

template <class T> struct KerasSgdArgs {
  T* param;
  const T* grad;
  T* momentum_buffer;  // null without momentum
  double lr, momentum, weight_decay;
  bool nesterov;
};

template <class T> struct KerasAdamArgs {
  T* param;
  const T* grad;
  T* momentum;
  T* velocity;
  T* velocity_hat;  // null without amsgrad
  double lr, beta_1, beta_2, epsilon, weight_decay, step;
};

template <class T> struct KerasRmspropArgs {
  T* param;
  const T* grad;
  T* velocity;
  T* momentum_buffer;   // null without momentum
  T* average_gradient;  // null unless centered
  double lr, rho, momentum, epsilon, weight_decay;
};

template <class T> struct KerasAdagradArgs {
  T* param;
  const T* grad;
  T* accumulator;
  double lr, epsilon, weight_decay;
};

void sgd(const SgdArgs<float>& a, int64_t begin, int64_t end);
void sgd(const SgdArgs<double>& a, int64_t begin, int64_t end);
void adam(const AdamArgs<float>& a, int64_t begin, int64_t end);
void adam(const AdamArgs<double>& a, int64_t begin, int64_t end);
void rmsprop(const RmspropArgs<float>& a, int64_t begin, int64_t end);
void rmsprop(const RmspropArgs<double>& a, int64_t begin, int64_t end);
void adagrad(const AdagradArgs<float>& a, int64_t begin, int64_t end);
void adagrad(const AdagradArgs<double>& a, int64_t begin, int64_t end);
void nadam(const NadamArgs<float>& a, int64_t begin, int64_t end);
void nadam(const NadamArgs<double>& a, int64_t begin, int64_t end);
void radam(const RadamArgs<float>& a, int64_t begin, int64_t end);
void radam(const RadamArgs<double>& a, int64_t begin, int64_t end);
void adamax(const AdamaxArgs<float>& a, int64_t begin, int64_t end);
void adamax(const AdamaxArgs<double>& a, int64_t begin, int64_t end);
void adadelta(const AdadeltaArgs<float>& a, int64_t begin, int64_t end);
void adadelta(const AdadeltaArgs<double>& a, int64_t begin, int64_t end);
void rprop(const RpropArgs<float>& a, int64_t begin, int64_t end);
void rprop(const RpropArgs<double>& a, int64_t begin, int64_t end);
void asgd(const AsgdArgs<float>& a, int64_t begin, int64_t end);
void asgd(const AsgdArgs<double>& a, int64_t begin, int64_t end);
/** Adafactor's step over a whole parameter: its norms need every element before the update. */
void adafactor(const AdafactorArgs<float>& a);
void adafactor(const AdafactorArgs<double>& a);
void keras_sgd(const KerasSgdArgs<float>& a, int64_t begin, int64_t end);
void keras_sgd(const KerasSgdArgs<double>& a, int64_t begin, int64_t end);
void keras_adam(const KerasAdamArgs<float>& a, int64_t begin, int64_t end);
void keras_adam(const KerasAdamArgs<double>& a, int64_t begin, int64_t end);
void keras_rmsprop(const KerasRmspropArgs<float>& a, int64_t begin, int64_t end);
void keras_rmsprop(const KerasRmspropArgs<double>& a, int64_t begin, int64_t end);
void keras_adagrad(const KerasAdagradArgs<float>& a, int64_t begin, int64_t end);
void keras_adagrad(const KerasAdagradArgs<double>& a, int64_t begin, int64_t end);

}  // namespace ug::optim::kernels
