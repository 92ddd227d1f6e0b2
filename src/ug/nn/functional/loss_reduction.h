// What every loss of ug::nn::functional shares: torch's `reduction` argument, parsed and
// applied, and the check that the input is floating point.
#pragma once

#include <string_view>

#include "ug/core/tensor.h"
#include "ug/ops/nn.h"

namespace ug::nn::functional::detail {

/** "mean", "sum" or "none" (and "batchmean" where allowed); anything else fails naming op. */
ops::Reduction parse_reduction(std::string_view r, const char* op, bool batchmean = false);
/** The per-element losses reduced as r says. */
Tensor reduce(const Tensor& loss, ops::Reduction r);
/** Fails with a TypeError naming op and what (the input's role) unless x is floating point. */
void require_floating(const Tensor& x, const char* op, const char* what);
/** parse_reduction, once require_floating has passed: most losses' first check. */
ops::Reduction checked_reduction(std::string_view r, const char* op, const Tensor& x, const char* what);

}  // namespace ug::nn::functional::detail
