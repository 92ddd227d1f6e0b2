// PyTorch-style printing: aligned columns, a shared float format (fixed or scientific),
// elided middles for large tensors, and the dtype when it is not the default.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "ug/core/tensor.h"

namespace ug {

namespace {

constexpr int64_t kThreshold = 1000;  // elements above which the middle is elided
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  DType dtype;
  bool int_mode = true;  // floats that are all whole numbers print as "1."
  bool sci_mode = false;
  int width = 1;

  explicit Formatter(const std::vector<double>& values, DType t) : dtype(t) {
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
    if (any_finite && min_abs != INFINITY)
      sci_mode = int_mode ? max_abs > 1e8 : (max_abs / min_abs > 1000.0 || max_abs > 1e8 || min_abs < 1e-4);
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
    if (sci_mode) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(static_cast<size_t>(std::max<int>(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
};

double value_at(const Tensor& t, int64_t offset) {
  double v = 0;
  UG_DISPATCH_ALL_AND_SHELLS(t.dtype(), "print", {
    v = static_cast<double>(static_cast<acc_t<scalar_t>>(static_cast<const scalar_t*>(t.storage()->data())[offset]));
  });
  return v;
}

/** Indices shown along a dim of size n. -1 marks the elision. */
std::vector<int64_t> shown(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collect(const Tensor& t, int64_t dim, int64_t offset, bool summarize, std::vector<double>& out) {
  if (dim == t.dim()) {
    out.push_back(value_at(t, offset));
    return;
  }
  for (int64_t i : shown(t.size(dim), summarize))
    if (i >= 0) collect(t, dim + 1, offset + i * t.stride(dim), summarize, out);
}

void render(std::ostream& os, const Tensor& t, const Formatter& f, int64_t dim, int64_t offset, bool summarize,
            int indent) {
  if (dim == t.dim()) {
    os << f.padded(value_at(t, offset));
    return;
  }
  os << '[';
  std::vector<int64_t> idx = shown(t.size(dim), summarize);
  const bool last_dim = dim == t.dim() - 1;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (k > 0) {
      os << ',';
      if (last_dim) {
        os << ' ';
      } else {
        os << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n');
        os << std::string(static_cast<size_t>(indent + dim + 1), ' ');
      }
    }
    if (idx[k] < 0) os << "...";
    else render(os, t, f, dim + 1, offset + idx[k] * t.stride(dim), summarize, indent);
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (const BatchInfo* b = impl().batch())
    return "BatchedTensor(level=" + std::to_string(b->level) + ", " + Tensor(b->physical).to_string() + ")";
  std::ostringstream os;
  os << "tensor(";
  const bool summarize = numel() > kThreshold;
  if (numel() == 0) {
    os << "[]";
  } else {
    std::vector<double> values;
    collect(*this, 0, storage_offset(), summarize, values);
    Formatter f(values, dtype());
    render(os, *this, f, 0, storage_offset(), summarize, 7);
  }
  if (summarize || (numel() == 0 && dim() != 1)) {
    os << ", shape=(";
    for (int64_t d = 0; d < dim(); ++d) os << (d ? ", " : "") << size(d);
    os << (dim() == 1 ? ",)" : ")");
  }
  if (dtype() != DType::Float32 && dtype() != DType::Int64 && dtype() != DType::Bool)
    os << ", dtype=ug." << dtype_name(dtype());
  if (device().type != DeviceType::CPU) os << ", device='" << device() << "'";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ug
