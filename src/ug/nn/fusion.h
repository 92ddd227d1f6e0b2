// torch.nn.utils.fusion: a convolution or Linear followed by BatchNorm in eval folded into one
// layer, and skip_init.
#pragma once

#include <memory>
#include <utility>

#include "ug/nn/module.h"

namespace ug::nn::utils {

/** The weight and bias (parameters, as torch's) of a convolution followed by batch norm with
 *  these running statistics: w * gamma / sqrt(var + eps) per output channel (dim 1 when
 *  transpose), (b - mean) * gamma / sqrt(var + eps) + beta. Undefined conv_b, bn_w, bn_b: 0, 1, 0. */
std::pair<Tensor, Tensor> fuse_conv_bn_weights(const Tensor& conv_w, const Tensor& conv_b, const Tensor& bn_rm,
                                               const Tensor& bn_rv, double bn_eps, const Tensor& bn_w,
                                               const Tensor& bn_b, bool transpose = false);
std::pair<Tensor, Tensor> fuse_linear_bn_weights(const Tensor& linear_w, const Tensor& linear_b, const Tensor& bn_rm,
                                                 const Tensor& bn_rv, double bn_eps, const Tensor& bn_w,
                                                 const Tensor& bn_b);
/** A copy of conv (or linear) with bn folded in; both must be in eval and bn must keep running
 *  statistics (a BatchNorm1d/2d/3d). */
std::shared_ptr<Module> fuse_conv_bn_eval(const Module& conv, Module& bn, bool transpose = false);
std::shared_ptr<Module> fuse_linear_bn_eval(const Module& linear, Module& bn);

}  // namespace ug::nn::utils
