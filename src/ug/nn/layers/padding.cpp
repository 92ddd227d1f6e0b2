#include "ug/nn/layers/padding.h"

#include "ug/core/python_repr.h"
#include "ug/ops/join.h"

namespace ug::nn {

PadImpl::PadImpl(std::string type_name, int64_t dims, Dims padding, std::string mode, std::optional<double> value)
    : Module(std::move(type_name)),
      padding_(padding.size() == 1 ? Dims(static_cast<size_t>(2 * dims), padding[0]) : std::move(padding)),
      mode_(std::move(mode)),
      value_(value) {
  if (static_cast<int64_t>(padding_.size()) != 2 * dims)
    fail("[", this->type_name(), "] padding must be one size or ", 2 * dims, " sizes, got ", tuple_repr(padding_));
}

Tensor PadImpl::forward(const Tensor& x) {
  return pad(x, padding_, mode_, value_ ? std::optional<Scalar>(*value_) : std::nullopt);
}

std::string PadImpl::extra_repr() const {
  if (!value_) return tuple_repr(padding_);
  return "padding=" + tuple_repr(padding_) + ", value=" + python_repr(*value_);
}

}  // namespace ug::nn
