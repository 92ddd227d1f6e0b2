// What a Tensor handle points at: a view (shape, strides, offset, dtype) over shared storage.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ug/core/dtype.h"
#include "ug/core/ref.h"
#include "ug/core/shape.h"
#include "ug/core/storage.h"

namespace ug {

/** What autograd keeps on a tensor (grad, grad_fn, hooks); defined by the autograd layer,
 *  so the core does not depend on it. Absent until a tensor takes part in autograd. */
/** Thrown when an op meets a batched tensor it has no rule for (see BatchInfo). */
[[noreturn]] void throw_no_batching_rule();

struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
};

class TensorImpl;

/** What makes a tensor a batched view inside ug::vmap: the logical tensor (the impl's shape)
 *  is one example of `physical`, whose dim 0 is the batch dim of vmap level `level`. */
struct BatchInfo {
  Ref<TensorImpl> physical;
  int level;
};

class TensorImpl final : public RefCounted {
 public:
  TensorImpl(Ref<Storage> storage, Shape shape, Strides strides, int64_t offset, DType dtype)
      : storage_(std::move(storage)),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset),
        numel_(numel_of(shape_)),
        dtype_(dtype),
        contiguous_(is_contiguous(shape_, strides_)) {}

  const Ref<Storage>& storage() const { return storage_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  bool contiguous() const { return contiguous_; }
  /** The first element. A batched tensor has no memory layout of its own: an op reaching
   *  its data directly has no batching rule, and vmap falls back to one call per example. */
  void* data() const {
    if (batch_) throw_no_batching_rule();
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
  }
  const BatchInfo* batch() const { return batch_.get(); }
  void set_batch(BatchInfo info) {
    batch_ = std::make_unique<BatchInfo>(std::move(info));
    contiguous_ = false;  // no layout of its own: contiguous() must go through the op
  }
  AutogradMetaBase* autograd_meta() const { return autograd_.get(); }
  /** Made by a view op over another tensor's storage. */
  bool is_view() const { return is_view_; }
  void set_is_view() { is_view_ = true; }
  void set_autograd_meta(std::unique_ptr<AutogradMetaBase> meta) { autograd_ = std::move(meta); }
  /** Registered with a module as a trainable parameter (nn.Parameter). */
  bool is_parameter() const { return is_parameter_; }
  void set_is_parameter(bool on) { is_parameter_ = on; }
  /** Marked by nn.Buffer: whether it registers as a persistent buffer when assigned to a module
   *  attribute; nullopt for a tensor not so marked. */
  std::optional<bool> buffer_mark() const { return buffer_mark_; }
  void set_buffer_mark(bool persistent) { buffer_mark_ = persistent; }
  /** Points this impl at other's data (shape, strides, dtype, storage), keeping its identity
   *  and autograd state: how Module::to and Tensor::set_data change a parameter in place. */
  void set_data(const TensorImpl& other) {
    storage_ = other.storage_;
    shape_ = other.shape_;
    strides_ = other.strides_;
    offset_ = other.offset_;
    numel_ = other.numel_;
    dtype_ = other.dtype_;
    contiguous_ = other.contiguous_;
  }

 private:
  Ref<Storage> storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_;
  int64_t numel_;
  DType dtype_;
  bool contiguous_;
  bool is_view_ = false;
  bool is_parameter_ = false;
  std::optional<bool> buffer_mark_;
  std::unique_ptr<AutogradMetaBase> autograd_;
  std::unique_ptr<BatchInfo> batch_;
};

}  // namespace ug
