// Attention: the probabilities composed from ops, and the fused kernel's op. The fused op
// saves q, k, v (views of what the caller holds: the projections' output), its output and
// each row's log-sum-exp, never the [L, S] probabilities; its rule runs the backend's
// backward, which recomputes them block by block, or the same gradient written with ops
// when a graph of the gradient is asked for.
#include "ug/ops/attention.h"

#include <limits>

#include "ug/backend/backend.h"
#include "ug/core/tensor_impl.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug::ops {

namespace {

const graph::OpDef kAttention("scaled_dot_product_attention", graph::Autocast::Lower);

/** t as the kernel reads it: a unit last stride and rows that do not overlap. */
Tensor kernel_ready(const Tensor& t) {
  const bool ok = t.stride(-1) == 1 && (t.stride(-2) >= t.size(-1) || t.size(-2) == 1);
  return ok ? t : t.contiguous();
}

/** dq, dk, dv of attention written with ops (differentiable): the create_graph rule. */
graph::Tensors attention_backward_ops(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& mask, bool causal, double scale) {
  const int64_t group = q.size(1) / k.size(1);
  Tensor ke = group > 1 ? repeat_interleave(k, group, 1) : k, ve = group > 1 ? repeat_interleave(v, group, 1) : v;
  Tensor p = attention_probs(q, ke, mask, causal, scale);
  Tensor dp = matmul(g, ve.transpose(-2, -1));
  Tensor ds = p * (dp - (dp * p).sum(Dims{-1}, true));
  Tensor dq = matmul(ds, ke) * scale;
  Tensor dk = matmul(ds.transpose(-2, -1), q) * scale;
  Tensor dv = matmul(p.transpose(-2, -1), g);
  auto fold = [&](const Tensor& d) {  // the query heads' gradients summed per key/value head
    if (group == 1) return d;
    return d.reshape({d.size(0), d.size(1) / group, group, d.size(2), d.size(3)}).sum(Dims{2});
  };
  return {dq, fold(dk), fold(dv), Tensor()};
}

}  // namespace

const graph::OpDef& attention_def() { return kAttention; }

Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // Scaling q costs L*E multiplies rather than L*S on the scores.
  Tensor scores = matmul(q * scale, k.transpose(-2, -1));
  Tensor keep;  // bool, true = attend
  if (causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    Options o{.dtype = DType::Int64, .device = q.device()};
    keep = arange(L, o).unsqueeze(1) >= arange(S, o).unsqueeze(0);
  } else if (mask.defined() && mask.dtype() == DType::Bool) {
    keep = mask;
  }
  if (keep.defined()) scores = where(keep, scores, kNegInf);
  else if (mask.defined()) scores = scores + mask;
  if (!mask.defined()) return scores.softmax(-1);  // a causal mask always keeps the first key
  // A row with every key masked gives zeros (not NaN), and its gradient stays finite.
  Tensor dead = scores.eq(kNegInf).all(-1, true);
  return where(dead, 0.0, where(dead, 0.0, scores).softmax(-1));
}

bool attention_fuses(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  return q.numel() > 0 && k.numel() > 0 && v.numel() > 0 && !(mask.defined() && autograd::requires_grad(mask)) &&
         !batching::max_level({&q, &k, &v, &mask}) && !forward::active() && !graph::detail::current_capture;
}

Tensor attention_fused(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& mask, bool causal,
                       double scale) {
  graph::OpCall call(kAttention);
  Tensor q = kernel_ready(q0), k = kernel_ready(k0), v = kernel_ready(v0);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), Ev = v.size(3);
  const int64_t row = H * Ev;
  // [B, L, H, Ev] in memory, seen as [B, H, L, Ev].
  Tensor out(make_ref<TensorImpl>(empty({B * L * row}, {.dtype = q.dtype(), .device = q.device()}).storage(),
                                  Shape{B, H, L, Ev}, Strides{L * row, Ev, row, 1}, 0, q.dtype()));
  Tensor lse =
      empty({B, H, L}, {.dtype = q.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, .device = q.device()});
  backend_for(q.device()).attention(q, k, v, mask, causal, scale, out, lse);
  call.finish(
      {&q0, &k0, &v0, &mask}, {&out},
      {graph::input(q), graph::input(k), graph::input(v), mask.defined() ? graph::input(mask) : graph::nothing,
       graph::output(out)},
      [lse, causal, scale](graph::Saved s, graph::Tensors&& g) {
        const Tensor &q = s[0], &k = s[1], &v = s[2], &mask = s[3], &out = s[4];
        Tensor go = g[0].to(q.dtype());
        if (GradMode::is_enabled()) return attention_backward_ops(go, q, k, v, mask, causal, scale);
        go = kernel_ready(go);
        Options o{.dtype = q.dtype(), .device = q.device()};
        Tensor dq = empty(q.shape(), o), dk = empty(k.shape(), o), dv = empty(v.shape(), o);
        backend_for(q.device()).attention_backward(go, q, k, v, mask, causal, scale, out, lse, dq, dk, dv);
        return graph::Tensors{dq, dk, dv, Tensor()};
      },
      graph::NoRule{});  // forward mode takes the composed form
  return out;
}

}  // namespace ug::ops
