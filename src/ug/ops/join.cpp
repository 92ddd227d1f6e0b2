// Joining and padding. cat copies each input into its slice of one fresh output; constant
// padding does the same into a filled output, and the other pad modes gather each padded
// dim through an index of source positions.
#include "ug/ops/join.h"

#include <algorithm>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/rules.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"

namespace ug {

namespace {

const graph::OpDef kCat("cat"), kPad("pad");

void check_not_empty(const std::vector<Tensor>& tensors, const char* op) {
  if (tensors.empty()) fail("[", op, "] expected a non-empty list of tensors");
}

/** torch's legacy rule: a 1-d empty tensor may join tensors of any shape, and is skipped. */
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

void check_cat_part(const Tensor& first, const Tensor& t, int64_t dim, size_t i) {
  if (t.dim() == 0) fail("[cat] zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  if (t.dim() != first.dim())
    fail("[cat] tensors must have the same number of dimensions: got ", first.dim(), " and ", t.dim(), " (shapes ",
         first.shape(), " and ", t.shape(), " at position ", i, ")");
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim && t.size(d) != first.size(d))
      fail("[cat] sizes of tensors must match except in dimension ", dim, ": expected size ", first.size(d),
           " but got size ", t.size(d), " for tensor number ", i, " in the list (shapes ", first.shape(), " and ",
           t.shape(), ")");
}

enum class PadMode { Constant, Reflect, Replicate, Circular };

PadMode parse_pad_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  fail("[pad] mode must be 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'");
}

/** The padding of one dim: `left` elements before it and `right` after (negative crops). */
struct DimPad {
  int64_t dim, left, right;
};

std::vector<DimPad> dim_pads(const Tensor& x, const Dims& pads) {
  if (pads.size() % 2 != 0) fail("[pad] padding length must be divisible by 2, got ", pads.size());
  const int64_t n = static_cast<int64_t>(pads.size()) / 2;
  if (n > x.dim())
    fail("[pad] padding length too large: ", pads.size(), " values pad ", n, " dims of a tensor of shape ", x.shape());
  std::vector<DimPad> out;
  for (int64_t i = 0; i < n; ++i) {
    DimPad p{x.dim() - 1 - i, pads[2 * i], pads[2 * i + 1]};
    if (x.size(p.dim) + p.left + p.right < 0)
      fail("[pad] the input size ", x.size(p.dim), " plus padding (", p.left, ", ", p.right,
           ") gives a negative output size at dimension ", p.dim, " of input ", x.shape());
    out.push_back(p);
  }
  return out;
}

Tensor pad_constant(const Tensor& x, const std::vector<DimPad>& pads, Scalar value) {
  graph::OpCall call(kPad);  // nested in pad()'s call: it records the derivatives only
  Shape shape = x.shape();
  for (const DimPad& p : pads) shape[p.dim] += p.left + p.right;
  // The part of x that survives cropping goes to its place in out: the gradient is that
  // same part of the output's gradient, embedded back into x's shape.
  std::vector<std::pair<int64_t, int64_t>> src_ranges, dst_ranges;  // (start, length) per pad
  for (const DimPad& p : pads) {
    const int64_t keep = x.size(p.dim) - std::max<int64_t>(-p.left, 0) - std::max<int64_t>(-p.right, 0);
    if (keep <= 0) {  // nothing of x survives
      const Tensor out = full(shape, value, {.dtype = x.dtype(), .device = x.device()});
      return autograd::needs_grad({&x}) ? out + x.sum() * 0 : out;
    }
    src_ranges.push_back({std::max<int64_t>(-p.left, 0), keep});
    dst_ranges.push_back({std::max<int64_t>(p.left, 0), keep});
  }
  auto part = [pads](const Tensor& t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
    Tensor v = t;
    for (size_t i = 0; i < pads.size(); ++i) v = v.narrow(pads[i].dim, ranges[i].first, ranges[i].second);
    return v;
  };
  Tensor out;
  if (const int lvl = batching::level(x)) {
    // Every example padded alike. Pads count dims from the last, so the physical tensor takes
    // the same ones, through pad(), whose call a program's graph can emit (jit of vmap).
    Dims flat;
    for (const DimPad& p : pads) {
      flat.push_back(p.left);
      flat.push_back(p.right);
    }
    out = batching::wrap(pad(batching::physical(x, lvl), flat, "constant", value), lvl);
  } else {
    out = full(shape, value, {.dtype = x.dtype(), .device = x.device()});
    NoGradGuard no_grad;
    backend_for(x.device()).copy(part(x, src_ranges), part(out, dst_ranges));  // the op records itself below
  }
  call.finish(
      {&x}, {&out}, {},
      [&] {  // the captures are built only when a node is recorded
        return [part, dst_ranges, src_ranges, in_shape = x.shape()](graph::Saved, graph::Tensors&& g) {
          auto source_part = [part, src_ranges](const Tensor& t) { return part(t, src_ranges); };
          return graph::Tensors{autograd::embed(part(g[0], dst_ranges), in_shape, source_part)};
        };
      },
      [&](const graph::Tensors& t) { return graph::Tensors{pad_constant(t[0], pads, 0)}; });
  return out;
}

void check_pad_fits(PadMode mode, int64_t size, const DimPad& p, const Shape& shape) {
  if (mode == PadMode::Reflect && (p.left >= size || p.right >= size))
    fail("[pad] reflect padding (", p.left, ", ", p.right, ") must be less than the size ", size, " of dimension ",
         p.dim, " of input ", shape);
  if (mode == PadMode::Replicate && size == 0)
    fail("[pad] replicate padding needs a non-empty dimension; dimension ", p.dim, " of input ", shape, " is empty");
  if (mode == PadMode::Circular && (p.left > size || p.right > size))
    fail("[pad] circular padding (", p.left, ", ", p.right, ") would wrap around dimension ", p.dim, " of input ",
         shape, " more than once");
}

/** For each output position along a padded dim, the input position it copies. */
Tensor source_positions(PadMode mode, int64_t size, const DimPad& p, Device device) {
  Tensor i = arange(-p.left, size + p.right, 1, {.dtype = DType::Int64, .device = device});
  switch (mode) {
    case PadMode::Reflect: return (size - 1) - ((size - 1) - i.abs()).abs();
    case PadMode::Replicate: return i.clamp(Scalar(0), Scalar(size - 1));
    default: return i.remainder(size);
  }
}

/** pad() itself; the public pad's call captures it as one op. */
Tensor pad_impl(const Tensor& x, const Dims& pads, std::string_view mode, std::optional<Scalar> value) {
  const PadMode m = parse_pad_mode(mode);
  const std::vector<DimPad> dims = dim_pads(x, pads);
  if (m == PadMode::Constant) return pad_constant(x, dims, value.value_or(Scalar(0)));
  if (value) fail("[pad] padding mode '", mode, "' doesn't take a value argument");
  Tensor out = x;
  for (const DimPad& p : dims) {
    if (p.left == 0 && p.right == 0) continue;
    check_pad_fits(m, x.size(p.dim), p, x.shape());
    out = index_select(out, p.dim, source_positions(m, x.size(p.dim), p, x.device()));
  }
  return out.shares_storage(x) ? out.clone() : out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  graph::OpCall call(kCat);
  check_not_empty(tensors, "cat");
  DType dtype = tensors[0].dtype();
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (t.device() != tensors[0].device())
      fail<RuntimeError>("[cat] expected all tensors on one device, got ", tensors[0].device(), " and ", t.device());
    dtype = promote_types(dtype, t.dtype());
    if (!first && !is_legacy_empty(t)) first = &t;
  }
  if (!first) return empty({0}, {.dtype = dtype, .device = tensors[0].device()});
  const int64_t d = wrap_dim(dim, first->dim(), "cat");
  Shape shape = first->shape();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (is_legacy_empty(tensors[i])) continue;
    check_cat_part(*first, tensors[i], d, i);
    shape[d] += tensors[i].size(d);
  }
  int lvl = 0;
  for (const Tensor& t : tensors) lvl = std::max(lvl, batching::level(t));
  Tensor out;
  if (lvl) {
    // vmap: every part gets the batch dim (shared parts are repeated), then one cat past it.
    std::vector<Tensor> phys;
    int64_t v = 0;
    for (const Tensor& t : tensors)
      if (batching::level(t) == lvl) v = batching::physical(t, lvl).size(0);
    for (const Tensor& t : tensors) {
      if (is_legacy_empty(t)) continue;
      Tensor p = batching::physical(t, lvl);
      if (batching::level(t) != lvl) {
        Dims target{v};
        for (int64_t s : t.shape()) target.push_back(s);
        p = t.unsqueeze(0).expand(target);
      }
      phys.push_back(p.to(dtype));
    }
    out = batching::wrap(cat(phys, d + 1), lvl);
  } else {
    out = empty(shape, {.dtype = dtype, .device = first->device()});
  }
  std::vector<Tensor> parts;
  Dims sizes;
  std::vector<DType> dtypes;
  for (const Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    parts.push_back(t);
    sizes.push_back(t.size(d));
    dtypes.push_back(t.dtype());
  }
  if (!lvl) {
    NoGradGuard no_grad;  // the copies are the op's own business; it records itself below
    int64_t at = 0;
    for (const Tensor& t : tensors) {
      if (is_legacy_empty(t)) continue;
      backend_for(out.device()).copy(t, out.narrow(d, at, t.size(d)));
      at += t.size(d);
    }
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : parts) inputs.push_back(&t);
  if (call.capturing()) call.set_attrs({{"dim", d}});
  call.finish(
      inputs, {&out}, {},
      [&] {  // the captures are built only when a node is recorded
        return [d, sizes, dtypes](graph::Saved, graph::Tensors&& g) {
          graph::Tensors grads;
          int64_t at = 0;
          for (size_t i = 0; i < sizes.size(); ++i) {
            grads.push_back(g[0].narrow(d, at, sizes[i]).to(dtypes[i]));
            at += sizes[i];
          }
          return grads;
        };
      },
      [&](const graph::Tensors& t) {
        graph::Tensors tangents;
        for (size_t i = 0; i < parts.size(); ++i)
          tangents.push_back(t[i].defined() ? t[i].to(dtype) : zeros_like(parts[i], {.dtype = dtype}));
        return graph::Tensors{cat(tangents, d)};
      });
  return out;
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) { return cat(tensors, dim); }

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  check_not_empty(tensors, "stack");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!(tensors[i].shape() == tensors[0].shape()))
      fail("[stack] expects each tensor to be equal size, but got ", tensors[0].shape(), " at entry 0 and ",
           tensors[i].shape(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

Tensor atleast_1d(const Tensor& x) { return x.dim() == 0 ? x.reshape({1}) : x; }

Tensor atleast_2d(const Tensor& x) {
  if (x.dim() == 0) return x.reshape({1, 1});
  return x.dim() == 1 ? x.unsqueeze(0) : x;
}

Tensor atleast_3d(const Tensor& x) {
  if (x.dim() == 0) return x.reshape({1, 1, 1});
  if (x.dim() == 1) return x.unsqueeze(0).unsqueeze(2);
  return x.dim() == 2 ? x.unsqueeze(2) : x;
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  check_not_empty(tensors, "hstack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_1d(t));
  return cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  check_not_empty(tensors, "vstack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_2d(t));
  return cat(parts, 0);
}

Tensor dstack(const std::vector<Tensor>& tensors) {
  check_not_empty(tensors, "dstack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_3d(t));
  return cat(parts, 2);
}

Tensor pad(const Tensor& x, const Dims& pads, std::string_view mode, std::optional<Scalar> value) {
  graph::OpCall call(kPad);
  Tensor out = pad_impl(x, pads, mode, value);
  if (call.capturing())
    call.set_attrs({{"pads", std::vector<int64_t>(pads.begin(), pads.end())},
                    {"mode", std::string(mode)},
                    {"value", value ? value->to_double() : 0.0}});
  call.finish({&x}, {&out});
  return out;
}

}  // namespace ug
