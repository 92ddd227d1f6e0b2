// ug.nn layers over the functional ops: convolution and pooling, normalization, dropout and
// embedding, losses, attention and the transformer encoder layer.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/nn/layers/transformer.h"
#include "ug/nn/layers/bilinear.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/conv3d.h"
#include "ug/nn/layers/alpha_dropout.h"
#include "ug/nn/layers/dropout.h"
#include "ug/nn/layers/embedding_bag.h"
#include "ug/nn/layers/loss.h"
#include "ug/nn/layers/margin_loss.h"
#include "ug/nn/layers/normalization.h"
#include "ug/nn/layers/padding.h"
#include "ug/nn/layers/pixel_shuffle.h"
#include "ug/nn/layers/upsample.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Dims;
using ug::Tensor;
using ug::nn::Module;

/** 5 or (5, 3): a size for every spatial dim or one each. */
Dims sizes(nb::handle h) {
  if (nb::isinstance<nb::int_>(h)) return Dims{nb::cast<int64_t>(h)};
  return dims_from_sequence(h, "nn");
}

ug::ConvPadding conv_padding(nb::handle h) {
  if (nb::isinstance<nb::str>(h)) return ug::ConvPadding(nb::cast<std::string>(h));
  return ug::ConvPadding(sizes(h));
}

Tensor tensor_or_empty(const std::optional<Tensor>& t) { return t.value_or(Tensor()); }

nb::object optional_result(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

/** UpsamplingNearest2d / UpsamplingBilinear2d(size=None, scale_factor=None). */
template <class Impl> void bind_upsampling(nb::module_& nn, const char* name, const char* doc) {
  nb::class_<Impl, ug::nn::UpsampleImpl>(nn, name, doc)
      .def(
          "__init__",
          [name](Impl* u, nb::handle size, nb::handle scale_factor) {
            new (u) Impl(optional_sizes(size, name), optional_factors(scale_factor, name));
          },
          "size"_a = nb::none(), "scale_factor"_a = nb::none());
}

/** MaxPool1d / 2d / 3d(kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
 *  ceil_mode=False). */
template <class Impl> void bind_max_pool(nb::module_& nn, const char* name, const char* doc) {
  nb::class_<Impl, ug::nn::MaxPoolImpl>(nn, name, doc)
      .def(
          "__init__",
          [](Impl* p, nb::handle k, nb::handle stride, nb::handle padding, nb::handle dilation, bool return_indices,
             bool ceil_mode) {
            new (p) Impl(sizes(k), stride.is_none() ? Dims{} : sizes(stride), sizes(padding), sizes(dilation),
                         ceil_mode, return_indices);
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1, "return_indices"_a = false,
          "ceil_mode"_a = false);
}

/** A Transformer encoder or decoder layer; activation is "relu", "gelu", a module (the child
 *  "activation", as torch's attribute makes it) or another callable. */
template <class Impl>
void init_transformer_layer(Impl* layer, int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout,
                            nb::object activation, double layer_norm_eps, bool batch_first, bool norm_first,
                            bool bias) {
  if (nb::isinstance<nb::str>(activation))
    new (layer) Impl(d_model, nhead, dim_feedforward, dropout, nb::cast<std::string>(activation), layer_norm_eps,
                     batch_first, norm_first, bias);
  else if (nb::isinstance<Module>(activation))
    new (layer) Impl(d_model, nhead, dim_feedforward, dropout, nb::cast<std::shared_ptr<Module>>(activation),
                     layer_norm_eps, batch_first, norm_first, bias);
  else
    new (layer)
        Impl(d_model, nhead, dim_feedforward, dropout, nb::cast<std::function<Tensor(const Tensor&)>>(activation),
             layer_norm_eps, batch_first, norm_first, bias);
}

/** An adaptive pooling's output_size: sizes, None (as -1) keeping the input's. */
Dims adaptive_sizes(nb::handle h) {
  if (h.is_none()) return Dims{-1};
  if (nb::isinstance<nb::int_>(h)) return Dims{nb::cast<int64_t>(h)};
  Dims out;
  for (nb::handle v : h) out.push_back(v.is_none() ? -1 : nb::cast<int64_t>(v));
  return out;
}

/** A 1-d layer's size: an int or a 1-tuple, as torch takes. */
int64_t size_1d(nb::handle h, const char* layer, const char* what) {
  const Dims d = sizes(h);
  if (d.size() != 1)
    throw ug::ValueError(std::string("[") + layer + "] " + what + " needs 1 value, got " + std::to_string(d.size()));
  return d[0];
}

/** Conv2d / Conv3d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
 *  groups=1, bias=True, padding_mode="zeros"). */
template <class Impl> void bind_conv(nb::module_& nn, const char* name, const char* doc) {
  nb::class_<Impl, ug::nn::ConvImpl>(nn, name, doc)
      .def(
          "__init__",
          [](Impl* c, int64_t in, int64_t out, nb::handle k, nb::handle stride, nb::handle padding, nb::handle dilation,
             int64_t groups, bool bias, std::string padding_mode) {
            new (c) Impl(in, out, sizes(k), sizes(stride), conv_padding(padding), sizes(dilation), groups, bias,
                         std::move(padding_mode));
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
          "groups"_a = 1, "bias"_a = true, "padding_mode"_a = "zeros");
}

/** AvgPool2d / AvgPool3d(kernel_size, stride=None, padding=0, ceil_mode=False,
 *  count_include_pad=True, divisor_override=None). */
template <class Impl> void bind_avg_pool(nb::module_& nn, const char* name, const char* doc) {
  nb::class_<Impl, ug::nn::AvgPoolImpl>(nn, name, doc)
      .def(
          "__init__",
          [](Impl* p, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode, bool count_include_pad,
             std::optional<int64_t> divisor_override) {
            new (p) Impl(sizes(k), stride.is_none() ? Dims{} : sizes(stride), sizes(padding), ceil_mode,
                         count_include_pad, divisor_override);
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true, "divisor_override"_a = nb::none());
}

/** ConvTranspose*d.forward(input, output_size=None): output_size picks the output_padding. */
Tensor conv_transpose_forward(ug::nn::ConvImpl& c, const Tensor& x, nb::handle output_size) {
  return output_size.is_none() ? c.forward(x) : c.forward(x, dims_from_sequence(output_size, "ConvTranspose.forward"));
}

}  // namespace

void bind_nn_layers(nb::module_& nn) {
  namespace n = ug::nn;
  // ---- convolution and pooling ---------------------------------------------------------------
  nb::class_<n::ConvImpl, Module>(nn, "_ConvNd");
  nb::class_<n::Conv1dImpl, n::ConvImpl>(
      nn, "Conv1d", "1-d convolution over [N, C, L] (torch.nn.Conv1d); padding may be \"same\" or \"valid\".")
      .def(
          "__init__",
          [](n::Conv1dImpl* c, int64_t in, int64_t out, nb::handle k, nb::handle stride, nb::handle padding,
             nb::handle dilation, int64_t groups, bool bias, std::string padding_mode) {
            new (c) n::Conv1dImpl(in, out, size_1d(k, "Conv1d", "kernel_size"), size_1d(stride, "Conv1d", "stride"),
                                  conv_padding(padding), size_1d(dilation, "Conv1d", "dilation"), groups, bias,
                                  std::move(padding_mode));
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
          "groups"_a = 1, "bias"_a = true, "padding_mode"_a = "zeros");
  bind_conv<n::Conv2dImpl>(nn, "Conv2d",
                           "2-d convolution over [N, C, H, W] (torch.nn.Conv2d); sizes are an int or a pair, padding "
                           "may be \"same\" or \"valid\".");
  bind_conv<n::Conv3dImpl>(nn, "Conv3d",
                           "3-d convolution over [N, C, D, H, W] (torch.nn.Conv3d); sizes are an int or a triple, "
                           "padding may be \"same\" or \"valid\".");
  nb::class_<n::ConvTranspose1dImpl, n::ConvImpl>(nn, "ConvTranspose1d",
                                                  "The transposed 1-d convolution (torch.nn.ConvTranspose1d).")
      .def(
          "__init__",
          [](n::ConvTranspose1dImpl* c, int64_t in, int64_t out, nb::handle k, nb::handle stride, nb::handle padding,
             nb::handle output_padding, int64_t groups, bool bias, nb::handle dilation, std::string padding_mode) {
            const char* l = "ConvTranspose1d";
            new (c) n::ConvTranspose1dImpl(in, out, size_1d(k, l, "kernel_size"), size_1d(stride, l, "stride"),
                                           size_1d(padding, l, "padding"), size_1d(output_padding, l, "output_padding"),
                                           groups, bias, size_1d(dilation, l, "dilation"), std::move(padding_mode));
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "output_padding"_a = 0,
          "groups"_a = 1, "bias"_a = true, "dilation"_a = 1, "padding_mode"_a = "zeros")
      .def("forward", &conv_transpose_forward, "input"_a, "output_size"_a = nb::none());
  nb::class_<n::ConvTranspose3dImpl, n::ConvImpl>(nn, "ConvTranspose3d",
                                                  "The transposed 3-d convolution (torch.nn.ConvTranspose3d).")
      .def(
          "__init__",
          [](n::ConvTranspose3dImpl* c, int64_t in, int64_t out, nb::handle k, nb::handle stride, nb::handle padding,
             nb::handle output_padding, int64_t groups, bool bias, nb::handle dilation, std::string padding_mode) {
            new (c) n::ConvTranspose3dImpl(in, out, sizes(k), sizes(stride), sizes(padding), sizes(output_padding),
                                           groups, bias, sizes(dilation), std::move(padding_mode));
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "output_padding"_a = 0,
          "groups"_a = 1, "bias"_a = true, "dilation"_a = 1, "padding_mode"_a = "zeros")
      .def("forward", &conv_transpose_forward, "input"_a, "output_size"_a = nb::none());
  nb::class_<n::ConvTranspose2dImpl, n::ConvImpl>(nn, "ConvTranspose2d",
                                                  "The transposed 2-d convolution (torch.nn.ConvTranspose2d).")
      .def(
          "__init__",
          [](n::ConvTranspose2dImpl* c, int64_t in, int64_t out, nb::handle k, nb::handle stride, nb::handle padding,
             nb::handle output_padding, int64_t groups, bool bias, nb::handle dilation, std::string padding_mode) {
            new (c) n::ConvTranspose2dImpl(in, out, sizes(k), sizes(stride), sizes(padding), sizes(output_padding),
                                           groups, bias, sizes(dilation), std::move(padding_mode));
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "output_padding"_a = 0,
          "groups"_a = 1, "bias"_a = true, "dilation"_a = 1, "padding_mode"_a = "zeros")
      .def("forward", &conv_transpose_forward, "input"_a, "output_size"_a = nb::none());
  nb::class_<n::MaxPoolImpl, Module>(nn, "_MaxPoolNd")
      .def(
          "forward",
          [](n::MaxPoolImpl& p, const Tensor& x) -> nb::object {
            if (!p.return_indices()) return nb::cast(p.forward(x));
            auto [values, indices] = p.forward_with_indices(x);
            return nb::make_tuple(values, indices);
          },
          "input"_a)
      // With return_indices the one-tensor call takes Module's general path (the C++ one returns
      // the values alone), its hooks seeing the tuple.
      .def("__call__",
           [](nb::handle self, nb::args args, nb::kwargs kwargs) -> nb::object {
             auto& p = nb::cast<n::MaxPoolImpl&>(self);
             if (!p.return_indices()) return nb::type<Module>().attr("__call__")(self, *args, **kwargs);
             std::any out = p.call(std::any(nb::object(args)), [&](const std::any& inputs) {
               return std::any(self.attr("forward")(*std::any_cast<const nb::object&>(inputs), **kwargs));
             });
             return std::any_cast<const nb::object&>(out);
           })
      .def_prop_ro("return_indices", &n::MaxPoolImpl::return_indices);
  nb::class_<n::AvgPoolImpl, Module>(nn, "_AvgPoolNd");
  nb::class_<n::AdaptivePoolImpl, Module>(nn, "_AdaptivePoolNd");
  bind_max_pool<n::MaxPool1dImpl>(nn, "MaxPool1d",
                                  "1-d max pooling (torch.nn.MaxPool1d); stride defaults to kernel_size.");
  bind_max_pool<n::MaxPool2dImpl>(nn, "MaxPool2d",
                                  "2-d max pooling (torch.nn.MaxPool2d); stride defaults to kernel_size.");
  bind_max_pool<n::MaxPool3dImpl>(nn, "MaxPool3d",
                                  "3-d max pooling (torch.nn.MaxPool3d); stride defaults to kernel_size.");
  nb::class_<n::AvgPool1dImpl, n::AvgPoolImpl>(
      nn, "AvgPool1d", "1-d average pooling (torch.nn.AvgPool1d); stride defaults to kernel_size.")
      .def(
          "__init__",
          [](n::AvgPool1dImpl* p, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode,
             bool count_include_pad) {
            new (p) n::AvgPool1dImpl(sizes(k), stride.is_none() ? Dims{} : sizes(stride), sizes(padding), ceil_mode,
                                     count_include_pad);
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true);
  bind_avg_pool<n::AvgPool2dImpl>(nn, "AvgPool2d",
                                  "2-d average pooling (torch.nn.AvgPool2d); stride defaults to kernel_size.");
  bind_avg_pool<n::AvgPool3dImpl>(nn, "AvgPool3d",
                                  "3-d average pooling (torch.nn.AvgPool3d); stride defaults to kernel_size.");
#define UG_BIND_ADAPTIVE_POOL(Name, doc)                                                                      \
  nb::class_<n::Name##Impl, n::AdaptivePoolImpl>(nn, #Name, doc)                                              \
      .def(                                                                                                   \
          "__init__", [](n::Name##Impl* p, nb::handle size) { new (p) n::Name##Impl(adaptive_sizes(size)); }, \
          "output_size"_a);
  UG_BIND_ADAPTIVE_POOL(AdaptiveAvgPool1d, "1-d average pooling to a fixed output size (torch.nn.AdaptiveAvgPool1d).")
  UG_BIND_ADAPTIVE_POOL(AdaptiveAvgPool2d, "2-d average pooling to a fixed output size (torch.nn.AdaptiveAvgPool2d).")
  UG_BIND_ADAPTIVE_POOL(AdaptiveAvgPool3d, "3-d average pooling to a fixed output size (torch.nn.AdaptiveAvgPool3d).")
  UG_BIND_ADAPTIVE_POOL(AdaptiveMaxPool1d, "1-d max pooling to a fixed output size (torch.nn.AdaptiveMaxPool1d).")
  UG_BIND_ADAPTIVE_POOL(AdaptiveMaxPool2d, "2-d max pooling to a fixed output size (torch.nn.AdaptiveMaxPool2d).")
  UG_BIND_ADAPTIVE_POOL(AdaptiveMaxPool3d, "3-d max pooling to a fixed output size (torch.nn.AdaptiveMaxPool3d).")
#undef UG_BIND_ADAPTIVE_POOL

  // ---- normalization, dropout, embedding ------------------------------------------------------
  auto norm_base = [](auto& cls) {  // torch's _NormBase attributes; they fix the tensors' shapes
    using Norm = typename std::remove_reference_t<decltype(cls)>::Type;
    cls.def_prop_ro("num_features", &Norm::num_features)
        .def_prop_ro("eps", &Norm::eps)
        .def_prop_ro("affine", &Norm::affine)
        .def_prop_ro("track_running_stats", &Norm::track_running_stats);
  };
  auto batch_norm = nb::class_<n::BatchNormImpl, Module>(nn, "_BatchNorm");
  norm_base(batch_norm);
  batch_norm
      .def_prop_rw(
          "momentum", [](n::BatchNormImpl& m) { return m.momentum(); },
          [](n::BatchNormImpl& m, std::optional<double> v) { m.momentum() = v; }, nb::arg("value").none(),
          "The running statistics' update rate; None is a cumulative average.")
      .def("reset_running_stats", &n::BatchNormImpl::reset_running_stats);
  nb::class_<n::BatchNorm1dImpl, n::BatchNormImpl>(
      nn, "BatchNorm1d", "Batch normalisation over [N, C] or [N, C, L] with running statistics (torch.nn.BatchNorm1d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = true, "track_running_stats"_a = true, nb::kw_only(),
           "bias"_a = true);
  nb::class_<n::BatchNorm2dImpl, n::BatchNormImpl>(
      nn, "BatchNorm2d", "Batch normalisation over [N, C, H, W] with running statistics (torch.nn.BatchNorm2d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = true, "track_running_stats"_a = true, nb::kw_only(),
           "bias"_a = true);
  nb::class_<n::BatchNorm3dImpl, n::BatchNormImpl>(
      nn, "BatchNorm3d", "Batch normalisation over [N, C, D, H, W] with running statistics (torch.nn.BatchNorm3d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = true, "track_running_stats"_a = true, nb::kw_only(),
           "bias"_a = true);
  auto instance_norm = nb::class_<n::InstanceNormImpl, Module>(nn, "_InstanceNorm");
  norm_base(instance_norm);
  instance_norm
      .def_prop_rw(
          "momentum", [](n::InstanceNormImpl& m) { return m.momentum(); },
          [](n::InstanceNormImpl& m, std::optional<double> v) { m.momentum() = v; }, nb::arg("value").none(),
          "The running statistics' update rate; None is a cumulative average.")
      .def("reset_running_stats", &n::InstanceNormImpl::reset_running_stats);
  nb::class_<n::InstanceNorm1dImpl, n::InstanceNormImpl>(
      nn, "InstanceNorm1d", "Normalises each channel of each sample of [N, C, L] or [C, L] (torch.nn.InstanceNorm1d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = false, "track_running_stats"_a = false, nb::kw_only(),
           "bias"_a = true);
  nb::class_<n::InstanceNorm2dImpl, n::InstanceNormImpl>(
      nn, "InstanceNorm2d",
      "Normalises each channel of each sample of [N, C, H, W] or [C, H, W] (torch.nn.InstanceNorm2d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = false, "track_running_stats"_a = false, nb::kw_only(),
           "bias"_a = true);
  nb::class_<n::InstanceNorm3dImpl, n::InstanceNormImpl>(
      nn, "InstanceNorm3d",
      "Normalises each channel of each sample of [N, C, D, H, W] or [C, D, H, W] (torch.nn.InstanceNorm3d).")
      .def(nb::init<int64_t, double, std::optional<double>, bool, bool, bool>(), "num_features"_a, "eps"_a = 1e-5,
           "momentum"_a.none() = 0.1, "affine"_a = false, "track_running_stats"_a = false, nb::kw_only(),
           "bias"_a = true);
  nb::class_<n::LayerNormImpl, Module>(nn, "LayerNorm",
                                       "Normalises over the last dims, normalized_shape (torch.nn.LayerNorm).")
      .def(
          "__init__",
          [](n::LayerNormImpl* l, nb::handle shape, double eps, bool affine, bool bias) {
            new (l) n::LayerNormImpl(sizes(shape), eps, affine, bias);
          },
          "normalized_shape"_a, "eps"_a = 1e-5, "elementwise_affine"_a = true, "bias"_a = true);
  nb::class_<n::GroupNormImpl, Module>(nn, "GroupNorm", "Normalises over groups of channels (torch.nn.GroupNorm).")
      .def(nb::init<int64_t, int64_t, double, bool>(), "num_groups"_a, "num_channels"_a, "eps"_a = 1e-5,
           "affine"_a = true);
  nb::class_<n::RMSNormImpl, Module>(nn, "RMSNorm",
                                     "Scales by the root mean square over the last dims (torch.nn.RMSNorm).")
      .def(
          "__init__",
          [](n::RMSNormImpl* l, nb::handle shape, std::optional<double> eps, bool affine) {
            new (l) n::RMSNormImpl(sizes(shape), eps, affine);
          },
          "normalized_shape"_a, "eps"_a = nb::none(), "elementwise_affine"_a = true);
  nb::class_<n::DropoutImpl, Module>(
      nn, "Dropout",
      "Zeroes elements with probability p in training, scaling the others by 1 / (1 - p) (torch.nn.Dropout).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false)
      .def_prop_rw("p", &n::DropoutImpl::p, &n::DropoutImpl::set_p)
      .def_prop_rw("inplace", &n::DropoutImpl::inplace, &n::DropoutImpl::set_inplace);
  nb::class_<n::Dropout1dImpl, n::DropoutImpl>(nn, "Dropout1d",
                                               "Zeroes whole channels of [N, C, L] or [C, L] (torch.nn.Dropout1d).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false);
  nb::class_<n::Dropout2dImpl, n::DropoutImpl>(
      nn, "Dropout2d", "Zeroes whole channels of [N, C, H, W] or [C, H, W] (torch.nn.Dropout2d).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false);
  nb::class_<n::Dropout3dImpl, n::DropoutImpl>(
      nn, "Dropout3d", "Zeroes whole channels of [N, C, D, H, W] or [C, D, H, W] (torch.nn.Dropout3d).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false);
  nb::class_<n::AlphaDropoutImpl, n::DropoutImpl>(
      nn, "AlphaDropout", "Dropout that keeps SELU's zero mean and unit variance (torch.nn.AlphaDropout).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false);
  nb::class_<n::FeatureAlphaDropoutImpl, n::DropoutImpl>(
      nn, "FeatureAlphaDropout", "AlphaDropout of whole channels of [N, C, ...] (torch.nn.FeatureAlphaDropout).")
      .def(nb::init<double, bool>(), "p"_a = 0.5, "inplace"_a = false);
  nb::class_<n::EmbeddingImpl, Module>(
      nn, "Embedding", "A lookup table of num_embeddings vectors of size embedding_dim (torch.nn.Embedding).")
      .def(
          "__init__",
          [](n::EmbeddingImpl* e, int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
             std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, bool sparse) {
            if (sparse) throw ug::ValueError("[Embedding] sparse gradients are not supported; use sparse=False");
            new (e)
                n::EmbeddingImpl(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq);
          },
          "num_embeddings"_a, "embedding_dim"_a, "padding_idx"_a = nb::none(), "max_norm"_a = nb::none(),
          "norm_type"_a = 2.0, "scale_grad_by_freq"_a = false, "sparse"_a = false)
      .def_static(
          "from_pretrained",
          [](const Tensor& embeddings, bool freeze, std::optional<int64_t> padding_idx, std::optional<double> max_norm,
             double norm_type, bool scale_grad_by_freq, bool sparse) {
            if (sparse) throw ug::ValueError("[Embedding] sparse gradients are not supported; use sparse=False");
            return n::EmbeddingImpl::from_pretrained(embeddings, freeze, padding_idx, max_norm, norm_type,
                                                     scale_grad_by_freq);
          },
          "embeddings"_a, "freeze"_a = true, "padding_idx"_a = nb::none(), "max_norm"_a = nb::none(),
          "norm_type"_a = 2.0, "scale_grad_by_freq"_a = false, "sparse"_a = false,
          "An Embedding whose weight is embeddings [num, dim], trained unless freeze (torch's from_pretrained).");

  nb::class_<n::EmbeddingBagImpl, Module>(nn, "EmbeddingBag",
                                          "Sums, means or maxima of bags of embedding vectors (torch.nn.EmbeddingBag).")
      .def(
          "__init__",
          [](n::EmbeddingBagImpl* e, int64_t num, int64_t dim, std::optional<double> max_norm, double norm_type,
             bool scale_grad_by_freq, std::string mode, bool sparse, bool include_last_offset,
             std::optional<int64_t> padding_idx) {
            if (sparse) throw ug::ValueError("[EmbeddingBag] sparse gradients are not supported; use sparse=False");
            new (e) n::EmbeddingBagImpl(num, dim, max_norm, norm_type, scale_grad_by_freq, std::move(mode),
                                        include_last_offset, padding_idx);
          },
          "num_embeddings"_a, "embedding_dim"_a, "max_norm"_a = nb::none(), "norm_type"_a = 2.0,
          "scale_grad_by_freq"_a = false, "mode"_a = "mean", "sparse"_a = false, "include_last_offset"_a = false,
          "padding_idx"_a = nb::none())
      .def_static(
          "from_pretrained",
          [](const Tensor& embeddings, bool freeze, std::optional<double> max_norm, double norm_type,
             bool scale_grad_by_freq, std::string mode, bool sparse, bool include_last_offset,
             std::optional<int64_t> padding_idx) {
            if (sparse) throw ug::ValueError("[EmbeddingBag] sparse gradients are not supported; use sparse=False");
            return n::EmbeddingBagImpl::from_pretrained(embeddings, freeze, max_norm, norm_type, scale_grad_by_freq,
                                                        std::move(mode), include_last_offset, padding_idx);
          },
          "embeddings"_a, "freeze"_a = true, "max_norm"_a = nb::none(), "norm_type"_a = 2.0,
          "scale_grad_by_freq"_a = false, "mode"_a = "mean", "sparse"_a = false, "include_last_offset"_a = false,
          "padding_idx"_a = nb::none(),
          "An EmbeddingBag whose weight is embeddings [num, dim], trained unless freeze (torch's from_pretrained).")
      .def("forward",
           nb::overload_cast<const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&>(
               &n::EmbeddingBagImpl::forward),
           "input"_a, "offsets"_a = nb::none(), "per_sample_weights"_a = nb::none());

  nb::class_<n::PixelShuffleImpl, Module>(nn, "PixelShuffle",
                                          "[*, C·r², H, W] -> [*, C, H·r, W·r] (torch.nn.PixelShuffle).")
      .def(nb::init<int64_t>(), "upscale_factor"_a);
  nb::class_<n::PixelUnshuffleImpl, Module>(nn, "PixelUnshuffle",
                                            "[*, C, H·r, W·r] -> [*, C·r², H, W] (torch.nn.PixelUnshuffle).")
      .def(nb::init<int64_t>(), "downscale_factor"_a);
  nb::class_<n::UpsampleImpl, Module>(nn, "Upsample", "Resizes [N, C, *spatial] as F.interpolate (torch.nn.Upsample).")
      .def(
          "__init__",
          [](n::UpsampleImpl* u, nb::handle size, nb::handle scale_factor, std::string mode,
             std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
            new (u) n::UpsampleImpl(optional_sizes(size, "Upsample"), optional_factors(scale_factor, "Upsample"),
                                    std::move(mode), align_corners, recompute_scale_factor);
          },
          "size"_a = nb::none(), "scale_factor"_a = nb::none(), "mode"_a = "nearest", "align_corners"_a = nb::none(),
          "recompute_scale_factor"_a = nb::none());
  bind_upsampling<n::UpsamplingNearest2dImpl>(nn, "UpsamplingNearest2d",
                                              "Upsample in mode 'nearest' (torch.nn.UpsamplingNearest2d).");
  bind_upsampling<n::UpsamplingBilinear2dImpl>(
      nn, "UpsamplingBilinear2d", "Upsample in mode 'bilinear', align_corners=True (torch.nn.UpsamplingBilinear2d).");

  // ---- padding: an int pads every side, or (left, right, top, bottom) -------------------------
  nb::class_<n::PadImpl, Module>(nn, "_PadNd");
#define UG_BIND_PAD(Name, doc)                                                                             \
  nb::class_<n::Name##Impl, n::PadImpl>(nn, #Name, doc)                                                    \
      .def(                                                                                                \
          "__init__", [](n::Name##Impl* p, nb::handle padding) { new (p) n::Name##Impl(sizes(padding)); }, \
          "padding"_a);
#define UG_BIND_CONSTANT_PAD(Name, doc)                                                                             \
  nb::class_<n::Name##Impl, n::PadImpl>(nn, #Name, doc)                                                             \
      .def(                                                                                                         \
          "__init__",                                                                                               \
          [](n::Name##Impl* p, nb::handle padding, double value) { new (p) n::Name##Impl(sizes(padding), value); }, \
          "padding"_a, "value"_a);
  UG_BIND_PAD(ZeroPad1d, "Pads the last dim with zeros (torch.nn.ZeroPad1d).")
  UG_BIND_PAD(ZeroPad2d, "Pads the last 2 dims with zeros (torch.nn.ZeroPad2d).")
  UG_BIND_PAD(ZeroPad3d, "Pads the last 3 dims with zeros (torch.nn.ZeroPad3d).")
  UG_BIND_CONSTANT_PAD(ConstantPad1d, "Pads the last dim with value (torch.nn.ConstantPad1d).")
  UG_BIND_CONSTANT_PAD(ConstantPad2d, "Pads the last 2 dims with value (torch.nn.ConstantPad2d).")
  UG_BIND_CONSTANT_PAD(ConstantPad3d, "Pads the last 3 dims with value (torch.nn.ConstantPad3d).")
  UG_BIND_PAD(ReflectionPad1d, "Pads the last dim with its reflection (torch.nn.ReflectionPad1d).")
  UG_BIND_PAD(ReflectionPad2d, "Pads the last 2 dims with their reflection (torch.nn.ReflectionPad2d).")
  UG_BIND_PAD(ReflectionPad3d, "Pads the last 3 dims with their reflection (torch.nn.ReflectionPad3d).")
  UG_BIND_PAD(ReplicationPad1d, "Pads the last dim with copies of its edge (torch.nn.ReplicationPad1d).")
  UG_BIND_PAD(ReplicationPad2d, "Pads the last 2 dims with copies of their edges (torch.nn.ReplicationPad2d).")
  UG_BIND_PAD(ReplicationPad3d, "Pads the last 3 dims with copies of their edges (torch.nn.ReplicationPad3d).")
  UG_BIND_PAD(CircularPad1d, "Pads the last dim with its other end (torch.nn.CircularPad1d).")
  UG_BIND_PAD(CircularPad2d, "Pads the last 2 dims with their other ends (torch.nn.CircularPad2d).")
  UG_BIND_PAD(CircularPad3d, "Pads the last 3 dims with their other ends (torch.nn.CircularPad3d).")
#undef UG_BIND_PAD
#undef UG_BIND_CONSTANT_PAD

  // ---- losses: loss_fn(input, target) ----------------------------------------------------------
  nb::class_<n::LossImpl, Module>(nn, "_Loss").def_prop_ro("reduction", &n::LossImpl::reduction);
  nb::class_<n::CrossEntropyLossImpl, n::LossImpl>(
      nn, "CrossEntropyLoss",
      "Cross entropy of logits against class indices or probabilities (torch.nn.CrossEntropyLoss).")
      .def(
          "__init__",
          [](n::CrossEntropyLossImpl* l, std::optional<Tensor> weight, int64_t ignore_index, std::string reduction,
             double label_smoothing) {
            new (l)
                n::CrossEntropyLossImpl(tensor_or_empty(weight), ignore_index, std::move(reduction), label_smoothing);
          },
          "weight"_a = nb::none(), "ignore_index"_a = -100, "reduction"_a = "mean", "label_smoothing"_a = 0.0)
      .def("forward", &n::CrossEntropyLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::NLLLossImpl, n::LossImpl>(
      nn, "NLLLoss", "Negative log likelihood of log-probabilities against class indices (torch.nn.NLLLoss).")
      .def(
          "__init__",
          [](n::NLLLossImpl* l, std::optional<Tensor> weight, int64_t ignore_index, std::string reduction) {
            new (l) n::NLLLossImpl(tensor_or_empty(weight), ignore_index, std::move(reduction));
          },
          "weight"_a = nb::none(), "ignore_index"_a = -100, "reduction"_a = "mean")
      .def("forward", &n::NLLLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::MSELossImpl, n::LossImpl>(nn, "MSELoss", "Mean squared error (torch.nn.MSELoss).")
      .def(nb::init<std::string>(), "reduction"_a = "mean")
      .def("forward", &n::MSELossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::L1LossImpl, n::LossImpl>(nn, "L1Loss", "Mean absolute error (torch.nn.L1Loss).")
      .def(nb::init<std::string>(), "reduction"_a = "mean")
      .def("forward", &n::L1LossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::SmoothL1LossImpl, n::LossImpl>(
      nn, "SmoothL1Loss", "Squared error below beta, absolute error above (torch.nn.SmoothL1Loss).")
      .def(nb::init<std::string, double>(), "reduction"_a = "mean", "beta"_a = 1.0)
      .def("forward", &n::SmoothL1LossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::HuberLossImpl, n::LossImpl>(nn, "HuberLoss", "Huber loss with threshold delta (torch.nn.HuberLoss).")
      .def(nb::init<std::string, double>(), "reduction"_a = "mean", "delta"_a = 1.0)
      .def("forward", &n::HuberLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::BCELossImpl, n::LossImpl>(nn, "BCELoss", "Binary cross entropy of probabilities (torch.nn.BCELoss).")
      .def(
          "__init__",
          [](n::BCELossImpl* l, std::optional<Tensor> weight, std::string reduction) {
            new (l) n::BCELossImpl(tensor_or_empty(weight), std::move(reduction));
          },
          "weight"_a = nb::none(), "reduction"_a = "mean")
      .def("forward", &n::BCELossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::BCEWithLogitsLossImpl, n::LossImpl>(
      nn, "BCEWithLogitsLoss", "Binary cross entropy of logits, computed stably (torch.nn.BCEWithLogitsLoss).")
      .def(
          "__init__",
          [](n::BCEWithLogitsLossImpl* l, std::optional<Tensor> weight, std::string reduction,
             std::optional<Tensor> pos_weight) {
            new (l)
                n::BCEWithLogitsLossImpl(tensor_or_empty(weight), std::move(reduction), tensor_or_empty(pos_weight));
          },
          "weight"_a = nb::none(), "reduction"_a = "mean", "pos_weight"_a = nb::none())
      .def("forward", &n::BCEWithLogitsLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::KLDivLossImpl, n::LossImpl>(nn, "KLDivLoss",
                                            "Kullback-Leibler divergence of log-probabilities (torch.nn.KLDivLoss).")
      .def(nb::init<std::string, bool>(), "reduction"_a = "mean", "log_target"_a = false)
      .def("forward", &n::KLDivLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::PoissonNLLLossImpl, n::LossImpl>(
      nn, "PoissonNLLLoss", "Negative log-likelihood under a Poisson rate (torch.nn.PoissonNLLLoss).")
      .def(
          "__init__",
          [](n::PoissonNLLLossImpl* self, bool log_input, bool full, nb::object, double eps, nb::object,
             const std::string& reduction) { new (self) n::PoissonNLLLossImpl(log_input, full, eps, reduction); },
          "log_input"_a = true, "full"_a = false, "size_average"_a = nb::none(), "eps"_a = 1e-8,
          "reduce"_a = nb::none(), "reduction"_a = "mean")
      .def("forward", &n::PoissonNLLLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::GaussianNLLLossImpl, n::LossImpl>(
      nn, "GaussianNLLLoss", "Negative log-likelihood under N(input, var) (torch.nn.GaussianNLLLoss).")
      .def(nb::init<bool, double, std::string>(), nb::kw_only(), "full"_a = false, "eps"_a = 1e-6,
           "reduction"_a = "mean")
      .def("forward", &n::GaussianNLLLossImpl::forward, "input"_a, "target"_a, "var"_a);
  nb::class_<n::CosineEmbeddingLossImpl, n::LossImpl>(
      nn, "CosineEmbeddingLoss", "Cosine-similarity loss of pairs labelled 1 or -1 (torch.nn.CosineEmbeddingLoss).")
      .def(nb::init<double, std::string>(), "margin"_a = 0.0, "reduction"_a = "mean")
      .def("forward", &n::CosineEmbeddingLossImpl::forward, "input1"_a, "input2"_a, "target"_a);
  nb::class_<n::MarginRankingLossImpl, n::LossImpl>(nn, "MarginRankingLoss",
                                                    "max(0, -target (x1 - x2) + margin) (torch.nn.MarginRankingLoss).")
      .def(nb::init<double, std::string>(), "margin"_a = 0.0, "reduction"_a = "mean")
      .def("forward", &n::MarginRankingLossImpl::forward, "input1"_a, "input2"_a, "target"_a);
  nb::class_<n::HingeEmbeddingLossImpl, n::LossImpl>(
      nn, "HingeEmbeddingLoss", "x where target is 1, max(0, margin - x) where -1 (torch.nn.HingeEmbeddingLoss).")
      .def(nb::init<double, std::string>(), "margin"_a = 1.0, "reduction"_a = "mean")
      .def("forward", &n::HingeEmbeddingLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::SoftMarginLossImpl, n::LossImpl>(nn, "SoftMarginLoss",
                                                 "log(1 + exp(-target x)) (torch.nn.SoftMarginLoss).")
      .def(nb::init<std::string>(), "reduction"_a = "mean")
      .def("forward", &n::SoftMarginLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::MultiLabelSoftMarginLossImpl, n::LossImpl>(
      nn, "MultiLabelSoftMarginLoss",
      "Per-class binary cross entropy of logits, averaged over classes (torch.nn.MultiLabelSoftMarginLoss).")
      .def(
          "__init__",
          [](n::MultiLabelSoftMarginLossImpl* l, std::optional<Tensor> weight, std::string reduction) {
            new (l) n::MultiLabelSoftMarginLossImpl(tensor_or_empty(weight), std::move(reduction));
          },
          "weight"_a = nb::none(), "reduction"_a = "mean")
      .def("forward", &n::MultiLabelSoftMarginLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::TripletMarginLossImpl, n::LossImpl>(
      nn, "TripletMarginLoss",
      "max(0, margin + d(anchor, positive) - d(anchor, negative)) (torch.nn.TripletMarginLoss).")
      .def(nb::init<double, double, double, bool, std::string>(), "margin"_a = 1.0, "p"_a = 2.0, "eps"_a = 1e-6,
           "swap"_a = false, "reduction"_a = "mean")
      .def("forward", &n::TripletMarginLossImpl::forward, "anchor"_a, "positive"_a, "negative"_a);
  nb::class_<n::MultiLabelMarginLossImpl, n::LossImpl>(
      nn, "MultiLabelMarginLoss", "Multi-label hinge loss over target class lists (torch.nn.MultiLabelMarginLoss).")
      .def(
          "__init__",
          [](n::MultiLabelMarginLossImpl* l, nb::object, nb::object, std::string reduction) {
            new (l) n::MultiLabelMarginLossImpl(std::move(reduction));
          },
          "size_average"_a = nb::none(), "reduce"_a = nb::none(), "reduction"_a = "mean")
      .def("forward", &n::MultiLabelMarginLossImpl::forward, "input"_a, "target"_a);
  nb::class_<n::TripletMarginWithDistanceLossImpl, n::LossImpl>(
      nn, "TripletMarginWithDistanceLoss",
      "max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance "
      "(torch.nn.TripletMarginWithDistanceLoss).")
      .def(
          "__init__",
          [](n::TripletMarginWithDistanceLossImpl* l, nb::object distance, double margin, bool swap,
             std::string reduction) {
            using Distance = n::TripletMarginWithDistanceLossImpl::Distance;
            new (l) n::TripletMarginWithDistanceLossImpl(distance.is_none() ? nullptr : nb::cast<Distance>(distance),
                                                         margin, swap, std::move(reduction));
            // A module given as the distance is a child, as torch's attribute makes it.
            if (nb::isinstance<Module>(distance))
              l->register_module("distance_function", nb::cast<std::shared_ptr<Module>>(distance));
          },
          nb::kw_only(), "distance_function"_a = nb::none(), "margin"_a = 1.0, "swap"_a = false, "reduction"_a = "mean")
      .def("forward", &n::TripletMarginWithDistanceLossImpl::forward, "anchor"_a, "positive"_a, "negative"_a);
  nb::class_<n::BilinearImpl, Module>(nn, "Bilinear", "y = x1ᵀ A x2 + b (torch.nn.Bilinear).")
      .def(nb::init<int64_t, int64_t, int64_t, bool>(), "in1_features"_a, "in2_features"_a, "out_features"_a,
           "bias"_a = true)
      .def("forward", &n::BilinearImpl::forward, "input1"_a, "input2"_a);
  nb::class_<n::MultiMarginLossImpl, n::LossImpl>(nn, "MultiMarginLoss",
                                                  "Multi-class hinge loss (torch.nn.MultiMarginLoss).")
      .def(
          "__init__",
          [](n::MultiMarginLossImpl* l, int64_t p, double margin, std::optional<Tensor> weight, std::string reduction) {
            new (l) n::MultiMarginLossImpl(p, margin, tensor_or_empty(weight), std::move(reduction));
          },
          "p"_a = 1, "margin"_a = 1.0, "weight"_a = nb::none(), "reduction"_a = "mean")
      .def("forward", &n::MultiMarginLossImpl::forward, "input"_a, "target"_a);

  // ---- attention -----------------------------------------------------------------------------
  nb::class_<n::MultiheadAttentionImpl, Module>(
      nn, "MultiheadAttention", "Multi-head scaled dot-product attention (torch.nn.MultiheadAttention).")
      .def(
          "__init__",
          [](n::MultiheadAttentionImpl* m, int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
             bool add_bias_kv, bool add_zero_attn, std::optional<int64_t> kdim, std::optional<int64_t> vdim,
             bool batch_first) {
            new (m) n::MultiheadAttentionImpl(embed_dim, num_heads, dropout, bias, batch_first, add_bias_kv,
                                              add_zero_attn, kdim.value_or(embed_dim), vdim.value_or(embed_dim));
          },
          "embed_dim"_a, "num_heads"_a, "dropout"_a = 0.0, "bias"_a = true, "add_bias_kv"_a = false,
          "add_zero_attn"_a = false, "kdim"_a = nb::none(), "vdim"_a = nb::none(), "batch_first"_a = false)
      .def(
          "forward",
          [](n::MultiheadAttentionImpl& m, const Tensor& q, const Tensor& k, const Tensor& v,
             std::optional<Tensor> key_padding_mask, bool need_weights, std::optional<Tensor> attn_mask,
             bool average_attn_weights, bool is_causal) {
            auto [out, weights] = m.forward(q, k, v, tensor_or_empty(key_padding_mask), need_weights,
                                            tensor_or_empty(attn_mask), average_attn_weights, is_causal);
            return nb::make_tuple(out, optional_result(weights));
          },
          "query"_a, "key"_a, "value"_a, "key_padding_mask"_a = nb::none(), "need_weights"_a = true,
          "attn_mask"_a = nb::none(), "average_attn_weights"_a = true, "is_causal"_a = false);
  nb::class_<n::TransformerEncoderLayerImpl, Module>(
      nn, "TransformerEncoderLayer",
      "Self-attention and a feed-forward block, each with a residual and LayerNorm (torch.nn.TransformerEncoderLayer).")
      .def("__init__", &init_transformer_layer<n::TransformerEncoderLayerImpl>, "d_model"_a, "nhead"_a,
           "dim_feedforward"_a = 2048, "dropout"_a = 0.1, "activation"_a = "relu", "layer_norm_eps"_a = 1e-5,
           "batch_first"_a = false, "norm_first"_a = false, "bias"_a = true)
      .def(
          "forward",
          [](n::TransformerEncoderLayerImpl& m, const Tensor& src, std::optional<Tensor> src_mask,
             std::optional<Tensor> src_key_padding_mask, bool is_causal) {
            return m.forward(src, tensor_or_empty(src_mask), tensor_or_empty(src_key_padding_mask), is_causal);
          },
          "src"_a, "src_mask"_a = nb::none(), "src_key_padding_mask"_a = nb::none(), "is_causal"_a = false);
  nb::class_<n::TransformerEncoderImpl, Module>(
      nn, "TransformerEncoder",
      "num_layers copies of an encoder layer, then an optional norm (torch.nn.TransformerEncoder). "
      "enable_nested_tensor and mask_check choose torch's fast paths and change no result: accepted.")
      .def(
          "__init__",
          [](n::TransformerEncoderImpl* self, std::shared_ptr<n::TransformerEncoderLayerImpl> encoder_layer,
             int64_t num_layers, std::shared_ptr<Module> norm, bool, bool) {
            new (self) n::TransformerEncoderImpl(n::TransformerEncoderLayer(std::move(encoder_layer)), num_layers,
                                                 std::move(norm));
          },
          "encoder_layer"_a, "num_layers"_a, "norm"_a = nb::none(), "enable_nested_tensor"_a = true,
          "mask_check"_a = true)
      .def(
          "forward",
          [](n::TransformerEncoderImpl& m, const Tensor& src, std::optional<Tensor> mask,
             std::optional<Tensor> src_key_padding_mask, std::optional<bool> is_causal) {
            return m.forward(src, tensor_or_empty(mask), tensor_or_empty(src_key_padding_mask),
                             is_causal.value_or(false));
          },
          "src"_a, "mask"_a = nb::none(), "src_key_padding_mask"_a = nb::none(), "is_causal"_a = nb::none());
  nb::class_<n::TransformerDecoderLayerImpl, Module>(
      nn, "TransformerDecoderLayer",
      "Self-attention, attention to the encoder's output and a feed-forward block, each with a residual and "
      "LayerNorm (torch.nn.TransformerDecoderLayer).")
      .def("__init__", &init_transformer_layer<n::TransformerDecoderLayerImpl>, "d_model"_a, "nhead"_a,
           "dim_feedforward"_a = 2048, "dropout"_a = 0.1, "activation"_a = "relu", "layer_norm_eps"_a = 1e-5,
           "batch_first"_a = false, "norm_first"_a = false, "bias"_a = true)
      .def(
          "forward",
          [](n::TransformerDecoderLayerImpl& m, const Tensor& tgt, const Tensor& memory, std::optional<Tensor> tgt_mask,
             std::optional<Tensor> memory_mask, std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
            return m.forward(tgt, memory, tensor_or_empty(tgt_mask), tensor_or_empty(memory_mask),
                             tensor_or_empty(tgt_key_padding_mask), tensor_or_empty(memory_key_padding_mask),
                             tgt_is_causal, memory_is_causal);
          },
          "tgt"_a, "memory"_a, "tgt_mask"_a = nb::none(), "memory_mask"_a = nb::none(),
          "tgt_key_padding_mask"_a = nb::none(), "memory_key_padding_mask"_a = nb::none(), "tgt_is_causal"_a = false,
          "memory_is_causal"_a = false);
  nb::class_<n::TransformerDecoderImpl, Module>(
      nn, "TransformerDecoder",
      "num_layers copies of a decoder layer, then an optional norm (torch.nn.TransformerDecoder).")
      .def(
          "__init__",
          [](n::TransformerDecoderImpl* self, std::shared_ptr<n::TransformerDecoderLayerImpl> decoder_layer,
             int64_t num_layers, std::shared_ptr<Module> norm) {
            new (self) n::TransformerDecoderImpl(n::TransformerDecoderLayer(std::move(decoder_layer)), num_layers,
                                                 std::move(norm));
          },
          "decoder_layer"_a, "num_layers"_a, "norm"_a = nb::none())
      .def(
          "forward",
          [](n::TransformerDecoderImpl& m, const Tensor& tgt, const Tensor& memory, std::optional<Tensor> tgt_mask,
             std::optional<Tensor> memory_mask, std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, std::optional<bool> tgt_is_causal, bool memory_is_causal) {
            return m.forward(tgt, memory, tensor_or_empty(tgt_mask), tensor_or_empty(memory_mask),
                             tensor_or_empty(tgt_key_padding_mask), tensor_or_empty(memory_key_padding_mask),
                             tgt_is_causal.value_or(false), memory_is_causal);
          },
          "tgt"_a, "memory"_a, "tgt_mask"_a = nb::none(), "memory_mask"_a = nb::none(),
          "tgt_key_padding_mask"_a = nb::none(), "memory_key_padding_mask"_a = nb::none(),
          "tgt_is_causal"_a = nb::none(), "memory_is_causal"_a = false);
  nb::class_<n::TransformerImpl, Module>(
      nn, "Transformer",
      "An encoder and a decoder stack, each ending in a LayerNorm (torch.nn.Transformer); custom_encoder / "
      "custom_decoder replace the built ones.")
      .def(
          "__init__",
          [](n::TransformerImpl* self, int64_t d_model, int64_t nhead, int64_t num_encoder_layers,
             int64_t num_decoder_layers, int64_t dim_feedforward, double dropout, const std::string& activation,
             std::shared_ptr<n::TransformerEncoderImpl> custom_encoder,
             std::shared_ptr<n::TransformerDecoderImpl> custom_decoder, double layer_norm_eps, bool batch_first,
             bool norm_first, bool bias) {
            new (self) n::TransformerImpl(d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward,
                                          dropout, activation, n::TransformerEncoder(std::move(custom_encoder)),
                                          n::TransformerDecoder(std::move(custom_decoder)), layer_norm_eps, batch_first,
                                          norm_first, bias);
          },
          "d_model"_a = 512, "nhead"_a = 8, "num_encoder_layers"_a = 6, "num_decoder_layers"_a = 6,
          "dim_feedforward"_a = 2048, "dropout"_a = 0.1, "activation"_a = "relu", "custom_encoder"_a = nb::none(),
          "custom_decoder"_a = nb::none(), "layer_norm_eps"_a = 1e-5, "batch_first"_a = false, "norm_first"_a = false,
          "bias"_a = true)
      .def(
          "forward",
          [](n::TransformerImpl& m, const Tensor& src, const Tensor& tgt, std::optional<Tensor> src_mask,
             std::optional<Tensor> tgt_mask, std::optional<Tensor> memory_mask,
             std::optional<Tensor> src_key_padding_mask, std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, std::optional<bool> src_is_causal,
             std::optional<bool> tgt_is_causal, bool memory_is_causal) {
            return m.forward(src, tgt, tensor_or_empty(src_mask), tensor_or_empty(tgt_mask),
                             tensor_or_empty(memory_mask), tensor_or_empty(src_key_padding_mask),
                             tensor_or_empty(tgt_key_padding_mask), tensor_or_empty(memory_key_padding_mask),
                             src_is_causal.value_or(false), tgt_is_causal.value_or(false), memory_is_causal);
          },
          "src"_a, "tgt"_a, "src_mask"_a = nb::none(), "tgt_mask"_a = nb::none(), "memory_mask"_a = nb::none(),
          "src_key_padding_mask"_a = nb::none(), "tgt_key_padding_mask"_a = nb::none(),
          "memory_key_padding_mask"_a = nb::none(), "src_is_causal"_a = nb::none(), "tgt_is_causal"_a = nb::none(),
          "memory_is_causal"_a = false)
      .def_static(
          "generate_square_subsequent_mask",
          [](int64_t sz, nb::handle device, nb::handle dtype) {
            return n::TransformerImpl::generate_square_subsequent_mask(
                sz, dtype.is_none() ? std::nullopt : std::optional(dtype_from_python(dtype)));
          },
          "sz"_a, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "[sz, sz] float mask: -inf above the diagonal, 0 elsewhere.");
}

}  // namespace ugpy
