// The one table from traced op names to their ONNX emitters, and the list of ops that are
// traced but have no ONNX form here. Every name an OpDef registers must be in one of the
// two (tests/cpp/onnx_export_test.cpp checks it against graph::registered_ops()).
#include "ug/onnx/export_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "ug/core/error.h"
#include "ug/graph/grad_mode.h"
#include "ug/onnx/export.h"
#include "ug/ops/join.h"
#include "ug/ops/unary_kinds.h"

namespace ug::onnx {

namespace {

using Emitter = void (*)(GraphBuilder&, const CapturedCall&);

DType out_dtype(const CapturedCall& c, size_t i = 0) { return c.outputs.at(i).dtype(); }

/** Input i as a value name, converted to the output's dtype. */
std::string in(GraphBuilder& g, const CapturedCall& c, size_t i) { return g.value(c.inputs.at(i), out_dtype(c)); }

/** A node with one output, named after `hint`; returns the output's name. */
std::string node1(GraphBuilder& g, const std::string& op, const std::vector<std::string>& inputs,
                  const std::string& hint) {
  std::string out = g.fresh(hint);
  g.node(op, inputs, {out});
  return out;
}

std::vector<int64_t> wrap_axes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  return axes;
}

// ---- elementwise --------------------------------------------------------------------------

/** One ONNX op on the input in the output's dtype. */
template <const char* Op> void unary(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node(Op, {x}, {g.output(c)});
}

/** A unary op that is one ONNX op, on the input in the output's dtype. */
template <class Op> void unary_node(GraphBuilder& g, const CapturedCall& c) {
  // The input's name first: an in-place op's output is its input's tensor, named anew by output().
  std::string x = in(g, c, 0);
  g.node(Op::onnx, {x}, {g.output(c)});
}
const std::map<std::string, std::string>& unsupported();
template <class Op> void add_unary_row(std::map<std::string, Emitter>& t) {
  if constexpr (Op::onnx != nullptr)
    if (!unsupported().contains(Op::name)) t.emplace(Op::name, unary_node<Op>);
}

/** floor, ceil, round and trunc leave integers as they are; ONNX's versions take floats only. */
template <const char* Op> void rounding(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node(is_floating(out_dtype(c)) ? Op : "Identity", {x}, {g.output(c)});
}

#define UG_ONNX_NAME(var, text) constexpr char var[] = text;
UG_ONNX_NAME(kFloor, "Floor")
UG_ONNX_NAME(kCeil, "Ceil")
UG_ONNX_NAME(kRound, "Round")
UG_ONNX_NAME(kIdentity, "Identity")
#undef UG_ONNX_NAME

void trunc(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  if (!is_floating(out_dtype(c))) {
    g.node("Identity", {x}, {g.output(c)});
    return;
  }
  std::string floor_abs = node1(g, "Floor", {node1(g, "Abs", {x}, "abs")}, "floor");
  g.node("Mul", {node1(g, "Sign", {x}, "sign"), floor_abs}, {g.output(c)});
}

void square(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("Mul", {x, x}, {g.output(c)});
}

/** f(x) op constant, for the ops ONNX spells with a constant (log2 = log / ln 2, ...). */
void with_constant(GraphBuilder& g, const CapturedCall& c, const std::string& first, const std::string& op, double k) {
  std::string x = in(g, c, 0);
  std::string fx = first.empty() ? x : node1(g, first, {x}, "t");
  g.node(op, {fx, g.scalar(k, out_dtype(c))}, {g.output(c)});
}

void exp2(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("Pow", {g.scalar(2.0, out_dtype(c)), x}, {g.output(c)});
}
void log2(GraphBuilder& g, const CapturedCall& c) { with_constant(g, c, "Log", "Div", std::log(2.0)); }
void log10(GraphBuilder& g, const CapturedCall& c) { with_constant(g, c, "Log", "Div", std::log(10.0)); }
void expm1(GraphBuilder& g, const CapturedCall& c) { with_constant(g, c, "Exp", "Sub", 1.0); }

void log1p(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("Log", {node1(g, "Add", {x, g.scalar(1.0, out_dtype(c))}, "t")}, {g.output(c)});
}

void rsqrt(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("Reciprocal", {node1(g, "Sqrt", {x}, "sqrt")}, {g.output(c)});
}

void silu(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("Mul", {x, node1(g, "Sigmoid", {x}, "sigmoid")}, {g.output(c)});
}

/** Gelu is an ONNX op from opset 20; before it, its formula (erf or tanh form). */
void gelu(GraphBuilder& g, const CapturedCall& c) {
  const std::string& approximate = attr_string(c, "approximate");
  std::string x = in(g, c, 0);
  const DType dt = out_dtype(c);
  if (g.opset() >= 20) {
    set_attr(g.node("Gelu", {x}, {g.output(c)}), "approximate", approximate);
    return;
  }
  std::string inner;
  if (approximate == "tanh") {
    std::string cube = node1(g, "Mul", {node1(g, "Mul", {x, x}, "sq"), x}, "cube");
    std::string sum = node1(g, "Add", {x, node1(g, "Mul", {cube, g.scalar(0.044715, dt)}, "t")}, "t");
    inner = node1(g, "Tanh", {node1(g, "Mul", {sum, g.scalar(std::sqrt(2.0 / M_PI), dt)}, "t")}, "tanh");
  } else {
    inner = node1(g, "Erf", {node1(g, "Mul", {x, g.scalar(M_SQRT1_2, dt)}, "t")}, "erf");
  }
  std::string half_x = node1(g, "Mul", {x, g.scalar(0.5, dt)}, "half");
  g.node("Mul", {half_x, node1(g, "Add", {inner, g.scalar(1.0, dt)}, "t")}, {g.output(c)});
}

void isnan(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]);
  g.node("IsNaN", {x}, {g.output(c)});
}

void isinf(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]);
  g.node("IsInf", {x}, {g.output(c)});
}

void isfinite(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]);
  std::string bad = node1(g, "Or", {node1(g, "IsNaN", {x}, "nan"), node1(g, "IsInf", {x}, "inf")}, "bad");
  g.node("Not", {bad}, {g.output(c)});
}

void logical_not(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0], DType::Bool);
  g.node("Not", {x}, {g.output(c)});
}

/** A binary op on both operands in the dtype the kernel computed in (ONNX broadcasts them). */
void binary_node(GraphBuilder& g, const CapturedCall& c, const char* op, std::optional<DType> operands = {},
                 bool negate = false) {
  const DType dt = operands.value_or(static_cast<DType>(attr_int(c, "compute_dtype")));
  std::string a = g.value(c.inputs.at(0), dt), b = g.value(c.inputs.at(1), dt);
  if (negate) {
    std::string eq = node1(g, op, {a, b}, "t");
    g.node("Not", {eq}, {g.output(c)});
    return;
  }
  g.node(op, {a, b}, {g.output(c)});
}

// ---- split and unbind with a gradient to record (without one their parts are captured as views) --

/** split: ONNX Split at the parts' sizes along "dim". */
void split(GraphBuilder& g, const CapturedCall& c) {
  const int64_t d = attr_int(c, "dim");
  std::vector<int64_t> sizes;
  std::vector<std::string> outs;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    sizes.push_back(c.outputs[i].size(d));
    outs.push_back(g.output(c, i));
  }
  set_attr(g.node("Split", {g.value(c.inputs[0]), g.ints(sizes)}, outs), "axis", d);
}

/** unbind: ONNX Split into parts of one, each squeezed along "dim". */
void unbind(GraphBuilder& g, const CapturedCall& c) {
  const int64_t d = attr_int(c, "dim");
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.outputs.size(); ++i) parts.push_back(g.fresh("part"));
  set_attr(g.node("Split", {g.value(c.inputs[0]), g.ints(std::vector<int64_t>(c.outputs.size(), 1))}, parts), "axis",
           d);
  for (size_t i = 0; i < c.outputs.size(); ++i) g.node("Squeeze", {parts[i], g.ints({d})}, {g.output(c, i)});
}

/** The rule of a backward kernel (an activation's gradient, softmax_backward,
 *  layer_norm_backward): a program calls the op's fused kernel back, as eager backward runs it
 *  (one node, no intermediates); a file, which has no callbacks, and a Loop's body get its
 *  formula. */
template <Emitter Formula> void called_back(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed() && c.replay) return g.replay(c);
  Formula(g, c);
}

// ---- activation gradients: g times the derivative at v (binary_kinds.h), as their formulas -----

/** ug.debug.check_numerics: a program checks each run's values (its call-back); a file, which
 *  has no call-backs, drops the check (its output, read by nothing, an empty tensor). */
void unchecked(GraphBuilder& g, const CapturedCall& c) { g.node("ConstantOfShape", {g.ints({0})}, {g.output(c)}); }

/** relu_backward(g, y): g where y > 0, else 0. */
void relu_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  std::string grad = in(g, c, 0), y = in(g, c, 1), zero = g.scalar(0.0, dt);
  g.node("Where", {node1(g, "Greater", {y, zero}, "pos"), grad, zero}, {g.output(c)});
}

/** tanh_backward(g, y): g (1 - y^2). */
void tanh_backward(GraphBuilder& g, const CapturedCall& c) {
  std::string grad = in(g, c, 0), y = in(g, c, 1);
  std::string d = node1(g, "Sub", {g.scalar(1.0, out_dtype(c)), node1(g, "Mul", {y, y}, "sq")}, "d");
  g.node("Mul", {grad, d}, {g.output(c)});
}

/** sigmoid_backward(g, y): g y (1 - y). */
void sigmoid_backward(GraphBuilder& g, const CapturedCall& c) {
  std::string grad = in(g, c, 0), y = in(g, c, 1);
  std::string d = node1(g, "Mul", {y, node1(g, "Sub", {g.scalar(1.0, out_dtype(c)), y}, "t")}, "d");
  g.node("Mul", {grad, d}, {g.output(c)});
}

/** silu_backward(g, x): g s (1 + x (1 - s)) with s = sigmoid(x). */
void silu_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  std::string grad = in(g, c, 0), x = in(g, c, 1), one = g.scalar(1.0, dt);
  std::string s = node1(g, "Sigmoid", {x}, "s");
  std::string t = node1(g, "Add", {one, node1(g, "Mul", {x, node1(g, "Sub", {one, s}, "t")}, "t")}, "t");
  g.node("Mul", {grad, node1(g, "Mul", {s, t}, "d")}, {g.output(c)});
}

/** gelu_backward(g, x) (erf form): g (Phi(x) + x phi(x)). */
void gelu_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  std::string grad = in(g, c, 0), x = in(g, c, 1);
  std::string erf = node1(g, "Erf", {node1(g, "Mul", {x, g.scalar(M_SQRT1_2, dt)}, "t")}, "erf");
  std::string cdf = node1(g, "Mul", {node1(g, "Add", {erf, g.scalar(1.0, dt)}, "t"), g.scalar(0.5, dt)}, "cdf");
  std::string sq = node1(g, "Mul", {node1(g, "Mul", {x, x}, "sq"), g.scalar(-0.5, dt)}, "t");
  std::string pdf = node1(g, "Mul", {node1(g, "Exp", {sq}, "e"), g.scalar(0.39894228040143267794, dt)}, "pdf");
  std::string d = node1(g, "Add", {cdf, node1(g, "Mul", {x, pdf}, "t")}, "d");
  g.node("Mul", {grad, d}, {g.output(c)});
}

/** softmax_backward(g, y) over the last dim: y (g - sum(g y)); log_softmax_backward(g, y):
 *  g - e^y sum(g). */
void softmax_backward(GraphBuilder& g, const CapturedCall& c) {
  std::string grad = in(g, c, 0), y = in(g, c, 1), last = g.ints({c.inputs[1].dim() - 1});
  auto row_sum = [&](const std::string& v) {
    std::string s = g.fresh("row_sum");
    set_attr(g.node("ReduceSum", {v, last}, {s}), "keepdims", int64_t{1});
    return s;
  };
  if (c.op == "log_softmax_backward") {
    std::string e = node1(g, "Exp", {y}, "e");
    g.node("Sub", {grad, node1(g, "Mul", {e, row_sum(grad)}, "t")}, {g.output(c)});
  } else {
    std::string t = node1(g, "Sub", {grad, row_sum(node1(g, "Mul", {grad, y}, "gy"))}, "t");
    g.node("Mul", {y, t}, {g.output(c)});
  }
}

/** layer_norm_backward(g, x, w) over rows of `cols` (outputs dx, then dweight and dbias where
 *  asked): with xhat = (x - mean) rs and v = g w, dx = rs (v - mean(v) - xhat mean(v xhat)),
 *  dweight = sum over rows of g xhat, dbias = sum of g. */
void layer_norm_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  const int64_t cols = attr_int(c, "cols");
  const Tensor &x = c.inputs[1], &w = c.inputs[2];
  auto sum = [&](const std::string& v, int64_t axis, bool keep) {
    std::string s = g.fresh("sum");
    set_attr(g.node("ReduceSum", {v, g.ints({axis})}, {s}), "keepdims", int64_t{keep});
    return s;
  };
  std::string n = g.scalar(static_cast<double>(cols), dt);
  auto row_mean = [&](const std::string& v) { return node1(g, "Div", {sum(v, 1, true), n}, "mean"); };
  std::string rows_cols = g.ints({-1, cols});
  std::string x2 = node1(g, "Reshape", {in(g, c, 1), rows_cols}, "x2");
  std::string g2 = node1(g, "Reshape", {in(g, c, 0), rows_cols}, "g2");
  std::string xc = node1(g, "Sub", {x2, row_mean(x2)}, "xc");
  std::string var = row_mean(node1(g, "Mul", {xc, xc}, "sq"));
  std::string eps = g.scalar(attr_float(c, "epsilon"), dt);
  std::string rs = node1(g, "Reciprocal", {node1(g, "Sqrt", {node1(g, "Add", {var, eps}, "t")}, "std")}, "rs");
  std::string xhat = node1(g, "Mul", {xc, rs}, "xhat");
  std::string v =
      w.defined() ? node1(g, "Mul", {g2, node1(g, "Reshape", {in(g, c, 2), g.ints({cols})}, "w")}, "v") : g2;
  std::string centred = node1(g, "Sub", {v, row_mean(v)}, "t");
  std::string along = node1(g, "Mul", {xhat, row_mean(node1(g, "Mul", {v, xhat}, "vx"))}, "t");
  std::string dx2 = node1(g, "Mul", {node1(g, "Sub", {centred, along}, "t"), rs}, "dx");
  g.node("Reshape", {dx2, g.shape_value(std::vector<int64_t>(x.shape().begin(), x.shape().end()))}, {g.output(c, 0)});
  size_t k = 1;
  if (attr_int(c, "need_weight")) {
    std::string dw = sum(node1(g, "Mul", {g2, xhat}, "gx"), 0, false);
    g.node("Reshape", {dw, g.shape_value(std::vector<int64_t>(w.shape().begin(), w.shape().end()))},
           {g.output(c, k++)});
  }
  if (attr_int(c, "need_bias")) {
    const Tensor& db = c.outputs[k];
    g.node("Reshape", {sum(g2, 0, false), g.shape_value(std::vector<int64_t>(db.shape().begin(), db.shape().end()))},
           {g.output(c, k)});
  }
}

// ---- attention: the fused kernels' op (a program calls them back) and their formulas ----------

/** k or v [B, Hk, S, E] (value t) with each head repeated for its group of the q_heads query
 *  heads, as repeat_interleave: Unsqueeze, Expand and Reshape; t itself when Hk is q_heads. */
std::string repeat_heads(GraphBuilder& g, const std::string& t, const Tensor& like, int64_t q_heads) {
  const int64_t heads = like.size(1);
  if (heads == q_heads) return t;
  const std::vector<int64_t> s(like.shape().begin(), like.shape().end());
  std::string e = node1(
      g, "Expand",
      {node1(g, "Unsqueeze", {t, g.ints({2})}, "u"), g.shape_value({s[0], heads, q_heads / heads, s[2], s[3]})}, "e");
  return node1(g, "Reshape", {e, g.shape_value({s[0], q_heads, s[2], s[3]})}, "rep");
}

/** x with its last two dims swapped (x is 4-d). */
std::string swap_last(GraphBuilder& g, const std::string& x) {
  std::string t = g.fresh("t");
  set_attr(g.node("Transpose", {x}, {t}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  return t;
}

/** The probabilities softmax(q k^T * scale, masked) of an attention call whose inputs hold q, k,
 *  v and the mask from `first` on (attributes causal and scale), as ops::attention_probs computes
 *  them; `k` is k's value with its heads repeated. */
std::string attention_probs(GraphBuilder& g, const CapturedCall& c, size_t first, const std::string& k) {
  const Tensor &q = c.inputs[first], &mask = c.inputs[first + 3];
  const DType dt = q.dtype();
  const std::string neg_inf = g.scalar(-std::numeric_limits<double>::infinity(), dt);
  std::string s =
      node1(g, "MatMul", {node1(g, "Mul", {g.value(q), g.scalar(attr_float(c, "scale"), dt)}, "qs"), swap_last(g, k)},
            "scores");
  if (attr_int(c, "causal")) {  // key j <= query i
    const int64_t L = q.size(2), S = c.inputs[first + 1].size(2);
    Tensor keep = empty({L, S}, {.dtype = DType::Bool});
    bool* kp = keep.data_ptr<bool>();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) kp[i * S + j] = j <= i;
    s = node1(g, "Where", {g.value(keep), s, neg_inf}, "masked");
  } else if (mask.defined() && mask.dtype() == DType::Bool) {
    s = node1(g, "Where", {g.value(mask), s, neg_inf}, "masked");
  } else if (mask.defined()) {
    s = node1(g, "Add", {s, g.value(mask, dt)}, "masked");
  }
  auto softmax = [&](const std::string& x) {
    std::string p = g.fresh("probs");
    set_attr(g.node("Softmax", {x}, {p}), "axis", int64_t{-1});
    return p;
  };
  if (!mask.defined()) return softmax(s);  // a causal mask always keeps the first key
  // A row with every key masked gives zeros (not NaN), as the kernel does.
  std::string kept = node1(g, "Not", {node1(g, "Equal", {s, neg_inf}, "masked_key")}, "kept"), attended = g.fresh("t");
  set_attr(g.node("Cast", {kept}, {attended}), "to", static_cast<int64_t>(onnx_dtype(dt)));
  std::string count = g.fresh("attended");
  set_attr(g.node("ReduceSum", {attended, g.ints({-1})}, {count}), "keepdims", int64_t{1});
  const std::string dead = node1(g, "Equal", {count, g.scalar(0.0, dt)}, "dead"), zero = g.scalar(0.0, dt);
  return node1(g, "Where", {dead, zero, softmax(node1(g, "Where", {dead, zero, s}, "t"))}, "probs");
}

/** scaled_dot_product_attention(q, k, v, mask) on [B, H, L, E] operands, with outputs the result
 *  and each row's log-sum-exp: a program whose backward reads the log-sum-exp calls the fused
 *  kernel back (one node); otherwise, and in a file, the composition
 *  softmax(q * scale k^T, masked) v. */
void attention(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed() && c.replay && g.read_by_a_call(c.outputs[1])) return g.replay(c);
  const int64_t heads = c.inputs[0].size(1);
  std::string k = repeat_heads(g, g.value(c.inputs[1]), c.inputs[1], heads);
  std::string v = repeat_heads(g, g.value(c.inputs[2]), c.inputs[2], heads);
  g.node("MatMul", {attention_probs(g, c, 0, k), v}, {g.output(c, 0)});
}

/** attention_backward(g, q, k, v, mask, out, lse) (outputs dq, dk, dv): with p the
 *  probabilities, dp = g v^T, ds = p (dp - rowsum(dp p)); dq = ds k scale, dk = ds^T q scale,
 *  dv = p^T g, dk and dv summed over each key/value head's group of query heads. */
void attention_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  const Tensor &q = c.inputs[1], &k = c.inputs[2], &v = c.inputs[3];
  const int64_t heads = q.size(1);
  std::string grad = g.value(c.inputs[0], dt), qv = g.value(q), sc = g.scalar(attr_float(c, "scale"), dt);
  std::string ke = repeat_heads(g, g.value(k), k, heads), ve = repeat_heads(g, g.value(v), v, heads);
  std::string p = attention_probs(g, c, 1, ke);
  std::string dp = node1(g, "MatMul", {grad, swap_last(g, ve)}, "dp");
  std::string dpp = g.fresh("row_sum");
  set_attr(g.node("ReduceSum", {node1(g, "Mul", {dp, p}, "t"), g.ints({-1})}, {dpp}), "keepdims", int64_t{1});
  std::string ds = node1(g, "Mul", {p, node1(g, "Sub", {dp, dpp}, "t")}, "ds");
  g.node("Mul", {node1(g, "MatMul", {ds, ke}, "t"), sc}, {g.output(c, 0)});
  auto fold = [&](const std::string& d, const Tensor& like, size_t i) {  // the groups' gradients summed
    if (like.size(1) == heads) {
      g.node("Identity", {d}, {g.output(c, i)});
      return;
    }
    const std::vector<int64_t> s(like.shape().begin(), like.shape().end());
    std::string r = node1(g, "Reshape", {d, g.shape_value({s[0], s[1], heads / s[1], s[2], s[3]})}, "groups");
    set_attr(g.node("ReduceSum", {r, g.ints({2})}, {g.output(c, i)}), "keepdims", int64_t{0});
  };
  fold(node1(g, "Mul", {node1(g, "MatMul", {swap_last(g, ds), qv}, "t"), sc}, "dk"), k, 1);
  fold(node1(g, "MatMul", {swap_last(g, p), grad}, "dv"), v, 2);
}

/** cross_entropy(x, t[, w]) over class indices: ONNX's SoftmaxCrossEntropyLoss, which the
 *  importer runs with the same op (so a program's loss is the eager one). */
void cross_entropy(GraphBuilder& g, const CapturedCall& c) {
  std::vector<std::string> inputs{in(g, c, 0), g.value(c.inputs[1], DType::Int64)};
  if (c.inputs[2].defined()) inputs.push_back(in(g, c, 2));
  ::onnx::NodeProto& n = g.node("SoftmaxCrossEntropyLoss", inputs, {g.output(c)});
  set_attr(n, "reduction", attr_string(c, "reduction"));
  set_attr(n, "ignore_index", attr_int(c, "ignore_index"));
}

/** cross_entropy_backward(g, x, t[, w]): (softmax(x) - one_hot(t)) times each row's g w[t] (over
 *  the samples' total weight for a mean), 0 on the rows whose target is ignore_index. */
void cross_entropy_backward(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  const int64_t classes = c.inputs[1].size(1);
  std::string grad = in(g, c, 0), x = in(g, c, 1), t = g.value(c.inputs[2], DType::Int64);
  std::string zero = g.scalar(0.0, dt), one = g.scalar(1.0, dt), axis1 = g.ints({1});
  std::string ignored =
      node1(g, "Equal", {t, g.scalar(static_cast<double>(attr_int(c, "ignore_index")), DType::Int64)}, "ignored");
  std::string safe = node1(g, "Where", {ignored, g.scalar(0.0, DType::Int64), t}, "safe");
  std::string w = c.inputs[3].defined() ? node1(g, "Gather", {in(g, c, 3), safe}, "wt") : one;
  std::string coef = node1(g, "Where", {ignored, zero, w}, "coef");
  if (attr_string(c, "reduction") == "mean") {
    std::string total = g.fresh("total");
    set_attr(g.node("ReduceSum", {coef}, {total}), "keepdims", int64_t{0});
    coef = node1(g, "Div", {coef, total}, "coef");
  }
  std::string scale = node1(g, "Unsqueeze", {node1(g, "Mul", {coef, grad}, "s"), axis1}, "scale");
  std::vector<int64_t> class_ids(static_cast<size_t>(classes));
  for (int64_t k = 0; k < classes; ++k) class_ids[static_cast<size_t>(k)] = k;
  std::string hot = node1(g, "Equal", {node1(g, "Unsqueeze", {safe, axis1}, "t"), g.ints(class_ids)}, "hot");
  std::string p = g.fresh("p");
  set_attr(g.node("Softmax", {x}, {p}), "axis", int64_t{1});
  std::string diff = node1(g, "Sub", {p, node1(g, "Where", {hot, one, zero}, "one_hot")}, "d");
  g.node("Mul", {diff, scale}, {g.output(c)});
}

/** binary_cross_entropy's elementwise loss -(t max(log x, -100) + (1 - t) max(log(1 - x), -100)):
 *  a program calls the op back (its derivative is torch's, finite at 0 and 1), a file gets
 *  the formula. */
void binary_cross_entropy(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  std::string x = in(g, c, 0), t = in(g, c, 1), one = g.scalar(1.0, dt), least = g.scalar(-100.0, dt);
  auto clamped_log = [&](const std::string& v) { return node1(g, "Max", {node1(g, "Log", {v}, "log"), least}, "t"); };
  std::string hit = node1(g, "Mul", {t, clamped_log(x)}, "t");
  std::string miss =
      node1(g, "Mul", {node1(g, "Sub", {one, t}, "t"), clamped_log(node1(g, "Sub", {one, x}, "t"))}, "t");
  g.node("Neg", {node1(g, "Add", {hit, miss}, "t")}, {g.output(c)});
}

/** mse_loss's mean or sum of (input - target)^2: Sub, Mul and a reduction over every axis,
 *  which a program runs fused (one pass over blocks, compiler/fuse.h) and a file holds. */
void mse_loss(GraphBuilder& g, const CapturedCall& c) {
  std::string d = node1(g, "Sub", {in(g, c, 0), in(g, c, 1)}, "d");
  std::string squares = node1(g, "Mul", {d, d}, "squares");
  if (c.inputs[0].dim() == 0) {
    g.node("Identity", {squares}, {g.output(c)});
    return;
  }
  const char* op = attr_string(c, "reduction") == "mean" ? "ReduceMean" : "ReduceSum";
  set_attr(g.node(op, {squares}, {g.output(c)}), "keepdims", int64_t{0});
}

/** sort along "dim": TopK of the dim's whole size (k read from the shape where it may change),
 *  largest for descending, which orders ties by index (a stable sort's order). */
void sort(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  std::string xv = g.value(x);
  if (x.dim() == 0) {
    g.node("Identity", {xv}, {g.output(c, 0)});
    g.node("Identity", {g.scalar(0.0, DType::Int64)}, {g.output(c, 1)});
    return;
  }
  const int64_t d = attr_int(c, "dim");
  std::string k = g.dynamic(x)[d] || g.sizes_free()
                      ? node1(g, "Gather", {node1(g, "Shape", {xv}, "shape"), g.ints({d})}, "k")
                      : g.ints({x.size(d)});
  ::onnx::NodeProto& n = g.node("TopK", {xv, k}, {g.output(c, 0), g.output(c, 1)});
  set_attr(n, "axis", d);
  set_attr(n, "largest", attr_int(c, "descending"));
  set_attr(n, "sorted", int64_t{1});
}

/** logaddexp: ONNX has none; max(a, b) + log(1 + exp(-|a - b|)). */
void logaddexp(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  std::string a = g.value(c.inputs.at(0), dt), b = g.value(c.inputs.at(1), dt);
  std::string gap = node1(g, "Neg", {node1(g, "Abs", {node1(g, "Sub", {a, b}, "d")}, "ad")}, "nd");
  std::string tail = node1(g, "Log", {node1(g, "Add", {node1(g, "Exp", {gap}, "e"), g.scalar(1.0, dt)}, "p")}, "l");
  g.node("Add", {node1(g, "Max", {a, b}, "m"), tail}, {g.output(c)});
}

/** add and mul of bools are or and and. */
void add(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, out_dtype(c) == DType::Bool ? "Or" : "Add"); }
void mul(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, out_dtype(c) == DType::Bool ? "And" : "Mul"); }
void sub(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Sub"); }
void div(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Div"); }
void pow(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Pow"); }
void maximum(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Max"); }
void minimum(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Min"); }
void eq(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Equal"); }
void ne(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Equal", {}, true); }
void lt(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Less"); }
void le(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "LessOrEqual"); }
void gt(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Greater"); }
void ge(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "GreaterOrEqual"); }
void logical_and(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "And", DType::Bool); }
void logical_or(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Or", DType::Bool); }
void logical_xor(GraphBuilder& g, const CapturedCall& c) { binary_node(g, c, "Xor", DType::Bool); }

void where(GraphBuilder& g, const CapturedCall& c) {
  std::string cond = g.value(c.inputs[0], DType::Bool), a = in(g, c, 1), b = in(g, c, 2);
  g.node("Where", {cond, a, b}, {g.output(c)});
}

// ---- Python's division and remainder, atan2, bit ops ---------------------------------------

/** The operands of a binary call in the dtype its kernel computed in. */
std::pair<std::string, std::string> operands(GraphBuilder& g, const CapturedCall& c, DType dt) {
  return {g.value(c.inputs.at(0), dt), g.value(c.inputs.at(1), dt)};
}

/** The remainder of a / b with a's sign (C's fmod and %): Mod with fmod=1. */
std::string c_remainder(GraphBuilder& g, const std::string& a, const std::string& b) {
  std::string r = g.fresh("fmod");
  set_attr(g.node("Mod", {a, b}, {r}), "fmod", int64_t{1});
  return r;
}

/** Where C's remainder r is nonzero with the sign b does not have: there Python's quotient is
 *  one below C's and Python's remainder is r + b (the kernels' test, binary_kinds.h). */
std::string sign_differs(GraphBuilder& g, const std::string& r, const std::string& b, DType dt) {
  std::string zero = g.scalar(0.0, dt);
  std::string nonzero = node1(g, "Not", {node1(g, "Equal", {r, zero}, "t")}, "nonzero");
  std::string other = node1(g, "Xor", {node1(g, "Less", {r, zero}, "t"), node1(g, "Less", {b, zero}, "t")}, "t");
  return node1(g, "And", {nonzero, other}, "steps");
}

/** A call whose operands have no ONNX form: a program calls it back; a file is refused with `why`. */
template <class... Why> void without_form(GraphBuilder& g, const CapturedCall& c, const Why&... why) {
  if (g.replays_allowed() && c.replay) return g.replay(c);
  fail("[onnx.export] ", c.op, " of ", static_cast<DType>(attr_int(c, "compute_dtype")), " tensors ", why...);
}

/** Whether x's sign bit is set (-0 included: 1 / -0 is -inf). */
std::string sign_bit(GraphBuilder& g, const std::string& x, DType dt) {
  std::string zero = g.scalar(0.0, dt);
  std::string below = node1(g, "Less", {x, zero}, "t");
  return node1(g, "Or", {below, node1(g, "Less", {node1(g, "Reciprocal", {x}, "t"), zero}, "t")}, "sign_bit");
}

/** Python's %, the sign of the divisor: Mod (fmod=0 is exactly that for integers; floats take
 *  fmod=1, C's remainder, and add b where its sign differs from b's). */
void remainder(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  if (dt == DType::Bool) return without_form(g, c, "has no ONNX form; convert them to integers");
  auto [a, b] = operands(g, c, dt);
  if (!is_floating(dt)) {
    g.node("Mod", {a, b}, {g.output(c)});
    return;
  }
  std::string r = c_remainder(g, a, b);
  g.node("Where", {sign_differs(g, r, b, dt), node1(g, "Add", {r, b}, "t"), r}, {g.output(c)});
}

/** Python's //, toward minus infinity, as the kernels compute it (binary_kinds.h): integers are
 *  C's quotient (Div truncates) less one where the remainder's sign differs from b's; floats
 *  are (a - fmod(a, b)) / b so stepped, then rounded to the nearest integer, with 0 taking the
 *  sign of a / b, and a / b itself for b = 0. ONNX Runtime's Where turns a -0 taken from its
 *  true branch into +0 (and swaps the branches of a Where on a Not): here and in atan2 a value
 *  that may be -0 is the false branch of a Where on no Not. */
void floor_divide(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  if (dt == DType::Bool) return without_form(g, c, "has no ONNX form; convert them to integers");
  if (!is_floating(dt)) {
    // Div and Sub take 8- and 16-bit integers from opset 14: before it, the quotient is int32's.
    const DType wide = g.opset() < 14 && itemsize(dt) < 4 ? DType::Int32 : dt;
    auto [a, b] = operands(g, c, wide);
    std::string q = node1(g, "Div", {a, b}, "q"), r = c_remainder(g, a, b);
    std::string out = wide == dt ? g.output(c) : g.fresh("floor");
    g.node("Where", {sign_differs(g, r, b, wide), node1(g, "Sub", {q, g.scalar(1.0, wide)}, "t"), q}, {out});
    if (wide != dt) set_attr(g.node("Cast", {out}, {g.output(c)}), "to", static_cast<int64_t>(onnx_dtype(dt)));
    return;
  }
  auto [a, b] = operands(g, c, dt);
  std::string r = c_remainder(g, a, b), one = g.scalar(1.0, dt);
  std::string exact = node1(g, "Div", {node1(g, "Sub", {a, r}, "t"), b}, "t");
  exact = node1(g, "Where", {sign_differs(g, r, b, dt), node1(g, "Sub", {exact, one}, "t"), exact}, "div");
  std::string down = node1(g, "Floor", {exact}, "floor");
  std::string up = node1(g, "Greater", {node1(g, "Sub", {exact, down}, "t"), g.scalar(0.5, dt)}, "up");
  std::string rounded = node1(g, "Where", {up, node1(g, "Add", {down, one}, "t"), down}, "t");
  // A zero quotient takes a / b's sign: it has b's (a - fmod(a, b) is +0), so it flips where a's
  // sign bit is set.
  std::string zero = g.scalar(0.0, dt);
  std::string flip = node1(g, "And", {node1(g, "Equal", {exact, zero}, "t"), sign_bit(g, a, dt)}, "flip");
  std::string q = node1(g, "Mul", {rounded, node1(g, "Where", {flip, g.scalar(-1.0, dt), one}, "t")}, "t");
  g.node("Where", {node1(g, "Equal", {b, zero}, "t"), node1(g, "Div", {a, b}, "quotient"), q}, {g.output(c)});
}

/** atan2(y, x) = atan(y / x), plus pi with y's sign where x's sign bit is set; y / x is y / 1
 *  where both are zeros and sign(y) sign(x) where both are infinite, which gives C's atan2 at
 *  signed zeros and infinities. */
void atan2(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  auto [y, x] = operands(g, c, dt);
  std::string zero = g.scalar(0.0, dt);
  std::string zeros = node1(g, "And", {node1(g, "Equal", {y, zero}, "t"), node1(g, "Equal", {x, zero}, "t")}, "zeros");
  std::string infs = node1(g, "And", {node1(g, "IsInf", {y}, "t"), node1(g, "IsInf", {x}, "t")}, "infs");
  std::string ratio = node1(g, "Div", {y, node1(g, "Where", {zeros, g.scalar(1.0, dt), x}, "t")}, "t");
  std::string signs = node1(g, "Mul", {node1(g, "Sign", {y}, "t"), node1(g, "Sign", {x}, "t")}, "t");
  std::string angle = node1(g, "Atan", {node1(g, "Where", {infs, signs, ratio}, "ratio")}, "atan");
  std::string half_turn = node1(g, "Where", {sign_bit(g, y, dt), g.scalar(-M_PI, dt), g.scalar(M_PI, dt)}, "half_turn");
  g.node("Where", {sign_bit(g, x, dt), node1(g, "Add", {angle, half_turn}, "t"), angle}, {g.output(c)});
}

/** bitwise and, or, xor: And, Or, Xor on bools (any opset), BitwiseAnd, ... on integers (from 18). */
template <const char* Logical, const char* Bitwise> void bitwise(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  if (dt != DType::Bool && g.opset() < 18)
    fail("[onnx.export] ", c.op, " of ", dt, " tensors needs opset 18 or later (", Bitwise, "), got ", g.opset());
  binary_node(g, c, dt == DType::Bool ? Logical : Bitwise, dt);
}

void bitwise_not(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = out_dtype(c);
  if (dt != DType::Bool && g.opset() < 18)
    fail("[onnx.export] bitwise_not of ", dt, " tensors needs opset 18 or later (BitwiseNot), got ", g.opset());
  std::string x = in(g, c, 0);  // before output(): bitwise_not_ writes its input
  g.node(dt == DType::Bool ? "Not" : "BitwiseNot", {x}, {g.output(c)});
}

/** Shifts: BitShift, which ONNX defines for unsigned integers only; a count of the type's width
 *  or more shifts every bit out (0), as the kernels do. */
template <const char* Direction> void bit_shift(GraphBuilder& g, const CapturedCall& c) {
  const DType dt = static_cast<DType>(attr_int(c, "compute_dtype"));
  if (dt != DType::UInt8) return without_form(g, c, "has no ONNX form: BitShift takes unsigned integers only (uint8)");
  auto [a, b] = operands(g, c, dt);
  std::string shifted = g.fresh("shifted");
  set_attr(g.node("BitShift", {a, b}, {shifted}), "direction", std::string(Direction));
  std::string in_range = node1(g, "Less", {b, g.scalar(8.0, dt)}, "in_range");
  g.node("Where", {in_range, shifted, g.scalar(0.0, dt)}, {g.output(c)});
}

#define UG_ONNX_NAME(var, text) constexpr char var[] = text;
UG_ONNX_NAME(kAnd, "And")
UG_ONNX_NAME(kOr, "Or")
UG_ONNX_NAME(kXor, "Xor")
UG_ONNX_NAME(kBitwiseAnd, "BitwiseAnd")
UG_ONNX_NAME(kBitwiseOr, "BitwiseOr")
UG_ONNX_NAME(kBitwiseXor, "BitwiseXor")
UG_ONNX_NAME(kLeft, "LEFT")
UG_ONNX_NAME(kRight, "RIGHT")
#undef UG_ONNX_NAME

// ---- shapes ---------------------------------------------------------------------------------

/** The target of a Reshape that keeps working when the dynamic dims change size. The rule:
 *   1. an output dim at the position of a dynamic input dim, with the same size, is 0 ("copy
 *      that dim from the input"; allowzero stays 0);
 *   2. if dynamic input dims remain that were not copied, their sizes went into another output
 *      dim: the first one that is a multiple of their product becomes -1 (inferred);
 *   3. every other dim is its traced size.
 *  Returns the target and the output's dynamic dims. */
std::pair<std::vector<int64_t>, DynamicDims> reshape_target(const Tensor& x, const DynamicDims& dyn, const Shape& out,
                                                            const std::string& op) {
  std::vector<int64_t> target(out.begin(), out.end());
  DynamicDims out_dyn(out.size(), false);
  int64_t folded = 1;
  bool any_folded = false;
  for (size_t i = 0; i < dyn.size(); ++i) {
    if (!dyn[i]) continue;
    if (i < out.size() && out[i] == x.size(static_cast<int64_t>(i))) {
      target[i] = 0;
      out_dyn[i] = true;
    } else {
      folded *= x.size(static_cast<int64_t>(i));
      any_folded = true;
    }
  }
  if (any_folded) {
    for (size_t j = 0; j < target.size(); ++j) {
      if (target[j] != 0 && folded != 0 && target[j] % folded == 0) {
        target[j] = -1;
        out_dyn[j] = true;
        return {target, out_dyn};
      }
    }
    fail("[onnx.export] ", op, " from shape ", x.shape(), " to ", out,
         " mixes a dynamic axis into dims it cannot be inferred from; export with fewer dynamic_axes");
  }
  return {target, out_dyn};
}

/** A Reshape's target under GraphBuilder::free_sizes, made to hold at other sizes of any input
 *  dim: the dims of x and of the output are matched up in groups of equal products (size-1
 *  dims aside). A dim that keeps its place is 0 (ONNX's "copy that dim"); one that moves, or a
 *  product of several (the batch and time dims merged), is read from x's shape; a dim split
 *  into several (the model dim into heads) gives constants and one -1 (inferred). Two traces
 *  then make the same graph whenever the constants are sizes that did not change. */
void reshape_free(GraphBuilder& g, const CapturedCall& c, const std::string& x) {
  const Shape &in = c.inputs[0].shape(), &out = c.outputs[0].shape();
  std::vector<std::string> part(out.size());  // "" for a constant, "0", "-1" or a value name
  std::vector<int64_t> target(out.begin(), out.end());
  DynamicDims dyn(out.size(), false);
  std::vector<int64_t> ins, outs;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (in[d] != 1) ins.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(out.size()); ++d)
    if (out[d] != 1) outs.push_back(d);
  const bool empty = std::find(in.begin(), in.end(), 0) != in.end();
  bool inferred = false;
  for (size_t p = 0, q = 0; !empty && p < ins.size() && q < outs.size(); ++p, ++q) {
    const size_t p0 = p, q0 = q;
    int64_t a = in[ins[p]], b = out[outs[q]];
    while (a != b) {
      if (a < b && p + 1 < ins.size()) a *= in[ins[++p]];
      else if (b < a && q + 1 < outs.size()) b *= out[outs[++q]];
      else break;
    }
    if (a != b) break;
    if (q == q0) {
      const int64_t j = outs[q];
      dyn[j] = true;
      if (p == p0 && ins[p] == j) {
        part[j] = "0";
        target[j] = 0;
      } else {
        std::string dims = g.shape_of(x, ins[p0], ins[p] + 1);
        part[j] = p == p0 ? dims : node1(g, "ReduceProd", {dims}, "size");
      }
    } else if (!inferred) {
      part[outs[q0]] = "-1";
      target[outs[q0]] = -1;
      dyn[outs[q0]] = inferred = true;
    }
  }
  bool reads = false;
  for (size_t j = 0; j < out.size(); ++j) {
    if (!inferred && !part[j].empty() && part[j] != "0") {  // a read dim can be inferred instead
      part[j] = "-1";
      target[j] = -1;
      inferred = true;
    }
    reads = reads || (!part[j].empty() && part[j] != "0" && part[j] != "-1");
  }
  std::string shape = reads ? g.fresh("shape") : g.ints(target);
  if (reads) {
    std::vector<std::string> parts;
    for (size_t j = 0; j < out.size(); ++j)
      parts.push_back(part[j].empty() || part[j] == "0" || part[j] == "-1" ? g.ints({target[j]}) : part[j]);
    set_attr(g.node("Concat", parts, {shape}), "axis", int64_t{0});
  }
  g.node("Reshape", {x, shape}, {g.output(c, 0, dyn)});
}

void reshape_to(GraphBuilder& g, const CapturedCall& c, const std::string& x) {
  if (g.sizes_free()) {
    reshape_free(g, c, x);
    return;
  }
  auto [target, dyn] = reshape_target(c.inputs[0], g.dynamic(c.inputs[0]), c.outputs[0].shape(), c.op);
  std::string shape = g.ints(target);
  g.node("Reshape", {x, shape}, {g.output(c, 0, dyn)});
}

void reshape(GraphBuilder& g, const CapturedCall& c) { reshape_to(g, c, g.value(c.inputs[0])); }

/** flatten(1) of a batch is ONNX's Flatten(axis=1); other flattens are reshapes. */
void flatten(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  std::string xv = g.value(x);
  if (x.dim() >= 2 && attr_int(c, "start_dim") == 1 && attr_int(c, "end_dim") == x.dim() - 1) {
    DynamicDims d = g.dynamic(x);
    DynamicDims out{d[0], std::any_of(d.begin() + 1, d.end(), [](bool b) { return b; })};
    set_attr(g.node("Flatten", {xv}, {g.output(c, 0, out)}), "axis", int64_t{1});
    return;
  }
  reshape_to(g, c, xv);
}

void permute_with(GraphBuilder& g, const CapturedCall& c, const std::vector<int64_t>& perm) {
  std::string x = g.value(c.inputs[0]);
  DynamicDims d = g.dynamic(c.inputs[0]), out;
  for (int64_t p : perm) out.push_back(d[p]);
  set_attr(g.node("Transpose", {x}, {g.output(c, 0, out)}), "perm", perm);
}

void transpose(GraphBuilder& g, const CapturedCall& c) {
  std::vector<int64_t> perm(static_cast<size_t>(c.inputs[0].dim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[attr_int(c, "dim0")], perm[attr_int(c, "dim1")]);
  permute_with(g, c, perm);
}

void permute(GraphBuilder& g, const CapturedCall& c) {
  permute_with(g, c, wrap_axes(attr_ints(c, "perm"), c.inputs[0].dim()));
}

void squeeze(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  std::vector<int64_t> axes;
  if (has_attr(c, "axes")) {
    axes = attr_ints(c, "axes");
  } else {
    for (int64_t d = 0; d < x.dim(); ++d)
      if (x.size(d) == 1) axes.push_back(d);
  }
  std::string xv = g.value(x);
  DynamicDims d = g.dynamic(x), out;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(d[i]);
  if (axes.empty()) {
    g.node("Identity", {xv}, {g.output(c, 0, out)});
    return;
  }
  g.node("Squeeze", {xv, g.ints(axes)}, {g.output(c, 0, out)});
}

void unsqueeze(GraphBuilder& g, const CapturedCall& c) {
  const int64_t dim = attr_int(c, "dim");
  std::string x = g.value(c.inputs[0]);
  DynamicDims out = g.dynamic(c.inputs[0]);
  out.insert(out.begin() + dim, false);
  g.node("Unsqueeze", {x, g.ints({dim})}, {g.output(c, 0, out)});
}

/** Expand broadcasts both ways: a 1 keeps the input's dim, so dims that do not change are 1
 *  and a dynamic dim stays dynamic. */
void expand(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  const Shape& out = c.outputs[0].shape();
  std::string xv = g.value(x);
  DynamicDims d = g.dynamic(x), out_dyn(out.size(), false);
  std::vector<int64_t> shape(out.begin(), out.end());
  const int64_t lead = static_cast<int64_t>(out.size()) - x.dim();
  for (int64_t i = 0; i < x.dim(); ++i)
    if (x.size(i) == out[lead + i]) {
      shape[lead + i] = 1;
      out_dyn[lead + i] = d[i];
    }
  // Under free_sizes a broadcast dim reads its size from an input of that size.
  for (size_t k = 0; k < shape.size(); ++k) out_dyn[k] = out_dyn[k] || (shape[k] != 1 && g.sizes_free());
  g.node("Expand", {xv, g.shape_value(shape)}, {g.output(c, 0, out_dyn)});
}

void select(GraphBuilder& g, const CapturedCall& c) {
  const int64_t dim = attr_int(c, "dim");
  std::string x = g.value(c.inputs[0]);
  std::string index = g.scalar(static_cast<double>(attr_int(c, "index")), DType::Int64);
  DynamicDims out = g.dynamic(c.inputs[0]);
  out.erase(out.begin() + dim);
  set_attr(g.node("Gather", {x, index}, {g.output(c, 0, out)}), "axis", dim);
}

/** diagonal and unfold in a file: the view's elements gathered from the flattened input. Which
 *  ones is found once by calling the view back on the input's flat indices; they hold for the
 *  traced shape only. A program calls the view itself back (no copy, any size). */
void strided_view(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed()) return g.replay(c);
  const Tensor& x = c.inputs[0];
  if (std::ranges::any_of(g.dynamic(x), [](bool d) { return d; }))
    fail("[onnx.export] ", c.op,
         " of an input with dynamic axes: its elements' positions change with the size; "
         "export with static shapes");
  Tensor positions;
  {
    NoGradGuard no_grad;
    const Tensor codes = arange(x.numel(), {.dtype = DType::Int64}).reshape(Dims(x.shape().begin(), x.shape().end()));
    positions = c.replay({codes})[0].contiguous();
  }
  const std::string flat = g.fresh("flat");
  g.node("Reshape", {g.value(x), g.shape_value(std::vector<int64_t>{-1})}, {flat});
  const DynamicDims fixed(static_cast<size_t>(c.outputs[0].dim()), false);
  set_attr(g.node("Gather", {flat, g.value(positions)}, {g.output(c, 0, fixed)}), "axis", int64_t{0});
}

/** A slice to the end of a dim runs to INT64_MAX, so it keeps reaching the end at other sizes. */
void slice(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  const int64_t dim = attr_int(c, "dim"), start = attr_int(c, "start"), step = attr_int(c, "step");
  int64_t end = attr_int(c, "end");
  const bool whole = start == 0 && step == 1 && end == x.size(dim);
  if (end == x.size(dim)) end = std::numeric_limits<int64_t>::max();
  std::string xv = g.value(x);
  DynamicDims out = g.dynamic(x);
  out[dim] = out[dim] && whole;
  g.node("Slice", {xv, g.ints({start}), g.ints({end}), g.ints({dim}), g.ints({step})}, {g.output(c, 0, out)});
}

void cast(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]);
  set_attr(g.node("Cast", {x}, {g.output(c)}), "to", static_cast<int64_t>(onnx_dtype(out_dtype(c))));
}

/** zeros_like, ones_like, full_like: a constant of the input's (run-time) shape. */
void full_like(GraphBuilder& g, const CapturedCall& c) {
  std::string shape = node1(g, "Shape", {g.value(c.inputs[0])}, "shape");
  set_attr(g.node("ConstantOfShape", {shape}, {g.output(c, 0, g.dynamic(c.inputs[0]))}), "value",
           full({1}, attr_float(c, "value"), {.dtype = out_dtype(c)}));
}

void cat(GraphBuilder& g, const CapturedCall& c) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.inputs.size(); ++i) parts.push_back(in(g, c, i));
  set_attr(g.node("Concat", parts, {g.output(c)}), "axis", attr_int(c, "dim"));
}

/** torch's pads run from the last dim backwards, (left, right) each; ONNX's are all the
 *  begins, then all the ends. */
void pad(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  const std::vector<int64_t>& torch_pads = attr_ints(c, "pads");
  const std::string& mode = attr_string(c, "mode");
  std::vector<int64_t> pads(2 * static_cast<size_t>(x.dim()), 0);
  for (size_t k = 0; k < torch_pads.size() / 2; ++k) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(k);
    pads[d] = torch_pads[2 * k];
    pads[x.dim() + d] = torch_pads[2 * k + 1];
  }
  const std::string onnx_mode = mode == "constant"    ? "constant"
                                : mode == "reflect"   ? "reflect"
                                : mode == "replicate" ? "edge"
                                                      : "wrap";
  if (onnx_mode == "wrap" && g.opset() < 19) fail("[onnx.export] pad mode 'circular' needs opset 19 or later");
  std::string xv = g.value(x);
  std::vector<std::string> inputs{xv, g.ints(pads)};
  if (onnx_mode == "constant") inputs.push_back(g.scalar(attr_float(c, "value"), x.dtype()));
  set_attr(g.node("Pad", inputs, {g.output(c)}), "mode", onnx_mode);
}

void gather(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]), index = g.value(c.inputs[1], DType::Int64);
  set_attr(g.node("GatherElements", {x, index}, {g.output(c, 0, g.dynamic(c.inputs[1]))}), "axis", attr_int(c, "dim"));
}

void index_select(GraphBuilder& g, const CapturedCall& c) {
  const int64_t dim = attr_int(c, "dim");
  std::string x = g.value(c.inputs[0]), index = g.value(c.inputs[1], DType::Int64);
  if (c.inputs[1].dim() == 0) index = node1(g, "Reshape", {index, g.ints({1})}, "index");
  DynamicDims out = g.dynamic(c.inputs[0]);
  out[dim] = false;
  set_attr(g.node("Gather", {x, index}, {g.output(c, 0, out)}), "axis", dim);
}

void scatter_node(GraphBuilder& g, const CapturedCall& c, bool add) {
  if (add && g.opset() < 16) fail("[onnx.export] scatter_add needs opset 16 or later, got ", g.opset());
  std::string x = g.value(c.inputs[0]), index = g.value(c.inputs[1], DType::Int64), src = in(g, c, 2);
  ::onnx::NodeProto& n = g.node("ScatterElements", {x, index, src}, {g.output(c, 0, g.dynamic(c.inputs[0]))});
  set_attr(n, "axis", attr_int(c, "dim"));
  if (add) set_attr(n, "reduction", std::string("add"));
}
void scatter(GraphBuilder& g, const CapturedCall& c) { scatter_node(g, c, false); }
void scatter_add(GraphBuilder& g, const CapturedCall& c) { scatter_node(g, c, true); }

/** scatter_reduce's prod, amax and amin: ScatterElements with "mul", "max" or "min"; without
 *  include_self, the places reached first take src (or 1 for prod), as the kernel does. */
void scatter_reduce(GraphBuilder& g, const CapturedCall& c) {
  const std::string& reduction = attr_string(c, "reduction");
  if (g.opset() < 18)
    fail("[onnx.export] scatter_reduce with '", reduction, "' needs opset 18 or later, got ", g.opset());
  std::string x = g.value(c.inputs[0]), index = g.value(c.inputs[1], DType::Int64), src = in(g, c, 2);
  if (!attr_int(c, "include_self")) {
    std::string start =
        reduction == "mul"
            ? node1(g, "Expand", {g.scalar(1.0, c.inputs[2].dtype()), node1(g, "Shape", {src}, "shape")}, "ones")
            : src;
    ::onnx::NodeProto& n = g.node("ScatterElements", {x, index, start}, {g.fresh("start")});
    set_attr(n, "axis", attr_int(c, "dim"));
    x = n.output(0);
  }
  ::onnx::NodeProto& n = g.node("ScatterElements", {x, index, src}, {g.output(c, 0, g.dynamic(c.inputs[0]))});
  set_attr(n, "axis", attr_int(c, "dim"));
  set_attr(n, "reduction", reduction);
}

/** x.masked_fill_(mask, value): the new value of x is Where(mask, value, x). */
void masked_fill(GraphBuilder& g, const CapturedCall& c) {
  std::string mask = g.value(c.inputs[0], DType::Bool), fill = in(g, c, 1), x = g.value(c.inputs[2]);
  g.node("Where", {mask, fill, x}, {g.output(c, 0, g.dynamic(c.inputs[2]))});
}

/** x[index] = value, the index constant (slices, integers, index tensors the trace did not
 *  compute): a ScatterElements into x of value's elements. Which element goes where is found
 *  once by calling the assignment back on codes (x's elements 0, value's element k -1 - k). A
 *  program calls the assignment back itself, as it does for a computed index; a file refuses
 *  that one. */
void index_put(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed()) return g.replay(c);
  const std::string x = g.value(c.inputs[0]);
  const DynamicDims dynamic = g.dynamic(c.inputs[0]);
  if (std::ranges::any_of(dynamic, [](bool d) { return d; }))
    fail(
        "[onnx.export] op 'index_put_' (x[index] = value) into a value with dynamic axes is not exported: its "
        "positions change with the size; export with fixed sizes, or write the value with where() or cat()");
  for (size_t i = 2; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) continue;
    g.value(c.inputs[i]);  // a constant becomes an initializer, which constant_name then names
    if (!g.constant_name(c.inputs[i]))
      fail(
          "[onnx.export] op 'index_put_' (x[index] = value) with an index the function computes is not "
          "exported; write the value with where() or scatter()");
  }
  const Tensor& target = c.outputs[0];
  const Tensor& value = c.inputs[1];
  const Options int64{.dtype = DType::Int64};
  std::vector<Tensor> codes{
      zeros(Dims(target.shape().begin(), target.shape().end()), int64),
      arange(value.numel(), int64).neg().sub(1).reshape(Dims(value.shape().begin(), value.shape().end()))};
  for (size_t i = 2; i < c.inputs.size(); ++i) codes.push_back(c.inputs[i]);
  const Tensor written = c.replay(codes)[0].reshape({-1});
  const Tensor positions = written.lt(0).nonzero().reshape({-1});
  const Tensor taken = written.index_select(0, positions).neg().sub(1);
  const std::string flat_x = g.fresh("flat"), flat_v = g.fresh("flat"), picked = g.fresh("index_put_values"),
                    scattered = g.fresh("scattered");
  g.node("Reshape", {x, g.shape_value(std::vector<int64_t>{-1})}, {flat_x});
  g.node("Reshape", {g.value(value, target.dtype()), g.shape_value(std::vector<int64_t>{-1})}, {flat_v});
  set_attr(g.node("Gather", {flat_v, g.value(taken)}, {picked}), "axis", int64_t{0});
  set_attr(g.node("ScatterElements", {flat_x, g.value(positions), picked}, {scattered}), "axis", int64_t{0});
  g.node("Reshape", {scattered, g.shape_value(std::vector<int64_t>(target.shape().begin(), target.shape().end()))},
         {g.output(c)});
}

/** dst.copy_(src): the new value of dst is src, converted to dst's dtype and broadcast to its shape. */
void copy(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& dst = c.outputs[0];
  std::string src = g.value(c.inputs[0], dst.dtype());
  g.node("Expand", {src, g.shape_value(std::vector<int64_t>(dst.shape().begin(), dst.shape().end()))},
         {g.output(c, 0, DynamicDims(static_cast<size_t>(dst.dim()), false))});
}

void cumsum(GraphBuilder& g, const CapturedCall& c) {
  std::string x = in(g, c, 0);
  g.node("CumSum", {x, g.scalar(static_cast<double>(attr_int(c, "dim")), DType::Int64)}, {g.output(c)});
}

/** ONNX has no CumProd: a Scan along the dim whose state, from ones of a slice's shape, is
 *  multiplied by each slice in turn and given out, the products in cumprod's own order. */
void cumprod(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  std::string xv = in(g, c, 0);
  if (x.dim() == 0 || x.numel() == 0) {
    g.node("Identity", {xv}, {g.output(c)});
    return;
  }
  const int64_t d = attr_int(c, "dim");
  const auto elem = static_cast<int32_t>(onnx_dtype(out_dtype(c)));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != d) kept.push_back(i);
  std::string shape = node1(g, "Shape", {xv}, "shape");
  std::string slice_shape = node1(g, "Gather", {shape, g.ints(kept)}, "slice_shape");
  ::onnx::NodeProto& ones = g.node("ConstantOfShape", {slice_shape}, {g.fresh("ones")});
  set_attr(ones, "value", full({1}, 1, {.dtype = out_dtype(c)}));

  ::onnx::GraphProto body;
  body.set_name(g.fresh("cumprod_body"));
  const std::string state = g.fresh("state"), piece = g.fresh("piece"), next = g.fresh("product"),
                    out = g.fresh("scanned");
  auto typed = [elem](::onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  };
  typed(body.add_input(), state);
  typed(body.add_input(), piece);
  typed(body.add_output(), next);
  typed(body.add_output(), out);
  ::onnx::NodeProto* mul = body.add_node();
  mul->set_op_type("Mul");
  mul->add_input(state);
  mul->add_input(piece);
  mul->add_output(next);
  ::onnx::NodeProto* copy = body.add_node();
  copy->set_op_type("Identity");
  copy->add_input(next);
  copy->add_output(out);

  ::onnx::NodeProto& scan = g.node("Scan", {ones.output(0), xv}, {g.fresh("last"), g.output(c)});
  auto* attr = scan.add_attribute();
  attr->set_name("body");
  attr->set_type(::onnx::AttributeProto_AttributeType_GRAPH);
  *attr->mutable_g() = std::move(body);
  set_attr(scan, "num_scan_inputs", int64_t{1});
  set_attr(scan, "scan_input_axes", std::vector<int64_t>{d});
  set_attr(scan, "scan_output_axes", std::vector<int64_t>{d});
}

void embedding(GraphBuilder& g, const CapturedCall& c) {
  std::string w = g.value(c.inputs[0]), idx = g.value(c.inputs[1], DType::Int64);
  DynamicDims out = g.dynamic(c.inputs[1]);
  out.push_back(false);
  set_attr(g.node("Gather", {w, idx}, {g.output(c, 0, out)}), "axis", int64_t{0});
}

// ---- products and reductions ----------------------------------------------------------------

void matmul(GraphBuilder& g, const CapturedCall& c) {
  std::string a = in(g, c, 0), b = in(g, c, 1);
  g.node("MatMul", {a, b}, {g.output(c)});
}

/** y = x W^T + b: one Gemm for a 2-d x, else MatMul with the transposed weight and Add. */
void linear(GraphBuilder& g, const CapturedCall& c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &b = c.inputs[2];
  std::string xv = g.value(x), wv = g.value(w);
  std::string bv = b.defined() ? g.value(b) : std::string();
  if (x.dim() == 2 && w.dim() == 2 && b.defined() && b.dim() == 1) {
    set_attr(g.node("Gemm", {xv, wv, bv}, {g.output(c)}), "transB", int64_t{1});
    return;
  }
  std::string wt = wv;
  if (w.dim() == 2) {
    wt = g.fresh(wv + "_t");
    set_attr(g.node("Transpose", {wv}, {wt}), "perm", std::vector<int64_t>{1, 0});
  }
  if (!b.defined()) {
    g.node("MatMul", {xv, wt}, {g.output(c)});
    return;
  }
  std::string y = node1(g, "MatMul", {xv, wt}, "matmul");
  g.node("Add", {y, bv}, {g.output(c)});
}

/** A dynamically quantized Linear (ops/quantized.h) as onnxruntime.quantization.quantize_dynamic
 *  writes a float one: DynamicQuantizeLinear (uint8 over the full range: ONNX has no
 *  reduce_range, so x's step may be half the op's), Mul of x's scale by the weight's,
 *  MatMulInteger with the int8 weight transposed to [in, out], Cast, Mul, Add bias. A program
 *  (ug.jit) calls the op back instead. */
void quantized_linear_dynamic(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed() && c.replay) {
    g.replay(c);
    return;
  }
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &scale = c.inputs[2], &zp = c.inputs[3], &b = c.inputs[4];
  if (x.dtype() != DType::Float32)
    fail<TypeError>("[onnx.export] a dynamically quantized Linear exports float32 inputs only, got ", x.dtype());
  const std::string xq = g.fresh("x_quantized"), xs = g.fresh("x_scale"), xz = g.fresh("x_zero_point");
  g.node("DynamicQuantizeLinear", {g.value(x)}, {xq, xs, xz});
  // The nodes in the quantizer's order: the scales' product first.
  const std::string multiplier = node1(g, "Mul", {xs, g.value(scale.reshape({-1}).squeeze())}, "multiplier");
  const std::string wq = g.value(w.t().contiguous()), wz = g.value(zp.reshape({-1}).to(DType::Int8).squeeze());
  const std::string acc = node1(g, "MatMulInteger", {xq, wq, xz, wz}, "matmul_integer");
  const std::string accf = g.fresh("matmul_float");
  set_attr(g.node("Cast", {acc}, {accf}), "to", static_cast<int64_t>(onnx_dtype(DType::Float32)));
  if (!b.defined()) {
    g.node("Mul", {accf, multiplier}, {g.output(c)});
    return;
  }
  g.node("Add", {node1(g, "Mul", {accf, multiplier}, "dequantized"), g.value(b)}, {g.output(c)});
}

/** The output's dynamic dims after a reduction over `axes`. */
DynamicDims reduced_dynamic(const DynamicDims& d, const std::vector<int64_t>& axes, bool keepdim) {
  DynamicDims out;
  for (size_t i = 0; i < d.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced) out.push_back(d[i]);
    else if (keepdim) out.push_back(false);
  }
  return out;
}

/** ReduceSum takes its axes as an input from opset 13, the other reductions from opset 18. */
void reduce_node(GraphBuilder& g, const CapturedCall& c, const char* op, const std::string& x, const std::string& out) {
  const std::vector<int64_t>& axes = attr_ints(c, "axes");
  const bool keepdim = attr_int(c, "keepdim") != 0;
  const bool axes_input = std::string(op) == "ReduceSum" || g.opset() >= 18;
  std::vector<std::string> inputs{x};
  if (axes_input) inputs.push_back(g.ints(axes));
  ::onnx::NodeProto& n = g.node(op, inputs, {out});
  set_attr(n, "keepdims", int64_t{keepdim});
  if (!axes_input) set_attr(n, "axes", axes);
}

template <const char* Op> void reduce(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  std::string xv = in(g, c, 0);
  DynamicDims out = reduced_dynamic(g.dynamic(x), attr_ints(c, "axes"), attr_int(c, "keepdim") != 0);
  if (attr_ints(c, "axes").empty()) {  // a 0-d input: nothing to reduce
    g.node("Identity", {xv}, {g.output(c, 0, out)});
    return;
  }
  reduce_node(g, c, Op, xv, g.output(c, 0, out));
}

/** all and any: min and max of the input as int32 (ONNX reduces no bools before opset 20). */
template <const char* Op> void logical_reduce(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0], DType::Int32);
  DynamicDims out = reduced_dynamic(g.dynamic(c.inputs[0]), attr_ints(c, "axes"), attr_int(c, "keepdim") != 0);
  std::string r = g.fresh("reduced");
  if (attr_ints(c, "axes").empty()) g.node("Identity", {x}, {r});
  else reduce_node(g, c, Op, x, r);
  set_attr(g.node("Cast", {r}, {g.output(c, 0, out)}), "to", static_cast<int64_t>(onnx_dtype(DType::Bool)));
}

/** argmax/argmin over one dim, or over several: all of them (no dim given), or under vmap all of
 *  an example's. Those are moved last, in order, and flattened: the index is the position in
 *  them in row-major order. */
template <const char* Op> void arg_reduce(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  const std::vector<int64_t>& axes = attr_ints(c, "axes");
  const bool keepdim = attr_int(c, "keepdim") != 0;
  std::string xv = g.value(x);
  DynamicDims out = reduced_dynamic(g.dynamic(x), axes, keepdim);
  if (axes.size() == 1 && x.dim() > 0) {
    ::onnx::NodeProto& n = g.node(Op, {xv}, {g.output(c, 0, out)});
    set_attr(n, "axis", axes[0]);
    set_attr(n, "keepdims", int64_t{keepdim});
    return;
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::ranges::find(axes, d) == axes.end()) perm.push_back(d);
  const auto kept = static_cast<int64_t>(perm.size());
  perm.insert(perm.end(), axes.begin(), axes.end());
  if (!std::ranges::is_sorted(perm)) {
    std::string moved = g.fresh("moved");
    set_attr(g.node("Transpose", {xv}, {moved}), "perm", perm);
    xv = moved;
  }
  std::vector<int64_t> flat_shape(static_cast<size_t>(kept), 0);  // 0: the dim as it is
  flat_shape.push_back(-1);
  std::string flat = node1(g, "Reshape", {xv, g.ints(flat_shape)}, "flat");
  std::string r = g.fresh("arg");
  ::onnx::NodeProto& n = g.node(Op, {flat}, {r});
  set_attr(n, "axis", kept);
  set_attr(n, "keepdims", int64_t{0});
  const Shape& shape = c.outputs[0].shape();
  g.node("Reshape", {r, g.shape_value(std::vector<int64_t>(shape.begin(), shape.end()))}, {g.output(c, 0, out)});
}

template <const char* Op> void softmax(GraphBuilder& g, const CapturedCall& c) {
  std::string x = g.value(c.inputs[0]);
  set_attr(g.node(Op, {x}, {g.output(c)}), "axis", attr_int(c, "dim"));
}

// ---- normalization, convolution, pooling ------------------------------------------------------

/** A parameter that may be absent (no affine weight or bias): a constant of `value` instead. */
std::string param_or(GraphBuilder& g, const Tensor& t, const Shape& shape, double value, DType dtype) {
  if (t.defined()) return g.value(t);
  return g.value(full(Dims(shape.begin(), shape.end()), value, {.dtype = dtype}));
}

void layer_norm(GraphBuilder& g, const CapturedCall& c) {
  if (g.opset() < 17) fail("[onnx.export] layer_norm needs opset 17 or later (LayerNormalization), got ", g.opset());
  const Tensor& x = c.inputs[0];
  const int64_t axis = attr_int(c, "axis");
  Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  std::string xv = g.value(x);
  std::string w = param_or(g, c.inputs[1], norm_shape, 1.0, x.dtype());
  std::vector<std::string> inputs{xv, w};
  if (c.inputs[2].defined()) inputs.push_back(g.value(c.inputs[2]));
  ::onnx::NodeProto& n = g.node("LayerNormalization", inputs, {g.output(c)});
  set_attr(n, "axis", axis);
  set_attr(n, "epsilon", attr_float(c, "epsilon"));
}

/** A custom derivative's whole call (autograd/custom_function.h): its forward's ops, or in a
 *  program that records autograd through its run, a call back that links the rule again. */
void custom_function(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_custom_calls() && c.replay) return g.replay(c);
  g.emit_parts(c);
  // The linked outputs are new handles on the data of the parts' results.
  for (size_t i = 0; i < c.outputs.size(); ++i)
    if (c.outputs[i].defined()) g.bind_output(c, i, c.outputs[i], g.value(c.outputs[i]));
}

void batch_norm(GraphBuilder& g, const CapturedCall& c) {
  if (attr_int(c, "training")) {
    // A program (not a file) runs its parts: the batch statistics and the in-place update of
    // the running statistics, which it writes back.
    if (g.replays_allowed()) return g.emit_parts(c);
    fail("[onnx.export] batch_norm in training mode (batch statistics) cannot be exported; call model.eval()");
  }
  const Tensor& x = c.inputs[0];
  Shape channels{x.size(1)};
  std::string xv = g.value(x);
  std::string w = param_or(g, c.inputs[1], channels, 1.0, x.dtype());
  std::string b = param_or(g, c.inputs[2], channels, 0.0, x.dtype());
  std::string mean = g.value(c.inputs[3]), var = g.value(c.inputs[4]);
  set_attr(g.node("BatchNormalization", {xv, w, b, mean, var}, {g.output(c)}), "epsilon", attr_float(c, "epsilon"));
}

/** The statistics of instance_norm and group_norm (the ops normalize rows of `cols` elements;
 *  the affine weight and bias are the Mul and Add after them): InstanceNormalization of x
 *  seen as [N, rows per sample, cols], with unit scale and zero bias. x is [N, C, ...]:
 *  instance_norm's rows are its channels, group_norm's its groups (Reshape there and back). */
void row_norm(GraphBuilder& g, const CapturedCall& c) {
  const Tensor& x = c.inputs[0];
  const DType dt = x.dtype();
  const int64_t rows = x.numel() / x.size(0) / attr_int(c, "cols");
  const bool groups = c.op == "group_norm";
  std::string xv = g.value(x), count = g.ints({rows});  // a constant, not read from a shape under free_sizes
  std::string scale = node1(g, "Expand", {g.scalar(1.0, dt), count}, "scale");
  std::string bias = node1(g, "Expand", {g.scalar(0.0, dt), count}, "bias");
  std::string y = groups ? g.fresh("normalized") : g.output(c);
  std::string x3 = groups ? node1(g, "Reshape", {xv, g.ints({0, rows, -1})}, "groups") : xv;
  set_attr(g.node("InstanceNormalization", {x3, scale, bias}, {y}), "epsilon", attr_float(c, "epsilon"));
  if (groups) g.node("Reshape", {y, node1(g, "Shape", {xv}, "shape")}, {g.output(c)});
}

/** A collective over a named vmap axis (ops/axis_collectives.h): its batching rule's calls, its
 *  parts, compute it on the physical tensors, and its outputs are what they made. An axis bound
 *  by a vmap around the trace (vmap of jit) is no dim of the graph's values: a program calls
 *  the op back, which finds the axis by its name again. */
void axis_collective(GraphBuilder& g, const CapturedCall& c) {
  if (attr_int(c, "level") <= g.outer_level()) {
    if (g.replays_allowed() && c.replay) {
      CapturedCall x_only = c;  // a reduction's second input is its parts' result, which it does not read
      x_only.inputs.resize(1);
      x_only.input_versions.resize(1);
      return g.replay(x_only);
    }
    fail("[onnx.export] op '", c.op, "' runs over a vmap axis bound outside the exported function");
  }
  g.emit_parts(c);
  for (const Tensor& out : c.outputs) g.value(out);
}

/** ug::while_loop (ops/control_flow.h): inputs [cond(init), init..., stand-ins..., body's carry...],
 *  outputs [result..., cond(body's carry)], and one iteration of body and cond as its parts. A
 *  Loop node without a trip count, whose body is the parts (built by a builder of the subgraph,
 *  reading what the loop closes over from the enclosing graph by name) with the stand-ins as
 *  its carried inputs. Under vmap the graph carries the physical tensors. */
void while_loop(GraphBuilder& g, const CapturedCall& c) {
  const size_t n = static_cast<size_t>(attr_int(c, "carried"));
  ::onnx::GraphProto body;
  body.set_name(g.fresh("while_body"));
  {
    GraphBuilder b(body, g);
    b.add_input(full({}, 0, {.dtype = DType::Int64}), g.fresh("iteration"), {}, 0);
    b.add_input(full({}, true, {.dtype = DType::Bool}), g.fresh("running"), {}, 0);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& stand_in = b.physical(c.inputs[1 + n + i]);
      b.add_input(stand_in, g.fresh("carried"), {}, stand_in.version());
    }
    b.note_calls(c.inner);
    for (const CapturedCall& call : c.inner) b.emit_call(call);
    b.add_output(c.outputs[n], g.fresh("running"), {});
    for (size_t i = 0; i < n; ++i) b.add_output(b.physical(c.inputs[1 + 2 * n + i]), g.fresh("carried"), {});
  }
  std::vector<std::string> inputs{"", g.value(c.inputs[0])}, outputs;
  for (size_t i = 0; i < n; ++i) inputs.push_back(g.value(g.physical(c.inputs[1 + i])));
  for (size_t i = 0; i < n; ++i) outputs.push_back(g.fresh("while_loop"));
  ::onnx::NodeProto& loop = g.node("Loop", inputs, outputs);
  auto* attr = loop.add_attribute();
  attr->set_name("body");
  attr->set_type(::onnx::AttributeProto_AttributeType_GRAPH);
  *attr->mutable_g() = std::move(body);
  for (size_t i = 0; i < n; ++i) {
    g.bind_output(c, i, g.physical(c.outputs[i]), outputs[i]);
    if (g.physical(c.outputs[i]).impl_ref() != c.outputs[i].impl_ref())
      g.value(c.outputs[i]);  // the first example, for calls on examples
  }
}

/** ug::lax::cond (autograd/cond.h) on a predicate a trace cannot know: inputs [pred, operands...],
 *  and among its parts one cond_branch call per branch, true_fn's first, whose parts are that
 *  branch's ops. An If node whose then_branch and else_branch are those ops, built by builders
 *  of the subgraphs that read the operands, and whatever the branches close over, from the
 *  enclosing graph by name: each run computes the branch from its own values. */
void cond(GraphBuilder& g, const CapturedCall& c) {
  std::vector<const CapturedCall*> branches;
  for (const CapturedCall& part : c.inner)
    if (part.op == "cond_branch") branches.push_back(&part);
  if (branches.size() != 2) fail("[onnx.export] a cond recorded ", branches.size(), " branches, not 2");
  ::onnx::GraphProto graphs[2];
  for (size_t k = 0; k < 2; ++k) {
    graphs[k].set_name(g.fresh(k == 0 ? "then_branch" : "else_branch"));
    GraphBuilder b(graphs[k], g);
    b.note_calls(branches[k]->inner);
    for (const CapturedCall& call : branches[k]->inner) b.emit_call(call);
    for (const Tensor& out : branches[k]->outputs) b.add_output(b.physical(out), g.fresh("branch"), {});
  }
  std::vector<std::string> outputs;
  for (size_t i = 0; i < c.outputs.size(); ++i) outputs.push_back(g.fresh("cond"));
  ::onnx::NodeProto& node = g.node("If", {g.value(c.inputs[0], DType::Bool)}, outputs);
  for (size_t k = 0; k < 2; ++k) {
    auto* attr = node.add_attribute();
    attr->set_name(k == 0 ? "then_branch" : "else_branch");
    attr->set_type(::onnx::AttributeProto_AttributeType_GRAPH);
    *attr->mutable_g() = std::move(graphs[k]);
  }
  // Under a vmap inside the trace the graph holds the physical values (as while_loop's): a
  // reader of the output's memory must find the If, not the trace's branch that made it.
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    g.bind_output(c, i, g.physical(c.outputs[i]), outputs[i]);
    if (g.physical(c.outputs[i]).impl_ref() != c.outputs[i].impl_ref()) g.value(c.outputs[i]);
  }
}

/** Runs `body` on x with a batch dim: an unbatched input gets one (Unsqueeze) and loses it after. */
template <class Body> void batched(GraphBuilder& g, const CapturedCall& c, int64_t spatial, Body body) {
  const Tensor& x = c.inputs[0];
  std::string xv = g.value(x);
  if (x.dim() == spatial + 2) {
    body(xv, g.output(c));
    return;
  }
  std::string x4 = node1(g, "Unsqueeze", {xv, g.ints({0})}, "batched");
  std::string y4 = g.fresh("batched");
  body(x4, y4);
  g.node("Squeeze", {y4, g.ints({0})}, {g.output(c)});
}

void conv_node(GraphBuilder& g, const CapturedCall& c, const char* op) {
  const int64_t spatial = static_cast<int64_t>(attr_ints(c, "strides").size());
  std::string w = g.value(c.inputs[1]);
  std::string b = c.inputs[2].defined() ? g.value(c.inputs[2]) : std::string();
  batched(g, c, spatial, [&](const std::string& x, const std::string& y) {
    std::vector<std::string> inputs{x, w};
    if (!b.empty()) inputs.push_back(b);
    ::onnx::NodeProto& n = g.node(op, inputs, {y});
    std::vector<int64_t> kernel;
    for (int64_t i = 0; i < spatial; ++i) kernel.push_back(c.inputs[1].size(2 + i));
    set_attr(n, "kernel_shape", kernel);
    set_attr(n, "strides", attr_ints(c, "strides"));
    set_attr(n, "pads", attr_ints(c, "pads"));
    set_attr(n, "dilations", attr_ints(c, "dilations"));
    set_attr(n, "group", attr_int(c, "group"));
    if (has_attr(c, "output_padding")) set_attr(n, "output_padding", attr_ints(c, "output_padding"));
  });
}

void conv(GraphBuilder& g, const CapturedCall& c) { conv_node(g, c, "Conv"); }
void conv_transpose(GraphBuilder& g, const CapturedCall& c) { conv_node(g, c, "ConvTranspose"); }

/** MaxPool over the call's input with its indices (output 1) when the call returns them. */
void max_pool_node(GraphBuilder& g, const CapturedCall& c, int64_t spatial, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& dilations, int64_t ceil_mode) {
  const Tensor& x = c.inputs[0];
  const bool unbatched = x.dim() != spatial + 2;
  const bool indices = c.outputs.size() > 1 && c.outputs[1].defined();
  std::string xv = g.value(x);
  std::string x4 = unbatched ? node1(g, "Unsqueeze", {xv, g.ints({0})}, "batched") : xv;
  std::string y4 = unbatched ? g.fresh("batched") : g.output(c, 0);
  std::vector<std::string> outs{y4};
  if (indices) outs.push_back(g.fresh("indices"));
  ::onnx::NodeProto& n = g.node("MaxPool", {x4}, outs);
  set_attr(n, "kernel_shape", kernel);
  set_attr(n, "strides", strides);
  set_attr(n, "pads", pads);
  set_attr(n, "dilations", dilations);
  set_attr(n, "ceil_mode", ceil_mode);
  if (unbatched) g.node("Squeeze", {y4, g.ints({0})}, {g.output(c, 0)});
  if (!indices) return;
  // ONNX counts indices over the whole tensor, torch within each plane: the remainder by the
  // plane's size is torch's.
  int64_t plane = 1;
  for (int64_t i = 1; i <= spatial; ++i) plane *= x.size(-i);
  std::string i4 = outs[1];
  std::string per_plane = unbatched ? g.fresh("indices") : g.output(c, 1);
  g.node("Mod", {i4, g.scalar(static_cast<double>(plane), DType::Int64)}, {per_plane});
  if (unbatched) g.node("Squeeze", {per_plane, g.ints({0})}, {g.output(c, 1)});
}

void max_pool(GraphBuilder& g, const CapturedCall& c) {
  max_pool_node(g, c, static_cast<int64_t>(attr_ints(c, "kernel_shape").size()), attr_ints(c, "kernel_shape"),
                attr_ints(c, "strides"), attr_ints(c, "pads"), attr_ints(c, "dilations"), attr_int(c, "ceil_mode"));
}

void avg_pool(GraphBuilder& g, const CapturedCall& c) {
  if (attr_int(c, "divisor_override") != 0) {
    if (g.replays_allowed() && c.replay) return g.replay(c);  // a program calls it back
    fail("[onnx.export] avg_pool with divisor_override has no ONNX form");
  }
  const int64_t spatial = static_cast<int64_t>(attr_ints(c, "kernel_shape").size());
  batched(g, c, spatial, [&](const std::string& x, const std::string& y) {
    ::onnx::NodeProto& n = g.node("AveragePool", {x}, {y});
    for (const char* a : {"kernel_shape", "strides", "pads"}) set_attr(n, a, attr_ints(c, a));
    set_attr(n, "ceil_mode", attr_int(c, "ceil_mode"));
    set_attr(n, "count_include_pad", attr_int(c, "count_include_pad"));
  });
}

/** The window of an adaptive pooling whose input sizes divide its output's (to size 1: global
 *  pooling), or nothing: windows of unequal sizes have no ONNX form. */
std::optional<std::vector<int64_t>> adaptive_kernel(const CapturedCall& c, int64_t spatial, bool& global) {
  const Tensor &x = c.inputs[0], &y = c.outputs[0];
  std::vector<int64_t> kernel;
  global = true;
  for (int64_t i = spatial; i >= 1; --i) {
    const int64_t in = x.size(-i), out = y.size(-i);
    if (in % out != 0) return std::nullopt;
    kernel.push_back(in / out);
    global = global && out == 1;
  }
  return kernel;
}

/** A compiled program calls back an adaptive pooling without an ONNX form; a file cannot. */
void unequal_windows(GraphBuilder& g, const CapturedCall& c) {
  if (g.replays_allowed() && c.replay) return g.replay(c);
  fail("[onnx.export] adaptive pooling from ", c.inputs[0].shape(), " to ", c.outputs[0].shape(),
       " has no ONNX form (the sizes must divide)");
}

template <const char* Global, const char* Windowed> void adaptive_pool(GraphBuilder& g, const CapturedCall& c) {
  const int64_t spatial = attr_int(c, "spatial_dims");
  bool global = true;
  const auto kernel = adaptive_kernel(c, spatial, global);
  if (!kernel) return unequal_windows(g, c);
  batched(g, c, spatial, [&](const std::string& xv, const std::string& yv) {
    if (global) {
      g.node(Global, {xv}, {yv});
      return;
    }
    ::onnx::NodeProto& n = g.node(Windowed, {xv}, {yv});
    set_attr(n, "kernel_shape", *kernel);
    set_attr(n, "strides", *kernel);
  });
}

/** adaptive_max_pool is a MaxPool of its window, with the indices a gradient reads. */
void adaptive_max_pool(GraphBuilder& g, const CapturedCall& c) {
  const int64_t spatial = attr_int(c, "spatial_dims");
  bool global = true;
  const auto kernel = adaptive_kernel(c, spatial, global);
  if (!kernel) return unequal_windows(g, c);
  max_pool_node(g, c, spatial, *kernel, *kernel, std::vector<int64_t>(2 * kernel->size(), 0),
                std::vector<int64_t>(kernel->size(), 1), 0);
}

// ---- recurrent layers -------------------------------------------------------------------------

/** The rows of a stacked gate weight (or bias) value in another gate order, as nodes (the
 *  weights are a program's inputs or live parameters): block i of the result is block
 *  order[i] of v, each `h` rows. */
std::string reorder_gates(GraphBuilder& g, const std::string& v, int64_t h, const std::vector<int64_t>& order) {
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same = same && order[i] == static_cast<int64_t>(i);
  if (same) return v;
  std::vector<std::string> blocks;
  for (int64_t i : order)
    blocks.push_back(node1(g, "Slice", {v, g.ints({i * h}), g.ints({(i + 1) * h}), g.ints({0})}, "gate"));
  std::string out = g.fresh("gates");
  set_attr(g.node("Concat", blocks, {out}), "axis", int64_t{0});
  return out;
}

/** Values stacked on a new leading axis: ONNX's [num_directions, ...] weights. */
std::string stack_values(GraphBuilder& g, const std::vector<std::string>& values) {
  std::vector<std::string> rows;
  for (const std::string& v : values) rows.push_back(node1(g, "Unsqueeze", {v, g.ints({0})}, "direction"));
  if (rows.size() == 1) return rows[0];
  std::string out = g.fresh("directions");
  set_attr(g.node("Concat", rows, {out}), "axis", int64_t{0});
  return out;
}

/** One ONNX LSTM/GRU/RNN node per layer. unigrad's gates are torch's: LSTM i, f, g, o (ONNX
 *  wants i, o, f, c), GRU r, z, n (ONNX: z, r, h, with linear_before_reset=1 for torch's n). */
void recurrent(GraphBuilder& g, const CapturedCall& c, const char* op, std::vector<int64_t> gate_order,
               const char* activation) {
  const Tensor &x = c.inputs[0], &h0 = c.inputs[1], &c0 = c.inputs[2];
  const int64_t hidden = attr_int(c, "hidden_size"), layers = attr_int(c, "num_layers");
  const int64_t dirs = attr_int(c, "bidirectional") ? 2 : 1;
  const bool batch_first = attr_int(c, "batch_first") != 0, batched = x.dim() == 3;
  const bool lstm = std::string(op) == "LSTM";
  std::string seq = g.value(x);
  if (!batched) seq = node1(g, "Unsqueeze", {seq, g.ints({1})}, "seq");
  else if (batch_first) {
    std::string t = g.fresh("seq");
    set_attr(g.node("Transpose", {seq}, {t}), "perm", std::vector<int64_t>{1, 0, 2});
    seq = t;
  }
  /** A state [layers * dirs, N, H] (unbatched: [layers * dirs, H]) cut to layer k's rows. */
  auto state = [&](const Tensor& s, int64_t k) {
    if (!s.defined()) return std::string();
    std::string v = g.value(s);
    if (!batched) v = node1(g, "Unsqueeze", {v, g.ints({1})}, "state");
    return node1(g, "Slice", {v, g.ints({k * dirs}), g.ints({(k + 1) * dirs}), g.ints({0})}, "state");
  };
  std::vector<std::string> h_n, c_n;
  for (int64_t k = 0; k < layers; ++k) {
    std::vector<std::string> w, r, b;
    bool has_bias = true;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t at = static_cast<size_t>(3 + 4 * (k * dirs + d));
      const Tensor &w_ih = c.inputs[at], &w_hh = c.inputs[at + 1], &b_ih = c.inputs[at + 2], &b_hh = c.inputs[at + 3];
      w.push_back(reorder_gates(g, g.value(w_ih), hidden, gate_order));
      r.push_back(reorder_gates(g, g.value(w_hh), hidden, gate_order));
      has_bias = b_ih.defined();
      if (has_bias) {
        std::string both = g.fresh("bias");
        set_attr(g.node("Concat",
                        {reorder_gates(g, g.value(b_ih), hidden, gate_order),
                         reorder_gates(g, g.value(b_hh), hidden, gate_order)},
                        {both}),
                 "axis", int64_t{0});
        b.push_back(both);
      }
    }
    std::vector<std::string> inputs{
        seq, stack_values(g, w), stack_values(g, r), has_bias ? stack_values(g, b) : std::string(), "", state(h0, k)};
    if (lstm) inputs.push_back(state(c0, k));
    while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
    std::string y = g.fresh("y"), yh = g.fresh("y_h"), yc = g.fresh("y_c");
    std::vector<std::string> outs{y, yh};
    if (lstm) outs.push_back(yc);
    ::onnx::NodeProto& n = g.node(op, inputs, outs);
    set_attr(n, "hidden_size", hidden);
    if (dirs == 2) set_attr(n, "direction", std::string("bidirectional"));
    if (std::string(op) == "GRU") set_attr(n, "linear_before_reset", int64_t{1});
    if (activation) {
      auto* a = n.add_attribute();
      a->set_name("activations");
      a->set_type(::onnx::AttributeProto_AttributeType_STRINGS);
      for (int64_t d = 0; d < dirs; ++d) a->add_strings(activation);
    }
    h_n.push_back(yh);
    c_n.push_back(yc);
    // Y [L, dirs, N, H] -> the next layer's input [L, N, dirs * H].
    std::string t = g.fresh("y_t");
    set_attr(g.node("Transpose", {y}, {t}), "perm", std::vector<int64_t>{0, 2, 1, 3});
    seq = node1(g, "Reshape", {t, g.ints({0, 0, dirs * hidden})}, "seq");
  }
  const DynamicDims dx = g.dynamic(x);
  const bool batch_dyn = batched && dx[batch_first ? 0 : 1];
  // The output sequence back in the input's layout.
  if (!batched) {
    g.node("Squeeze", {seq, g.ints({1})}, {g.output(c, 0, DynamicDims{dx[0], false})});
  } else if (batch_first) {
    set_attr(g.node("Transpose", {seq}, {g.output(c, 0, DynamicDims{dx[0], dx[1], false})}), "perm",
             std::vector<int64_t>{1, 0, 2});
  } else {
    g.node("Identity", {seq}, {g.output(c, 0, DynamicDims{dx[0], dx[1], false})});
  }
  auto final_state = [&](const std::vector<std::string>& parts, size_t i) {
    std::string all = parts.size() == 1 ? parts[0] : g.fresh("state");
    if (parts.size() > 1) set_attr(g.node("Concat", parts, {all}), "axis", int64_t{0});
    if (batched) g.node("Identity", {all}, {g.output(c, i, DynamicDims{false, batch_dyn, false})});
    else g.node("Squeeze", {all, g.ints({1})}, {g.output(c, i, DynamicDims{false, false})});
  };
  final_state(h_n, 1);
  if (lstm) final_state(c_n, 2);
}

void lstm(GraphBuilder& g, const CapturedCall& c) { recurrent(g, c, "LSTM", {0, 3, 1, 2}, nullptr); }
void gru(GraphBuilder& g, const CapturedCall& c) { recurrent(g, c, "GRU", {1, 0, 2}, nullptr); }
void rnn_tanh(GraphBuilder& g, const CapturedCall& c) { recurrent(g, c, "RNN", {0}, "Tanh"); }
void rnn_relu(GraphBuilder& g, const CapturedCall& c) { recurrent(g, c, "RNN", {0}, "Relu"); }

#define UG_ONNX_NAME(var, text) constexpr char var[] = text;
UG_ONNX_NAME(kReduceSum, "ReduceSum")
UG_ONNX_NAME(kReduceMean, "ReduceMean")
UG_ONNX_NAME(kReduceProd, "ReduceProd")
UG_ONNX_NAME(kReduceMax, "ReduceMax")
UG_ONNX_NAME(kReduceMin, "ReduceMin")
UG_ONNX_NAME(kArgMax, "ArgMax")
UG_ONNX_NAME(kArgMin, "ArgMin")
UG_ONNX_NAME(kSoftmax, "Softmax")
UG_ONNX_NAME(kLogSoftmax, "LogSoftmax")
UG_ONNX_NAME(kGlobalAveragePool, "GlobalAveragePool")
UG_ONNX_NAME(kAveragePool, "AveragePool")
#undef UG_ONNX_NAME

/** The export table: traced op name -> emitter. */
const std::map<std::string, Emitter>& table() {
  static const std::map<std::string, Emitter> t = [] {
    std::map<std::string, Emitter> t = {
        // elementwise: the unary ops with a rule of their own (the others are added below)
        {"square", square},
        {"floor", rounding<kFloor>},
        {"ceil", rounding<kCeil>},
        {"round", rounding<kRound>},
        {"trunc", trunc},
        {"exp2", exp2},
        {"log2", log2},
        {"log10", log10},
        {"log1p", log1p},
        {"expm1", expm1},
        {"rsqrt", rsqrt},
        {"silu", silu},
        {"gelu", gelu},
        {"isnan", isnan},
        {"isinf", isinf},
        {"isfinite", isfinite},
        {"logical_not", logical_not},
        {"add", add},
        {"sub", sub},
        {"mul", mul},
        {"div", div},
        {"pow", pow},
        {"maximum", maximum},
        {"minimum", minimum},
        {"logaddexp", logaddexp},
        {"eq", eq},
        {"ne", ne},
        {"lt", lt},
        {"le", le},
        {"gt", gt},
        {"ge", ge},
        {"logical_and", logical_and},
        {"logical_or", logical_or},
        {"logical_xor", logical_xor},
        {"where", where},
        {"floor_divide", floor_divide},
        {"remainder", remainder},
        {"atan2", atan2},
        {"bitwise_and", bitwise<kAnd, kBitwiseAnd>},
        {"bitwise_or", bitwise<kOr, kBitwiseOr>},
        {"bitwise_xor", bitwise<kXor, kBitwiseXor>},
        {"bitwise_not", bitwise_not},
        {"bitwise_left_shift", bit_shift<kLeft>},
        {"bitwise_right_shift", bit_shift<kRight>},
        // shapes and copies
        {"view", reshape},
        {"reshape", reshape},
        {"flatten", flatten},
        {"transpose", transpose},
        {"permute", permute},
        {"squeeze", squeeze},
        {"unsqueeze", unsqueeze},
        {"expand", expand},
        {"select", select},
        {"diagonal", strided_view},
        {"unfold", strided_view},
        {"slice", slice},
        {"to", cast},
        {"to_device", unary<kIdentity>},
        {"clone", unary<kIdentity>},
        // A file has no gradients: the value itself. A program, which autograd may record
        // through (grad of a jitted function), calls the op back to keep the cut.
        {"stop_gradient", called_back<unary<kIdentity>>},
        {"check_numerics", called_back<unchecked>},
        {"custom_function", custom_function},
        {"full_like", full_like},
        {"cat", cat},
        {"pad", pad},
        {"gather", gather},
        {"index_select", index_select},
        {"embedding", embedding},
        {"scatter", scatter},
        {"scatter_add", scatter_add},
        {"scatter_reduce", scatter_reduce},
        {"masked_fill_", masked_fill},
        {"index_put_", index_put},
        {"copy_", copy},
        {"cumsum", cumsum},
        {"cumprod", cumprod},
        {"sort", sort},
        // products and reductions
        {"matmul", matmul},
        {"linear", linear},
        {"quantized_linear_dynamic", quantized_linear_dynamic},
        {"sum", reduce<kReduceSum>},
        {"mean", reduce<kReduceMean>},
        {"prod", reduce<kReduceProd>},
        {"amax", reduce<kReduceMax>},
        {"amin", reduce<kReduceMin>},
        {"all", logical_reduce<kReduceMin>},
        {"any", logical_reduce<kReduceMax>},
        {"argmax", arg_reduce<kArgMax>},
        {"argmin", arg_reduce<kArgMin>},
        {"softmax", softmax<kSoftmax>},
        {"log_softmax", softmax<kLogSoftmax>},
        {"split", split},
        {"unbind", unbind},
        {"relu_backward", called_back<relu_backward>},
        {"tanh_backward", called_back<tanh_backward>},
        {"sigmoid_backward", called_back<sigmoid_backward>},
        {"silu_backward", called_back<silu_backward>},
        {"gelu_backward", called_back<gelu_backward>},
        {"softmax_backward", called_back<softmax_backward>},
        {"log_softmax_backward", called_back<softmax_backward>},
        {"layer_norm_backward", called_back<layer_norm_backward>},
        {"cross_entropy", cross_entropy},
        {"binary_cross_entropy", called_back<binary_cross_entropy>},
        {"mse_loss", mse_loss},
        {"cross_entropy_backward", called_back<cross_entropy_backward>},
        {"scaled_dot_product_attention", attention},
        {"attention_backward", called_back<attention_backward>},
        // layers
        {"layer_norm", layer_norm},
        {"batch_norm", batch_norm},
        {"group_norm", row_norm},
        {"instance_norm", row_norm},
        {"conv", conv},
        {"conv_transpose", conv_transpose},
        {"max_pool", max_pool},
        {"avg_pool", avg_pool},
        {"adaptive_avg_pool", adaptive_pool<kGlobalAveragePool, kAveragePool>},
        {"adaptive_max_pool", adaptive_max_pool},
        {"lstm", lstm},
        {"gru", gru},
        {"rnn_tanh", rnn_tanh},
        {"rnn_relu", rnn_relu},
        {"while_loop", while_loop},
        {"cond", cond},
        // collectives over a named vmap axis
        {"psum", axis_collective},
        {"pmean", axis_collective},
        {"pmax", axis_collective},
        {"pmin", axis_collective},
        {"all_gather", axis_collective},
        {"psum_scatter", axis_collective},
        {"ppermute", axis_collective},
    };
    // Every other unary op is the ONNX op of the same meaning (the onnx field of its entry).
#define UG_ROW(Op, method) add_unary_row<ops::Op>(t);
    UG_UNARY_ALL(UG_ROW)
#undef UG_ROW
    return t;
  }();
  return t;
}

/** Traced ops without an ONNX form here, with the reason given to the user. */
const std::map<std::string, std::string>& unsupported() {
  static const std::map<std::string, std::string> u = {
      {"embed", "a gradient op; export traces the forward pass only"},
      {"as_strided", "arbitrary strides over the storage have no ONNX counterpart"},
      {"view_dtype", "reading the bytes as another dtype (a bitcast) has no ONNX counterpart"},
      {"fill_", "in-place fills are not exported; use full() or where()"},
      {"max", "internal: captured as amax"},
      {"min", "internal: captured as amin"},
      {"linalg_solve", "ONNX has no linear solver (inv and solve are not exported)"},
      {"linalg_solve_triangular", "ONNX has no triangular solver"},
      {"linalg_slogdet", "ONNX's Det has no sign and log-magnitude form (det and slogdet are not exported)"},
      {"linalg_cholesky", "ONNX has no Cholesky decomposition"},
      {"linalg_lu_factor", "ONNX has no LU decomposition"},
      {"linalg_ldl_factor", "ONNX has no LDL decomposition"},
      {"linalg_ldl_solve", "ONNX has no LDL solver"},
      {"linalg_eigh", "ONNX has no eigendecomposition"},
      {"linalg_eig", "ONNX has no eigendecomposition (and no complex arithmetic for its results)"},
      {"linalg_svd", "ONNX has no singular value decomposition"},
      {"linalg_qr", "ONNX has no QR decomposition"},
      {"linalg_matrix_exp", "ONNX has no matrix exponential"},
      {"fft_c2c", "complex tensors are not exported (ONNX's DFT works on real [..., 2] pairs; not emitted yet)"},
      {"fft_r2c", "complex tensors are not exported (ONNX's DFT works on real [..., 2] pairs; not emitted yet)"},
      {"fft_c2r", "complex tensors are not exported (ONNX's DFT works on real [..., 2] pairs; not emitted yet)"},
      {"nonzero",
       "its output size depends on the data (nonzero, argwhere, masked_select, indexing with a boolean mask); a "
       "compiled program's shapes cannot either, as under jax.jit: keep the shape fixed with where(mask, x, 0), or "
       "count with count_nonzero"},
      {"random", "random draws are not exported (dropout must be in eval mode)"},
      {"random_split", "random keys are not exported"},
      {"random_fold_in", "random keys are not exported"},
      {"random_rejection", "random draws are not exported (a compiled program calls the sampler back)"},
      {"random_gamma", "random draws are not exported (a compiled program calls the sampler back)"},
      {"random_loggamma", "random draws are not exported (a compiled program calls the sampler back)"},
      {"random_gamma_grad",
       "the implicit gradient of Gamma draws is a kernel without an ONNX form (a compiled program calls it back)"},
      {"debug_print", "a print (ug.debug.print) has no ONNX form; a compiled program prints it"},
      {"view_as_real", "complex tensors are not exported (onnxruntime has no complex arithmetic)"},
      {"complex_mul", "complex tensors are not exported (onnxruntime has no complex arithmetic)"},
      {"complex_div", "complex tensors are not exported (onnxruntime has no complex arithmetic)"},
      {"complex_abs", "complex tensors are not exported (onnxruntime has no complex arithmetic)"},
      {"view_as_complex", "complex tensors are not exported (onnxruntime has no complex arithmetic)"},
      {"cond_branch", "a cond's branch is no node of its own: its ops are a subgraph of the cond's If"},
      {"optimizer_update", "an optimizer's update (a training step) has no ONNX form; a compiled step calls it back"},
      {"optimizer_step", "an optimizer's step (a training step) has no ONNX form; a compiled step calls it back"},
      {"all_reduce", "a collective across processes has no ONNX form; a compiled step calls it back"},
      {"broadcast", "a collective across processes has no ONNX form; a compiled step calls it back"},
      {"wait_tensor", "waiting for a collective across processes has no ONNX form; a compiled step calls it back"},
      {"optimization_barrier",
       "a checkpointed region's recomputation (in backward) has no ONNX form; a compiled program hands its inputs "
       "through"},
      {"nll_loss", "internal: runs fused only where nothing is captured, as gather, mul and sum otherwise"},
      {"conv2d", "internal: captured as conv"},
      {"conv2d_relu", "internal: runs fused only where nothing is captured, as conv, add and relu otherwise"},
      {"conv_transpose2d", "internal: captured as conv_transpose (alone, it is conv's gradient)"},
      {"conv2d_weight_grad", "a gradient op; export traces the forward pass only"},
      {"max_pool2d", "internal: captured as max_pool or adaptive_max_pool"},
      {"avg_pool2d", "internal: captured as avg_pool or adaptive_avg_pool"},
      {"avg_pool2d_backward", "a gradient op; export traces the forward pass only"},
  };
  return u;
}

}  // namespace

void emit(GraphBuilder& g, const CapturedCall& call) {
  if (auto it = table().find(call.op); it != table().end()) {
    it->second(g, call);
    return;
  }
  if (auto it = unsupported().find(call.op); it != unsupported().end())
    fail("[onnx.export] op '", call.op, "' is not supported by the ONNX exporter: ", it->second);
  fail("[onnx.export] op '", call.op, "' has no ONNX export rule");
}

bool exports(const std::string& op) { return table().contains(op); }

std::vector<std::string> exportable_ops() {
  std::vector<std::string> names;
  for (const auto& [name, e] : table()) names.push_back(name);
  return names;
}

std::vector<std::string> unsupported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, why] : unsupported()) names.push_back(name);
  return names;
}

}  // namespace ug::onnx
