// The op table's indexing ops: ScatterElements and ScatterND (with their reductions), GatherND,
// NonZero, Unique, ReverseSequence, CenterCropPad and MaxUnpool. Index tensors are read on the
// host (they are data the file gives, bounds-checked here), but for ScatterElements' indices
// under vmap, which differ between examples; the values move through ug ops, so gradients
// reach them.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/value_checks.h"

namespace ug::onnx {

namespace {

std::vector<int64_t> int_values(const OpContext& c, const Tensor& t, std::string_view name) {
  if (!is_integral(t.dtype())) c.fail<TypeError>(name, " must be integers, got ", t.dtype());
  const Tensor v = t.detach().to(DType::Int64).contiguous();
  return std::vector<int64_t>(v.data_ptr<int64_t>(), v.data_ptr<int64_t>() + v.numel());
}

/** index in [-size, size), made non-negative. */
int64_t checked_index(const OpContext& c, int64_t index, int64_t size, std::string_view what) {
  if (index < -size || index >= size) c.fail(what, " index ", index, " is out of range for a dim of ", size);
  return index < 0 ? index + size : index;
}

/** The scatter ops' "reduction" attribute, checked. */
std::string reduction_attr(const OpContext& c) {
  std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    c.fail("reduction must be none, add, mul, max or min, got '", reduction, "'");
  return reduction;
}

/** Rows `targets` of data [M, R] combined with updates [K, R] as `reduction` says: "add" in one
 *  scatter_add, the others in order, the k-th update of a row in round k, so that each round's
 *  rows are distinct (a repeated row with reduction "none" keeps its last update). */
Tensor scatter_rows(const OpContext& c, Tensor data, const std::vector<int64_t>& targets, const Tensor& updates,
                    std::string_view reduction) {
  const Tensor values = updates.to(data.dtype());
  if (reduction == "add") {
    const Tensor at = int_tensor(targets).unsqueeze(1).expand(values.shape()).contiguous();
    return data.scatter_add(0, at, values);
  }
  std::vector<std::vector<int64_t>> rounds;  // positions k of `targets`, per round
  std::map<int64_t, size_t> seen;
  for (size_t k = 0; k < targets.size(); ++k) {
    const size_t round = seen[targets[k]]++;
    if (round == rounds.size()) rounds.emplace_back();
    rounds[round].push_back(static_cast<int64_t>(k));
  }
  int64_t work = 0;  // each round rewrites the whole data
  if (__builtin_mul_overflow(static_cast<int64_t>(rounds.size()), data.numel(), &work) || work > c.max_elements())
    c.fail("the updates repeat a target ", rounds.size(), " times over ", data.numel(),
           " elements of data, more work than LoadLimits::max_elements allows");
  for (const std::vector<int64_t>& round : rounds) {
    std::vector<int64_t> rows;
    for (int64_t k : round) rows.push_back(targets[static_cast<size_t>(k)]);
    const Tensor at = int_tensor(rows), update = values.index_select(0, int_tensor(round));
    Tensor next = update;
    if (reduction != "none") {
      const Tensor old = data.index_select(0, at);
      next = reduction == "add"   ? add(old, update)
             : reduction == "mul" ? mul(old, update)
             : reduction == "max" ? maximum(old, update)
                                  : minimum(old, update);
    }
    data = data.scatter(0, at.unsqueeze(1).expand(next.shape()).contiguous(), next);
  }
  return data;
}

/** ScatterElements with each example's own indices (a compiled program's graph run under
 *  vmap): the op table's scatter ops, which batch, as the program's ops ran eagerly. */
Tensor scatter_elements_batched(const OpContext& c, const Tensor& x, int64_t axis, const Tensor& indices,
                                const Tensor& updates, std::string_view reduction) {
  if (!is_integral(indices.dtype())) c.fail<TypeError>("indices must be integers, got ", indices.dtype());
  const int64_t size = x.size(axis);
  const Tensor idx = indices.to(DType::Int64);
  if (ops::any_true((idx < -size).logical_or(idx >= size)))
    c.fail("an index is out of range for a dim of ", size, " (data ", x.shape(), ", axis ", axis, ")");
  const Tensor at = where(idx < 0, idx + size, idx), values = updates.to(x.dtype());
  if (reduction == "none") return x.scatter(axis, at, values);
  if (reduction == "add") return x.scatter_add(axis, at, values);
  return scatter_reduce(x, axis, at, values, reduction == "mul" ? "prod" : reduction == "max" ? "amax" : "amin");
}

Outputs scatter_elements_op(const OpContext& c) {
  const Tensor &x = c.input(0), &updates = c.input(2);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const Shape& shape = c.input(1).shape();
  if (updates.shape() != shape || static_cast<int64_t>(shape.size()) != x.dim())
    c.fail("indices ", shape, " and updates ", updates.shape(), " must have one shape, of the data's rank ", x.dim());
  const std::string reduction = reduction_attr(c);
  if (batching::level(c.input(1))) return one(scatter_elements_batched(c, x, axis, c.input(1), updates, reduction));
  const std::vector<int64_t> indices = int_values(c, c.input(1), "indices");
  Dims strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * x.size(static_cast<int64_t>(d));
  std::vector<int64_t> targets(indices.size());
  Dims at(shape.size(), 0);  // the position of indices[k], walked in row-major order
  for (size_t k = 0; k < indices.size(); ++k) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t size = x.size(static_cast<int64_t>(d));
      const int64_t i = d == static_cast<size_t>(axis) ? checked_index(c, indices[k], size, "an") : at[d];
      if (i >= size) c.fail("indices ", shape, " do not fit in the data ", x.shape(), " off axis ", axis);
      flat += i * strides[d];
    }
    targets[k] = flat;
    for (size_t d = shape.size(); d-- > 0 && ++at[d] == shape[d];) at[d] = 0;
  }
  const Tensor y = scatter_rows(c, x.reshape({-1, 1}), targets, updates.reshape({-1, 1}), reduction);
  return one(y.reshape(x.shape()));
}

/** The flat row of data's first `k` dims that each k-tuple of `indices` names. */
std::vector<int64_t> nd_rows(const OpContext& c, const std::vector<int64_t>& indices, const Tensor& data,
                             int64_t first_dim, int64_t k) {
  std::vector<int64_t> rows;
  for (size_t t = 0; t + static_cast<size_t>(k) <= indices.size() && k > 0; t += static_cast<size_t>(k)) {
    int64_t row = 0;
    for (int64_t d = 0; d < k; ++d) {
      const int64_t size = data.size(first_dim + d);
      row = row * size + checked_index(c, indices[t + static_cast<size_t>(d)], size, "a");
    }
    rows.push_back(row);
  }
  return rows;
}

Outputs scatter_nd_op(const OpContext& c) {
  const Tensor &x = c.input(0), &indices = c.input(1), &updates = c.input(2);
  if (indices.dim() < 1) c.fail("indices must have at least one dim, got ", indices.shape());
  const int64_t k = indices.size(-1);
  if (k < 1 || k > x.dim()) c.fail("indices ", indices.shape(), " index more dims than the data ", x.shape(), " has");
  Dims expected(indices.shape().begin(), indices.shape().end() - 1);
  for (int64_t d = k; d < x.dim(); ++d) expected.push_back(x.size(d));
  if (updates.shape() != expected) c.fail("updates ", updates.shape(), " must be ", expected);
  const Dims rows_shape{-1, std::accumulate(x.shape().begin() + k, x.shape().end(), int64_t{1}, std::multiplies<>())};
  const std::vector<int64_t> rows = nd_rows(c, int_values(c, indices, "indices"), x, 0, k);
  const Tensor y = scatter_rows(c, x.reshape(rows_shape), rows,
                                updates.reshape({static_cast<int64_t>(rows.size()), rows_shape[1]}), reduction_attr(c));
  return one(y.reshape(x.shape()));
}

Outputs gather_nd_op(const OpContext& c) {
  const Tensor &x = c.input(0), &indices = c.input(1);
  const int64_t batch = c.attr_int("batch_dims", 0);
  if (indices.dim() < 1) c.fail("indices must have at least one dim, got ", indices.shape());
  const int64_t k = indices.size(-1);
  if (batch < 0 || batch >= std::min(x.dim(), indices.dim()) || k < 1 || batch + k > x.dim())
    c.fail("batch_dims ", batch, " and indices ", indices.shape(), " do not fit the data ", x.shape());
  for (int64_t d = 0; d < batch; ++d)
    if (x.size(d) != indices.size(d))
      c.fail("the batch dims of data ", x.shape(), " and indices ", indices.shape(), " differ");
  const int64_t batches =
      std::accumulate(x.shape().begin(), x.shape().begin() + batch, int64_t{1}, std::multiplies<>());
  const int64_t per_batch =
      std::accumulate(x.shape().begin() + batch, x.shape().begin() + batch + k, int64_t{1}, std::multiplies<>());
  std::vector<int64_t> rows = nd_rows(c, int_values(c, indices, "indices"), x, batch, k);
  const size_t per = batches > 0 ? rows.size() / static_cast<size_t>(batches) : 0;
  for (size_t r = 0; r < rows.size(); ++r) rows[r] += static_cast<int64_t>(r / per) * per_batch;
  Dims out(indices.shape().begin(), indices.shape().end() - 1);
  for (int64_t d = batch + k; d < x.dim(); ++d) out.push_back(x.size(d));
  check_new_shape(c, out);
  const int64_t rest = std::accumulate(x.shape().begin() + batch + k, x.shape().end(), int64_t{1}, std::multiplies<>());
  return one(x.reshape({batches * per_batch, rest}).index_select(0, int_tensor(rows)).reshape(out));
}

Outputs non_zero_op(const OpContext& c) { return one(nonzero(c.input(0)).t().contiguous()); }

/** Unique slices along `axis` (or elements of the flattened input), sorted or in order of first
 *  appearance, with the first index, the inverse map and the count of each. */
Outputs unique_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const bool flat = !c.has_attr("axis");
  const int64_t axis = flat ? 0 : norm_axis(c, c.attr_int("axis"), x.dim());
  const Tensor moved = flat ? x.reshape({-1}) : x.movedim(axis, 0);
  const int64_t n = moved.dim() > 0 ? moved.size(0) : 1;
  const Tensor keys = moved.reshape({n, -1}).detach().to(DType::Float64).contiguous();
  const int64_t width = keys.size(1);
  const double* p = keys.data_ptr<double>();
  auto less = [&](int64_t a, int64_t b) {  // NaN after every number and equal to NaN, as numpy.unique
    for (int64_t j = 0; j < width; ++j) {
      const double u = p[a * width + j], v = p[b * width + j];
      if (std::isnan(u) || std::isnan(v)) {
        if (std::isnan(u) != std::isnan(v)) return std::isnan(v);
      } else if (u != v) {
        return u < v;
      }
    }
    return false;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int64_t> first, counts, inverse(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || less(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  if (!c.attr_int("sorted", 1)) {  // renumber the groups by first appearance
    std::vector<int64_t> by_first(first.size()), rank(first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    std::vector<int64_t> f, cnt;
    for (size_t r = 0; r < by_first.size(); ++r) {
      rank[static_cast<size_t>(by_first[r])] = static_cast<int64_t>(r);
      f.push_back(first[static_cast<size_t>(by_first[r])]);
      cnt.push_back(counts[static_cast<size_t>(by_first[r])]);
    }
    for (int64_t& g : inverse) g = rank[static_cast<size_t>(g)];
    first = f;
    counts = cnt;
  }
  Tensor y = moved.index_select(0, int_tensor(first));
  if (!flat) y = y.movedim(0, axis);
  return {y, int_tensor(first), int_tensor(inverse), int_tensor(counts)};
}

/** Each batch entry's first sequence_lens[b] steps along time_axis reversed: one gather. */
Outputs reverse_sequence_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const int64_t time = c.attr_int("time_axis", 0), batch = c.attr_int("batch_axis", 1);
  if (x.dim() < 2 || (time != 0 && time != 1) || (batch != 0 && batch != 1) || time == batch)
    c.fail("time_axis ", time, " and batch_axis ", batch, " must be 0 and 1 of an input of rank 2 or more, got ",
           x.shape());
  const std::vector<int64_t> lens = int_values(c, c.input(1), "sequence_lens");
  const int64_t steps = x.size(time), batches = x.size(batch);
  if (static_cast<int64_t>(lens.size()) != batches)
    c.fail(lens.size(), " sequence_lens for ", batches, " batch entries");
  std::vector<int64_t> from(static_cast<size_t>(steps * batches));  // [time, batch] order
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > steps) c.fail("sequence length ", len, " is outside [0, ", steps, "]");
    for (int64_t t = 0; t < steps; ++t) from[static_cast<size_t>(t * batches + b)] = t < len ? len - 1 - t : t;
  }
  Dims shape(static_cast<size_t>(x.dim()), 1);
  shape[static_cast<size_t>(time)] = steps;
  shape[static_cast<size_t>(batch)] = batches;
  Tensor index = int_tensor(from).reshape({steps, batches});
  if (time == 1) index = index.t();
  return one(x.gather(time, index.reshape(shape).expand(x.shape()).contiguous()));
}

/** Each axis cropped or zero-padded about its centre to `shape` (the odd cell at the end). */
Outputs center_crop_pad_op(const OpContext& c) {
  Tensor x = c.input(0);
  const std::vector<int64_t> shape = *c.ints_input(1);
  std::vector<int64_t> axes(static_cast<size_t>(x.dim()));
  std::iota(axes.begin(), axes.end(), 0);
  if (auto given = c.attr_ints("axes")) axes = *given;
  if (shape.size() != axes.size()) c.fail("shape has ", shape.size(), " values for ", axes.size(), " axes");
  Dims out = x.shape();
  for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(norm_axis(c, axes[i], x.dim()))] = shape[i];
  check_new_shape(c, out);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = norm_axis(c, axes[i], x.dim()), size = x.size(axis), want = shape[i];
    if (want < size) {
      x = x.narrow(axis, (size - want) / 2, want);
    } else if (want > size) {
      Dims pads(2 * static_cast<size_t>(x.dim() - 1 - axis), 0);  // ug::pad's order: last dim first
      pads.push_back((want - size) / 2);
      pads.push_back(want - size - (want - size) / 2);
      x = pad(x, pads, "constant", 0);
    }
  }
  return one(x);
}

/** MaxUnpool: X's values at their MaxPool indices (flat over the unpooled tensor, whose spatial
 *  size is (in - 1) * stride + kernel - pads), zeros elsewhere; output_shape pads at the end. */
Outputs max_unpool_op(const OpContext& c) {
  const Tensor &x = c.input(0), &indices = c.input(1);
  if (x.dim() < 3) c.fail("X must be [N, C, spatial...], got ", x.shape());
  if (indices.shape() != x.shape()) c.fail("I ", indices.shape(), " must have X's shape ", x.shape());
  const size_t rank = static_cast<size_t>(x.dim() - 2);
  const Dims kernel = spatial_attr(c, "kernel_shape", rank, 1, 1), strides = spatial_attr(c, "strides", rank, 1, 1);
  const std::vector<int64_t> pads = c.attr_ints("pads").value_or(std::vector<int64_t>(2 * rank, 0));
  if (pads.size() != 2 * rank) c.fail("pads has ", pads.size(), " values for ", rank, " spatial dims");
  Dims inferred{x.size(0), x.size(1)};
  for (size_t d = 0; d < rank; ++d)
    inferred.push_back((x.size(static_cast<int64_t>(d) + 2) - 1) * strides[d] - pads[d] - pads[d + rank] + kernel[d]);
  check_new_shape(c, inferred);
  const int64_t total = std::accumulate(inferred.begin(), inferred.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> at = int_values(c, indices, "I");
  for (int64_t& i : at) i = checked_index(c, i, total, "an I");
  Tensor y = zeros({total}, {.dtype = x.dtype()}).scatter(0, int_tensor(at), x.reshape({-1})).reshape(inferred);
  if (auto shape = c.ints_input(2)) {
    if (shape->size() != inferred.size()) c.fail("output_shape ", to_dims(*shape), " must have rank ", x.dim());
    check_new_shape(c, to_dims(*shape));
    Dims grow;
    for (size_t d = inferred.size(); d-- > 0;) {
      if ((*shape)[d] < inferred[d]) c.fail("output_shape ", to_dims(*shape), " is smaller than ", inferred);
      grow.push_back(0);
      grow.push_back((*shape)[d] - inferred[d]);
    }
    y = pad(y, grow, "constant", 0);
  }
  return one(y);
}

}  // namespace

void add_indexing_ops(std::vector<OpSpec>& ops) {
  ops.insert(ops.end(), {
                            {"ScatterElements", scatter_elements_op, 3, 3, 1, 1, {}},
                            {"ScatterND", scatter_nd_op, 3, 3, 1, 1, {}},
                            {"GatherND", gather_nd_op, 2, 2, 1, 1, {}},
                            {"NonZero", non_zero_op, 1, 1, 1, 1, {}},
                            {"Unique", unique_op, 1, 1, 4, 1, {}},
                            {"ReverseSequence", reverse_sequence_op, 2, 2, 1, 1, {}},
                            {"CenterCropPad", center_crop_pad_op, 2, 2, 1, 18, {}},
                            {"MaxUnpool", max_unpool_op, 2, 3, 1, 1, {"kernel_shape"}},
                        });
}

}  // namespace ug::onnx
