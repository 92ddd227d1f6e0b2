#include "ug/train/strategy.h"

#include <algorithm>
#include <map>

#include "ug/core/error.h"
#include "ug/distributed/distributed.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/no_capture.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/reduce.h"

namespace ug::train {

namespace {
thread_local std::shared_ptr<const MirroredStrategy> innermost;
}  // namespace

std::shared_ptr<MirroredStrategy> MirroredStrategy::make(distributed::ProcessGroupPtr group) {
  if (!group) {
    if (!distributed::is_initialized()) distributed::init_process_group("mpi");
    group = distributed::default_group("MirroredStrategy");
  }
  if (group->rank() < 0) fail<ValueError>("[MirroredStrategy] this process is not a member of the group");
  return std::shared_ptr<MirroredStrategy>(new MirroredStrategy(std::move(group)));
}

int MirroredStrategy::num_replicas_in_sync() const { return group_->size(); }

MirroredStrategy::Scope::Scope(std::shared_ptr<const MirroredStrategy> strategy) : previous_(std::move(innermost)) {
  innermost = std::move(strategy);
}

MirroredStrategy::Scope::~Scope() { innermost = std::move(previous_); }

std::shared_ptr<const MirroredStrategy> current_strategy() { return innermost; }

namespace {

/** The gradients summed over the group: one all_reduce per dtype, over their elements laid end
 *  to end, copied out again. */
std::vector<Tensor> summed_over(const distributed::ProcessGroupPtr& group, const std::vector<Tensor>& grads) {
  NoGradGuard no_grad;
  std::map<DType, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < grads.size(); ++i) by_dtype[grads[i].dtype()].push_back(i);
  std::vector<Tensor> out(grads.size());
  for (const auto& [dtype, at] : by_dtype) {
    std::vector<Tensor> flat;
    for (size_t i : at) flat.push_back(grads[i].reshape({-1}));
    Tensor buffer = cat(flat).contiguous();
    distributed::all_reduce(buffer, distributed::ReduceOp::Sum, group);
    int64_t offset = 0;
    for (size_t i : at) {
      const int64_t n = grads[i].numel();
      out[i] = buffer.narrow(0, offset, n).reshape(Dims(grads[i].shape().begin(), grads[i].shape().end()));
      offset += n;
    }
  }
  return out;
}

/** At a variable's first step under the strategy, every replica must hold the first replica's
 *  value already, or this step's gradients came from other weights: all raise, the variables
 *  then holding the first replica's values. Run at the trace of a compiled step, not repeated by
 *  the program (every rank traces its first call, so they all take part). */
void check_mirrored(const std::vector<std::pair<Tensor, Tensor>>& pairs,
                    std::unordered_map<const TensorImpl*, Tensor>& mirrored,
                    const distributed::ProcessGroupPtr& group) {
  graph::NoCapture once;
  // A variable only this map still holds was dropped by its model: forget it, so its memory goes
  // and a new variable at its address counts as new.
  std::erase_if(mirrored, [](const auto& entry) { return entry.second.impl_ref()->use_count() == 1; });
  Tensor differs;  // made at a first step only: later steps find every variable mirrored
  for (const auto& [grad, var] : pairs) {
    if (!mirrored.emplace(var.impl_ref().get(), var).second) continue;
    if (!differs.defined()) differs = scalar_tensor(int64_t{0}, {.dtype = DType::Int64});
    const Tensor mine = var.clone();
    distributed::broadcast(var, group->world_ranks().front(), group);
    if (!equal(mine, var)) differs.fill_(1);
  }
  if (!differs.defined()) return;
  distributed::all_reduce(differs, distributed::ReduceOp::Max, group);
  if (differs.item<int64_t>())
    fail<RuntimeError>("[MirroredStrategy.run] the replicas' variables differ at their first step (", group->size(),
                       " replicas): make the model with the same seed on every replica (ug.manual_seed before "
                       "building it), as TensorFlow's mirrored variables start equal; they now hold the first "
                       "replica's values");
}

}  // namespace

MirroredStrategy::ReplicaContext::ReplicaContext(const std::shared_ptr<const MirroredStrategy>& strategy)
    : scope_(strategy),
      sum_gradients_([group = strategy->group(),
                      mirrored = strategy->mirrored_](const std::vector<std::pair<Tensor, Tensor>>& pairs) {
        NoGradGuard no_grad;
        check_mirrored(pairs, *mirrored, group);
        std::vector<Tensor> grads;
        for (const auto& [grad, var] : pairs)
          if (grad.defined()) grads.push_back(grad);
        const std::vector<Tensor> summed = summed_over(group, grads);
        std::vector<std::pair<Tensor, Tensor>> out;
        size_t next = 0;
        for (const auto& [grad, var] : pairs) out.emplace_back(grad.defined() ? summed.at(next++) : grad, var);
        return out;
      }) {}

Tensor MirroredStrategy::reduce(const std::string& op, const Tensor& value, std::optional<int64_t> axis) const {
  if (op != "SUM" && op != "MEAN")
    fail<ValueError>("[MirroredStrategy.reduce] op must be \"SUM\" or \"MEAN\", got \"", op, "\"");
  NoGradGuard no_grad;
  Tensor total = (axis ? value.sum({*axis}) : value).clone().contiguous();
  if (op == "MEAN" && !is_inexact(total.dtype())) total = total.to(get_default_dtype());
  distributed::all_reduce(total, distributed::ReduceOp::Sum, group_);
  if (op == "SUM") return total;
  // MEAN: over every replica's elements along the axis (TensorFlow's), or over the replicas;
  // the count a tensor too, so that a compiled step reduces it at every run as the others do.
  Tensor count = scalar_tensor(static_cast<double>(axis ? value.size(*axis) : 1), {.dtype = DType::Float64});
  distributed::all_reduce(count, distributed::ReduceOp::Sum, group_);
  return total / count;
}

Tensor MirroredStrategy::gather(const Tensor& value, int64_t axis) const {
  if (value.dim() == 0)
    fail<ValueError>("[MirroredStrategy.gather] needs a value with an axis to join along, got a 0-d tensor");
  const int64_t dim = axis < 0 ? axis + value.dim() : axis;
  if (dim < 0 || dim >= value.dim())
    fail<ValueError>("[MirroredStrategy.gather] axis ", axis, " is out of range for a value of shape ", value.shape());
  NoGradGuard no_grad;
  const int n = num_replicas_in_sync();
  // Each replica's shape first: all_gather moves equal shapes, so every value is padded to the
  // longest along the axis and cut back after.
  Shape shape = value.shape();
  const Tensor mine = empty({value.dim()}, {.dtype = DType::Int64});
  std::copy(shape.begin(), shape.end(), mine.data_ptr<int64_t>());
  std::vector<Tensor> shapes;
  for (int r = 0; r < n; ++r) shapes.push_back(zeros_like(mine));
  distributed::all_gather(shapes, mine, group_);
  int64_t longest = 0;
  std::vector<int64_t> sizes;
  for (int r = 0; r < n; ++r) {
    const int64_t* theirs = shapes[static_cast<size_t>(r)].data_ptr<int64_t>();
    for (int64_t d = 0; d < value.dim(); ++d)
      if (d != dim && theirs[d] != shape[static_cast<size_t>(d)])
        fail<ValueError>("[MirroredStrategy.gather] replica ", r, "'s value has shape ",
                         Shape(theirs, theirs + value.dim()), " and this replica's ", shape,
                         ": only the sizes along axis ", axis, " may differ");
    sizes.push_back(theirs[dim]);
    longest = std::max(longest, sizes.back());
  }
  shape[static_cast<size_t>(dim)] = longest;
  Tensor padded = zeros(shape, {.dtype = value.dtype()});
  padded.narrow(dim, 0, value.size(dim)).copy_(value);
  std::vector<Tensor> parts;
  for (int r = 0; r < n; ++r) parts.push_back(empty_like(padded));
  distributed::all_gather(parts, padded, group_);
  for (int r = 0; r < n; ++r) parts[static_cast<size_t>(r)] = parts[static_cast<size_t>(r)].narrow(dim, 0, sizes[r]);
  return cat(parts, dim);
}

Tensor MirroredStrategy::local_part(const Tensor& global_batch) const {
  if (global_batch.dim() == 0)
    fail<ValueError>("[MirroredStrategy] a batch to split over the replicas needs a batch dim, got a 0-d tensor");
  const int64_t rows = global_batch.size(0), n = num_replicas_in_sync(), rank = group_->rank();
  const int64_t base = rows / n, extra = rows % n;
  const int64_t start = rank * base + std::min(rank, extra);
  return global_batch.narrow(0, start, base + (rank < extra ? 1 : 0));
}

Tensor compute_average_loss(const Tensor& per_example_loss, std::optional<int64_t> global_batch_size,
                            const std::optional<Tensor>& sample_weight) {
  const Tensor weighted = sample_weight ? per_example_loss * *sample_weight : per_example_loss;
  int64_t global = 0;
  if (global_batch_size) {
    global = *global_batch_size;
  } else {
    const int64_t local = per_example_loss.dim() ? per_example_loss.size(0) : 1;
    const std::shared_ptr<const MirroredStrategy> strategy = current_strategy();
    global = local * (strategy ? strategy->num_replicas_in_sync() : 1);
  }
  if (global <= 0) fail<ValueError>("[compute_average_loss] global_batch_size must be positive, got ", global);
  return weighted.sum() / static_cast<double>(global);
}

}  // namespace ug::train
