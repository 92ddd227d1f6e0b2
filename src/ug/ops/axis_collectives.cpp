#include "ug/ops/axis_collectives.h"

#include <algorithm>

#include "ug/core/batching.h"
#include "ug/graph/forward.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/reduce.h"

namespace ug::lax {

namespace {

thread_local std::vector<Axis> t_axes;  // the open bindings, innermost last
thread_local uint64_t t_next_id = 0;

const graph::OpDef kPsum("psum"), kPmean("pmean"), kPmax("pmax"), kPmin("pmin"), kAllGather("all_gather"),
    kPsumScatter("psum_scatter"), kPpermute("ppermute");

/** Whether the binding is still open: a gradient taken after its vmap returned differentiates
 *  the ops on the physical tensors, not the per-example collective. */
bool open(const Axis& a) {
  return std::any_of(t_axes.begin(), t_axes.end(), [&a](const Axis& b) { return b.id == a.id; });
}

/** Finishes a collective whose output is the same on every example of a's level: `inner`, what
 *  its parts made (from x's physical tensor there), under a handle of its own that records both
 *  derivatives. Differentiated while a's vmap runs (vmap of grad), the output's gradient goes
 *  to x by the per-example rule, JAX's transposition; after it returned (grad of vmap), to
 *  inner, through the parts' own rules. A tangent is the parts' where x's examples carry one
 *  (jvp of vmap), else the per-example rule's. */
template <class Vjp, class Jvp>
Tensor finish_shared(graph::OpCall& call, const Tensor& x, const Tensor& inner, const Axis& a, Vjp per_example,
                     Jvp tangent) {
  Tensor out = inner.view(Dims(inner.shape().begin(), inner.shape().end()));  // an op: a program sees it
  call.finish(
      {&x, &inner}, {&out}, {},
      [a, per_example](graph::Saved, graph::Tensors&& g) {
        return open(a) ? graph::Tensors{per_example(g[0]), Tensor()} : graph::Tensors{Tensor(), g[0]};
      },
      [tangent](const graph::Tensors& t) { return graph::Tensors{t[1].defined() ? t[1] : tangent(t[0])}; });
  return out;
}

/** For the capture: the axis's level (the exporter checks that the trace opened its vmap), and
 *  the op by the axis's name, which a program calls back under a vmap around it (vmap of jit). */
template <class Op> void capture(graph::OpCall& call, const Axis& a, Op op) {
  if (!call.capturing()) return;
  call.set_attrs({{"level", int64_t{a.level}}});
  call.set_replay([op, name = a.name, what = call.def().name()](const graph::Tensors& in) {
    return graph::Tensors{op(in[0], bound_axis(name, what))};
  });
}

/** x with every example's copy along a new dim 0: the physical tensor at a's level. */
Tensor examples(const Tensor& x, const Axis& a) {
  if (batching::level(x) == a.level) return batching::physical(x, a.level);
  Dims shape{a.size};
  for (int64_t d : x.shape()) shape.push_back(d);
  return x.unsqueeze(0).expand(shape);
}

[[noreturn]] void no_derivative(const char* op) {
  fail<RuntimeError>("[", op, "] has no derivative inside the vmap that binds its axis (as in JAX)");
}

/** A sum keeps its input's dtype; booleans count in int32, as in JAX. */
DType summed(DType t) { return t == DType::Bool ? DType::Int32 : t; }

enum class Reduce { Sum, Mean, Max, Min };

const graph::OpDef& def_of(Reduce r) {
  switch (r) {
    case Reduce::Sum: return kPsum;
    case Reduce::Mean: return kPmean;
    case Reduce::Max: return kPmax;
    case Reduce::Min: return kPmin;
  }
  return kPsum;
}

Tensor reduce(Reduce r, const Tensor& x, const Axis& a) {
  const graph::OpDef& def = def_of(r);
  graph::OpCall call(def);
  capture(call, a, [r](const Tensor& y, const Axis& b) { return reduce(r, y, b); });
  const int top = batching::level(x);
  const bool linear = r == Reduce::Sum || r == Reduce::Mean;
  auto rule = [r, a, linear, name = def.name()](const Tensor& g) {
    if (!linear) no_derivative(name);
    return reduce(r, g, a);
  };
  if (top > a.level) {  // batched by a vmap inside a's: reduce every example of that one
    Tensor out = batching::wrap(reduce(r, batching::physical(x, top), a), top);
    call.finish(
        {&x}, {&out}, {}, [rule](graph::Saved, graph::Tensors&& g) { return graph::Tensors{rule(g[0])}; },
        [rule](const graph::Tensors& t) { return graph::Tensors{rule(t[0])}; });
    return out;
  }
  Tensor inner;
  if (top == a.level) {
    const Tensor p = batching::physical(x, a.level);
    if (r == Reduce::Sum) inner = p.sum({0}, false, summed(x.dtype()));
    else if (r == Reduce::Mean) inner = (is_floating(x.dtype()) ? p : p.to(DType::Float32)).mean({0});
    else inner = r == Reduce::Max ? p.amax({0}) : p.amin({0});
  } else if (r == Reduce::Sum) {  // the same on every example
    inner = x.to(summed(x.dtype())) * a.size;
  } else {
    inner = r == Reduce::Mean && !is_floating(x.dtype()) ? x.to(DType::Float32) : x.clone();
  }
  return finish_shared(call, x, inner, a, rule, rule);
}

Tensor gather(const Tensor& x, const Axis& a, int64_t dim, bool tiled);

Tensor scatter(const Tensor& x, const Axis& a, int64_t dim, bool tiled) {
  graph::OpCall call(kPsumScatter);
  const int top = batching::level(x);
  Tensor out;
  if (top > a.level) {
    out = batching::wrap(scatter(batching::physical(x, top), a, dim + 1, tiled), top);
  } else {
    const int64_t n = x.size(dim);
    if (tiled ? n % a.size != 0 : n != a.size)
      fail("[psum_scatter] dim ", dim, " of x (shape ", x.shape(), ") must ", tiled ? "be a multiple of" : "equal",
           " the size of axis '", a.name, "' (", a.size, ")");
    const DType dt = summed(x.dtype());
    Tensor sum = top == a.level ? batching::physical(x, a.level).sum({0}, false, dt) : x.to(dt) * a.size;
    if (tiled) sum = sum.unflatten(dim, {a.size, n / a.size});
    out = batching::wrap(sum.movedim(dim, 0), a.level);
  }
  capture(call, a, [dim, tiled](const Tensor& y, const Axis& b) { return scatter(y, b, dim, tiled); });
  call.finish(
      {&x}, {&out}, {},
      [a, dim, tiled](graph::Saved, graph::Tensors&& g) { return graph::Tensors{gather(g[0], a, dim, tiled)}; },
      [a, dim, tiled](const graph::Tensors& t) { return graph::Tensors{scatter(t[0], a, dim, tiled)}; });
  return out;
}

Tensor gather(const Tensor& x, const Axis& a, int64_t dim, bool tiled) {
  graph::OpCall call(kAllGather);
  capture(call, a, [dim, tiled](const Tensor& y, const Axis& b) { return gather(y, b, dim, tiled); });
  const int top = batching::level(x);
  if (top > a.level) {
    Tensor out = batching::wrap(gather(batching::physical(x, top), a, dim + 1, tiled), top);
    call.finish(
        {&x}, {&out}, {},
        [a, dim, tiled](graph::Saved, graph::Tensors&& g) { return graph::Tensors{scatter(g[0], a, dim, tiled)}; },
        [a, dim, tiled](const graph::Tensors& t) { return graph::Tensors{gather(t[0], a, dim, tiled)}; });
    return out;
  }
  Tensor inner = examples(x, a).movedim(0, dim);
  if (tiled) inner = inner.flatten(dim, dim + 1);
  return finish_shared(
      call, x, inner, a, [a, dim, tiled](const Tensor& g) { return scatter(g, a, dim, tiled); },
      [a, dim, tiled](const Tensor& t) { return gather(t, a, dim, tiled); });
}

using Perm = std::vector<std::pair<int64_t, int64_t>>;

Tensor permute(const Tensor& x, const Axis& a, const Perm& perm) {
  graph::OpCall call(kPpermute);
  const int top = batching::level(x);
  Tensor out;
  if (top > a.level) {
    out = batching::wrap(permute(batching::physical(x, top), a, perm), top);
  } else {
    const Tensor p = examples(x, a);
    Dims shape(static_cast<size_t>(p.dim()), 1);
    shape[0] = a.size;
    Tensor source = zeros({a.size}, {.dtype = DType::Int64});  // the example each one receives
    Tensor received = zeros(shape, {.dtype = DType::Bool});
    for (const auto& [src, dst] : perm) {
      source.data_ptr<int64_t>()[dst] = src;
      received.data_ptr<bool>()[dst] = true;
    }
    out = p.index_select(0, source.to(x.device()));
    if (perm.size() < static_cast<size_t>(a.size)) out = where(received.to(x.device()), out, 0);
    out = batching::wrap(out, a.level);
  }
  capture(call, a, [perm](const Tensor& y, const Axis& b) { return permute(y, b, perm); });
  call.finish(
      {&x}, {&out}, {},
      [a, perm](graph::Saved, graph::Tensors&& g) {
        Perm back;
        for (const auto& [src, dst] : perm) back.emplace_back(dst, src);
        return graph::Tensors{permute(g[0], a, back)};
      },
      [a, perm](const graph::Tensors& t) { return graph::Tensors{permute(t[0], a, perm)}; });
  return out;
}

}  // namespace

AxisBinding::AxisBinding(const std::string& name, int level, int64_t size, std::string per_example_reason) {
  t_axes.push_back({name, level, size, ++t_next_id, std::move(per_example_reason)});
}

AxisBinding::~AxisBinding() { t_axes.pop_back(); }

Axis bound_axis(const std::string& name, const char* op) {
  for (auto it = t_axes.rbegin(); it != t_axes.rend(); ++it) {
    if (it->name != name) continue;
    if (!it->per_example_reason.empty())
      fail<RuntimeError>("[", op, "] needs every example of vmap axis '", name,
                         "' at once, but that vmap runs its function once per example: ", it->per_example_reason);
    return *it;
  }
  fail("[", op, "] unbound axis name: '", name, "' (call it inside vmap(f, ..., axis_name) or pmap)");
}

int64_t axis_depth(const std::string& name) {
  for (size_t i = t_axes.size(); i > 0; --i)
    if (t_axes[i - 1].name == name) return static_cast<int64_t>(i);
  return 0;
}

int64_t open_axes() { return static_cast<int64_t>(t_axes.size()); }

Tensor psum(const Tensor& x, const std::string& axis_name) {
  return reduce(Reduce::Sum, x, bound_axis(axis_name, "psum"));
}
Tensor pmean(const Tensor& x, const std::string& axis_name) {
  return reduce(Reduce::Mean, x, bound_axis(axis_name, "pmean"));
}
Tensor pmax(const Tensor& x, const std::string& axis_name) {
  return reduce(Reduce::Max, x, bound_axis(axis_name, "pmax"));
}
Tensor pmin(const Tensor& x, const std::string& axis_name) {
  return reduce(Reduce::Min, x, bound_axis(axis_name, "pmin"));
}

Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis, bool tiled) {
  const Axis a = bound_axis(axis_name, "all_gather");
  if (tiled && x.dim() == 0) fail("[all_gather] tiled needs at least one dim, got a 0-d x");
  return gather(x, a, wrap_dim(axis, tiled ? x.dim() : x.dim() + 1, "all_gather"), tiled);
}

Tensor psum_scatter(const Tensor& x, const std::string& axis_name, int64_t scatter_dimension, bool tiled) {
  const Axis a = bound_axis(axis_name, "psum_scatter");
  if (x.dim() == 0) fail("[psum_scatter] x must have a dim to scatter, got a 0-d x");
  return scatter(x, a, wrap_dim(scatter_dimension, x.dim(), "psum_scatter"), tiled);
}

Tensor ppermute(const Tensor& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  const Axis a = bound_axis(axis_name, "ppermute");
  std::vector<bool> sends(static_cast<size_t>(a.size)), receives(static_cast<size_t>(a.size));
  for (const auto& [src, dst] : perm) {
    if (src < 0 || src >= a.size || dst < 0 || dst >= a.size)
      fail("[ppermute] pair (", src, ", ", dst, ") is out of range for axis '", a.name, "' of size ", a.size);
    if (sends[src] || receives[dst])
      fail("[ppermute] perm must send from and to each position at most once; (", src, ", ", dst, ") repeats one");
    sends[src] = receives[dst] = true;
  }
  return permute(x, a, perm);
}

Tensor axis_index(const std::string& axis_name) {
  const Axis a = bound_axis(axis_name, "axis_index");
  return batching::wrap(arange(a.size, {.dtype = DType::Int32}), a.level);
}

int64_t axis_size(const std::string& axis_name) { return bound_axis(axis_name, "axis_size").size; }

}  // namespace ug::lax
