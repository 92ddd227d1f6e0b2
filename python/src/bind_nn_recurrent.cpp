// ug.nn's recurrent layers: RNN, LSTM, GRU and their cells, with torch.nn's arguments.
// forward(input, hx=None) returns PyTorch's tuples. Module's one-tensor call is the C++
// path that Sequential uses and returns the output alone, so the layers that return tuples
// send a lone input through Module.__call__'s general path (hooks included) instead.
// ug.nn.utils.rnn's functions are here too (_C.nn._rnn); its PackedSequence is a Python
// named tuple, as torch's, which the caster below turns into ug::nn::utils::rnn::PackedSequence.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/nn/layers/recurrent.h"

namespace ugpy {
namespace {
nb::object packed_sequence_type() { return nb::module_::import_("unigrad.nn.utils.rnn").attr("PackedSequence"); }
}  // namespace
}  // namespace ugpy

namespace nanobind::detail {

template <> struct type_caster<ug::nn::utils::rnn::PackedSequence> {
  NB_TYPE_CASTER(ug::nn::utils::rnn::PackedSequence, const_name("unigrad.nn.utils.rnn.PackedSequence"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      if (!isinstance(src, ugpy::packed_sequence_type())) return false;
      auto get = [&](const char* name) {
        object t = src.attr(name);
        return t.is_none() ? ug::Tensor() : cast<ug::Tensor>(t);
      };
      value = {get("data"), get("batch_sizes"), get("sorted_indices"), get("unsorted_indices")};
      return true;
    } catch (...) {
      PyErr_Clear();
      return false;
    }
  }
  static handle from_cpp(const Value& p, rv_policy, cleanup_list*) noexcept {
    auto opt = [](const ug::Tensor& t) { return t.defined() ? cast(t) : none(); };
    try {
      return ugpy::packed_sequence_type()(p.data, p.batch_sizes, opt(p.sorted_indices), opt(p.unsorted_indices))
          .release();
    } catch (python_error& e) {
      e.restore();
      return handle();
    }
  }
};

}  // namespace nanobind::detail

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using ug::nn::LSTMState;
using ug::nn::Module;
using ug::nn::RNNOptions;
using ug::nn::utils::rnn::PackedSequence;

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
  return RNNOptions{.num_layers = num_layers,
                    .bias = bias,
                    .batch_first = batch_first,
                    .dropout = dropout,
                    .bidirectional = bidirectional,
                    .proj_size = proj_size,
                    .dtype = dtype};
}

/** lengths as torch takes them: a tensor or a sequence of ints. */
std::vector<int64_t> lengths_from_python(nb::handle lengths, const char* op) {
  if (nb::isinstance<Tensor>(lengths)) {
    const Tensor t = nb::cast<Tensor>(lengths);
    if (t.dim() != 1 || !ug::is_integral(t.dtype()))
      throw ug::RuntimeError(std::string("[") + op + "] 'lengths' argument should be a 1-D integer tensor, got shape " +
                             ug::shape_str(t.shape()) + " of dtype " + std::string(ug::dtype_name(t.dtype())));
    const Tensor c = t.to(ug::Device()).to(ug::DType::Int64).contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  }
  std::vector<int64_t> out;
  if (!nb::try_cast(lengths, out))
    throw ug::TypeError(std::string("[") + op +
                        "] 'lengths' should be a 1-D integer tensor or a sequence of ints, got " +
                        nb::cast<std::string>(nb::repr(lengths)));
  return out;
}

/** torch's sequences argument: a list of tensors or one tensor, split along dim 0. */
std::vector<Tensor> sequences_from_python(nb::handle sequences) {
  if (nb::isinstance<Tensor>(sequences)) return nb::cast<Tensor>(sequences).unbind(0);
  return nb::cast<std::vector<Tensor>>(sequences);
}

void bind_rnn_utils(nb::module_& nn) {
  namespace r = ug::nn::utils::rnn;
  nb::module_ m = nn.def_submodule("_rnn", "torch.nn.utils.rnn's functions (unigrad.nn.utils.rnn wraps them)");
  m.def(
      "pack_padded_sequence",
      [](const Tensor& input, nb::handle lengths, bool batch_first, bool enforce_sorted) {
        return r::pack_padded_sequence(input, lengths_from_python(lengths, "pack_padded_sequence"), batch_first,
                                       enforce_sorted);
      },
      "input"_a, "lengths"_a, "batch_first"_a = false, "enforce_sorted"_a = true,
      "Packs input [T, B, *] ([B, T, *] when batch_first) of sequences lengths[b] long.");
  m.def(
      "pad_packed_sequence",
      [](const PackedSequence& sequence, bool batch_first, double padding_value, std::optional<int64_t> total_length) {
        return r::pad_packed_sequence(sequence, batch_first, padding_value, total_length);
      },
      "sequence"_a, "batch_first"_a = false, "padding_value"_a = 0.0, "total_length"_a = nb::none(),
      "(padded, lengths) of a PackedSequence, in the original batch order.");
  m.def(
      "pad_sequence",
      [](nb::handle sequences, bool batch_first, double padding_value, const std::string& padding_side) {
        return r::pad_sequence(sequences_from_python(sequences), batch_first, padding_value, padding_side);
      },
      "sequences"_a, "batch_first"_a = false, "padding_value"_a = 0.0, "padding_side"_a = "right",
      "Stacks sequences [L_i, *] into [max L, B, *] ([B, max L, *] when batch_first), padded.");
  m.def(
      "pack_sequence",
      [](nb::handle sequences, bool enforce_sorted) {
        return r::pack_sequence(sequences_from_python(sequences), enforce_sorted);
      },
      "sequences"_a, "enforce_sorted"_a = true, "Packs a list of sequences [L_i, *].");
  m.def(
      "unpad_sequence",
      [](const Tensor& padded_sequences, nb::handle lengths, bool batch_first) {
        const std::vector<int64_t> lens = lengths_from_python(lengths, "unpad_sequence");
        Tensor t = ug::empty({static_cast<int64_t>(lens.size())}, {.dtype = ug::DType::Int64, .device = {}});
        std::copy(lens.begin(), lens.end(), t.data_ptr<int64_t>());
        return r::unpad_sequence(padded_sequences, t, batch_first);
      },
      "padded_sequences"_a, "lengths"_a, "batch_first"_a = false, "The sequences of a padded batch, as a list.");
  m.def("unpack_sequence", &r::unpack_sequence, "packed_sequences"_a, "The sequences of a PackedSequence, as a list.");
}

}  // namespace

void bind_nn_recurrent(nb::module_& nn) {
  using namespace ug::nn;
  bind_rnn_utils(nn);
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
          [](RNNImpl& m, const PackedSequence& x, nb::handle hx) {
            auto [out, h] = m.forward(x, state(hx, "RNN"));
            return nb::make_tuple(out, h);
          },
          "input"_a, "hx"_a = nb::none())
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
      .def_prop_ro("proj_size", [](const LSTMImpl& m) { return m.options().proj_size; })
      .def(
          "forward",
          [](LSTMImpl& m, const PackedSequence& x, nb::handle hx) {
            auto [out, st] = m.forward(x, lstm_state(hx, "LSTM"));
            return nb::make_tuple(out, nb::make_tuple(st.first, st.second));
          },
          "input"_a, "hx"_a = nb::none())
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
          [](GRUImpl& m, const PackedSequence& x, nb::handle hx) {
            auto [out, h] = m.forward(x, state(hx, "GRU"));
            return nb::make_tuple(out, h);
          },
          "input"_a, "hx"_a = nb::none())
      .def(
          "forward",
          [](GRUImpl& m, const Tensor& x, nb::handle hx) {
            auto [out, h] = m.forward(x, state(hx, "GRU"));
            return nb::make_tuple(out, h);
          },
          "input"_a, "hx"_a = nb::none());
}

}  // namespace ugpy
