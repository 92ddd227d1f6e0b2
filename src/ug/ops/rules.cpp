#include "ug/ops/rules.h"

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/reduce.h"

namespace ug::autograd {

namespace {
const graph::OpDef kEmbed("embed");
}

Tensor embed(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& view) {
  graph::OpCall call(kEmbed);
  if (call.capturing())  // a gradient without a graph form of its own: a program calls it back
    call.set_replay([shape, view](const graph::Tensors& in) { return graph::Tensors{embed(in[0], shape, view)}; });
  Tensor out;
  if (const int lvl = batching::level(g)) {
    // vmap (an unbatched tensor's view with per-example gradients): the same on g's physical
    // tensor, the view taken of each example.
    const Tensor p = batching::physical(g, lvl);
    Shape batched{p.size(0)};
    for (int64_t s : shape) batched.push_back(s);
    auto each = [lvl, view](const Tensor& t) { return batching::physical(view(batching::wrap(t, lvl)), lvl); };
    out = batching::wrap(embed(p, batched, each), lvl);
  } else {
    out = zeros(Dims(shape.begin(), shape.end()), {.dtype = g.dtype(), .device = g.device()});
    NoGradGuard no_grad;
    backend_for(out.device()).copy(g, view(out));
  }
  call.finish(
      {&g}, {&out}, {}, [view](graph::Saved, graph::Tensors&& gg) { return graph::Tensors{view(gg[0])}; },
      [&](const graph::Tensors& t) { return graph::Tensors{embed(t[0], shape, view)}; });
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  Dims dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) dims.push_back(d);
  Tensor s = dims.empty() ? g : g.sum(dims, true);
  return lead > 0 || !(s.shape() == shape) ? s.reshape(shape) : s;
}

}  // namespace ug::autograd
