// Attention: the probabilities composed from ops, and the fused kernel's two ops. The forward
// op's outputs are its result and each row's log-sum-exp (the second for the backward only);
// it saves q, k, v (views of what the caller holds: the projections' output) and both
// outputs, never the [L, S] probabilities. Its rule is the op attention_backward, which
// recomputes them block by block, or the same gradient written with ops when a graph of the
// gradient is asked for. Both ops are captured, so a compiled program runs the kernels eager
// code runs (the export table's rules call them back; a file gets their formulas).
#include "ug/ops/attention.h"

#include <limits>

#include "ug/backend/backend.h"
#include "ug/core/tensor_impl.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/gradient_graph.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/linalg.h"
#include "ug/ops/reduce.h"

namespace ug::ops {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

const graph::OpDef kAttention("scaled_dot_product_attention", graph::Autocast::Lower);
const graph::OpDef kAttentionBackward("attention_backward");

/** t as the kernel reads it: a unit last stride and rows that do not overlap. */
Tensor kernel_ready(const Tensor& t) {
  const bool ok = t.stride(-1) == 1 && (t.stride(-2) >= t.size(-1) || t.size(-2) == 1);
  return ok ? t : t.contiguous();
}

/** q k^T * scale with the mask applied: -inf where a key is masked, plus an additive mask. */
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale) {
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
  if (keep.defined()) return where(keep, scores, kNegInf);
  return mask.defined() ? scores + mask : scores;
}

/** The kernel's lse dtype for q's: float64 for float64, else float32. */
DType lse_dtype(DType q) { return q == DType::Float64 ? DType::Float64 : DType::Float32; }

/** k and v with each of their heads repeated for its group of query heads (dim 1). */
std::pair<Tensor, Tensor> expand_groups(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t group = q.size(1) / k.size(1);
  if (group == 1) return {k, v};
  return {repeat_interleave(k, group, 1), repeat_interleave(v, group, 1)};
}

/** The forward op's outputs written with ops (a program's call under vmap or forward mode):
 *  the result and each row's log-sum-exp, +inf where every key is masked, as the kernel's. */
graph::Tensors attention_forward_ops(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                                     double scale) {
  auto [ke, ve] = expand_groups(q, k, v);
  Tensor lse = masked_scores(q, ke, mask, causal, scale).logsumexp(Dims{-1});
  if (mask.defined()) lse = where(lse.eq(kNegInf), -kNegInf, lse);
  return {matmul(attention_probs(q, ke, mask, causal, scale), ve), lse.to(lse_dtype(q.dtype()))};
}

/** dq, dk, dv of attention written with ops (differentiable): the create_graph rule. */
graph::Tensors attention_backward_ops(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& mask, bool causal, double scale) {
  const int64_t group = q.size(1) / k.size(1);
  auto [ke, ve] = expand_groups(q, k, v);
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
  return {dq, fold(dk), fold(dv)};
}

/** Whether a program's call of the kernels must take the ops instead: batched (a program run
 *  under vmap), under forward mode, or recording a gradient that a graph is kept of. */
bool replay_takes_ops(std::initializer_list<const Tensor*> in) {
  return batching::max_level(in) || forward::active() || autograd::needs_grad(in);
}

/** attention_fused's gradients as one kernel: the op attention_backward, so that backward, grad
 *  and a compiled program run the same kernel and a trace holds one node. Its operands are the
 *  output gradient g, the forward's q, k, v, mask, its output and each row's log-sum-exp. It
 *  records no rule: a gradient of the gradient takes attention_backward_ops. */
graph::Tensors attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, const Tensor& out, const Tensor& lse, bool causal, double scale) {
  graph::OpCall call(kAttentionBackward);
  Tensor go = kernel_ready(g.to(q.dtype()));
  Options o{.dtype = q.dtype(), .device = q.device()};
  Tensor dq = empty(q.shape(), o), dk = empty(k.shape(), o), dv = empty(v.shape(), o);
  backend_for(q.device()).attention_backward(go, q, k, v, mask, causal, scale, out, lse, dq, dk, dv);
  if (call.capturing()) {
    call.set_attrs({{"causal", int64_t{causal}}, {"scale", scale}});
    call.set_replay(
        [causal, scale](const graph::Tensors& in) {
          if (replay_takes_ops({&in[0], &in[1], &in[2], &in[3], &in[4]}))
            return attention_backward_ops(in[0], in[1], in[2], in[3], in[4], causal, scale);
          return attention_backward(in[0], in[1], in[2], in[3], in[4], in[5], in[6], causal, scale);
        },
        graph::ReplaySizes::None);
  }
  call.finish({&g, &q, &k, &v, &mask, &out, &lse}, {&dq, &dk, &dv});
  return {dq, dk, dv};
}

/** The forward kernel's call: its result and each row's log-sum-exp. */
graph::Tensors attention_forward(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& mask, bool causal,
                                 double scale) {
  graph::OpCall call(kAttention);
  Tensor q = kernel_ready(q0), k = kernel_ready(k0), v = kernel_ready(v0);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), Ev = v.size(3);
  const int64_t row = H * Ev;
  // [B, L, H, Ev] in memory, seen as [B, H, L, Ev].
  Tensor out(make_ref<TensorImpl>(empty({B * L * row}, {.dtype = q.dtype(), .device = q.device()}).storage(),
                                  Shape{B, H, L, Ev}, Strides{L * row, Ev, row, 1}, 0, q.dtype()));
  Tensor lse = empty({B, H, L}, {.dtype = lse_dtype(q.dtype()), .device = q.device()});
  backend_for(q.device()).attention(q, k, v, mask, causal, scale, out, lse);
  if (call.capturing()) {
    call.set_attrs({{"causal", int64_t{causal}}, {"scale", scale}});
    call.set_replay(
        [causal, scale](const graph::Tensors& in) {
          if (batching::max_level({&in[0], &in[1], &in[2], &in[3]}) || forward::active())
            return attention_forward_ops(in[0], in[1], in[2], in[3], causal, scale);
          return attention_forward(in[0], in[1], in[2], in[3], causal, scale);
        },
        graph::ReplaySizes::None);
  }
  call.finish(
      {&q0, &k0, &v0, &mask}, {&out, &lse},
      {graph::input(q), graph::input(k), graph::input(v), mask.defined() ? graph::input(mask) : graph::nothing,
       graph::output(out), graph::output(lse)},
      [causal, scale](graph::Saved s, graph::Tensors&& g) {
        const Tensor &q = s[0], &k = s[1], &v = s[2], &mask = s[3];
        graph::Tensors d = graph::gradient_graph_requested() || batching::max_level({&g[0]}) || forward::active()
                               ? attention_backward_ops(g[0].to(q.dtype()), q, k, v, mask, causal, scale)
                               : attention_backward(g[0], q, k, v, mask, s[4], s[5], causal, scale);
        d.emplace_back();  // the mask takes none
        return d;
      },
      graph::NoRule{});  // forward mode takes the composed form
  return {out, lse};
}

}  // namespace

const graph::OpDef& attention_def() { return kAttention; }

Tensor attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale) {
  Tensor scores = masked_scores(q, k, mask, causal, scale);
  if (!mask.defined()) return scores.softmax(-1);  // a causal mask always keeps the first key
  // A row with every key masked gives zeros (not NaN), and its gradient stays finite.
  Tensor dead = scores.eq(kNegInf).all(-1, true);
  return where(dead, 0.0, where(dead, 0.0, scores).softmax(-1));
}

bool attention_fuses(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  return q.numel() > 0 && k.numel() > 0 && v.numel() > 0 && !(mask.defined() && autograd::requires_grad(mask)) &&
         !batching::max_level({&q, &k, &v, &mask}) && !forward::active();
}

Tensor attention_fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                       double scale) {
  return attention_forward(q, k, v, mask, causal, scale)[0];
}

}  // namespace ug::ops
