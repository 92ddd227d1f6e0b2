#include "ug/nn/init.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"

namespace ug::nn::init {

namespace {

double fan(const Tensor& t, const std::string& mode, const char* op) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (mode == "fan_in") return static_cast<double>(fan_in);
  if (mode == "fan_out") return static_cast<double>(fan_out);
  fail("[", op, "] mode must be \"fan_in\" or \"fan_out\", got \"", mode, "\"");
}

void require_floating(const Tensor& t, const char* op) {
  if (!t.is_floating_point()) fail<TypeError>("[", op, "] needs a floating tensor, got ", t.dtype());
}

/** The inverse of erf on (-1, 1): a rational first guess refined by Newton steps on erf. */
double erfinv(double y) {
  const double a = 0.147, ln = std::log(1 - y * y), t = 2 / (M_PI * a) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), y);
  for (int i = 0; i < 3; ++i) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, double param) {
  static const char* linear_like[] = {"linear",           "conv1d",           "conv2d",           "conv3d",
                                      "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* name : linear_like)
    if (nonlinearity == name) return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4;
  fail("[calculate_gain] unsupported nonlinearity \"", nonlinearity, "\"");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2) fail("[init] fan in and fan out need a tensor of at least 2 dims, got shape ", t.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor& uniform_(Tensor& t, double a, double b) {
  require_floating(t, "uniform_");
  NoGradGuard no_grad;
  return ug::uniform_(t, a, b);
}

Tensor& normal_(Tensor& t, double mean, double std) {
  require_floating(t, "normal_");
  NoGradGuard no_grad;
  return ug::normal_(t, mean, std);
}

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b) {
  require_floating(t, "trunc_normal_");
  if (!(a < b)) fail("[trunc_normal_] needs a < b, got a=", a, " b=", b);
  NoGradGuard no_grad;
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  const double lo = 2 * cdf((a - mean) / std) - 1, hi = 2 * cdf((b - mean) / std) - 1;
  Tensor u = ug::rand(t.shape(), {.dtype = DType::Float64, .device = {}});
  double* p = u.data_ptr<double>();
  for (int64_t i = 0; i < u.numel(); ++i) {
    double y = lo + (hi - lo) * p[i];
    p[i] = std::clamp(mean + std * std::sqrt(2.0) * erfinv(std::clamp(y, -1 + 1e-15, 1 - 1e-15)), a, b);
  }
  return t.copy_(u);
}

Tensor& constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  return t.fill_(value);
}

Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return init::uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return init::normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(fan(t, mode, "kaiming_uniform_"));
  return init::uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  return init::normal_(t, 0, calculate_gain(nonlinearity, a) / std::sqrt(fan(t, mode, "kaiming_normal_")));
}

Tensor& orthogonal_(Tensor& t, double gain) {
  require_floating(t, "orthogonal_");
  if (t.dim() < 2) fail("[orthogonal_] needs a tensor of at least 2 dims, got shape ", t.shape());
  NoGradGuard no_grad;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // Orthonormalise the columns of the taller orientation (modified Gram-Schmidt in double):
  // the Q of a QR decomposition with a positive diagonal R, as PyTorch's sign correction gives.
  const bool transpose = rows < cols;
  const int64_t m = transpose ? cols : rows, n = transpose ? rows : cols;
  Tensor a = ug::randn({m, n}, {.dtype = DType::Float64, .device = {}}).contiguous();
  double* q = a.data_ptr<double>();
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[i * n + k] * q[i * n + j];
      for (int64_t i = 0; i < m; ++i) q[i * n + j] -= dot * q[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += q[i * n + j] * q[i * n + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) q[i * n + j] /= norm;
  }
  Tensor result = (transpose ? a.t() : a) * gain;
  return t.copy_(result.reshape(Dims(t.shape().begin(), t.shape().end())));
}

namespace {

void require_dims(const Tensor& t, std::initializer_list<int64_t> dims, const char* op, const char* which) {
  if (std::find(dims.begin(), dims.end(), t.dim()) == dims.end())
    fail("[", op, "] only tensors with ", which, " dimensions are supported, got shape ", t.shape());
}

}  // namespace

Tensor& eye_(Tensor& t) {
  require_dims(t, {2}, "eye_", "2");
  NoGradGuard no_grad;
  return t.copy_(eye(t.size(0), t.size(1), {.dtype = t.dtype(), .device = t.device()}));
}

Tensor& dirac_(Tensor& t, int64_t groups) {
  require_dims(t, {3, 4, 5}, "dirac_", "3, 4 or 5");
  if (groups < 1 || t.size(0) % groups != 0)
    fail("[dirac_] dim 0 (", t.size(0), ") must be divisible by groups (", groups, "), shape ", t.shape());
  NoGradGuard no_grad;
  Tensor ones_at = zeros(t.shape(), {.dtype = DType::Float64});
  double* p = ones_at.data_ptr<double>();
  const int64_t per_group = t.size(0) / groups, channels = std::min(per_group, t.size(1));
  int64_t centre = 0, stride = 1;  // the kernel's centre as an offset into one [in] slice
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    centre += (t.size(d) / 2) * stride;
    stride *= t.size(d);
  }
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < channels; ++d) p[((g * per_group + d) * t.size(1) + d) * stride + centre] = 1;
  return t.copy_(ones_at);
}

Tensor& sparse_(Tensor& t, double sparsity, double stddev) {
  require_dims(t, {2}, "sparse_", "2");
  if (!(sparsity >= 0 && sparsity <= 1)) fail("[sparse_] sparsity must be in [0, 1], got ", sparsity);
  NoGradGuard no_grad;
  const int64_t rows = t.size(0), cols = t.size(1);
  const auto zeros_per_column = static_cast<int64_t>(std::ceil(sparsity * static_cast<double>(rows)));
  Tensor values = ug::randn({rows, cols}, {.dtype = DType::Float64}) * stddev;
  double* v = values.data_ptr<double>();
  for (int64_t c = 0; c < cols; ++c) {
    const Tensor order = randperm(rows);
    const int64_t* r = order.data_ptr<int64_t>();
    for (int64_t i = 0; i < zeros_per_column; ++i) v[r[i] * cols + c] = 0;
  }
  return t.copy_(values);
}

}  // namespace ug::nn::init
