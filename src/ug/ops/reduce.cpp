// Reductions and scans. Every reduction comes down to one backend kernel over a contiguous
// [outer, reduced, inner] view; mean, var, norm and logsumexp are composed from those
// kernels and elementwise ops. softmax over the last dim of float32/float64 has a fused
// kernel each way (the attention and cross-entropy hot path); other cases are composed.
// dtypes follow PyTorch.
#include "ug/ops/reduce.h"

#include <cmath>
#include <limits>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug {

namespace {

using ops::ReduceOp;
using ops::ScanOp;
using Mask = SmallVector<bool, 6>;

/** Which of x's dims a reduction covers; an empty list means all of them. */
Mask reduce_mask(const Tensor& x, const Dims& dims, const char* op) {
  const int64_t n = x.dim();
  Mask mask(static_cast<size_t>(n), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, n, op);
    if (n == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and has nothing to reduce
    if (mask[w]) fail("[", op, "] dim ", d, " appears multiple times in the list of dims ", Shape(dims));
    mask[w] = true;
  }
  return mask;
}

Mask single_dim_mask(const Tensor& x, int64_t dim, const char* op) { return reduce_mask(x, {dim}, op); }

// Sums, products, means, scans and softmax run in float32 under autocast (PyTorch's CUDA list;
// mean is ours too); the extremes are exact in any dtype.
constexpr auto kF32 = graph::Autocast::Float32;
const graph::OpDef kReduce[] = {graph::OpDef("sum", kF32), graph::OpDef("prod", kF32), graph::OpDef("amax"),
                                graph::OpDef("amin"),      graph::OpDef("argmax"),     graph::OpDef("argmin"),
                                graph::OpDef("all"),       graph::OpDef("any")};
// amax and amin's autograd nodes are named max and min (see run_reduce).
const graph::OpDef kMax("max"), kMin("min");
const graph::OpDef kCumsum("cumsum", kF32), kCumprod("cumprod", kF32);
const graph::OpDef kMean("mean", kF32), kSoftmax("softmax", kF32), kLogSoftmax("log_softmax", kF32);

/** A reduction's attributes for the capture: the reduced dims and keepdim. */
graph::Attrs reduce_attrs(const Mask& mask, bool keepdim) {
  std::vector<int64_t> axes;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) axes.push_back(static_cast<int64_t>(d));
  return {{"axes", std::move(axes)}, {"keepdim", int64_t{keepdim}}};
}

Shape reduced_shape(const Shape& shape, const Mask& mask, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!mask[i]) out.push_back(shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

/** How many elements each output value reduces. */
int64_t reduced_count(const Shape& shape, const Mask& mask) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (mask[i]) n *= shape[i];
  return n;
}

/** max, min, argmax and amax have no identity: PyTorch rejects an empty reduced dim. */
void check_nonempty(const Tensor& x, const Mask& mask, const char* op) {
  for (int64_t d = 0; d < x.dim(); ++d)
    if (mask[d] && x.size(d) == 0)
      fail<IndexError>("[", op, "] expected reduction dim ", d, " to have non-zero size (input shape ", x.shape(),
                       ", dtype ", x.dtype(), ")");
}

struct Layout {
  Tensor src;
  int64_t outer, reduced, inner;
};

/** x as a contiguous [outer, reduced, inner] block. Free when x is contiguous and the reduced
 *  dims are adjacent (size-1 dims don't count); otherwise they are moved last and copied once. */
Layout to_layout(const Tensor& x, const Mask& mask) {
  if (x.is_contiguous()) {
    int64_t outer = 1, reduced = 1, inner = 1;
    enum { Before, Inside, After } at = Before;
    bool adjacent = true;
    for (int64_t d = 0; d < x.dim() && adjacent; ++d) {
      int64_t n = x.size(d);
      if (n == 1) continue;
      if (mask[d]) {
        adjacent = at != After;
        at = Inside;
        reduced *= n;
      } else {
        if (at == Inside) at = After;
        (at == Before ? outer : inner) *= n;
      }
    }
    if (adjacent) return {x, outer, reduced, inner};
  }
  Dims order;
  int64_t outer = 1, reduced = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!mask[d]) {
      order.push_back(d);
      outer *= x.size(d);
    }
  for (int64_t d = 0; d < x.dim(); ++d)
    if (mask[d]) {
      order.push_back(d);
      reduced *= x.size(d);
    }
  return {x.permute(order).contiguous(), outer, reduced, 1};
}

Dims masked_dims(const Mask& mask) {
  Dims dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) dims.push_back(static_cast<int64_t>(d));
  return dims;
}

/** The gradient of a reduction over the masked dims: g with those dims back as size 1. */
Tensor keep_dims(const Tensor& g, const Shape& in_shape, const Mask& mask) {
  Shape kept = reduced_shape(in_shape, mask, true);
  return g.reshape(Dims(kept.begin(), kept.end()));
}

/** Each product of all elements but one, along the last dim, without dividing (exact when
 *  some elements are zero): exclusive cumulative products from both ends. */
Tensor products_of_others(const Tensor& x) {
  const int64_t n = x.size(-1);
  Dims one_shape(x.shape().begin(), x.shape().end());
  one_shape.back() = 1;
  Tensor one = ones(one_shape, {.dtype = x.dtype(), .device = x.device()});
  Tensor left = cat({one, x.narrow(-1, 0, n - 1)}, -1).cumprod(-1);
  Tensor xf = x.flip({-1});
  Tensor right = cat({one, xf.narrow(-1, 0, n - 1)}, -1).cumprod(-1).flip({-1});
  return left * right;
}

/** d prod / dx over the masked dims: move them last, flatten, take products of the others. */
Tensor prod_backward(const Tensor& g, const Tensor& x, const Mask& mask) {
  Dims order, inverse(static_cast<size_t>(x.dim()));
  Dims outer_shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!mask[d]) {
      order.push_back(d);
      outer_shape.push_back(x.size(d));
    }
  for (int64_t d = 0; d < x.dim(); ++d)
    if (mask[d]) order.push_back(d);
  for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
  Tensor moved = x.permute(order);
  Dims flat = outer_shape;
  flat.push_back(-1);
  Tensor others = products_of_others(moved.reshape(flat)).reshape(Dims(moved.shape().begin(), moved.shape().end()));
  return keep_dims(g, x.shape(), mask) * others.permute(inverse);
}

Tensor run_reduce(ReduceOp op, const Tensor& x, const Mask& mask, bool keepdim, DType out_dtype);

/** Runs the backend's `op` over the masked dims as the op `def`; x already has the kernel's
 *  input dtype. */
Tensor reduce_as(const graph::OpDef& def, ReduceOp op, const Tensor& x, const Mask& mask, bool keepdim,
                 DType out_dtype) {
  graph::OpCall call(def);
  Tensor out;
  if (int lvl = batching::level(x)) {
    Mask with_batch(1, false);  // the batch dim is never reduced
    for (bool m : mask) with_batch.push_back(m);
    // The physical call of max/min goes through run_reduce, so that a trace holds it as amax/amin:
    // the internal max has no graph form, and a program would read its result as a constant.
    const Tensor p = batching::physical(x, lvl);
    out = batching::wrap(&def == &kMax || &def == &kMin ? run_reduce(op, p, with_batch, keepdim, out_dtype)
                                                        : reduce_as(def, op, p, with_batch, keepdim, out_dtype),
                         lvl);
  } else {
    out = empty(reduced_shape(x.shape(), mask, keepdim), {.dtype = out_dtype, .device = x.device()});
  }
  if (!batching::level(x) && out.numel() > 0) {
    Layout l = to_layout(x, mask);
    backend_for(x.device()).reduce(op, l.src, l.outer, l.reduced, l.inner, out);
  }
  if (call.capturing()) call.set_attrs(reduce_attrs(mask, keepdim));
  const bool sum = op == ReduceOp::Sum, extreme = op == ReduceOp::Max || op == ReduceOp::Min;
  if (!sum && !extreme && op != ReduceOp::Prod) {  // argmax, argmin, all, any: no derivative
    call.finish({&x}, {&out});
    return out;
  }
  // A sum's rule needs only the input's shape; the others read the input (and max/min the result).
  call.finish(
      {&x}, {&out}, {sum ? graph::nothing : graph::input(x), extreme ? graph::output(out) : graph::nothing},
      [&] {  // the captures are built only when a node is recorded
        return [op, mask, in_shape = x.shape()](graph::Saved s, graph::Tensors&& g) {
          Tensor gk = keep_dims(g[0], in_shape, mask);
          if (op == ReduceOp::Sum) return graph::Tensors{gk.expand(in_shape)};
          const Tensor& x = s[0];
          if (op == ReduceOp::Prod) return graph::Tensors{prod_backward(g[0], x, mask)};
          // max/min: shared evenly among the elements equal to the extreme.
          Tensor hit = x.eq(keep_dims(s[1], x.shape(), mask)).to(x.dtype());
          Dims dims = masked_dims(mask);
          Tensor count = dims.empty() ? hit : hit.sum(dims, true);
          return graph::Tensors{hit * gk / count};
        };
      },
      [&](const graph::Tensors& t) {
        Dims dims = masked_dims(mask);
        auto total = [&](const Tensor& v) {
          Tensor s = dims.empty() ? v : v.sum(dims, true);
          return keepdim ? s : s.reshape(Dims(out.shape().begin(), out.shape().end()));
        };
        if (op == ReduceOp::Sum) return graph::Tensors{total(t[0])};
        if (op == ReduceOp::Prod) return graph::Tensors{total(prod_backward(ones_like(out), x, mask) * t[0])};
        // max/min: the mean tangent of the elements equal to the extreme.
        Tensor hit = x.eq(keep_dims(out, x.shape(), mask)).to(x.dtype());
        return graph::Tensors{total(hit * t[0]) / total(hit)};
      });
  return out;
}

Tensor run_reduce(ReduceOp op, const Tensor& x, const Mask& mask, bool keepdim, DType out_dtype) {
  const graph::OpDef& def = kReduce[static_cast<int>(op)];
  if (op != ReduceOp::Max && op != ReduceOp::Min) return reduce_as(def, op, x, mask, keepdim, out_dtype);
  // Captured as amax/amin; a nested call (hidden from the capture) names the autograd node max/min.
  graph::OpCall call(def);
  Tensor out = reduce_as(op == ReduceOp::Max ? kMax : kMin, op, x, mask, keepdim, out_dtype);
  if (call.capturing()) call.set_attrs(reduce_attrs(mask, keepdim));
  call.finish({&x}, {&out});
  return out;
}

/** PyTorch's rule for sum, prod and the scans: bool and integers accumulate in int64. */
DType widened(DType t) { return is_inexact(t) ? t : DType::Int64; }

/** 16-bit floats are computed in float32 by the composed ops, then rounded once. */
DType compute_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }

void require_floating(const Tensor& x, const char* op) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("[", op, "] expected a floating point input, got dtype ", x.dtype(), " (shape ", x.shape(), ")");
}

Tensor sum_masked(const Tensor& x, const Mask& mask, bool keepdim, std::optional<DType> dtype) {
  if (autocast::applies(kReduce[static_cast<int>(ReduceOp::Sum)])) [[unlikely]]
    return autocast::call(kReduce[static_cast<int>(ReduceOp::Sum)], sum_masked, x, mask, keepdim, dtype);
  DType target = dtype.value_or(widened(x.dtype()));
  return run_reduce(ReduceOp::Sum, x.to(target), mask, keepdim, target);
}

Tensor prod_masked(const Tensor& x, const Mask& mask, bool keepdim, std::optional<DType> dtype) {
  if (autocast::applies(kReduce[static_cast<int>(ReduceOp::Prod)])) [[unlikely]]
    return autocast::call(kReduce[static_cast<int>(ReduceOp::Prod)], prod_masked, x, mask, keepdim, dtype);
  DType target = dtype.value_or(widened(x.dtype()));
  return run_reduce(ReduceOp::Prod, x.to(target), mask, keepdim, target);
}

Tensor mean_masked(const Tensor& x, const Mask& mask, bool keepdim, std::optional<DType> dtype) {
  if (autocast::applies(kMean)) [[unlikely]]
    return autocast::call(kMean, mean_masked, x, mask, keepdim, dtype);
  graph::OpCall call(kMean);
  DType target = dtype.value_or(x.dtype());
  if (!is_floating(target))
    fail<TypeError>("[mean] could not infer output dtype. Input dtype must be a floating point dtype, got ", x.dtype(),
                    " (shape ", x.shape(), "); pass dtype=float32 or convert the input");
  Tensor total = sum_masked(x, mask, keepdim, compute_dtype(target));
  Tensor out = total.div(static_cast<double>(reduced_count(x.shape(), mask))).to(target);
  if (call.capturing()) call.set_attrs(reduce_attrs(mask, keepdim));
  call.finish({&x}, {&out});
  return out;
}

Tensor extreme_masked(ReduceOp op, const Tensor& x, const Mask& mask, bool keepdim, const char* name) {
  check_nonempty(x, mask, name);
  return run_reduce(op, x, mask, keepdim, x.dtype());
}

Tensor logical_masked(ReduceOp op, const Tensor& x, const Mask& mask, bool keepdim) {
  Tensor r = run_reduce(op, x.to(DType::Bool), mask, keepdim, DType::Bool);
  return x.dtype() == DType::UInt8 ? r.to(DType::UInt8) : r;
}

/** Full max/min/argmax/argmin of nothing: PyTorch raises RuntimeError (IndexError for argmax/argmin). */
template <class E = RuntimeError> void check_full_nonempty(const Tensor& x, const char* op) {
  if (x.numel() == 0)
    fail<E>("[", op, "] expected reduction dim to be specified for input.numel() == 0 (shape ", x.shape(), ")");
}

std::pair<Tensor, Tensor> extreme_with_index(bool is_max, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = is_max ? "max" : "min";
  Mask mask = single_dim_mask(x, dim, name);
  check_nonempty(x, mask, name);
  Tensor indices = run_reduce(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, mask, keepdim, DType::Int64);
  if (x.dim() == 0) return {extreme_masked(is_max ? ReduceOp::Max : ReduceOp::Min, x, mask, keepdim, name), indices};
  // Reading the values at the indices gives PyTorch's gradient: all of it to the index.
  const int64_t d = wrap_dim(dim, x.dim(), name);
  Tensor at = keepdim ? indices : indices.unsqueeze(d);
  Tensor values = x.gather(d, at);
  return {keepdim ? values : values.squeeze(Dims{d}), indices};
}

Tensor arg_extreme(bool is_max, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  const char* name = is_max ? "argmax" : "argmin";
  ReduceOp op = is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin;
  if (x.dtype() == DType::Bool) fail<TypeError>("[", name, "] does not support bool input");
  if (dim) {
    Mask mask = single_dim_mask(x, *dim, name);
    check_nonempty(x, mask, name);
    return run_reduce(op, x, mask, keepdim, DType::Int64);
  }
  // Reducing every dim at once walks x in row-major order: the index into the flattened tensor.
  check_full_nonempty<IndexError>(x, name);
  return run_reduce(op, x, reduce_mask(x, {}, name), keepdim, DType::Int64);
}

Tensor var_impl(const Tensor& x, const std::optional<Dims>& dims, double correction, bool keepdim, const char* op) {
  if (is_complex(x.dtype())) [[unlikely]]
    return ops::complex_math::var(x, dims, correction, keepdim);
  require_floating(x, op);
  Mask mask = reduce_mask(x, dims.value_or(Dims{}), op);
  Tensor xc = x.to(compute_dtype(x.dtype()));
  // Two passes: squared deviations from the mean, which stays accurate for large offsets.
  Tensor dev = xc - mean_masked(xc, mask, true, {});
  Tensor squares = sum_masked(dev * dev, mask, keepdim, {});
  double denom = std::max(0.0, static_cast<double>(reduced_count(x.shape(), mask)) - correction);
  return squares.div(denom).to(x.dtype());
}

/** Where along d x has no zero yet, and where its first zero is: cumprod's derivatives past
 *  the first zero are exact products (torch's), not divisions by it. */
std::pair<Tensor, Tensor> before_and_at_first_zero(const Tensor& x, int64_t d) {
  const Tensor zero = x.eq(0), zeros_so_far = zero.cumsum(d);
  return {zeros_so_far.eq(0), zero.logical_and(zeros_so_far.eq(1))};
}

/** cumprod's gradient sum_{j >= k} g_j prod_{i <= j, i != k} x_i: before the first zero it is
 *  the running sum from the end of g y, over x_k; at the first zero the same with that zero
 *  taken as 1; after it 0 (every product holds the zero). */
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  auto from_end = [d](const Tensor& t) { return t.flip({d}).cumsum(d).flip({d}); };
  const auto [before, first] = before_and_at_first_zero(x, d);
  const Tensor at_first = from_end(g * where(first, 1.0, x).cumprod(d));
  return where(before, from_end(g * y) / where(before, x, 1.0), where(first, at_first, 0.0));
}

/** cumprod's tangent sum_{k <= j} t_k prod_{i <= j, i != k} x_i: y_j times the running sum of
 *  t / x before the first zero; from it on only that zero's term is left, the running product
 *  with the zero replaced by its tangent. */
Tensor cumprod_jvp(const Tensor& t, const Tensor& x, const Tensor& y, int64_t d) {
  const auto [before, first] = before_and_at_first_zero(x, d);
  return where(before, y * (t / where(before, x, 1.0)).cumsum(d), where(first, t, x).cumprod(d));
}

Tensor scan(ScanOp op, const Tensor& x, int64_t dim, const char* name) {
  if (is_complex(x.dtype())) [[unlikely]]
    return op == ScanOp::CumSum ? ops::complex_math::cumsum(x, dim) : ops::complex_math::cumprod(x, dim);
  const graph::OpDef& def = op == ScanOp::CumSum ? kCumsum : kCumprod;
  if (autocast::applies(def)) [[unlikely]]
    return autocast::call(def, scan, op, x, dim, name);
  graph::OpCall call(def);
  int64_t d = wrap_dim(dim, x.dim(), name);
  DType target = widened(x.dtype());
  Tensor src = x.to(target);
  Tensor out;
  if (int lvl = batching::level(src)) {
    out = batching::wrap(scan(op, batching::physical(src, lvl), d + 1, name), lvl);
  } else {
    out = empty(x.shape(), {.dtype = target, .device = x.device()});
    if (out.numel() == 0) return out;
    int64_t outer = 1, n = x.dim() > 0 ? x.size(d) : 1, inner = 1;
    for (int64_t i = 0; i < x.dim(); ++i) {
      if (i < d) outer *= x.size(i);
      if (i > d) inner *= x.size(i);
    }
    backend_for(x.device()).scan(op, src.contiguous(), outer, n, inner, out);
  }
  if (call.capturing()) {
    call.set_attrs({{"dim", d}});
    if (op == ScanOp::CumProd)  // ONNX has no cumulative product: a program calls it back
      call.set_replay(
          [d, name](const graph::Tensors& in) { return graph::Tensors{scan(ScanOp::CumProd, in[0], d, name)}; });
  }
  // A derivative exists only for floating x, and then src is x itself. A running sum's needs
  // neither (so its output may be written in place before backward, as in torch).
  const bool product = op == ScanOp::CumProd;
  call.finish(
      {&x}, {&out}, {product ? graph::input(src) : graph::nothing, product ? graph::output(out) : graph::nothing},
      [op, d](graph::Saved s, graph::Tensors&& g) {
        // The gradient of a running sum is the running sum of g taken from the end.
        if (op == ScanOp::CumSum) return graph::Tensors{g[0].flip({d}).cumsum(d).flip({d})};
        return graph::Tensors{cumprod_backward(g[0], s[0], s[1], d)};
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{op == ScanOp::CumSum ? t[0].cumsum(d) : cumprod_jvp(t[0], src, out, d)};
      });
  return out;
}

/** s ** (1 / p) (sqrt for p = 2) with torch's subgradient at s = 0: 0 where the root's own is
 *  infinite, so that the norm and std of zeros have a gradient of 0, not NaN. */
Tensor root_zero_grad(const Tensor& s, double p) {
  const Tensor zero = s.eq(0);
  const Tensor safe = where(zero, 1.0, s);
  return where(zero, std::pow(0.0, 1.0 / p), p == 2 ? safe.sqrt() : safe.pow(1.0 / p));
}

/** a ** p for a >= 0, with torch's subgradient 0 at a = 0 where p < 1 (the power's own is
 *  infinite there). */
Tensor power_zero_grad(const Tensor& a, double p) {
  if (p >= 1) return a.pow(p);
  const Tensor zero = a.eq(0);
  return where(zero, std::pow(0.0, p), where(zero, 1.0, a).pow(p));
}

/** softmax or log_softmax itself; softmax_impl's call records it as one op. */
Tensor softmax_untraced(const Tensor& x, int64_t dim, bool log, const char* op);

const graph::OpDef& softmax_def(bool log) { return log ? kLogSoftmax : kSoftmax; }

const graph::OpDef kSoftmaxBackward("softmax_backward"), kLogSoftmaxBackward("log_softmax_backward");

Tensor softmax_grad(const Tensor& g, const Tensor& y, bool log);

/** The input gradient of softmax (log: log_softmax) over the last dim of contiguous float32/
 *  float64 y from its output gradient g: the backend's fused kernel as an op of its own, so that
 *  backward, grad and a compiled program run the same kernel (a program calls it back; a file
 *  gets its formula) and a trace holds one node. Its own rule is written with ops, so higher
 *  derivatives work. */
Tensor softmax_backward_rows(const Tensor& g, const Tensor& y, bool log) {
  graph::OpCall call(log ? kLogSoftmaxBackward : kSoftmaxBackward);
  const int64_t cols = y.size(-1), rows = y.numel() / cols;
  Tensor dx = empty(y.shape(), {.dtype = y.dtype(), .device = y.device()});
  {
    NoGradGuard kernel_views;  // views that only feed the kernel: no nodes for them
    backend_for(y.device())
        .softmax_backward(g.contiguous().view({rows, cols}), y.view({rows, cols}), log, dx.view({rows, cols}));
  }
  if (call.capturing())  // a program run under vmap or jvp takes the formula
    call.set_replay([log](const graph::Tensors& in) { return graph::Tensors{softmax_grad(in[0], in[1], log)}; },
                    graph::ReplaySizes::None);
  call.finish(
      {&g, &y}, {&dx}, {graph::input(g), graph::input(y)},
      [log](graph::Saved s, graph::Tensors&& h) {
        // dx is linear in g with a symmetric Jacobian (softmax) or g - e^y sum(g) (log_softmax).
        const Tensor &g = s[0], &y = s[1];
        const Dims d{y.dim() - 1};
        if (log) {
          Tensor e = y.exp();
          return graph::Tensors{h[0] - (h[0] * e).sum(d, true), -(h[0] * e) * g.sum(d, true)};
        }
        return graph::Tensors{softmax_grad(h[0], y, false),
                              h[0] * (g - (g * y).sum(d, true)) - g * (h[0] * y).sum(d, true)};
      },
      graph::NoRule{});  // forward mode and vmap take softmax_grad's formula instead
  return dx;
}

/** softmax's input gradient: the fused op, or its formula with ops under forward mode and vmap
 *  (their rules are the ops'). */
Tensor softmax_grad(const Tensor& g, const Tensor& y, bool log) {
  if (!batching::max_level({&g, &y}) && !forward::active()) return softmax_backward_rows(g, y, log);
  const int64_t d = y.dim() - 1;
  return log ? g - y.exp() * g.sum(Dims{d}, true) : y * (g - (g * y).sum(Dims{d}, true));
}

/** softmax over rows of contiguous float32/float64 x (the reduced dim last): one backend
 *  kernel each way, the backward an op of its own (softmax_backward_rows). Its call is nested
 *  in softmax_impl's, so the capture sees one softmax. */
Tensor softmax_rows(const Tensor& x, int64_t cols, bool log) {
  graph::OpCall call(softmax_def(log));
  const int64_t rows = x.numel() / cols;
  Tensor y = empty(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  {
    NoGradGuard kernel_views;  // x's views only feed the kernel: no nodes for them
    backend_for(x.device()).softmax(x.contiguous().view({rows, cols}), log, y.view({rows, cols}));
  }
  // No forward rule: under forward mode softmax takes the composed path.
  call.finish(
      {&x}, {&y}, {graph::output(y)},
      [log](graph::Saved s, graph::Tensors&& g) { return graph::Tensors{softmax_grad(g[0], s[0], log)}; },
      graph::NoRule{});
  return y;
}

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log, const char* op) {
  if (autocast::applies(softmax_def(log))) [[unlikely]]
    return autocast::call(softmax_def(log), softmax_impl, x, dim, log, op);
  graph::OpCall call(softmax_def(log));
  Tensor out = softmax_untraced(x, dim, log, op);
  if (call.capturing()) call.set_attrs({{"dim", wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op)}});
  call.finish({&x}, {&out});
  return out;
}

Tensor softmax_untraced(const Tensor& x, int64_t dim, bool log, const char* op) {
  require_floating(x, op);
  Mask mask = single_dim_mask(x, dim, op);
  if (x.numel() == 0) return x.clone();
  const bool fused_dtype = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (fused_dtype && x.dim() > 0 && wrap_dim(dim, x.dim(), op) == x.dim() - 1 && !batching::level(x) &&
      !forward::active())
    return softmax_rows(x, x.size(-1), log);
  Tensor xc = x.to(compute_dtype(x.dtype()));
  // Subtracting the row max keeps exp() finite; a row of -inf gives NaN, as in PyTorch. The
  // shift records no gradient: softmax(x - c) is softmax(x) for any c, so the max's would
  // cancel, and saving x for it would refuse a later in-place write into x that torch allows.
  Tensor row_max;
  {
    NoGradGuard constant_shift;
    row_max = run_reduce(ReduceOp::Max, xc, mask, true, xc.dtype());
  }
  Tensor shifted = xc - row_max;
  Tensor e = shifted.exp();
  Tensor total = sum_masked(e, mask, true, {});
  Tensor r = log ? shifted - total.log() : e / total;
  return r.to(x.dtype());
}

}  // namespace

// ---- sums, products, means ----------------------------------------------------------------

Tensor sum(const Tensor& x, std::optional<DType> dtype) {
  if (is_complex(x.dtype())) [[unlikely]]
    return ops::complex_math::sum(dtype ? x.to(*dtype) : x, {}, false);
  return sum_masked(x, reduce_mask(x, {}, "sum"), false, dtype);
}
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(x.dtype())) [[unlikely]]
    return ops::complex_math::sum(dtype ? x.to(*dtype) : x, dims, keepdim);
  return sum_masked(x, reduce_mask(x, dims, "sum"), keepdim, dtype);
}
Tensor mean(const Tensor& x, std::optional<DType> dtype) {
  if (is_complex(x.dtype())) [[unlikely]]
    return ops::complex_math::mean(dtype ? x.to(*dtype) : x, {}, false);
  return mean_masked(x, reduce_mask(x, {}, "mean"), false, dtype);
}
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(x.dtype())) [[unlikely]]
    return ops::complex_math::mean(dtype ? x.to(*dtype) : x, dims, keepdim);
  return mean_masked(x, reduce_mask(x, dims, "mean"), keepdim, dtype);
}
Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  if (is_complex(dtype.value_or(x.dtype()))) [[unlikely]]
    return ops::complex_math::prod(dtype ? x.to(*dtype) : x, {}, false);
  return prod_masked(x, reduce_mask(x, {}, "prod"), false, dtype);
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(dtype.value_or(x.dtype()))) [[unlikely]]
    return ops::complex_math::prod(dtype ? x.to(*dtype) : x, {dim}, keepdim);
  return prod_masked(x, single_dim_mask(x, dim, "prod"), keepdim, dtype);
}

// ---- extremes -------------------------------------------------------------------------------

Tensor max(const Tensor& x) {
  check_full_nonempty(x, "max");
  return run_reduce(ReduceOp::Max, x, reduce_mask(x, {}, "max"), false, x.dtype());
}
Tensor min(const Tensor& x) {
  check_full_nonempty(x, "min");
  return run_reduce(ReduceOp::Min, x, reduce_mask(x, {}, "min"), false, x.dtype());
}
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_with_index(true, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_with_index(false, x, dim, keepdim);
}
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
  return extreme_masked(ReduceOp::Max, x, reduce_mask(x, dims, "amax"), keepdim, "amax");
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
  return extreme_masked(ReduceOp::Min, x, reduce_mask(x, dims, "amin"), keepdim, "amin");
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme(true, x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_extreme(false, x, dim, keepdim); }

// ---- statistics and norms ---------------------------------------------------------------------

Tensor var(const Tensor& x, const std::optional<Dims>& dims, double correction, bool keepdim) {
  return var_impl(x, dims, correction, keepdim, "var");
}
Tensor std(const Tensor& x, const std::optional<Dims>& dims, double correction, bool keepdim) {
  return root_zero_grad(var_impl(x, dims, correction, keepdim, "std"), 2);
}

Tensor norm(const Tensor& x, Scalar p, const std::optional<Dims>& dims, bool keepdim) {
  if (is_complex(x.dtype())) [[unlikely]]
    return norm(x.abs(), p, dims, keepdim);
  require_floating(x, "norm");
  Mask mask = reduce_mask(x, dims.value_or(Dims{}), "norm");
  Tensor a = x.to(compute_dtype(x.dtype())).abs();
  const double pv = p.to_double();
  constexpr double inf = std::numeric_limits<double>::infinity();
  Tensor r;
  if (pv == inf) r = extreme_masked(ReduceOp::Max, a, mask, keepdim, "norm");
  else if (pv == -inf) r = extreme_masked(ReduceOp::Min, a, mask, keepdim, "norm");
  else if (pv == 0) r = sum_masked(a.ne(0).to(a.dtype()), mask, keepdim, {});
  else if (pv == 1) r = sum_masked(a, mask, keepdim, {});
  else if (pv == 2) r = root_zero_grad(sum_masked(a * a, mask, keepdim, {}), 2);
  else r = root_zero_grad(sum_masked(power_zero_grad(a, pv), mask, keepdim, {}), pv);
  return r.to(x.dtype());
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  const DType out_dtype = to_floating(x.dtype());
  Tensor xc = x.to(compute_dtype(out_dtype));
  Mask mask = reduce_mask(x, dims, "logsumexp");
  if (reduced_count(x.shape(), mask) == 0)  // an empty sum: log(0) = -inf
    return sum_masked(xc, mask, keepdim, {}).fill_(-std::numeric_limits<double>::infinity()).to(out_dtype);
  // Shift by the max; an infinite max is left unshifted so +-inf rows stay +-inf.
  Tensor m = run_reduce(ReduceOp::Max, xc, mask, true, xc.dtype());
  m = where(m.isinf(), 0.0, m);
  Tensor r = sum_masked((xc - m).exp(), mask, keepdim, {}).log();
  return (r + m.reshape(reduced_shape(x.shape(), mask, keepdim))).to(out_dtype);
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false, "softmax"); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true, "log_softmax"); }

Tensor cumsum(const Tensor& x, int64_t dim) { return scan(ScanOp::CumSum, x, dim, "cumsum"); }
Tensor cumprod(const Tensor& x, int64_t dim) { return scan(ScanOp::CumProd, x, dim, "cumprod"); }

namespace {
Tensor scan_as(ScanOp op, const Tensor& x, int64_t dim, std::optional<DType> dtype, const char* name) {
  if (!dtype) return scan(op, x, dim, name);
  if (*dtype == DType::Bool) fail<RuntimeError>("[", name, "] dtype bool is not supported (as in torch)");
  // The scan widens integers to int64; casting back wraps as torch's scan in the narrow type.
  return scan(op, x.to(*dtype), dim, name).to(*dtype);
}
}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_as(ScanOp::CumSum, x, dim, dtype, "cumsum");
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_as(ScanOp::CumProd, x, dim, dtype, "cumprod");
}

// ---- logical --------------------------------------------------------------------------------

Tensor all(const Tensor& x) { return logical_masked(ReduceOp::All, x, reduce_mask(x, {}, "all"), false); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  return logical_masked(ReduceOp::All, x, single_dim_mask(x, dim, "all"), keepdim);
}
Tensor any(const Tensor& x) { return logical_masked(ReduceOp::Any, x, reduce_mask(x, {}, "any"), false); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  return logical_masked(ReduceOp::Any, x, single_dim_mask(x, dim, "any"), keepdim);
}

namespace {
Tensor logical_over(ReduceOp op, const Tensor& x, const Dims& dims, bool keepdim, const char* name) {
  if (dims.empty()) return x.dtype() == DType::UInt8 ? x.ne(0).to(DType::UInt8) : x.to(DType::Bool);
  return logical_masked(op, x, reduce_mask(x, dims, name), keepdim);
}
}  // namespace

Tensor all(const Tensor& x, const Dims& dims, bool keepdim) {
  return logical_over(ReduceOp::All, x, dims, keepdim, "all");
}
Tensor any(const Tensor& x, const Dims& dims, bool keepdim) {
  return logical_over(ReduceOp::Any, x, dims, keepdim, "any");
}

// ---- Tensor methods ---------------------------------------------------------------------------

Tensor Tensor::sum(std::optional<DType> dtype) const { return ug::sum(*this, dtype); }
Tensor Tensor::sum(const Dims& dims, bool keepdim, std::optional<DType> dtype) const {
  return ug::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return ug::mean(*this, dtype); }
Tensor Tensor::mean(const Dims& dims, bool keepdim, std::optional<DType> dtype) const {
  return ug::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<DType> dtype) const { return ug::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  return ug::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return ug::max(*this); }
std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return ug::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return ug::min(*this); }
std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return ug::min(*this, dim, keepdim); }
Tensor Tensor::amax(const Dims& dims, bool keepdim) const { return ug::amax(*this, dims, keepdim); }
Tensor Tensor::amin(const Dims& dims, bool keepdim) const { return ug::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return ug::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return ug::argmin(*this, dim, keepdim); }
Tensor Tensor::var(const std::optional<Dims>& dims, double correction, bool keepdim) const {
  return ug::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(const std::optional<Dims>& dims, double correction, bool keepdim) const {
  return ug::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(Scalar p, const std::optional<Dims>& dims, bool keepdim) const {
  return ug::norm(*this, p, dims, keepdim);
}
Tensor Tensor::logsumexp(const Dims& dims, bool keepdim) const { return ug::logsumexp(*this, dims, keepdim); }
Tensor Tensor::softmax(int64_t dim) const { return ug::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return ug::log_softmax(*this, dim); }
Tensor Tensor::cumsum(int64_t dim) const { return ug::cumsum(*this, dim); }
Tensor Tensor::cumprod(int64_t dim) const { return ug::cumprod(*this, dim); }
Tensor Tensor::all() const { return ug::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return ug::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return ug::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return ug::any(*this, dim, keepdim); }

}  // namespace ug
