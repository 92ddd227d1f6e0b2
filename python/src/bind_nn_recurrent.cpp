// ug.nn's recurrent layers: RNN, LSTM, GRU and their cells, with torch.nn's arguments.
// forward(input, hx=None) returns PyTorch's tuples. Module's one-tensor call is the C++
// path that Sequential uses and returns the output alone, so the layers that return tuples
// send a lone input through Module.__call__'s general path (hooks included) instead.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/nn/layers/recurrent.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using ug::nn::LSTMState;
using ug::nn::Module;
using ug::nn::RNNOptions;

/** Module.__call__ with hx=None added to a lone input, so forward returns the full tuple. */
nb::object call_with_state(nb::handle self, nb::args args, nb::kwargs kwargs) {
  if (args.size() == 1 && kwargs.size() == 0) kwargs["hx"] = nb::none();
  return nb::type<Module>().attr("__call__")(self, *args, **kwargs);
}

Tensor as_tensor(nb::handle t, const char* op, const char* what) {
  if (!nb::isinstance<Tensor>(t))
    throw ug::TypeError(std::string("[") + op + "] " + what + " must be a Tensor, got " +
                        nb::cast<std::string>(nb::str(t.type().attr("__name__"))));
  return nb::cast<Tensor>(t);
}

std::optional<LSTMState> lstm_state(nb::handle hx, const char* op) {
  if (hx.is_none()) return std::nullopt;
  if (!(nb::isinstance<nb::tuple>(hx) || nb::isinstance<nb::list>(hx)) || nb::len(hx) != 2)
    throw ug::TypeError(std::string("[") + op + "] hx must be None or a tuple (h, c) of two tensors");
  return LSTMState{as_tensor(hx[0], op, "h"), as_tensor(hx[1], op, "c")};
}

std::optional<Tensor> state(nb::handle hx, const char* op) {
  if (hx.is_none()) return std::nullopt;
  return as_tensor(hx, op, "hx");
}

RNNOptions options(int64_t num_layers, bool bias, bool batch_first, double dropout, bool bidirectional,
                   int64_t proj_size, std::optional<ug::DType> dtype) {
  if (proj_size != 0) throw ug::ValueError("[LSTM] proj_size is not supported; got " + std::to_string(proj_size));
  return RNNOptions{.num_layers = num_layers,
                    .bias = bias,
                    .batch_first = batch_first,
                    .dropout = dropout,
                    .bidirectional = bidirectional,
                    .dtype = dtype};
}

}  // namespace

void bind_nn_recurrent(nb::module_& nn) {
  using namespace ug::nn;
  nb::class_<RNNCellBaseImpl, Module>(nn, "RNNCellBase")
      .def_prop_ro("input_size", &RNNCellBaseImpl::input_size)
      .def_prop_ro("hidden_size", &RNNCellBaseImpl::hidden_size)
      .def_prop_ro("bias", &RNNCellBaseImpl::bias);
  nb::class_<RNNCellImpl, RNNCellBaseImpl>(nn, "RNNCell",
                                           "h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (torch.nn.RNNCell).")
      .def(nb::init<int64_t, int64_t, bool, const std::string&, std::optional<ug::DType>>(), "input_size"_a,
           "hidden_size"_a, "bias"_a = true, "nonlinearity"_a = "tanh", "dtype"_a = nb::none())
      .def_prop_ro("nonlinearity", &RNNCellImpl::nonlinearity)
      .def(
          "forward", [](RNNCellImpl& m, const Tensor& x, nb::handle hx) { return m.forward(x, state(hx, "RNNCell")); },
          "input"_a, "hx"_a = nb::none(), "h' from input [N, in] or [in] and hx (zeros when None).");
  nb::class_<LSTMCellImpl, RNNCellBaseImpl>(nn, "LSTMCell", "One LSTM step, gates i, f, g, o (torch.nn.LSTMCell).")
      .def(nb::init<int64_t, int64_t, bool, std::optional<ug::DType>>(), "input_size"_a, "hidden_size"_a,
           "bias"_a = true, "dtype"_a = nb::none())
      .def("__call__", &call_with_state)
      .def(
          "forward",
          [](LSTMCellImpl& m, const Tensor& x, nb::handle hx) {
            auto [h, c] = m.forward(x, lstm_state(hx, "LSTMCell"));
            return nb::make_tuple(h, c);
          },
          "input"_a, "hx"_a = nb::none(), "(h', c') from input [N, in] or [in] and hx = (h, c) (zeros when None).");
  nb::class_<GRUCellImpl, RNNCellBaseImpl>(nn, "GRUCell", "One GRU step, gates r, z, n (torch.nn.GRUCell).")
      .def(nb::init<int64_t, int64_t, bool, std::optional<ug::DType>>(), "input_size"_a, "hidden_size"_a,
           "bias"_a = true, "dtype"_a = nb::none())
      .def(
          "forward", [](GRUCellImpl& m, const Tensor& x, nb::handle hx) { return m.forward(x, state(hx, "GRUCell")); },
          "input"_a, "hx"_a = nb::none(), "h' from input [N, in] or [in] and hx (zeros when None).");

  nb::class_<RNNBaseImpl, Module>(nn, "RNNBase")
      .def_prop_ro("input_size", &RNNBaseImpl::input_size)
      .def_prop_ro("hidden_size", &RNNBaseImpl::hidden_size)
      .def_prop_ro("num_layers", [](const RNNBaseImpl& m) { return m.options().num_layers; })
      .def_prop_ro("bias", [](const RNNBaseImpl& m) { return m.options().bias; })
      .def_prop_ro("batch_first", [](const RNNBaseImpl& m) { return m.options().batch_first; })
      .def_prop_ro("dropout", [](const RNNBaseImpl& m) { return m.options().dropout; })
      .def_prop_ro("bidirectional", [](const RNNBaseImpl& m) { return m.options().bidirectional; })
      .def("__call__", &call_with_state);
  nb::class_<RNNImpl, RNNBaseImpl>(nn, "RNN",
                                   "Elman RNN with tanh or relu (torch.nn.RNN); forward returns (output, h_n).")
      .def(
          "__init__",
          [](RNNImpl* m, int64_t input_size, int64_t hidden_size, int64_t num_layers, const std::string& nonlinearity,
             bool bias, bool batch_first, double dropout, bool bidirectional, std::optional<ug::DType> dtype) {
            new (m) RNNImpl(input_size, hidden_size,
                            options(num_layers, bias, batch_first, dropout, bidirectional, 0, dtype), nonlinearity);
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "nonlinearity"_a = "tanh", "bias"_a = true,
          "batch_first"_a = false, "dropout"_a = 0.0, "bidirectional"_a = false, "dtype"_a = nb::none())
      .def_prop_ro("nonlinearity", &RNNImpl::nonlinearity)
      .def(
          "forward",
          [](RNNImpl& m, const Tensor& x, nb::handle hx) {
            auto [out, h] = m.forward(x, state(hx, "RNN"));
            return nb::make_tuple(out, h);
          },
          "input"_a, "hx"_a = nb::none());
  nb::class_<LSTMImpl, RNNBaseImpl>(nn, "LSTM", "torch.nn.LSTM; forward returns (output, (h_n, c_n)).")
      .def(
          "__init__",
          [](LSTMImpl* m, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
             double dropout, bool bidirectional, int64_t proj_size, std::optional<ug::DType> dtype) {
            new (m) LSTMImpl(input_size, hidden_size,
                             options(num_layers, bias, batch_first, dropout, bidirectional, proj_size, dtype));
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "bias"_a = true, "batch_first"_a = false,
          "dropout"_a = 0.0, "bidirectional"_a = false, "proj_size"_a = 0, "dtype"_a = nb::none())
      .def(
          "forward",
          [](LSTMImpl& m, const Tensor& x, nb::handle hx) {
            auto [out, st] = m.forward(x, lstm_state(hx, "LSTM"));
            return nb::make_tuple(out, nb::make_tuple(st.first, st.second));
          },
          "input"_a, "hx"_a = nb::none());
  nb::class_<GRUImpl, RNNBaseImpl>(nn, "GRU", "torch.nn.GRU; forward returns (output, h_n).")
      .def(
          "__init__",
          [](GRUImpl* m, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
             double dropout, bool bidirectional, std::optional<ug::DType> dtype) {
            new (m) GRUImpl(input_size, hidden_size,
                            options(num_layers, bias, batch_first, dropout, bidirectional, 0, dtype));
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "bias"_a = true, "batch_first"_a = false,
          "dropout"_a = 0.0, "bidirectional"_a = false, "dtype"_a = nb::none())
      .def(
          "forward",
          [](GRUImpl& m, const Tensor& x, nb::handle hx) {
            auto [out, h] = m.forward(x, state(hx, "GRU"));
            return nb::make_tuple(out, h);
          },
          "input"_a, "hx"_a = nb::none());
}

}  // namespace ugpy
