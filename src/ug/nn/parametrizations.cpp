#include "ug/nn/parametrizations.h"

#include <limits>

#include "ug/core/value_read.h"
#include "ug/graph/grad_mode.h"
#include "ug/nn/functional/activation.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/conv3d.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"

namespace ug::nn {

Tensor norm_except_dim(const Tensor& v, int64_t dim) {
  // sqrt of the summed squares: its backward is a fraction of the general norm's.
  if (dim == -1) return (v * v).sum().sqrt();
  const int64_t nd = v.dim();
  if (dim < -nd || dim >= nd)
    fail<IndexError>("[norm_except_dim] dim ", dim, " is out of range for a tensor of ", nd, " dims");
  if (dim < 0) dim += nd;
  Dims others;
  for (int64_t d = 0; d < nd; ++d)
    if (d != dim) others.push_back(d);
  return others.empty() ? v.abs() : (v * v).sum(others, true).sqrt();
}

Tensor weight_norm_value(const Tensor& v, const Tensor& g, int64_t dim) { return v * (g / norm_except_dim(v, dim)); }

namespace parametrizations {

using parametrize::Originals;

// ---- weight_norm ---------------------------------------------------------------------------

Tensor WeightNormImpl::forward_originals(const std::vector<Tensor>& originals) {
  if (originals.size() != 2) fail("[weight_norm] expects the two originals g and v, got ", originals.size());
  return weight_norm_value(originals[1], originals[0], dim_);
}

std::optional<Originals> WeightNormImpl::right_inverse(const Tensor& weight) {
  return Originals{{norm_except_dim(weight, dim_), weight}, false};
}

Module& weight_norm(Module& module, const std::string& name, std::optional<int64_t> dim) {
  return parametrize::register_parametrization(module, name, std::make_shared<WeightNormImpl>(dim), true);
}

void upgrade_weight_norm_keys(Module& root, TensorDict& state) {
  for (auto& [path, m] : root.named_modules()) {
    if (!parametrize::is_parametrized(*m)) continue;
    const std::string prefix = path.empty() ? "" : path + ".";
    for (auto& [name, chain] : m->child("parametrizations")->named_children()) {
      auto* list = dynamic_cast<parametrize::ParametrizationListImpl*>(chain.get());
      if (!list || !dynamic_cast<WeightNormImpl*>((*list)[0].get())) continue;
      const std::string g_key = prefix + name + "_g", v_key = prefix + name + "_v";
      const Tensor* g = state.find(g_key);
      const Tensor* v = state.find(v_key);
      if (!g || !v) continue;
      const Tensor g_value = *g, v_value = *v;
      state.erase(g_key);
      state.erase(v_key);
      state.insert(prefix + "parametrizations." + name + ".original0", g_value);
      state.insert(prefix + "parametrizations." + name + ".original1", v_value);
    }
  }
}

// ---- spectral_norm -------------------------------------------------------------------------

SpectralNormImpl::SpectralNormImpl(const Tensor& weight, int64_t n_power_iterations, int64_t dim, double eps)
    : ParametrizationImpl("_SpectralNorm"), eps_(eps) {
  const int64_t nd = weight.dim();
  if (dim >= nd || dim < -nd)
    fail<IndexError>("[spectral_norm] dimension out of range (expected to be in range of [", -nd, ", ", nd - 1,
                     "] but got ", dim, ")");
  if (n_power_iterations <= 0)
    fail("[spectral_norm] expected n_power_iterations to be positive, but got n_power_iterations=", n_power_iterations);
  dim_ = dim >= 0 ? dim : dim + nd;
  if (nd > 1) {
    n_power_iterations_ = n_power_iterations;
    NoGradGuard no_grad;
    Tensor mat = as_matrix(weight.detach());
    const Options opts{.dtype = mat.dtype(), .device = mat.device()};
    register_buffer("_u", functional::normalize(randn({mat.size(0)}, opts), 2, 0, eps_));
    register_buffer("_v", functional::normalize(randn({mat.size(1)}, opts), 2, 0, eps_));
    power_method(mat, 15);
  }
}

Tensor SpectralNormImpl::as_matrix(const Tensor& weight) const {
  Tensor w = weight;
  if (dim_ != 0) {
    Dims order{dim_};
    for (int64_t d = 0; d < w.dim(); ++d)
      if (d != dim_) order.push_back(d);
    w = w.permute(order);
  }
  return w.flatten(1);
}

void SpectralNormImpl::power_method(const Tensor& weight_mat, int64_t iterations) {
  NoGradGuard no_grad;
  Tensor& u = buffer("_u");
  Tensor& v = buffer("_v");
  for (int64_t i = 0; i < iterations; ++i) {
    u.copy_(functional::normalize(weight_mat.matmul(v), 2, 0, eps_));
    v.copy_(functional::normalize(weight_mat.mT().matmul(u), 2, 0, eps_));
  }
}

Tensor SpectralNormImpl::forward(const Tensor& weight) {
  if (weight.dim() == 1) return functional::normalize(weight, 2, 0, eps_);
  Tensor mat = as_matrix(weight);
  if (is_training()) power_method(mat.detach(), n_power_iterations_);
  Tensor u = buffer("_u").clone(), v = buffer("_v").clone();
  Tensor sigma = u.dot(mat.matmul(v));
  return weight / sigma;
}

std::optional<Originals> SpectralNormImpl::right_inverse(const Tensor& value) { return Originals{{value}, true}; }

Module& spectral_norm(Module& module, const std::string& name, int64_t n_power_iterations, double eps,
                      std::optional<int64_t> dim) {
  if (!((module.has_parameter(name) && module.parameter(name).defined()) ||
        (module.has_buffer(name) && module.buffer(name).defined())))
    fail("[spectral_norm] ", module.type_name(), " has no parameter or buffer with name \"", name, "\"");
  const Tensor& weight = module.has_parameter(name) ? module.parameter(name) : module.buffer(name);
  if (!dim) {
    const bool transposed = dynamic_cast<ConvTranspose1dImpl*>(&module) ||
                            dynamic_cast<ConvTranspose2dImpl*>(&module) || dynamic_cast<ConvTranspose3dImpl*>(&module);
    dim = transposed ? 1 : 0;
  }
  return parametrize::register_parametrization(
      module, name, std::make_shared<SpectralNormImpl>(weight, n_power_iterations, *dim, eps));
}

// ---- orthogonal ------------------------------------------------------------------------------

Tensor householder_product(const Tensor& a, const Tensor& tau) {
  if (a.dim() < 2 || a.size(-2) < a.size(-1))
    fail("[householder_product] expects a [..., m, n] with m >= n, got ", a.shape());
  const int64_t m = a.size(-2), k = tau.size(-1);
  if (k > a.size(-1)) fail("[householder_product] tau has more reflectors (", k, ") than a has columns");
  const Options opts{.dtype = a.dtype(), .device = a.device()};
  const Tensor rows = arange(m, opts);
  Dims qshape(a.shape().begin(), a.shape().end());
  qshape.back() = m;
  Tensor q = eye(m, m, opts).expand(qshape);
  for (int64_t i = 0; i < k; ++i) {
    // v = (0, ..., 0, 1, a[i+1:, i]) as a column; q = q (I - tau_i v v^T).
    Tensor v = (a.select(-1, i) * rows.gt(static_cast<double>(i)).to(a.dtype()) +
                rows.eq(static_cast<double>(i)).to(a.dtype()))
                   .unsqueeze(-1);
    Tensor t = tau.select(-1, i).unsqueeze(-1).unsqueeze(-1);
    q = q - (q.matmul(v) * t).matmul(v.mT());
  }
  return q.narrow(-1, 0, a.size(-1));
}

namespace {

/** Q with orthonormal columns from A's QR, the signs making R's diagonal positive. */
Tensor make_orthogonal(const Tensor& a) {
  linalg::QrResult qr = linalg::qr(a);
  return qr.Q * qr.R.diagonal(0, -2, -1).sign().unsqueeze(-2);
}

bool is_orthogonal(const Tensor& q) {
  const int64_t n = q.size(-2), k = q.size(-1);
  const double eps = 10.0 * static_cast<double>(n) *
                     (q.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                  : static_cast<double>(std::numeric_limits<float>::epsilon()));
  Tensor id = eye(k, k, {.dtype = q.dtype(), .device = q.device()});
  // torch.allclose's test with rtol 1e-5.
  Tensor off = (q.mT().matmul(q) - id).abs() - (id.abs() * 1e-5 + eps);
  ValueReadScope check;
  return off.amax().item<double>() <= 0;
}

}  // namespace

OrthogonalImpl::OrthogonalImpl(const Tensor& weight, std::string orthogonal_map, bool use_trivialization)
    : ParametrizationImpl("_Orthogonal"),
      shape_(weight.shape()),
      map_(std::move(orthogonal_map)),
      use_trivialization_(use_trivialization) {
  if (map_ != "matrix_exp" && map_ != "cayley" && map_ != "householder")
    fail("[orthogonal] orthogonal_map has to be one of \"matrix_exp\", \"cayley\", \"householder\". Got: ", map_);
  if (!use_trivialization_ && map_ == "householder")
    fail(
        "[orthogonal] the householder map without use_trivialization (torch's geqrf right inverse) is not "
        "implemented; use use_trivialization=True or another map");
  if (use_trivialization_) register_buffer("base", Tensor());
}

Tensor OrthogonalImpl::forward(const Tensor& input) {
  Tensor x = input;
  int64_t n = x.size(-2), k = x.size(-1);
  const bool transposed = n < k;
  if (transposed) {
    x = x.mT();
    std::swap(n, k);
  }
  Tensor q;
  if (map_ == "matrix_exp" || map_ == "cayley") {
    x = tril(x);
    if (n != k) {
      Dims pad(x.shape().begin(), x.shape().end());
      pad.back() = n - k;
      x = cat({x, zeros(pad, {.dtype = x.dtype(), .device = x.device()})}, -1);
    }
    Tensor a = x - x.mT();
    if (map_ == "matrix_exp") {
      q = linalg::matrix_exp(a);
    } else {
      Tensor id = eye(n, n, {.dtype = a.dtype(), .device = a.device()});
      q = linalg::solve(id - a * 0.5, id + a * 0.5);
    }
    if (n != k) q = q.narrow(-1, 0, k);
  } else {
    Tensor a = tril(x, -1);
    Tensor tau = ((a * a).sum({-2}) + 1.0).reciprocal() * 2.0;
    q = householder_product(a, tau);
    Tensor signs;
    {
      NoGradGuard no_grad;
      signs = x.detach().diagonal(0, -2, -1).to(DType::Int32).to(x.dtype()).unsqueeze(-2);
    }
    q = q * signs;
  }
  if (use_trivialization_) {
    const Tensor& base = buffer("base");
    if (!base.defined()) fail("[orthogonal] the base is not set: right_inverse was never called");
    q = base.matmul(q);
  }
  return transposed ? q.mT() : q;
}

std::optional<Originals> OrthogonalImpl::right_inverse(const Tensor& value) {
  if (!(value.shape() == shape_))
    fail("[orthogonal] expected a matrix or batch of matrices of shape ", shape_, ". Got a tensor of shape ",
         value.shape());
  // Without a base, matrix_exp and cayley have no right inverse (torch's NotImplementedError):
  // registration keeps the weight as the original, assignment is refused.
  if (!use_trivialization_) return std::nullopt;
  NoGradGuard no_grad;
  Tensor q = value.detach();
  int64_t n = q.size(-2), k = q.size(-1);
  if (n < k) {
    q = q.mT();
    std::swap(n, k);
  }
  if (n == k) {
    q = is_orthogonal(q) ? q.clone() : make_orthogonal(q);
  } else {
    Dims extra(q.shape().begin(), q.shape().end());
    extra.back() = n - k;
    q = make_orthogonal(cat({q, randn(extra, {.dtype = q.dtype(), .device = q.device()})}, -1));
  }
  buffer("base") = q;
  Tensor neg_id = zeros_like(value);
  neg_id.diagonal(0, -2, -1).fill_(-1.0);
  return Originals{{neg_id}, true};
}

Module& orthogonal(Module& module, const std::string& name, const std::optional<std::string>& orthogonal_map,
                   bool use_trivialization) {
  const bool present = (module.has_parameter(name) && module.parameter(name).defined()) ||
                       (module.has_buffer(name) && module.buffer(name).defined());
  if (!present) fail("[orthogonal] ", module.type_name(), " has no parameter or buffer with name \"", name, "\"");
  const Tensor& weight = module.has_parameter(name) ? module.parameter(name) : module.buffer(name);
  if (weight.dim() < 2)
    fail("[orthogonal] expected a matrix or batch of matrices. Got a tensor of ", weight.dim(), " dimensions.");
  const std::string map = orthogonal_map.value_or(weight.size(-2) == weight.size(-1) ? "matrix_exp" : "householder");
  return parametrize::register_parametrization(module, name,
                                               std::make_shared<OrthogonalImpl>(weight, map, use_trivialization), true);
}

}  // namespace parametrizations

}  // namespace ug::nn
