// Helpers the op table's files share; import_table.cpp defines them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ug/onnx/op_table.h"

namespace ug::onnx {

using Outputs = std::vector<Tensor>;

inline Outputs one(Tensor t) { return {std::move(t)}; }

/** axis in [-rank, rank), made non-negative; out of range fails naming the node. */
int64_t norm_axis(const OpContext& c, int64_t axis, int64_t rank);
Dims to_dims(const std::vector<int64_t>& v);
/** A 1-d int64 tensor holding `values`. */
Tensor int_tensor(const std::vector<int64_t>& values);
/** Refuses dims made from a file's values that are negative or over LoadLimits::max_elements. */
void check_new_shape(const OpContext& c, const Dims& dims);
/** Refuses an elementwise op whose inputs broadcast to more than max_elements elements. */
void check_broadcast(const OpContext& c);
/** Axes from input i (newer opsets) or attribute "axes" (older ones), normalized. */
std::optional<std::vector<int64_t>> axes_of(const OpContext& c, size_t input, int64_t rank);

/** The geometry attributes shared by Conv, ConvTranspose and the pools, per spatial dim. */
struct Window {
  Dims kernel, strides, dilations, begin, end;
  bool symmetric() const { return begin == end; }
};

/** A per-spatial-dim INTS attribute (rank values, each in [min, max_elements]) or `fallback`s. */
Dims spatial_attr(const OpContext& c, std::string_view name, size_t rank, int64_t fallback, int64_t min);
/** The window attributes of a node over input x [N, C, spatial...] (kernel_shape, strides,
 *  dilations, pads or auto_pad); `channels` is the result's channel count, for bounding its size. */
Window window_of(const OpContext& c, const Tensor& x, const Dims& kernel_from_weight, int64_t channels);
/** x padded by the window's (begin, end) over the spatial dims with `value`. */
Tensor pad_spatial(const Tensor& x, const Window& w, Scalar value);

enum class PoolKind { Max, Average, Lp };
/** Pooling of any rank as ONNX defines it, composed of strided slices (import_pooling.cpp): for
 *  what ug's pooling kernels do not take. Averages count the pads when count_include_pad says so,
 *  never ceil_mode's overhang; p is LpPool's. */
Tensor pool_by_slices(const OpContext& c, const Tensor& x, const Window& w, bool ceil_mode, PoolKind kind,
                      bool count_include_pad, double p = 1);

}  // namespace ug::onnx
