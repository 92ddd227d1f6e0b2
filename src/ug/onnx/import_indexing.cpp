// The op table's indexing ops: ScatterElements (with its reductions). Index tensors are read on the
// host (they are data the file gives, bounds-checked here); the values move through ug ops, so
// gradients reach them.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "ug/onnx/import_util.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"

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

/** Rows `targets` of data [M, R] combined with updates [K, R] as `reduction` says, in order: the
 *  k-th update of a row in round k, so that each round's rows are distinct (a repeated row with
 *  reduction "none" keeps its last update). */
Tensor scatter_rows(const OpContext& c, Tensor data, const std::vector<int64_t>& targets, const Tensor& updates,
                    std::string_view reduction) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    c.fail("reduction must be none, add, mul, max or min, got '", reduction, "'");
  const Tensor values = updates.to(data.dtype());
  std::vector<std::vector<int64_t>> rounds;  // positions k of `targets`, per round
  std::map<int64_t, size_t> seen;
  for (size_t k = 0; k < targets.size(); ++k) {
    const size_t round = seen[targets[k]]++;
    if (round == rounds.size()) rounds.emplace_back();
    rounds[round].push_back(static_cast<int64_t>(k));
  }
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

Outputs scatter_elements_op(const OpContext& c) {
  const Tensor &x = c.input(0), &updates = c.input(2);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const std::vector<int64_t> indices = int_values(c, c.input(1), "indices");
  const Shape& shape = c.input(1).shape();
  if (updates.shape() != shape || static_cast<int64_t>(shape.size()) != x.dim())
    c.fail("indices ", shape, " and updates ", updates.shape(), " must have one shape, of the data's rank ", x.dim());
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
  const Tensor y =
      scatter_rows(c, x.reshape({-1, 1}), targets, updates.reshape({-1, 1}), c.attr_string("reduction", "none"));
  return one(y.reshape(x.shape()));
}

}  // namespace

void add_indexing_ops(std::vector<OpSpec>& ops) {
  ops.insert(ops.end(), {
                            {"ScatterElements", scatter_elements_op, 3, 3, 1, 1, {}},
                        });
}

}  // namespace ug::onnx
