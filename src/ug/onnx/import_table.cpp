// The ONNX op table: each supported op type of the default domain, with its input and output
// counts, the opset it appeared in, its required attributes, and its implementation with ug ops
// (so autograd records through an imported graph). Integer tensors (shapes, axes, indices) flow
// as int64 ug tensors; ops that take them as arguments read their values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "ug/nn/functional.h"
#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/conv.h"
#include "ug/ops/conv3d.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/nn.h"
#include "ug/ops/pool.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::onnx {

namespace F = ug::nn::functional;

// ---- OpContext ------------------------------------------------------------------------

const Tensor& OpContext::input(size_t i) const {
  if (!has_input(i)) fail("input ", i, " is required but absent");
  return inputs_[i];
}

std::optional<std::vector<int64_t>> OpContext::ints_input(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  const Tensor& t = inputs_[i];
  if (!is_integral(t.dtype())) fail<TypeError>("input ", i, " must be an integer tensor, got ", t.dtype());
  if (t.dim() > 1) fail("input ", i, " must be a scalar or 1-d, got shape ", t.shape());
  const Tensor v = t.detach().to(DType::Int64).contiguous();
  const int64_t* p = v.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + v.numel());
}

double OpContext::scalar_input(size_t i) const {
  const Tensor& t = input(i);
  if (t.numel() != 1) fail("input ", i, " must have one element, got shape ", t.shape());
  return t.detach().item<double>();
}

template <class T> const T* OpContext::attr_of(std::string_view name, std::string_view kind) const {
  auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  fail<TypeError>("attribute '", name, "' must be ", kind);
}

int64_t OpContext::attr_int(std::string_view name, int64_t fallback) const {
  const int64_t* v = attr_of<int64_t>(name, "an INT");
  return v ? *v : fallback;
}

int64_t OpContext::attr_int(std::string_view name) const {
  const int64_t* v = attr_of<int64_t>(name, "an INT");
  if (!v) fail("missing required attribute '", name, "'");
  return *v;
}

double OpContext::attr_float(std::string_view name, double fallback) const {
  const double* v = attr_of<double>(name, "a FLOAT");
  return v ? *v : fallback;
}

std::string OpContext::attr_string(std::string_view name, std::string_view fallback) const {
  const std::string* v = attr_of<std::string>(name, "a STRING");
  return v ? *v : std::string(fallback);
}

std::optional<std::vector<int64_t>> OpContext::attr_ints(std::string_view name) const {
  const auto* v = attr_of<std::vector<int64_t>>(name, "INTS");
  return v ? std::optional(*v) : std::nullopt;
}

std::optional<std::vector<double>> OpContext::attr_floats(std::string_view name) const {
  const auto* v = attr_of<std::vector<double>>(name, "FLOATS");
  return v ? std::optional(*v) : std::nullopt;
}

std::optional<std::vector<std::string>> OpContext::attr_strings(std::string_view name) const {
  const auto* v = attr_of<std::vector<std::string>>(name, "STRINGS");
  return v ? std::optional(*v) : std::nullopt;
}

std::optional<Tensor> OpContext::attr_tensor(std::string_view name) const {
  const Tensor* v = attr_of<Tensor>(name, "a TENSOR");
  return v ? std::optional(*v) : std::nullopt;
}

// ---- helpers (import_util.h) ------------------------------------------------------------------------------

int64_t norm_axis(const OpContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Dims to_dims(const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); }

/** A 1-d int64 tensor holding `values`. */
Tensor int_tensor(const std::vector<int64_t>& values) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, {.dtype = DType::Int64});
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

/** Refuses dims made from a file's values that are negative or absurd: their product, zeros
 *  taken as ones (a tensor's strides multiply them even when it is empty), is bounded. */
void check_new_shape(const OpContext& c, const Dims& dims) {
  int64_t span = 1;
  for (int64_t d : dims) {
    if (d < 0) c.fail("asks for a negative dim in shape ", dims);
    if (__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span) || span > c.max_elements())
      c.fail("asks for shape ", dims, ", over ", c.max_elements(), " elements (LoadLimits::max_elements)");
  }
}

/** Refuses an elementwise op whose inputs broadcast to more than max_elements elements (a
 *  hostile graph can otherwise grow [n, 1] + [1, n] squarely, node after node). Shapes that do
 *  not broadcast are left for the op to report. */
void check_broadcast(const OpContext& c) {
  Dims out;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    const Shape& s = c.input(i).shape();
    if (s.size() > out.size()) {
      Dims wider(s.size() - out.size(), 1);
      for (int64_t d : out) wider.push_back(d);
      out = wider;
    }
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[out.size() - s.size() + k];
      if (o == 1) o = s[k];
      else if (s[k] != 1 && s[k] != o) return;
    }
  }
  check_new_shape(c, out);
}

/** Axes from input i (newer opsets) or attribute "axes" (older ones), normalized. */
std::optional<std::vector<int64_t>> axes_of(const OpContext& c, size_t input, int64_t rank) {
  auto axes = c.has_input(input) ? c.ints_input(input) : c.attr_ints("axes");
  if (!axes) return std::nullopt;
  for (int64_t& a : *axes) a = norm_axis(c, a, rank);
  std::vector<int64_t> sorted = *axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) c.fail("repeats an axis");
  return axes;
}

/** Integer division rounding toward zero, as ONNX's Div does for integers. */
Tensor trunc_divide(const Tensor& a, const Tensor& b) {
  Tensor q = floor_divide(a, b);
  Tensor inexact = logical_and(ne(mul(q, b), a), ne(lt(a, 0), lt(b, 0)));
  return add(q, inexact.to(q.dtype()));
}

namespace {

// ---- elementwise --------------------------------------------------------------------------

Outputs div_op(const OpContext& c) {
  check_broadcast(c);
  const Tensor &a = c.input(0), &b = c.input(1);
  if (is_integral(a.dtype()) && is_integral(b.dtype())) return one(trunc_divide(a, b));
  return one(div(a, b));
}

Outputs pow_op(const OpContext& c) {
  check_broadcast(c);
  const Tensor& x = c.input(0);
  Tensor y = pow(x, c.input(1));
  return one(y.dtype() == x.dtype() ? y : y.to(x.dtype()));
}

Outputs mod_op(const OpContext& c) {
  check_broadcast(c);
  const Tensor &a = c.input(0), &b = c.input(1);
  const bool integers = is_integral(a.dtype()) && is_integral(b.dtype());
  if (!c.attr_int("fmod", 0)) return one(remainder(a, b));  // Python's %: the sign of the divisor
  // C's fmod: the result has the sign of the dividend (for floats exactly, as std::fmod).
  if (!integers) return one(fmod(a, b));
  return one(sub(a, mul(trunc_divide(a, b), b)));
}

template <Tensor (*Fold)(const Tensor&, const Tensor&)> Outputs variadic(const OpContext& c) {
  check_broadcast(c);
  Tensor acc = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = Fold(acc, c.input(i));
  return one(acc);
}

Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor max2(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor min2(const Tensor& a, const Tensor& b) { return minimum(a, b); }

Outputs mean_op(const OpContext& c) {
  return one(div(variadic<add2>(c).front(), static_cast<int64_t>(c.num_inputs())));
}

Outputs clip_op(const OpContext& c) {
  check_broadcast(c);
  std::optional<Tensor> lo, hi;
  if (c.has_input(1)) lo = c.input(1);
  if (c.has_input(2)) hi = c.input(2);
  if (!lo && !hi) return one(c.input(0));
  return one(c.input(0).clamp(lo, hi));
}

Outputs where_op(const OpContext& c) {
  check_broadcast(c);
  if (c.input(0).dtype() != DType::Bool) c.fail<TypeError>("the condition must be bool, got ", c.input(0).dtype());
  return one(where(c.input(0), c.input(1), c.input(2)));
}

Outputs is_inf_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const bool neg = c.attr_int("detect_negative", 1), pos = c.attr_int("detect_positive", 1);
  Tensor inf = isinf(x);
  if (neg && pos) return one(inf);
  if (!neg && !pos) return one(zeros_like(inf));
  return one(logical_and(inf, pos ? gt(x, 0) : lt(x, 0)));
}

Outputs hard_sigmoid_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  return one(add(mul(x, c.attr_float("alpha", 0.2)), c.attr_float("beta", 0.5)).clamp(Scalar(0), Scalar(1)));
}

Outputs hard_swish_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  return one(mul(x, add(div(x, 6.0), 0.5).clamp(Scalar(0), Scalar(1))));
}

Outputs selu_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625);
  return one(mul(F::elu(x, alpha), c.attr_float("gamma", 1.05070102214813232421875)));
}

Outputs celu_op(const OpContext& c) {
  const double alpha = c.attr_float("alpha", 1.0);
  if (alpha == 0) c.fail("alpha is 0");
  return one(mul(F::elu(div(c.input(0), alpha), 1.0), alpha));
}

/** 1 at the first maximum along the axis, 0 elsewhere. */
Outputs hardmax_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  Dims along(static_cast<size_t>(x.dim()), 1);
  along[static_cast<size_t>(axis)] = x.size(axis);
  const Tensor positions = arange(x.size(axis), {.dtype = DType::Int64}).reshape(along);
  return one(eq(positions, x.argmax(axis, true)).to(x.dtype()));
}

Outputs lp_normalization_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim()), p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail("p must be 1 or 2, got ", p);
  const Tensor norm = p == 1 ? x.abs().sum({axis}, true) : sqrt(mul(x, x).sum({axis}, true));
  return one(where(eq(norm, 0), 0, div(x, norm)));  // a zero vector stays zero, as onnxruntime does
}

Outputs einsum_op(const OpContext& c) {
  std::string equation = c.attr_string("equation", "");
  std::erase(equation, ' ');
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_inputs(); ++i) operands.push_back(c.input(i));
  return one(einsum(equation, operands));
}

Outputs eye_like_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 2) c.fail("the input must be 2-D, got ", x.shape());
  const DType dtype =
      c.has_attr("dtype") ? dtype_from_onnx(c.attr_int("dtype"), "EyeLike node '" + c.node().name + "'") : x.dtype();
  const Tensor rows = arange(x.size(0), {.dtype = DType::Int64}).reshape({x.size(0), 1});
  const Tensor cols = arange(x.size(1), {.dtype = DType::Int64}).reshape({1, x.size(1)});
  return one(eq(add(rows, c.attr_int("k", 0)), cols).to(dtype));  // ones on the k-th diagonal
}

Outputs prelu_op(const OpContext& c) {
  check_broadcast(c);
  const Tensor& x = c.input(0);
  return one(where(lt(x, 0), mul(x, c.input(1)), x));
}

Outputs gelu_op(const OpContext& c) {
  const std::string approximate = c.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    c.fail("approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  return one(F::gelu(c.input(0), approximate));
}

Outputs softmax_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  return one(softmax(x, norm_axis(c, c.attr_int("axis", -1), x.dim())));
}

Outputs log_softmax_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  return one(log_softmax(x, norm_axis(c, c.attr_int("axis", -1), x.dim())));
}

Outputs cast_op(const OpContext& c) {
  return one(c.input(0).to(dtype_from_onnx(c.attr_int("to"), c.node().op_type + " node '" + c.node().name + "'")));
}

// ---- matrix products ---------------------------------------------------------------------

Outputs matmul_op(const OpContext& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  if (a.dim() >= 2 && b.dim() >= 2) {  // the batch dims broadcast: bound the result first
    Dims out;
    const int64_t rank = std::max(a.dim(), b.dim());
    for (int64_t d = 0; d < rank - 2; ++d) {
      const int64_t da = d - (rank - a.dim()) >= 0 ? a.size(d - (rank - a.dim())) : 1;
      const int64_t db = d - (rank - b.dim()) >= 0 ? b.size(d - (rank - b.dim())) : 1;
      out.push_back(da == 1 ? db : da);
    }
    out.push_back(a.size(-2));
    out.push_back(b.size(-1));
    check_new_shape(c, out);
  }
  return one(matmul(a, b));
}

Outputs gemm_op(const OpContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  if (a.dim() != 2 || b.dim() != 2) c.fail("A and B must be 2-d, got ", a.shape(), " and ", b.shape());
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool trans_a = c.attr_int("transA", 0), trans_b = c.attr_int("transB", 0);
  check_new_shape(c, {a.size(trans_a ? 1 : 0), b.size(trans_b ? 0 : 1)});
  const Tensor bias = c.has_input(2) ? c.input(2) : Tensor();
  // torch's Linear exports as Gemm(x, W, b, transB=1): one fused linear, as torch runs it.
  if (!trans_a && trans_b && alpha == 1.0 && beta == 1.0 && (!bias.defined() || bias.dim() == 1))
    return one(F::linear(a, b, bias));
  Tensor y = matmul(trans_a ? a.t() : a, trans_b ? b.t() : b);
  if (alpha != 1.0) y = mul(y, alpha);
  if (bias.defined()) y = add(y, beta == 1.0 ? bias : mul(bias, beta));
  return one(y);
}

// ---- convolution and pooling ----------------------------------------------------------------

}  // namespace

Dims spatial_attr(const OpContext& c, std::string_view name, size_t rank, int64_t fallback, int64_t min) {
  auto v = c.attr_ints(name);
  if (!v) return Dims(rank, fallback);
  if (v->size() != rank) c.fail("attribute '", name, "' has ", v->size(), " values for ", rank, " spatial dims");
  for (int64_t x : *v)
    if (x < min || x > c.max_elements())
      c.fail("attribute '", name, "' has value ", x, " (must be in [", min, ", ", c.max_elements(), "])");
  return to_dims(*v);
}

/** The window attributes of a node over input x; `channels` is the result's channel count, for
 *  bounding its size. */
Window window_of(const OpContext& c, const Tensor& x, const Dims& kernel_from_weight, int64_t channels) {
  if (x.dim() < 3) c.fail("the input must be [N, C, spatial...], got shape ", x.shape());
  const size_t rank = static_cast<size_t>(x.dim() - 2);
  Window w;
  if (!kernel_from_weight.empty()) w.kernel = kernel_from_weight;
  auto ks = c.attr_ints("kernel_shape");
  if (ks) w.kernel = spatial_attr(c, "kernel_shape", rank, 1, 1);
  if (w.kernel.size() != rank) c.fail("needs kernel_shape with ", rank, " values");
  w.strides = spatial_attr(c, "strides", rank, 1, 1);
  w.dilations = spatial_attr(c, "dilations", rank, 1, 1);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  w.begin = w.end = Dims(rank, 0);
  if (auto_pad == "NOTSET") {
    if (auto pads = c.attr_ints("pads")) {
      if (pads->size() != 2 * rank)
        c.fail("attribute 'pads' has ", pads->size(), " values for ", rank, " spatial dims");
      for (size_t d = 0; d < rank; ++d) {
        w.begin[d] = (*pads)[d];
        w.end[d] = (*pads)[d + rank];
        if (w.begin[d] < 0 || w.end[d] < 0) c.fail("negative pads are not supported");
        if (w.begin[d] > c.max_elements() || w.end[d] > c.max_elements())
          c.fail("pads ", to_dims(*pads), " are absurd");
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.size(static_cast<int64_t>(d) + 2), s = w.strides[d];
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + (w.kernel[d] - 1) * w.dilations[d] + 1 - in);
      w.begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[d] = total - w.begin[d];
    }
  } else if (auto_pad != "VALID") {
    c.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"", auto_pad, "\"");
  }
  Dims bound{x.size(0), channels};
  for (size_t d = 0; d < rank; ++d) bound.push_back(x.size(static_cast<int64_t>(d) + 2) + w.begin[d] + w.end[d] + 1);
  check_new_shape(c, bound);
  return w;
}

/** x padded by the window's (begin, end) over the spatial dims, in ug::pad's order. */
Tensor pad_spatial(const Tensor& x, const Window& w, Scalar value) {
  Dims pads;
  for (size_t d = w.begin.size(); d-- > 0;) {
    pads.push_back(w.begin[d]);
    pads.push_back(w.end[d]);
  }
  return pad(x, pads, "constant", value);
}

namespace {

Outputs conv_op(const OpContext& c) {
  Tensor x = c.input(0);
  const Tensor& weight = c.input(1);
  if (x.dim() < 3 || weight.dim() != x.dim())
    c.fail("needs input [N, C, spatial...] and a weight of its rank, got ", x.shape(), " and ", weight.shape());
  Window w = window_of(c, x, Dims(weight.shape().begin() + 2, weight.shape().end()), weight.size(0));
  const std::optional<Tensor> bias = c.has_input(2) ? std::optional(c.input(2)) : std::nullopt;
  const int64_t group = c.attr_int("group", 1);
  if (group < 1) c.fail("group must be positive, got ", group);
  Dims padding = w.begin;
  if (!w.symmetric()) {
    x = pad_spatial(x, w, 0);
    padding = Dims(w.begin.size(), 0);
  }
  if (x.dim() == 3) return one(conv1d(x, weight, bias, w.strides, padding, w.dilations, group));
  if (x.dim() == 4) return one(conv2d(x, weight, bias, w.strides, padding, w.dilations, group));
  if (x.dim() == 5) return one(conv3d(x, weight, bias, w.strides, padding, w.dilations, group));
  c.fail("only 1-d, 2-d and 3-d convolutions are supported, got input shape ", x.shape());
}

/** A 3-d transposed convolution without padding or bias, from 2-d ones: input plane i with
 *  kernel plane k lands on output plane i * stride + k * dilation. */
Tensor conv_transpose3d_by_planes(const Tensor& x, const Tensor& weight, const Window& w, const Dims& output_padding,
                                  int64_t group) {
  const int64_t depth = x.size(2), taps = weight.size(2), s = w.strides[0], dil = w.dilations[0];
  const Dims stride{w.strides[1], w.strides[2]}, dilation{w.dilations[1], w.dilations[2]};
  const Dims extra{output_padding[1], output_padding[2]};
  std::vector<Tensor> planes(static_cast<size_t>(s * (depth - 1) + (taps - 1) * dil + 1 + output_padding[0]));
  for (int64_t i = 0; i < depth; ++i)
    for (int64_t k = 0; k < taps; ++k) {
      Tensor& plane = planes[static_cast<size_t>(i * s + k * dil)];
      const Tensor part =
          conv_transpose2d(x.select(2, i), weight.select(2, k), std::nullopt, stride, {0, 0}, extra, group, dilation);
      plane = plane.defined() ? add(plane, part) : part;
    }
  Dims plane_shape{x.size(0), weight.size(1) * group};
  for (size_t d = 1; d < 3; ++d)
    plane_shape.push_back(w.strides[d] * (x.size(static_cast<int64_t>(d) + 2) - 1) +
                          (weight.size(static_cast<int64_t>(d) + 2) - 1) * w.dilations[d] + 1 + output_padding[d]);
  for (Tensor& plane : planes)
    if (!plane.defined()) plane = zeros(plane_shape, {.dtype = x.dtype()});
  return stack(planes, 2);
}

Outputs conv_transpose_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& weight = c.input(1);
  if (weight.dim() != x.dim())
    c.fail("the weight must have the input's rank, got ", weight.shape(), " for ", x.shape());
  if (x.dim() < 3 || x.dim() > 5)
    c.fail("only 1-d, 2-d and 3-d transposed convolutions are supported, got ", x.shape());
  const size_t rank = static_cast<size_t>(x.dim() - 2);
  const Dims kernel(weight.shape().begin() + 2, weight.shape().end());
  Window w = window_of(c, x, kernel, 1);
  const Dims output_padding = spatial_attr(c, "output_padding", rank, 0, 0);
  const int64_t group = c.attr_int("group", 1);
  if (group < 1) c.fail("group must be positive, got ", group);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  auto output_shape = c.attr_ints("output_shape");
  if (output_shape && output_shape->size() == rank + 2)
    output_shape->erase(output_shape->begin(), output_shape->begin() + 2);
  if (output_shape && output_shape->size() != rank)
    c.fail("output_shape has ", output_shape->size(), " values for ", rank, " spatial dims");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.size(static_cast<int64_t>(d) + 2);
      const int64_t out = output_shape ? (*output_shape)[d] : in * w.strides[d];
      const int64_t total = w.strides[d] * (in - 1) + output_padding[d] + (kernel[d] - 1) * w.dilations[d] + 1 - out;
      if (out < 0 || out > c.max_elements()) c.fail("output_shape ", to_dims(*output_shape), " is absurd");
      // Halved rounding down, as onnx's reference: a larger output_shape grows at the end.
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      w.begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.end[d] = total - w.begin[d];
    }
  }
  Dims full{x.size(0), weight.size(1) * group};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(d) + 2);
    int64_t span = 0, reach = 0;
    if (__builtin_mul_overflow(std::max<int64_t>(in - 1, 0), w.strides[d], &span) ||
        __builtin_mul_overflow(kernel[d] - 1, w.dilations[d], &reach) || span > c.max_elements() ||
        reach > c.max_elements() || output_padding[d] > c.max_elements())
      c.fail("strides and dilations ", w.strides, " and ", w.dilations, " are absurd");
    full.push_back(span + reach + 1 + output_padding[d]);
  }
  check_new_shape(c, full);
  std::optional<Tensor> bias = c.has_input(2) ? std::optional(c.input(2)) : std::nullopt;
  const bool grows = std::any_of(w.begin.begin(), w.begin.end(), [](int64_t p) { return p < 0; }) ||
                     std::any_of(w.end.begin(), w.end.end(), [](int64_t p) { return p < 0; });
  // 3-d is composed of 2-d planes, uncropped; the grown cells get the bias too.
  const bool explicit_pads = !w.symmetric() || grows || rank == 3;
  const Dims padding = explicit_pads ? Dims(rank, 0) : w.begin;
  const std::optional<Tensor> fused_bias = grows || rank == 3 ? std::nullopt : bias;
  Tensor y = rank == 1 ? conv_transpose1d(x, weight, fused_bias, w.strides, padding, output_padding, group, w.dilations)
             : rank == 2
                 ? conv_transpose2d(x, weight, fused_bias, w.strides, padding, output_padding, group, w.dilations)
                 : conv_transpose3d_by_planes(x, weight, w, output_padding, group);
  if (explicit_pads) {  // crop what the pads remove, grow by the negative ones
    Window grow{.begin = Dims(rank, 0), .end = Dims(rank, 0)};
    for (size_t d = 0; d < rank; ++d) {
      const int64_t dim = static_cast<int64_t>(d) + 2, begin = std::max<int64_t>(w.begin[d], 0);
      const int64_t length = y.size(dim) - begin - std::max<int64_t>(w.end[d], 0);
      if (length < 0) c.fail("pads remove more than the output has");
      y = y.narrow(dim, begin, length);
      grow.begin[d] = std::max<int64_t>(-w.begin[d], 0);
      grow.end[d] = std::max<int64_t>(-w.end[d], 0);
    }
    if (grows) {
      Dims grown = y.shape();
      for (size_t d = 0; d < rank; ++d) grown[d + 2] += grow.begin[d] + grow.end[d];
      check_new_shape(c, grown);
      y = pad_spatial(y, grow, 0);
    }
  }
  if (bias && !fused_bias) {
    Dims channel(static_cast<size_t>(y.dim()), 1);
    channel[1] = -1;
    y = add(y, bias->reshape(channel));
  }
  return one(y);
}

/** Whether ug's pooling kernels take the window: 1-d or 2-d, symmetric pads of at most half the
 *  kernel (asymmetric ones are padded explicitly). */
bool pool_kernel_fits(const Tensor& x, const Window& w) {
  if (x.dim() != 3 && x.dim() != 4) return false;
  for (size_t d = 0; d < w.kernel.size(); ++d)
    if (w.symmetric() && w.begin[d] > w.kernel[d] / 2) return false;
  return true;
}

Outputs max_pool_op(const OpContext& c) {
  Tensor x = c.input(0);
  Window w = window_of(c, x, {}, x.size(1));
  const bool ceil_mode = c.attr_int("ceil_mode", 0);
  const bool want_indices = c.wants_output(1);
  if (!pool_kernel_fits(x, w) || !is_floating(x.dtype())) {
    if (want_indices) c.fail("indices are supported for 1-d and 2-d floating-point pooling only, got ", x.shape());
    return one(pool_by_slices(c, x, w, ceil_mode, PoolKind::Max, false));
  }
  Dims padding = w.begin;
  if (!w.symmetric()) {
    if (want_indices) c.fail("indices with asymmetric pads are not supported");
    x = pad_spatial(x, w, -std::numeric_limits<double>::infinity());
    padding = Dims(w.begin.size(), 0);
  }
  if (!want_indices)  // the values alone skip the positions' bookkeeping
    return one(x.dim() == 3 ? max_pool1d(x, w.kernel, w.strides, padding, w.dilations, ceil_mode)
                            : max_pool2d(x, w.kernel, w.strides, padding, w.dilations, ceil_mode));
  auto [y, idx] = x.dim() == 3 ? max_pool1d_with_indices(x, w.kernel, w.strides, padding, w.dilations, ceil_mode)
                               : max_pool2d_with_indices(x, w.kernel, w.strides, padding, w.dilations, ceil_mode);
  if (c.attr_int("storage_order", 0) && x.dim() == 4) {  // column-major: w * H + h within the plane
    const int64_t height = x.size(2), width = x.size(3);
    idx = add(mul(remainder(idx, width), height), floor_divide(idx, width));
  }
  // ug's indices count within each [H, W] plane; ONNX's within the whole tensor.
  const int64_t plane = x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1));
  Dims offset_shape{x.size(0), x.size(1)};
  while (offset_shape.size() < static_cast<size_t>(x.dim())) offset_shape.push_back(1);
  Tensor offsets = mul(arange(x.size(0) * x.size(1), {.dtype = DType::Int64}).reshape(offset_shape), plane);
  return {y, add(idx, offsets)};
}

Outputs average_pool_op(const OpContext& c) {
  Tensor x = c.input(0);
  Window w = window_of(c, x, {}, x.size(1));
  const bool ceil_mode = c.attr_int("ceil_mode", 0);
  const bool count_pad = c.attr_int("count_include_pad", 0);
  const bool dilated = std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; });
  if (dilated || !pool_kernel_fits(x, w)) return one(pool_by_slices(c, x, w, ceil_mode, PoolKind::Average, count_pad));
  auto pool = [&](const Tensor& t, const Dims& padding, bool include_pad) {
    return t.dim() == 3 ? avg_pool1d(t, w.kernel, w.strides, padding, ceil_mode, include_pad)
                        : avg_pool2d(t, w.kernel, w.strides, padding, ceil_mode, include_pad);
  };
  if (w.symmetric()) return one(pool(x, w.begin, count_pad));
  const Dims none(w.begin.size(), 0);
  Tensor sums = pool(pad_spatial(x, w, 0), none, true);
  if (count_pad) return one(sums);
  // Without the pads in the count: divide by the share of each window that is input.
  Dims plane_shape{1, 1};
  for (int64_t d = 2; d < x.dim(); ++d) plane_shape.push_back(x.size(d));
  Tensor share = pool(pad_spatial(ones(plane_shape, {.dtype = x.dtype()}), w, 0), none, true);
  return one(div(sums, share));
}

Outputs global_average_pool_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  Dims dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return one(x.mean(dims, true));
}

Outputs global_max_pool_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  Dims dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return one(x.amax(dims, true));
}

// ---- normalization ----------------------------------------------------------------------

Outputs batch_norm_op(const OpContext& c) {
  const double eps = c.attr_float("epsilon", 1e-5);
  if (!c.attr_int("training_mode", 0)) {
    if (c.wants_output(1) || c.wants_output(2)) c.fail("running statistics outputs exist only in training mode");
    return one(F::batch_norm(c.input(0), c.input(3), c.input(4), c.input(1), c.input(2), false, 0.1, eps));
  }
  // Training: normalized by the batch's statistics (the population variance); the running ones
  // come out blended with them, running * momentum + batch * (1 - momentum).
  const Tensor& x = c.input(0);
  if (x.dim() < 2) c.fail("the input must be [N, C, ...], got ", x.shape());
  Dims dims{0}, channel(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  channel[1] = x.size(1);
  const Tensor mean = x.mean(dims), var = x.var(dims, 0);
  for (size_t i = 1; i < 5; ++i)
    if (c.input(i).shape() != Dims{x.size(1)})
      c.fail("input ", i, " ", c.input(i).shape(), " must be [C] = [", x.size(1), "]");
  const Tensor normalized = mul(sub(x, mean.reshape(channel)), rsqrt(add(var.reshape(channel), eps)));
  const Tensor y = add(mul(normalized, c.input(1).reshape(channel)), c.input(2).reshape(channel));
  const double momentum = c.attr_float("momentum", 0.9);
  return {y, add(mul(c.input(3), momentum), mul(mean, 1 - momentum)),
          add(mul(c.input(4), momentum), mul(var, 1 - momentum))};
}

/** Whether t broadcasts unidirectionally into the normalized shape (a normalization's scale, bias). */
bool broadcasts_into(const Tensor& t, const Dims& normalized) {
  if (t.dim() > static_cast<int64_t>(normalized.size())) return false;
  for (int64_t k = 1; k <= t.dim(); ++k)
    if (t.size(-k) != 1 && t.size(-k) != normalized[normalized.size() - static_cast<size_t>(k)]) return false;
  return true;
}

Outputs layer_norm_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const double eps = c.attr_float("epsilon", 1e-5);
  const Dims normalized(x.shape().begin() + axis, x.shape().end());
  const Tensor& scale = c.input(1);
  const Tensor bias = c.has_input(2) ? c.input(2) : Tensor();
  auto broadcasts = [&](const Tensor& t) { return broadcasts_into(t, normalized); };
  if (!broadcasts(scale) || (bias.defined() && !broadcasts(bias)))
    c.fail("scale ", scale.shape(), " and bias must broadcast to the normalized shape ", normalized);
  Outputs out;
  if (scale.shape() == normalized && (!bias.defined() || bias.shape() == normalized)) {
    out.push_back(F::layer_norm(x, normalized, scale, bias, eps));
  } else {  // scale or bias broadcast into the normalized shape
    Tensor y = mul(F::layer_norm(x, normalized, {}, {}, eps), scale);
    out.push_back(bias.defined() ? add(y, bias) : y);
  }
  if (c.wants_output(1) || c.wants_output(2)) {
    Dims dims;
    for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
    out.push_back(x.mean(dims, true));
    out.push_back(rsqrt(add(x.var(dims, 0, true), eps)));
  }
  return out;
}

Outputs rms_norm_op(const OpContext& c) {
  const Tensor &x = c.input(0), &scale = c.input(1);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const Dims normalized(x.shape().begin() + axis, x.shape().end());
  if (!broadcasts_into(scale, normalized))
    c.fail("scale ", scale.shape(), " must broadcast to the normalized shape ", normalized);
  if (scale.dtype() != x.dtype()) c.fail<TypeError>("scale is ", scale.dtype(), ", the input ", x.dtype());
  if (c.attr_int("stash_type", 1) != 1) c.fail("only stash_type=1 (statistics in float32) is supported");
  Dims dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  // As the op's function body: normalized in float32, cast back, then scaled.
  const Tensor xf = x.to(DType::Float32);
  const Tensor rms = rsqrt(add(mul(xf, xf).mean(dims, true), c.attr_float("epsilon", 1e-5)));
  return one(mul(mul(xf, rms).to(x.dtype()), scale));
}

/** (B, S, heads * D) -> (B, heads, S, D), for Attention's 3-D inputs. */
Tensor split_heads(const OpContext& c, const Tensor& t, int64_t heads, std::string_view name) {
  if (heads <= 0 || t.size(2) % heads != 0)
    c.fail(name, " ", t.shape(), ": its last dim must split into ", heads, " heads");
  return t.reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}

/** Attention (opsets 23 to 25) as its reference computes it: Q and K each scaled by sqrt(scale),
 *  softcap, then the mask, causal, sliding-window and padding biases, softmax (a row with every
 *  key masked gives 0), V. The qk output is, by qk_matmul_output_mode, the softcapped QK^T (0 and
 *  1), that plus the biases (2) or the probabilities (3), as the reference gives them. */
Outputs attention_op(const OpContext& c) {
  const int64_t mode = c.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) c.fail("qk_matmul_output_mode must be 0 to 3, got ", mode);
  const int64_t left = c.attr_int("left_window_size", -1), right = c.attr_int("right_window_size", -1);
  if (left < -1 || right < -1)
    c.fail("left_window_size (", left, ") and right_window_size (", right, ") must be -1 or more");
  const DType softmax_dtype = dtype_from_onnx(c.attr_int("softmax_precision", 1), "softmax_precision");
  if (!is_floating(softmax_dtype)) c.fail("softmax_precision must name a floating-point type, got ", softmax_dtype);
  Tensor q = c.input(0), k = c.input(1), v = c.input(2);
  const int64_t rank = q.dim();
  if (rank != k.dim() || rank != v.dim() || (rank != 3 && rank != 4))
    c.fail("Q ", q.shape(), ", K ", k.shape(), " and V ", v.shape(), " must all be 3-D or all 4-D");
  if (rank == 3) {
    if (!c.has_attr("q_num_heads") || !c.has_attr("kv_num_heads"))
      c.fail("3-D inputs need q_num_heads and kv_num_heads");
    q = split_heads(c, q, c.attr_int("q_num_heads"), "Q");
    k = split_heads(c, k, c.attr_int("kv_num_heads"), "K");
    v = split_heads(c, v, c.attr_int("kv_num_heads"), "V");
  }
  if (c.has_input(4) != c.has_input(5)) c.fail("past_key and past_value come together");
  const int64_t past = c.has_input(4) ? c.input(4).size(2) : 0;
  if (c.has_input(4)) {
    k = concat({c.input(4), k}, 2);
    v = concat({c.input(5), v}, 2);
  }
  const int64_t q_heads = q.size(1), kv_heads = k.size(1), sq = q.size(2), skv = k.size(2);
  if (q.size(0) != k.size(0) || k.size(0) != v.size(0) || v.size(1) != kv_heads || v.size(2) != skv ||
      q.size(3) != k.size(3) || kv_heads == 0 || q_heads % kv_heads != 0)
    c.fail("Q ", q.shape(), ", K ", k.shape(), " and V ", v.shape(), " (after the past) do not fit together");
  const DType dtype = q.dtype();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor bias = zeros({sq, skv}, {.dtype = dtype});
  if (c.has_input(3)) {
    Tensor mask = c.input(3);
    if (mask.dim() < 1 || mask.size(-1) > skv) c.fail("attn_mask ", mask.shape(), " is longer than the ", skv, " keys");
    const bool boolean = mask.dtype() == DType::Bool;
    if (mask.size(-1) < skv) {  // the keys past the mask are masked out
      Dims rest = mask.shape();
      rest.back() = skv - mask.size(-1);
      mask = concat({mask, full(rest, boolean ? Scalar(false) : Scalar(-inf), {.dtype = mask.dtype()})}, -1);
    }
    bias = add(bias, boolean ? where(mask, 0, full({}, -inf, {.dtype = dtype})) : mask.to(dtype));
  }
  // Query i sits at position i + the past's length; with an external cache (nonpad_kv_seqlen), at
  // i + the batch's valid keys - the queries, and the keys past the valid ones are masked.
  const Tensor i = arange(sq, {.dtype = DType::Int64}).reshape({sq, 1});
  const Tensor j = arange(skv, {.dtype = DType::Int64}).reshape({1, skv});
  Tensor at = add(i, past);
  const Tensor masked = full({}, -inf, {.dtype = dtype});
  auto per_batch = [&](const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(1) : t; };  // (B, q, kv) -> (B, 1, q, kv)
  if (c.has_input(6)) {
    if (c.has_input(4)) c.fail("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    const Tensor valid = c.input(6).to(DType::Int64);
    if (valid.dim() != 1 || valid.size(0) != q.size(0))
      c.fail("nonpad_kv_seqlen must have shape [", q.size(0), "], got ", valid.shape());
    at = add(i.unsqueeze(0), sub(valid, sq).reshape({-1, 1, 1}));
    bias = add(bias, where(lt(j, valid.reshape({-1, 1, 1})).unsqueeze(1), 0, masked));
  }
  if (c.attr_int("is_causal", 0)) bias = add(bias, per_batch(where(le(j, at), 0, masked)));
  if (left >= 0 || right >= 0) {  // key j within [position - left, position + right]
    Tensor allowed = full({}, true, {.dtype = DType::Bool});
    if (left >= 0) allowed = logical_and(allowed, ge(j, sub(at, left)));
    if (right >= 0) allowed = logical_and(allowed, le(j, add(at, right)));
    bias = add(bias, per_batch(where(allowed, 0, masked)));
  }
  const Tensor present_k = k, present_v = v;
  if (q_heads != kv_heads) {  // grouped-query: K/V head h serves query heads h * reps to h * reps + reps - 1
    auto repeat = [&](const Tensor& t) {
      return t.unsqueeze(2)
          .expand({t.size(0), kv_heads, q_heads / kv_heads, skv, t.size(3)})
          .reshape({t.size(0), q_heads, skv, t.size(3)});
    };
    k = repeat(k);
    v = repeat(v);
  }
  const double scale = std::sqrt(c.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(q.size(3)))));
  Tensor qk = matmul(mul(q, scale), mul(k, scale).transpose(2, 3));
  const double softcap = c.attr_float("softcap", 0);
  if (softcap > 0) qk = mul(tanh(div(qk, softcap)), softcap);
  const Tensor all_masked = eq(bias.amax({-1}, true), -inf);
  const Tensor probs = where(all_masked, 0, softmax(add(qk, bias).to(softmax_dtype), -1)).to(dtype);
  Tensor y = matmul(probs, v);
  if (rank == 3) y = y.transpose(1, 2).reshape({y.size(0), sq, -1});
  return {y, present_k, present_v, mode == 3 ? probs : mode == 2 ? add(qk, bias) : qk};
}

/** RotaryEmbedding (opset 23): the first rotary_embedding_dim features of each head rotated by
 *  the cached angles, as pairs of halves or, interleaved, of neighbours. */
Outputs rotary_embedding_op(const OpContext& c) {
  const Tensor& input = c.input(0);
  Tensor x = input;  // as (B, S, heads, D)
  if (x.dim() == 4) {
    x = x.transpose(1, 2);
  } else if (x.dim() == 3) {
    const int64_t heads = c.attr_int("num_heads", 0);
    if (heads <= 0 || x.size(2) % heads != 0) c.fail("input ", x.shape(), " needs num_heads dividing its last dim");
    x = x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads});
  } else {
    c.fail("the input must be 3-D or 4-D, got ", x.shape());
  }
  const int64_t d = x.size(3), rd = c.attr_int("rotary_embedding_dim", 0) ? c.attr_int("rotary_embedding_dim") : d;
  if (rd <= 0 || rd > d || rd % 2 != 0) c.fail("rotary_embedding_dim ", rd, " must be even and at most ", d);
  Tensor cos = c.input(1), sin = c.input(2);
  if (c.has_input(3)) {  // the caches are (positions, rd / 2): pick each token's row
    const Tensor pos = c.input(3).to(DType::Int64);
    if (pos.dim() != 2) c.fail("position_ids must be (B, S), got ", pos.shape());
    auto pick = [&](const Tensor& cache) {
      return cache.index_select(0, pos.reshape({-1})).reshape({pos.size(0), pos.size(1), cache.size(-1)});
    };
    cos = pick(cos);
    sin = pick(sin);
  }
  if (cos.dim() != 3 || cos.size(-1) != rd / 2 || sin.shape() != cos.shape())
    c.fail("the cos and sin caches ", cos.shape(), ", ", sin.shape(), " must be (B, S, ", rd / 2, ")");
  cos = cos.unsqueeze(2);
  sin = sin.unsqueeze(2);
  const Tensor rot = x.narrow(3, 0, rd);
  const bool interleaved = c.attr_int("interleaved", 0);
  const Tensor x1 = interleaved ? rot.slice(3, 0, std::nullopt, 2) : rot.narrow(3, 0, rd / 2);
  const Tensor x2 = interleaved ? rot.slice(3, 1, std::nullopt, 2) : rot.narrow(3, rd / 2, rd / 2);
  const Tensor real = sub(mul(cos, x1), mul(sin, x2)), imag = add(mul(sin, x1), mul(cos, x2));
  Tensor y =
      interleaved ? concat({real.unsqueeze(4), imag.unsqueeze(4)}, 4).reshape(rot.shape()) : concat({real, imag}, 3);
  if (rd < d) y = concat({y, x.narrow(3, rd, d - rd)}, 3);
  return one(input.dim() == 4 ? y.transpose(1, 2) : y.reshape(input.shape()));
}

/** NegativeLogLikelihoodLoss of log-probabilities x (N, C, d1...) at integer targets (N, d1...):
 *  -x[n, target, d...] times the target's weight, 0 at ignore_index, reduced as `reduction`
 *  says ("mean" divides by the sum of the weights applied). */
Tensor nll_loss(const OpContext& c, const Tensor& x, const Tensor& target, const Tensor& weight) {
  if (x.dim() < 2) c.fail("the input must be (N, C, d1, ...), got ", x.shape());
  if (!is_integral(target.dtype())) c.fail<TypeError>("the target must be integers, got ", target.dtype());
  Dims expected = x.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected)
    c.fail("the target ", target.shape(), " must be the input's shape ", x.shape(), " without its class dim");
  const int64_t classes = x.size(1);
  Tensor t = target.to(DType::Int64);
  const Tensor kept =
      c.has_attr("ignore_index") ? ne(t, c.attr_int("ignore_index")) : ones_like(t, {.dtype = DType::Bool});
  t = where(kept, t, 0);  // an ignored target may lie outside [0, C)
  if (t.numel() > 0 && (t.min().item<int64_t>() < 0 || t.max().item<int64_t>() >= classes))
    c.fail("target values must be in [0, ", classes, ") or ignore_index");
  Tensor w = kept.to(x.dtype());
  if (weight.defined()) {
    if (weight.shape() != Dims{classes}) c.fail("the weight ", weight.shape(), " must be (C) = (", classes, ")");
    w = mul(w, weight.index_select(0, t.reshape({-1})).reshape(t.shape()));
  }
  const Tensor loss = where(kept, neg(mul(x.gather(1, t.unsqueeze(1)).squeeze(Dims{1}), w)), 0);
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  if (reduction == "mean") return div(loss.sum(), w.sum());
  c.fail("reduction must be none, sum or mean, got '", reduction, "'");
}

Outputs nll_loss_op(const OpContext& c) {
  return one(nll_loss(c, c.input(0), c.input(1), c.has_input(2) ? c.input(2) : Tensor()));
}

Outputs softmax_cross_entropy_op(const OpContext& c) {
  const Tensor& scores = c.input(0);
  if (scores.dim() < 2) c.fail("the scores must be (N, C, d1, ...), got ", scores.shape());
  const Tensor weight = c.has_input(2) ? c.input(2) : Tensor();
  const std::string reduction = c.attr_string("reduction", "mean");
  const bool reduction_ok = reduction == "mean" || reduction == "sum" || reduction == "none";
  if (!c.wants_output(1) && reduction_ok && ops::cross_entropy_fuses(scores, c.input(1), weight)) {
    // [N, C] scores: the op eager cross_entropy runs, so that a program's loss is the eager one
    const int64_t ignore =
        c.has_attr("ignore_index") ? c.attr_int("ignore_index") : std::numeric_limits<int64_t>::min();
    const ops::Reduction r = reduction == "mean"  ? ops::Reduction::Mean
                             : reduction == "sum" ? ops::Reduction::Sum
                                                  : ops::Reduction::None;
    return one(ops::cross_entropy(scores, c.input(1), weight, ignore, r));
  }
  const Tensor log_prob = log_softmax(scores, 1);
  Outputs out = one(nll_loss(c, log_prob, c.input(1), c.has_input(2) ? c.input(2) : Tensor()));
  if (c.wants_output(1)) out.push_back(log_prob);
  return out;
}

Outputs dropout_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const bool training = c.has_input(2) && c.scalar_input(2) != 0;
  const double ratio = c.has_input(1) ? c.scalar_input(1) : 0.5;
  if (!training) {
    Outputs out{x};
    if (c.wants_output(1)) out.push_back(ones(x.shape(), {.dtype = DType::Bool}));
    return out;
  }
  if (!c.wants_output(1)) return one(F::dropout(x, ratio, true));
  if (ratio < 0 || ratio >= 1) c.fail("ratio must be in [0, 1), got ", ratio);
  const Tensor mask = ge(rand(x.shape(), {.dtype = DType::Float32}), ratio);
  return {where(mask, mul(x, 1 / (1 - ratio)), zeros({}, {.dtype = x.dtype()})), mask};
}

// ---- recurrent layers ------------------------------------------------------------------------

/** ONNX's LSTM (gates i, o, f, c) and GRU (gates z, r, h) with their default activations,
 *  unrolled over the sequence with ug ops: one input projection for all steps, then a matrix
 *  product per step and direction. Inputs X, W, R, B, sequence_lens, initial_h (initial_c). */
Outputs recurrent_op(const OpContext& c, bool lstm) {
  const int64_t gates = lstm ? 4 : 3;
  const int64_t hidden = c.attr_int("hidden_size");
  const std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("direction must be forward, reverse or bidirectional, got \"", direction, "\"");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = c.attr_int("layout", 0);
  if (c.has_attr("clip")) c.fail("clip is not supported");
  if (auto acts = c.attr_strings("activations")) {
    const std::vector<std::string> one_dir =
        lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh"};
    std::vector<std::string> want;
    for (int64_t d = 0; d < dirs; ++d) want.insert(want.end(), one_dir.begin(), one_dir.end());
    if (*acts != want) c.fail("only the default activations are supported");
  }
  if (lstm && c.attr_int("input_forget", 0)) c.fail("input_forget=1 is not supported");
  Tensor x = c.input(0);
  if (x.dim() != 3) c.fail("X must be 3-d, got shape ", x.shape());
  if (batch_first) x = x.transpose(0, 1);
  const int64_t seq = x.size(0), batch = x.size(1);
  if (auto lens = c.ints_input(4))
    for (int64_t n : *lens)
      if (n != seq) c.fail("sequence_lens other than the full length ", seq, " are not supported");
  const Tensor &w = c.input(1), &r = c.input(2);
  const Shape want_w{dirs, gates * hidden, x.size(2)}, want_r{dirs, gates * hidden, hidden};
  if (w.shape() != want_w || r.shape() != want_r)
    c.fail("W and R must have shapes ", want_w, " and ", want_r, ", got ", w.shape(), " and ", r.shape());
  const Tensor b = c.has_input(3) ? c.input(3) : Tensor();
  if (b.defined() && b.shape() != Shape{dirs, 2 * gates * hidden})
    c.fail("B must have shape [", dirs, ", ", 2 * gates * hidden, "], got ", b.shape());
  auto initial = [&](size_t i) {
    if (!c.has_input(i)) return zeros({dirs, batch, hidden}, {.dtype = x.dtype()});
    Tensor t = batch_first ? c.input(i).transpose(0, 1) : c.input(i);
    if (t.shape() != Shape{dirs, batch, hidden})
      c.fail("input ", i, " has shape ", c.input(i).shape(), ", expected ", dirs, " x ", batch, " x ", hidden);
    return t;
  };
  const Tensor h0 = initial(5), c0 = lstm ? initial(6) : Tensor();
  const bool linear_before_reset = !lstm && c.attr_int("linear_before_reset", 0);
  const Tensor peepholes = lstm && c.has_input(7) ? c.input(7) : Tensor();  // P: per direction, i, o, f
  if (peepholes.defined() && peepholes.shape() != Shape{dirs, 3 * hidden})
    c.fail("P must have shape [", dirs, ", ", 3 * hidden, "], got ", peepholes.shape());

  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const Tensor wd = w.select(0, d), rd = r.select(0, d);
    Tensor wb, rb;
    if (b.defined()) {
      wb = b.select(0, d).narrow(0, 0, gates * hidden);
      rb = b.select(0, d).narrow(0, gates * hidden, gates * hidden);
    }
    const Tensor xw = F::linear(x, wd, wb);  // [seq, batch, gates * hidden]
    Tensor h = h0.select(0, d), cell = lstm ? c0.select(0, d) : Tensor();
    const std::vector<Tensor> peep = peepholes.defined() ? peepholes.select(0, d).chunk(3, 0) : std::vector<Tensor>{};
    std::vector<Tensor> steps(static_cast<size_t>(seq));
    const bool backwards = direction == "reverse" || d == 1;
    for (int64_t k = 0; k < seq; ++k) {
      const int64_t t = backwards ? seq - 1 - k : k;
      const Tensor gx = xw.select(0, t);
      if (lstm) {
        const std::vector<Tensor> g = add(gx, F::linear(h, rd, rb)).chunk(4, 1);
        Tensor in = g[0], out = g[1], forget = g[2];
        if (!peep.empty()) {  // the input and forget gates see the old cell, the output gate the new one
          in = add(in, mul(peep[0], cell));
          forget = add(forget, mul(peep[2], cell));
        }
        cell = add(mul(sigmoid(forget), cell), mul(sigmoid(in), tanh(g[3])));
        if (!peep.empty()) out = add(out, mul(peep[1], cell));
        h = mul(sigmoid(out), tanh(cell));
      } else {
        const std::vector<Tensor> xg = gx.chunk(3, 1);
        const Tensor rzr = rd.narrow(0, 0, 2 * hidden), rh = rd.narrow(0, 2 * hidden, hidden);
        const Tensor rbzr = rb.defined() ? rb.narrow(0, 0, 2 * hidden) : Tensor();
        const Tensor rbh = rb.defined() ? rb.narrow(0, 2 * hidden, hidden) : Tensor();
        const std::vector<Tensor> hg = F::linear(h, rzr, rbzr).chunk(2, 1);
        const Tensor z = sigmoid(add(xg[0], hg[0])), reset = sigmoid(add(xg[1], hg[1]));
        const Tensor n = linear_before_reset ? tanh(add(xg[2], mul(reset, F::linear(h, rh, rbh))))
                                             : tanh(add(xg[2], F::linear(mul(reset, h), rh, rbh)));
        h = add(mul(sub(1.0, z), n), mul(z, h));
      }
      steps[static_cast<size_t>(t)] = h;
    }
    ys.push_back(seq > 0 ? stack(steps, 0) : zeros({0, batch, hidden}, {.dtype = x.dtype()}));
    hs.push_back(h);
    if (lstm) cs.push_back(cell);
  }
  Tensor y = stack(ys, 1), y_h = stack(hs, 0);  // [seq, dirs, batch, hidden], [dirs, batch, hidden]
  Tensor y_c = lstm ? stack(cs, 0) : Tensor();
  if (batch_first) {
    y = y.permute({2, 0, 1, 3});
    y_h = y_h.transpose(0, 1);
    if (lstm) y_c = y_c.transpose(0, 1);
  }
  return lstm ? Outputs{y, y_h, y_c} : Outputs{y, y_h};
}

// ---- shapes and data movement -------------------------------------------------------------

Outputs shape_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = x.dim();
  auto clamp_end = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp_end(c.attr_int("start", 0)), end = clamp_end(c.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.size(d));
  return one(int_tensor(dims));
}

Outputs size_op(const OpContext& c) { return one(scalar_tensor(c.input(0).numel(), {.dtype = DType::Int64})); }

Outputs reshape_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t> shape = *c.ints_input(1);
  const bool allow_zero = c.attr_int("allowzero", 0);
  Dims dims;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= x.dim())
        c.fail("shape ", to_dims(shape), " copies dim ", i, " of a rank-", x.dim(), " input");
      d = x.size(static_cast<int64_t>(i));
    }
    if (d == -1) {
      if (infer >= 0) c.fail("shape ", to_dims(shape), " has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (d < 0) {
      c.fail("shape ", to_dims(shape), " has a negative dim");
    } else if (__builtin_mul_overflow(known, d, &known)) {
      c.fail("shape ", to_dims(shape), " overflows");
    }
    dims.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0) c.fail("cannot reshape ", x.shape(), " into ", to_dims(shape));
    dims[static_cast<size_t>(infer)] = x.numel() / known;
  } else if (known != x.numel()) {
    c.fail("cannot reshape ", x.shape(), " into ", dims);
  }
  check_new_shape(c, dims);
  // A compiled program's reshapes to the shape a value already has (a linear's gradient made
  // 2-d): the value itself, not a view of it, when autograd has nothing to record.
  if (dims == x.shape() && !x.requires_grad()) return one(x);
  return one(x.reshape(dims));
}

Outputs flatten_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -x.dim() || axis > x.dim()) c.fail("axis ", axis, " is out of range for rank ", x.dim());
  if (axis < 0) axis += x.dim();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  return one(x.reshape({outer, outer == 0 ? 0 : x.numel() / outer}));
}

Outputs transpose_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = c.attr_ints("perm")) perm = *p;
  if (perm.size() != static_cast<size_t>(x.dim())) c.fail("perm has ", perm.size(), " values for rank ", x.dim());
  return one(x.permute(to_dims(perm)));
}

Outputs concat_op(const OpContext& c) {
  std::vector<Tensor> parts;
  int64_t total = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    parts.push_back(c.input(i));
    total += parts.back().numel();
    if (total > c.max_elements())
      c.fail("concatenates over ", c.max_elements(), " elements (LoadLimits::max_elements)");
  }
  return one(cat(parts, norm_axis(c, c.attr_int("axis"), parts.front().dim())));
}

Outputs split_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const int64_t length = x.size(axis);
  auto sizes = c.has_input(1) ? c.ints_input(1) : c.attr_ints("split");
  if (!sizes) {
    const int64_t n = c.has_attr("num_outputs") ? c.attr_int("num_outputs") : static_cast<int64_t>(c.num_outputs());
    if (n < 1 || n != static_cast<int64_t>(c.num_outputs()))
      c.fail("num_outputs ", n, " does not match the ", c.num_outputs(), " outputs");
    const int64_t chunk = (length + n - 1) / n;
    sizes.emplace();
    for (int64_t i = 0, left = length; i < n; ++i, left -= chunk)
      sizes->push_back(std::min(chunk, std::max<int64_t>(left, 0)));
  }
  int64_t total = 0;
  for (int64_t s : *sizes) {
    if (s < 0) c.fail("split has a negative size");
    total += s;
  }
  if (total != length || sizes->size() != c.num_outputs())
    c.fail("split ", to_dims(*sizes), " does not cut dim ", axis, " of size ", length, " into ", c.num_outputs(),
           " parts");
  return x.split(to_dims(*sizes), axis);
}

Outputs slice_op(const OpContext& c) {
  Tensor x = c.input(0);
  const auto starts = *c.ints_input(1), ends = *c.ints_input(2);
  const size_t n = starts.size();
  if (ends.size() != n) c.fail("starts and ends have ", n, " and ", ends.size(), " values");
  std::vector<int64_t> axes(n);
  std::iota(axes.begin(), axes.end(), 0);
  if (auto a = c.ints_input(3)) axes = *a;
  std::vector<int64_t> steps(n, 1);
  if (auto s = c.ints_input(4)) steps = *s;
  if (axes.size() != n || steps.size() != n) c.fail("starts, ends, axes and steps must have as many values");
  std::vector<bool> seen(static_cast<size_t>(x.dim()));
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis = norm_axis(c, axes[i], x.dim());
    if (seen[static_cast<size_t>(axis)]) c.fail("repeats axis ", axis);
    seen[static_cast<size_t>(axis)] = true;
    const int64_t dim = x.size(axis);
    if (steps[i] == 0) c.fail("a step is 0");
    if (dim == 0) continue;
    // A step past the dim's size takes one element, as a step of the size does (and keeps
    // the view's stride arithmetic from overflowing).
    const int64_t step = std::clamp(steps[i], -dim, dim);
    auto norm = [&](int64_t v, int64_t lo, int64_t hi) {
      return std::clamp(v < 0 ? (v < -dim ? lo : v + dim) : v, lo, hi);
    };
    if (step > 0) {
      const int64_t start = norm(starts[i], 0, dim), end = norm(ends[i], 0, dim);
      x = x.slice(axis, start, std::max(start, end), step);
    } else {  // backwards: flip, then walk forwards from the mirrored start
      const int64_t start = norm(starts[i], 0, dim - 1), end = norm(ends[i], -1, dim - 1);
      const int64_t count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
      const int64_t first = dim - 1 - start;
      x = x.flip({axis}).slice(axis, first, first + (count > 0 ? (count - 1) * (-step) + 1 : 0), -step);
    }
  }
  return one(x);
}

Outputs gather_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& indices = c.input(1);
  if (!is_integral(indices.dtype())) c.fail<TypeError>("indices must be integers, got ", indices.dtype());
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const Tensor idx = wrap_negative(indices, x.size(axis));
  Dims out_shape(x.shape().begin(), x.shape().begin() + axis);
  for (int64_t d : indices.shape()) out_shape.push_back(d);
  for (int64_t d = axis + 1; d < x.dim(); ++d) out_shape.push_back(x.size(d));
  check_new_shape(c, out_shape);
  return one(x.index_select(axis, idx.reshape({-1})).reshape(out_shape));
}

Outputs gather_elements_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  return one(x.gather(axis, wrap_negative(c.input(1), x.size(axis))));
}

Outputs compress_op(const OpContext& c) {
  Tensor x = c.input(0);
  const Tensor& condition = c.input(1);
  if (condition.dtype() != DType::Bool || condition.dim() != 1)
    c.fail<TypeError>("the condition must be 1-D bool, got ", condition.dtype(), " ", condition.shape());
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = norm_axis(c, c.attr_int("axis"), x.dim());
  else x = x.reshape({-1});
  if (condition.numel() > x.size(axis))
    c.fail("the condition has ", condition.numel(), " values for an axis of ", x.size(axis));
  const Tensor flags = condition.detach().contiguous();
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < flags.numel(); ++i)
    if (flags.data_ptr<bool>()[i]) kept.push_back(i);
  Tensor idx = empty({static_cast<int64_t>(kept.size())}, {.dtype = DType::Int64});
  std::copy(kept.begin(), kept.end(), idx.data_ptr<int64_t>());
  return one(x.index_select(axis, idx));
}

/** DepthToSpace and SpaceToDepth: (N, C, H, W) regrouped through a 6-D view. DCR orders the
 *  channels block-first, CRD channel-first (SpaceToDepth before opset 28 is DCR). */
template <bool ToSpace> Outputs depth_space_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t b = c.attr_int("blocksize");
  const std::string mode = c.attr_string("mode", "DCR");
  if (x.dim() != 4) c.fail("the input must be 4-D, got ", x.shape());
  if (mode != "DCR" && mode != "CRD") c.fail("mode must be DCR or CRD, got '", mode, "'");
  const bool dcr = mode == "DCR";
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  if (b <= 0 || (ToSpace ? ch % (b * b) != 0 : h % b != 0 || w % b != 0))
    c.fail("blocksize ", b, " does not divide input ", x.shape());
  if (ToSpace) {
    const int64_t cb = ch / (b * b);
    const Tensor v = dcr ? x.reshape({n, b, b, cb, h, w}).permute({0, 3, 4, 1, 5, 2})
                         : x.reshape({n, cb, b, b, h, w}).permute({0, 1, 4, 2, 5, 3});
    return one(v.reshape({n, cb, h * b, w * b}));
  }
  const Tensor v = x.reshape({n, ch, h / b, b, w / b, b});
  return one(
      (dcr ? v.permute({0, 3, 5, 1, 2, 4}) : v.permute({0, 1, 3, 5, 2, 4})).reshape({n, ch * b * b, h / b, w / b}));
}

Outputs one_hot_op(const OpContext& c) {
  const Tensor& indices = c.input(0);
  const int64_t depth = static_cast<int64_t>(c.scalar_input(1));
  const Tensor& values = c.input(2);
  if (depth <= 0) c.fail("depth must be positive, got ", depth);
  if (values.numel() != 2) c.fail("values must be [off, on], got ", values.shape());
  const int64_t rank = indices.dim() + 1;
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), rank);
  Dims out_shape = indices.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  check_new_shape(c, out_shape);
  Tensor idx = indices.to(DType::Int64);
  idx = where(lt(idx, 0), add(idx, depth), idx).unsqueeze(axis);  // -depth..-1 count from the end
  Dims along(static_cast<size_t>(rank), 1);
  along[static_cast<size_t>(axis)] = depth;
  const Tensor hot = eq(idx, arange(depth, {.dtype = DType::Int64}).reshape(along));
  const Tensor flat = values.reshape({2});
  return one(where(hot, flat.narrow(0, 1, 1), flat.narrow(0, 0, 1)));
}

Outputs squeeze_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  auto axes = axes_of(c, 1, x.dim());
  if (!axes) return one(x.squeeze());
  for (int64_t a : *axes)
    if (x.size(a) != 1) c.fail("cannot squeeze dim ", a, " of size ", x.size(a));
  return one(x.squeeze(to_dims(*axes)));
}

Outputs unsqueeze_op(const OpContext& c) {
  Tensor x = c.input(0);
  const auto count = (c.has_input(1) ? c.ints_input(1) : c.attr_ints("axes")).value_or(std::vector<int64_t>{}).size();
  if (count == 0) c.fail("needs axes");
  auto axes = *axes_of(c, 1, x.dim() + static_cast<int64_t>(count));  // relative to the output's rank
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) x = x.unsqueeze(a);
  return one(x);
}

Outputs expand_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const auto shape = *c.ints_input(1);
  // Both shapes right-aligned, padded with ones to the longer rank, then broadcast.
  const size_t rank = std::max(shape.size(), static_cast<size_t>(x.dim()));
  Dims from(rank - static_cast<size_t>(x.dim()), 1), to(rank - shape.size(), 1), out;
  for (int64_t d : x.shape()) from.push_back(d);
  for (int64_t d : shape) to.push_back(d);
  for (size_t i = 0; i < rank; ++i) {
    if (from[i] != to[i] && from[i] != 1 && to[i] != 1) c.fail("cannot broadcast ", x.shape(), " to ", to_dims(shape));
    out.push_back(from[i] == 1 ? to[i] : from[i]);
  }
  check_new_shape(c, out);
  return one(x.expand(out));
}

Outputs tile_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const auto repeats = *c.ints_input(1);
  if (repeats.size() != static_cast<size_t>(x.dim()))
    c.fail("repeats has ", repeats.size(), " values for rank ", x.dim());
  Dims out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) c.fail("repeats has a negative value");
    int64_t d = 0;
    if (__builtin_mul_overflow(repeats[i], x.size(static_cast<int64_t>(i)), &d)) c.fail("repeats overflow");
    out.push_back(d);
  }
  check_new_shape(c, out);
  return one(x.tile(to_dims(repeats)));
}

Outputs pad_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const std::string mode = c.attr_string("mode", "constant");
  const auto pads = *c.ints_input(1);
  std::vector<int64_t> axes(static_cast<size_t>(x.dim()));
  std::iota(axes.begin(), axes.end(), 0);
  if (auto a = axes_of(c, 3, x.dim())) axes = *a;
  if (pads.size() != 2 * axes.size()) c.fail("pads has ", pads.size(), " values for ", axes.size(), " axes");
  std::vector<int64_t> begin(static_cast<size_t>(x.dim())), end(static_cast<size_t>(x.dim()));
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  Dims out, ug_pads;
  for (int64_t d = x.dim(); d-- > 0;) {
    ug_pads.push_back(begin[static_cast<size_t>(d)]);
    ug_pads.push_back(end[static_cast<size_t>(d)]);
  }
  for (int64_t d = 0; d < x.dim(); ++d)
    out.push_back(x.size(d) + begin[static_cast<size_t>(d)] + end[static_cast<size_t>(d)]);
  check_new_shape(c, out);
  if (mode == "constant") {
    const Scalar value = c.has_input(2) && c.input(2).numel() > 0 ? c.input(2).detach().item() : Scalar(0);
    return one(pad(x, ug_pads, "constant", value));
  }
  if (mode == "reflect") return one(pad(x, ug_pads, "reflect"));
  if (mode == "edge") return one(pad(x, ug_pads, "replicate"));
  if (mode == "wrap") return one(pad(x, ug_pads, "circular"));
  c.fail("mode must be constant, reflect, edge or wrap, got \"", mode, "\"");
}

Outputs constant_op(const OpContext& c) {
  if (auto t = c.attr_tensor("value")) return one(*t);
  if (c.has_attr("value_float")) return one(scalar_tensor(c.attr_float("value_float", 0), {.dtype = DType::Float32}));
  if (c.has_attr("value_int")) return one(scalar_tensor(c.attr_int("value_int"), {.dtype = DType::Int64}));
  if (auto v = c.attr_ints("value_ints")) return one(int_tensor(*v));
  if (auto v = c.attr_floats("value_floats")) {
    Tensor t = empty({static_cast<int64_t>(v->size())}, {.dtype = DType::Float32});
    std::transform(v->begin(), v->end(), t.data_ptr<float>(), [](double d) { return static_cast<float>(d); });
    return one(t);
  }
  c.fail("needs a value, value_float, value_floats, value_int or value_ints attribute");
}

Outputs constant_of_shape_op(const OpContext& c) {
  const Dims shape = to_dims(*c.ints_input(0));
  check_new_shape(c, shape);
  const std::optional<Tensor> value = c.attr_tensor("value");
  if (!value) return one(zeros(shape, {.dtype = DType::Float32}));
  if (value->numel() != 1) c.fail("the value attribute must have one element, got shape ", value->shape());
  return one(full(shape, value->item(), {.dtype = value->dtype()}));
}

Outputs range_op(const OpContext& c) {
  const Tensor& start_t = c.input(0);
  const DType dtype = start_t.dtype();
  const double start = c.scalar_input(0), limit = c.scalar_input(1), delta = c.scalar_input(2);
  if (delta == 0) c.fail("delta is 0");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= static_cast<double>(c.max_elements())))
    c.fail("asks for ", count, " elements, over ", c.max_elements(), " (LoadLimits::max_elements)");
  const auto n = static_cast<int64_t>(count);
  if (is_integral(dtype)) {
    const int64_t s = start_t.detach().item<int64_t>(), d = c.input(2).detach().item<int64_t>();
    return one(add(mul(arange(n, {.dtype = DType::Int64}), d), s).to(dtype));
  }
  // Range 27 computes float16 and bfloat16 in stash_type (float32 by default).
  DType compute = dtype;
  if (c.opset() >= 27 && (dtype == DType::Float16 || dtype == DType::BFloat16)) {
    const int64_t stash = c.attr_int("stash_type", 1);
    if (stash != 1 && stash != 11) c.fail("stash_type must be 1 (float) or 11 (double), got ", stash);
    compute = stash == 1 ? DType::Float32 : DType::Float64;
  }
  return one(add(mul(arange(n, {.dtype = compute}), delta), start).to(dtype));
}

Outputs trilu_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() < 2) c.fail("the input must have at least 2 dims, got ", x.shape());
  const int64_t k = c.has_input(1) ? static_cast<int64_t>(c.scalar_input(1)) : 0;
  const Tensor rows = arange(x.size(-2), {.dtype = DType::Int64}).unsqueeze(1);
  const Tensor cols = arange(x.size(-1), {.dtype = DType::Int64}).unsqueeze(0);
  const Tensor offset = sub(cols, rows);
  const Tensor keep = c.attr_int("upper", 1) ? ge(offset, k) : le(offset, k);
  return one(where(keep, x, zeros({}, {.dtype = x.dtype()})));
}

// ---- reductions -------------------------------------------------------------------------

/** The dims a Reduce* op reduces (all when none are given), or nullopt for its no-op case. */
std::optional<Dims> reduce_dims(const OpContext& c, const Tensor& x) {
  auto axes = axes_of(c, 1, x.dim());
  if (axes && !axes->empty()) return to_dims(*axes);
  if (c.attr_int("noop_with_empty_axes", 0)) return std::nullopt;
  Dims all;
  for (int64_t d = 0; d < x.dim(); ++d) all.push_back(d);
  return all;
}

template <Tensor (*Reduce)(const Tensor&, const Dims&, bool)> Outputs reduce_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  auto dims = reduce_dims(c, x);
  if (!dims) return one(x);
  Tensor y = Reduce(x, *dims, c.attr_int("keepdims", 1) != 0);
  return one(y.dtype() == x.dtype() ? y : y.to(x.dtype()));
}

Tensor sum_of(const Tensor& x, const Dims& d, bool k) { return x.sum(d, k); }
Tensor mean_of(const Tensor& x, const Dims& d, bool k) { return x.mean(d, k); }
Tensor max_of(const Tensor& x, const Dims& d, bool k) { return x.amax(d, k); }
Tensor min_of(const Tensor& x, const Dims& d, bool k) { return x.amin(d, k); }
Tensor l1_of(const Tensor& x, const Dims& d, bool k) { return x.abs().sum(d, k); }
Tensor l2_of(const Tensor& x, const Dims& d, bool k) { return mul(x, x).sum(d, k).sqrt(); }
Tensor sum_square_of(const Tensor& x, const Dims& d, bool k) { return mul(x, x).sum(d, k); }
Tensor log_sum_of(const Tensor& x, const Dims& d, bool k) { return log(x.sum(d, k)); }
Tensor log_sum_exp_of(const Tensor& x, const Dims& d, bool k) { return x.logsumexp(d, k); }
Tensor prod_of(const Tensor& x, const Dims& d, bool k) {
  Tensor y = x;
  for (int64_t dim : d) y = y.prod(dim, true);
  return k ? y : y.squeeze(d);
}

template <bool Max> Outputs arg_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const bool keep = c.attr_int("keepdims", 1);
  if (c.attr_int("select_last_index", 0)) {
    Tensor i = Max ? x.flip({axis}).argmax(axis, keep) : x.flip({axis}).argmin(axis, keep);
    return one(sub(x.size(axis) - 1, i));
  }
  return one(Max ? x.argmax(axis, keep) : x.argmin(axis, keep));
}

Outputs cum_sum_op(const OpContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = norm_axis(c, static_cast<int64_t>(c.scalar_input(1)), x.dim());
  const bool reverse = c.attr_int("reverse", 0), exclusive = c.attr_int("exclusive", 0);
  if (reverse) x = x.flip({axis});
  Tensor y = x.cumsum(axis);
  if (exclusive) y = sub(y, x);
  if (reverse) y = y.flip({axis});
  return one(y.dtype() == x.dtype() ? y : y.to(x.dtype()));
}

/** The k largest (or smallest) along the axis, ties to the lower index, as ONNX asks: a stable sort. */
Outputs top_k_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const auto k_values = c.ints_input(1);
  if (!k_values || k_values->size() != 1) c.fail("K must hold one value");
  const int64_t k = k_values->front();
  if (k < 0 || k > x.size(axis)) c.fail("K=", k, " is outside [0, ", x.size(axis), "] for input ", x.shape());
  auto [values, indices] = x.sort(axis, c.attr_int("largest", 1) != 0, true);
  return {values.narrow(axis, 0, k), indices.narrow(axis, 0, k).to(DType::Int64)};
}

Outputs cum_prod_op(const OpContext& c) {
  Tensor x = c.input(0);
  const int64_t axis = norm_axis(c, static_cast<int64_t>(c.scalar_input(1)), x.dim());
  const bool reverse = c.attr_int("reverse", 0), exclusive = c.attr_int("exclusive", 0);
  if (reverse) x = x.flip({axis});
  Tensor y = x.cumprod(axis);
  if (exclusive && x.size(axis) > 0) {  // shifted one along the axis, from 1 (not y / x: x may hold 0)
    Dims first = x.shape();
    first[static_cast<size_t>(axis)] = 1;
    y = concat({ones(first, {.dtype = y.dtype()}), y.narrow(axis, 0, x.size(axis) - 1)}, axis);
  }
  if (reverse) y = y.flip({axis});
  return one(y.dtype() == x.dtype() ? y : y.to(x.dtype()));
}

// ---- the table ---------------------------------------------------------------------------

constexpr size_t kMany = std::numeric_limits<size_t>::max();

#define UG_UNARY(expr)                 \
  +[](const OpContext& c) -> Outputs { \
    const Tensor& x = c.input(0);      \
    return one(expr);                  \
  }
#define UG_BINARY(expr)                            \
  +[](const OpContext& c) -> Outputs {             \
    check_broadcast(c);                            \
    const Tensor &a = c.input(0), &b = c.input(1); \
    return one(expr);                              \
  }

/** An ONNX op that is one of unigrad's unary ops (the onnx field of its entry in unary_kinds.h). */
template <ops::UnaryOp op> Outputs unary_op(const OpContext& c) { return one(ops::unary(op, c.input(0))); }
template <class Op, ops::UnaryOp op> void add_unary_row(std::vector<OpSpec>& ops) {
  if constexpr (Op::onnx != nullptr) ops.push_back({Op::onnx, unary_op<op>, 1, 1, 1, 1, {}});
}

const std::vector<OpSpec>& table() {
  static const std::vector<OpSpec> ops = [] {
    std::vector<OpSpec> ops = {
        // elementwise
        {"Identity", UG_UNARY(x), 1, 1, 1, 1, {}},
        {"Floor", UG_UNARY(floor(x)), 1, 1, 1, 1, {}},
        {"Ceil", UG_UNARY(ceil(x)), 1, 1, 1, 1, {}},
        {"Round", UG_UNARY(round(x)), 1, 1, 1, 1, {}},
        {"Gelu", gelu_op, 1, 1, 1, 20, {}},
        {"LeakyRelu", UG_UNARY(F::leaky_relu(x, c.attr_float("alpha", 0.01))), 1, 1, 1, 1, {}},
        {"Elu", UG_UNARY(F::elu(x, c.attr_float("alpha", 1.0))), 1, 1, 1, 1, {}},
        {"Selu", selu_op, 1, 1, 1, 1, {}},
        {"Softplus", UG_UNARY(F::softplus(x)), 1, 1, 1, 1, {}},
        {"Softsign", UG_UNARY(F::softsign(x)), 1, 1, 1, 1, {}},
        {"HardSigmoid", hard_sigmoid_op, 1, 1, 1, 1, {}},
        {"HardSwish", hard_swish_op, 1, 1, 1, 14, {}},
        {"PRelu", prelu_op, 2, 2, 1, 1, {}},
        {"Celu", celu_op, 1, 1, 1, 1, {}},
        {"ThresholdedRelu", UG_UNARY(where(gt(x, c.attr_float("alpha", 1.0)), x, 0)), 1, 1, 1, 1, {}},
        {"EyeLike", eye_like_op, 1, 1, 1, 1, {}},
        {"Einsum", einsum_op, 1, kMany, 1, 1, {"equation"}},
        {"Swish", UG_UNARY(mul(x, sigmoid(mul(x, c.attr_float("alpha", 1.0))))), 1, 1, 1, 24, {}},
        {"Hardmax", hardmax_op, 1, 1, 1, 1, {}},
        {"LpNormalization", lp_normalization_op, 1, 1, 1, 1, {}},
        {"IsInf", is_inf_op, 1, 1, 1, 1, {}},
        {"Add", UG_BINARY(add(a, b)), 2, 2, 1, 1, {}},
        {"Sub", UG_BINARY(sub(a, b)), 2, 2, 1, 1, {}},
        {"Mul", UG_BINARY(mul(a, b)), 2, 2, 1, 1, {}},
        {"Div", div_op, 2, 2, 1, 1, {}},
        {"Pow", pow_op, 2, 2, 1, 1, {}},
        {"Mod", mod_op, 2, 2, 1, 1, {}},
        {"Equal", UG_BINARY(eq(a, b)), 2, 2, 1, 1, {}},
        {"Less", UG_BINARY(lt(a, b)), 2, 2, 1, 1, {}},
        {"LessOrEqual", UG_BINARY(le(a, b)), 2, 2, 1, 1, {}},
        {"Greater", UG_BINARY(gt(a, b)), 2, 2, 1, 1, {}},
        {"GreaterOrEqual", UG_BINARY(ge(a, b)), 2, 2, 1, 1, {}},
        {"And", UG_BINARY(logical_and(a, b)), 2, 2, 1, 1, {}},
        {"Or", UG_BINARY(logical_or(a, b)), 2, 2, 1, 1, {}},
        {"Xor", UG_BINARY(logical_xor(a, b)), 2, 2, 1, 1, {}},
        {"Max", variadic<max2>, 1, kMany, 1, 1, {}},
        {"Min", variadic<min2>, 1, kMany, 1, 1, {}},
        {"Sum", variadic<add2>, 1, kMany, 1, 1, {}},
        {"Mean", mean_op, 1, kMany, 1, 1, {}},
        {"Clip", clip_op, 1, 3, 1, 1, {}},
        {"Where", where_op, 3, 3, 1, 1, {}},
        {"Cast", cast_op, 1, 1, 1, 1, {"to"}},
        {"CastLike",
         +[](const OpContext& c) -> Outputs { return one(c.input(0).to(c.input(1).dtype())); },
         2,
         2,
         1,
         15,
         {}},
        {"Softmax", softmax_op, 1, 1, 1, 1, {}},
        {"LogSoftmax", log_softmax_op, 1, 1, 1, 1, {}},
        // matrix products
        {"MatMul", matmul_op, 2, 2, 1, 1, {}},
        {"Gemm", gemm_op, 2, 3, 1, 1, {}},
        // convolution, pooling, normalization
        {"Conv", conv_op, 2, 3, 1, 1, {}},
        {"ConvTranspose", conv_transpose_op, 2, 3, 1, 1, {}},
        {"MaxPool", max_pool_op, 1, 1, 2, 1, {"kernel_shape"}},
        {"AveragePool", average_pool_op, 1, 1, 1, 1, {"kernel_shape"}},
        {"GlobalAveragePool", global_average_pool_op, 1, 1, 1, 1, {}},
        {"GlobalMaxPool", global_max_pool_op, 1, 1, 1, 1, {}},
        {"BatchNormalization", batch_norm_op, 5, 5, 3, 1, {}},
        {"LayerNormalization", layer_norm_op, 2, 3, 3, 17, {}},
        {"RMSNormalization", rms_norm_op, 2, 2, 1, 23, {}},
        {"Attention", attention_op, 3, 7, 4, 23, {}},
        {"RotaryEmbedding", rotary_embedding_op, 3, 4, 1, 23, {}},
        {"NegativeLogLikelihoodLoss", nll_loss_op, 2, 3, 1, 1, {}},
        {"SoftmaxCrossEntropyLoss", softmax_cross_entropy_op, 2, 3, 2, 1, {}},
        {"Dropout", dropout_op, 1, 3, 2, 1, {}},
        {"LSTM", +[](const OpContext& c) { return recurrent_op(c, true); }, 3, 8, 3, 1, {"hidden_size"}},
        {"GRU", +[](const OpContext& c) { return recurrent_op(c, false); }, 3, 6, 2, 1, {"hidden_size"}},
        // shapes and data movement
        {"Shape", shape_op, 1, 1, 1, 1, {}},
        {"Size", size_op, 1, 1, 1, 1, {}},
        {"Reshape", reshape_op, 2, 2, 1, 1, {}},
        {"Flatten", flatten_op, 1, 1, 1, 1, {}},
        {"Transpose", transpose_op, 1, 1, 1, 1, {}},
        {"Concat", concat_op, 1, kMany, 1, 1, {"axis"}},
        {"Split", split_op, 1, 2, kMany, 1, {}},
        {"Slice", slice_op, 3, 5, 1, 1, {}},
        {"Gather", gather_op, 2, 2, 1, 1, {}},
        {"GatherElements", gather_elements_op, 2, 2, 1, 1, {}},
        {"OneHot", one_hot_op, 3, 3, 1, 1, {}},
        {"Compress", compress_op, 2, 2, 1, 1, {}},
        {"DepthToSpace", depth_space_op<true>, 1, 1, 1, 1, {"blocksize"}},
        {"SpaceToDepth", depth_space_op<false>, 1, 1, 1, 1, {"blocksize"}},
        {"Squeeze", squeeze_op, 1, 2, 1, 1, {}},
        {"Unsqueeze", unsqueeze_op, 1, 2, 1, 1, {}},
        {"Expand", expand_op, 2, 2, 1, 1, {}},
        {"Tile", tile_op, 2, 2, 1, 1, {}},
        {"Pad", pad_op, 2, 4, 1, 1, {}},
        {"Constant", constant_op, 0, 0, 1, 1, {}},
        {"ConstantOfShape", constant_of_shape_op, 1, 1, 1, 1, {}},
        {"Range", range_op, 3, 3, 1, 1, {}},
        {"Trilu", trilu_op, 1, 2, 1, 14, {}},
        // reductions
        {"ReduceSum", reduce_op<sum_of>, 1, 2, 1, 1, {}},
        {"ReduceMean", reduce_op<mean_of>, 1, 2, 1, 1, {}},
        {"ReduceMax", reduce_op<max_of>, 1, 2, 1, 1, {}},
        {"ReduceMin", reduce_op<min_of>, 1, 2, 1, 1, {}},
        {"ReduceProd", reduce_op<prod_of>, 1, 2, 1, 1, {}},
        {"ReduceL1", reduce_op<l1_of>, 1, 2, 1, 1, {}},
        {"ReduceL2", reduce_op<l2_of>, 1, 2, 1, 1, {}},
        {"ReduceSumSquare", reduce_op<sum_square_of>, 1, 2, 1, 1, {}},
        {"ReduceLogSumExp", reduce_op<log_sum_exp_of>, 1, 2, 1, 1, {}},
        {"ReduceLogSum", reduce_op<log_sum_of>, 1, 2, 1, 1, {}},
        {"ArgMax", arg_op<true>, 1, 1, 1, 1, {}},
        {"ArgMin", arg_op<false>, 1, 1, 1, 1, {}},
        {"CumSum", cum_sum_op, 2, 2, 1, 1, {}},
        {"CumProd", cum_prod_op, 2, 2, 1, 26, {}},
        {"TopK", top_k_op, 2, 2, 2, 1, {}},
    };
#define UG_ROW(Op, method) add_unary_row<ops::Op, ops::UnaryOp::Op>(ops);
    UG_UNARY_ALL(UG_ROW)
#undef UG_ROW
    add_normalization_ops(ops);
    add_pooling_ops(ops);
    add_indexing_ops(ops);
    add_linalg_ops(ops);
    add_resize_ops(ops);
    add_quantize_ops(ops);
    add_bitwise_ops(ops);
    add_control_flow_ops(ops);
    add_sampling_ops(ops);
    add_detection_ops(ops);
    add_col2im_ops(ops);
    add_signal_ops(ops);
    add_rnn_ops(ops);
    add_optional_ops(ops);
    add_linear_attention_ops(ops);
    add_causal_conv_ops(ops);
    add_tensor_scatter_ops(ops);
    add_fused_conv_ops(ops);
    widen_unsigned_ops(ops);  // last: it widens every row above
    // A compiled program's call back into an op without a graph form; run_graph runs it from
    // the program's replays, so this body only answers a graph that has none.
    ops.push_back({"UgReplay",
                   +[](const OpContext& c) -> std::vector<Tensor> {
                     c.fail("runs an op of the program that traced it; a graph read from a file cannot hold one");
                   },
                   0,
                   kMany,
                   kMany,
                   1,
                   {"index"}});
    return ops;
  }();
  return ops;
}

#undef UG_UNARY
#undef UG_BINARY

}  // namespace

const OpSpec* find_op(std::string_view op_type) {
  static const auto index = [] {
    std::unordered_map<std::string_view, const OpSpec*> m;
    for (const OpSpec& op : table()) m.emplace(op.op_type, &op);
    return m;
  }();
  auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

void check_node(const Node& node, int64_t opset) {
  auto where = [&] { return "node '" + node.name + "', opset " + std::to_string(opset); };
  const OpSpec* op = find_op(node.op_type);
  if (!op) fail("[onnx] unsupported op type '", node.op_type, "' (", where(), ")");
  if (opset < op->since_opset)
    fail("[onnx] op type '", node.op_type, "' needs opset ", op->since_opset, " or later (", where(), ")");
  // The table implements each op as of opset 21; later versions only added element types, and
  // Range 27 stash_type, which range_op reads.
  const size_t n_in = node.inputs.size();
  if (n_in < op->min_inputs || n_in > op->max_inputs)
    fail("[onnx] ", node.op_type, " (", where(), ") has ", n_in, " inputs; it takes ", op->min_inputs,
         op->max_inputs == kMany ? " or more" : " to " + std::to_string(op->max_inputs));
  for (size_t i = 0; i < op->min_inputs; ++i)
    if (node.inputs[i] < 0) fail("[onnx] ", node.op_type, " (", where(), "): required input ", i, " is empty");
  if (node.outputs.empty() || node.outputs.size() > op->max_outputs)
    fail("[onnx] ", node.op_type, " (", where(), ") has ", node.outputs.size(), " outputs; it gives at most ",
         op->max_outputs);
  for (std::string_view attr : op->required_attributes)
    if (!node.attributes.contains(attr))
      fail("[onnx] ", node.op_type, " (", where(), ") is missing its required attribute '", attr, "'");
}

}  // namespace ug::onnx
