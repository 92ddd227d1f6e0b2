// embedding_bag from ops: the rows are one embedding lookup, each entry is given its bag, and
// the bags are sums (index_add) or maxima (scatter_reduce's amax) of their entries' rows. Its
// derivatives are those ops'.
#include "ug/nn/functional/embedding_bag.h"

#include <limits>

#include "ug/core/value_read.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/nn.h"
#include "ug/ops/reduce.h"
#include "ug/ops/value_checks.h"

namespace ug::nn::functional {

namespace {

/** Each entry's bag, for a 1-d input of n entries cut at offsets (bag starts; with
 *  include_last_offset the last one closes the last bag, which torch's general kernels take
 *  to the end of the input whatever it says), after torch's checks. */
Tensor bags_of_offsets(const Tensor& offsets, int64_t n, int64_t bags, const Shape& input_shape) {
  if (offsets.dim() != 1)
    fail("[embedding_bag] offsets has to be a 1D Tensor, got shape ", offsets.shape(), " (input shape ", input_shape,
         ")");
  if (offsets.dtype() != DType::Int64 && offsets.dtype() != DType::Int32)
    fail<RuntimeError>("[embedding_bag] expected offsets of dtype int64 or int32, got ", offsets.dtype());
  const Tensor off = offsets.to(DType::Int64);
  const Options ints{.dtype = DType::Int64, .device = off.device()};
  if (bags == 0) return zeros({n}, ints);
  ValueReadScope check;
  if (const int64_t first = off[0].item<int64_t>(); first != 0)
    fail<RuntimeError>("[embedding_bag] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to ",
                       "start from position 0. However, got ", first);
  if (const int64_t last = off[off.numel() - 1].item<int64_t>(); last > n)
    fail<RuntimeError>("[embedding_bag] offsets[-1] can not be greater than input's length ", n,
                       " but got offsets[-1] of ", last);
  if (off.numel() > 1 && off.narrow(0, 1, off.numel() - 1).lt(off.narrow(0, 0, off.numel() - 1)).any().item<bool>())
    fail<RuntimeError>("[embedding_bag] offsets must be non-decreasing, got ", off.numel(), " offsets for ", n,
                       " entries");
  // an entry's bag: how many of the later bags' starts lie at or before it
  const Tensor starts = index_add(zeros({n + 1}, ints), 0, off.narrow(0, 1, bags - 1), ones({bags - 1}, ints));
  return starts.narrow(0, 0, n).cumsum(0);
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& offsets,
                     std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, std::string_view mode,
                     const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
                     std::optional<int64_t> padding_idx) {
  if (weight.dim() != 2)
    fail("[embedding_bag] weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim(), " (shape ",
         weight.shape(), ")");
  if (input.dtype() != DType::Int64 && input.dtype() != DType::Int32)
    fail<RuntimeError>("[embedding_bag] expected indices of dtype int64 or int32, got ", input.dtype(), " (shape ",
                       input.shape(), ")");
  if (mode != "sum" && mode != "mean" && mode != "max")
    fail("[embedding_bag] mode has to be one of sum, mean or max, got '", mode, "'");
  if (per_sample_weights) {
    if (mode != "sum")
      fail<RuntimeError>("[embedding_bag] per_sample_weights is only supported for mode='sum' (got mode='", mode, "')");
    if (per_sample_weights->shape() != input.shape())
      fail("[embedding_bag] If per_sample_weights (", per_sample_weights->shape(),
           ") is not None, then it must have the same shape as the input (", input.shape(), ")");
    if (per_sample_weights->dtype() != weight.dtype())
      fail<RuntimeError>("[embedding_bag] per_sample_weights of dtype ", per_sample_weights->dtype(),
                         " must have weight's dtype ", weight.dtype());
  }
  const int64_t rows = weight.size(0), dim = weight.size(1);
  if (padding_idx && (*padding_idx < -rows || *padding_idx >= rows))
    fail<RuntimeError>("[embedding_bag] padding_idx must be within the number of embeddings, ", -rows, " through ",
                       rows - 1, ", but got ", *padding_idx);
  const std::optional<int64_t> pad =
      padding_idx ? std::optional(*padding_idx < 0 ? *padding_idx + rows : *padding_idx) : std::nullopt;
  const Options ints{.dtype = DType::Int64, .device = input.device()};
  Tensor idx = input.to(DType::Int64).reshape({-1}), bag;
  int64_t bags = 0;
  if (input.dim() == 2) {
    if (offsets)
      fail("[embedding_bag] if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed ",
           "length sequences. However, found offsets of shape ", offsets->shape(), " (input shape ", input.shape(),
           ")");
    bags = input.size(0);
    bag = arange(bags, ints).unsqueeze(1).expand({bags, input.size(1)}).reshape({-1});
  } else if (input.dim() == 1) {
    if (!offsets) fail("[embedding_bag] offsets has to be a 1D Tensor but got None (input shape ", input.shape(), ")");
    bags = std::max<int64_t>(0, offsets->numel() - (include_last_offset ? 1 : 0));
    bag = bags_of_offsets(*offsets, idx.numel(), bags, input.shape());
  } else {
    fail("[embedding_bag] input has to be 1D or 2D Tensor, but got Tensor of dimension ", input.dim(), " (shape ",
         input.shape(), ")");
  }
  if (idx.numel() > 0) {
    const auto [lo, hi] = ops::integer_range(idx);
    if (lo < 0 || hi >= rows)
      fail<RuntimeError>("[embedding_bag] index ", lo < 0 ? lo : hi, " is out of range for weight of shape ",
                         weight.shape());
  }
  // 1 for the entries that count, 0 for padding_idx's
  const Tensor counts = pad ? idx.ne(*pad).to(DType::Int64) : ones({idx.numel()}, ints);
  const Tensor looked_up = embedding(idx, weight, pad, max_norm, norm_type, scale_grad_by_freq);
  const Tensor kept = counts.to(weight.dtype());
  const Tensor out = zeros({bags, dim}, {.dtype = weight.dtype(), .device = weight.device()});
  if (bags == 0 || idx.numel() == 0) return out;
  if (mode == "max") {
    const Tensor values = where(counts.ne(0).unsqueeze(1), looked_up, Scalar(-std::numeric_limits<double>::infinity()));
    const Tensor top = scatter_reduce(out, 0, bag.unsqueeze(1).expand({idx.numel(), dim}), values, "amax", false);
    const Tensor filled = index_add(zeros({bags}, ints), 0, bag, counts);
    return where(filled.eq(0).unsqueeze(1), Scalar(0.0), top);  // bags with nothing in them
  }
  const Tensor scale = per_sample_weights ? kept * per_sample_weights->reshape({-1}) : kept;
  const Tensor sums = index_add(out, 0, bag, looked_up * scale.unsqueeze(1));
  if (mode == "sum") return sums;
  const Tensor sizes = index_add(zeros({bags}, {.dtype = weight.dtype(), .device = weight.device()}), 0, bag, kept);
  return sums / clamp(sizes, Scalar(1), std::nullopt).unsqueeze(1);
}

}  // namespace ug::nn::functional
