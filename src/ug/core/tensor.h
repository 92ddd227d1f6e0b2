// ug::Tensor: a cheap, shared handle to a strided view over device memory. Copying a Tensor
// shares its data (like torch::Tensor); ops return new tensors or views.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ug/core/device.h"
#include "ug/core/dtype.h"
#include "ug/core/error.h"
#include "ug/core/scalar.h"
#include "ug/core/shape.h"
#include "ug/core/tensor_impl.h"
#include "ug/ops/unary_kinds.h"

namespace ug {

inline constexpr DType bool_ = DType::Bool;
inline constexpr DType uint8 = DType::UInt8;
inline constexpr DType int8 = DType::Int8;
inline constexpr DType int16 = DType::Int16;
inline constexpr DType uint16 = DType::UInt16;
inline constexpr DType uint32 = DType::UInt32;
inline constexpr DType uint64 = DType::UInt64;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType float16 = DType::Float16;
inline constexpr DType bfloat16 = DType::BFloat16;
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType complex64 = DType::Complex64;
inline constexpr DType complex128 = DType::Complex128;

class Tensor;
class Node;
using Dims = SmallVector<int64_t, 6>;

/** A[start:stop:step] along one dimension; absent ends mean the whole extent. */
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
struct NoneIndex {};      // inserts a size-1 dimension (Python None)
struct EllipsisIndex {};  // stands for as many full slices as needed (Python ...)
inline constexpr NoneIndex None{};
inline constexpr EllipsisIndex Ellipsis{};

struct TensorIndex;

/** A nested list of numbers for ug::tensor({{1, 2}, {3, 4}}). */
class NestedList {
 public:
  NestedList(double v) : value_(Scalar(v)) {}
  NestedList(float v) : value_(Scalar(v)) {}
  NestedList(int v) : value_(Scalar(v)) {}
  NestedList(long v) : value_(Scalar(v)) {}
  NestedList(long long v) : value_(Scalar(v)) {}
  NestedList(bool v) : value_(Scalar(v)) {}
  NestedList(std::initializer_list<NestedList> items) : value_(std::vector<NestedList>(items)) {}
  bool is_scalar() const { return value_.index() == 0; }
  const Scalar& scalar() const { return std::get<0>(value_); }
  const std::vector<NestedList>& items() const { return std::get<1>(value_); }

 private:
  std::variant<Scalar, std::vector<NestedList>> value_;
};

/** Creation options; C++20 designated initializers read well: ug::zeros({2, 3}, {.dtype = ug::float64}). */
struct Options {
  std::optional<DType> dtype;
  Device device;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- what the tensor is -------------------------------------------------------------
  bool defined() const { return static_cast<bool>(impl_); }
  const Shape& shape() const { return impl().shape(); }
  const Shape& sizes() const { return impl().shape(); }
  int64_t size(int64_t dim) const;
  const Strides& strides() const { return impl().strides(); }
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl().shape().size()); }
  int64_t ndim() const { return dim(); }
  int64_t numel() const { return impl().numel(); }
  DType dtype() const { return impl().dtype(); }
  Device device() const { return impl().storage()->device(); }
  int64_t storage_offset() const { return impl().offset(); }
  size_t element_size() const { return itemsize(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const { return impl().contiguous(); }
  bool is_floating_point() const { return ug::is_floating(dtype()); }
  /** The dims from the outermost in memory to the innermost (torch's dim_order, whose algorithm
   *  this follows); ambiguity_check throws where several orders fit (a size-1 dim, equal strides). */
  Dims dim_order(bool ambiguity_check = false) const;
  /** True when both tensors view the same storage. */
  bool shares_storage(const Tensor& other) const { return impl().storage() == other.impl().storage(); }
  void* raw_data() const { return impl().data(); }
  template <class T> T* data_ptr() const;
  const Ref<Storage>& storage() const { return impl().storage(); }
  TensorImpl& impl() const {
    if (!impl_) fail<RuntimeError>("[tensor] use of an undefined tensor");
    return *impl_;
  }
  const Ref<TensorImpl>& impl_ref() const { return impl_; }

  /** The value of a one-element tensor. */
  Scalar item() const;
  template <class T> T item() const { return item().to<T>(); }
  /** PyTorch-style printout: tensor([[1., 2.], [3., 4.]], dtype=float64). */
  std::string to_string() const;

  // ---- conversion ---------------------------------------------------------------------
  Tensor to(DType dtype, bool copy = false) const;
  Tensor to(Device device, bool copy = false) const;
  Tensor contiguous() const;
  Tensor clone() const;
  /** Copies src (broadcast to this shape, any dtype) into this tensor in place. */
  Tensor& copy_(const Tensor& src);

  // ---- views and shape ops (ops/view.cpp) ---------------------------------------------
  Tensor view(const Dims& shape) const;
  Tensor reshape(const Dims& shape) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor swapaxes(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
  Tensor swapdims(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
  Tensor permute(const Dims& order) const;
  /** The view with dim `source` moved to position `destination` (others keep their order). */
  Tensor movedim(int64_t source, int64_t destination) const;
  Tensor t() const;
  Tensor T() const;
  Tensor mT() const;
  Tensor squeeze() const;
  Tensor squeeze(const Dims& dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const Dims& sizes) const;
  Tensor expand(const Dims& shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor broadcast_to(const Dims& shape) const { return expand(shape); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor as_strided(const Dims& shape, const Dims& strides, int64_t offset) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const Dims& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // ---- indexing (ops/indexing.cpp) ----------------------------------------------------
  Tensor index(const std::vector<TensorIndex>& indices) const;
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value);
  Tensor& index_put_(const std::vector<TensorIndex>& indices, Scalar value);
  Tensor operator[](int64_t i) const { return select(0, i); }
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor& masked_fill_(const Tensor& mask, Scalar value);
  /** Writes value where every index is the same (torch's fill_diagonal_); wrap restarts a tall
   *  matrix's diagonal every columns + 1 rows. Every dim of a tensor of more than 2 must be equal. */
  Tensor& fill_diagonal_(Scalar value, bool wrap = false);
  Tensor masked_select(const Tensor& mask) const;
  Tensor flip(const Dims& dims) const;
  Tensor roll(const Dims& shifts, const Dims& dims = {}) const;
  Tensor repeat(const Dims& repeats) const;
  Tensor tile(const Dims& reps) const;
  Tensor nonzero() const;

  // ---- elementwise math (ops/unary.cpp, ops/binary.cpp) --------------------------------
#define UG_DECLARE_UNARY_METHOD(Op, method) \
  Tensor method() const;                    \
  Tensor& method##_();
  UG_UNARY_MATH_OPS(UG_DECLARE_UNARY_METHOD)
#undef UG_DECLARE_UNARY_METHOD
#define UG_DECLARE_PREDICATE_METHOD(Op, method) Tensor method() const;
  UG_UNARY_PREDICATES(UG_DECLARE_PREDICATE_METHOD)
#undef UG_DECLARE_PREDICATE_METHOD
  /** approximate: "none" (exact, with erf) or "tanh". */
  Tensor gelu(std::string_view approximate = "none") const;

#define UG_DECLARE_BINARY_METHOD(Op, name) \
  Tensor name(const Tensor& other) const;  \
  Tensor name(Scalar other) const;         \
  Tensor& name##_(const Tensor& other);    \
  Tensor& name##_(Scalar other);
  UG_BINARY_PUBLIC(UG_DECLARE_BINARY_METHOD)
#undef UG_DECLARE_BINARY_METHOD
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);
  Tensor lerp(const Tensor& end, Scalar weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& fill_(Scalar value);
  Tensor& zero_() { return fill_(0); }

  // ---- reductions (ops/reduce.cpp) ------------------------------------------------------
  Tensor sum(std::optional<DType> dtype = {}) const;
  Tensor sum(const Dims& dims, bool keepdim = false, std::optional<DType> dtype = {}) const;
  Tensor mean(std::optional<DType> dtype = {}) const;
  Tensor mean(const Dims& dims, bool keepdim = false, std::optional<DType> dtype = {}) const;
  Tensor prod(std::optional<DType> dtype = {}) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = {}) const;
  Tensor max() const;
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(const Dims& dims = {}, bool keepdim = false) const;
  Tensor amin(const Dims& dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = {}, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = {}, bool keepdim = false) const;
  Tensor var(const std::optional<Dims>& dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(const std::optional<Dims>& dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor norm(Scalar p = 2, const std::optional<Dims>& dims = {}, bool keepdim = false) const;
  Tensor logsumexp(const Dims& dims, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor cumsum(int64_t dim) const;
  Tensor cumprod(int64_t dim) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;

  // ---- linear algebra (ops/linalg.cpp) --------------------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;

  // ---- autograd (autograd/tensor_autograd.cpp) --------------------------------------------
  bool requires_grad() const;
  /** Marks a leaf as requiring grad (floating dtypes only). */
  Tensor& requires_grad_(bool requires_grad = true);
  /** The gradient accumulated by backward (undefined until then). */
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  /** The node that made this tensor, or null for leaves. */
  Ref<Node> grad_fn() const;
  bool is_leaf() const;
  /** The same data, cut off from the graph. */
  Tensor detach() const;
  /** torch's `t.data = src`: this tensor (a leaf) now holds src's data, shape and dtype;
   *  every handle to it sees the change and its requires_grad stays. */
  void set_data(const Tensor& src) const;
  /** Keep .grad for this non-leaf tensor too. */
  void retain_grad() const;
  bool retains_grad() const;
  /** Computes gradients of this tensor w.r.t. graph leaves and adds them into their .grad
   *  (only into `inputs`' when given, as torch's backward(inputs=)). gradient may be omitted
   *  for a one-element tensor; the graph is freed unless retained. */
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = {}, bool create_graph = false,
                const std::vector<Tensor>& inputs = {}) const;
  /** Calls fn with this tensor's gradient during backward; fn may return a replacement
   *  (or an undefined tensor to keep it). Returns an id for remove_hook. */
  size_t register_hook(std::function<Tensor(const Tensor&)> fn) const;
  void remove_hook(size_t id) const;
  /** How many in-place changes the data has seen (torch's _version). */
  uint32_t version() const { return impl().storage()->version(); }

  // ---- in-place bookkeeping ------------------------------------------------------------
  /** Called by every in-place op: views of the same storage see the change. */
  void bump_version() const { impl().storage()->bump_version(); }

 private:
  Ref<TensorImpl> impl_;
};

template <class T> T* Tensor::data_ptr() const {
  if (dtype_of<T> != dtype()) fail<TypeError>("[data_ptr] tensor has dtype ", dtype(), ", asked for ", dtype_of<T>);
  return static_cast<T*>(raw_data());
}

/** One entry of an indexing expression: t.index({0, Slice{1, {}, 2}, None, mask}). */
struct TensorIndex {
  std::variant<int64_t, Slice, NoneIndex, EllipsisIndex, bool, Tensor> value;
  TensorIndex(int v) : value(static_cast<int64_t>(v)) {}
  TensorIndex(long v) : value(static_cast<int64_t>(v)) {}
  TensorIndex(long long v) : value(static_cast<int64_t>(v)) {}
  TensorIndex(Slice s) : value(s) {}
  TensorIndex(NoneIndex) : value(NoneIndex{}) {}
  TensorIndex(EllipsisIndex) : value(EllipsisIndex{}) {}
  TensorIndex(bool b) : value(b) {}
  TensorIndex(Tensor t) : value(std::move(t)) {}
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- creation (ops/creation.cpp) -------------------------------------------------------
/** A fresh tensor with uninitialised contents. */
Tensor empty(const Dims& shape, Options opts = {});
Tensor zeros(const Dims& shape, Options opts = {});
Tensor ones(const Dims& shape, Options opts = {});
Tensor full(const Dims& shape, Scalar value, Options opts = {});
Tensor empty_like(const Tensor& t, Options opts = {});
Tensor zeros_like(const Tensor& t, Options opts = {});
Tensor ones_like(const Tensor& t, Options opts = {});
Tensor full_like(const Tensor& t, Scalar value, Options opts = {});
Tensor scalar_tensor(Scalar value, Options opts = {});
Tensor tensor(const NestedList& values, Options opts = {});
/** Values start, start+step, ... below end; int64 when all three are integers. */
Tensor arange(Scalar end, Options opts = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, Options opts = {});
Tensor linspace(double start, double end, int64_t steps, Options opts = {});
Tensor eye(int64_t n, std::optional<int64_t> m = {}, Options opts = {});
/** A tensor over memory that someone else owns; `release(ctx)` runs when it is freed. */
Tensor from_blob(void* data, const Dims& shape, const Dims& strides, DType dtype, void (*release)(void*), void* ctx,
                 Device device = {});

}  // namespace ug
