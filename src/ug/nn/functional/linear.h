// torch.nn.functional.linear: the fully connected layer as a function (an op: ops/nn.h).
#pragma once

#include "ug/ops/nn.h"

namespace ug::nn::functional {

using ug::linear;

}  // namespace ug::nn::functional
