// Pooling of any rank by strided slices, for what ug's pooling kernels do not take (3-d
// windows, pads over half the kernel, dilated averages, integer maxima), and LpPool.
#include <cmath>
#include <limits>

#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::onnx {

namespace {

/** Sums (or maxima) of every window of `src`, already padded to cover all `out` windows: one
 *  strided slice per kernel offset. */
Tensor window_fold(const Tensor& src, const Window& w, const Dims& out, bool max) {
  const size_t rank = w.kernel.size();
  Dims offset(rank, 0);
  Tensor acc;
  while (true) {
    Tensor v = src;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t start = offset[d] * w.dilations[d];
      v = v.slice(static_cast<int64_t>(d) + 2, start, start + (out[d] - 1) * w.strides[d] + 1, w.strides[d]);
    }
    acc = !acc.defined() ? v : max ? maximum(acc, v) : add(acc, v);
    size_t d = rank;
    while (d-- > 0 && ++offset[d] == w.kernel[d]) offset[d] = 0;
    if (d == static_cast<size_t>(-1)) return acc;
  }
}

}  // namespace

Tensor pool_by_slices(const OpContext& c, const Tensor& x, const Window& w, bool ceil_mode, PoolKind kind,
                      bool count_include_pad, double p) {
  const size_t rank = w.kernel.size();
  Dims out(rank), shape{x.size(0), x.size(1)};
  Window overhang{.kernel = w.kernel, .begin = Dims(rank, 0), .end = Dims(rank, 0)};  // ceil_mode's last windows
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(d) + 2), span = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const int64_t padded = in + w.begin[d] + w.end[d], s = w.strides[d];
    if (padded < span) c.fail("the window spans ", span, " along spatial dim ", d, ", the padded input ", padded);
    out[d] = ceil_mode ? (padded - span + s - 1) / s + 1 : (padded - span) / s + 1;
    if (ceil_mode && (out[d] - 1) * s >= in + w.begin[d]) --out[d];  // the last window starts in the input or pads
    overhang.end[d] = std::max<int64_t>(0, (out[d] - 1) * s + span - padded);
    shape.push_back(out[d]);
  }
  check_new_shape(c, shape);
  Dims unfolded = shape;  // every window's cells: the work the slices do
  for (int64_t k : w.kernel) unfolded.push_back(k);
  check_new_shape(c, unfolded);
  if (kind == PoolKind::Max) {
    const Scalar lowest = is_floating(x.dtype()) ? Scalar(-std::numeric_limits<double>::infinity())
                          : x.numel() > 0        ? x.detach().amin().item()
                                                 : Scalar(0);
    return window_fold(pad_spatial(pad_spatial(x, w, lowest), overhang, lowest), w, out, true);
  }
  const Tensor src = kind == PoolKind::Lp ? pow(x.abs(), p) : x;
  const Tensor sums = window_fold(pad_spatial(pad_spatial(src, w, 0), overhang, 0), w, out, false);
  // Each window's cells in the input (and in the pads when they count), never the overhang.
  Dims plane{1, 1};
  for (int64_t d = 2; d < x.dim(); ++d) plane.push_back(x.size(d));
  const Tensor cells = pad_spatial(ones(plane, {.dtype = sums.dtype()}), w, count_include_pad ? 1 : 0);
  const Tensor count = window_fold(pad_spatial(cells, overhang, 0), w, out, false);
  if (kind == PoolKind::Average) return div(sums, count);
  // As onnx's reference: the window's mean power times its full size, whose p-th root is the
  // p-norm where no window overhangs.
  double full = 1;
  for (int64_t k : w.kernel) full *= static_cast<double>(k);
  return pow(mul(div(sums, count), full), 1.0 / p);
}

namespace {

Outputs lp_pool_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (!is_floating(x.dtype())) c.fail<TypeError>("the input must be floating-point, got ", x.dtype());
  const Window w = window_of(c, x, {}, x.size(1));
  const int64_t p = c.attr_int("p", 2);
  if (p < 1) c.fail("p must be positive, got ", p);
  return one(pool_by_slices(c, x, w, c.attr_int("ceil_mode", 0), PoolKind::Lp, true, static_cast<double>(p)));
}

}  // namespace

void add_pooling_ops(std::vector<OpSpec>& ops) { ops.push_back({"LpPool", lp_pool_op, 1, 1, 1, 1, {"kernel_shape"}}); }

}  // namespace ug::onnx
