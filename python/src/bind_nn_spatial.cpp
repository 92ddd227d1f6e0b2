// ug.nn's and ug.nn.functional's spatial rearrangements with torch's names and defaults:
// unfold / fold (Unfold / Fold), affine_grid and grid_sample, max_unpool (MaxUnpool), lp_pool
// (LPPool), channel_shuffle (ChannelShuffle) and local_response_norm (LocalResponseNorm).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/nn/functional/grid_sample.h"
#include "ug/nn/layers/fold.h"
#include "ug/nn/layers/pooling.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Dims;
using ug::Tensor;

/** An int or a tuple of ints. */
Dims sizes(nb::handle h, const char* op) { return dims_from_sequence(h, op); }

/** None, or sizes. */
Dims sizes_or_empty(nb::handle h, const char* op) { return h.is_none() ? Dims{} : sizes(h, op); }
std::optional<Dims> optional_sizes_of(nb::handle h, const char* op) {
  return h.is_none() ? std::nullopt : std::optional<Dims>(sizes(h, op));
}

}  // namespace

void bind_nn_spatial(nb::module_& nn, nb::module_& f) {
  namespace F = ug::nn::functional;
  namespace n = ug::nn;
  f.def(
      "unfold",
      [](const Tensor& x, nb::handle k, nb::handle dilation, nb::handle padding, nb::handle stride) {
        return F::unfold(x, sizes(k, "unfold"), sizes(dilation, "unfold"), sizes(padding, "unfold"),
                         sizes(stride, "unfold"));
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  f.def(
      "fold",
      [](const Tensor& x, nb::handle out, nb::handle k, nb::handle dilation, nb::handle padding, nb::handle stride) {
        return F::fold(x, sizes(out, "fold"), sizes(k, "fold"), sizes(dilation, "fold"), sizes(padding, "fold"),
                       sizes(stride, "fold"));
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  // torch warns when align_corners is left unset and takes it as false.
  f.def(
      "grid_sample",
      [](const Tensor& x, const Tensor& grid, const std::string& mode, const std::string& padding_mode,
         std::optional<bool> align_corners) {
        return F::grid_sample(x, grid, mode, padding_mode, align_corners.value_or(false));
      },
      "input"_a, "grid"_a, "mode"_a = "bilinear", "padding_mode"_a = "zeros", "align_corners"_a = nb::none());
  f.def(
      "affine_grid",
      [](const Tensor& theta, nb::handle size, std::optional<bool> align_corners) {
        return F::affine_grid(theta, sizes(size, "affine_grid"), align_corners.value_or(false));
      },
      "theta"_a, "size"_a, "align_corners"_a = nb::none());
  nb::class_<n::UnfoldImpl, n::Module>(nn, "Unfold", "Sliding blocks of [N, C, H, W] as columns (torch.nn.Unfold).")
      .def(
          "__init__",
          [](n::UnfoldImpl* self, nb::handle k, nb::handle dilation, nb::handle padding, nb::handle stride) {
            new (self) n::UnfoldImpl(sizes(k, "Unfold"), sizes(dilation, "Unfold"), sizes(padding, "Unfold"),
                                     sizes(stride, "Unfold"));
          },
          "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  nb::class_<n::FoldImpl, n::Module>(nn, "Fold", "Columns of blocks summed back into an image (torch.nn.Fold).")
      .def(
          "__init__",
          [](n::FoldImpl* self, nb::handle out, nb::handle k, nb::handle dilation, nb::handle padding,
             nb::handle stride) {
            new (self) n::FoldImpl(sizes(out, "Fold"), sizes(k, "Fold"), sizes(dilation, "Fold"),
                                   sizes(padding, "Fold"), sizes(stride, "Fold"));
          },
          "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  for (int64_t dims : {1, 2, 3}) {
    const std::string unpool = "max_unpool" + std::to_string(dims) + "d", lp = "lp_pool" + std::to_string(dims) + "d";
    f.def(
        unpool.c_str(),
        [dims](const Tensor& x, const Tensor& indices, nb::handle k, nb::handle stride, nb::handle padding,
               nb::handle output_size) {
          return F::max_unpool(dims, x, indices, sizes(k, "max_unpool"), sizes_or_empty(stride, "max_unpool"),
                               sizes(padding, "max_unpool"), optional_sizes_of(output_size, "max_unpool"));
        },
        "input"_a, "indices"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0,
        "output_size"_a = nb::none());
    f.def(
        lp.c_str(),
        [dims](const Tensor& x, double norm_type, nb::handle k, nb::handle stride, bool ceil_mode) {
          return F::lp_pool(dims, x, norm_type, sizes(k, "lp_pool"), sizes_or_empty(stride, "lp_pool"), ceil_mode);
        },
        "input"_a, "norm_type"_a, "kernel_size"_a, "stride"_a = nb::none(), "ceil_mode"_a = false);
  }
  f.def("channel_shuffle", &F::channel_shuffle, "input"_a, "groups"_a);
  f.def("native_channel_shuffle", &F::channel_shuffle, "input"_a, "groups"_a);
  f.def("local_response_norm", &F::local_response_norm, "input"_a, "size"_a, "alpha"_a = 1e-4, "beta"_a = 0.75,
        "k"_a = 1.0);
  nb::class_<n::MaxUnpoolImpl, n::Module>(nn, "_MaxUnpoolNd");
  nb::class_<n::LPPoolImpl, n::Module>(nn, "_LPPoolNd");
#define UG_BIND_UNPOOL_LP(Dims_)                                                                                     \
  nb::class_<n::MaxUnpool##Dims_##dImpl, n::MaxUnpoolImpl>(                                                          \
      nn, "MaxUnpool" #Dims_ "d", "Inverse of MaxPool" #Dims_ "d (torch.nn.MaxUnpool" #Dims_ "d).")                  \
      .def(                                                                                                          \
          "__init__",                                                                                                \
          [](n::MaxUnpool##Dims_##dImpl* self, nb::handle k, nb::handle stride, nb::handle padding) {                \
            new (self) n::MaxUnpool##Dims_##dImpl(sizes(k, "MaxUnpool"), sizes_or_empty(stride, "MaxUnpool"),        \
                                                  sizes(padding, "MaxUnpool"));                                      \
          },                                                                                                         \
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0)                                                 \
      .def(                                                                                                          \
          "forward",                                                                                                 \
          [](n::MaxUnpool##Dims_##dImpl& self, const Tensor& x, const Tensor& indices, nb::handle output_size) {     \
            return self.forward(x, indices, optional_sizes_of(output_size, "MaxUnpool"));                            \
          },                                                                                                         \
          "input"_a, "indices"_a, "output_size"_a = nb::none());                                                     \
  nb::class_<n::LPPool##Dims_##dImpl, n::LPPoolImpl>(nn, "LPPool" #Dims_ "d",                                        \
                                                     "Power-average pooling (torch.nn.LPPool" #Dims_ "d).")          \
      .def(                                                                                                          \
          "__init__",                                                                                                \
          [](n::LPPool##Dims_##dImpl* self, double norm_type, nb::handle k, nb::handle stride, bool ceil_mode) {     \
            new (self)                                                                                               \
                n::LPPool##Dims_##dImpl(norm_type, sizes(k, "LPPool"), sizes_or_empty(stride, "LPPool"), ceil_mode); \
          },                                                                                                         \
          "norm_type"_a, "kernel_size"_a, "stride"_a = nb::none(), "ceil_mode"_a = false);
  UG_BIND_UNPOOL_LP(1)
  UG_BIND_UNPOOL_LP(2)
  UG_BIND_UNPOOL_LP(3)
#undef UG_BIND_UNPOOL_LP
  nb::class_<n::ChannelShuffleImpl, n::Module>(nn, "ChannelShuffle",
                                               "Interleaves groups of channels (torch.nn.ChannelShuffle).")
      .def(nb::init<int64_t>(), "groups"_a);
  nb::class_<n::LocalResponseNormImpl, n::Module>(
      nn, "LocalResponseNorm", "Normalises by the squares of neighbouring channels (torch.nn.LocalResponseNorm).")
      .def(nb::init<int64_t, double, double, double>(), "size"_a, "alpha"_a = 1e-4, "beta"_a = 0.75, "k"_a = 1.0);
}

}  // namespace ugpy
