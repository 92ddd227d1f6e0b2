// ug._C._fft: ug::fft (ops/fft.h) under torch.fft's names and signatures (unigrad/fft.py is the
// ug.fft module), and ug.stft / ug.istft in the main module.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <string>

#include "bindings.h"
#include "ug/ops/fft.h"

namespace ugpy {

namespace {

using ug::Tensor;
using namespace nb::literals;
using NormArg = std::optional<std::string_view>;
using OneDim = Tensor (*)(const Tensor&, std::optional<int64_t>, int64_t, ug::fft::NormMode);
using TwoDim = Tensor (*)(const Tensor&, ug::fft::OptDims, const ug::Dims&, ug::fft::NormMode);
using NDim = Tensor (*)(const Tensor&, ug::fft::OptDims, ug::fft::OptDims, ug::fft::NormMode);

/** An int argument or None; anything else (a float n) is refused naming the function. */
std::optional<int64_t> int_or_none(nb::handle h, const char* what, const std::string& fname) {
  if (h.is_none()) return std::nullopt;
  if (PyBool_Check(h.ptr()) || (!PyLong_Check(h.ptr()) && !nb::hasattr(h, "__index__")))
    ug::fail<ug::TypeError>("[", fname, "] ", what, " must be an int or None, got ",
                            nb::cast<std::string>(nb::str(h.type())));
  return nb::cast<int64_t>(h.attr("__index__")());
}

const char* const kNormDoc = "; norm: \"backward\" (default), \"ortho\" or \"forward\".";

void def_1d(nb::module_& m, const char* name, OneDim f, const char* doc) {
  const std::string fname = std::string("fft.") + name;
  m.def(
      name,
      [f, fname](const Tensor& x, nb::handle n, int64_t dim, NormArg norm) {
        return f(x, int_or_none(n, "n", fname), dim, norm);
      },
      "input"_a, "n"_a = nb::none(), "dim"_a = -1, "norm"_a = nb::none(), (std::string(doc) + kNormDoc).c_str());
}

void def_2d(nb::module_& m, const char* name, TwoDim f, const char* doc) {
  const std::string fname = std::string("fft.") + name;
  m.def(
      name,
      [f, fname](const Tensor& x, nb::handle s, nb::handle dim, NormArg norm) {
        return f(x, optional_sizes(s, fname.c_str()), dims_from_sequence(dim, fname.c_str()), norm);
      },
      "input"_a, "s"_a = nb::none(), "dim"_a = nb::make_tuple(-2, -1), "norm"_a = nb::none(),
      (std::string(doc) + kNormDoc).c_str());
}

void def_nd(nb::module_& m, const char* name, NDim f, const char* doc) {
  const std::string fname = std::string("fft.") + name;
  m.def(
      name,
      [f, fname](const Tensor& x, nb::handle s, nb::handle dim, NormArg norm) {
        return f(x, optional_sizes(s, fname.c_str()), optional_sizes(dim, fname.c_str()), norm);
      },
      "input"_a, "s"_a = nb::none(), "dim"_a = nb::none(), "norm"_a = nb::none(),
      (std::string(doc) + kNormDoc).c_str());
}

}  // namespace

void bind_fft(nb::module_& m) {
  namespace F = ug::fft;
  nb::module_ f = m.def_submodule("_fft", "ug::fft, the ug.fft module (torch.fft)");
  def_1d(f, "fft", &F::fft, "The DFT along dim; n: the signal's length (the input trimmed or zero-padded)");
  def_1d(f, "ifft", &F::ifft, "The inverse DFT along dim");
  def_1d(f, "rfft", &F::rfft, "The n // 2 + 1 non-redundant DFT outputs of a real input");
  def_1d(f, "irfft", &F::irfft, "rfft's inverse: a real signal of n points (default 2 (m - 1))");
  def_1d(f, "hfft", &F::hfft, "The DFT of a Hermitian signal given by its first half: real, n points");
  def_1d(f, "ihfft", &F::ihfft, "hfft's inverse: the first n // 2 + 1 outputs of a real input's ifft");
  def_2d(f, "fft2", &F::fft2, "fftn over dim (default the last two)");
  def_2d(f, "ifft2", &F::ifft2, "ifftn over dim (default the last two)");
  def_2d(f, "rfft2", &F::rfft2, "rfftn over dim (default the last two)");
  def_2d(f, "irfft2", &F::irfft2, "irfftn over dim (default the last two)");
  def_2d(f, "hfft2", &F::hfft2, "hfftn over dim (default the last two)");
  def_2d(f, "ihfft2", &F::ihfft2, "ihfftn over dim (default the last two)");
  def_nd(f, "fftn", &F::fftn, "The DFT over dim (default: the last len(s) dims, or all); s: the signal sizes");
  def_nd(f, "ifftn", &F::ifftn, "The inverse DFT over dim");
  def_nd(f, "rfftn", &F::rfftn, "The DFT of a real input over dim, the last of them halved to n // 2 + 1");
  def_nd(f, "irfftn", &F::irfftn, "rfftn's inverse: a real signal (s[-1] default 2 (m - 1))");
  def_nd(f, "hfftn", &F::hfftn, "The DFT of a Hermitian signal given by its half over the last dim: real");
  def_nd(f, "ihfftn", &F::ihfftn, "hfftn's inverse: a real input's ifftn, halved over the last dim");
  auto freq_doc = [](const char* what) { return std::string(what) + " of n points spaced d apart"; };
  f.def(
      "fftfreq",
      [](int64_t n, double d, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool requires_grad) {
        Tensor out = ug::fft::fftfreq(n, d, {dtype, device.value_or(ug::Device())});
        out.requires_grad_(requires_grad);
        return out;
      },
      "n"_a, "d"_a = 1.0, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      freq_doc("The DFT's sample frequencies [0, 1, ..., -1] / (d n)").c_str());
  f.def(
      "rfftfreq",
      [](int64_t n, double d, std::optional<ug::DType> dtype, std::optional<ug::Device> device, bool requires_grad) {
        Tensor out = ug::fft::rfftfreq(n, d, {dtype, device.value_or(ug::Device())});
        out.requires_grad_(requires_grad);
        return out;
      },
      "n"_a, "d"_a = 1.0, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      freq_doc("rfft's sample frequencies [0, 1, ..., n // 2] / (d n)").c_str());
  f.def(
      "fftshift", [](const Tensor& x, nb::handle dim) { return F::fftshift(x, optional_sizes(dim, "fft.fftshift")); },
      "input"_a, "dim"_a = nb::none(), "The zero frequency rolled to the middle of each dim (default: all).");
  f.def(
      "ifftshift",
      [](const Tensor& x, nb::handle dim) { return F::ifftshift(x, optional_sizes(dim, "fft.ifftshift")); }, "input"_a,
      "dim"_a = nb::none(), "fftshift's inverse.");

  m.def(
      "stft",
      [](const Tensor& x, int64_t n_fft, nb::handle hop, nb::handle win, std::optional<Tensor> window, bool center,
         std::string_view pad_mode, bool normalized, std::optional<bool> onesided, std::optional<bool> return_complex) {
        return ug::stft(x, n_fft, int_or_none(hop, "hop_length", "stft"), int_or_none(win, "win_length", "stft"),
                        window, center, pad_mode, normalized, onesided, return_complex.value_or(true));
      },
      "input"_a, "n_fft"_a, "hop_length"_a = nb::none(), "win_length"_a = nb::none(), "window"_a = nb::none(),
      "center"_a = true, "pad_mode"_a = "reflect", "normalized"_a = false, "onesided"_a = nb::none(),
      "return_complex"_a = nb::none(),
      "The short-time Fourier transform (torch.stft): [batch?, freqs, frames], complex (return_complex=False: "
      "its real view [..., 2]).");
  m.def(
      "istft",
      [](const Tensor& x, int64_t n_fft, nb::handle hop, nb::handle win, std::optional<Tensor> window, bool center,
         bool normalized, std::optional<bool> onesided, nb::handle length, bool return_complex) {
        return ug::istft(x, n_fft, int_or_none(hop, "hop_length", "istft"), int_or_none(win, "win_length", "istft"),
                         window, center, normalized, onesided, int_or_none(length, "length", "istft"), return_complex);
      },
      "input"_a, "n_fft"_a, "hop_length"_a = nb::none(), "win_length"_a = nb::none(), "window"_a = nb::none(),
      "center"_a = true, "normalized"_a = false, "onesided"_a = nb::none(), "length"_a = nb::none(),
      "return_complex"_a = false,
      "stft's inverse by overlap-add (torch.istft); the window's squared overlap must not vanish.");
}

}  // namespace ugpy
