// ug.nn.functional: the functions of ug::nn::functional with torch.nn.functional's argument
// names, order and defaults (including the deprecated size_average / reduce of the losses).
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "ug/nn/functional.h"
#include "ug/nn/functional/embedding_bag.h"
#include "ug/nn/functional/feature_alpha_dropout.h"
#include "ug/nn/layers/ctc_loss.h"

namespace ugpy {

namespace {

namespace F = ug::nn::functional;
using ug::Tensor;
using OptTensor = std::optional<Tensor>;

Tensor or_undefined(const OptTensor& t) { return t ? *t : Tensor(); }

/** torch's _Reduction.legacy_get_string: size_average / reduce, when given, override reduction. */
std::string reduction_of(std::optional<bool> size_average, std::optional<bool> reduce, const std::string& reduction) {
  if (!size_average && !reduce) return reduction;
  if (!reduce.value_or(true)) return "none";
  return size_average.value_or(true) ? "mean" : "sum";
}

int64_t softmax_dim(const Tensor& x, std::optional<int64_t> dim) { return dim ? *dim : F::implicit_softmax_dim(x); }

/** ctc_loss's lengths: a tensor, or a sequence of ints as torch also takes. */
Tensor lengths(nb::handle h) {
  return nb::isinstance<Tensor>(h) ? nb::cast<Tensor>(h) : tensor_from_data(h, ug::DType::Int64, std::nullopt);
}

}  // namespace

void bind_nn_functional(nb::module_& nn, nb::module_& m) {
  auto none = nb::none();
  // ---- linear ----
  m.def(
      "linear", [](const Tensor& x, const Tensor& w, const OptTensor& b) { return F::linear(x, w, or_undefined(b)); },
      nb::arg("input"), nb::arg("weight"), nb::arg("bias") = none);

  // ---- activations ----
  m.def("relu", &F::relu, nb::arg("input"), nb::arg("inplace") = false);
  m.def("relu6", &F::relu6, nb::arg("input"), nb::arg("inplace") = false);
  m.def("leaky_relu", &F::leaky_relu, nb::arg("input"), nb::arg("negative_slope") = 0.01, nb::arg("inplace") = false);
  m.def("elu", &F::elu, nb::arg("input"), nb::arg("alpha") = 1.0, nb::arg("inplace") = false);
  m.def("selu", &F::selu, nb::arg("input"), nb::arg("inplace") = false);
  m.def("celu", &F::celu, nb::arg("input"), nb::arg("alpha") = 1.0, nb::arg("inplace") = false);
  m.def(
      "gelu", [](const Tensor& x, const std::string& approximate) { return F::gelu(x, approximate); }, nb::arg("input"),
      nb::arg("approximate") = "none");
  m.def("silu", &F::silu, nb::arg("input"), nb::arg("inplace") = false);
  m.def("mish", &F::mish, nb::arg("input"), nb::arg("inplace") = false);
  m.def("sigmoid", &F::sigmoid, nb::arg("input"));
  m.def("tanh", &F::tanh, nb::arg("input"));
  m.def("logsigmoid", &F::logsigmoid, nb::arg("input"));
  m.def("softplus", &F::softplus, nb::arg("input"), nb::arg("beta") = 1.0, nb::arg("threshold") = 20.0);
  m.def("softsign", &F::softsign, nb::arg("input"));
  m.def("hardtanh", &F::hardtanh, nb::arg("input"), nb::arg("min_val") = -1.0, nb::arg("max_val") = 1.0,
        nb::arg("inplace") = false);
  m.def("hardsigmoid", &F::hardsigmoid, nb::arg("input"), nb::arg("inplace") = false);
  m.def("hardswish", &F::hardswish, nb::arg("input"), nb::arg("inplace") = false);
  m.def("glu", &F::glu, nb::arg("input"), nb::arg("dim") = -1);
  m.def("threshold", &F::threshold, nb::arg("input"), nb::arg("threshold"), nb::arg("value"),
        nb::arg("inplace") = false);
  m.def("hardshrink", &F::hardshrink, nb::arg("input"), nb::arg("lambd") = 0.5);
  m.def("softshrink", &F::softshrink, nb::arg("input"), nb::arg("lambd") = 0.5);
  m.def("tanhshrink", &F::tanhshrink, nb::arg("input"));
  m.def("prelu", &F::prelu, nb::arg("input"), nb::arg("weight"));
  m.def("pixel_shuffle", &F::pixel_shuffle, nb::arg("input"), nb::arg("upscale_factor"));
  m.def("pixel_unshuffle", &F::pixel_unshuffle, nb::arg("input"), nb::arg("downscale_factor"));
  // The in-place forms: the activation written into input (autograd's version checks apply).
  m.def(
      "relu_", [](const Tensor& x) { return F::relu(x, true); }, nb::arg("input"));
  m.def(
      "selu_", [](const Tensor& x) { return F::selu(x, true); }, nb::arg("input"));
  m.def(
      "elu_", [](const Tensor& x, double alpha) { return F::elu(x, alpha, true); }, nb::arg("input"),
      nb::arg("alpha") = 1.0);
  m.def(
      "celu_", [](const Tensor& x, double alpha) { return F::celu(x, alpha, true); }, nb::arg("input"),
      nb::arg("alpha") = 1.0);
  m.def(
      "leaky_relu_", [](const Tensor& x, double slope) { return F::leaky_relu(x, slope, true); }, nb::arg("input"),
      nb::arg("negative_slope") = 0.01);
  m.def(
      "hardtanh_", [](const Tensor& x, double lo, double hi) { return F::hardtanh(x, lo, hi, true); }, nb::arg("input"),
      nb::arg("min_val") = -1.0, nb::arg("max_val") = 1.0);
  m.def(
      "threshold_",
      [](const Tensor& x, double threshold, double value) { return F::threshold(x, threshold, value, true); },
      nb::arg("input"), nb::arg("threshold"), nb::arg("value"));
  // torch's deprecated resizers: interpolate, nearest, and bilinear with align_corners.
  m.def(
      "upsample",
      [](const Tensor& x, nb::handle size, nb::handle scale_factor, const std::string& mode,
         std::optional<bool> align_corners) {
        return F::interpolate(x, {.size = optional_sizes(size, "upsample"),
                                  .scale_factor = optional_factors(scale_factor, "upsample"),
                                  .mode = mode,
                                  .align_corners = align_corners});
      },
      nb::arg("input"), nb::arg("size") = none, nb::arg("scale_factor") = none, nb::arg("mode") = "nearest",
      nb::arg("align_corners") = none);
  m.def(
      "upsample_nearest",
      [](const Tensor& x, nb::handle size, nb::handle scale_factor) {
        return F::interpolate(x, {.size = optional_sizes(size, "upsample_nearest"),
                                  .scale_factor = optional_factors(scale_factor, "upsample_nearest")});
      },
      nb::arg("input"), nb::arg("size") = none, nb::arg("scale_factor") = none);
  m.def(
      "upsample_bilinear",
      [](const Tensor& x, nb::handle size, nb::handle scale_factor) {
        return F::interpolate(x, {.size = optional_sizes(size, "upsample_bilinear"),
                                  .scale_factor = optional_factors(scale_factor, "upsample_bilinear"),
                                  .mode = "bilinear",
                                  .align_corners = true});
      },
      nb::arg("input"), nb::arg("size") = none, nb::arg("scale_factor") = none);
  m.def(
      "interpolate",
      [](const Tensor& x, nb::handle size, nb::handle scale_factor, const std::string& mode,
         std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor, bool antialias) {
        return F::interpolate(x, {.size = optional_sizes(size, "interpolate"),
                                  .scale_factor = optional_factors(scale_factor, "interpolate"),
                                  .mode = mode,
                                  .align_corners = align_corners,
                                  .recompute_scale_factor = recompute_scale_factor,
                                  .antialias = antialias});
      },
      nb::arg("input"), nb::arg("size") = none, nb::arg("scale_factor") = none, nb::arg("mode") = "nearest",
      nb::arg("align_corners") = none, nb::arg("recompute_scale_factor") = none, nb::arg("antialias") = false);
  m.def(
      "softmax",
      [](const Tensor& x, std::optional<int64_t> dim, int, std::optional<ug::DType> dtype) {
        return F::softmax(x, softmax_dim(x, dim), dtype);
      },
      nb::arg("input"), nb::arg("dim") = none, nb::arg("_stacklevel") = 3, nb::arg("dtype") = none);
  m.def(
      "log_softmax",
      [](const Tensor& x, std::optional<int64_t> dim, int, std::optional<ug::DType> dtype) {
        return F::log_softmax(x, softmax_dim(x, dim), dtype);
      },
      nb::arg("input"), nb::arg("dim") = none, nb::arg("_stacklevel") = 3, nb::arg("dtype") = none);
  m.def(
      "softmin",
      [](const Tensor& x, std::optional<int64_t> dim, int, std::optional<ug::DType> dtype) {
        return F::softmin(x, softmax_dim(x, dim), dtype);
      },
      nb::arg("input"), nb::arg("dim") = none, nb::arg("_stacklevel") = 3, nb::arg("dtype") = none);
  m.def(
      "normalize", [](const Tensor& x, double p, int64_t dim, double eps) { return F::normalize(x, p, dim, eps); },
      nb::arg("input"), nb::arg("p") = 2.0, nb::arg("dim") = 1, nb::arg("eps") = 1e-12);
  m.def("cosine_similarity", &F::cosine_similarity, nb::arg("x1"), nb::arg("x2"), nb::arg("dim") = 1,
        nb::arg("eps") = 1e-8);
  m.def("pairwise_distance", &F::pairwise_distance, nb::arg("x1"), nb::arg("x2"), nb::arg("p") = 2.0,
        nb::arg("eps") = 1e-6, nb::arg("keepdim") = false);

  m.def("pdist", &F::pdist, nb::arg("input"), nb::arg("p") = 2.0);
  m.def(
      "bilinear",
      [](const Tensor& x1, const Tensor& x2, const Tensor& w, const OptTensor& b) {
        return F::bilinear(x1, x2, w, or_undefined(b));
      },
      nb::arg("input1"), nb::arg("input2"), nb::arg("weight"), nb::arg("bias") = nb::none());
  m.def("rrelu", &F::rrelu, nb::arg("input"), nb::arg("lower") = 1.0 / 8, nb::arg("upper") = 1.0 / 3,
        nb::arg("training") = false, nb::arg("inplace") = false);
  m.def(
      "rrelu_",
      [](const Tensor& x, double lower, double upper, bool training) {
        return F::rrelu(x, lower, upper, training, true);
      },
      nb::arg("input"), nb::arg("lower") = 1.0 / 8, nb::arg("upper") = 1.0 / 3, nb::arg("training") = false);
  // eps is torch's deprecated, unused argument: given, it warns as torch's does.
  m.def(
      "gumbel_softmax",
      [](const Tensor& logits, double tau, bool hard, double eps, int64_t dim) {
        if (eps != 1e-10 && PyErr_WarnEx(PyExc_UserWarning, "`eps` parameter is deprecated and has no effect.", 1) != 0)
          throw nb::python_error();
        return F::gumbel_softmax(logits, tau, hard, dim);
      },
      nb::arg("logits"), nb::arg("tau") = 1.0, nb::arg("hard") = false, nb::arg("eps") = 1e-10, nb::arg("dim") = -1);

  // ---- losses ----
  using OptBool = std::optional<bool>;
  m.def(
      "multilabel_margin_loss",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction) {
        return F::multilabel_margin_loss(x, t, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean");
  m.def(
      "triplet_margin_with_distance_loss",
      [](const Tensor& a, const Tensor& p, const Tensor& n,
         std::optional<std::function<Tensor(const Tensor&, const Tensor&)>> distance, double margin, bool swap,
         const std::string& reduction) {
        return F::triplet_margin_with_distance_loss(a, p, n, distance.value_or(nullptr), margin, swap, reduction);
      },
      nb::arg("anchor"), nb::arg("positive"), nb::arg("negative"), nb::kw_only(), nb::arg("distance_function") = none,
      nb::arg("margin") = 1.0, nb::arg("swap") = false, nb::arg("reduction") = "mean");
  m.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, const OptTensor& w, OptBool size_average, int64_t ignore_index,
         OptBool reduce, const std::string& reduction, double label_smoothing) {
        return F::cross_entropy(x, t,
                                {.weight = or_undefined(w),
                                 .ignore_index = ignore_index,
                                 .reduction = reduction_of(size_average, reduce, reduction),
                                 .label_smoothing = label_smoothing});
      },
      nb::arg("input"), nb::arg("target"), nb::arg("weight") = none, nb::arg("size_average") = none,
      nb::arg("ignore_index") = -100, nb::arg("reduce") = none, nb::arg("reduction") = "mean",
      nb::arg("label_smoothing") = 0.0);
  m.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, const OptTensor& w, OptBool size_average, int64_t ignore_index,
         OptBool reduce, const std::string& reduction) {
        return F::nll_loss(x, t,
                           {.weight = or_undefined(w),
                            .ignore_index = ignore_index,
                            .reduction = reduction_of(size_average, reduce, reduction)});
      },
      nb::arg("input"), nb::arg("target"), nb::arg("weight") = none, nb::arg("size_average") = none,
      nb::arg("ignore_index") = -100, nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction,
         const OptTensor& w) {
        return F::mse_loss(x, t, reduction_of(size_average, reduce, reduction), or_undefined(w));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean", nb::arg("weight") = none);
  m.def(
      "l1_loss",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction,
         const OptTensor& w) {
        return F::l1_loss(x, t, reduction_of(size_average, reduce, reduction), or_undefined(w));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean", nb::arg("weight") = none);
  m.def(
      "smooth_l1_loss",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction,
         double beta) { return F::smooth_l1_loss(x, t, reduction_of(size_average, reduce, reduction), beta); },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean", nb::arg("beta") = 1.0);
  m.def(
      "huber_loss",
      [](const Tensor& x, const Tensor& t, const std::string& reduction, double delta, const OptTensor& w) {
        return F::huber_loss(x, t, reduction, delta, or_undefined(w));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean", nb::arg("delta") = 1.0,
      nb::arg("weight") = none);
  m.def(
      "binary_cross_entropy",
      [](const Tensor& x, const Tensor& t, const OptTensor& w, OptBool size_average, OptBool reduce,
         const std::string& reduction) {
        return F::binary_cross_entropy(x, t, or_undefined(w), reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("weight") = none, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& x, const Tensor& t, const OptTensor& w, OptBool size_average, OptBool reduce,
         const std::string& reduction, const OptTensor& pos_weight) {
        return F::binary_cross_entropy_with_logits(x, t,
                                                   {.weight = or_undefined(w),
                                                    .reduction = reduction_of(size_average, reduce, reduction),
                                                    .pos_weight = or_undefined(pos_weight)});
      },
      nb::arg("input"), nb::arg("target"), nb::arg("weight") = none, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean", nb::arg("pos_weight") = none);
  m.def(
      "kl_div",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction,
         bool log_target) { return F::kl_div(x, t, reduction_of(size_average, reduce, reduction), log_target); },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean", nb::arg("log_target") = false);
  m.def(
      "poisson_nll_loss",
      [](const Tensor& x, const Tensor& t, bool log_input, bool full, OptBool size_average, double eps, OptBool reduce,
         const std::string& reduction) {
        return F::poisson_nll_loss(x, t, log_input, full, eps, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("log_input") = true, nb::arg("full") = false,
      nb::arg("size_average") = none, nb::arg("eps") = 1e-8, nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "gaussian_nll_loss",
      [](const Tensor& x, const Tensor& t, nb::handle var, bool full, double eps, const std::string& reduction) {
        const Tensor v = nb::isinstance<Tensor>(var) ? nb::cast<Tensor>(var) : ug::full_like(x, nb::cast<double>(var));
        return F::gaussian_nll_loss(x, t, v, full, eps, reduction);
      },
      nb::arg("input"), nb::arg("target"), nb::arg("var"), nb::arg("full") = false, nb::arg("eps") = 1e-6,
      nb::arg("reduction") = "mean");
  m.def(
      "cosine_embedding_loss",
      [](const Tensor& x1, const Tensor& x2, const Tensor& t, double margin, OptBool size_average, OptBool reduce,
         const std::string& reduction) {
        return F::cosine_embedding_loss(x1, x2, t, margin, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input1"), nb::arg("input2"), nb::arg("target"), nb::arg("margin") = 0.0, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "margin_ranking_loss",
      [](const Tensor& x1, const Tensor& x2, const Tensor& t, double margin, OptBool size_average, OptBool reduce,
         const std::string& reduction) {
        return F::margin_ranking_loss(x1, x2, t, margin, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input1"), nb::arg("input2"), nb::arg("target"), nb::arg("margin") = 0.0, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "ctc_loss",
      [](const Tensor& lp, const Tensor& targets, nb::handle input_lengths, nb::handle target_lengths, int64_t blank,
         const std::string& reduction, bool zero_infinity) {
        return F::ctc_loss(lp, targets, lengths(input_lengths), lengths(target_lengths), blank, reduction,
                           zero_infinity);
      },
      nb::arg("log_probs"), nb::arg("targets"), nb::arg("input_lengths"), nb::arg("target_lengths"),
      nb::arg("blank") = 0, nb::arg("reduction") = "mean", nb::arg("zero_infinity") = false);
  // The layer is bound here, beside the function, for the lengths' conversion they share.
  nb::class_<ug::nn::CTCLossImpl, ug::nn::LossImpl>(
      nn, "CTCLoss", "The connectionist temporal classification loss (torch.nn.CTCLoss).")
      .def(nb::init<int64_t, std::string, bool>(), nb::arg("blank") = 0, nb::arg("reduction") = "mean",
           nb::arg("zero_infinity") = false)
      .def(
          "forward",
          [](ug::nn::CTCLossImpl& loss, const Tensor& lp, const Tensor& targets, nb::handle input_lengths,
             nb::handle target_lengths) {
            return loss.forward(lp, targets, lengths(input_lengths), lengths(target_lengths));
          },
          nb::arg("log_probs"), nb::arg("targets"), nb::arg("input_lengths"), nb::arg("target_lengths"));
  m.def(
      "hinge_embedding_loss",
      [](const Tensor& x, const Tensor& t, double margin, OptBool size_average, OptBool reduce,
         const std::string& reduction) {
        return F::hinge_embedding_loss(x, t, margin, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("margin") = 1.0, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "soft_margin_loss",
      [](const Tensor& x, const Tensor& t, OptBool size_average, OptBool reduce, const std::string& reduction) {
        return F::soft_margin_loss(x, t, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean");
  m.def(
      "multilabel_soft_margin_loss",
      [](const Tensor& x, const Tensor& t, const OptTensor& w, OptBool size_average, OptBool reduce,
         const std::string& reduction) {
        return F::multilabel_soft_margin_loss(x, t, or_undefined(w), reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("weight") = none, nb::arg("size_average") = none,
      nb::arg("reduce") = none, nb::arg("reduction") = "mean");
  m.def(
      "triplet_margin_loss",
      [](const Tensor& a, const Tensor& pos, const Tensor& neg, double margin, double p, double eps, bool swap,
         OptBool size_average, OptBool reduce, const std::string& reduction) {
        return F::triplet_margin_loss(a, pos, neg, margin, p, eps, swap, reduction_of(size_average, reduce, reduction));
      },
      nb::arg("anchor"), nb::arg("positive"), nb::arg("negative"), nb::arg("margin") = 1.0, nb::arg("p") = 2.0,
      nb::arg("eps") = 1e-6, nb::arg("swap") = false, nb::arg("size_average") = none, nb::arg("reduce") = none,
      nb::arg("reduction") = "mean");
  m.def(
      "multi_margin_loss",
      [](const Tensor& x, const Tensor& t, int64_t p, double margin, const OptTensor& w, OptBool size_average,
         OptBool reduce, const std::string& reduction) {
        return F::multi_margin_loss(x, t, p, margin, or_undefined(w), reduction_of(size_average, reduce, reduction));
      },
      nb::arg("input"), nb::arg("target"), nb::arg("p") = 1, nb::arg("margin") = 1.0, nb::arg("weight") = none,
      nb::arg("size_average") = none, nb::arg("reduce") = none, nb::arg("reduction") = "mean");

  // ---- normalization ----
  m.def(
      "layer_norm",
      [](const Tensor& x, nb::handle shape, const OptTensor& w, const OptTensor& b, double eps) {
        return F::layer_norm(x, dims_from_sequence(shape, "layer_norm"), or_undefined(w), or_undefined(b), eps);
      },
      nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = none, nb::arg("bias") = none,
      nb::arg("eps") = 1e-5);
  m.def(
      "rms_norm",
      [](const Tensor& x, nb::handle shape, const OptTensor& w, std::optional<double> eps) {
        return F::rms_norm(x, dims_from_sequence(shape, "rms_norm"), or_undefined(w), eps);
      },
      nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = none, nb::arg("eps") = none);
  m.def(
      "batch_norm",
      [](const Tensor& x, const OptTensor& rm, const OptTensor& rv, const OptTensor& w, const OptTensor& b,
         bool training, double momentum, double eps) {
        return F::batch_norm(x, or_undefined(rm), or_undefined(rv), or_undefined(w), or_undefined(b), training,
                             momentum, eps);
      },
      nb::arg("input"), nb::arg("running_mean").none(), nb::arg("running_var").none(), nb::arg("weight") = none,
      nb::arg("bias") = none, nb::arg("training") = false, nb::arg("momentum") = 0.1, nb::arg("eps") = 1e-5);
  m.def(
      "group_norm",
      [](const Tensor& x, int64_t groups, const OptTensor& w, const OptTensor& b, double eps) {
        return F::group_norm(x, groups, or_undefined(w), or_undefined(b), eps);
      },
      nb::arg("input"), nb::arg("num_groups"), nb::arg("weight") = none, nb::arg("bias") = none, nb::arg("eps") = 1e-5);
  m.def(
      "instance_norm",
      [](const Tensor& x, const OptTensor& rm, const OptTensor& rv, const OptTensor& w, const OptTensor& b,
         bool use_input_stats, double momentum, double eps) {
        return F::instance_norm(x, or_undefined(rm), or_undefined(rv), or_undefined(w), or_undefined(b),
                                use_input_stats, momentum, eps);
      },
      nb::arg("input"), nb::arg("running_mean") = none, nb::arg("running_var") = none, nb::arg("weight") = none,
      nb::arg("bias") = none, nb::arg("use_input_stats") = true, nb::arg("momentum") = 0.1, nb::arg("eps") = 1e-5);

  // ---- dropout ----
  m.def("dropout", &F::dropout, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("inplace") = false);
  m.def("dropout1d", &F::dropout1d, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("inplace") = false);
  m.def("dropout2d", &F::dropout2d, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("inplace") = false);
  m.def("dropout3d", &F::dropout3d, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("inplace") = false);
  m.def("alpha_dropout", &F::alpha_dropout, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = false,
        nb::arg("inplace") = false);
  m.def("feature_alpha_dropout", &F::feature_alpha_dropout, nb::arg("input"), nb::arg("p") = 0.5,
        nb::arg("training") = false, nb::arg("inplace") = false);

  // ---- embedding ----
  m.def(
      "embedding",
      [](const Tensor& idx, const Tensor& w, std::optional<int64_t> padding_idx, std::optional<double> max_norm,
         double norm_type, bool scale_grad_by_freq, bool sparse) {
        if (sparse) throw ug::ValueError("[embedding] sparse gradients are not supported; use sparse=False");
        return F::embedding(idx, w, padding_idx, max_norm, norm_type, scale_grad_by_freq);
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("padding_idx") = none, nb::arg("max_norm") = none,
      nb::arg("norm_type") = 2.0, nb::arg("scale_grad_by_freq") = false, nb::arg("sparse") = false);
  m.def(
      "embedding_bag",
      [](const Tensor& input, const Tensor& w, const OptTensor& offsets, std::optional<double> max_norm,
         double norm_type, bool scale_grad_by_freq, const std::string& mode, bool sparse, const OptTensor& psw,
         bool include_last_offset, std::optional<int64_t> padding_idx) {
        if (sparse) throw ug::ValueError("[embedding_bag] sparse gradients are not supported; use sparse=False");
        return F::embedding_bag(input, w, offsets, max_norm, norm_type, scale_grad_by_freq, mode, psw,
                                include_last_offset, padding_idx);
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("offsets") = none, nb::arg("max_norm") = none,
      nb::arg("norm_type") = 2.0, nb::arg("scale_grad_by_freq") = false, nb::arg("mode") = "mean",
      nb::arg("sparse") = false, nb::arg("per_sample_weights") = none, nb::arg("include_last_offset") = false,
      nb::arg("padding_idx") = none);
  m.def("one_hot", &F::one_hot, nb::arg("tensor"), nb::arg("num_classes") = -1);

  // ---- attention ----
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const OptTensor& mask, double dropout_p, bool is_causal,
         std::optional<double> scale, bool enable_gqa) {
        return F::scaled_dot_product_attention(q, k, v, or_undefined(mask), dropout_p, is_causal, scale, enable_gqa);
      },
      nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("attn_mask") = none, nb::arg("dropout_p") = 0.0,
      nb::arg("is_causal") = false, nb::arg("scale") = none, nb::arg("enable_gqa") = false);
}

}  // namespace ugpy
