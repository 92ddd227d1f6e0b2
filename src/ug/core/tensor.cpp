// The Tensor handle's own members: sizes, element access, conversion and copying.
#include "ug/core/tensor.h"

#include "ug/autograd/forward.h"
#include "ug/autograd/record.h"
#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/onnx/trace.h"

namespace ug {

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_floating()) return os << s.to_double();
  return os << s.to_int();
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

Scalar Tensor::item() const {
  if (numel() != 1)
    fail("[item] a tensor with ", numel(), " elements cannot be converted to a scalar (shape ",
         shape(), ")");
  Scalar result;
  UG_DISPATCH_ALL(dtype(), "item", {
    scalar_t v = *static_cast<const scalar_t*>(raw_data());
    if constexpr (std::is_same_v<scalar_t, bool>) result = Scalar(v);
    else if constexpr (std::is_integral_v<scalar_t>) result = Scalar(static_cast<int64_t>(v));
    else result = Scalar(static_cast<double>(static_cast<acc_t<scalar_t>>(v)));
  });
  return result;
}

namespace {
const onnx::TracedOp kTo("to"), kToDevice("to_device"), kClone("clone"), kCopy("copy_"), kFill("fill_");
}

Tensor Tensor::to(DType target, bool copy) const {
  if (target == dtype() && !copy) return *this;
  onnx::TraceScope trace(kTo);
  Tensor out;
  if (int lvl = batching::level(*this)) {
    out = batching::wrap(batching::physical(*this, lvl).to(target, copy), lvl);
  } else {
    out = empty(shape(), {.dtype = target, .device = device()});
    backend_for(device()).copy(*this, out);
  }
  if (forward::active() && is_floating(target))
    forward::propagate({this}, out, [target](const std::vector<Tensor>& t) { return t[0].to(target); });
  if (trace) trace.record({*this}, {out});
  if (is_floating(target) && autograd::needs_grad({this})) {
    DType source = dtype();
    autograd::record("to", {*this}, {&out}, [source](std::vector<Tensor>&& g, Node*) {
      return std::vector<Tensor>{g[0].to(source)};
    });
  }
  return out;
}

Tensor Tensor::to(Device target, bool copy) const {
  if (target == device() && !copy) return *this;
  if (!device_available(target))
    fail<RuntimeError>("[to] cannot move a tensor to ", target,
                       ": that device is not available (ug.cuda.is_available() is False)");
  onnx::TraceScope trace(kToDevice);
  Tensor out = empty(shape(), {.dtype = dtype(), .device = target});
  backend_for(device()).copy(*this, out);
  if (trace) trace.record({*this}, {out});
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  onnx::TraceScope trace(kClone);
  Tensor out;
  if (int lvl = batching::level(*this)) {
    out = batching::wrap(batching::physical(*this, lvl).clone(), lvl);
  } else {
    out = empty(shape(), {.dtype = dtype(), .device = device()});
    backend_for(device()).copy(*this, out);
  }
  if (forward::active()) forward::propagate({this}, out, [](const std::vector<Tensor>& t) { return t[0].clone(); });
  if (trace) trace.record({*this}, {out});
  if (autograd::needs_grad({this}))
    autograd::record("clone", {*this}, {&out}, [](std::vector<Tensor>&& g, Node*) { return std::move(g); });
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  onnx::TraceScope trace(kCopy);
  if (src.device() != device())
    fail<RuntimeError>("[copy_] source on ", src.device(), ", destination on ", device());
  if (autograd::inplace_needs_rebase(*this, &src, "copy_")) {
    // The copy's gradient flows to src (cast back to its dtype); this tensor's old value is gone.
    autograd::rebase_history(*this, src.to(dtype()).expand(shape()).clone());
    return *this;
  }
  // A source that overlaps the destination is copied first, so no element is read after
  // it was overwritten.
  Tensor s = (shares_storage(src) ? src.clone() : src).expand(shape());
  backend_for(device()).copy(s, *this);
  bump_version();
  if (trace) trace.record({src}, {*this});
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  onnx::TraceScope trace(kFill);
  if (autograd::inplace_needs_rebase(*this, nullptr, "fill_")) {
    autograd::rebase_history(*this, full_like(*this, value));
    return *this;
  }
  backend_for(device()).fill(*this, value);
  bump_version();
  if (trace) trace.record({}, {*this});
  return *this;
}

Tensor from_blob(void* data, const Dims& shape, const Dims& strides, DType dtype,
                 void (*release)(void*), void* ctx, Device device) {
  if (shape.size() != strides.size())
    fail("[from_blob] shape ", shape, " and strides have different lengths");
  int64_t extent = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) fail("[from_blob] negative size or stride");
    if (shape[d] == 0) extent = 0;
  }
  if (extent) {
    for (size_t d = 0; d < shape.size(); ++d) extent += (shape[d] - 1) * strides[d];
  }
  auto storage = make_ref<Storage>(data, static_cast<size_t>(extent) * itemsize(dtype), device,
                                   release, ctx);
  return Tensor(make_ref<TensorImpl>(std::move(storage), shape, Strides(strides.begin(), strides.end()), 0, dtype));
}

}  // namespace ug
