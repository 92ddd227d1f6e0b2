// Recurrent layers with PyTorch's parameters, shapes, initialisation and semantics: the
// multi-layer RNN, LSTM and GRU, and their one-step cells RNNCell, LSTMCell and GRUCell.
//
// They are built from ops (matmul, sigmoid, tanh, mul, add, stack), so autograd, double
// backward and dtype handling come with them. Each layer projects the whole input sequence
// with one GEMM (x @ W_ih^T + b) and only the recurrent h @ W_hh^T runs per time step.
//
// The full results come from the two-argument forward:
//   LSTM lstm(10, 20, RNNOptions{.num_layers = 2, .batch_first = true});
//   auto [out, state] = lstm->forward(x, std::nullopt);   // state = (h_n, c_n)
//   auto [out2, state2] = lstm->forward(x, state);         // continue from a state
// The one-tensor forward (lstm(x), Sequential) returns only the output sequence, for a
// cell only the new hidden state h'. A variable-length batch goes in packed
// (ug/nn/utils/rnn.h) and comes out packed, each sequence's final state taken at its last step.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ug/nn/module.h"
#include "ug/nn/utils/rnn.h"

namespace ug::nn {

using utils::rnn::PackedSequence;

/** (h, c): an LSTM's hidden and cell state. */
using LSTMState = std::pair<Tensor, Tensor>;

/** What the cell of a recurrent layer computes per step. */
enum class RNNMode { RNNTanh, RNNReLU, LSTM, GRU };

/** The shared part of the cells: weight_ih [G*H, in], weight_hh [G*H, H], bias_ih and
 *  bias_hh [G*H] (G = 4 for LSTM, 3 for GRU, 1 for RNN), all U(-1/sqrt(H), 1/sqrt(H)). */
class RNNCellBaseImpl : public Module {
  UG_CLONEABLE(RNNCellBaseImpl)
 public:
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  bool bias() const { return bias_; }

 protected:
  RNNCellBaseImpl(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size, bool bias,
                  std::optional<DType> dtype);
  /** Checks x ([N, in] or unbatched [in]) and returns it as [N, in]. */
  Tensor batched_input(const Tensor& x);
  /** Checks a state part against x ([N, H] or [H]; zeros when undefined), as [N, H]. */
  Tensor batched_state(const Tensor& x, const Tensor& h, const char* what) const;
  /** The new (h, c) from x [N, in] and the state [N, H] (c only for LSTM). */
  LSTMState cell_step(const Tensor& x2d, const Tensor& h, const Tensor& c);

  RNNMode mode_;

 private:
  int64_t input_size_, hidden_size_;
  bool bias_;
};

/** h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu); torch.nn.RNNCell. */
class RNNCellImpl : public RNNCellBaseImpl {
  UG_CLONEABLE(RNNCellImpl)
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size, bool bias = true, const std::string& nonlinearity = "tanh",
              std::optional<DType> dtype = std::nullopt);
  /** h' from x ([N, in] or [in]) and h ([N, H] or [H]; zeros when absent). */
  Tensor forward(const Tensor& x, const std::optional<Tensor>& hx);
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }
  std::string extra_repr() const override;
  std::string nonlinearity() const { return mode_ == RNNMode::RNNReLU ? "relu" : "tanh"; }
};
UG_MODULE(RNNCell);

/** One LSTM step, gates in PyTorch's order i, f, g, o; torch.nn.LSTMCell. */
class LSTMCellImpl : public RNNCellBaseImpl {
  UG_CLONEABLE(LSTMCellImpl)
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size, bool bias = true, std::optional<DType> dtype = std::nullopt);
  /** (h', c') from x ([N, in] or [in]) and (h, c) ([N, H] or [H]; zeros when absent). */
  LSTMState forward(const Tensor& x, const std::optional<LSTMState>& hx);
  /** h' from a zero state. */
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt).first; }
};
UG_MODULE(LSTMCell);

/** One GRU step, gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn));
 *  torch.nn.GRUCell. */
class GRUCellImpl : public RNNCellBaseImpl {
  UG_CLONEABLE(GRUCellImpl)
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size, bool bias = true, std::optional<DType> dtype = std::nullopt);
  /** h' from x ([N, in] or [in]) and h ([N, H] or [H]; zeros when absent). */
  Tensor forward(const Tensor& x, const std::optional<Tensor>& hx);
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }
};
UG_MODULE(GRUCell);

/** The options after (input_size, hidden_size), PyTorch's keyword arguments:
 *  `RNNOptions{.num_layers = 2, .batch_first = true}`. dropout applies to the output of each
 *  layer but the last, in training mode only. */
struct RNNOptions {
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  int64_t proj_size = 0;       // LSTM only: h is projected to this size by weight_hr_l{k}
  std::optional<DType> dtype;  // the default floating dtype unless given
};

/** The stacked, optionally bidirectional layers. Parameters per layer k and direction, in
 *  PyTorch's order and names: weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k},
 *  (LSTM with proj_size P: weight_hr_l{k} [P, H]), then the same with the suffix _reverse.
 *  Input [L, N, in] ([N, L, in] when batch_first), unbatched [L, in] or packed; states
 *  [num_layers * D, N, H] (or [num_layers * D, H]), D = 2 when bidirectional; output
 *  [L, N, D * H]. With proj_size P, h and the output have P in place of H (c keeps H). */
class RNNBaseImpl : public Module {
  UG_CLONEABLE(RNNBaseImpl)
 public:
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  const RNNOptions& options() const { return options_; }

 protected:
  RNNBaseImpl(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size, RNNOptions options);
  /** The output sequence and the final states: h_n, and c_n for LSTM (c0 is used and c_n
   *  returned for LSTM only; undefined initial states are zeros). */
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& x, const Tensor& h0, const Tensor& c0);
  /** The same over a packed batch; the states are in the batch's original order. */
  std::tuple<PackedSequence, Tensor, Tensor> run(const PackedSequence& x, const Tensor& h0, const Tensor& c0);

  RNNMode mode_;

 private:
  /** run() on a padded input (run itself records the whole stack for ONNX export). */
  std::tuple<Tensor, Tensor, Tensor> run_padded(const Tensor& x, const Tensor& h0, const Tensor& c0);
  /** The layer stack over data [sum, in] whose step t is the first sizes[t] rows of the batch
   *  (the sizes non-increasing), from states [num_layers * D, B, *]. */
  std::tuple<Tensor, Tensor, Tensor> run_steps(const Tensor& data, const std::vector<int64_t>& sizes, const Tensor& h0,
                                               const Tensor& c0);
  /** x as time-major [L, N, in]. */
  Tensor check_input(const Tensor& x);
  /** A state for input x as [num_layers * D, batch, size] (zeros when undefined). */
  Tensor check_state(const Tensor& x, const Tensor& h, bool batched, int64_t batch, int64_t size,
                     const char* what) const;
  /** The size of h and of each direction's output: proj_size or hidden_size. */
  int64_t output_size() const { return options_.proj_size ? options_.proj_size : hidden_size_; }

  int64_t input_size_, hidden_size_;
  RNNOptions options_;
};

/** Elman RNN, h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu); torch.nn.RNN. */
class RNNImpl : public RNNBaseImpl {
  UG_CLONEABLE(RNNImpl)
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {}, const std::string& nonlinearity = "tanh");
  /** (output, h_n) from the input and h0 (zeros when absent). */
  std::pair<Tensor, Tensor> forward(const Tensor& x, const std::optional<Tensor>& h0);
  std::pair<PackedSequence, Tensor> forward(const PackedSequence& x, const std::optional<Tensor>& h0);
  /** The output sequence only. */
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt).first; }
  std::string nonlinearity() const { return mode_ == RNNMode::RNNReLU ? "relu" : "tanh"; }
};
UG_MODULE(RNN);

/** torch.nn.LSTM. */
class LSTMImpl : public RNNBaseImpl {
  UG_CLONEABLE(LSTMImpl)
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /** (output, (h_n, c_n)) from the input and (h0, c0) (zeros when absent). */
  std::tuple<Tensor, LSTMState> forward(const Tensor& x, const std::optional<LSTMState>& hx);
  std::tuple<PackedSequence, LSTMState> forward(const PackedSequence& x, const std::optional<LSTMState>& hx);
  /** The output sequence only. */
  Tensor forward(const Tensor& x) override { return std::get<0>(forward(x, std::nullopt)); }
};
UG_MODULE(LSTM);

/** torch.nn.GRU. */
class GRUImpl : public RNNBaseImpl {
  UG_CLONEABLE(GRUImpl)
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /** (output, h_n) from the input and h0 (zeros when absent). */
  std::pair<Tensor, Tensor> forward(const Tensor& x, const std::optional<Tensor>& h0);
  std::pair<PackedSequence, Tensor> forward(const PackedSequence& x, const std::optional<Tensor>& h0);
  /** The output sequence only. */
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt).first; }
};
UG_MODULE(GRU);

}  // namespace ug::nn
