// In-place ops while gradients are recorded: see inplace_history.h.
#include "ug/ops/inplace_history.h"

#include <algorithm>
#include <optional>

#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/record.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"

namespace ug::ops {

using autograd::meta;
using autograd::meta_if;
using autograd::record;
using autograd::requires_grad;

namespace {

/** t's layout in memory as one example sees it: its physical tensor's first example, below
 *  every vmap level (t unbatched). Every example's views lie alike in its memory. */
Tensor first_example(Tensor t) {
  NoGradGuard no_grad;
  while (batching::level(t)) t = Tensor(t.impl().batch()->physical).select(0, 0);
  return t;
}

/** For each element of view (a view of base's memory), its index among base's elements (each
 *  example's, under vmap). */
Tensor positions_in(const Tensor& batched_base, const Tensor& batched_view) {
  NoGradGuard no_grad;
  const Tensor base = first_example(batched_base), view = first_example(batched_view);
  const Options int64{.dtype = DType::Int64, .device = base.device()};
  const Dims shape(view.shape().begin(), view.shape().end()), strides(view.strides().begin(), view.strides().end());
  if (base.is_contiguous())
    return arange(base.numel(), int64)
        .as_strided(shape, strides, view.storage_offset() - base.storage_offset())
        .clone();
  // Base's index at each position of the memory, -1 where base has no element.
  Tensor at = full({static_cast<int64_t>(base.storage()->nbytes() / base.element_size())}, -1, int64);
  at.as_strided(Dims(base.shape().begin(), base.shape().end()), Dims(base.strides().begin(), base.strides().end()),
                base.storage_offset())
      .copy_(arange(base.numel(), int64).reshape(Dims(base.shape().begin(), base.shape().end())));
  return at.as_strided(shape, strides, view.storage_offset()).clone();
}

/** After t was given new history: its retained gradient (retain_grad) is taken there. */
void follow_retained_grad(const Tensor& t) {
  if (AutogradMeta* m = meta_if(t); m && m->retains_grad && m->grad_fn) retain_grad_at(*m);
}

/** Makes view's history that of its elements of base (which requires grad). */
void link_view(const Tensor& view, const Tensor& base, const Tensor& positions) {
  const Tensor* in[] = {&base};
  const Tensor* out[] = {&view};
  const Shape shape = base.shape();
  record("view", in, out, {}, [at = positions.reshape({-1}), shape, n = base.numel()](Saved, std::vector<Tensor>&& g) {
    const Tensor flat = zeros({n}, {.dtype = g[0].dtype(), .device = g[0].device()});
    return std::vector<Tensor>{index_add(flat, 0, at, g[0].reshape({-1})).reshape(Dims(shape.begin(), shape.end()))};
  });
  follow_retained_grad(view);
}

/** Whether view holds every element of base in base's order (a squeeze, an unsqueeze or a
 *  reshape of a contiguous base), in every example under vmap. */
bool covers_all_of(Tensor view, Tensor base) {
  while (batching::level(view) && batching::level(view) == batching::level(base)) {
    view = Tensor(view.impl().batch()->physical);
    base = Tensor(base.impl().batch()->physical);
  }
  return !batching::level(view) && !batching::level(base) && view.numel() == base.numel() &&
         view.storage_offset() == base.storage_offset() && view.dtype() == base.dtype() && view.is_contiguous() &&
         base.is_contiguous();
}

/** Whether two elements of t are one element of memory (an expanded dim). */
bool overlaps_itself(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return true;
  return false;
}

/** base's tangent (one level's) at view's elements. */
Tensor elements_of(const Tensor& tangent, const Tensor& view, const Tensor& positions) {
  const Dims shape(view.shape().begin(), view.shape().end());
  if (!positions.defined()) return tangent.reshape(shape);  // view covers all of base
  return tangent.reshape({-1}).index_select(0, positions).reshape(shape);
}

/** Where view's elements lie among base's (flat), or undefined where view covers all of base. */
Tensor flat_positions(const Tensor& view, const Tensor& base) {
  return covers_all_of(view, base) ? Tensor() : positions_in(base, view).reshape({-1});
}

/** refresh_view: a view written through its base or another view since its history and
 *  tangents were made takes both from its elements of the base. */
void view_from_base(const Tensor& view, const Tensor& base) {
  AutogradMeta& m = meta(view);
  const AutogradMeta* b = meta_if(base);
  if (!m.tangents.empty() || (b && !b->tangents.empty())) {
    const std::vector<std::pair<int64_t, Tensor>> base_tangents = b ? b->tangents : decltype(m.tangents){};
    const Tensor positions = flat_positions(view, base);
    m.tangents.clear();
    for (const auto& [level, tangent] : base_tangents)
      m.tangents.push_back({level, elements_of(tangent, view, positions)});
  }
  if (m.requires_grad) return;  // a leaf: made to require grad itself
  if (base.requires_grad() && is_inexact(view.dtype())) link_view(view, base, positions_in(base, view));
  else m.grad_fn = Ref<Node>();
}

/** Forward mode's CopySlices: after `result` is written into the view t, base's tangent at each
 *  level is its old one (zero where it had none) with t's elements replaced by result's tangent
 *  (zero where result has none). */
void write_tangents_through(const Tensor& t, const Tensor& base, const Tensor& result) {
  std::vector<int64_t> levels;
  for (const Tensor* x : {&base, &result})
    if (const AutogradMeta* m = meta_if(*x))
      for (const auto& [level, tangent] : m->tangents)
        if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
  if (levels.empty()) return;
  const Tensor positions = flat_positions(t, base);
  const Options options{.dtype = base.dtype(), .device = base.device()};
  const Dims part(t.shape().begin(), t.shape().end()), whole(base.shape().begin(), base.shape().end());
  for (int64_t level : levels) {
    Tensor value = forward::tangent(result, level);
    value = value.defined() ? value.to(base.dtype()).expand(part) : zeros(part, options);
    if (!positions.defined()) {
      forward::set_tangent(base, level, value.reshape(whole));
      continue;
    }
    const Tensor old = forward::tangent(base, level);
    const Tensor flat = old.defined() ? old.reshape({-1}) : zeros({base.numel()}, options);
    forward::set_tangent(base, level, flat.scatter(0, positions, value.reshape({-1})).reshape(whole));
  }
}

}  // namespace

void retain_grad_at(AutogradMeta& m) {
  m.retains_grad = true;
  m.retained_grad = std::make_shared<Tensor>();
  m.grad_fn->output_hooks().push_back({m.output_nr, [cell = m.retained_grad](const Tensor& g) {
                                         *cell = cell->defined() ? *cell + g.detach() : g.detach().clone();
                                         return Tensor();
                                       }});
}

void note_view(const Tensor& view, const Tensor& from) {
  // A view of a view that knows no base (a complex number's real view) knows none either.
  const AutogradMeta* f = meta_if(from);
  if (from.impl().is_view() && !(f && f->view_base.defined())) return;
  AutogradMeta& m = meta(view);
  m.view_base = f && f->view_base.defined() ? f->view_base : from;
  m.view_version = view.version();
  m.view_history = view_from_base;
}

namespace {

/** Whether t is batched by a vmap open around the capture running now (vmap of jit). */
bool batched_around_capture(const Tensor& t) {
  const graph::Capture* capture = graph::detail::current_capture;
  if (!capture || !batching::level(t)) return false;
  const std::vector<batching::VmapFrame>& frames = batching::open_vmaps();
  for (size_t i = 0; i < capture->vmaps_outside() && i < frames.size(); ++i)
    if (frames[i].level == batching::level(t)) return true;
  return false;
}

}  // namespace

void check_batched_write(const Tensor& t, std::initializer_list<const Tensor*> others, const char* op) {
  // A program traced on batched inputs follows writes through the layouts of one example,
  // which a batched tensor does not have: the calls per example trace plain tensors instead.
  if (batched_around_capture(t))
    throw NoBatchingRule(detail::cat("[vmap] in-place op '", op,
                                     "' on a batched value inside a compiled function traced on batched arguments"));
  const int lvl = batching::level(t);
  for (const Tensor* o : others)
    if (o && batching::level(*o) > lvl)
      fail<RuntimeError>("[", op, "] inside vmap: the tensor written into (shape ", t.shape(),
                         ") is the same for every example, but the value written into it differs per example (it "
                         "depends on the mapped axis); use the out-of-place form, or map the tensor too");
}

void write_into(const Tensor& t, const Tensor& value) {
  if (const int lvl = batching::max_level({&t, &value})) {
    check_batched_write(t, {&value}, "copy_");
    // The physical copy records its own history and tangents (a grad or jvp outside the vmap).
    batching::physical(t, lvl).copy_(batching::physical(value, lvl));
    return;
  }
  backend_for(t.device()).copy(value, t);
  t.bump_version();
}

Tensor read_before_write(const Tensor& t) {
  if (!GradMode::is_enabled()) return t;
  for (Tensor level = t;; level = Tensor(level.impl().batch()->physical)) {
    if (requires_grad(level)) return t.clone();
    if (!batching::level(level)) return t;
  }
}

bool inplace_needs_rebase(const Tensor& t, const Tensor* other, const char* op) {
  check_batched_write(t, {other}, op);
  // Tangents (forward mode) must follow an in-place change whatever the grad mode.
  if (forward::has_tangent(t) || (other && forward::has_tangent(*other))) {
    // A write into a view changes its base's tangent too (rebase_history). A batched tensor's
    // tangent at its own level (jvp inside the vmap) follows the write as an unbatched one does:
    // its views note their base at the example's level.
    if (t.impl().is_view()) {
      const AutogradMeta* m = meta_if(t);
      if ((!m || !m->view_base.defined()) && batching::level(t))
        throw NoBatchingRule(detail::cat("[vmap] in-place op '", op,
                                         "' under a jvp inside the vmap, on a view whose base was not noted"));
      if (!m || !m->view_base.defined())
        fail<RuntimeError>("[", op,
                           "] in-place change, under forward mode (jvp), of a view whose base was not noted: it "
                           "was made under vmap, or through view_as_real or view(dtype); write through the tensor "
                           "itself (x[i] = x[i] + v) or use out-of-place ops");
      if (overlaps_itself(first_example(t)))
        fail<RuntimeError>("[", op, "] in-place change of an expanded view (shape ", t.shape(), ", strides ",
                           t.strides(), "): several of its elements are one element of memory; clone() it first");
    }
    return true;
  }
  if (!GradMode::is_enabled()) return false;
  AutogradMeta* m = meta_if(t);
  if (m && m->requires_grad && !m->grad_fn)
    fail<RuntimeError>("[", op,
                       "] a leaf tensor that requires grad is being used in an in-place operation; "
                       "wrap it in no_grad() or use the out-of-place form");
  const Tensor* base = m && m->view_base.defined() ? &m->view_base : nullptr;
  if (base) {
    const AutogradMeta* b = meta_if(*base);
    if (b && b->requires_grad && !b->grad_fn)
      fail<RuntimeError>("[", op,
                         "] a view of a leaf tensor that requires grad is being used in an in-place operation; "
                         "wrap it in no_grad() or use the out-of-place form");
  }
  const bool needed =
      requires_grad(t) || (base && requires_grad(*base)) || (other && other->defined() && requires_grad(*other));
  if (needed && t.impl().is_view() && !base && m && m->grad_fn && m->grad_fn->outputs().size() > 1)
    fail<RuntimeError>("[", op, "] in-place change, while recording gradients, of one of the views that ",
                       m->grad_fn->name(),
                       " returned (split, chunk or unbind: several views from one op, as torch refuses too); "
                       "clone() it first or use out-of-place ops");
  if (needed && t.impl().is_view() && !base)
    fail<RuntimeError>("[", op,
                       "] in-place change, while recording gradients, of a view whose base was not noted: it was made "
                       "under no_grad or vmap, or through view_as_real or view(dtype); write through the tensor "
                       "itself (x[i] = x[i] + v) or use out-of-place ops");
  // Recorded for a gradient taken inside the vmap (vmap of grad), a batched view noted its
  // base at the example's level as any view does: the write goes as it would unbatched.
  if (needed && base && overlaps_itself(first_example(t)))
    fail<RuntimeError>("[", op, "] in-place change of an expanded view (shape ", t.shape(), ", strides ", t.strides(),
                       "): several of its elements are one element of memory; clone() it first");
  return needed;
}

void rebase_history(const Tensor& t, const Tensor& result) {
  AutogradMeta* tm = meta_if(t);
  const Tensor base = tm && tm->view_base.defined() ? tm->view_base : Tensor();
  Tensor positions;
  bool whole = false;  // t is all of base (a squeeze, unsqueeze or reshape of it)
  if (base.defined() && GradMode::is_enabled()) {
    Tensor value = result.dtype() == base.dtype() ? result : result.to(base.dtype());
    if (value.shape() != t.shape()) value = value.expand(Dims(t.shape().begin(), t.shape().end()));
    const Tensor* out[] = {&base};
    whole = covers_all_of(t, base);
    if (whole) {  // the write replaces every element of base: its history is the value's
      const Tensor* in[] = {&value};
      record("copy_slices", in, out, {}, [part = t.shape()](Saved, std::vector<Tensor>&& g) {
        return std::vector<Tensor>{g[0].reshape(Dims(part.begin(), part.end()))};
      });
    } else {  // torch's CopySlices: base's history is its old one with t's elements replaced by result
      positions = positions_in(base, t).reshape({-1});
      const Tensor* in[] = {&base, &value};
      record("copy_slices", in, out, {},
             [at = positions, shape = base.shape(), part = t.shape()](Saved, std::vector<Tensor>&& g) {
               const Tensor flat = g[0].reshape({-1});
               return std::vector<Tensor>{index_fill(flat, 0, at, 0).reshape(Dims(shape.begin(), shape.end())),
                                          flat.index_select(0, at).reshape(Dims(part.begin(), part.end()))};
             });
    }
    follow_retained_grad(base);
  }
  // result may be t's memory itself, written already (a Function that marked t dirty).
  const bool written = result.storage() == t.storage() && result.storage_offset() == t.storage_offset() &&
                       result.strides() == t.strides() && result.shape() == t.shape();
  if (!written) {
    // A batched t is written through its physical tensor, whose copy_ records its own history
    // (a grad outside the vmap).
    std::optional<NoGradGuard> no_grad;
    if (!batching::level(t)) no_grad.emplace();
    write_into(t, result);
  }
  if (positions.defined()) {
    tm->view_version = t.version();
    link_view(t, base, positions);
  } else {
    AutogradMeta* rm = meta_if(result);
    AutogradMeta& m = meta(t);
    m.grad_fn = rm ? rm->grad_fn : Ref<Node>();
    m.output_nr = rm ? rm->output_nr : 0;
    if (whole) m.view_version = t.version();  // its history is base's whole new one already
    follow_retained_grad(t);
  }
  if (base.defined() && forward::active()) write_tangents_through(t, base, result);
  forward::copy_tangents(result, t);
}

}  // namespace ug::ops
