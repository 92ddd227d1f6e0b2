#include "ug/data/pipeline.h"

namespace ug::data {

Pipeline Pipeline::from_tensor_slices(Example tensors) { return Pipeline(tensor_slices_node(std::move(tensors))); }
Pipeline Pipeline::from_tensor_slices(const OrderedDict<Tensor>& named) {
  Example tensors;
  for (const auto& [name, t] : named) {
    tensors.push_back(t);
    tensors.names.push_back(name);
  }
  return from_tensor_slices(std::move(tensors));
}
Pipeline Pipeline::shuffle(int64_t buffer_size, std::optional<uint64_t> seed) const {
  return Pipeline(shuffle_node(node_, buffer_size, seed));
}
Pipeline Pipeline::map(MapFn fn) const { return Pipeline(map_node(node_, std::move(fn))); }
Pipeline Pipeline::batch(int64_t batch_size, bool drop_remainder) const {
  return Pipeline(batch_node(node_, batch_size, drop_remainder));
}
Pipeline Pipeline::prefetch(int64_t buffer_size) const { return Pipeline(prefetch_node(node_, buffer_size)); }
Pipeline Pipeline::repeat(std::optional<int64_t> count) const { return Pipeline(repeat_node(node_, count)); }
Pipeline Pipeline::take(int64_t count) const { return Pipeline(take_node(node_, count)); }

void Pipeline::start_epoch(int64_t epoch) {
  pass_.reset();  // the previous pass's threads stop first
  pass_ = open(epoch);
  next_epoch_ = epoch + 1;
}

std::optional<Example> Pipeline::next() {
  if (!pass_) pass_ = begin_pass();
  return pass_->next();
}

}  // namespace ug::data
