// Bit reinterpretation: a view over the same storage with another dtype, its layout following
// torch's view.dtype rule; JAX's bitcast_convert_type is composed from it.
#include "ug/ops/bitcast.h"

#include "ug/core/batching.h"
#include "ug/graph/op_call.h"

namespace ug {

namespace {

const graph::OpDef kViewDtype("view_dtype");

/** x's storage as dtype, laid out by torch's rule (its messages, named [view]). */
Tensor reinterpret(const Tensor& x, DType dtype) {
  const auto from = static_cast<int64_t>(itemsize(x.dtype())), to = static_cast<int64_t>(itemsize(dtype));
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t offset = x.storage_offset();
  if (from != to) {
    auto refuse = [&](const auto&... why) {
      fail<RuntimeError>("[view] ", why..., " to view ", x.dtype(), " as ", dtype, " (different element sizes)");
    };
    if (shape.empty()) refuse("a 0-d tensor has no last dim to resize");
    const size_t last = shape.size() - 1;
    if (strides[last] != 1) refuse("the last dim must have stride 1 (got ", strides[last], ")");
    if (from > to) {
      const int64_t ratio = from / to;
      for (size_t d = 0; d < last; ++d) strides[d] *= ratio;
      shape[last] *= ratio;
      offset *= ratio;
    } else {
      const int64_t ratio = to / from;
      if (shape[last] % ratio) refuse("the last dim's size must divide by ", ratio, " (got ", shape[last], ")");
      if (offset % ratio) refuse("the storage offset must divide by ", ratio, " (got ", offset, ")");
      for (size_t d = 0; d < last; ++d)
        if (strides[d] % ratio) refuse("the stride of dim ", d, " must divide by ", ratio, " (got ", strides[d], ")");
      for (size_t d = 0; d < last; ++d) strides[d] /= ratio;
      shape[last] /= ratio;
      offset /= ratio;
    }
  }
  auto impl = make_ref<TensorImpl>(x.storage(), std::move(shape), std::move(strides), offset, dtype);
  impl->set_is_view();
  return Tensor(std::move(impl));
}

}  // namespace

Tensor view(const Tensor& x, DType dtype) {
  graph::OpCall call(kViewDtype);
  // A program's value may be laid out otherwise than when traced: its contiguous form always
  // fits the rule that the traced one passed.
  if (call.capturing())
    call.set_replay([dtype](const graph::Tensors& in) { return graph::Tensors{view(in[0].contiguous(), dtype)}; },
                    graph::ReplaySizes::None);
  Tensor out;
  if (const int lvl = batching::level(x)) {
    // The batch dim leads the physical tensor: the rule applies to the example's dims.
    if (x.dim() == 0 && itemsize(x.dtype()) != itemsize(dtype))
      fail<RuntimeError>("[view] a 0-d tensor has no last dim to resize to view ", x.dtype(), " as ", dtype,
                         " (different element sizes)");
    out = batching::wrap(view(batching::physical(x, lvl), dtype), lvl);
  } else {
    out = reinterpret(x, dtype);
  }
  call.finish({&x}, {&out});  // no derivative: torch's view.dtype is not differentiable
  return out;
}

Tensor bitcast_convert_type(const Tensor& x, DType dtype) {
  if ((x.dtype() == DType::Bool) != (dtype == DType::Bool))
    fail<TypeError>("[bitcast_convert_type] bool converts only to bool, as in JAX (got ", x.dtype(), " to ", dtype,
                    "); Tensor.view(dtype) reads bools as bytes");
  const size_t from = itemsize(x.dtype()), to = itemsize(dtype);
  const Tensor in = x.contiguous();
  Tensor out;
  if (from == to) {
    out = view(in, dtype);
  } else if (from > to) {
    out = view(in.unsqueeze(-1), dtype);  // the new last dim holds each element's parts
  } else {
    const auto ratio = static_cast<int64_t>(to / from);
    if (x.dim() == 0 || x.size(-1) != ratio)
      fail("[bitcast_convert_type] converting ", x.dtype(), " to ", dtype, " needs a last dim of size ", ratio,
           "; got shape ", x.shape());
    out = view(in, dtype).squeeze({-1});
  }
  return out.clone();  // a new array, as JAX's
}

}  // namespace ug
