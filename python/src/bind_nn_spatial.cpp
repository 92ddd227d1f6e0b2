// ug.nn's and ug.nn.functional's spatial rearrangements with torch's names and defaults:
// unfold / fold (Unfold / Fold), affine_grid and grid_sample.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/nn/functional/grid_sample.h"
#include "ug/nn/layers/fold.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Dims;
using ug::Tensor;

/** An int or a tuple of ints. */
Dims sizes(nb::handle h, const char* op) { return dims_from_sequence(h, op); }

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
}

}  // namespace ugpy
