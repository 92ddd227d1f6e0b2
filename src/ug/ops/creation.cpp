// Tensor factories: empty/zeros/ones/full and their _like forms, nested lists, ranges, eye.
#include <cmath>
#include <cstdint>
#include <functional>

#include "ug/backend/backend.h"
#include "ug/core/tensor.h"
#include "ug/graph/op_call.h"

namespace ug {

Tensor full(const Dims& shape, Scalar value, Options opts) {
  if (!opts.dtype) opts.dtype = value.default_dtype();
  Tensor t = empty(shape, opts);
  backend_for(opts.device).fill(t, value);
  return t;
}

Tensor zeros(const Dims& shape, Options opts) {
  return full(shape, 0, {opts.dtype.value_or(get_default_dtype()), opts.device});
}
Tensor ones(const Dims& shape, Options opts) {
  return full(shape, 1, {opts.dtype.value_or(get_default_dtype()), opts.device});
}

namespace {
Options like(const Tensor& t, Options opts) { return {opts.dtype.value_or(t.dtype()), opts.device}; }
}  // namespace

namespace {
/** Inside vmap, a tensor made "like" a batched one is batched too (one per example). */
Tensor like_batched(const Tensor& t, const std::function<Tensor(const Tensor&)>& make) {
  const int lvl = batching::level(t);
  return lvl ? batching::wrap(make(batching::physical(t, lvl)), lvl) : make(t);
}
}  // namespace

Tensor empty_like(const Tensor& t, Options opts) {
  return like_batched(t, [&](const Tensor& p) { return empty(p.shape(), like(p, opts)); });
}
Tensor zeros_like(const Tensor& t, Options opts) {
  return full_like(t, 0, {.dtype = opts.dtype.value_or(t.dtype()), .device = opts.device});
}
Tensor ones_like(const Tensor& t, Options opts) {
  return full_like(t, 1, {.dtype = opts.dtype.value_or(t.dtype()), .device = opts.device});
}

namespace {
// Captured, unlike the other factories: its shape follows t's, so it must follow a dynamic batch.
const graph::OpDef kFullLike("full_like");
}  // namespace

Tensor full_like(const Tensor& t, Scalar value, Options opts) {
  graph::OpCall call(kFullLike);
  // Batched: full_like of the physical tensor, a call the capture keeps as this one's part, so
  // a program can make the physical value (the per-example seed of grad under vmap).
  Tensor out = like_batched(t, [&](const Tensor& p) {
    return batching::level(t) ? full_like(p, value, opts) : full(p.shape(), value, like(p, opts));
  });
  if (call.capturing()) call.set_attrs({{"value", value.to_double()}});
  call.finish({&t}, {&out});
  return out;
}

Tensor scalar_tensor(Scalar value, Options opts) { return full({}, value, opts); }

namespace {

void infer_nested(const NestedList& v, size_t depth, Shape& shape, size_t& leaf_depth, DTypeCategory& cat) {
  if (v.is_scalar()) {
    if (leaf_depth == SIZE_MAX) leaf_depth = depth;
    if (depth != leaf_depth || depth != shape.size()) fail("[tensor] nested list is ragged: a number at depth ", depth);
    cat = std::max(cat, v.scalar().category());
    return;
  }
  const auto& items = v.items();
  if (depth >= leaf_depth)
    fail<TypeError>("[tensor] nested list is ragged: a list where a number was expected (depth ", depth, ")");
  if (depth == shape.size()) shape.push_back(static_cast<int64_t>(items.size()));
  else if (shape[depth] != static_cast<int64_t>(items.size()))
    fail("[tensor] nested list is ragged: expected ", shape[depth], " items at depth ", depth, ", got ", items.size());
  for (const auto& item : items) infer_nested(item, depth + 1, shape, leaf_depth, cat);
}

template <class T> void fill_nested(const NestedList& v, T*& out) {
  if (v.is_scalar()) {
    *out++ = v.scalar().to<T>();
    return;
  }
  for (const auto& item : v.items()) fill_nested(item, out);
}

}  // namespace

Tensor tensor(const NestedList& values, Options opts) {
  Shape shape;
  DTypeCategory cat = DTypeCategory::Bool;
  size_t leaf_depth = SIZE_MAX;
  infer_nested(values, 0, shape, leaf_depth, cat);
  if (numel_of(shape) == 0) cat = DTypeCategory::Floating;  // tensor([]) is floating, as in PyTorch
  DType dtype = opts.dtype.value_or(default_dtype_for(cat));
  Tensor cpu = empty(Dims(shape.begin(), shape.end()), {.dtype = dtype});
  UG_DISPATCH_ALL_AND_SHELLS(dtype, "tensor", {
    scalar_t* p = static_cast<scalar_t*>(cpu.raw_data());
    fill_nested(values, p);
  });
  return cpu.to(opts.device);
}

Tensor arange(Scalar end, Options opts) { return arange(0, end, 1, opts); }

Tensor arange(Scalar start, Scalar end, Scalar step, Options opts) {
  const bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  DType dtype = opts.dtype.value_or(all_int ? DType::Int64 : get_default_dtype());
  double s = start.to_double(), e = end.to_double(), d = step.to_double();
  if (d == 0) fail("[arange] step must be nonzero");
  if ((d > 0 && s > e) || (d < 0 && s < e))
    fail("[arange] upper bound and step have inconsistent signs: start=", start, " end=", end, " step=", step);
  int64_t n = all_int ? (end.to_int() - start.to_int() + step.to_int() - (d > 0 ? 1 : -1)) / step.to_int()
                      : static_cast<int64_t>(std::ceil((e - s) / d));
  Tensor out = empty({std::max<int64_t>(n, 0)}, {.dtype = dtype});
  UG_DISPATCH_ALL(dtype, "arange", {
    scalar_t* p = static_cast<scalar_t*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (all_int) p[i] = static_cast<scalar_t>(static_cast<acc_t<scalar_t>>(start.to_int() + i * step.to_int()));
      else p[i] = static_cast<scalar_t>(static_cast<acc_t<scalar_t>>(s + static_cast<double>(i) * d));
    }
  });
  return out.to(opts.device);
}

Tensor linspace(double start, double end, int64_t steps, Options opts) {
  if (steps < 0) fail("[linspace] number of steps must be non-negative, got ", steps);
  DType dtype = opts.dtype.value_or(get_default_dtype());
  Tensor out = empty({steps}, {.dtype = dtype});
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  UG_DISPATCH_ALL(dtype, "linspace", {
    scalar_t* p = static_cast<scalar_t*>(out.raw_data());
    // Like PyTorch: the first half counts up from start, the second half down from end.
    for (int64_t i = 0; i < steps; ++i) {
      double v = i < half || steps == 1 ? start + step * static_cast<double>(i)
                                        : end - step * static_cast<double>(steps - i - 1);
      p[i] = static_cast<scalar_t>(static_cast<acc_t<scalar_t>>(v));
    }
  });
  return out.to(opts.device);
}

Tensor eye(int64_t n, std::optional<int64_t> m, Options opts) {
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) fail("[eye] sizes must be non-negative, got ", n, " and ", cols);
  Tensor out = zeros({n, cols}, {opts.dtype.value_or(get_default_dtype()), {}});
  auto ones_on_diagonal = [&]<class T>() {
    T* p = static_cast<T*>(out.raw_data());
    for (int64_t i = 0; i < std::min(n, cols); ++i) p[i * cols + i] = static_cast<T>(1);
  };
  if (is_complex(out.dtype())) {
    UG_DISPATCH_COMPLEX(out.dtype(), "eye", ones_on_diagonal.operator()<scalar_t>());
  } else {
    UG_DISPATCH_ALL(out.dtype(), "eye", ones_on_diagonal.operator()<scalar_t>());
  }
  return out.to(opts.device);
}

}  // namespace ug
