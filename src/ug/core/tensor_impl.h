// What a Tensor handle points at: a view (shape, strides, offset, dtype) over shared storage.
#pragma once

#include <cstdint>
#include <memory>

#include "ug/core/dtype.h"
#include "ug/core/ref.h"
#include "ug/core/shape.h"
#include "ug/core/storage.h"

namespace ug {

/** What autograd keeps on a tensor (grad, grad_fn, hooks); defined by the autograd layer,
 *  so the core does not depend on it. Absent until a tensor takes part in autograd. */
struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
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
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
  }
  AutogradMetaBase* autograd_meta() const { return autograd_.get(); }
  /** Made by a view op over another tensor's storage. */
  bool is_view() const { return is_view_; }
  void set_is_view() { is_view_ = true; }
  void set_autograd_meta(std::unique_ptr<AutogradMetaBase> meta) { autograd_ = std::move(meta); }

 private:
  Ref<Storage> storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_;
  int64_t numel_;
  DType dtype_;
  bool contiguous_;
  bool is_view_ = false;
  std::unique_ptr<AutogradMetaBase> autograd_;
};

}  // namespace ug
