// RNN, ONNX's simple recurrence h = f(x W^T + h R^T + Wb + Rb), unrolled with ug ops as LSTM and GRU
// are (import_table.cpp): one input projection for all steps, then a product per step and
// direction. Sequences shorter than the batch's longest stop updating at their end (their Y is 0
// there), and run backwards from their own end; one of length 0 has a Y_h of 0.
#include "ug/nn/functional.h"
#include "ug/onnx/op_table.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/unary.h"

namespace ug::onnx {
namespace {

namespace F = ug::nn::functional;
using Outputs = std::vector<Tensor>;

Tensor activate(const std::string& f, const Tensor& x) {
  if (f == "Tanh") return tanh(x);
  if (f == "Relu") return relu(x);
  return sigmoid(x);
}

Outputs rnn_op(const OpContext& c) {
  const int64_t hidden = c.attr_int("hidden_size");
  const std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("direction must be forward, reverse or bidirectional, got \"", direction, "\"");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = c.attr_int("layout", 0) != 0;
  if (c.has_attr("activation_alpha") || c.has_attr("activation_beta"))
    c.fail("activation_alpha and activation_beta are not supported");
  std::vector<std::string> acts = c.attr_strings("activations").value_or(std::vector<std::string>(dirs, "Tanh"));
  if (static_cast<int64_t>(acts.size()) != dirs)
    c.fail("activations has ", acts.size(), " entries for ", dirs, " directions");
  for (const std::string& f : acts)
    if (f != "Tanh" && f != "Relu" && f != "Sigmoid")
      c.fail("activation \"", f, "\" is not supported (Tanh, Relu, Sigmoid)");
  const double clip = c.attr_float("clip", 0);
  if (c.has_attr("clip") && clip <= 0) c.fail("clip must be positive, got ", clip);
  Tensor x = c.input(0);
  if (x.dim() != 3) c.fail("X must be 3-d, got shape ", x.shape());
  if (batch_first) x = x.transpose(0, 1);
  const int64_t seq = x.size(0), batch = x.size(1);
  const Tensor &w = c.input(1), &r = c.input(2);
  const Shape want_w{dirs, hidden, x.size(2)}, want_r{dirs, hidden, hidden};
  if (w.shape() != want_w || r.shape() != want_r)
    c.fail("W and R must have shapes ", want_w, " and ", want_r, ", got ", w.shape(), " and ", r.shape());
  const Tensor b = c.has_input(3) ? c.input(3) : Tensor();
  if (b.defined() && b.shape() != Shape{dirs, 2 * hidden})
    c.fail("B must have shape [", dirs, ", ", 2 * hidden, "], got ", b.shape());
  // Whether step t is inside each sequence, as (batch, 1) masks; none when all are full length.
  std::vector<Tensor> inside;
  Tensor empty_sequence;
  if (auto lens = c.ints_input(4)) {
    if (static_cast<int64_t>(lens->size()) != batch)
      c.fail("sequence_lens has ", lens->size(), " values for ", batch, " sequences");
    for (int64_t n : *lens)
      if (n < 0 || n > seq) c.fail("sequence_lens holds ", n, ", outside [0, ", seq, "]");
    const Tensor lengths = c.input(4).to(DType::Int64).reshape({batch, 1});
    for (int64_t t = 0; t < seq; ++t) inside.push_back(gt(lengths, t));
    empty_sequence = eq(lengths, 0);
  }
  Tensor h0 = c.has_input(5) ? c.input(5) : zeros({dirs, batch, hidden}, {.dtype = x.dtype()});
  if (c.has_input(5) && batch_first) h0 = h0.transpose(0, 1);
  if (h0.shape() != Shape{dirs, batch, hidden})
    c.fail("initial_h has shape ", c.input(5).shape(), ", expected ", dirs, " x ", batch, " x ", hidden);

  std::vector<Tensor> ys, hs;
  for (int64_t d = 0; d < dirs; ++d) {
    const Tensor bias =
        b.defined() ? add(b.select(0, d).narrow(0, 0, hidden), b.select(0, d).narrow(0, hidden, hidden)) : Tensor();
    const Tensor xw = F::linear(x, w.select(0, d), bias);  // [seq, batch, hidden]
    const Tensor rd = r.select(0, d);
    Tensor h = h0.select(0, d);
    std::vector<Tensor> steps(static_cast<size_t>(seq));
    const bool backwards = direction == "reverse" || d == 1;
    for (int64_t k = 0; k < seq; ++k) {
      const int64_t t = backwards ? seq - 1 - k : k;
      Tensor pre = add(xw.select(0, t), F::linear(h, rd));
      if (clip > 0) pre = clamp(pre, -clip, clip);
      const Tensor next = activate(acts[static_cast<size_t>(d)], pre);
      if (inside.empty()) {
        h = next;
        steps[static_cast<size_t>(t)] = h;
      } else {
        const Tensor& in = inside[static_cast<size_t>(t)];
        h = where(in, next, h);
        steps[static_cast<size_t>(t)] = where(in, h, 0.0);
      }
    }
    ys.push_back(seq > 0 ? stack(steps, 0) : zeros({0, batch, hidden}, {.dtype = x.dtype()}));
    hs.push_back(empty_sequence.defined() ? where(empty_sequence, 0.0, h) : h);  // as onnxruntime
  }
  Tensor y = stack(ys, 1), y_h = stack(hs, 0);  // [seq, dirs, batch, hidden], [dirs, batch, hidden]
  if (batch_first) {
    y = y.permute({2, 0, 1, 3});
    y_h = y_h.transpose(0, 1);
  }
  return {y, y_h};
}

}  // namespace

void add_rnn_ops(std::vector<OpSpec>& ops) { ops.push_back({"RNN", rnn_op, 3, 6, 2, 1, {"hidden_size"}}); }

}  // namespace ug::onnx
