// Conversion and copying: Tensor::to (dtype, device), clone, contiguous, copy_ and fill_.
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/inplace_history.h"
#include "ug/ops/complex.h"

namespace ug {

namespace {
const graph::OpDef kTo("to"), kToDevice("to_device"), kClone("clone"), kCopy("copy_"), kFill("fill_");
}

Tensor Tensor::to(DType target, bool copy) const {
  if (target == dtype() && !copy) return *this;
  // torch warns and keeps the real part; an op that casts its complex input to a real dtype
  // would silently answer for the real part alone, so unigrad asks for it explicitly (bool,
  // z != 0, loses nothing)
  if (is_complex(dtype()) && !is_complex(target) && target != DType::Bool)
    fail<TypeError>("[to] casting ", dtype(), " to ", target,
                    " would discard the imaginary part; take ug.real(z) (z.real) first, or z.abs()");
  graph::OpCall call(kTo);
  Tensor out;
  if (int lvl = batching::level(*this)) {
    out = batching::wrap(batching::physical(*this, lvl).to(target, copy), lvl);
  } else {
    out = empty(shape(), {.dtype = target, .device = device()});
    backend_for(device()).copy(*this, out);
  }
  call.finish(
      {this}, {&out}, {},
      [source = dtype()](graph::Saved, graph::Tensors&& g) {
        return graph::Tensors{real_part_if(g[0], source).to(source)};
      },
      [target](const graph::Tensors& t) { return graph::Tensors{t[0].to(target)}; });
  return out;
}

Tensor Tensor::to(Device target, bool copy) const {
  if (target == device() && !copy) return *this;
  if (!device_available(target))
    fail<RuntimeError>("[to] cannot move a tensor to ", target,
                       ": that device is not available (ug.cuda.is_available() is False)");
  graph::OpCall call(kToDevice);
  Tensor out;
  if (int lvl = batching::level(*this)) {
    out = batching::wrap(batching::physical(*this, lvl).to(target, copy), lvl);
  } else {
    out = empty(shape(), {.dtype = dtype(), .device = target});
    backend_for(device()).copy(*this, out);
  }
  call.finish(
      {this}, {&out}, {},
      [source = device()](graph::Saved, graph::Tensors&& g) { return graph::Tensors{g[0].to(source)}; },
      [target](const graph::Tensors& t) { return graph::Tensors{t[0].to(target)}; });
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  graph::OpCall call(kClone);
  Tensor out;
  if (int lvl = batching::level(*this)) {
    out = batching::wrap(batching::physical(*this, lvl).clone(), lvl);
  } else {
    out = empty(shape(), {.dtype = dtype(), .device = device()});
    backend_for(device()).copy(*this, out);
  }
  call.finish(
      {this}, {&out}, {}, [](graph::Saved, graph::Tensors&& g) { return std::move(g); },
      [](const graph::Tensors& t) { return graph::Tensors{t[0].clone()}; });
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  graph::OpCall call(kCopy);
  if (src.device() != device()) fail<RuntimeError>("[copy_] source on ", src.device(), ", destination on ", device());
  if (ops::inplace_needs_rebase(*this, &src, "copy_")) {
    // The copy's gradient flows to src (cast back to its dtype); this tensor's old value is gone.
    ops::rebase_history(*this, src.to(dtype()).expand(shape()).clone());
    call.finish({&src}, {this});  // for a capture: the history is the ops' own
    return *this;
  }
  // A source that overlaps the destination is copied first, so no element is read after
  // it was overwritten.
  Tensor s = (shares_storage(src) ? src.clone() : src).expand(shape());
  ops::write_into(*this, s);
  call.finish({&src}, {this});
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  graph::OpCall call(kFill);
  // No graph form: a program calls back its functional form, a new tensor of the value (the
  // graph gives the filled tensor that new value; a view of it elsewhere is refused there).
  if (call.capturing())
    call.set_replay([shape = shape(), value, dtype = dtype(), device = device()](const graph::Tensors&) {
      return graph::Tensors{full(Dims(shape.begin(), shape.end()), value, {.dtype = dtype, .device = device})};
    });
  if (ops::inplace_needs_rebase(*this, nullptr, "fill_")) {
    ops::rebase_history(*this, full_like(*this, value));
    call.finish({}, {this});
    return *this;
  }
  if (const int lvl = batching::level(*this)) {
    batching::physical(*this, lvl).fill_(value);  // counts the write
  } else {
    backend_for(device()).fill(*this, value);
    bump_version();
  }
  call.finish({}, {this});
  return *this;
}

}  // namespace ug
