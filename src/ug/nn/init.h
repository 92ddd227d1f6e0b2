// ug::nn::init: in-place initialisers with PyTorch's names and formulas (torch.nn.init),
// drawing from the global generator (or the key given to Module::init). They run without
// recording autograd and return their argument.
#pragma once

#include <string>
#include <utility>

#include "ug/core/tensor.h"

namespace ug::nn::init {

/** The recommended gain for a nonlinearity ("linear", "conv2d", "sigmoid", "tanh", "relu",
 *  "leaky_relu" (param = negative slope, default 0.01), "selu"). */
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
/** (fan_in, fan_out) of a weight of at least 2 dims: [out, in, *kernel]. */
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
/** Normal(mean, std) values redrawn into [a, b] (inverse-CDF method, as PyTorch). */
Tensor& trunc_normal_(Tensor& t, double mean = 0, double std = 1, double a = -2, double b = 2);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
Tensor& xavier_normal_(Tensor& t, double gain = 1);
/** mode "fan_in" or "fan_out"; a is the negative slope of a following leaky ReLU. */
Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
/** A (semi-)orthogonal matrix from the QR decomposition of a normal draw, times gain. */
Tensor& orthogonal_(Tensor& t, double gain = 1);
/** The identity matrix (ones on the diagonal of a 2-d t, zeros elsewhere). */
Tensor& eye_(Tensor& t);
/** The identity of a convolution (3-5 dims: [out, in, *kernel]): within each of `groups`
 *  groups of output channels, output channel d takes input channel d at the kernel's centre. */
Tensor& dirac_(Tensor& t, int64_t groups = 1);
/** Normal(0, std) values with ceil(sparsity * rows) random ones in each column of a 2-d t set to
 *  zero (Martens 2010). */
Tensor& sparse_(Tensor& t, double sparsity, double std = 0.01);

}  // namespace ug::nn::init
