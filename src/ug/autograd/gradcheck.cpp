#include "ug/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "ug/autograd/engine.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::autograd {

namespace {

Tensors detached_outputs(const TensorFn& f, const Tensors& inputs) {
  EnableGradGuard enable;  // f may itself differentiate (gradgradcheck checks a gradient)
  Tensors out = f(inputs);
  for (Tensor& o : out) o = o.detach().to(DType::Float64).contiguous();
  return out;
}

/** Column j of d out[k] / d inputs[i], for every k, by central differences. */
std::vector<std::vector<double>> numerical_column(const TensorFn& f, Tensors inputs, size_t i, int64_t j, double eps) {
  Tensor flat = inputs[i].detach().clone().reshape({-1});
  double* p = flat.data_ptr<double>();
  const double saved = p[j];
  inputs[i] = flat.view(inputs[i].shape()).requires_grad_(inputs[i].requires_grad());
  p[j] = saved + eps;
  Tensors plus = detached_outputs(f, inputs);
  p[j] = saved - eps;
  Tensors minus = detached_outputs(f, inputs);
  std::vector<std::vector<double>> cols;
  for (size_t k = 0; k < plus.size(); ++k) {
    std::vector<double> c(static_cast<size_t>(plus[k].numel()));
    const double* a = plus[k].data_ptr<double>();
    const double* b = minus[k].data_ptr<double>();
    for (size_t r = 0; r < c.size(); ++r) c[r] = (a[r] - b[r]) / (2 * eps);
    cols.push_back(std::move(c));
  }
  return cols;
}

bool report(const GradcheckOptions& o, const std::string& message) {
  if (o.raise_exception) fail<RuntimeError>(message);
  return false;
}

}  // namespace

bool gradcheck(const TensorFn& f, const Tensors& inputs, const GradcheckOptions& options) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    if (inputs[i].dtype() != DType::Float64)
      fail<TypeError>("[gradcheck] input ", i, " has dtype ", inputs[i].dtype(),
                      "; finite differences need float64 inputs");
    checked.push_back(i);
  }
  if (checked.empty()) fail("[gradcheck] no input requires grad: nothing to check");
  // Analytical Jacobian rows: one pullback per output element.
  EnableGradGuard enable;
  Tensors outs = f(inputs);
  Tensors wrt;
  for (size_t i : checked) wrt.push_back(inputs[i]);
  // rows[k][r][c]: gradient of out[k][r] w.r.t. checked input c.
  std::vector<std::vector<Tensors>> rows(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const int64_t n_out = outs[k].numel();
    for (int64_t r = 0; r < n_out; ++r) {
      Tensor cot = zeros({n_out}, {.dtype = outs[k].dtype(), .device = outs[k].device()});
      {
        NoGradGuard no_grad;
        cot.select(0, r).fill_(1);
      }
      rows[k].push_back(outs[k].requires_grad() ? grad({outs[k]}, wrt, {cot.view(outs[k].shape())}, true, false, true)
                                                : Tensors(wrt.size()));
    }
  }
  // Each perturbation of an input element gives the numerical column for every output at once.
  for (size_t c = 0; c < checked.size(); ++c) {
    const size_t i = checked[c];
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      std::vector<std::vector<double>> numeric = numerical_column(f, inputs, i, j, options.eps);
      for (size_t k = 0; k < outs.size(); ++k) {
        for (size_t r = 0; r < rows[k].size(); ++r) {
          const Tensor& g = rows[k][r][c];
          const double analytic = g.defined() ? g.reshape({-1}).select(0, j).to(DType::Float64).item<double>() : 0.0;
          const double expected = numeric[k][r];
          if (std::fabs(analytic - expected) > options.atol + options.rtol * std::fabs(expected) ||
              std::isnan(analytic) != std::isnan(expected)) {
            std::ostringstream m;
            m << "[gradcheck] Jacobian mismatch for output " << k << " with respect to input " << i
              << " at (output element " << r << ", input element " << j << "): numerical " << expected
              << ", analytical " << analytic;
            return report(options, m.str());
          }
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(const TensorFn& f, const Tensors& inputs, const GradcheckOptions& options) {
  Tensors outs;
  {
    NoGradGuard no_grad;
    outs = f(inputs);
  }
  // Random cotangents, fixed for the check, that also require grad: second derivatives are
  // checked with respect to both the inputs and the cotangents.
  Tensors cotangents;
  for (const Tensor& o : outs) {
    Tensor v = randn(o.shape(), {.dtype = DType::Float64, .device = o.device()});
    cotangents.push_back(v.requires_grad_(true));
  }
  const size_t n_in = inputs.size();
  TensorFn first_derivative = [&f, n_in](const Tensors& all) {
    Tensors xs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_in));
    Tensors vs(all.begin() + static_cast<std::ptrdiff_t>(n_in), all.end());
    Tensors out = f(xs);
    Tensors wrt, roots, weights;
    for (const Tensor& x : xs)
      if (x.requires_grad()) wrt.push_back(x);
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].requires_grad()) {
        roots.push_back(out[k]);
        weights.push_back(vs[k]);
      }
    Tensors g = grad(roots, wrt, weights, true, true, true);
    for (size_t k = 0; k < g.size(); ++k)
      if (!g[k].defined()) g[k] = zeros_like(wrt[k]);
    return g;
  };
  Tensors all = inputs;
  all.insert(all.end(), cotangents.begin(), cotangents.end());
  return gradcheck(first_derivative, all, options);
}

}  // namespace ug::autograd
