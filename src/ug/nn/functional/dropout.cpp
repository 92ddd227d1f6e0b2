// Dropout multiplies by a mask tensor (kept / (1 - p), else 0): the product's own rule
// gives the gradient, and the mask is drawn once per call from the global generator.
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/feature_alpha_dropout.h"

#include <cmath>

#include "ug/nn/functional/elementwise_grad.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"

namespace ug::nn::functional {

using detail::maybe_inplace;

namespace {

void check_p(double p, const char* op) {
  if (!(p >= 0 && p <= 1)) fail("[", op, "] dropout probability has to be between 0 and 1, but got ", p);
}

/** 1 / (1 - p) where a uniform draw of `shape` falls below 1 - p, 0 elsewhere, in x's dtype. */
Tensor keep_mask(const Tensor& x, const Dims& shape, double p) {
  const DType d = to_floating(x.dtype());
  if (p == 1) return zeros(shape, {.dtype = d, .device = x.device()});
  Tensor u = rand(shape, {.dtype = DType::Float32, .device = x.device()});
  return (u < 1 - p).to(d) * (1 / (1 - p));
}

Tensor feature_dropout(const Tensor& x, double p, bool training, bool inplace, int64_t spatial, const char* op) {
  check_p(p, op);
  // dropout1d is strict, as in torch; dropout2d/3d take any input with a channel dim (torch warns).
  const int64_t batched = spatial + 2, unbatched = spatial + 1;
  if (spatial == 1 ? x.dim() != batched && x.dim() != unbatched : x.dim() < 2)
    fail("[", op, "] expected ", unbatched, "-D or ", batched, "-D input, got shape ", x.shape());
  if (x.dim() != unbatched) spatial = x.dim() - 2;
  if (!training || p == 0) return x;
  // One draw per channel: the mask has x's leading (batch, channel) dims and size-1 spatial dims.
  Dims shape(x.shape().begin(), x.shape().end());
  for (int64_t d = x.dim() - spatial; d < x.dim(); ++d) shape[d] = 1;
  return maybe_inplace(x, inplace, [&](const Tensor& x) { return x * keep_mask(x, shape, p); });
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, bool inplace) {
  check_p(p, "dropout");
  if (!training || p == 0) return x;
  return maybe_inplace(x, inplace,
                       [p](const Tensor& x) { return x * keep_mask(x, Dims(x.shape().begin(), x.shape().end()), p); });
}

Tensor dropout1d(const Tensor& x, double p, bool training, bool inplace) {
  return feature_dropout(x, p, training, inplace, 1, "dropout1d");
}
Tensor dropout2d(const Tensor& x, double p, bool training, bool inplace) {
  return feature_dropout(x, p, training, inplace, 2, "dropout2d");
}
Tensor dropout3d(const Tensor& x, double p, bool training, bool inplace) {
  return feature_dropout(x, p, training, inplace, 3, "dropout3d");
}

namespace {

/** Alpha dropout with one draw per element of `shape` (x's, or its (N, C, 1, ...) for features). */
Tensor alpha_dropout_of(const Tensor& x, const Dims& shape, double p, bool inplace) {
  if (p == 1)
    return maybe_inplace(x, inplace,
                         [](const Tensor& x) { return x * zeros({}, {.dtype = x.dtype(), .device = x.device()}); });
  // torch's constants: an affine map a * x + b after dropping restores the zero mean and unit
  // variance that SELU keeps (dropped values go to SELU's negative saturation value).
  constexpr double alpha = 1.7580993408473766;
  const double a = 1 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  return maybe_inplace(x, inplace, [&](const Tensor& x) {
    Tensor keep = (rand(shape, {.dtype = DType::Float32, .device = x.device()}) < 1 - p).to(x.dtype());
    return x * (keep * a) + ((keep - 1) * (alpha * a) + alpha * a * p);
  });
}

}  // namespace

Tensor alpha_dropout(const Tensor& x, double p, bool training, bool inplace) {
  check_p(p, "alpha_dropout");
  if (!training || p == 0) return x;
  return alpha_dropout_of(x, Dims(x.shape().begin(), x.shape().end()), p, inplace);
}

Tensor feature_alpha_dropout(const Tensor& x, double p, bool training, bool inplace) {
  check_p(p, "feature_alpha_dropout");
  if (!training || p == 0 || x.numel() == 0) return x;
  if (x.dim() < 2)
    fail("[feature_alpha_dropout] feature dropout requires at least 2 dimensions in the input, got shape ", x.shape());
  Dims shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = x.size(0);
  shape[1] = x.size(1);
  return alpha_dropout_of(x, shape, p, inplace);
}

}  // namespace ug::nn::functional
