#include "ug/core/batching.h"

#include <string>

#include "ug/core/allocator.h"

namespace ug {

void throw_no_batching_rule() {
  // The op running now (graph::OpCall sets it): what the calls per example stand in for.
  throw NoBatchingRule(detail::current_op ? std::string("[vmap] op '") + detail::current_op +
                                                "' has no batching rule for a batched tensor"
                                          : std::string("[vmap] a batched tensor's values were read outside an op "
                                                        "(item(), int(), a branch on a value)"));
}

namespace batching {

namespace {
thread_local std::vector<VmapFrame> t_open_vmaps;
thread_local int t_level = 0;
}  // namespace

const std::vector<VmapFrame>& open_vmaps() { return t_open_vmaps; }

VmapScope::VmapScope(int64_t size, Randomness randomness, bool batched) : level_(batched ? ++t_level : 0) {
  t_open_vmaps.push_back({level_, size, randomness});
}

VmapScope::~VmapScope() {
  t_open_vmaps.pop_back();
  if (level_ > 0) --t_level;
}

Tensor wrap(const Tensor& phys, int lvl) {
  if (phys.dim() == 0) fail("[vmap] cannot wrap a 0-d tensor as a batch");
  Shape logical(phys.shape().begin() + 1, phys.shape().end());
  Strides strides = contiguous_strides(logical);
  auto impl = make_ref<TensorImpl>(phys.storage(), std::move(logical), std::move(strides), 0, phys.dtype());
  impl->set_batch({phys.impl_ref(), lvl});
  return Tensor(std::move(impl));
}

Tensor shallow_copy(const Tensor& t) {
  const TensorImpl& i = t.impl();
  if (const BatchInfo* b = i.batch()) return wrap(shallow_copy(Tensor(b->physical)), b->level);
  return Tensor(make_ref<TensorImpl>(i.storage(), i.shape(), i.strides(), i.offset(), i.dtype()));
}

}  // namespace batching
}  // namespace ug
