#include "ug/nn/layers/upsample.h"

#include "ug/core/python_repr.h"
#include "ug/nn/functional/interpolate.h"

namespace ug::nn {

UpsampleImpl::UpsampleImpl(std::optional<Dims> size, std::optional<std::vector<double>> scale_factor, std::string mode,
                           std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor)
    : UpsampleImpl("Upsample", std::move(size), std::move(scale_factor), std::move(mode), align_corners) {
  recompute_scale_factor_ = recompute_scale_factor;
}

UpsampleImpl::UpsampleImpl(std::string type_name, std::optional<Dims> size,
                           std::optional<std::vector<double>> scale_factor, std::string mode,
                           std::optional<bool> align_corners)
    : Module(std::move(type_name)),
      size_(std::move(size)),
      scale_factor_(std::move(scale_factor)),
      mode_(std::move(mode)),
      align_corners_(align_corners) {}

Tensor UpsampleImpl::forward(const Tensor& x) {
  return functional::interpolate(x, {.size = size_,
                                     .scale_factor = scale_factor_,
                                     .mode = mode_,
                                     .align_corners = align_corners_,
                                     .recompute_scale_factor = recompute_scale_factor_});
}

namespace {

/** torch's repr of its float or tuple of floats. */
std::string factors_repr(const std::vector<double>& s) {
  if (s.size() == 1) return python_repr(s[0]);
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + python_repr(s[i]);
  return r + ")";
}

}  // namespace

std::string UpsampleImpl::extra_repr() const {
  const std::string info = scale_factor_ ? "scale_factor=" + factors_repr(*scale_factor_)
                                         : "size=" + (size_ ? size_repr(*size_) : std::string("None"));
  return info + ", mode='" + mode_ + "'";
}

UpsamplingNearest2dImpl::UpsamplingNearest2dImpl(std::optional<Dims> size,
                                                 std::optional<std::vector<double>> scale_factor)
    : UpsampleImpl("UpsamplingNearest2d", std::move(size), std::move(scale_factor), "nearest", std::nullopt) {}

UpsamplingBilinear2dImpl::UpsamplingBilinear2dImpl(std::optional<Dims> size,
                                                   std::optional<std::vector<double>> scale_factor)
    : UpsampleImpl("UpsamplingBilinear2d", std::move(size), std::move(scale_factor), "bilinear", true) {}

}  // namespace ug::nn
