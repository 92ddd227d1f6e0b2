// ug.nn.functional's convolutions and poolings, with torch's keyword names and defaults.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/ops/conv3d.h"

namespace ugpy {

namespace {

using ug::Tensor;

/** An int-or-tuple argument; None (or an empty tuple) gives no sizes. */
ug::Dims sizes(nb::handle h, const char* op) { return h.is_none() ? ug::Dims{} : dims_from_sequence(h, op); }

/** padding=: sizes, or the strings "valid" and "same". */
ug::ConvPadding conv_padding(nb::handle h, const char* op) {
  if (nb::isinstance<nb::str>(h)) return ug::ConvPadding(nb::cast<std::string>(h));
  return ug::ConvPadding(dims_from_sequence(h, op));
}

/** An adaptive pooling's output_size over the last nd dims of x: None entries keep x's size. */
ug::Dims adaptive_size(nb::handle h, const Tensor& x, int64_t nd, const char* op) {
  if (h.is_none() || nb::isinstance<nb::int_>(h)) return sizes(h, op);
  ug::Dims out;
  for (nb::handle v : h) {
    const auto i = static_cast<int64_t>(out.size());
    out.push_back(v.is_none() && x.dim() >= nd ? x.size(x.dim() - nd + i) : nb::cast<int64_t>(v));
  }
  return out;
}

/** The (values, indices) pair as torch returns it, or the values alone. */
nb::object maybe_indices(const std::pair<Tensor, Tensor>& r, bool return_indices) {
  return return_indices ? nb::object(nb::make_tuple(r.first, r.second)) : nb::cast(r.first);
}

}  // namespace

void bind_nn_conv(nb::module_&, nb::module_& functional) {
  using OptTensor = std::optional<Tensor>;
  auto& f = functional;
#define UG_CONV(name, fn)                                                                                    \
  f.def(                                                                                                     \
      name,                                                                                                  \
      [](const Tensor& x, const Tensor& w, const OptTensor& b, nb::handle stride, nb::handle padding,        \
         nb::handle dilation, int64_t groups) {                                                              \
        return fn(x, w, b, sizes(stride, name), conv_padding(padding, name), sizes(dilation, name), groups); \
      },                                                                                                     \
      nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("stride") = 1,              \
      nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1)
  UG_CONV("conv1d", ug::conv1d);
  UG_CONV("conv2d", ug::conv2d);
  UG_CONV("conv3d", ug::conv3d);
#undef UG_CONV
#define UG_CONV_T(name, fn)                                                                                \
  f.def(                                                                                                   \
      name,                                                                                                \
      [](const Tensor& x, const Tensor& w, const OptTensor& b, nb::handle stride, nb::handle padding,      \
         nb::handle output_padding, int64_t groups, nb::handle dilation) {                                 \
        return fn(x, w, b, sizes(stride, name), sizes(padding, name), sizes(output_padding, name), groups, \
                  sizes(dilation, name));                                                                  \
      },                                                                                                   \
      nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("stride") = 1,            \
      nb::arg("padding") = 0, nb::arg("output_padding") = 0, nb::arg("groups") = 1, nb::arg("dilation") = 1)
  UG_CONV_T("conv_transpose1d", ug::conv_transpose1d);
  UG_CONV_T("conv_transpose2d", ug::conv_transpose2d);
  UG_CONV_T("conv_transpose3d", ug::conv_transpose3d);
#undef UG_CONV_T
  // Without return_indices the values alone: inference skips the positions' bookkeeping.
#define UG_MAX_POOL(name, fn, values)                                                                                  \
  f.def(                                                                                                               \
      name,                                                                                                            \
      [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle padding, nb::handle dilation, bool ceil_mode,    \
         bool return_indices) {                                                                                        \
        if (!return_indices)                                                                                           \
          return nb::cast(                                                                                             \
              values(x, sizes(k, name), sizes(stride, name), sizes(padding, name), sizes(dilation, name), ceil_mode)); \
        return maybe_indices(                                                                                          \
            fn(x, sizes(k, name), sizes(stride, name), sizes(padding, name), sizes(dilation, name), ceil_mode), true); \
      },                                                                                                               \
      nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,                \
      nb::arg("dilation") = 1, nb::arg("ceil_mode") = false, nb::arg("return_indices") = false)
  UG_MAX_POOL("max_pool1d", ug::max_pool1d_with_indices, ug::max_pool1d);
  UG_MAX_POOL("max_pool2d", ug::max_pool2d_with_indices, ug::max_pool2d);
  UG_MAX_POOL("max_pool3d", ug::max_pool3d_with_indices, ug::max_pool3d);
#undef UG_MAX_POOL
  f.def(
      "max_pool2d_with_indices",
      [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle padding, nb::handle dilation, bool ceil_mode) {
        return maybe_indices(
            ug::max_pool2d_with_indices(x, sizes(k, "max_pool2d"), sizes(stride, "max_pool2d"),
                                        sizes(padding, "max_pool2d"), sizes(dilation, "max_pool2d"), ceil_mode),
            true);
      },
      nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("dilation") = 1, nb::arg("ceil_mode") = false);
  f.def(
      "avg_pool1d",
      [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode, bool count_include_pad) {
        return ug::avg_pool1d(x, sizes(k, "avg_pool1d"), sizes(stride, "avg_pool1d"), sizes(padding, "avg_pool1d"),
                              ceil_mode, count_include_pad);
      },
      nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true);
#define UG_AVG_POOL(name, fn)                                                                                          \
  f.def(                                                                                                               \
      name,                                                                                                            \
      [](const Tensor& x, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode, bool count_include_pad, \
         std::optional<int64_t> divisor_override) {                                                                    \
        return fn(x, sizes(k, name), sizes(stride, name), sizes(padding, name), ceil_mode, count_include_pad,          \
                  divisor_override);                                                                                   \
      },                                                                                                               \
      nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,                \
      nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true, nb::arg("divisor_override") = nb::none())
  UG_AVG_POOL("avg_pool2d", ug::avg_pool2d);
  UG_AVG_POOL("avg_pool3d", ug::avg_pool3d);
#undef UG_AVG_POOL
  f.def(
      "adaptive_avg_pool1d",
      [](const Tensor& x, nb::handle size) {
        return ug::adaptive_avg_pool1d(x, adaptive_size(size, x, 1, "adaptive_avg_pool1d"));
      },
      nb::arg("input"), nb::arg("output_size"));
  f.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, nb::handle size) {
        return ug::adaptive_avg_pool2d(x, adaptive_size(size, x, 2, "adaptive_avg_pool2d"));
      },
      nb::arg("input"), nb::arg("output_size"));
  f.def(
      "adaptive_avg_pool3d",
      [](const Tensor& x, nb::handle size) {
        return ug::adaptive_avg_pool3d(x, adaptive_size(size, x, 3, "adaptive_avg_pool3d"));
      },
      nb::arg("input"), nb::arg("output_size"));
  f.def(
      "adaptive_max_pool3d",
      [](const Tensor& x, nb::handle size, bool return_indices) {
        return maybe_indices(ug::adaptive_max_pool3d_with_indices(x, adaptive_size(size, x, 3, "adaptive_max_pool3d")),
                             return_indices);
      },
      nb::arg("input"), nb::arg("output_size"), nb::arg("return_indices") = false);
  f.def(
      "adaptive_max_pool1d",
      [](const Tensor& x, nb::handle size, bool return_indices) {
        return maybe_indices(ug::adaptive_max_pool1d_with_indices(x, adaptive_size(size, x, 1, "adaptive_max_pool1d")),
                             return_indices);
      },
      nb::arg("input"), nb::arg("output_size"), nb::arg("return_indices") = false);
  f.def(
      "adaptive_max_pool2d",
      [](const Tensor& x, nb::handle size, bool return_indices) {
        return maybe_indices(ug::adaptive_max_pool2d_with_indices(x, adaptive_size(size, x, 2, "adaptive_max_pool2d")),
                             return_indices);
      },
      nb::arg("input"), nb::arg("output_size"), nb::arg("return_indices") = false);
}

}  // namespace ugpy
