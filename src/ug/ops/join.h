// Joining and padding: cat, stack and their h/v/d forms, and torch.nn.functional.pad.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

/** Concatenates along dim, promoting dtypes; 1-d empty tensors are skipped, as torch allows. */
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/** Joins equally shaped tensors along a new dim. */
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor hstack(const std::vector<Tensor>& tensors);
Tensor vstack(const std::vector<Tensor>& tensors);
Tensor dstack(const std::vector<Tensor>& tensors);

/** Views with at least 1, 2 or 3 dims, shaped as torch.atleast_{1,2,3}d shapes them. */
Tensor atleast_1d(const Tensor& x);
Tensor atleast_2d(const Tensor& x);
Tensor atleast_3d(const Tensor& x);

/** torch.nn.functional.pad: pads holds (left, right) pairs starting from the last dim;
 *  negative pads crop. mode is "constant" (with value, default 0), "reflect", "replicate"
 *  or "circular". */
Tensor pad(const Tensor& x, const Dims& pads, std::string_view mode = "constant", std::optional<Scalar> value = {});

}  // namespace ug
