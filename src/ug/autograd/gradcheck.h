// torch.autograd.gradcheck / gradgradcheck: compare the derivative rules with central finite
// differences in float64, for users' functions and for unigrad's own tests.
#pragma once

#include "ug/autograd/functional.h"

namespace ug::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise_exception = true;  // false: return false instead of throwing
};

/** Checks d f(inputs) / d inputs for every float64 input that requires grad. Throws
 *  RuntimeError naming the output, the input and the worst element on a mismatch. */
bool gradcheck(const TensorFn& f, const Tensors& inputs, const GradcheckOptions& options = {});

/** Checks the second derivatives: gradcheck of (inputs, v) -> vjp(f, inputs)(v) for a random v. */
bool gradgradcheck(const TensorFn& f, const Tensors& inputs, const GradcheckOptions& options = {});

}  // namespace ug::autograd
