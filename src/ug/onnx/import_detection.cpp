// Object-detection ops: NonMaxSuppression, a selection (integer indices, nothing to
// differentiate), computed on the host from the boxes' and scores' values.
#include <algorithm>
#include <array>

#include "ug/onnx/op_table.h"

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

}  // namespace

void add_detection_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"NonMaxSuppression", non_max_suppression_op, 2, 5, 1, 1, {}});
}

}  // namespace ug::onnx
