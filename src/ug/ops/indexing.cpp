// Indexing: t[...] (ints, slices, None and ... give views; tensor, mask and bool indices
// copy), assignment through an index, and gather/scatter/index_select/mask ops. Shapes,
// dtypes and index ranges are checked here, so the kernels can trust their operands.
#include "ug/ops/indexing.h"

#include <algorithm>
#include <sstream>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/inplace_history.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/join.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

bool is_index_dtype(DType t) { return t == DType::Int64 || t == DType::Int32; }
bool is_mask_dtype(DType t) { return t == DType::Bool || t == DType::UInt8; }

/** True when a tensor of shape `from` expands to `to` (NumPy broadcasting, one way). */
bool expandable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

/** idx with its negative entries counted from the end (n + i); `lowest` is its least entry.
 *  Under a capture the wrap is an op of the graph, as a program's later indices may be
 *  negative: there an entry below -n stays as it is, for the op reading it to refuse at the
 *  run (wrapped once, it would be a valid negative index that the op wraps again). */
Tensor wrap_from_end(const Tensor& idx, int64_t n, int64_t lowest) {
  if (graph::detail::current_capture) return where(idx.lt(0).logical_and(idx.ge(-n)), idx.add(n), idx);
  return lowest < 0 ? where(idx.lt(0), idx.add(n), idx) : idx;
}

/** index as int64 after checking that every entry lies in [-n, n) (or [0, n) when negatives
 *  are not allowed); negative entries are wrapped to count from the end. */
Tensor checked_index(const Tensor& index, int64_t n, int64_t dim, bool allow_negative, const char* op) {
  Tensor idx = index.to(DType::Int64);
  if (idx.numel() == 0) return idx;
  const auto [lo, hi] = ops::integer_range(idx);
  const int64_t lowest = allow_negative ? -n : 0;
  if (lo < lowest || hi >= n)
    fail<IndexError>("[", op, "] index ", lo < lowest ? lo : hi, " is out of bounds for dimension ", dim, " with size ",
                     n);
  return wrap_from_end(idx, n, lo);
}

/** An index that picks along `dim` of a tensor shaped like `like`: [n] -> [1.., n, 1..] expanded. */
Tensor along(const Tensor& index, int64_t dim, const Shape& like) {
  Dims shape(like.size(), 1);
  shape[dim] = index.numel();
  return index.reshape(shape).expand(like);
}

const graph::OpDef kIndexSelect("index_select"), kGather("gather"), kScatter("scatter"), kScatterAdd("scatter_add"),
    kIndexPut("index_put_"), kMaskedFill("masked_fill_"), kNonzero("nonzero");

/** x.index_select(dim, index) for a checked 1-d int64 index. The gradient adds each row of
 *  g back where it came from (rows picked twice get both). */
Tensor select_rows(const Tensor& x, int64_t dim, const Tensor& index) {
  graph::OpCall call(kIndexSelect);
  Shape shape = x.shape();
  shape[dim] = index.numel();
  Tensor out;
  if (const int lvl = batching::max_level({&x, &index})) {
    const Tensor px = batching::physical(x, lvl), pi = batching::physical(index, lvl);
    if (batching::level(index) != lvl) {  // a shared index picks the same rows of every example
      out = select_rows(px, dim + 1, index);
    } else {  // each example's own rows: one index into the rows of all examples laid end to end
      const int64_t examples = pi.size(0), picked = pi.size(1);
      Tensor rows = px, at = pi;
      if (batching::level(x) == lvl) {
        rows = px.movedim(0, dim).flatten(dim, dim + 1);
        at = pi + arange(examples, {.dtype = DType::Int64, .device = pi.device()}).unsqueeze(1) * x.size(dim);
      }
      out = select_rows(rows, dim, at.reshape({-1})).unflatten(dim, {examples, picked}).movedim(dim, 0);
    }
    out = batching::wrap(out, lvl);
  } else {
    out = empty(shape, {.dtype = x.dtype(), .device = x.device()});
    if (out.numel() > 0) backend_for(x.device()).index_select(x, dim, index, out);
  }
  if (call.capturing()) call.set_attrs({{"dim", dim}});
  call.finish(
      {&x, &index}, {&out}, {},
      [&] {  // the captures are built only when a node is recorded
        return [dim, index, in_shape = x.shape()](graph::Saved, graph::Tensors&& g) {
          Tensor zero = zeros(in_shape, {.dtype = g[0].dtype(), .device = g[0].device()});
          return graph::Tensors{zero.scatter_add(dim, along(index, dim, g[0].shape()), g[0]), Tensor()};
        };
      },
      [&](const graph::Tensors& t) { return graph::Tensors{select_rows(t[0], dim, index)}; });
  return out;
}

// ---- t[...]: the basic part as views, then the tensor indices ---------------------------

template <class... F> struct Overloaded : F... { using F::operator()...; };
template <class... F> Overloaded(F...) -> Overloaded<F...>;  // clang before 17 does not deduce aggregates by itself

/** How many dims of the indexed tensor an entry consumes. */
int64_t dims_used(const TensorIndex& entry) {
  if (const Tensor* t = std::get_if<Tensor>(&entry.value)) return is_mask_dtype(t->dtype()) ? t->dim() : 1;
  return std::holds_alternative<int64_t>(entry.value) || std::holds_alternative<Slice>(entry.value);
}

/** An index expression applied entry by entry: ints, slices and None reshape `view`; tensor
 *  indices (and masks and bools, which become them) are collected with the dim they index. */
struct IndexPlan {
  Tensor view;
  std::vector<int64_t> dims;    // dims of `view` indexed by tensors, ascending
  std::vector<Tensor> indices;  // int64 or int32, not yet range-checked
  int64_t next_dim = 0;         // the dim of `view` the next entry applies to

  void add_int(int64_t i) {
    const int64_t n = view.size(next_dim);
    if (i < -n || i >= n)
      fail<IndexError>("[index] index ", i, " is out of bounds for dimension ", next_dim, " with size ", n);
    view = view.select(next_dim, i);
  }
  void add_slice(const Slice& s) {
    if (s.step <= 0) fail("[index] slice step must be greater than zero, got ", s.step);
    view = view.slice(next_dim++, s.start, s.stop, s.step);
  }
  void add_none() { view = view.unsqueeze(next_dim++); }
  /** As in torch: a new size-1 dim, indexed by [0] for true and by nothing for false. */
  void add_bool(bool b) {
    view = view.unsqueeze(next_dim);
    const Options opts{.dtype = DType::Int64, .device = view.device()};
    add_tensor_index(b ? zeros({1}, opts) : empty({0}, opts));
  }
  void add_tensor_index(Tensor index) {
    dims.push_back(next_dim++);
    indices.push_back(std::move(index));
  }
  /** A k-d mask indexes k dims by the coordinates of its true elements. */
  void add_mask(const Tensor& mask) {
    for (int64_t j = 0; j < mask.dim(); ++j)
      if (mask.size(j) != view.size(next_dim + j))
        fail<IndexError>("[index] the shape of the mask ", mask.shape(), " at index ", j,
                         " does not match the shape of the indexed tensor ", view.shape(), " at index ", next_dim + j);
    Tensor coords = mask.nonzero();
    for (int64_t j = 0; j < mask.dim(); ++j) add_tensor_index(coords.select(1, j));
  }
  void add_tensor(const Tensor& t) {
    // Under a capture a 0-d index stays a tensor, which a program reads at every run: a gather
    // for an integer, a mask (whose count of true elements, and so the shape, depends on the
    // data: refused as nonzero is) for a bool, rather than the trace's value frozen in. So does
    // an integer one under vmap (x[v.argmax()]): each example's own.
    const bool capturing = graph::detail::current_capture != nullptr;
    if (is_mask_dtype(t.dtype())) {
      if (t.dim() == 0 && !capturing) add_bool(t.item<bool>());
      else if (t.dim() == 0) {
        view = view.unsqueeze(next_dim);
        add_mask(t.reshape({1}));
      } else add_mask(t);
    } else if (is_index_dtype(t.dtype())) {
      if (t.dim() == 0 && !capturing && !batching::level(t)) add_int(t.item<int64_t>());  // torch: as an int
      else add_tensor_index(t);
    } else {
      fail<IndexError>("[index] tensors used as indices must be int64, int32, uint8 or bool, got ", t.dtype());
    }
  }
};

IndexPlan plan_index(const Tensor& x, const std::vector<TensorIndex>& entries) {
  int64_t used = 0, ellipses = 0;
  for (const TensorIndex& e : entries) {
    used += dims_used(e);
    ellipses += std::holds_alternative<EllipsisIndex>(e.value);
  }
  if (ellipses > 1) fail<IndexError>("[index] an index can only have a single ellipsis ('...')");
  if (used > x.dim())
    fail<IndexError>("[index] too many indices for tensor of dimension ", x.dim(), " (", used, " dims indexed, shape ",
                     x.shape(), ")");
  IndexPlan plan;
  plan.view = x;
  for (const TensorIndex& e : entries)
    std::visit(Overloaded{[&](int64_t i) { plan.add_int(i); }, [&](const Slice& s) { plan.add_slice(s); },
                          [&](NoneIndex) { plan.add_none(); }, [&](EllipsisIndex) { plan.next_dim += x.dim() - used; },
                          [&](bool b) { plan.add_bool(b); }, [&](const Tensor& t) { plan.add_tensor(t); }},
               e.value);
  return plan;
}

/** The shape the tensor indices broadcast to; IndexError when they don't. */
Shape broadcast_indices(const std::vector<Tensor>& indices) {
  Shape shape = indices.front().shape();
  try {
    for (const Tensor& t : indices) shape = broadcast_shapes(shape, t.shape(), "index");
  } catch (const ValueError&) {
    std::ostringstream shapes;
    for (size_t i = 0; i < indices.size(); ++i) shapes << (i ? ", " : "") << indices[i].shape();
    fail<IndexError>("[index] shape mismatch: indexing tensors could not be broadcast together with shapes ",
                     shapes.str());
  }
  return shape;
}

/** The tensor-indexed part of a plan, ready for a kernel: the indexed dims adjacent at `pos`
 *  of `view`, one checked int64 index per dim, and their common shape. */
struct AdvancedIndex {
  Tensor view;
  int64_t pos;
  std::vector<Tensor> indices;
  Shape index_shape;

  int64_t count() const { return static_cast<int64_t>(indices.size()); }
  /** The view's shape with the indexed dims replaced by the index shape. */
  Shape result_shape() const {
    Shape shape(view.shape().begin(), view.shape().begin() + pos);
    for (int64_t s : index_shape) shape.push_back(s);
    for (int64_t d = pos + count(); d < view.dim(); ++d) shape.push_back(view.size(d));
    return shape;
  }
  /** The view's shape with the indexed dims merged into one of size `merged`. */
  Shape merged_shape(int64_t merged) const {
    Shape shape(view.shape().begin(), view.shape().begin() + pos);
    shape.push_back(merged);
    for (int64_t d = pos + count(); d < view.dim(); ++d) shape.push_back(view.size(d));
    return shape;
  }
  /** sum_j indices[j] * weights[j], broadcast and flattened to one int64 row. */
  Tensor linear_index(const Dims& weights) const {
    Tensor lin;
    for (int64_t j = 0; j < count(); ++j) {
      Tensor term = weights[j] == 1 ? indices[j] : indices[j].mul(weights[j]);
      lin = lin.defined() ? lin.add(term) : term;
    }
    return lin.expand(index_shape).reshape({-1});
  }
};

AdvancedIndex prepare_advanced(const IndexPlan& plan) {
  const auto& dims = plan.dims;
  std::vector<Tensor> indices;
  for (size_t j = 0; j < dims.size(); ++j)
    indices.push_back(checked_index(plan.indices[j], plan.view.size(dims[j]), dims[j], true, "index"));
  const bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  if (adjacent) return {plan.view, dims.front(), std::move(indices), broadcast_indices(plan.indices)};
  // NumPy's rule: when other dims separate the indexed ones, the index dims lead the result.
  Dims order(dims.begin(), dims.end());
  for (int64_t d = 0; d < plan.view.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) order.push_back(d);
  return {plan.view.permute(order), 0, std::move(indices), broadcast_indices(plan.indices)};
}

/** Reads: the indexed dims flattened into one, then index_select with row-major offsets. */
Tensor index_advanced(const AdvancedIndex& a) {
  Dims weights(static_cast<size_t>(a.count()));
  int64_t w = 1;
  for (int64_t j = a.count() - 1; j >= 0; --j) {
    weights[j] = w;
    w *= a.view.size(a.pos + j);
  }
  Tensor flat = a.view.flatten(a.pos, a.pos + a.count() - 1);
  Tensor out = select_rows(flat, a.pos, a.linear_index(weights));
  return out.view(a.result_shape());
}

/** value as `dtype`, expanded to `shape`; like torch's setitem, leading size-1 dims of value
 *  are dropped first. */
Tensor broadcast_value(const Tensor& value, const Shape& shape, DType dtype) {
  Tensor v = value;
  while (v.dim() > static_cast<int64_t>(shape.size()) && v.size(0) == 1) v = v.select(0, 0);
  if (!expandable(v.shape(), shape))
    fail("[index_put_] shape mismatch: value tensor of shape ", value.shape(),
         " cannot be broadcast to indexing result of shape ", shape);
  return v.to(dtype).expand(shape);
}

/** Writes: the indexed dims become one dim over the storage itself, addressed by storage
 *  offsets, and the scatter kernel writes through that view. */
void put_advanced(const AdvancedIndex& a, const Tensor& value) {
  const Shape out_shape = a.result_shape();
  Tensor src = broadcast_value(value, out_shape, a.view.dtype());
  if (numel_of(out_shape) == 0) return;
  Dims weights(static_cast<size_t>(a.count()));
  int64_t extent = 1;
  for (int64_t j = 0; j < a.count(); ++j) {
    weights[j] = a.view.stride(a.pos + j);
    extent += (a.view.size(a.pos + j) - 1) * weights[j];
  }
  Strides strides(a.view.strides().begin(), a.view.strides().begin() + a.pos);
  strides.push_back(1);
  for (int64_t d = a.pos + a.count(); d < a.view.dim(); ++d) strides.push_back(a.view.stride(d));
  Tensor dest = a.view.as_strided(a.merged_shape(extent), strides, a.view.storage_offset());

  Tensor lin = a.linear_index(weights);
  const Shape rows = a.merged_shape(lin.numel());
  Shape lin_shape(rows.size(), 1);
  lin_shape[a.pos] = lin.numel();
  backend_for(a.view.device())
      .scatter(dest, a.pos, lin.view(lin_shape).expand(rows), src.reshape(rows), ops::ScatterOp::Assign);
}

/** x[mask] = one value, with the mask covering x's leading dims: an elementwise select does
 *  it without the nonzero and scatter of the general path, and counts the write. False when
 *  the case doesn't apply. */
bool put_by_mask(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value) {
  if (indices.size() != 1 || value.numel() != 1) return false;
  const Tensor* mask = std::get_if<Tensor>(&indices[0].value);
  if (!mask || !is_mask_dtype(mask->dtype()) || mask->dim() == 0 || mask->dim() > x.dim() ||
      !std::equal(mask->shape().begin(), mask->shape().end(), x.shape().begin()))
    return false;
  Shape cond_shape = mask->shape();
  cond_shape.resize(x.shape().size(), 1);
  Tensor cond = mask->to(DType::Bool).reshape(cond_shape).expand(x.shape());
  Tensor fill = value.to(x.dtype()).reshape({}).expand(x.shape());
  if (batching::max_level({&x, &cond, &fill})) {
    Tensor(x).copy_(where(cond, fill, x));
  } else {
    backend_for(x.device()).where(cond, fill, x, x);
    x.bump_version();
  }
  return true;
}

// ---- gather and scatter ------------------------------------------------------------------

/** torch's rules: index is int64, index, x (and src) have as many dims (0-d counting as 1-d),
 *  and index is no larger than src anywhere nor than x outside `dim`. */
void check_gather_args(const char* op, const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src) {
  if (index.dtype() != DType::Int64) fail<TypeError>("[", op, "] expected dtype int64 for index, got ", index.dtype());
  const Tensor xi = atleast_1d(x), ii = atleast_1d(index);
  if (ii.dim() != xi.dim())
    fail("[", op, "] index tensor must have the same number of dimensions as input tensor (index shape ", index.shape(),
         ", input shape ", x.shape(), ")");
  if (src && atleast_1d(*src).dim() != xi.dim())
    fail("[", op, "] src tensor must have the same number of dimensions as input tensor (src shape ", src->shape(),
         ", input shape ", x.shape(), ")");
  for (int64_t d = 0; d < xi.dim(); ++d) {
    if (d != dim && ii.size(d) > xi.size(d))
      fail("[", op, "] index shape ", index.shape(), " exceeds input shape ", x.shape(), " at dimension ", d,
           " (only dimension ", dim, " may differ)");
    if (src && ii.size(d) > atleast_1d(*src).size(d))
      fail("[", op, "] index shape ", index.shape(), " exceeds src shape ", src->shape(), " at dimension ", d);
  }
}

/** t's physical tensor at `lvl` with the batch dim first; a t shared by every example
 *  (not batched at lvl) is repeated to the batch size that `other` has. */
Tensor batch_dim_everywhere(const Tensor& t, const Tensor& other, int lvl) {
  if (batching::level(t) == lvl) return batching::physical(t, lvl);
  Dims target{batching::physical(other, lvl).size(0)};
  for (int64_t s : t.shape()) target.push_back(s);
  return t.unsqueeze(0).expand(target);
}

Tensor scatter_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                    bool accumulate) {
  graph::OpCall call(accumulate ? kScatterAdd : kScatter);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  check_gather_args(op, x, d, index, &src);
  if (src.dtype() != x.dtype())
    fail<TypeError>("[", op, "] expected src to have the input's dtype ", x.dtype(), ", got ", src.dtype());
  Tensor idx = checked_index(index, atleast_1d(x).size(d), d, false, op);
  Tensor out;
  if (int lvl = batching::max_level({&x, &idx, &src})) {  // scatter per example along d + 1
    const Tensor& like = batching::level(x) == lvl ? x : batching::level(idx) == lvl ? idx : src;
    Tensor px = batch_dim_everywhere(x, like, lvl).contiguous();
    Tensor pi = batch_dim_everywhere(idx, like, lvl), ps = batch_dim_everywhere(src, like, lvl);
    out = batching::wrap(scatter_impl(op, px, d + 1, pi, ps, accumulate), lvl);
  } else {
    NoGradGuard no_grad;
    out = x.clone();
    if (idx.numel() > 0)
      backend_for(x.device())
          .scatter(atleast_1d(out), d, atleast_1d(idx), atleast_1d(src),
                   accumulate ? ops::ScatterOp::Sum : ops::ScatterOp::Assign);
  }
  if (call.capturing()) call.set_attrs({{"dim", d}});
  call.finish(
      {&x, &idx, &src}, {&out}, {},
      // d/dx: g, except where scatter overwrote x; d/dsrc: g read back at the scattered places.
      [&] {  // the captures are built only when a node is recorded
        return [d, idx, accumulate](graph::Saved, graph::Tensors&& g) {
          Tensor gx = accumulate ? g[0] : g[0].scatter(d, idx, zeros_like(idx, {.dtype = g[0].dtype()}));
          return graph::Tensors{gx, Tensor(), g[0].gather(d, idx)};
        };
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{scatter_impl(op, t[0].defined() ? t[0] : zeros_like(x), d, idx,
                                           t[2].defined() ? t[2] : zeros_like(src), accumulate)};
      });
  return out;
}

const graph::OpDef kScatterReduce("scatter_reduce");

/** src's part that index reads: its leading block of index's shape. */
Tensor index_block(const Tensor& src, const Tensor& idx) {
  Tensor s = src;
  for (int64_t k = 0; k < idx.dim(); ++k)
    if (s.size(k) != idx.size(k)) s = s.narrow(k, 0, idx.size(k));
  return s;
}

Tensor reduce_into(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, ops::ScatterOp op,
                   bool include_self);

/** The partial derivatives of y = reduce_into(x, d, idx, src, op, include_self) in x (x's
 *  shape) and in src (idx's shape), as torch's scatter_reduce_backward takes them: amax and
 *  amin share a place's gradient evenly among the elements equal to its result (x's own value
 *  counted even when it is not included, as torch counts it); prod divides the result by the
 *  element, or where that is src's only zero at its place, takes the product of the others. */
std::pair<Tensor, Tensor> reduce_partials(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src,
                                          ops::ScatterOp op, bool include_self, const Tensor& y) {
  Tensor dx, dsrc;
  if (op == ops::ScatterOp::Prod) {
    const Tensor masked_x = where(x.eq(0), ones_like(x), x);
    dx = reduce_into(masked_x, d, idx, src, op, include_self) / masked_x;
    const Tensor src_zero = src.eq(0);
    const Tensor zeros_there = zeros_like(x).scatter_add(d, idx, src_zero.to(x.dtype())).gather(d, idx);
    const Tensor single = src_zero.logical_and(zeros_there.eq(1));
    const Tensor others = reduce_into(x, d, idx, where(single, ones_like(src), src), op, include_self);
    dsrc = where(single, others.gather(d, idx), y.gather(d, idx) / where(src_zero, ones_like(src), src));
  } else {
    const Tensor x_is = x.eq(y).to(x.dtype()), src_is = src.eq(y.gather(d, idx)).to(x.dtype());
    const Tensor n = x_is.scatter_add(d, idx, src_is);
    dx = x_is / n;
    dsrc = src_is / n.gather(d, idx);
  }
  if (!include_self) dx = dx.scatter(d, idx, zeros_like(idx, {.dtype = x.dtype()}));
  return {dx, dsrc};
}

/** scatter_reduce's prod, amax and amin on checked operands: idx int64 in range, src cut to
 *  idx's shape. Without include_self a place that idx reaches starts from its first src
 *  element (amax, amin) or 1 (prod) instead of x's value. */
Tensor reduce_into(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, ops::ScatterOp op,
                   bool include_self) {
  graph::OpCall call(kScatterReduce);
  Tensor out;
  if (int lvl = batching::max_level({&x, &idx, &src})) {  // reduce per example along d + 1
    const Tensor& like = batching::level(x) == lvl ? x : batching::level(idx) == lvl ? idx : src;
    Tensor px = batch_dim_everywhere(x, like, lvl), pi = batch_dim_everywhere(idx, like, lvl),
           ps = batch_dim_everywhere(src, like, lvl);
    out = batching::wrap(reduce_into(px, d + 1, pi, ps, op, include_self), lvl);
  } else {
    NoGradGuard no_grad;
    out = x.clone();
    if (idx.numel() > 0) {
      Backend& backend = backend_for(x.device());
      const Tensor o = atleast_1d(out), i = atleast_1d(idx), s = atleast_1d(src);
      if (!include_self)
        backend.scatter(o, d, i, op == ops::ScatterOp::Prod ? ones_like(s) : s, ops::ScatterOp::Assign);
      backend.scatter(o, d, i, s, op);
    }
  }
  if (call.capturing())
    call.set_attrs({{"dim", d},
                    {"reduction", std::string(op == ops::ScatterOp::Prod   ? "mul"
                                              : op == ops::ScatterOp::Amax ? "max"
                                                                           : "min")},
                    {"include_self", int64_t{include_self}}});
  call.finish(
      {&x, &idx, &src}, {&out}, {graph::input(x), graph::input(src), graph::output(out)},
      [&] {  // the captures are built only when a node is recorded
        return [d, idx, op, include_self](graph::Saved s, graph::Tensors&& g) {
          const auto [dx, dsrc] = reduce_partials(s[0], d, idx, s[1], op, include_self, s[2]);
          return graph::Tensors{g[0] * dx, Tensor(), g[0].gather(d, idx) * dsrc};
        };
      },
      [&](const graph::Tensors& t) {
        const auto [dx, dsrc] = reduce_partials(x, d, idx, src, op, include_self, out);
        const Tensor tx = t[0].defined() ? t[0] * dx : zeros_like(out);
        return graph::Tensors{t[2].defined() ? tx.scatter_add(d, idx, t[2] * dsrc) : tx};
      });
  return out;
}

void check_bool_mask(const Tensor& mask, const char* op) {
  if (mask.dtype() != DType::Bool) fail<TypeError>("[", op, "] expected a bool mask, got dtype ", mask.dtype());
}

/** x rolled by `shift` along dim d; x itself when that is the identity. */
Tensor roll_dim(const Tensor& x, int64_t d, int64_t shift) {
  const int64_t n = x.size(d);
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  // The last s entries move to the front: a join of two views, differentiable as it stands.
  return cat({x.narrow(d, n - s, s), x.narrow(d, 0, n - s)}, d);
}

}  // namespace

// ---- Tensor methods -----------------------------------------------------------------------

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  IndexPlan plan = plan_index(*this, indices);
  if (plan.dims.empty()) return plan.view;
  return index_advanced(prepare_advanced(plan));
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) {
  if (value.device() != device())
    fail<RuntimeError>("[index_put_] value on ", value.device(), ", tensor on ", device());
  graph::OpCall call(kIndexPut);
  // The scatter of value into the positions the index selects (found by indexing the
  // positions themselves): differentiable, and batched under vmap where an index is not.
  const auto scattered = [&] {
    const Tensor positions =
        arange(numel(), {.dtype = DType::Int64, .device = device()}).reshape(Dims(shape().begin(), shape().end()));
    const Tensor written = positions.index(indices);
    const Tensor src = broadcast_value(value, written.shape(), dtype()).reshape({-1});
    return clone().reshape({-1}).scatter(0, written.reshape({-1}), src).reshape(Dims(shape().begin(), shape().end()));
  };
  bool batched = batching::max_level({this, &value}) > 0;
  for (const TensorIndex& i : indices)
    if (const Tensor* t = std::get_if<Tensor>(&i.value)) {
      ops::check_batched_write(*this, {t}, "index_put_");
      batched = batched || batching::level(*t);
    }
  if (ops::inplace_needs_rebase(*this, &value, "index_put_")) {
    ops::rebase_history(*this, scattered());  // this tensor's history then ends with the scatter
  } else if (!put_by_mask(*this, indices, value)) {
    if (IndexPlan plan = plan_index(*this, indices); plan.dims.empty()) {
      plan.view.copy_(broadcast_value(value, plan.view.shape(), dtype()));
    } else if (batched) {
      copy_(scattered());
    } else {
      // The scatter reads value while writing here, so an overlapping value is copied first.
      put_advanced(prepare_advanced(plan), value.shares_storage(*this) ? value.clone() : value);
      bump_version();
    }
  }
  // No graph form: a program calls back its functional form, a copy of the old value with the
  // assignment (the graph gives the tensor that new value; a view of it elsewhere is refused
  // there). The index tensors are inputs after the target and the value.
  std::vector<const Tensor*> inputs{this, &value};
  for (const TensorIndex& i : indices)
    if (const Tensor* t = std::get_if<Tensor>(&i.value)) inputs.push_back(t);
  if (call.capturing()) {
    std::vector<TensorIndex> kept = indices;
    for (TensorIndex& i : kept)
      if (std::holds_alternative<Tensor>(i.value)) i.value = Tensor();  // a program's, at each run
    call.set_replay([kept](const graph::Tensors& in) {
      std::vector<TensorIndex> at = kept;
      size_t next = 2;
      for (TensorIndex& i : at)
        if (std::holds_alternative<Tensor>(i.value)) i.value = in[next++];
      Tensor y = in[0].clone();
      y.index_put_(at, in[1]);
      return graph::Tensors{y};
    });
  }
  call.finish(inputs, {this});
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, Scalar value) {
  return index_put_(indices, scalar_tensor(value, {.dtype = dtype(), .device = device()}));
}

Tensor& Tensor::fill_diagonal_(Scalar value, bool wrap) {
  if (dim() < 2) fail<RuntimeError>("[fill_diagonal_] dimensions must be larger than 1, got a ", dim(), "-D tensor");
  const int64_t n = size(0);
  if (dim() > 2 && std::any_of(shape().begin(), shape().end(), [n](int64_t d) { return d != n; }))
    fail<RuntimeError>("[fill_diagonal_] all dimensions of input must be of equal length, got shape ", shape());
  if (dim() > 2) {
    const Tensor diagonal = arange(n);
    return index_put_(std::vector<TensorIndex>(static_cast<size_t>(dim()), diagonal), value);
  }
  const int64_t rows = size(0), cols = size(1);
  // the row-major offsets k (cols + 1) that torch writes, stopping at the square's end unless wrap
  const int64_t end = wrap ? rows * cols : std::min(rows, cols) * cols;
  const Tensor flat = arange(0, end, cols + 1);
  return index_put_({flat.floor_divide(cols), flat.remainder(cols)}, value);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  graph::OpCall call(kGather);
  const int64_t d = wrap_dim(dim, this->dim(), "gather");
  check_gather_args("gather", *this, d, index, nullptr);
  Tensor idx = checked_index(index, atleast_1d(*this).size(d), d, false, "gather");
  Tensor out;
  if (int lvl = batching::max_level({this, &idx})) {  // gather per example along d + 1
    Tensor px = batch_dim_everywhere(*this, idx, lvl), pi = batch_dim_everywhere(idx, *this, lvl);
    out = batching::wrap(px.gather(d + 1, pi), lvl);
  } else {
    out = empty(index.shape(), {.dtype = dtype(), .device = device()});
    if (out.numel() > 0) backend_for(device()).gather(atleast_1d(*this), d, atleast_1d(idx), atleast_1d(out));
  }
  if (call.capturing()) call.set_attrs({{"dim", d}});
  call.finish(
      {this, &index}, {&out}, {},
      [&] {  // the captures are built only when a node is recorded
        return [d, idx, in_shape = shape()](graph::Saved, graph::Tensors&& g) {
          Tensor zero = zeros(in_shape, {.dtype = g[0].dtype(), .device = g[0].device()});
          return graph::Tensors{zero.scatter_add(d, idx, g[0]), Tensor()};
        };
      },
      [&](const graph::Tensors& t) { return graph::Tensors{t[0].gather(d, idx)}; });
  return out;
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return scatter_impl("scatter", *this, dim, index, src, false);
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return scatter_impl("scatter_add", *this, dim, index, src, true);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  if (!is_index_dtype(index.dtype()))
    fail<TypeError>("[index_select] index must be an int64 or int32 tensor, got ", index.dtype());
  if (index.dim() > 1) fail("[index_select] index must be 0-d or 1-d, got shape ", index.shape());
  const int64_t d = wrap_dim(dim, this->dim(), "index_select");
  if (this->dim() == 0) {
    if (index.numel() != 1)
      fail<IndexError>("[index_select] index of a 0-d tensor must have exactly one value, got ", index.numel());
    checked_index(index, 1, 0, false, "index_select");
    return clone();
  }
  return select_rows(*this, d, checked_index(index, size(d), d, false, "index_select").reshape({-1}));
}

Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  check_bool_mask(mask, "masked_fill");
  return where(mask, scalar_tensor(value, {.dtype = dtype(), .device = device()}), *this);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, Scalar value) {
  check_bool_mask(mask, "masked_fill_");
  if (!expandable(mask.shape(), shape()))
    fail("[masked_fill_] mask of shape ", mask.shape(), " cannot be broadcast to the tensor's shape ", shape());
  Tensor fill = scalar_tensor(value, {.dtype = dtype(), .device = device()});
  graph::OpCall call(kMaskedFill);
  if (ops::inplace_needs_rebase(*this, nullptr, "masked_fill_")) {
    ops::rebase_history(*this, clone().masked_fill(mask, value));
    call.finish({&mask, &fill, this}, {this});  // for a capture: the in-place op, its history the ops' own
    return *this;
  }
  ops::check_batched_write(*this, {&mask}, "masked_fill_");
  if (batching::max_level({this, &mask})) {
    copy_(where(mask, fill, *this));
  } else {
    backend_for(device()).where(mask.expand(shape()), fill.expand(shape()), *this, *this);
    bump_version();
  }
  call.finish({&mask, &fill, this}, {this});
  return *this;
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  check_bool_mask(mask, "masked_select");
  const Shape shape = broadcast_shapes(this->shape(), mask.shape(), "masked_select");
  Tensor positions = mask.expand(shape).reshape({-1}).nonzero().reshape({-1});
  return select_rows(expand(shape).reshape({-1}), 0, positions);
}

Tensor Tensor::nonzero() const {
  graph::OpCall call(kNonzero);
  Backend& backend = backend_for(device());
  Tensor out = empty({backend.count_nonzero(*this), dim()}, {.dtype = DType::Int64, .device = device()});
  if (out.numel() > 0) backend.nonzero(*this, out);
  call.finish({this}, {&out});
  return out;
}

Tensor Tensor::flip(const Dims& dims) const {
  SmallVector<bool, 6> flipped(static_cast<size_t>(std::max<int64_t>(dim(), 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, dim(), "flip");
    if (flipped[w]) fail("[flip] dim ", d, " appears multiple times in the list of dims");
    flipped[w] = true;
  }
  Tensor out = *this;
  for (int64_t d = 0; d < dim(); ++d)
    if (flipped[d] && size(d) > 1)
      out = select_rows(out, d, arange(size(d) - 1, -1, -1, {.dtype = DType::Int64, .device = device()}));
  return out.shares_storage(*this) ? out.clone() : out;
}

Tensor Tensor::roll(const Dims& shifts, const Dims& dims) const {
  if (dims.empty()) {
    if (shifts.size() != 1) fail("[roll] without dims, shifts must have exactly one value, got ", shifts.size());
    return flatten().roll(shifts, {0}).view(shape());
  }
  if (shifts.size() != dims.size())
    fail("[roll] shifts and dims must align: got ", shifts.size(), " shifts and ", dims.size(), " dims");
  Tensor out = *this;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "roll");
    if (dim() > 0) out = roll_dim(out, d, shifts[i]);
  }
  return out.shares_storage(*this) ? out.clone() : out;
}

Tensor Tensor::repeat(const Dims& repeats) const {
  const int64_t n = static_cast<int64_t>(repeats.size());
  if (n < dim())
    fail("[repeat] number of repeats (", n, ") can not be smaller than the number of dimensions (", dim(),
         ") of the tensor of shape ", shape());
  for (int64_t r : repeats)
    if (r < 0) fail("[repeat] repeats must be non-negative, got ", Shape(repeats.begin(), repeats.end()));
  Dims padded(static_cast<size_t>(n - dim()), 1);
  for (int64_t s : shape()) padded.push_back(s);
  // View x as [1, s0, 1, s1, ...], expand the 1s to the repeats, and copy once.
  Tensor v = reshape(padded);
  Dims expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    v = v.unsqueeze(2 * i);
    expanded.push_back(repeats[i]);
    expanded.push_back(padded[i]);
    result.push_back(repeats[i] * padded[i]);
  }
  return v.expand(expanded).clone().view(result);
}

Tensor Tensor::tile(const Dims& reps) const {
  Dims full(static_cast<size_t>(std::max<int64_t>(dim() - static_cast<int64_t>(reps.size()), 0)), 1);
  for (int64_t r : reps) full.push_back(r);
  return repeat(full);
}

// ---- free functions -----------------------------------------------------------------------

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return x.gather(dim, index); }
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter(dim, index, src);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return x.scatter(dim, index, full(index.shape(), value, {.dtype = x.dtype(), .device = x.device()}));
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  if (reduce != "add" && reduce != "multiply")
    fail<RuntimeError>("[scatter] reduce argument must be either add or multiply, got ", reduce);
  if (src.dtype() != x.dtype())
    fail<RuntimeError>("[scatter] expected src to have the input's dtype ", x.dtype(), ", got ", src.dtype());
  const int64_t d = wrap_dim(dim, x.dim(), "scatter");
  check_gather_args("scatter", x, d, index, &src);
  return scatter_reduce(x, d, index, src, reduce == "add" ? "sum" : "prod");
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value, std::string_view reduce) {
  return scatter(x, dim, index, full(index.shape(), value, {.dtype = x.dtype(), .device = x.device()}), reduce);
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return x.scatter_add(dim, index, src);
}
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return x.index_select(dim, index); }

Tensor wrap_negative(const Tensor& index, int64_t n) {
  Tensor idx = index.to(DType::Int64);
  if (idx.numel() == 0) return idx;
  if (graph::detail::current_capture) return wrap_from_end(idx, n, 0);
  const int64_t lowest = ops::integer_range(idx).first;
  if (lowest < -n) fail<IndexError>("[index] index ", lowest, " is out of bounds for a dim of size ", n);
  return wrap_from_end(idx, n, lowest);
}

Tensor take(const Tensor& x, const Tensor& index) {
  if (!is_index_dtype(index.dtype()))
    fail<TypeError>("[take] index must be an int64 or int32 tensor, got ", index.dtype());
  Tensor idx = checked_index(index, x.numel(), 0, true, "take");
  return select_rows(x.reshape({-1}), 0, idx.reshape({-1})).view(index.shape());
}

Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  if (!is_index_dtype(index.dtype()))
    fail<TypeError>("[put] index must be an int64 or int32 tensor, got ", index.dtype(), " ", index.shape());
  if (source.numel() != index.numel())
    fail<RuntimeError>("[put] source has ", source.numel(), " elements and index ", index.numel(),
                       "; they must have as many (shapes ", source.shape(), " and ", index.shape(), ")");
  if (source.dtype() != x.dtype())
    fail<RuntimeError>("[put] source's dtype ", source.dtype(), " must be the tensor's ", x.dtype());
  const Tensor positions = checked_index(index, x.numel(), 0, true, "put").reshape({-1});
  const Tensor flat = x.reshape({-1}), values = source.reshape({-1});
  return (accumulate ? index_add(flat, 0, positions, values) : index_copy(flat, 0, positions, values)).view(x.shape());
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) { return x.masked_fill(mask, value); }
Tensor masked_select(const Tensor& x, const Tensor& mask) { return x.masked_select(mask); }
Tensor flip(const Tensor& x, const Dims& dims) { return x.flip(dims); }

Tensor fliplr(const Tensor& x) {
  if (x.dim() < 2) fail("[fliplr] input must be at least 2-d, got shape ", x.shape());
  return x.flip({1});
}

Tensor flipud(const Tensor& x) {
  if (x.dim() < 1) fail("[flipud] input must be at least 1-d, got a 0-d tensor");
  return x.flip({0});
}

Tensor roll(const Tensor& x, const Dims& shifts, const Dims& dims) { return x.roll(shifts, dims); }
Tensor tile(const Tensor& x, const Dims& reps) { return x.tile(reps); }

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  if (repeats < 0) fail("[repeat_interleave] repeats must be non-negative, got ", repeats);
  if (!dim) return repeat_interleave(x.reshape({-1}), repeats, 0);
  const Tensor y = atleast_1d(x);
  const int64_t d = wrap_dim(*dim, y.dim(), "repeat_interleave");
  Dims expanded(y.shape().begin(), y.shape().end());
  expanded.insert(expanded.begin() + d + 1, repeats);
  return y.unsqueeze(d + 1).expand(expanded).clone().flatten(d, d + 1);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  if (repeats.is_floating_point() || repeats.dtype() == DType::Bool)
    fail<TypeError>("[repeat_interleave] repeats must be an integer tensor, got ", repeats.dtype(), " ",
                    repeats.shape());
  if (repeats.dim() > 1) fail("[repeat_interleave] repeats must be 0-d or 1-d, got shape ", repeats.shape());
  if (output_size && *output_size < 0) fail("[repeat_interleave] output_size must be non-negative, got ", *output_size);
  if (!dim) return repeat_interleave(x.reshape({-1}), repeats, 0, output_size);
  const Tensor y = atleast_1d(x);
  const int64_t d = wrap_dim(*dim, y.dim(), "repeat_interleave");
  const int64_t n = y.size(d);
  Tensor counts = repeats.to(DType::Int64).reshape({-1});
  if (counts.numel() == 1) counts = counts.expand({n});
  if (counts.numel() != n)
    fail("[repeat_interleave] repeats must have the input's size along dim ", d, " (", n, "), got ", counts.numel(),
         " counts (input shape ", x.shape(), ")");
  if (n > 0 && ops::any_true(counts.lt(0))) fail("[repeat_interleave] repeats must be non-negative");
  int64_t total = 0;
  if (output_size) {
    total = *output_size;
    if (!graph::detail::current_capture) {
      // Under vmap every example's sum must be output_size.
      const auto sum = ops::read_every_example(counts.sum(), [total](const Tensor& sums) {
        const Tensor off = sums.ne(total);
        return off.any().item<bool>() ? sums.masked_select(off)[0].item<int64_t>() : total;
      });
      if (sum != total) fail("[repeat_interleave] output_size ", total, " is not the sum of repeats, ", sum);
    }
  } else if (graph::detail::current_capture) {
    fail(
        "[repeat_interleave] the output's length is the sum of repeats, which depends on the data; a compiled "
        "program's shapes cannot (as under jax.jit, which asks for total_repeat_length): pass output_size");
  } else {
    total = n > 0 ? counts.sum().item<int64_t>() : 0;
  }
  if (n == 0) return y.narrow(d, 0, 0);
  // Output j comes from the element whose run of copies holds j: the count of run ends <= j.
  const Tensor ends = counts.cumsum(0);
  const Tensor source = searchsorted(ends, arange(total, {.dtype = DType::Int64, .device = x.device()}), false, true);
  return y.index_select(d, source.clamp(std::nullopt, Scalar(n - 1)));
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  if (repeats.dim() > 1) fail("[repeat_interleave] repeats must be 0-d or 1-d, got shape ", repeats.shape());
  return repeat_interleave(arange(repeats.numel(), {.dtype = DType::Int64, .device = repeats.device()}), repeats, 0,
                           output_size);
}

Tensor nonzero(const Tensor& x) { return x.nonzero(); }
Tensor argwhere(const Tensor& x) { return x.nonzero(); }

std::vector<Tensor> where(const Tensor& cond) { return atleast_1d(cond).nonzero().unbind(1); }

Tensor count_nonzero(const Tensor& x) {
  if (batching::level(x)) return x.ne(0).sum();  // each example's own count
  graph::OpCall call(kNonzero);
  Tensor out = scalar_tensor(backend_for(x.device()).count_nonzero(x), {.dtype = DType::Int64, .device = x.device()});
  // A count has a fixed shape, unlike nonzero's positions: a program calls it back.
  if (call.capturing()) call.set_replay([](const graph::Tensors& in) { return graph::Tensors{count_nonzero(in[0])}; });
  call.finish({&x}, {&out});
  return out;
}

Tensor count_nonzero(const Tensor& x, const Dims& dims) {
  std::vector<char> seen(static_cast<size_t>(x.dim()), 0);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), "count_nonzero");
    if (x.dim() > 0 && seen[w]++)
      fail<RuntimeError>("[count_nonzero] dim ", d, " appears multiple times in the list of dims ", Shape(dims));
  }
  return x.ne(0).sum(dims);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  const bool kernel = reduce == "prod" || reduce == "amax" || reduce == "amin";
  if (!kernel && reduce != "sum" && reduce != "mean")
    fail<RuntimeError>("[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  if (x.dtype() != src.dtype())
    fail<RuntimeError>("[scatter_reduce] src's dtype ", src.dtype(), " must be x's ", x.dtype(), " (x ", x.shape(),
                       ", src ", src.shape(), ")");
  if (kernel) {
    const int64_t d = wrap_dim(dim, x.dim(), "scatter_reduce");
    check_gather_args("scatter_reduce", x, d, index, &src);
    const Tensor idx = checked_index(index, atleast_1d(x).size(d), d, false, "scatter_reduce");
    return reduce_into(x, d, idx, index_block(src, idx),
                       reduce == "prod"   ? ops::ScatterOp::Prod
                       : reduce == "amax" ? ops::ScatterOp::Amax
                                          : ops::ScatterOp::Amin,
                       include_self);
  }
  const Tensor start = include_self ? x : scatter(x, dim, index, Scalar(0));
  const Tensor total = start.scatter_add(dim, index, src);
  if (reduce == "sum") return total;
  const Tensor counts = (include_self ? ones_like(x) : zeros_like(x)).scatter_add(dim, index, ones_like(src));
  const Tensor n = where(counts == 0, ones_like(counts), counts);
  return is_inexact(x.dtype()) ? total / n : floor_divide(total, n);
}

}  // namespace ug
