#include "ug/nn/layers/recurrent.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "ug/graph/op_call.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/init.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/random.h"

namespace ug::nn {

namespace {

int64_t gate_count(RNNMode mode) {
  switch (mode) {
    case RNNMode::LSTM: return 4;
    case RNNMode::GRU: return 3;
    default: return 1;
  }
}

const graph::OpDef kRNNTanh("rnn_tanh"), kRNNReLU("rnn_relu"), kLSTM("lstm"), kGRU("gru");

const graph::OpDef& def(RNNMode mode) {
  switch (mode) {
    case RNNMode::RNNTanh: return kRNNTanh;
    case RNNMode::RNNReLU: return kRNNReLU;
    case RNNMode::LSTM: return kLSTM;
    case RNNMode::GRU: return kGRU;
  }
  return kRNNTanh;
}

RNNMode rnn_mode(const std::string& nonlinearity) {
  if (nonlinearity == "tanh") return RNNMode::RNNTanh;
  if (nonlinearity == "relu") return RNNMode::RNNReLU;
  fail("[RNN] unknown nonlinearity '", nonlinearity, "'; select from 'tanh' or 'relu'");
}

/** x @ W_ih^T plus the biases that can go before the recurrent product: both of them, but
 *  for GRU only b_ih (b_hn is multiplied by r). */
Tensor project(RNNMode mode, const Tensor& x, const Tensor& w_ih, const Tensor& b_ih, const Tensor& b_hh) {
  Tensor y = x.matmul(w_ih.t());
  if (!b_ih.defined()) return y;
  return mode == RNNMode::GRU ? y + b_ih : y + (b_ih + b_hh);
}

/** One time step: the new (h, c) from the projected input gi [N, G*H] and the state [N, H]
 *  (c only for LSTM; b_hh only for GRU, the other modes have it in gi; w_hr, LSTM's
 *  projection of h, only with proj_size). */
LSTMState step(RNNMode mode, const Tensor& gi, const Tensor& h, const Tensor& c, const Tensor& w_hh, const Tensor& b_hh,
               const Tensor& w_hr) {
  const int64_t hidden = gi.size(-1) / gate_count(mode);
  Tensor gh = h.matmul(w_hh.t());
  switch (mode) {
    case RNNMode::RNNTanh: return {(gi + gh).tanh(), Tensor()};
    case RNNMode::RNNReLU: return {(gi + gh).relu(), Tensor()};
    case RNNMode::LSTM: {
      std::vector<Tensor> g = (gi + gh).unflatten(1, {4, hidden}).unbind(1);  // i, f, g, o
      Tensor c2 = g[1].sigmoid() * c + g[0].sigmoid() * g[2].tanh();
      Tensor h2 = g[3].sigmoid() * c2.tanh();
      return {w_hr.defined() ? h2.matmul(w_hr.t()) : h2, c2};
    }
    case RNNMode::GRU: {
      if (b_hh.defined()) gh = gh + b_hh;
      std::vector<Tensor> i = gi.unflatten(1, {3, hidden}).unbind(1);  // r, z, n
      std::vector<Tensor> r_z_n = gh.unflatten(1, {3, hidden}).unbind(1);
      Tensor r = (i[0] + r_z_n[0]).sigmoid();
      Tensor z = (i[1] + r_z_n[1]).sigmoid();
      Tensor n = (i[2] + r * r_z_n[2]).tanh();
      return {n + z * (h - n), Tensor()};  // (1 - z) * n + z * h
    }
  }
  return {};
}

void check_dtype(const std::string& op, const Tensor& t, const char* what, const Tensor& weight) {
  if (!t.is_floating_point()) fail<TypeError>("[", op, "] expected a floating ", what, ", got dtype ", t.dtype());
  if (t.dtype() != weight.dtype())
    fail<TypeError>("[", op, "] ", what, " has dtype ", t.dtype(), " but the parameters have ", weight.dtype(),
                    "; convert one of them (module.to(dtype) or tensor.to(dtype))");
}

std::string join_repr(int64_t input_size, int64_t hidden_size) {
  return std::to_string(input_size) + ", " + std::to_string(hidden_size);
}

}  // namespace

// ---- cells --------------------------------------------------------------------------------

RNNCellBaseImpl::RNNCellBaseImpl(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size,
                                 bool bias, std::optional<DType> dtype_or_default)
    : Module(std::move(type_name)), mode_(mode), input_size_(input_size), hidden_size_(hidden_size), bias_(bias) {
  const DType dtype = dtype_or_default.value_or(get_default_dtype());
  if (input_size < 0) fail("[", this->type_name(), "] input_size must be non-negative, got ", input_size);
  if (hidden_size <= 0) fail("[", this->type_name(), "] hidden_size must be greater than zero, got ", hidden_size);
  if (!is_floating(dtype)) fail<TypeError>("[", this->type_name(), "] needs a floating dtype, got ", dtype);
  const int64_t rows = gate_count(mode) * hidden_size;
  const Options opts{.dtype = dtype, .device = {}};
  register_parameter("weight_ih", empty({rows, input_size}, opts));
  register_parameter("weight_hh", empty({rows, hidden_size}, opts));
  if (bias) {
    register_parameter("bias_ih", empty({rows}, opts));
    register_parameter("bias_hh", empty({rows}, opts));
  }
  reset_parameters();
}

void RNNCellBaseImpl::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(hidden_size_));
  for (Tensor& p : parameters(false)) init::uniform_(p, -bound, bound);
}

std::string RNNCellBaseImpl::extra_repr() const {
  return join_repr(input_size_, hidden_size_) + (bias_ ? "" : ", bias=False");
}

Tensor RNNCellBaseImpl::batched_input(const Tensor& x) {
  if (x.dim() != 1 && x.dim() != 2)
    fail("[", type_name(), "] expected input to be 1-D (unbatched) or 2-D (batched), got shape ", x.shape());
  if (x.size(-1) != input_size_)
    fail("[", type_name(), "] expected input with last dim ", input_size_, " (input_size), got shape ", x.shape());
  check_dtype(type_name(), x, "input", parameter("weight_ih"));
  return x.dim() == 1 ? x.unsqueeze(0) : x;
}

Tensor RNNCellBaseImpl::batched_state(const Tensor& x, const Tensor& h, const char* what) const {
  const bool batched = x.dim() == 2;
  const int64_t n = batched ? x.size(0) : 1;
  if (!h.defined()) return zeros({n, hidden_size_}, {.dtype = x.dtype(), .device = x.device()});
  const Shape expected = batched ? Shape{n, hidden_size_} : Shape{hidden_size_};
  if (h.shape() != expected)
    fail("[", type_name(), "] expected ", what, " of shape ", expected, " for input of shape ", x.shape(), ", got ",
         h.shape());
  check_dtype(type_name(), h, what, x);
  return batched ? h : h.unsqueeze(0);
}

LSTMState RNNCellBaseImpl::cell_step(const Tensor& x2d, const Tensor& h, const Tensor& c) {
  const Tensor b_ih = bias_ ? parameter("bias_ih") : Tensor();
  const Tensor b_hh = bias_ ? parameter("bias_hh") : Tensor();
  const Tensor gi = project(mode_, x2d, parameter("weight_ih"), b_ih, b_hh);
  return step(mode_, gi, h, c, parameter("weight_hh"), mode_ == RNNMode::GRU ? b_hh : Tensor(), Tensor());
}

RNNCellImpl::RNNCellImpl(int64_t input_size, int64_t hidden_size, bool bias, const std::string& nonlinearity,
                         std::optional<DType> dtype)
    : RNNCellBaseImpl("RNNCell", rnn_mode(nonlinearity), input_size, hidden_size, bias, dtype) {}

Tensor RNNCellImpl::forward(const Tensor& x, const std::optional<Tensor>& hx) {
  Tensor h = cell_step(batched_input(x), batched_state(x, hx.value_or(Tensor()), "hx"), Tensor()).first;
  return x.dim() == 1 ? h.select(0, 0) : h;
}

std::string RNNCellImpl::extra_repr() const {
  return RNNCellBaseImpl::extra_repr() + (mode_ == RNNMode::RNNReLU ? ", nonlinearity=relu" : "");
}

LSTMCellImpl::LSTMCellImpl(int64_t input_size, int64_t hidden_size, bool bias, std::optional<DType> dtype)
    : RNNCellBaseImpl("LSTMCell", RNNMode::LSTM, input_size, hidden_size, bias, dtype) {}

LSTMState LSTMCellImpl::forward(const Tensor& x, const std::optional<LSTMState>& hx) {
  const Tensor h = hx ? hx->first : Tensor(), c = hx ? hx->second : Tensor();
  auto [h2, c2] = cell_step(batched_input(x), batched_state(x, h, "h"), batched_state(x, c, "c"));
  if (x.dim() == 1) return {h2.select(0, 0), c2.select(0, 0)};
  return {h2, c2};
}

GRUCellImpl::GRUCellImpl(int64_t input_size, int64_t hidden_size, bool bias, std::optional<DType> dtype)
    : RNNCellBaseImpl("GRUCell", RNNMode::GRU, input_size, hidden_size, bias, dtype) {}

Tensor GRUCellImpl::forward(const Tensor& x, const std::optional<Tensor>& hx) {
  Tensor h = cell_step(batched_input(x), batched_state(x, hx.value_or(Tensor()), "hx"), Tensor()).first;
  return x.dim() == 1 ? h.select(0, 0) : h;
}

// ---- stacked layers -----------------------------------------------------------------------

RNNBaseImpl::RNNBaseImpl(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size,
                         RNNOptions options)
    : Module(std::move(type_name)), mode_(mode), input_size_(input_size), hidden_size_(hidden_size), options_(options) {
  const std::string& name = this->type_name();
  if (input_size < 0) fail("[", name, "] input_size must be non-negative, got ", input_size);
  if (hidden_size <= 0) fail("[", name, "] hidden_size must be greater than zero, got ", hidden_size);
  if (options.num_layers <= 0) fail("[", name, "] num_layers must be greater than zero, got ", options.num_layers);
  if (options.proj_size < 0)
    fail("[", name, "] proj_size should be a positive integer or zero to disable projections, got ", options.proj_size);
  if (options.proj_size && mode != RNNMode::LSTM)
    fail("[", name, "] proj_size argument is only supported for LSTM, not RNN or GRU");
  if (options.proj_size >= hidden_size)
    fail("[", name, "] proj_size has to be smaller than hidden_size, got proj_size=", options.proj_size,
         " and hidden_size=", hidden_size);
  if (!(options.dropout >= 0 && options.dropout <= 1))
    fail("[", name, "] dropout should be a number in range [0, 1] (the probability of zeroing an element), got ",
         options.dropout);
  const DType dtype = options.dtype.value_or(get_default_dtype());
  if (!is_floating(dtype)) fail<TypeError>("[", name, "] needs a floating dtype, got ", dtype);
  const int64_t rows = gate_count(mode) * hidden_size;
  const int64_t directions = options.bidirectional ? 2 : 1;
  const Options opts{.dtype = dtype, .device = {}};
  const int64_t out = output_size();
  for (int64_t k = 0; k < options.num_layers; ++k) {
    const int64_t in = k == 0 ? input_size : out * directions;
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d ? "_reverse" : "");
      register_parameter("weight_ih" + suffix, empty({rows, in}, opts));
      register_parameter("weight_hh" + suffix, empty({rows, out}, opts));
      if (options.bias) {
        register_parameter("bias_ih" + suffix, empty({rows}, opts));
        register_parameter("bias_hh" + suffix, empty({rows}, opts));
      }
      if (options.proj_size) register_parameter("weight_hr" + suffix, empty({options.proj_size, hidden_size}, opts));
    }
  }
  reset_parameters();
}

void RNNBaseImpl::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(hidden_size_));
  for (Tensor& p : parameters(false)) init::uniform_(p, -bound, bound);
}

std::string RNNBaseImpl::extra_repr() const {
  std::string s = join_repr(input_size_, hidden_size_);
  if (options_.proj_size) s += ", proj_size=" + std::to_string(options_.proj_size);
  if (options_.num_layers != 1) s += ", num_layers=" + std::to_string(options_.num_layers);
  if (!options_.bias) s += ", bias=False";
  if (options_.batch_first) s += ", batch_first=True";
  if (options_.dropout != 0) {
    std::ostringstream p;
    p << options_.dropout;
    s += ", dropout=" + p.str();
  }
  if (options_.bidirectional) s += ", bidirectional=True";
  return s;
}

Tensor RNNBaseImpl::check_input(const Tensor& x) {
  if (x.dim() != 2 && x.dim() != 3)
    fail("[", type_name(), "] expected input to be 2-D (unbatched) or 3-D (batched), got shape ", x.shape());
  if (x.size(-1) != input_size_)
    fail("[", type_name(), "] expected input with last dim ", input_size_, " (input_size), got shape ", x.shape());
  check_dtype(type_name(), x, "input", parameter("weight_ih_l0"));
  Tensor seq = x.dim() == 2 ? x.unsqueeze(1) : (options_.batch_first ? x.transpose(0, 1) : x);
  if (seq.size(0) == 0) fail("[", type_name(), "] expected a non-empty sequence, got input of shape ", x.shape());
  return seq;
}

Tensor RNNBaseImpl::check_state(const Tensor& x, const Tensor& h, bool batched, int64_t batch, int64_t size,
                                const char* what) const {
  const int64_t layers = options_.num_layers * (options_.bidirectional ? 2 : 1);
  if (!h.defined()) return zeros({layers, batch, size}, {.dtype = x.dtype(), .device = x.device()});
  const Shape expected = batched ? Shape{layers, batch, size} : Shape{layers, size};
  if (h.shape() != expected)
    fail("[", type_name(), "] expected ", what, " of shape ", expected, " (num_layers * num_directions, ",
         batched ? "batch, " : "", size == hidden_size_ ? "hidden_size" : "proj_size", ") for input of shape ",
         x.shape(), ", got ", h.shape());
  check_dtype(type_name(), h, what, x);
  return batched ? h : h.unsqueeze(1);
}

std::tuple<Tensor, Tensor, Tensor> RNNBaseImpl::run(const Tensor& x, const Tensor& h0, const Tensor& c0) {
  // ONNX's LSTM has no projection: with one, the steps' ops are recorded one by one.
  if (options_.proj_size) return run_padded(x, h0, c0);
  // A whole layer stack is one call (one ONNX LSTM/GRU/RNN node per layer): the steps inside
  // are hidden in it and record the derivatives themselves.
  graph::OpCall call(def(mode_));
  auto result = run_padded(x, h0, c0);
  // Inputs: x, h0, c0 (undefined when absent), then per layer and direction w_ih, w_hh, b_ih, b_hh.
  std::vector<Tensor> params;
  const int64_t directions = options_.bidirectional ? 2 : 1;
  for (int64_t k = 0; k < options_.num_layers; ++k)
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d ? "_reverse" : "");
      params.push_back(parameter("weight_ih" + suffix));
      params.push_back(parameter("weight_hh" + suffix));
      params.push_back(options_.bias ? parameter("bias_ih" + suffix) : Tensor());
      params.push_back(options_.bias ? parameter("bias_hh" + suffix) : Tensor());
    }
  std::vector<const Tensor*> inputs{&x, &h0, &c0};
  for (const Tensor& p : params) inputs.push_back(&p);
  if (call.capturing())
    call.set_attrs({{"hidden_size", hidden_size_},
                    {"num_layers", options_.num_layers},
                    {"bidirectional", int64_t{options_.bidirectional}},
                    {"batch_first", int64_t{options_.batch_first}}});
  auto& [out, hn, cn] = result;
  if (mode_ == RNNMode::LSTM) call.finish(inputs, {&out, &hn, &cn});
  else call.finish(inputs, {&out, &hn});  // no cell state
  return result;
}

std::tuple<Tensor, Tensor, Tensor> RNNBaseImpl::run_padded(const Tensor& x, const Tensor& h0, const Tensor& c0) {
  const bool lstm = mode_ == RNNMode::LSTM, batched = x.dim() == 3;
  const Tensor seq = check_input(x);
  const int64_t steps = seq.size(0), batch = seq.size(1);
  const Tensor h = check_state(x, h0, batched, batch, output_size(), "h0");
  const Tensor c = lstm ? check_state(x, c0, batched, batch, hidden_size_, "c0") : Tensor();
  auto [data, hn, cn] = run_steps(seq.reshape({steps * batch, input_size_}),
                                  std::vector<int64_t>(static_cast<size_t>(steps), batch), h, c);
  const Tensor out = data.unflatten(0, {steps, batch});
  if (!batched) return {out.select(1, 0), hn.select(1, 0), lstm ? cn.select(1, 0) : cn};
  return {options_.batch_first ? out.transpose(0, 1) : out, hn, cn};
}

std::tuple<PackedSequence, Tensor, Tensor> RNNBaseImpl::run(const PackedSequence& x, const Tensor& h0,
                                                            const Tensor& c0) {
  const bool lstm = mode_ == RNNMode::LSTM;
  const std::vector<int64_t> sizes = x.step_sizes(type_name().c_str());
  const Tensor& data = x.data;
  if (data.dim() != 2 || data.size(1) != input_size_)
    fail("[", type_name(), "] expected PackedSequence.data of shape [sum of lengths, ", input_size_,
         "] (input_size), got ", data.shape());
  check_dtype(type_name(), data, "input", parameter("weight_ih_l0"));
  // The layers run on the batch sorted by decreasing length; states come and go in the
  // caller's order.
  auto sort = [&](const Tensor& h, const Tensor& order) { return order.defined() ? h.index_select(1, order) : h; };
  const Tensor h = check_state(data, h0, true, sizes[0], output_size(), "h0");
  const Tensor c = lstm ? check_state(data, c0, true, sizes[0], hidden_size_, "c0") : Tensor();
  auto [out, hn, cn] = run_steps(data, sizes, sort(h, x.sorted_indices), lstm ? sort(c, x.sorted_indices) : c);
  return {PackedSequence{out, x.batch_sizes, x.sorted_indices, x.unsorted_indices}, sort(hn, x.unsorted_indices),
          lstm ? sort(cn, x.unsorted_indices) : cn};
}

std::tuple<Tensor, Tensor, Tensor> RNNBaseImpl::run_steps(const Tensor& data, const std::vector<int64_t>& sizes,
                                                          const Tensor& h0, const Tensor& c0) {
  const bool lstm = mode_ == RNNMode::LSTM;
  const int64_t steps = static_cast<int64_t>(sizes.size());
  const int64_t directions = options_.bidirectional ? 2 : 1;
  const std::vector<Tensor> h_init = h0.unbind(0);
  const std::vector<Tensor> c_init = lstm ? c0.unbind(0) : std::vector<Tensor>();
  std::vector<Tensor> h_n, c_n;
  Tensor layer_in = data;
  for (int64_t k = 0; k < options_.num_layers; ++k) {
    std::vector<Tensor> outputs;
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d ? "_reverse" : "");
      const Tensor b_ih = options_.bias ? parameter("bias_ih" + suffix) : Tensor();
      const Tensor b_hh = options_.bias ? parameter("bias_hh" + suffix) : Tensor();
      const Tensor w_hh = parameter("weight_hh" + suffix);
      const Tensor w_hr = options_.proj_size ? parameter("weight_hr" + suffix) : Tensor();
      // One GEMM projects every time step; only h @ W_hh^T is left to the loop. One split
      // (a single backward node) cuts it into steps.
      const std::vector<Tensor> gi = project(mode_, layer_in, parameter("weight_ih" + suffix), b_ih, b_hh)
                                         .split(Dims(sizes.begin(), sizes.end()), 0);
      const size_t at = static_cast<size_t>(k * directions + d);
      Tensor h = h_init[at], c = lstm ? c_init[at] : Tensor();
      // Forwards, the shortest sequences leave the batch as they end, and their states are
      // final; backwards, they join it at their last step with their initial state.
      std::vector<Tensor> ended_h, ended_c;
      if (d && sizes.back() < h.size(0)) {
        h = h.narrow(0, 0, sizes.back());
        if (lstm) c = c.narrow(0, 0, sizes.back());
      }
      std::vector<Tensor> hs(static_cast<size_t>(steps));
      for (int64_t i = 0; i < steps; ++i) {
        const int64_t t = d ? steps - 1 - i : i, n = sizes[t], rows = h.size(0);
        if (n < rows) {
          std::vector<Tensor> parts = h.split(Dims{n, rows - n}, 0);
          h = parts[0];
          ended_h.push_back(parts[1]);
          if (lstm) {
            parts = c.split(Dims{n, rows - n}, 0);
            c = parts[0];
            ended_c.push_back(parts[1]);
          }
        } else if (n > rows) {
          h = cat({h, h_init[at].narrow(0, rows, n - rows)}, 0);
          if (lstm) c = cat({c, c_init[at].narrow(0, rows, n - rows)}, 0);
        }
        std::tie(h, c) = step(mode_, gi[t], h, c, w_hh, mode_ == RNNMode::GRU ? b_hh : Tensor(), w_hr);
        hs[t] = h;
      }
      outputs.push_back(cat(hs, 0));
      // The batch's rows in order: the longest sequences, then those that ended last to first.
      auto final_state = [](const Tensor& last, std::vector<Tensor>& ended) {
        if (ended.empty()) return last;
        ended.push_back(last);
        std::reverse(ended.begin(), ended.end());
        return cat(ended, 0);
      };
      h_n.push_back(final_state(h, ended_h));
      c_n.push_back(lstm ? final_state(c, ended_c) : c);
    }
    layer_in = directions == 1 ? outputs[0] : cat(outputs, 1);
    if (options_.dropout > 0 && is_training() && k + 1 < options_.num_layers)
      layer_in = functional::dropout(layer_in, options_.dropout, true);
  }
  return {layer_in, stack(h_n, 0), lstm ? stack(c_n, 0) : Tensor()};
}

RNNImpl::RNNImpl(int64_t input_size, int64_t hidden_size, RNNOptions options, const std::string& nonlinearity)
    : RNNBaseImpl("RNN", rnn_mode(nonlinearity), input_size, hidden_size, options) {}

std::pair<Tensor, Tensor> RNNImpl::forward(const Tensor& x, const std::optional<Tensor>& h0) {
  auto [out, h, c] = run(x, h0.value_or(Tensor()), Tensor());
  return {out, h};
}

std::pair<PackedSequence, Tensor> RNNImpl::forward(const PackedSequence& x, const std::optional<Tensor>& h0) {
  auto [out, h, c] = run(x, h0.value_or(Tensor()), Tensor());
  return {out, h};
}

LSTMImpl::LSTMImpl(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBaseImpl("LSTM", RNNMode::LSTM, input_size, hidden_size, options) {}

std::tuple<Tensor, LSTMState> LSTMImpl::forward(const Tensor& x, const std::optional<LSTMState>& hx) {
  if (hx && hx->first.defined() != hx->second.defined())
    fail("[LSTM] the state (h0, c0) needs both tensors or neither");
  auto [out, h, c] = run(x, hx ? hx->first : Tensor(), hx ? hx->second : Tensor());
  return {out, {h, c}};
}

std::tuple<PackedSequence, LSTMState> LSTMImpl::forward(const PackedSequence& x, const std::optional<LSTMState>& hx) {
  if (hx && hx->first.defined() != hx->second.defined())
    fail("[LSTM] the state (h0, c0) needs both tensors or neither");
  auto [out, h, c] = run(x, hx ? hx->first : Tensor(), hx ? hx->second : Tensor());
  return {out, {h, c}};
}

GRUImpl::GRUImpl(int64_t input_size, int64_t hidden_size, RNNOptions options)
    : RNNBaseImpl("GRU", RNNMode::GRU, input_size, hidden_size, options) {}

std::pair<Tensor, Tensor> GRUImpl::forward(const Tensor& x, const std::optional<Tensor>& h0) {
  auto [out, h, c] = run(x, h0.value_or(Tensor()), Tensor());
  return {out, h};
}

std::pair<PackedSequence, Tensor> GRUImpl::forward(const PackedSequence& x, const std::optional<Tensor>& h0) {
  auto [out, h, c] = run(x, h0.value_or(Tensor()), Tensor());
  return {out, h};
}

}  // namespace ug::nn
