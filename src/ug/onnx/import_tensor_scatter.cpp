// TensorScatter (opset 24): a KV-cache update, each batch's update written into the cache along
// `axis` from its write index on (wrapping around in circular mode), as a scatter so that the
// gradient reaches both the cache and the update.
#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Outputs tensor_scatter_op(const OpContext& c) {
  const Tensor &cache = c.input(0), &update = c.input(1);
  const std::string mode = c.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") c.fail("mode must be linear or circular, got \"", mode, "\"");
  const int64_t rank = cache.dim();
  int64_t axis = c.attr_int("axis", -2);
  if (rank < 2 || axis < -rank || axis >= rank || update.dim() != rank)
    c.fail("axis ", axis, " does not fit cache ", cache.shape(), " and update ", update.shape());
  if (axis < 0) axis += rank;
  if (axis == 0) c.fail("axis must not be the batch axis 0");
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? update.size(d) > cache.size(d) : update.size(d) != cache.size(d))
      c.fail("update ", update.shape(), " does not fit cache ", cache.shape(), " along axis ", axis);
  const int64_t batch = cache.size(0), length = cache.size(axis), steps = update.size(axis);
  std::vector<int64_t> starts = c.ints_input(2).value_or(std::vector<int64_t>(static_cast<size_t>(batch), 0));
  if (static_cast<int64_t>(starts.size()) != batch)
    c.fail("write_indices has ", starts.size(), " values for ", batch, " batches");
  for (int64_t s : starts)
    if (s < 0 || (mode == "linear" && s + steps > length))
      c.fail("write index ", s, " with ", steps, " steps does not fit the cache's ", length, " (mode ", mode, ")");
  // Position p of batch b goes to (starts[b] + p) mod length: an index of the update's shape.
  Tensor index = empty({batch, steps}, {.dtype = DType::Int64});
  int64_t* ip = index.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < steps; ++p) ip[b * steps + p] = (starts[static_cast<size_t>(b)] + p) % length;
  Dims view(static_cast<size_t>(rank), 1);
  view[0] = batch;
  view[static_cast<size_t>(axis)] = steps;
  index = index.reshape(view).expand(update.shape()).contiguous();
  return {scatter(cache, axis, index, update.to(cache.dtype()))};
}

}  // namespace

void add_tensor_scatter_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"TensorScatter", tensor_scatter_op, 2, 3, 1, 24, {}});
}

}  // namespace ug::onnx
