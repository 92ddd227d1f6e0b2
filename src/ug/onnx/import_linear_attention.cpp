// LinearAttention (opset 27): a recurrent state of key-value outer products, updated token by token
// (linear, gated by a decay, with delta correction, or both) and read by each query, in float32 as
// onnx's reference computes it; ug ops throughout, so differentiable.
#include <cmath>

#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/unary.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/** (B, T, heads * D) -> (B, heads, T, D), in float32. */
Tensor heads_of(const OpContext& c, const Tensor& t, int64_t heads, std::string_view name) {
  if (t.dim() != 3) c.fail(name, " must be (B, T, heads * D), got shape ", t.shape());
  if (t.size(2) % heads != 0) c.fail(name, " ", t.shape(), ": its last dim does not split into ", heads, " heads");
  return t.to(DType::Float32).reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}

Outputs linear_attention_op(const OpContext& c) {
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail("update_rule must be linear, gated, delta or gated_delta, got \"", rule, "\"");
  const int64_t q_heads = c.attr_int("q_num_heads"), kv_heads = c.attr_int("kv_num_heads");
  if (q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0)
    c.fail("q_num_heads (", q_heads, ") must be a positive multiple of kv_num_heads (", kv_heads, ")");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != c.has_input(4)) c.fail("update_rule ", rule, gated ? " needs" : " takes no", " decay input");
  if (delta != c.has_input(5)) c.fail("update_rule ", rule, delta ? " needs" : " takes no", " beta input");
  const Tensor& query = c.input(0);
  const Tensor q = heads_of(c, query, q_heads, "query"), k = heads_of(c, c.input(1), kv_heads, "key");
  const Tensor v = heads_of(c, c.input(2), kv_heads, "value");
  const int64_t b = q.size(0), t_len = q.size(2), dk = q.size(3), dv = v.size(3);
  if (k.size(0) != b || v.size(0) != b || k.size(2) != t_len || v.size(2) != t_len || k.size(3) != dk)
    c.fail("query ", query.shape(), ", key ", c.input(1).shape(), " and value ", c.input(2).shape(),
           " do not fit together");
  Tensor decay, beta;
  if (gated) {
    const Tensor& g = c.input(4);
    if (g.dim() != 3 || g.size(0) != b || g.size(1) != t_len || (g.size(2) != kv_heads && g.size(2) != kv_heads * dk))
      c.fail("decay must be (", b, ", ", t_len, ", ", kv_heads, " or ", kv_heads * dk, "), got ", g.shape());
    decay = exp(heads_of(c, g, kv_heads, "decay"));  // (B, H_kv, T, 1 or d_k)
  }
  if (delta) {
    const Tensor& be = c.input(5);
    if (be.dim() != 3 || be.size(0) != b || be.size(1) != t_len || (be.size(2) != kv_heads && be.size(2) != 1))
      c.fail("beta must be (", b, ", ", t_len, ", ", kv_heads, " or 1), got ", be.shape());
    beta = be.to(DType::Float32).reshape({b, t_len, be.size(2), 1}).transpose(1, 2);  // (B, H_kv or 1, T, 1)
  }
  Tensor state = zeros({b, kv_heads, dk, dv}, {.dtype = DType::Float32});
  const DType state_dtype = c.has_input(3) ? c.input(3).dtype() : query.dtype();
  if (c.has_input(3)) {
    if (c.input(3).shape() != Shape{b, kv_heads, dk, dv})
      c.fail("past_state must be (", b, ", ", kv_heads, ", ", dk, ", ", dv, "), got ", c.input(3).shape());
    state = c.input(3).to(DType::Float32);
  }
  const double scale =
      c.attr_float("scale", 0) != 0 ? c.attr_float("scale", 0) : 1 / std::sqrt(static_cast<double>(dk));
  const int64_t group = q_heads / kv_heads;
  std::vector<Tensor> outputs;
  for (int64_t i = 0; i < t_len; ++i) {
    const Tensor k_t = k.select(2, i);
    Tensor v_t = v.select(2, i);
    if (gated) state = mul(state, decay.select(2, i).unsqueeze(-1));
    if (delta) {
      const Tensor retrieved = mul(state, k_t.unsqueeze(-1)).sum({-2});  // (B, H_kv, d_v)
      v_t = mul(beta.select(2, i), sub(v_t, retrieved));
    }
    state = add(state, mul(k_t.unsqueeze(-1), v_t.unsqueeze(-2)));
    const Tensor read =
        group == 1 ? state : state.unsqueeze(2).expand({b, kv_heads, group, dk, dv}).reshape({b, q_heads, dk, dv});
    outputs.push_back(mul(matmul(q.select(2, i).unsqueeze(-2), read).squeeze({-2}), scale));  // (B, H_q, d_v)
  }
  const Tensor out = t_len > 0 ? stack(outputs, 2) : zeros({b, q_heads, 0, dv}, {.dtype = DType::Float32});
  return {out.transpose(1, 2).reshape({b, t_len, q_heads * dv}).to(query.dtype()), state.to(state_dtype)};
}

}  // namespace

void add_linear_attention_ops(std::vector<OpSpec>& ops) {
  ops.push_back({"LinearAttention", linear_attention_op, 3, 6, 2, 27, {"q_num_heads", "kv_num_heads"}});
}

}  // namespace ug::onnx
