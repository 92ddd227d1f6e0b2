// embedding records its own node: the gradient is a scatter-add of the output gradient
// into the looked-up rows, with the padding row left out and optional per-row scaling.
#include "ug/ops/nn.h"

#include "ug/graph/grad_mode.h"
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

const graph::OpDef kEmbedding("embedding");

void require_index_dtype(const Tensor& t, const char* op, const char* what) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    fail<TypeError>("[", op, "] expected ", what, " of dtype int64 or int32, got ", t.dtype(), " (shape ", t.shape(),
                    ")");
}

/** Rows of weight named in `flat` scaled in place to a norm of at most max_norm (torch's renorm). */
void renorm_rows(const Tensor& weight, const Tensor& flat, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  Tensor rows = weight.index_select(0, flat);
  Tensor norms = rows.norm(norm_type, Dims{1}, true);
  Tensor scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0);
  Tensor w = weight;
  w.index_put_({flat}, rows * scale);
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  graph::OpCall call(kEmbedding);
  const char* op = "embedding";
  if (weight.dim() != 2)
    fail("[embedding] weight must be 2-D [num_embeddings, embedding_dim], got shape ", weight.shape());
  require_index_dtype(indices, op, "indices");
  const int64_t num = weight.size(0), dim = weight.size(1);
  std::optional<int64_t> pad = padding_idx;
  if (pad) {
    if (*pad >= num || *pad < -num)
      fail("[embedding] padding_idx must be within num_embeddings (", num, "), got ", *pad);
    if (*pad < 0) *pad += num;
  }
  Tensor flat = indices.reshape({-1}).to(DType::Int64);
  const int64_t n = flat.size(0);
  if (n > 0 && ops::any_true((flat < 0).logical_or(flat >= num))) {
    const auto [lo, hi] = ops::integer_range(flat);
    fail<IndexError>("[embedding] index out of range in self: indices must be in [0, ", num, "), got min ", lo,
                     " and max ", hi);
  }
  if (max_norm) renorm_rows(weight, flat, *max_norm, norm_type);
  Dims out_shape(indices.shape().begin(), indices.shape().end());
  out_shape.push_back(dim);
  if (batching::max_level({&indices, &weight}) || forward::active()) {
    Tensor out = weight.index_select(0, flat).reshape(out_shape);
    call.finish({&weight, &indices}, {&out});  // index_select records the derivatives
    return out;
  }
  Tensor out = empty(out_shape, {.dtype = weight.dtype(), .device = weight.device()});
  backend_for(weight.device()).index_select(weight, 0, flat, out.view({n, dim}));
  call.finish(
      {&weight, &indices}, {&out}, {},
      [flat, pad, scale_grad_by_freq, num, dim](graph::Saved, graph::Tensors&& g) {
        const int64_t n = flat.size(0);
        Tensor g2 = g[0].reshape({n, dim});
        if (pad) g2 = where((flat == *pad).unsqueeze(1), 0.0, g2);
        if (scale_grad_by_freq) {
          Tensor counts = zeros({num}, {.dtype = g2.dtype(), .device = g2.device()})
                              .scatter_add(0, flat, ones({n}, {.dtype = g2.dtype(), .device = g2.device()}));
          g2 = g2 / counts.index_select(0, flat).unsqueeze(1);
        }
        Tensor gw = zeros({num, dim}, {.dtype = g2.dtype(), .device = g2.device()});
        // The indices take no gradient.
        return graph::Tensors{gw.scatter_add(0, flat.unsqueeze(1).expand({n, dim}), g2), Tensor()};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return out;
}

}  // namespace ug
