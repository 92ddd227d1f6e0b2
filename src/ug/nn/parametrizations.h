// torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as
// parametrizations (parametrize.h), and torch.nn.utils' older hook-based weight_norm and
// spectral_norm (module.weight_g / weight_v, module.weight_orig / weight_u / weight_v).
#pragma once

#include <optional>
#include <string>

#include "ug/nn/parametrize.h"

namespace ug::nn {

/** torch.norm_except_dim(v, 2, dim): the 2-norm over every dim but `dim`, kept as size-1
 *  dims; dim -1 is the norm of the whole tensor (a 0-d tensor), as torch's. */
Tensor norm_except_dim(const Tensor& v, int64_t dim);
/** torch._weight_norm: v * (g / norm_except_dim(v, dim)). */
Tensor weight_norm_value(const Tensor& v, const Tensor& g, int64_t dim);

namespace parametrizations {

/** weight = g * v / ||v|| (norms over every dim but dim); originals g ("original0") and v
 *  ("original1"). */
class WeightNormImpl : public parametrize::ParametrizationImpl {
  UG_CLONEABLE(WeightNormImpl)
 public:
  explicit WeightNormImpl(std::optional<int64_t> dim = 0)
      : ParametrizationImpl("_WeightNorm"), dim_(dim.value_or(-1)) {}
  Tensor forward_originals(const std::vector<Tensor>& originals) override;
  std::optional<parametrize::Originals> right_inverse(const Tensor& weight) override;
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};

/** weight / sigma, sigma the largest singular value of the weight as a matrix (dim first, the
 *  rest flattened) estimated by power iteration on the buffers _u and _v (n_power_iterations
 *  steps per forward in training; 15 at construction). A 1-D weight is normalised instead. */
class SpectralNormImpl : public parametrize::ParametrizationImpl {
  UG_CLONEABLE(SpectralNormImpl)
 public:
  SpectralNormImpl(const Tensor& weight, int64_t n_power_iterations = 1, int64_t dim = 0, double eps = 1e-12);
  Tensor forward(const Tensor& weight) override;
  std::optional<parametrize::Originals> right_inverse(const Tensor& value) override;
  int64_t dim() const { return dim_; }
  double eps() const { return eps_; }
  int64_t n_power_iterations() const { return n_power_iterations_; }

 private:
  Tensor as_matrix(const Tensor& weight) const;
  void power_method(const Tensor& weight_mat, int64_t iterations);
  int64_t dim_;
  double eps_;
  int64_t n_power_iterations_ = 1;
};

/** An orthogonal matrix (orthonormal columns or rows when not square) from an unconstrained
 *  one: map "matrix_exp" or "cayley" of the skew-symmetric part of the lower triangle, or
 *  "householder" (a product of reflectors); with use_trivialization the result is
 *  base @ map(X), base set by right_inverse. Without it, matrix_exp and cayley have no right
 *  inverse (the weight is the original) and householder is not implemented. */
class OrthogonalImpl : public parametrize::ParametrizationImpl {
  UG_CLONEABLE(OrthogonalImpl)
 public:
  OrthogonalImpl(const Tensor& weight, std::string orthogonal_map, bool use_trivialization = true);
  Tensor forward(const Tensor& x) override;
  std::optional<parametrize::Originals> right_inverse(const Tensor& q) override;
  const std::string& orthogonal_map() const { return map_; }

 private:
  Shape shape_;
  std::string map_;
  bool use_trivialization_;
};

/** torch.linalg.householder_product: the first k columns of H_1 ... H_k, H_i = I - tau_i v_i
 *  v_i^T with v_i = (0, ..., 1, a[i+1:, i]); differentiable. */
Tensor householder_product(const Tensor& a, const Tensor& tau);

Module& weight_norm(Module& module, const std::string& name = "weight", std::optional<int64_t> dim = 0);
/** torch's load hook for weight_norm: a state dict saved with the hook-based form (name_g,
 *  name_v) renamed, in place, to the parametrization's originals of each module of root that
 *  weight_norm parametrizes. */
void upgrade_weight_norm_keys(Module& root, TensorDict& state);
/** dim: 1 for the transposed convolutions, else 0, unless given. */
Module& spectral_norm(Module& module, const std::string& name = "weight", int64_t n_power_iterations = 1,
                      double eps = 1e-12, std::optional<int64_t> dim = std::nullopt);
/** orthogonal_map: "matrix_exp" for a square weight, else "householder", unless given. */
Module& orthogonal(Module& module, const std::string& name = "weight",
                   const std::optional<std::string>& orthogonal_map = std::nullopt, bool use_trivialization = true);

}  // namespace parametrizations

// torch.nn.utils' older forms: the weight's slot is left registered but empty and filled by a
// forward pre-hook (emptied after the forward), from weight_g and weight_v, or weight_orig and
// the buffers weight_u and weight_v (power iteration v first, then u, in training).
namespace utils {

Module& weight_norm(Module& module, const std::string& name = "weight", std::optional<int64_t> dim = 0);
Module& remove_weight_norm(Module& module, const std::string& name = "weight");
/** dim: 1 for the transposed convolutions, else 0, unless given. */
Module& spectral_norm(Module& module, const std::string& name = "weight", int64_t n_power_iterations = 1,
                      double eps = 1e-12, std::optional<int64_t> dim = std::nullopt);
Module& remove_spectral_norm(Module& module, const std::string& name = "weight");
/** module.name under weight_norm or spectral_norm here (no power iteration); nullopt where
 *  neither applies to it. */
std::optional<Tensor> normalized_weight(Module& module, const std::string& name);

}  // namespace utils

}  // namespace ug::nn
