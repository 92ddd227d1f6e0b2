// Object-detection ops: NonMaxSuppression, a selection (integer indices, nothing to
// differentiate), computed on the host from the boxes' and scores' values; RoiAlign, whose
// sampling points come from the boxes' values and whose samples are gathered from X, so the
// gradient reaches X.
#include <algorithm>
#include <array>
#include <cmath>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/reduce.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/** A box as its corners: x and y from low to high. */
struct Box {
  double x0, y0, x1, y1;
};

Box corners(const double* b, bool center_point) {
  if (center_point) return {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
  // [y1, x1, y2, x2], either corner first.
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

/** Whether b overlaps a by more than `threshold` in intersection over union (boxes of no area
 *  overlap nothing). */
bool overlaps(const Box& a, const Box& b, double threshold) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0), h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (w <= 0 || h <= 0) return false;
  const double inter = w * h, area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

Outputs non_max_suppression_op(const OpContext& c) {
  const Tensor &boxes_in = c.input(0), &scores_in = c.input(1);
  if (boxes_in.dim() != 3 || boxes_in.size(2) != 4)
    c.fail("boxes must have shape [batches, boxes, 4], got ", boxes_in.shape());
  if (scores_in.dim() != 3 || scores_in.size(0) != boxes_in.size(0) || scores_in.size(2) != boxes_in.size(1))
    c.fail("scores must have shape [", boxes_in.size(0), ", classes, ", boxes_in.size(1), "], got ", scores_in.shape());
  const int64_t center = c.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) c.fail("center_point_box must be 0 or 1, got ", center);
  auto scalar = [&](size_t i, std::string_view what) -> std::optional<double> {
    if (!c.has_input(i) || c.input(i).numel() == 0) return std::nullopt;
    if (c.input(i).numel() != 1) c.fail(what, " must have one element, got shape ", c.input(i).shape());
    return c.scalar_input(i);
  };
  const int64_t max_per_class =
      static_cast<int64_t>(std::max(0.0, scalar(2, "max_output_boxes_per_class").value_or(0)));
  const double iou_threshold = scalar(3, "iou_threshold").value_or(0.0);
  const std::optional<double> score_threshold = scalar(4, "score_threshold");

  const Tensor boxes = boxes_in.detach().to(DType::Float64).contiguous();
  const Tensor scores = scores_in.detach().to(DType::Float64).contiguous();
  const double *bp = boxes.data_ptr<double>(), *sp = scores.data_ptr<double>();
  const int64_t batches = boxes.size(0), count = boxes.size(1), classes = scores.size(1);
  std::vector<std::array<int64_t, 3>> selected;
  std::vector<Box> all(static_cast<size_t>(count));
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < count; ++i) all[static_cast<size_t>(i)] = corners(bp + (b * count + i) * 4, center == 1);
    for (int64_t k = 0; k < classes; ++k) {
      const double* s = sp + (b * classes + k) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!score_threshold || s[i] > *score_threshold) order.push_back(i);
      // Highest score first; among equal scores, the lower index.
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t j) {
          return overlaps(all[static_cast<size_t>(i)], all[static_cast<size_t>(j)], iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(i);
        selected.push_back({b, k, i});
      }
    }
  }
  Tensor out = empty({static_cast<int64_t>(selected.size()), 3}, {.dtype = DType::Int64});
  int64_t* op = out.data_ptr<int64_t>();
  for (const auto& row : selected) op = std::copy(row.begin(), row.end(), op);
  return {out};
}

/** RoiAlign: each output bin the average (or max) of a grid of bilinear samples, as
 *  onnx's reference and onnxruntime compute them (max mode takes the largest weighted corner). */
Outputs roi_align_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 4) c.fail("X must be [N, C, H, W], got ", x.shape());
  if (!is_floating(x.dtype())) c.fail<TypeError>("X must be a floating-point tensor, got ", x.dtype());
  const Tensor rois = c.input(1).detach().to(DType::Float64).contiguous();
  const Tensor batch_of = c.input(2).detach().to(DType::Int64).contiguous();
  const int64_t count = rois.dim() == 2 ? rois.size(0) : -1;
  if (count < 0 || rois.size(1) != 4 || batch_of.dim() != 1 || batch_of.size(0) != count)
    c.fail("rois must be [num_rois, 4] and batch_indices [num_rois], got ", c.input(1).shape(), " and ",
           c.input(2).shape());
  const std::string mode = c.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode must be avg or max, got \"", mode, "\"");
  const std::string transform =
      c.attr_string("coordinate_transformation_mode", c.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    c.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got \"", transform, "\"");
  const int64_t out_h = c.attr_int("output_height", 1), out_w = c.attr_int("output_width", 1);
  const int64_t ratio = c.attr_int("sampling_ratio", 0);
  const double scale = c.attr_float("spatial_scale", 1.0);
  if (out_h < 1 || out_w < 1 || ratio < 0)
    c.fail("output_height, output_width must be positive and sampling_ratio >= 0");
  const int64_t channels = x.size(1), height = x.size(2), width = x.size(3);
  const bool half_pixel = transform == "half_pixel";
  const double* rp = rois.data_ptr<double>();
  const int64_t* bp = batch_of.data_ptr<int64_t>();
  std::vector<Tensor> results;
  for (int64_t n = 0; n < count; ++n) {
    if (bp[n] < 0 || bp[n] >= x.size(0)) c.fail("batch index ", bp[n], " is outside [0, ", x.size(0), ")");
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x0 = rp[n * 4] * scale - offset, y0 = rp[n * 4 + 1] * scale - offset;
    double roi_w = rp[n * 4 + 2] * scale - offset - x0, roi_h = rp[n * 4 + 3] * scale - offset - y0;
    if (!half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    const int64_t grid_h = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bin_h));
    const int64_t grid_w = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bin_w));
    const int64_t samples = grid_h * grid_w, points = out_h * out_w * samples * 4;
    if (points * channels > c.max_elements()) c.fail("roi ", n, " asks for ", points, " samples a channel");
    Tensor index = empty({points}, {.dtype = DType::Int64});
    Tensor weight = empty({points}, {.dtype = DType::Float64});
    int64_t* ip = index.data_ptr<int64_t>();
    double* wp = weight.data_ptr<double>();
    for (int64_t ph = 0; ph < out_h; ++ph)
      for (int64_t pw = 0; pw < out_w; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            double y = y0 + static_cast<double>(ph) * bin_h +
                       (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            double xx = x0 + static_cast<double>(pw) * bin_w +
                        (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            std::array<int64_t, 4> pos{0, 0, 0, 0};
            std::array<double, 4> w{0, 0, 0, 0};
            if (y >= -1.0 && y <= static_cast<double>(height) && xx >= -1.0 && xx <= static_cast<double>(width)) {
              y = std::max(y, 0.0);
              xx = std::max(xx, 0.0);
              int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(xx), y_high = y_low + 1,
                      x_high = x_low + 1;
              if (y_low >= height - 1) y = static_cast<double>(y_high = y_low = height - 1);
              if (x_low >= width - 1) xx = static_cast<double>(x_high = x_low = width - 1);
              const double ly = y - static_cast<double>(y_low), lx = xx - static_cast<double>(x_low);
              pos = {y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high};
              w = {(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx};
            }
            for (size_t k = 0; k < 4; ++k) {
              *ip++ = pos[k];
              *wp++ = w[k];
            }
          }
    const Tensor plane = x.select(0, bp[n]).reshape({channels, height * width});
    const Tensor taps =
        mul(index_select(plane, 1, index), weight.to(x.dtype())).reshape({channels, out_h, out_w, samples, 4});
    results.push_back(mode == "avg" ? div(taps.sum({3, 4}), static_cast<double>(std::max<int64_t>(samples, 1)))
                                    : taps.amax({4}).amax({3}));
  }
  if (results.empty()) return {zeros({0, channels, out_h, out_w}, {.dtype = x.dtype()})};
  return {stack(results, 0)};
}

}  // namespace

void add_detection_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"NonMaxSuppression", non_max_suppression_op, 2, 5, 1, 1, {}});
  ops.push_back({"RoiAlign", roi_align_op, 3, 3, 1, 1, {}});  // before opset 16, always output_half_pixel
}

}  // namespace ug::onnx
