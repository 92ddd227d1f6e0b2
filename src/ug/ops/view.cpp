// Views: ops that return a tensor sharing storage with their input (new shape, strides
// and offset only), wherever PyTorch returns a view. reshape copies only when it must.
#include "ug/ops/view.h"

#include "ug/core/tensor.h"
#include "ug/graph/forward.h"
#include "ug/graph/op_call.h"
#include "ug/graph/size_reads.h"
#include "ug/ops/rules.h"
#include "ug/ops/binary.h"
#include "ug/ops/inplace_history.h"
#include "ug/ops/join.h"

namespace ug {

namespace {

using ViewFn = std::function<Tensor(const Tensor&)>;

Tensor make_view(const Tensor& t, Shape shape, Strides strides, int64_t offset) {
  auto impl = make_ref<TensorImpl>(t.storage(), std::move(shape), std::move(strides), offset, t.dtype());
  impl->set_is_view();
  Tensor view(std::move(impl));
  // An in-place write into the view or its base while gradients or tangents are recorded needs
  // the base, also where only the written value requires grad (`buf[:, 0] += w`, buf made by
  // zeros). Not under no_grad outside forward mode (a compiled program's plain run is one): a
  // handle more on the base's memory would keep programs from writing into a buffer that dies.
  if ((GradMode::is_enabled() || forward::active()) && is_inexact(t.dtype()) && !batching::level(t))
    ops::note_view(view, t);
  return view;
}

/** Finishes a view's call: `backward` maps the view's gradient to the input's, `forward` the
 *  input's tangent to the view's (by default: the same reshape). */
Tensor finish_view(graph::OpCall& call, Tensor out, const Tensor& in, ViewFn backward, ViewFn forward = nullptr) {
  call.finish(
      {&in}, {&out}, {},
      [backward = std::move(backward)](graph::Saved, graph::Tensors&& g) { return graph::Tensors{backward(g[0])}; },
      [&](const graph::Tensors& t) {
        const Shape& shape = out.shape();
        return graph::Tensors{forward ? forward(t[0]) : t[0].reshape(Dims(shape.begin(), shape.end()))};
      });
  return out;
}

const graph::OpDef kView("view"), kReshape("reshape"), kTranspose("transpose"), kPermute("permute"),
    kSqueeze("squeeze"), kUnsqueeze("unsqueeze"), kFlatten("flatten"), kExpand("expand"), kSelect("select"),
    kSlice("slice"), kDiagonal("diagonal"), kAsStrided("as_strided"), kSplit("split"), kUnbind("unbind"),
    kUnfold("unfold");

/** The dims a squeeze drops, for its capture. */
std::vector<int64_t> dropped(const SmallVector<bool, 6>& drop) {
  std::vector<int64_t> axes;
  for (size_t d = 0; d < drop.size(); ++d)
    if (drop[d]) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

/** The view's gradient for ops that pick part of the input (select, slice, diagonal). */
Tensor finish_part(graph::OpCall& call, Tensor out, const Tensor& in, ViewFn view) {
  Shape shape = in.shape();
  return finish_view(
      call, std::move(out), in, [shape, view](const Tensor& g) { return autograd::embed(g, shape, view); }, view);
}

/** Batching rules of the views: the same view of the physical tensor, dims shifted past
 *  the batch dim. */
Dims with_batch(int64_t batch, const Shape& shape) {
  Dims d{batch};
  for (int64_t s : shape) d.push_back(s);
  return d;
}

Tensor batched_view(const Tensor& t, const std::function<Tensor(const Tensor&)>& on_physical) {
  const int lvl = batching::level(t);
  Tensor view = batching::wrap(on_physical(batching::physical(t, lvl)), lvl);
  // At the example's level too (a write recorded for vmap of grad), as make_view does; not
  // where the physical op copied (a reshape that cannot view).
  if (view.storage() == t.storage()) {
    view.impl().set_is_view();
    if ((GradMode::is_enabled() || forward::active()) && is_inexact(t.dtype())) ops::note_view(view, t);
  }
  return view;
}

ViewFn reshape_to(const Shape& shape) {
  return [shape](const Tensor& g) { return g.reshape(Dims(shape.begin(), shape.end())); };
}

/** Resolves one -1 in a requested shape against numel. */
Shape infer_shape(const Dims& requested, int64_t numel, const char* op, const Shape& from) {
  Shape shape(requested.begin(), requested.end());
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) fail("[", op, "] only one dimension can be inferred (-1) in ", shape);
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail("[", op, "] invalid shape dimension ", shape[i], " in ", shape);
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      fail("[", op, "] shape ", shape, " is invalid for input of size ", numel, " (shape ", from, ")");
    shape[static_cast<size_t>(infer_at)] = numel / known;
  } else if (known != numel) {
    fail("[", op, "] shape ", shape, " is invalid for input of size ", numel, " (shape ", from, ")");
  }
  return shape;
}

/** Strides that view (shape, strides) as new_shape without copying, if any exist
 *  (PyTorch's computeStride: split or merge runs of dims that are contiguous together). */
std::optional<Strides> view_strides(const Shape& shape, const Strides& strides, const Shape& new_shape) {
  Strides out(new_shape.size());
  // An empty or 0-d tensor has no layout to preserve.
  if (numel_of(shape) == 0 || shape.empty()) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor Tensor::view(const Dims& requested) const {
  graph::OpCall call(kView);
  Shape shape = infer_shape(requested, numel(), "view", this->shape());
  if (batching::level(*this)) {
    auto on_physical = [&](const Tensor& p) { return p.reshape(with_batch(p.size(0), shape)); };
    return finish_view(call, batched_view(*this, on_physical), *this, reshape_to(this->shape()));
  }
  auto strides = view_strides(this->shape(), this->strides(), shape);
  if (!strides)
    fail("[view] size is not compatible with input tensor's size and stride (shape ", this->shape(), " to ", shape,
         "); use reshape() instead");
  return finish_view(call, make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this,
                     reshape_to(this->shape()));
}

Tensor Tensor::reshape(const Dims& requested) const {
  graph::OpCall call(kReshape);
  Shape shape = infer_shape(requested, numel(), "reshape", this->shape());
  if (batching::level(*this)) {
    auto on_physical = [&](const Tensor& p) { return p.reshape(with_batch(p.size(0), shape)); };
    return finish_view(call, batched_view(*this, on_physical), *this, reshape_to(this->shape()));
  }
  if (auto strides = view_strides(this->shape(), this->strides(), shape))
    return finish_view(call, make_view(*this, std::move(shape), std::move(*strides), storage_offset()), *this,
                       reshape_to(this->shape()));
  // The copy: clone and view record their own derivatives.
  Tensor out = clone().view(Dims(shape.begin(), shape.end()));
  call.finish({this}, {&out});
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  graph::OpCall call(kTranspose);
  int64_t n = dim();
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  if (n == 0) return *this;
  if (call.capturing()) call.set_attrs({{"dim0", d0}, {"dim1", d1}});
  ViewFn swap = [d0, d1](const Tensor& t) { return t.transpose(d0, d1); };
  if (batching::level(*this))
    return finish_view(call, batched_view(*this, [&](const Tensor& p) { return p.transpose(d0 + 1, d1 + 1); }), *this,
                       swap, swap);
  Shape shape = this->shape();
  Strides strides = this->strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this, swap, swap);
}

Tensor Tensor::permute(const Dims& order) const {
  graph::OpCall call(kPermute);
  int64_t n = dim();
  if (static_cast<int64_t>(order.size()) != n)
    fail("[permute] number of dims in order (", order.size(), ") doesn't match tensor dims (", n, ")");
  Shape shape(n);
  Strides strides(n);
  Dims inverse(n);
  SmallVector<bool, 6> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(order[i], n, "permute");
    if (seen[d]) fail("[permute] repeated dim ", order[i], " in order");
    seen[d] = true;
    shape[i] = this->shape()[d];
    strides[i] = this->strides()[d];
    inverse[d] = i;
  }
  if (call.capturing()) call.set_attrs({{"perm", std::vector<int64_t>(order.begin(), order.end())}});
  ViewFn backward = [inverse](const Tensor& g) { return g.permute(inverse); };
  ViewFn forward = [order](const Tensor& t) { return t.permute(order); };
  if (batching::level(*this)) {
    Dims phys_order{0};
    for (int64_t i = 0; i < n; ++i) phys_order.push_back(wrap_dim(order[i], n, "permute") + 1);
    return finish_view(call, batched_view(*this, [&](const Tensor& p) { return p.permute(phys_order); }), *this,
                       std::move(backward), std::move(forward));
  }
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
                     std::move(backward), std::move(forward));
}

Tensor Tensor::movedim(int64_t source, int64_t destination) const {
  const int64_t n = dim();
  source = wrap_dim(source, n, "movedim");
  destination = wrap_dim(destination, n, "movedim");
  Dims order;
  for (int64_t d = 0; d < n; ++d)
    if (d != source) order.push_back(d);
  order.insert(order.begin() + destination, source);
  return n == 0 ? *this : permute(order);
}

Tensor movedim(const Tensor& x, const Dims& source, const Dims& destination) {
  const int64_t n = x.dim();
  if (source.size() != destination.size())
    fail<RuntimeError>("[movedim] source ", source, " and destination ", destination,
                       " must hold the same number of dims");
  Dims order(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const auto s = static_cast<size_t>(wrap_dim(source[i], n, "movedim"));
    const auto d = static_cast<size_t>(wrap_dim(destination[i], n, "movedim"));
    if (moved[s]) fail<RuntimeError>("[movedim] repeated dim in source ", source);
    if (order[d] >= 0) fail<RuntimeError>("[movedim] repeated dim in destination ", destination);
    moved[s] = true;
    order[d] = static_cast<int64_t>(s);
  }
  // The dims not moved fill the free positions in their order.
  size_t next = 0;
  for (int64_t& o : order)
    if (o < 0) {
      while (moved[next]) ++next;
      o = static_cast<int64_t>(next++);
    }
  return n == 0 ? x : x.permute(order);
}

Tensor Tensor::t() const {
  if (dim() > 2) fail("[t] expects a tensor with <= 2 dimensions, got ", dim());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::T() const {
  Dims order;
  for (int64_t d = dim() - 1; d >= 0; --d) order.push_back(d);
  return permute(order);
}

Tensor Tensor::mT() const {
  if (dim() < 2) fail("[mT] expects a tensor with at least 2 dimensions, got ", dim());
  return transpose(-2, -1);
}

Tensor Tensor::squeeze() const {
  graph::OpCall call(kSqueeze);
  if (batching::level(*this)) {
    Dims ones;
    for (int64_t d = 0; d < dim(); ++d)
      if (size(d) == 1) ones.push_back(d);
    // The inner squeeze records the derivatives; this call, squeezing every size-1 dim, is captured.
    Tensor out = squeeze(ones);
    call.finish({this}, {&out});
    return out;
  }
  Shape shape;
  Strides strides;
  for (int64_t d = 0; d < dim(); ++d)
    if (this->shape()[d] != 1) {
      shape.push_back(this->shape()[d]);
      strides.push_back(this->strides()[d]);
    }
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
                     reshape_to(this->shape()));
}

Tensor Tensor::squeeze(const Dims& dims) const {
  graph::OpCall call(kSqueeze);
  SmallVector<bool, 6> drop(dim(), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, dim(), "squeeze");
    if (dim() > 0 && this->shape()[w] == 1) drop[w] = true;
  }
  if (call.capturing()) call.set_attrs({{"axes", dropped(drop)}});
  if (batching::level(*this)) {
    Dims phys;
    for (int64_t d = 0; d < dim(); ++d)
      if (drop[d]) phys.push_back(d + 1);
    return finish_view(call, batched_view(*this, [&](const Tensor& p) { return p.squeeze(phys); }), *this,
                       reshape_to(this->shape()));
  }
  Shape shape;
  Strides strides;
  for (int64_t d = 0; d < dim(); ++d)
    if (!drop[d]) {
      shape.push_back(this->shape()[d]);
      strides.push_back(this->strides()[d]);
    }
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
                     reshape_to(this->shape()));
}

Tensor Tensor::unsqueeze(int64_t d) const {
  graph::OpCall call(kUnsqueeze);
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  if (call.capturing()) call.set_attrs({{"dim", d}});
  if (batching::level(*this))
    return finish_view(call, batched_view(*this, [&](const Tensor& p) { return p.unsqueeze(d + 1); }), *this,
                       reshape_to(this->shape()));
  Shape shape = this->shape();
  Strides strides = this->strides();
  int64_t stride = d < dim() ? strides[d] * shape[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
                     reshape_to(this->shape()));
}

/** A composite of reshape, which records the derivatives; the call is captured as flatten. */
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  graph::OpCall call(kFlatten);
  if (dim() == 0) {
    Tensor out = reshape({1});
    if (call.capturing()) call.set_attrs({{"start_dim", int64_t{0}}, {"end_dim", int64_t{0}}});
    call.finish({this}, {&out});
    return out;
  }
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  if (start_dim > end_dim) fail("[flatten] start_dim (", start_dim, ") cannot come after end_dim (", end_dim, ")");
  Dims shape;
  int64_t merged = 1;
  for (int64_t d = 0; d < dim(); ++d) {
    if (d < start_dim || d > end_dim) shape.push_back(size(d));
    else {
      merged *= size(d);
      if (d == end_dim) shape.push_back(merged);
    }
  }
  Tensor out = reshape(shape);
  if (call.capturing()) call.set_attrs({{"start_dim", start_dim}, {"end_dim", end_dim}});
  call.finish({this}, {&out});
  return out;
}

Tensor Tensor::unflatten(int64_t d, const Dims& sizes) const {
  d = wrap_dim(d, dim(), "unflatten");
  if (sizes.empty()) fail("[unflatten] sizes cannot be empty");
  Shape inner = infer_shape(sizes, size(d), "unflatten", shape());
  Dims shape;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i != d) shape.push_back(size(i));
    else
      for (int64_t s : inner) shape.push_back(s);
  }
  return view(shape);
}

Tensor Tensor::expand(const Dims& requested) const {
  graph::OpCall call(kExpand);
  if (requested.size() == shape().size() && std::equal(requested.begin(), requested.end(), shape().begin()))
    return *this;
  int64_t n = static_cast<int64_t>(requested.size());
  if (n < dim())
    fail("[expand] the number of sizes provided (", n,
         ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  ViewFn backward = [from = shape()](const Tensor& g) { return autograd::sum_to(g, from); };
  ViewFn forward = [requested](const Tensor& t) { return t.expand(requested); };
  if (batching::level(*this)) {
    // Line the example's dims up on the right, after the batch dim, then expand.
    Dims aligned(static_cast<size_t>(n - dim()), 1), target;
    for (int64_t s : shape()) aligned.push_back(s);
    return finish_view(call,
                       batched_view(*this,
                                    [&](const Tensor& p) {
                                      Dims pa{p.size(0)}, pt{p.size(0)};
                                      for (int64_t s : aligned) pa.push_back(s);
                                      for (int64_t s : requested) pt.push_back(s);
                                      return p.reshape(pa).expand(pt);
                                    }),
                       *this, std::move(backward), std::move(forward));
  }
  Shape shape(n);
  Strides strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t src = i - (n - dim());
    int64_t want = requested[i];
    if (src >= 0) {
      int64_t have = this->shape()[src];
      if (want == -1) want = have;
      if (have != want && have != 1)
        fail("[expand] the expanded size of the tensor (", want, ") must match the existing size (", have,
             ") at non-singleton dimension ", i, ".  Target sizes: ", Shape(requested.begin(), requested.end()),
             ".  Tensor sizes: ", this->shape());
      shape[i] = want;
      strides[i] = have == want ? this->strides()[src] : 0;
    } else {
      if (want < 0) fail("[expand] -1 is not allowed in a leading, non-existing dimension");
      shape[i] = want;
      strides[i] = 0;
    }
  }
  return finish_view(call, make_view(*this, std::move(shape), std::move(strides), storage_offset()), *this,
                     std::move(backward), std::move(forward));
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  if (dim() == 0) fail("[narrow] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  int64_t n = size(d);
  graph::note_size_read("narrow", n);  // the slice's bounds hold for this size only
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    fail<IndexError>("[narrow] start (", start, ") + length (", length, ") exceeds dimension size (", n, ")");
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  graph::OpCall call(kSelect);
  if (dim() == 0) fail<IndexError>("[select] invalid index of a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  int64_t n = size(d);
  if (index < -n || index >= n)
    fail<IndexError>("[select] index ", index, " is out of bounds for dimension ", d, " with size ", n);
  if (index < 0) index += n;
  if (call.capturing()) call.set_attrs({{"dim", d}, {"index", index}});
  ViewFn part = [d, index](const Tensor& t) { return t.select(d, index); };
  if (batching::level(*this))
    return finish_part(call, batched_view(*this, [&](const Tensor& p) { return p.select(d + 1, index); }), *this,
                       std::move(part));
  Shape shape = this->shape();
  Strides strides = this->strides();
  int64_t offset = storage_offset() + index * strides[d];
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return finish_part(call, make_view(*this, std::move(shape), std::move(strides), offset), *this, std::move(part));
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const {
  graph::OpCall call(kSlice);
  if (dim() == 0) fail<IndexError>("[slice] cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  if (step <= 0) fail("[slice] step must be greater than zero, got ", step);
  int64_t n = size(d);
  auto clampi = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  int64_t b = start ? clampi(*start) : 0;
  int64_t e = stop ? clampi(*stop) : n;
  int64_t len = e > b ? 1 + (e - b - 1) / step : 0;  // no step + n that could overflow
  if (call.capturing()) call.set_attrs({{"dim", d}, {"start", b}, {"end", e}, {"step", step}});
  ViewFn part = [d, b, e, step](const Tensor& t) { return t.slice(d, b, e, step); };
  if (batching::level(*this))
    return finish_part(call, batched_view(*this, [&](const Tensor& p) { return p.slice(d + 1, b, e, step); }), *this,
                       std::move(part));
  Shape shape = this->shape();
  Strides strides = this->strides();
  int64_t offset = storage_offset() + b * strides[d];
  shape[d] = len;
  // With two or more elements step < n, so the product stays within the storage's extent; one
  // element needs no stride, and a huge step would overflow.
  if (len > 1) strides[d] *= step;
  return finish_part(call, make_view(*this, std::move(shape), std::move(strides), offset), *this, std::move(part));
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  graph::OpCall call(kDiagonal);
  int64_t n = dim();
  dim1 = wrap_dim(dim1, n, "diagonal");
  dim2 = wrap_dim(dim2, n, "diagonal");
  if (dim1 == dim2) fail("[diagonal] dim1 and dim2 cannot be the same (", dim1, ")");
  ViewFn part = [offset, dim1, dim2](const Tensor& t) { return t.diagonal(offset, dim1, dim2); };
  // A strided view without a graph form: a program calls it back (a view of its input, as here).
  if (call.capturing())
    call.set_replay([part](const graph::Tensors& in) { return graph::Tensors{part(in[0])}; }, graph::ReplaySizes::None);
  if (batching::level(*this))
    return finish_part(call,
                       batched_view(*this, [&](const Tensor& p) { return p.diagonal(offset, dim1 + 1, dim2 + 1); }),
                       *this, std::move(part));
  int64_t start = storage_offset();
  int64_t len;
  if (offset >= 0) {
    len = std::max<int64_t>(0, std::min(size(dim1), size(dim2) - offset));
    if (len > 0) start += offset * stride(dim2);
  } else {
    len = std::max<int64_t>(0, std::min(size(dim1) + offset, size(dim2)));
    if (len > 0) start -= offset * stride(dim1);
  }
  Shape shape;
  Strides strides;
  for (int64_t d = 0; d < n; ++d)
    if (d != dim1 && d != dim2) {
      shape.push_back(size(d));
      strides.push_back(stride(d));
    }
  shape.push_back(len);
  strides.push_back(stride(dim1) + stride(dim2));
  return finish_part(call, make_view(*this, std::move(shape), std::move(strides), start), *this, std::move(part));
}

namespace {
const graph::OpDef kStopGradient("stop_gradient");
}  // namespace

Tensor stop_gradient(const Tensor& x) {
  graph::OpCall call(kStopGradient);
  Tensor y = x.detach();
  if (call.capturing())
    call.set_replay([](const graph::Tensors& in) { return graph::Tensors{in[0].detach()}; }, graph::ReplaySizes::None);
  call.finish({&x}, {&y});  // no rule: no gradient flows back
  return y;
}

Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  if (x.dim() == 0) return unfold(x.reshape({1}), dim, size, step).reshape({size});  // torch: a 0-d x is one element
  graph::OpCall call(kUnfold);
  const int64_t d = wrap_dim(dim, x.dim(), "unfold"), n = x.size(d);
  if (size < 0 || size > n)
    fail<RuntimeError>("[unfold] window size ", size, " does not fit dim ", d, " of shape ", x.shape(), " (", x.dtype(),
                       ")");
  if (step <= 0) fail<RuntimeError>("[unfold] step must be positive, got ", step);
  const int64_t windows = (n - size) / step + 1;
  graph::note_size_read("unfold", n);  // the window count holds for this size only
  // Backward: each window's gradient added back where its elements came from (windows overlap
  // when step < size), written with ops so that it is differentiable itself.
  ViewFn fold = [in_shape = x.shape(), d, size, step, windows](const Tensor& g) {
    const Tensor flat = g.movedim(-1, d + 1).flatten(d, d + 1);
    const Tensor at = (arange(windows, {.dtype = DType::Int64, .device = g.device()}) * step).unsqueeze(1) +
                      arange(size, {.dtype = DType::Int64, .device = g.device()}).unsqueeze(0);
    Dims line(in_shape.size(), 1);
    line[static_cast<size_t>(d)] = windows * size;
    const Tensor index = at.reshape(line).expand(Dims(flat.shape().begin(), flat.shape().end()));
    return zeros(Dims(in_shape.begin(), in_shape.end()), {.dtype = g.dtype(), .device = g.device()})
        .scatter_add(d, index, flat);
  };
  ViewFn same = [d, size, step](const Tensor& t) { return unfold(t, d, size, step); };
  if (call.capturing()) call.set_replay([same](const graph::Tensors& in) { return graph::Tensors{same(in[0])}; });
  if (batching::level(x))
    return finish_view(call, batched_view(x, [&](const Tensor& p) { return unfold(p, d + 1, size, step); }), x,
                       std::move(fold), std::move(same));
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape[static_cast<size_t>(d)] = windows;
  strides[static_cast<size_t>(d)] = x.stride(d) * step;
  shape.push_back(size);
  strides.push_back(x.stride(d));
  return finish_view(call, make_view(x, std::move(shape), std::move(strides), x.storage_offset()), x, std::move(fold),
                     std::move(same));
}

Tensor Tensor::as_strided(const Dims& shape, const Dims& strides, int64_t offset) const {
  graph::OpCall call(kAsStrided);
  if (batching::level(*this)) throw_no_batching_rule();
  if (shape.size() != strides.size()) fail("[as_strided] shape and strides have different lengths");
  if (autograd::needs_grad({this}))
    fail<RuntimeError>(
        "[as_strided] is not differentiable (its views may overlap); use view ops or call it "
        "under no_grad()");
  if (offset < 0) fail("[as_strided] negative storage offset ", offset);
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0) fail("[as_strided] negative size or stride");
    if (shape[i] == 0) last = -1;
  }
  if (last >= 0) {
    for (size_t i = 0; i < shape.size(); ++i) last += (shape[i] - 1) * strides[i];
    if (static_cast<size_t>(last + 1) * element_size() > storage()->nbytes())
      fail("[as_strided] view reaches element ", last, " beyond the storage of ", storage()->nbytes() / element_size(),
           " elements");
  }
  Tensor out = make_view(*this, Shape(shape.begin(), shape.end()), Strides(strides.begin(), strides.end()), offset);
  // A program calls it back, on its input's storage laid out as here: a program's value may be
  // laid out otherwise (made by other kernels, or a view), and then it refuses rather than read
  // other elements.
  if (call.capturing())
    call.set_replay([shape, strides, offset, layout = this->strides(), at = storage_offset(),
                     bytes = storage()->nbytes()](const graph::Tensors& in) {
      const Tensor& x = in[0];
      if (x.strides() != layout || x.storage_offset() != at || x.storage()->nbytes() != bytes)
        fail<RuntimeError>(
            "[as_strided] a compiled program's input to as_strided is laid out in storage otherwise "
            "than when traced (strides ",
            x.strides(), ", offset ", x.storage_offset(), "; traced: ", layout, ", offset ", at,
            "); as_strided reads the storage: make it contiguous() first");
      return graph::Tensors{x.as_strided(shape, strides, offset)};
    });
  // Forward mode: the same view of the tangent's storage, which must be laid out as this one's.
  call.finish({this}, {&out}, {}, graph::NoRule{}, [&](const graph::Tensors& t) {
    const Tensor& tt = t[0];
    if (tt.strides() != this->strides() || tt.storage_offset() != storage_offset() ||
        tt.storage()->nbytes() != storage()->nbytes())
      fail<RuntimeError>("[as_strided] forward mode needs a tangent laid out in storage as its primal (strides ",
                         this->strides(), ", offset ", storage_offset(), "); got strides ", tt.strides(), ", offset ",
                         tt.storage_offset());
    return graph::Tensors{tt.as_strided(shape, strides, offset)};
  });
  return out;
}

namespace {

/** Records the parts of a split (or unbind, `stacked`) along d as one node whose backward
 *  concatenates (stacks) their gradients, zeros for unused parts: one pass, where a node per
 *  part would embed each gradient in a zero-filled tensor of the input's size. Without a
 *  gradient to record, each part is a view that records itself. */
std::vector<Tensor> recorded_parts(const Tensor& in, int64_t d, bool stacked,
                                   const std::function<std::vector<Tensor>()>& make) {
  if (batching::level(in) || forward::active() || !autograd::needs_grad({&in}) || in.size(d) == 0) return make();
  graph::OpCall call(stacked ? kUnbind : kSplit);
  if (call.capturing()) call.set_attrs({{"dim", d}});
  std::vector<Tensor> parts;
  {
    NoGradGuard no_grad;
    parts = make();
  }
  std::vector<Shape> shapes;
  std::vector<const Tensor*> outs;
  for (const Tensor& p : parts) {
    shapes.push_back(p.shape());
    outs.push_back(&p);
  }
  call.finish(
      {&in}, outs, {},
      [&] {  // the captures are built only when a node is recorded
        return [d, stacked, shapes, dtype = in.dtype(), device = in.device()](graph::Saved, graph::Tensors&& g) {
          for (size_t i = 0; i < g.size(); ++i)
            if (!g[i].defined())
              g[i] = zeros(Dims(shapes[i].begin(), shapes[i].end()), {.dtype = dtype, .device = device});
          return graph::Tensors{stacked ? stack(g, d) : cat(g, d)};
        };
      },
      graph::NoRule{});
  return parts;
}

}  // namespace

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  d = wrap_dim(d, dim(), "unbind");
  return recorded_parts(*this, d, true, [&] {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
    return out;
  });
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  d = wrap_dim(d, dim(), "split");
  if (split_size <= 0 && size(d) > 0) fail("[split] split_size must be positive, got ", split_size);
  return recorded_parts(*this, d, false, [&] {
    std::vector<Tensor> out;
    for (int64_t s = 0; s < size(d); s += split_size) out.push_back(narrow(d, s, std::min(split_size, size(d) - s)));
    if (out.empty()) out.push_back(*this);
    return out;
  });
}

std::vector<Tensor> Tensor::split(const Dims& sizes, int64_t d) const {
  d = wrap_dim(d, dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail("[split] split sizes must be non-negative");
    total += s;
  }
  if (total != size(d)) fail("[split] split sizes sum to ", total, " but dimension ", d, " has size ", size(d));
  return recorded_parts(*this, d, false, [&] {
    std::vector<Tensor> out;
    int64_t at = 0;
    for (int64_t s : sizes) {
      out.push_back(narrow(d, at, s));
      at += s;
    }
    return out;
  });
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  if (chunks <= 0) fail("[chunk] number of chunks must be positive, got ", chunks);
  d = wrap_dim(d, dim(), "chunk");
  int64_t each = (size(d) + chunks - 1) / chunks;
  return split(std::max<int64_t>(each, 1), d);
}

namespace {

/** What every in-place view does: t takes the layout (and history) of make(t), a view of it. */
Tensor& become_view(Tensor& t, const char* op, const std::function<Tensor(const Tensor&)>& make) {
  if (GradMode::is_enabled() && t.requires_grad() && t.is_leaf())
    fail<RuntimeError>("[", op,
                       "] a leaf tensor that requires grad is being used in an in-place operation; wrap it in "
                       "no_grad() or use the out-of-place form");
  Tensor view = make(t);
  const uint32_t version = t.version() + 1;
  if (view.impl_ref() != t.impl_ref()) {
    if (graph::Capture* capture = graph::detail::current_capture)
      if (!capture->relayout(t, batching::shallow_copy(t), view, version))
        fail<RuntimeError>("[", op,
                           "] changes the layout of a tensor the traced function did not compute (an input or a "
                           "constant), which a compiled program cannot replay; use the out-of-place view");
    t.impl().set_data(view.impl());
    if (const BatchInfo* b = view.impl().batch()) t.impl().set_batch(*b);
    // Under no_grad the view has no history and t keeps its own, as in torch.
    if (AutogradMeta* vm = autograd::meta_if(view); vm && vm->grad_fn) {
      AutogradMeta& m = autograd::meta(t);
      m.grad_fn = vm->grad_fn;
      m.output_nr = vm->output_nr;
    }
    if (forward::has_tangent(view)) forward::copy_tangents(view, t);
  }
  t.bump_version();
  return t;
}

}  // namespace

Tensor& transpose_(Tensor& t, int64_t dim0, int64_t dim1) {
  return become_view(t, "transpose_", [&](const Tensor& x) { return x.transpose(dim0, dim1); });
}
Tensor& t_(Tensor& t) {
  return become_view(t, "t_", [](const Tensor& x) { return x.t(); });
}
Tensor& squeeze_(Tensor& t) {
  return become_view(t, "squeeze_", [](const Tensor& x) { return x.squeeze(); });
}
Tensor& squeeze_(Tensor& t, const Dims& dims) {
  return become_view(t, "squeeze_", [&](const Tensor& x) { return x.squeeze(dims); });
}
Tensor& unsqueeze_(Tensor& t, int64_t dim) {
  return become_view(t, "unsqueeze_", [&](const Tensor& x) { return x.unsqueeze(dim); });
}
Tensor& as_strided_(Tensor& t, const Dims& shape, const Dims& strides, int64_t offset) {
  return become_view(t, "as_strided_", [&](const Tensor& x) { return x.as_strided(shape, strides, offset); });
}

Tensor& resize_(Tensor& t, const Dims& shape) {
  if (t.requires_grad()) fail<RuntimeError>("[resize_] cannot resize a tensor that requires grad");
  if (batching::level(t)) fail<RuntimeError>("[resize_] is not supported inside vmap");
  if (graph::detail::current_capture)
    fail<RuntimeError>("[resize_] cannot be traced (ug.jit, onnx.export): its storage depends on the run");
  int64_t numel = 1;
  for (int64_t s : shape) {
    if (s < 0) fail("[resize_] sizes must be non-negative, got ", shape);
    numel *= s;
  }
  const Shape new_shape(shape.begin(), shape.end());
  if (new_shape != t.shape()) {
    const int64_t offset = t.storage_offset();
    const size_t need = static_cast<size_t>(offset + numel) * t.element_size();
    Ref<Storage> storage = t.storage();
    if (need > storage->nbytes()) {
      // A larger block for this tensor alone (torch grows the shared one), its first bytes the old ones.
      const int64_t old_elems = static_cast<int64_t>(storage->nbytes() / t.element_size());
      Tensor grown = empty({offset + numel}, {.dtype = t.dtype(), .device = t.device()});
      {
        NoGradGuard no_grad;
        grown.narrow(0, 0, old_elems)
            .copy_(Tensor(make_ref<TensorImpl>(storage, Shape{old_elems}, Strides{1}, 0, t.dtype())));
      }
      // The version goes on from the old block's, so that tensors saved for backward still see the change.
      while (grown.version() < t.version()) grown.bump_version();
      storage = grown.storage();
    }
    t.impl().set_data(TensorImpl(storage, new_shape, contiguous_strides(new_shape), offset, t.dtype()));
  }
  t.bump_version();
  return t;
}

Tensor& resize_as_(Tensor& t, const Tensor& other) {
  return resize_(t, Dims(other.shape().begin(), other.shape().end()));
}

}  // namespace ug
