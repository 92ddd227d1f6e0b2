// PyTorch-style printing: aligned columns, a shared float format (fixed or scientific),
// elided middles for large tensors, and the dtype when it is not the default.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "ug/core/print_options.h"
#include "ug/core/tensor.h"

namespace ug {

namespace {

std::mutex g_options_mutex;
PrintOptions g_options;

struct Formatter {
  DType dtype;
  PrintOptions options;
  bool int_mode = true;  // floats that are all whole numbers print as "1."
  bool sci_mode = false;
  int width = 1;

  Formatter(const std::vector<double>& values, DType t, const PrintOptions& o) : dtype(t), options(o) {
    if (!is_floating(t)) {
      for (double v : values) width = std::max<int>(width, static_cast<int>(format(v).size()));
      return;
    }
    double max_abs = 0, min_abs = INFINITY;
    bool any_finite = false;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      any_finite = true;
      if (v != std::nearbyint(v)) int_mode = false;
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != 0) min_abs = std::min(min_abs, std::fabs(v));
    }
    if (any_finite && min_abs != INFINITY)  // torch 2.13's rule, unless the options force it
      sci_mode = options.sci_mode.value_or(max_abs / min_abs > 1000.0 || max_abs > 1e8 || min_abs < 1e-4);
    for (double v : values) width = std::max<int>(width, static_cast<int>(format(v).size()));
  }

  std::string format(double v) const {
    char buf[64];
    if (dtype == DType::Bool) return v != 0 ? "True" : "False";
    if (dtype == DType::UInt64) {  // past int64's range; the value is read as a double
      std::snprintf(buf, sizeof buf, "%.0f", v);
      return buf;
    }
    if (!is_floating(dtype)) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
      return buf;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_mode) std::snprintf(buf, sizeof buf, "%.*e", options.precision, v);
    else if (int_mode) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.*f", options.precision, v);
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(static_cast<size_t>(std::max<int>(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
};

std::complex<double> value_at(const Tensor& t, int64_t offset) {
  std::complex<double> v = 0;
  UG_DISPATCH_ALL_AND_SHELLS(t.dtype(), "print",
                             { v = to_complex_double(static_cast<const scalar_t*>(t.storage()->data())[offset]); });
  return v;
}

/** torch's layout of complex elements: the real part padded to its column, then the imaginary
 *  part with its sign and "j", each part formatted by its own formatter. */
struct ElementFormat {
  Formatter real;
  std::optional<Formatter> imag;
  int width() const { return imag ? real.width + imag->width + 1 : real.width; }
  std::string operator()(std::complex<double> v) const {
    if (!imag) return real.padded(v.real());
    std::string im = imag->format(v.imag()) + "j";
    return real.padded(v.real()) + (im[0] == '-' || im[0] == '+' ? "" : "+") + im;
  }
};

/** Indices shown along a dim of size n, `edge` at each end when summarized. -1 marks the elision. */
std::vector<int64_t> shown(int64_t n, bool summarize, int64_t edge) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * edge) {
    for (int64_t i = 0; i < edge; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = n - edge; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collect(const Tensor& t, int64_t dim, int64_t offset, bool summarize, int64_t edge, std::vector<double>& real,
             std::vector<double>& imag) {
  if (dim == t.dim()) {
    const std::complex<double> v = value_at(t, offset);
    real.push_back(v.real());
    imag.push_back(v.imag());
    return;
  }
  for (int64_t i : shown(t.size(dim), summarize, edge))
    if (i >= 0) collect(t, dim + 1, offset + i * t.stride(dim), summarize, edge, real, imag);
}

void render(std::ostream& os, const Tensor& t, const ElementFormat& f, int64_t dim, int64_t offset, bool summarize,
            int indent) {
  if (dim == t.dim()) {
    os << f(value_at(t, offset));
    return;
  }
  os << '[';
  const PrintOptions& options = f.real.options;
  std::vector<int64_t> idx = shown(t.size(dim), summarize, options.edgeitems);
  const bool last_dim = dim == t.dim() - 1;
  // torch's wrapping: as many elements (each its width and ", ") as fit the line after the indent
  const int64_t per_line = std::max<int64_t>(1, (options.linewidth - indent - dim) / (f.width() + 2));
  for (size_t k = 0; k < idx.size(); ++k) {
    if (k > 0) {
      os << ',';
      if (last_dim) {
        if (static_cast<int64_t>(k) % per_line == 0)
          os << '\n' << std::string(static_cast<size_t>(indent + dim + 1), ' ');
        else os << ' ';
      } else {
        os << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n');
        os << std::string(static_cast<size_t>(indent + dim + 1), ' ');
      }
    }
    if (idx[k] < 0) os << (last_dim ? " ..." : "...");
    else render(os, t, f, dim + 1, offset + idx[k] * t.stride(dim), summarize, indent);
  }
  os << ']';
}

}  // namespace

std::string tensor_string(const Tensor& t, const std::vector<std::string>& extra_suffixes) {
  if (const BatchInfo* b = t.impl().batch())
    return "BatchedTensor(level=" + std::to_string(b->level) + ", " + Tensor(b->physical).to_string() + ")";
  std::ostringstream os;
  os << "tensor(";
  const PrintOptions options = print_options();
  const bool summarize = t.numel() > options.threshold;
  if (t.numel() == 0) {
    os << "[]";
  } else {
    std::vector<double> real, imag;
    collect(t, 0, t.storage_offset(), summarize, options.edgeitems, real, imag);
    const DType part = to_real(t.dtype());
    ElementFormat f{Formatter(real, part, options), std::nullopt};
    if (is_complex(t.dtype())) f.imag.emplace(imag, part, options);
    render(os, t, f, 0, t.storage_offset(), summarize, 7);
  }
  std::vector<std::string> suffixes;
  if (summarize || (t.numel() == 0 && t.dim() != 1)) {
    std::string shape = "shape=(";
    for (int64_t d = 0; d < t.dim(); ++d) shape += (d ? ", " : "") + std::to_string(t.size(d));
    suffixes.push_back(shape + (t.dim() == 1 ? ",)" : ")"));
  }
  const DType dt = t.dtype();
  if (dt != DType::Float32 && dt != DType::Int64 && dt != DType::Bool && dt != DType::Complex64)
    suffixes.push_back("dtype=ug." + std::string(dtype_name(dt)));
  if (t.device().type != DeviceType::CPU) {
    std::ostringstream device;
    device << "device='" << t.device() << "'";
    suffixes.push_back(device.str());
  }
  suffixes.insert(suffixes.end(), extra_suffixes.begin(), extra_suffixes.end());
  // torch's _add_suffixes: a suffix that would pass the line width starts a new line
  std::string out = os.str();
  const size_t newline = out.rfind('\n');
  int64_t last_line = static_cast<int64_t>(newline == std::string::npos ? out.size() + 2 : out.size() - newline + 1);
  for (const std::string& suffix : suffixes) {
    const auto len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > options.linewidth) {
      out += ",\n       " + suffix;
      last_line = 7 + len;
    } else {
      out += ", " + suffix;
      last_line += len + 2;
    }
  }
  return out + ")";
}

std::string Tensor::to_string() const { return tensor_string(*this, {}); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

void set_print_options(const PrintOptions& options) {
  if (options.precision < 0 || options.threshold < 0 || options.edgeitems < 0 || options.linewidth < 1)
    fail("[set_printoptions] precision, threshold and edgeitems must be non-negative and linewidth positive, got ",
         options.precision, ", ", options.threshold, ", ", options.edgeitems, " and ", options.linewidth);
  std::lock_guard<std::mutex> lock(g_options_mutex);
  g_options = options;
}

PrintOptions print_options() {
  std::lock_guard<std::mutex> lock(g_options_mutex);
  return g_options;
}

}  // namespace ug
