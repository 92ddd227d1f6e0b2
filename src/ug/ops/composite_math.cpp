// torch's products, matrix builders, statistics, elementwise helpers and scatters of
// composite_math.h, written with other ops: their derivatives, batching rules, forward mode,
// export and compiled forms are those ops'.
#include "ug/ops/composite_math.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>
#include <tuple>
#include <type_traits>

#include "ug/core/type_info.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/composite.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/opmath.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

constexpr double kPi = std::numbers::pi;

void same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail<RuntimeError>("[", op, "] needs both inputs of one dtype, got ", a.dtype(), " ", a.shape(), " and ", b.dtype(),
                       " ", b.shape());
}

/** An integer or bool input in the floating dtype torch computes its float result in. */
Tensor as_floating(const Tensor& x) { return x.to(to_floating(x.dtype())); }

/** x's last two dims moved to dims d1 and d2 of the result (the others keep their order). */
Tensor place_last_two(const Tensor& x, int64_t d1, int64_t d2) {
  const int64_t n = x.dim();
  Dims order(static_cast<size_t>(n), -1);
  order[static_cast<size_t>(d1)] = n - 2;
  order[static_cast<size_t>(d2)] = n - 1;
  for (int64_t i = 0, next = 0; i < n; ++i)
    if (order[static_cast<size_t>(i)] < 0) order[static_cast<size_t>(i)] = next++;
  return x.permute(order);
}

Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, Options opts, bool lower, const char* op) {
  if (row < 0 || col < 0) fail<RuntimeError>("[", op, "] row and col must be non-negative, got ", row, " and ", col);
  const DType dtype = opts.dtype.value_or(DType::Int64);
  if (dtype != DType::Int64 && dtype != DType::Int32)
    fail<RuntimeError>("[", op, "] dtype must be int64 or int32, got ", dtype);
  const Options index{.dtype = DType::Int64, .device = opts.device};
  const Tensor offsets = arange(col, index).unsqueeze(0) - arange(row, index).unsqueeze(1);
  const Tensor inside = lower ? offsets <= offset : offsets >= offset;
  return nonzero(inside).t().contiguous().to(dtype);
}

std::vector<Tensor> split_along(const Tensor& x, int64_t sections, int64_t dim, int64_t min_dims, const char* op) {
  if (x.dim() < min_dims)
    fail<RuntimeError>("[", op, "] needs at least ", min_dims, " dims, got shape ", x.shape(), " (", x.dtype(), ")");
  if (sections <= 0 || x.size(dim) % sections != 0)
    fail<RuntimeError>("[", op, "] cannot split dim ", dim, " of size ", x.size(dim), " of shape ", x.shape(), " into ",
                       sections, " equal parts");
  return tensor_split(x, sections, dim);
}

std::vector<Tensor> split_at(const Tensor& x, const Dims& indices, int64_t dim, int64_t min_dims, const char* op) {
  if (x.dim() < min_dims)
    fail<RuntimeError>("[", op, "] needs at least ", min_dims, " dims, got shape ", x.shape(), " (", x.dtype(), ")");
  return tensor_split(x, indices, dim);
}

/** int64 positions along dim of src's elements in x: `positions` (1-d) broadcast over src's
 *  other dims. */
Tensor positions_like(const Tensor& src, int64_t dim, const Tensor& positions) {
  Dims line(static_cast<size_t>(src.dim()), 1);
  line[static_cast<size_t>(dim)] = positions.numel();
  return positions.to(DType::Int64).reshape(line).expand(Dims(src.shape().begin(), src.shape().end()));
}

/** erfc(x) for x >= 2.5: exp(-x^2) / sqrt(pi) over the continued fraction x + (1/2) / (x + 1 /
 *  (x + (3/2) / ...)), 40 levels, evaluated from the bottom (relative error ~2e-16 from 2.5 on
 *  for the fraction). */
Tensor erfc_fraction(const Tensor& x) {
  Tensor t = x;
  for (int k = 40; k >= 1; --k) t = x + (k / 2.0) / t;
  // exp(-x^2) as exp(-h^2) exp(-(x - h)(x + h)) with h = x to 12 bits after the point: h^2 is
  // exact, so the rounding of x^2 (relative x^2 eps, 8e-14 at x = 26) stays out.
  const Tensor h = (x * 4096.0).floor() / 4096.0;
  return (-(h * h)).exp() * (-((x - h) * (x + h))).exp() / (t * std::sqrt(kPi));
}

Tensor pick_nan_aware(const Tensor& a, const Tensor& b, bool larger, const char* op) {
  if (a.dtype() == DType::Bool || b.dtype() == DType::Bool)
    fail<RuntimeError>("[", op, "] does not take bool tensors, got ", a.dtype(), " and ", b.dtype());
  Tensor take_a = larger ? a >= b : a <= b;
  if (b.is_floating_point()) take_a = take_a.logical_or(isnan(b));
  return where(take_a, a, b);
}

}  // namespace

// ---- products and matrices

Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b) {
  same_dtype(a, b, "tensordot");
  if (dims_a.size() != dims_b.size())
    fail<RuntimeError>("[tensordot] both dim lists must have one length, got ", dims_a.size(), " and ", dims_b.size());
  std::vector<bool> summed_a(static_cast<size_t>(a.dim())), summed_b(static_cast<size_t>(b.dim()));
  Dims order_a, order_b, kept_a, kept_b, out;
  int64_t contracted = 1;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    const int64_t da = wrap_dim(dims_a[i], a.dim(), "tensordot"), db = wrap_dim(dims_b[i], b.dim(), "tensordot");
    if (a.size(da) != b.size(db))
      fail<RuntimeError>("[tensordot] contracted dims differ: dim ", da, " of ", a.shape(), " and dim ", db, " of ",
                         b.shape());
    if (summed_a[static_cast<size_t>(da)] || summed_b[static_cast<size_t>(db)])
      fail<RuntimeError>("[tensordot] a dim appears twice in dims (", da, ", ", db, ")");
    summed_a[static_cast<size_t>(da)] = summed_b[static_cast<size_t>(db)] = true;
    order_b.push_back(db);
    kept_a.push_back(da);
    contracted *= a.size(da);
  }
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!summed_a[static_cast<size_t>(d)]) {
      order_a.push_back(d);
      out.push_back(a.size(d));
    }
  const int64_t rows = numel_of(Shape(out.begin(), out.end()));
  for (int64_t d : kept_a) order_a.push_back(d);
  for (int64_t d = 0; d < b.dim(); ++d)
    if (!summed_b[static_cast<size_t>(d)]) {
      order_b.push_back(d);
      kept_b.push_back(b.size(d));
      out.push_back(b.size(d));
    }
  const int64_t cols = numel_of(Shape(kept_b.begin(), kept_b.end()));
  const Tensor product =
      a.permute(order_a).reshape({rows, contracted}).mm(b.permute(order_b).reshape({contracted, cols}));
  return product.reshape(out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  if (dims < 0) fail<RuntimeError>("[tensordot] dims must be non-negative, got ", dims);
  if (dims > a.dim() || dims > b.dim())
    fail<RuntimeError>("[tensordot] cannot contract ", dims, " dims of shapes ", a.shape(), " and ", b.shape());
  Dims da, db;
  for (int64_t i = 0; i < dims; ++i) {
    da.push_back(a.dim() - dims + i);
    db.push_back(i);
  }
  return tensordot(a, b, da, db);
}

Tensor inner(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) return a * b;
  if (a.size(-1) != b.size(-1))
    fail<RuntimeError>("[inner] the last dims must match, got shapes ", a.shape(), " and ", b.shape());
  return tensordot(a, b, Dims{-1}, Dims{-1});
}

Tensor mv(const Tensor& mat, const Tensor& vec) {
  if (autocast::active()) [[unlikely]] {  // not on torch's autocast lists: its inputs' dtype
    autocast::ExcludeGuard inputs_dtype;
    return mv(mat, vec);
  }
  if (mat.dim() != 2 || vec.dim() != 1 || mat.size(1) != vec.size(0))
    fail<RuntimeError>("[mv] needs a 2-d matrix and a 1-d vector of its column count, got shapes ", mat.shape(),
                       " and ", vec.shape());
  same_dtype(mat, vec, "mv");
  return mat.matmul(vec);
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) {
  if (autocast::active()) [[unlikely]] {  // not on torch's autocast lists: its inputs' dtype
    autocast::ExcludeGuard inputs_dtype;
    return addmv(input, mat, vec, beta, alpha);
  }
  if (mat.dim() != 2 || vec.dim() != 1 || mat.size(1) != vec.size(0) || input.dim() > 1)
    fail<RuntimeError>(
        "[addmv] needs input of at most 1 dim, a 2-d matrix and a 1-d vector of its column count, "
        "got shapes ",
        input.shape(), ", ", mat.shape(), " and ", vec.shape());
  same_dtype(input, mat, "addmv");
  same_dtype(mat, vec, "addmv");
  // addmm with the vector as a column: beta = 0 ignores input there too
  const Tensor column = input.dim() == 1 ? input.unsqueeze(1) : input;
  return addmm(column, mat, vec.unsqueeze(1), beta, alpha).squeeze(Dims{1});
}

Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, Scalar beta, Scalar alpha) {
  if (autocast::active()) [[unlikely]] {  // not on torch's autocast lists: its inputs' dtype
    autocast::ExcludeGuard inputs_dtype;
    return addr(input, vec1, vec2, beta, alpha);
  }
  if (vec1.dim() != 1 || vec2.dim() != 1)
    fail<RuntimeError>("[addr] needs two 1-d vectors, got shapes ", vec1.shape(), " and ", vec2.shape());
  return addmm(input, vec1.unsqueeze(1), vec2.unsqueeze(0), beta, alpha);
}

Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta, Scalar alpha) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Lower, addbmm, input, batch1, batch2, beta, alpha);
  if (batch1.dim() != 3 || batch2.dim() != 3 || batch1.size(0) != batch2.size(0) || batch1.size(2) != batch2.size(1))
    fail<RuntimeError>("[addbmm] needs batches [b, n, m] and [b, m, p], got shapes ", batch1.shape(), " and ",
                       batch2.shape());
  same_dtype(input, batch1, "addbmm");
  same_dtype(batch1, batch2, "addbmm");
  // sum_b batch1[b] @ batch2[b] is one product: [n, b * m] @ [b * m, p]
  const int64_t b = batch1.size(0), n = batch1.size(1), m = batch1.size(2);
  return addmm(input, batch1.permute({1, 0, 2}).reshape({n, b * m}), batch2.reshape({b * m, batch2.size(2)}), beta,
               alpha);
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  if (a.dim() != 1 || b.dim() != 1 || a.size(0) != b.size(0))
    fail<RuntimeError>("[vdot] needs two 1-d tensors of one length, got shapes ", a.shape(), " and ", b.shape());
  same_dtype(a, b, "vdot");
  return dot(a, b);
}

Tensor chain_matmul(const std::vector<Tensor>& matrices) {
  if (matrices.empty()) fail<RuntimeError>("[chain_matmul] needs at least one matrix");
  for (const Tensor& m : matrices)
    if (m.dim() != 2) fail<RuntimeError>("[chain_matmul] needs 2-d matrices, got shape ", m.shape());
  return matrices.size() == 1 ? matrices[0] : linalg::multi_dot(matrices);
}

Tensor block_diag(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return zeros({1, 0});
  DType dtype = tensors[0].dtype();
  int64_t cols = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() > 2) fail<RuntimeError>("[block_diag] needs tensors of at most 2 dims, got shape ", t.shape());
    dtype = promote_types(dtype, t.dtype());
    cols += t.dim() == 2 ? t.size(1) : t.numel();
  }
  std::vector<Tensor> rows;
  int64_t left = 0;
  for (const Tensor& t : tensors) {
    const Tensor block = t.dim() == 2 ? t : t.reshape({1, -1});
    const int64_t width = block.size(1);
    rows.push_back(pad(block.to(dtype), {left, cols - left - width}));
    left += width;
  }
  return cat(rows, 0);
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = wrap_dim(dim1, x.dim() + 1, "diag_embed"), d2 = wrap_dim(dim2, x.dim() + 1, "diag_embed");
  if (d1 == d2) fail<RuntimeError>("[diag_embed] dim1 and dim2 must differ, got ", dim1, " and ", dim2);
  const Tensor v = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t k = offset < 0 ? -offset : offset, n = v.size(-1) + k;
  // Entry (i, i + k) holds v[i] above the diagonal, (j - k, j) holds v[j] below it: the values
  // by row or by column, padded to n, kept where the offset is the diagonal's.
  const Tensor padded = pad(v, {0, k});
  const Tensor values = offset >= 0 ? padded.unsqueeze(-1) : padded.unsqueeze(-2);
  const Options index{.dtype = DType::Int64, .device = x.device()};
  const Tensor offsets = arange(n, index).unsqueeze(0) - arange(n, index).unsqueeze(1);
  const Tensor matrices = where(offsets == offset, values, zeros({}, {.dtype = x.dtype(), .device = x.device()}));
  return place_last_two(matrices, d1, d2);
}

Tensor diagflat(const Tensor& x, int64_t offset) { return diag(x.reshape({-1}), offset); }

Tensor cov(const Tensor& x, int64_t correction, const std::optional<Tensor>& fweights,
           const std::optional<Tensor>& aweights) {
  if (x.dim() > 2) fail<RuntimeError>("[cov] needs a tensor of at most 2 dims, got shape ", x.shape());
  const Tensor obs = (x.dim() < 2 ? x.reshape({1, -1}) : x).to(to_floating(x.dtype()));
  const int64_t n = obs.size(1);
  auto check_weights = [n](const Tensor& w, const char* name, bool integral) {
    if (w.dim() > 1 || w.numel() != n)
      fail<RuntimeError>("[cov] ", name, " must be 0-d or 1-d with one weight per observation (", n, "), got shape ",
                         w.shape());
    if (integral == w.is_floating_point() || w.dtype() == DType::Bool)
      fail<RuntimeError>("[cov] ", name, " must be ", integral ? "integers" : "floating", ", got ", w.dtype());
    if (n && ops::any_true(w < 0)) fail<RuntimeError>("[cov] ", name, " must be non-negative, got ", w);
  };
  std::optional<Tensor> w;
  if (fweights) {
    check_weights(*fweights, "fweights", true);
    w = fweights->reshape({-1});
  }
  if (aweights) {
    check_weights(*aweights, "aweights", false);
    w = w ? *w * aweights->reshape({-1}) : aweights->reshape({-1});
  }
  Tensor mean, norm;
  if (w) {
    const Tensor wf = w->to(obs.dtype());
    const Tensor total = wf.sum();
    mean = (obs * wf).sum(Dims{1}, true) / total;
    if (correction == 0) norm = total;
    else if (!aweights) norm = total - correction;
    else norm = total - correction * (wf * aweights->reshape({-1}).to(obs.dtype())).sum() / total;
  } else {
    mean = obs.mean(Dims{1}, true);
    norm = full({}, static_cast<double>(n - correction), {.dtype = obs.dtype(), .device = x.device()});
  }
  const Tensor centred = obs - mean;
  const Tensor c = centred.mm((w ? centred * w->to(obs.dtype()) : centred).t()) / clamp(norm, Scalar(0), std::nullopt);
  return x.dim() < 2 ? c.reshape({}) : c;
}

Tensor corrcoef(const Tensor& x) {
  if (x.dim() > 2) fail<RuntimeError>("[corrcoef] needs a tensor of at most 2 dims, got shape ", x.shape());
  const Tensor c = cov(x);
  if (c.dim() == 0) return c / c;
  const Tensor sd = diag(c).sqrt();
  return clamp(c / sd.unsqueeze(1) / sd.unsqueeze(0), Scalar(-1), Scalar(1));
}

Tensor dist(const Tensor& a, const Tensor& b, double p) {
  if (!a.is_floating_point() || !b.is_floating_point())
    fail<RuntimeError>("[dist] needs floating tensors, got ", a.dtype(), " ", a.shape(), " and ", b.dtype(), " ",
                       b.shape());
  return linalg::vector_norm(a - b, p);
}

Tensor vander(const Tensor& x, std::optional<int64_t> n, bool increasing) {
  if (x.dim() != 1) fail<RuntimeError>("[vander] needs a 1-d tensor, got shape ", x.shape());
  const int64_t cols = n.value_or(x.size(0));
  if (cols < 0) fail<RuntimeError>("[vander] N must be non-negative, got ", cols);
  const DType dtype = is_inexact(x.dtype()) ? x.dtype() : DType::Int64;
  const Tensor v = x.to(dtype);
  Tensor powers = ones({x.size(0), std::min<int64_t>(cols, 1)}, {.dtype = dtype, .device = x.device()});
  if (cols > 1) powers = cat({powers, v.unsqueeze(1).expand({x.size(0), cols - 1})}, 1).cumprod(1);
  return increasing ? powers : powers.flip({1});
}

namespace {

/** The n - 1 spacings of the sample points x along dim d of y: x 1-d (shaped to broadcast
 *  along d) or y's shape. */
Tensor spacings(const Tensor& x, const Tensor& y, int64_t d, int64_t n) {
  if (x.dim() != 1) return x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1);
  Dims line(static_cast<size_t>(y.dim()), 1);
  line[static_cast<size_t>(d)] = n - 1;
  return (x.narrow(0, 1, n - 1) - x.narrow(0, 0, n - 1)).reshape(line);
}

}  // namespace

Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const Tensor fy = as_floating(y);
  const int64_t d = wrap_dim(dim, y.dim(), "trapezoid"), n = y.size(d);
  if (x.dim() == 1 ? x.size(0) != n : x.shape() != y.shape())
    fail<RuntimeError>("[trapezoid] x needs one value per sample point: 1-d of length ", n, " or y's shape ", y.shape(),
                       ", got ", x.shape());
  if (n == 0) return fy.sum(Dims{d});
  const Tensor dx = spacings(x, y, d, n);
  return (dx * (fy.narrow(d, 1, n - 1) + fy.narrow(d, 0, n - 1))).sum(Dims{d}) / 2;
}

Tensor trapezoid(const Tensor& y, Scalar dx, int64_t dim) {
  const Tensor fy = as_floating(y);
  const int64_t d = wrap_dim(dim, y.dim(), "trapezoid"), n = y.size(d);
  if (n == 0) return fy.sum(Dims{d});
  return (fy.sum(Dims{d}) - (fy.select(d, 0) + fy.select(d, n - 1)) * 0.5) * dx;
}

namespace {

/** cumulative_trapezoid's dim, checked, and y as floating. */
std::pair<int64_t, Tensor> cumulative_operand(const Tensor& y, int64_t dim) {
  if (y.dim() == 0) fail<IndexError>("[cumulative_trapezoid] needs at least 1 dim, got a 0-d tensor");
  return {wrap_dim(dim, y.dim(), "cumulative_trapezoid"), as_floating(y)};
}

}  // namespace

Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const auto [d, fy] = cumulative_operand(y, dim);
  const int64_t n = y.size(d);
  if (x.dim() == 1 ? x.size(0) != n : x.dim() != y.dim() || x.size(d) != n)
    fail<RuntimeError>("[cumulative_trapezoid] x needs one value per sample point: 1-d of length ", n,
                       " or y's rank with ", n, " along dim ", d, ", got ", x.shape(), " (y ", y.shape(), ")");
  if (n <= 1) return fy.narrow(d, 0, 0);
  const Tensor dx = spacings(x, y, d, n);
  return (dx * (fy.narrow(d, 1, n - 1) + fy.narrow(d, 0, n - 1)) / 2).cumsum(d);
}

Tensor cumulative_trapezoid(const Tensor& y, Scalar dx, int64_t dim) {
  const auto [d, fy] = cumulative_operand(y, dim);
  const int64_t n = y.size(d);
  if (n <= 1) return fy.narrow(d, 0, 0);
  return ((fy.narrow(d, 1, n - 1) + fy.narrow(d, 0, n - 1)) * (dx.to_double() / 2)).cumsum(d);
}

namespace {

/** gradient's dims (x's all when none are given), checked for repeats, edge_order and sizes. */
/** gradient's dims checked against `spacings` spacings (one, or one per dim) and edge_order,
 *  then one result per dim: along(f, d, i), f being x as floating and i d's place in dims. */
template <class Along>
std::vector<Tensor> gradient_along(const Tensor& x, const Dims& dims, size_t spacings, int64_t edge_order,
                                   Along along) {
  if (edge_order != 1 && edge_order != 2) fail<RuntimeError>("[gradient] edge_order must be 1 or 2, got ", edge_order);
  Dims out;
  if (dims.empty())
    for (int64_t d = 0; d < x.dim(); ++d) out.push_back(d);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), "gradient");
    if (std::find(out.begin(), out.end(), w) != out.end())
      fail<RuntimeError>("[gradient] dim ", d, " appears multiple times in the list of dims ", Shape(dims));
    out.push_back(w);
  }
  if (spacings != 1 && spacings != out.size())
    fail<RuntimeError>("[gradient] spacing must be a scalar or have one entry per dim (", out.size(), "), got ",
                       spacings);
  for (int64_t d : out)
    if (x.size(d) < edge_order + 1)
      fail<RuntimeError>("[gradient] each dim needs at least edge_order + 1 = ", edge_order + 1, " entries, got shape ",
                         x.shape(), " along dim ", d);
  const Tensor f = as_floating(x);
  std::vector<Tensor> results;
  for (size_t i = 0; i < out.size(); ++i) results.push_back(along(f, out[i], i));
  return results;
}

/** torch's slice x[begin:end] along d, with end counted from the back when <= 0. */
Tensor part(const Tensor& x, int64_t d, int64_t begin, int64_t end) {
  const int64_t n = x.size(d), b = begin < 0 ? begin + n : begin, e = end <= 0 ? end + n : end;
  return x.narrow(d, b, e - b);
}

}  // namespace

std::vector<Tensor> gradient(const Tensor& x, const std::vector<Scalar>& spacing, const Dims& dims,
                             int64_t edge_order) {
  return gradient_along(x, dims, spacing.size(), edge_order, [&](const Tensor& f, int64_t d, size_t i) {
    const double h = spacing[spacing.size() == 1 ? 0 : i].to_double();
    // torch's formulas, in its order of operations
    const Tensor center = (part(f, d, 2, 0) - part(f, d, 0, -2)) / h;
    Tensor first, last;
    if (edge_order == 1) {
      first = (part(f, d, 1, 2) - part(f, d, 0, 1)) / h;
      last = (part(f, d, -1, 0) - part(f, d, -2, -1)) / h;
    } else {
      first = (part(f, d, 0, 1) * -1.5 + part(f, d, 1, 2) * 2 - part(f, d, 2, 3) * 0.5) / h;
      last = (part(f, d, -3, -2) * 0.5 - part(f, d, -2, -1) * 2 + part(f, d, -1, 0) * 1.5) / h;
    }
    return cat({first, center / 2, last}, d);
  });
}

std::vector<Tensor> gradient(const Tensor& x, const std::vector<Tensor>& coordinates, const Dims& dims,
                             int64_t edge_order) {
  return gradient_along(x, dims, coordinates.size(), edge_order, [&](const Tensor& f, int64_t d, size_t i) {
    const Tensor& c = coordinates[coordinates.size() == 1 ? 0 : i];
    if (c.dim() != 1 || c.size(0) != x.size(d))
      fail<RuntimeError>("[gradient] coordinates along dim ", d, " must be 1-d with ", x.size(d),
                         " entries, got shape ", c.shape());
    // The spacings, shaped to broadcast along d; h0, h1 the first two and hm, hn the last two.
    const Tensor h = diff(as_floating(c), 1, 0);
    const int64_t n = h.size(0);
    Dims line(static_cast<size_t>(x.dim()), 1);
    line[static_cast<size_t>(d)] = n - 1;
    const Tensor h1 = h.narrow(0, 0, n - 1), h2 = h.narrow(0, 1, n - 1);
    const Tensor a = (-h2 / (h1 * (h1 + h2))).reshape(line), b = ((h2 - h1) / (h1 * h2)).reshape(line),
                 cc = (h1 / (h2 * (h1 + h2))).reshape(line);
    const Tensor center = a * part(f, d, 0, -2) + b * part(f, d, 1, -1) + cc * part(f, d, 2, 0);
    const Tensor h0 = h.select(0, 0), hn = h.select(0, n - 1);
    Tensor first, last;
    if (edge_order == 1) {
      first = (part(f, d, 1, 2) - part(f, d, 0, 1)) / h0;
      last = (part(f, d, -1, 0) - part(f, d, -2, -1)) / hn;
    } else {
      const Tensor h01 = h.select(0, 1), hm = h.select(0, n - 2);
      first = -(h0 * 2.0 + h01) / (h0 * (h0 + h01)) * part(f, d, 0, 1) + (h0 + h01) / (h0 * h01) * part(f, d, 1, 2) +
              (-h0) / (h01 * (h0 + h01)) * part(f, d, 2, 3);
      last = hn / (hm * (hn + hm)) * part(f, d, -3, -2) - (hn + hm) / (hn * hm) * part(f, d, -2, -1) +
             (hn * 2 + hm) / (hn * (hn + hm)) * part(f, d, -1, 0);
    }
    return cat({first, center, last}, d);
  });
}

Tensor diff(const Tensor& x, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  if (x.dim() == 0) fail<RuntimeError>("[diff] needs at least 1 dim, got a 0-d tensor (", x.dtype(), ")");
  if (n < 0) fail<RuntimeError>("[diff] order n must be non-negative, got ", n);
  const int64_t d = wrap_dim(dim, x.dim(), "diff");
  if (n == 0) return x;  // torch's: prepend and append are not joined then
  std::vector<Tensor> parts;
  for (const auto* extra : {&prepend, &append}) {
    if (!*extra) continue;
    if ((*extra)->dim() != x.dim())
      fail<RuntimeError>("[diff] prepend and append need x's ", x.dim(), " dims, got shape ", (*extra)->shape());
  }
  if (prepend) parts.push_back(*prepend);
  parts.push_back(x);
  if (append) parts.push_back(*append);
  Tensor out = parts.size() == 1 ? x : cat(parts, d);
  for (int64_t i = 0; i < n && out.size(d) > 0; ++i) {
    const int64_t m = out.size(d);
    const Tensor next = out.narrow(d, 1, m - 1), prev = out.narrow(d, 0, m - 1);
    out = out.dtype() == DType::Bool ? next.logical_xor(prev) : next - prev;
  }
  return out;
}

Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm) {
  if (x.dim() < 2) fail<RuntimeError>("[renorm] needs at least 2 dims, got shape ", x.shape(), " (", x.dtype(), ")");
  if (!x.is_floating_point()) fail<RuntimeError>("[renorm] needs a floating tensor, got ", x.dtype());
  if (p <= 0) fail<RuntimeError>("[renorm] p must be positive, got ", p);
  if (maxnorm < 0) fail<RuntimeError>("[renorm] maxnorm must be non-negative, got ", maxnorm);
  const int64_t d = wrap_dim(dim, x.dim(), "renorm");
  Dims others;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != d) others.push_back(i);
  const Tensor norms = linalg::vector_norm(x, p, others, true);
  return x * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).to(x.dtype());
}

Tensor cartesian_prod(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors)
    if (t.dim() != 1) fail<RuntimeError>("[cartesian_prod] needs 1-d tensors, got shape ", t.shape());
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> columns;
  for (const Tensor& g : meshgrid(tensors, "ij")) columns.push_back(g.reshape({-1}));
  return stack(columns, 1);
}

Tensor combinations(const Tensor& x, int64_t r, bool with_replacement) {
  if (x.dim() != 1) fail<RuntimeError>("[combinations] needs a 1-d tensor, got shape ", x.shape());
  if (r < 0) fail<RuntimeError>("[combinations] r must be non-negative, got ", r);
  if (r == 0) return zeros({0}, {.dtype = x.dtype(), .device = x.device()});
  // The positions depend on the length only: listed here, lexicographically, they are constants
  // to every transform and to the export (a mask over a grid would need nonzero).
  const int64_t n = x.size(0);
  std::vector<std::vector<int64_t>> columns(static_cast<size_t>(r));
  std::vector<int64_t> pick(static_cast<size_t>(r), 0);
  auto valid = [&] {
    for (size_t i = 1; i < pick.size(); ++i)
      if (with_replacement ? pick[i - 1] > pick[i] : pick[i - 1] >= pick[i]) return false;
    return true;
  };
  for (bool more = n > 0; more;) {  // an odometer over [0, n)^r, the last position fastest
    if (valid())
      for (size_t i = 0; i < pick.size(); ++i) columns[i].push_back(pick[i]);
    size_t i = pick.size();
    while (i > 0 && ++pick[i - 1] == n) pick[--i] = 0;
    more = i > 0;
  }
  std::vector<Tensor> parts;
  for (const std::vector<int64_t>& c : columns) {
    Tensor index = empty({static_cast<int64_t>(c.size())}, {.dtype = DType::Int64});
    std::copy(c.begin(), c.end(), index.data_ptr<int64_t>());
    parts.push_back(x.index_select(0, index.to(x.device())));
  }
  return stack(parts, 1);
}

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, Options opts) {
  return triangle_indices(row, col, offset, opts, true, "tril_indices");
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, Options opts) {
  return triangle_indices(row, col, offset, opts, false, "triu_indices");
}

std::vector<Tensor> unravel_index(const Tensor& indices, const Dims& shape) {
  if (indices.is_floating_point() || indices.dtype() == DType::Bool)
    fail<TypeError>("[unravel_index] needs integer indices, got ", indices.dtype(), " ", indices.shape());
  for (int64_t s : shape)
    if (s < 0)
      fail<RuntimeError>("[unravel_index] sizes must be non-negative, got shape ", Shape(shape.begin(), shape.end()));
  const Tensor flat = indices.to(DType::Int64);
  std::vector<Tensor> coords(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    coords[i] = remainder(floor_divide(flat, stride), shape[i]);
    stride *= shape[i];
  }
  return coords;
}

// ---- elementwise

Tensor erfc(const Tensor& x) {
  const DType dtype = to_floating(x.dtype());
  const Tensor d = x.to(DType::Float64);
  // 1 - erf loses log10(1 / erfc(x)) digits: 3.4 at x = 2.5, where the fraction takes over.
  const Tensor far = d >= 2.5;
  const Tensor near = 1.0 - erf(where(far, 0.0, d));
  // past 30 erfc is 0 in float64 (exp(-900)); the clamp keeps inf - inf out of the fraction
  return where(far, erfc_fraction(where(far, clamp(d, std::nullopt, Scalar(30.0)), 2.5)), near).to(dtype);
}

Tensor deg2rad(const Tensor& x) { return as_floating(x) * (kPi / 180.0); }
Tensor rad2deg(const Tensor& x) { return as_floating(x) * (180.0 / kPi); }

Tensor sgn(const Tensor& x) {
  if (!is_complex(x.dtype())) return sign(x);
  // z / |z|, and 0 at 0 (torch.sgn): each part over the real |z|, as torch's kernel divides
  const Tensor magnitude = x.abs(), zero = magnitude == 0.0;
  const Tensor divisor = where(zero, 1.0, magnitude).to(magnitude.dtype()).unsqueeze(-1);
  return where(zero, zeros_like(x), view_as_complex(view_as_real(x) / divisor));
}

Tensor signbit(const Tensor& x) {
  if (x.dtype() == DType::Bool || x.dtype() == DType::UInt8)
    return zeros_like(x, {.dtype = DType::Bool, .device = x.device()});
  if (!x.is_floating_point()) return x < 0;
  // -0.0 has the sign bit: 1 / -0.0 is -inf
  return (x < 0.0).logical_or((x == 0.0).logical_and(reciprocal(x) < 0.0));
}

Tensor sinc(const Tensor& x) {
  return ops::in_opmath(
      [](const Tensor& f) {
        const Tensor zero = f == 0.0;
        const Tensor px = where(zero, 1.0, f) * kPi;  // the branch not taken reads a safe value
        return where(zero, 1.0, px.sin() / px).to(f.dtype());
      },
      as_floating(x));
}

Tensor copysign(const Tensor& a, const Tensor& b) {
  const DType dtype = promote_types(to_floating(a.dtype()), to_floating(b.dtype()));
  const Tensor magnitude = a.to(dtype).abs();
  return where(signbit(b), -magnitude, magnitude);
}
Tensor copysign(const Tensor& a, Scalar b) {
  const Tensor magnitude = as_floating(a).abs();
  return std::signbit(b.to_double()) ? -magnitude : magnitude;
}

Tensor heaviside(const Tensor& x, const Tensor& values) {
  same_dtype(x, values, "heaviside");
  return where(x == 0, values, (x > 0).to(x.dtype()));
}

namespace {
/** float_power computes in double precision: float64, or complex128 where a complex value takes part. */
DType double_of(DType a, DType b) { return is_complex(a) || is_complex(b) ? DType::Complex128 : DType::Float64; }
}  // namespace

Tensor float_power(const Tensor& a, const Tensor& b) {
  const DType d = double_of(a.dtype(), b.dtype());
  return pow(a.to(d), b.to(d));
}
Tensor float_power(const Tensor& a, Scalar b) {
  const DType d = double_of(a.dtype(), b.default_dtype());
  return pow(a.to(d), b.is_complex() ? b : Scalar(b.to_double()));
}
Tensor float_power(Scalar a, const Tensor& b) {
  const DType d = double_of(a.default_dtype(), b.dtype());
  return pow(a.is_complex() ? a : Scalar(a.to_double()), b.to(d));
}

Tensor fmax(const Tensor& a, const Tensor& b) { return pick_nan_aware(a, b, true, "fmax"); }
Tensor fmin(const Tensor& a, const Tensor& b) { return pick_nan_aware(a, b, false, "fmin"); }

Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  if (!a.is_floating_point() || !b.is_floating_point())
    fail<RuntimeError>("[logaddexp2] needs floating tensors, got ", a.dtype(), " and ", b.dtype());
  return logaddexp(a * std::numbers::ln2, b * std::numbers::ln2) * std::numbers::log2e;
}

Tensor positive(const Tensor& x) {
  if (x.dtype() == DType::Bool) fail<RuntimeError>("[positive] does not take a bool tensor (shape ", x.shape(), ")");
  return x;
}

Tensor isposinf(const Tensor& x) {
  if (!x.is_floating_point()) return zeros_like(x, {.dtype = DType::Bool, .device = x.device()});
  return isinf(x).logical_and(x > 0.0);
}
Tensor isneginf(const Tensor& x) {
  if (!x.is_floating_point()) return zeros_like(x, {.dtype = DType::Bool, .device = x.device()});
  return isinf(x).logical_and(x < 0.0);
}

Tensor isreal(const Tensor& x) { return ones_like(x, {.dtype = DType::Bool, .device = x.device()}); }

bool is_nonzero(const Tensor& x) {
  if (x.numel() != 1)
    fail<RuntimeError>("[is_nonzero] needs a tensor of one element, got shape ", x.shape(), " (", x.dtype(), ")");
  return x.item().to_bool();
}

Tensor ldexp(const Tensor& x, const Tensor& e) {
  const DType dtype = promote_types(to_floating(x.dtype()), to_floating(e.dtype()));
  return x.to(dtype) * pow(Scalar(2.0), e.to(dtype));
}

Tensor mvlgamma(const Tensor& x, int64_t p) {
  if (p < 1) fail<RuntimeError>("[mvlgamma] p must be at least 1, got ", p);
  const Tensor f = as_floating(x);
  const Tensor halves = arange(0.0, -p / 2.0, -0.5, {.dtype = f.dtype(), .device = x.device()});
  return lgamma(f.unsqueeze(-1) + halves).sum(Dims{-1}) + p * (p - 1) / 4.0 * std::log(kPi);
}

namespace {

/** a / b rounded by rounding_mode, for a tensor or a number b. */
template <class B> Tensor rounded_div(const Tensor& a, const B& b, std::optional<std::string_view> mode) {
  if (!mode) return div(a, b);
  if (*mode != "trunc" && *mode != "floor")
    fail<RuntimeError>("[div] rounding_mode must be None, 'trunc' or 'floor', got '", *mode, "'");
  if (a.dtype() == DType::Bool && *mode == "trunc") fail<RuntimeError>("[div] rounding_mode='trunc' on bool tensors");
  if (!is_floating(ops::result_type(a, b))) {
    bool by_zero;
    if constexpr (std::is_same_v<B, Tensor>) by_zero = ops::any_true(b.eq(0));
    else by_zero = b.to_double() == 0;
    if (by_zero) fail<RuntimeError>("[div] ZeroDivisionError: integer division by zero (rounding_mode='", *mode, "')");
    // Less its C remainder, a is a multiple of b: the floor of that quotient is exact.
    return *mode == "floor" ? floor_divide(a, b) : floor_divide(a - fmod(a, b), b);
  }
  if (*mode == "floor") return floor_divide(a, b);
  // torch's value, trunc(a / b), with torch's gradient 0 joined by where: trunc's 0 times the
  // quotient's would be NaN where b is 0.
  const Tensor none = zeros({}, {.dtype = DType::Bool, .device = a.device()});
  if constexpr (std::is_same_v<B, Tensor>) return where(none, a, where(none, b, div(a.detach(), b.detach()).trunc()));
  else return where(none, a, div(a.detach(), b).trunc());
}

void integer_operands(const Tensor& a, const Tensor& b, const char* op) {
  for (const Tensor* t : {&a, &b})
    if (t->is_floating_point() || t->dtype() == DType::Bool)
      fail<RuntimeError>("[", op, "] needs integer tensors, got ", a.dtype(), " ", a.shape(), " and ", b.dtype(), " ",
                         b.shape());
}

}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  return rounded_div(a, b, rounding_mode);
}
Tensor div(const Tensor& a, Scalar b, std::optional<std::string_view> rounding_mode) {
  return rounded_div(a, b, rounding_mode);
}

Tensor round(const Tensor& x, int64_t decimals) {
  if (!x.is_floating_point())
    fail<RuntimeError>("[round] decimals needs a floating tensor, got ", x.dtype(), " ", x.shape());
  if (decimals == 0) return x.round();
  // In x's dtype, as torch: x * 10^d rounded, then scaled back (d < 0: divided first).
  const double scale = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  return decimals > 0 ? (x * scale).round() / scale : (x / scale).round() * scale;
}

std::pair<Tensor, Tensor> frexp(const Tensor& x) {
  if (!x.is_floating_point()) fail<RuntimeError>("[frexp] needs a floating tensor, got ", x.dtype(), " ", x.shape());
  // In float64, where float32's subnormals are normal; 0, inf and NaN keep exponent 0.
  const Tensor v = x.detach().to(DType::Float64).abs();
  const Tensor regular = v.isfinite().logical_and(v != 0);
  // t * 2^-e in two steps: a float64 subnormal's 2^1073 alone would overflow.
  auto unscale = [](const Tensor& t, const Tensor& e) {
    const Tensor half = (-e / 2).floor();
    return t * pow(Scalar(2.0), half) * pow(Scalar(2.0), -e - half);
  };
  Tensor e = where(regular, v.log2().floor() + 1, 0.0);
  // log2 may round across a power of 2: move e by one where |x| / 2^e left [0.5, 1).
  const Tensor m = unscale(v, e);
  e = e + regular.logical_and(m >= 1.0).to(DType::Float64) - regular.logical_and(m < 0.5).to(DType::Float64);
  return {unscale(x.to(DType::Float64), e).to(x.dtype()), e.to(DType::Int32)};
}

Tensor nextafter(const Tensor& a, const Tensor& b) {
  const DType dtype = ops::result_type(a, b);
  if (!is_floating(dtype))
    fail<RuntimeError>("[nextafter] needs a floating tensor, got ", a.dtype(), " ", a.shape(), " and ", b.dtype(), " ",
                       b.shape());
  const FloatInfo info = finfo(dtype);
  // The dtype's significand bits and its smallest subnormal's exponent.
  const double bits = 1.0 - std::log2(info.eps), lowest = std::log2(info.tiny * info.eps);
  // In float64, where the dtype's neighbours are exact: x +- the gap to the next value.
  const Tensor x = a.detach().to(dtype).to(DType::Float64), y = b.detach().to(dtype).to(DType::Float64);
  const auto [mantissa, exponent] = frexp(x);
  const Tensor e = exponent.to(DType::Float64);
  const Tensor above = pow(Scalar(2.0), clamp_min(e - bits, Scalar(lowest)));
  // Below a power of 2 the values are twice as dense.
  const Tensor below = where(mantissa.abs() == 0.5, pow(Scalar(2.0), clamp_min(e - bits - 1.0, Scalar(lowest))), above);
  const Tensor up = y > x, outwards = up == (x > 0.0);
  Tensor next = where(up, x + where(outwards, above, below), x - where(outwards, above, below));
  const double smallest = info.tiny * info.eps;
  next = where(x == 0.0, where(up, full_like(x, smallest), full_like(x, -smallest)), next);
  next = where(isinf(x), copysign(full_like(x, info.max), x), next);
  next = where(x == y, y, where(isnan(x).logical_or(isnan(y)), NAN, next));
  return next.to(dtype);
}

Tensor gcd(const Tensor& a, const Tensor& b) {
  integer_operands(a, b, "gcd");
  const DType dtype = ops::result_type(a, b);
  Tensor x = a.to(dtype).abs(), y = b.to(dtype).abs();
  // Euclid's steps, as many as its worst case (neighbouring Fibonacci numbers) takes for the
  // dtype: about 1.44 per bit. A fixed count keeps the shapes and the program static.
  const int steps = static_cast<int>(8 * itemsize(dtype) * 1.45) + 2;
  for (int i = 0; i < steps; ++i) {
    const Tensor done = y == 0;
    const Tensor r = remainder(x, where(done, 1, y));
    x = where(done, x, y);
    y = where(done, 0, r);
  }
  return x;
}

Tensor lcm(const Tensor& a, const Tensor& b) {
  integer_operands(a, b, "lcm");
  const DType dtype = ops::result_type(a, b);
  const Tensor g = gcd(a, b).to(DType::Int64), zero = g == 0;
  // g divides a, so the floor division is exact; in int64 and then wrapped to the dtype, as
  // torch's C++ integer promotion does before its abs.
  const Tensor m = (floor_divide(a.to(DType::Int64), where(zero, 1, g)) * b.to(DType::Int64)).abs();
  return where(zero, 0, m).to(dtype);
}

Tensor clamp_min(const Tensor& x, Scalar min) { return clamp(x, min, std::nullopt); }
Tensor clamp_min(const Tensor& x, const Tensor& min) { return x.clamp(min, std::nullopt); }
Tensor clamp_max(const Tensor& x, Scalar max) { return clamp(x, std::nullopt, max); }
Tensor clamp_max(const Tensor& x, const Tensor& max) { return x.clamp(std::nullopt, max); }

std::pair<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (x.numel() == 0 && !dim) fail<RuntimeError>("[aminmax] needs a non-empty tensor, got shape ", x.shape());
  if (!dim) {
    if (!keepdim) return {x.amin(), x.amax()};
    Dims all(static_cast<size_t>(x.dim()));
    for (int64_t i = 0; i < x.dim(); ++i) all[static_cast<size_t>(i)] = i;
    return {x.amin(all, true), x.amax(all, true)};
  }
  const Tensor v = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t d = wrap_dim(*dim, v.dim(), "aminmax");
  if (v.size(d) == 0) fail<IndexError>("[aminmax] dim ", d, " of shape ", x.shape(), " is empty");
  if (x.dim() == 0) return {x, x};
  return {v.amin(Dims{d}, keepdim), v.amax(Dims{d}, keepdim)};
}

// ---- shapes and scatters

std::vector<Tensor> hsplit(const Tensor& x, int64_t sections) {
  return split_along(x, sections, x.dim() == 1 ? 0 : 1, 1, "hsplit");
}
std::vector<Tensor> hsplit(const Tensor& x, const Dims& indices) {
  return split_at(x, indices, x.dim() == 1 ? 0 : 1, 1, "hsplit");
}
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections) { return split_along(x, sections, 0, 2, "vsplit"); }
std::vector<Tensor> vsplit(const Tensor& x, const Dims& indices) { return split_at(x, indices, 0, 2, "vsplit"); }
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections) { return split_along(x, sections, 2, 3, "dsplit"); }
std::vector<Tensor> dsplit(const Tensor& x, const Dims& indices) { return split_at(x, indices, 2, 3, "dsplit"); }

Tensor column_stack(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) fail<RuntimeError>("[column_stack] needs at least one tensor");
  std::vector<Tensor> columns;
  for (const Tensor& t : tensors) columns.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return hstack(columns);
}

Dims broadcast_shapes(const std::vector<Dims>& shapes) {
  Shape out;
  for (const Dims& s : shapes) out = ug::broadcast_shapes(out, Shape(s.begin(), s.end()), "broadcast_shapes");
  return Dims(out.begin(), out.end());
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  Shape shape;
  for (const Tensor& t : tensors) shape = ug::broadcast_shapes(shape, t.shape(), "broadcast_tensors");
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.expand(Dims(shape.begin(), shape.end())));
  return out;
}

Tensor msort(const Tensor& x) { return sort(x, 0).first; }

Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  if (x.dim() == 0) fail<RuntimeError>("[slice_scatter] needs at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "slice_scatter");
  if (step <= 0) fail<RuntimeError>("[slice_scatter] step must be positive, got ", step);
  // the slice's positions, with the slice's own rules for negative and out-of-range bounds
  const Tensor positions = arange(x.size(d), {.dtype = DType::Int64, .device = x.device()}).slice(0, start, end, step);
  Shape expected = x.shape();
  expected[static_cast<size_t>(d)] = positions.numel();
  if (src.shape() != expected)
    fail<RuntimeError>("[slice_scatter] src of shape ", src.shape(), " must have the slice's shape ", expected, " (x ",
                       x.shape(), ", dim ", d, ")");
  return x.scatter(d, positions_like(src, d, positions), src.to(x.dtype()));
}

Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index) {
  if (x.dim() == 0) fail<RuntimeError>("[select_scatter] needs at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "select_scatter"), n = x.size(d);
  if (index < -n || index >= n)
    fail<IndexError>("[select_scatter] index ", index, " out of range for dim ", d, " of size ", n);
  const int64_t i = index < 0 ? index + n : index;
  Shape expected = x.shape();
  expected.erase(expected.begin() + d);
  if (src.shape() != expected)
    fail<RuntimeError>("[select_scatter] src of shape ", src.shape(), " must have the selection's shape ", expected);
  return slice_scatter(x, src.unsqueeze(d), d, i, i + 1, 1);
}

namespace {

/** The storage position of every element of a view of this size, strides and offset, as an
 *  int64 tensor of its shape. */
Tensor strided_positions(const Dims& size, const Dims& stride, int64_t offset, Device device) {
  Tensor at = full({}, offset, {.dtype = DType::Int64, .device = device});
  for (size_t k = 0; k < size.size(); ++k) {
    Dims line(size.size(), 1);
    line[k] = size[k];
    at = at + arange(size[k], {.dtype = DType::Int64, .device = device}).view(line) * stride[k];
  }
  return at;
}

bool overlaps(const Dims& size, const Dims& stride) {
  for (size_t k = 0; k < size.size(); ++k)
    if (size[k] > 1 && stride[k] == 0) return true;
  return false;
}

}  // namespace

Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  if (x.dim() < 2) fail<RuntimeError>("[diagonal_scatter] needs at least 2 dims, got shape ", x.shape());
  const int64_t d1 = wrap_dim(dim1, x.dim(), "diagonal_scatter"), d2 = wrap_dim(dim2, x.dim(), "diagonal_scatter");
  if (d1 == d2) fail<RuntimeError>("[diagonal_scatter] dim1 and dim2 must differ, got ", dim1, " and ", dim2);
  // The diagonal as a strided view of x's row-major positions: the other dims, then one step
  // along both dims per element (built from aranges, which export, unlike the diagonal view).
  const Strides rows = contiguous_strides(x.shape());
  const int64_t n1 = x.size(d1), n2 = x.size(d2);
  const int64_t length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  Dims size, stride;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != d1 && k != d2) {
      size.push_back(x.size(k));
      stride.push_back(rows[static_cast<size_t>(k)]);
    }
  size.push_back(length);
  stride.push_back(rows[static_cast<size_t>(d1)] + rows[static_cast<size_t>(d2)]);
  const int64_t first =
      length == 0 ? 0
                  : (offset >= 0 ? offset * rows[static_cast<size_t>(d2)] : -offset * rows[static_cast<size_t>(d1)]);
  if (src.shape() != Shape(size))
    fail<RuntimeError>("[diagonal_scatter] src of shape ", src.shape(), " must have the diagonal's shape ", Shape(size),
                       " (x ", x.shape(), ", offset ", offset, ", dims ", dim1, " and ", dim2, ")");
  const Tensor at = strided_positions(size, stride, first, x.device());
  return x.reshape({-1}).scatter(0, at.reshape({-1}), src.to(x.dtype()).reshape({-1})).reshape(x.shape());
}

Tensor as_strided_scatter(const Tensor& x, const Tensor& src, const Dims& size, const Dims& stride,
                          std::optional<int64_t> storage_offset) {
  if (size.size() != stride.size())
    fail<RuntimeError>("[as_strided_scatter] size ", Shape(size), " and stride ", Shape(stride),
                       " must have the same length");
  for (size_t k = 0; k < size.size(); ++k)
    if (size[k] < 0 || stride[k] < 0)
      fail<RuntimeError>("[as_strided_scatter] sizes and strides must be non-negative, got size ", Shape(size),
                         " and stride ", Shape(stride));
  if (src.shape() != Shape(size))
    fail<RuntimeError>("[as_strided_scatter] src of shape ", src.shape(), " must have the view's size ", Shape(size));
  if (overlaps(size, stride))
    fail<RuntimeError>("[as_strided_scatter] the view of size ", Shape(size), " and stride ", Shape(stride),
                       " writes some elements more than once");
  // As torch, on a copy of x's whole storage that keeps x's strides and offset (an x whose own
  // elements overlap is copied contiguous first): x's elements and the view's sit at these
  // storage positions.
  const Dims shape(x.shape().begin(), x.shape().end());
  const Dims x_strides(x.strides().begin(), x.strides().end());
  const bool dense_copy = overlaps(shape, x_strides);
  const int64_t x_offset = dense_copy ? 0 : x.storage_offset();
  const int64_t storage = dense_copy ? x.numel() : static_cast<int64_t>(x.storage()->nbytes() / x.element_size());
  const int64_t offset = storage_offset.value_or(x_offset);
  if (offset < 0) fail<RuntimeError>("[as_strided_scatter] storage_offset must be non-negative, got ", offset);
  int64_t last = offset;
  for (size_t k = 0; k < size.size(); ++k) last += (size[k] - 1) * stride[k];
  if (src.numel() && last >= storage)
    fail<RuntimeError>("[as_strided_scatter] the view of size ", Shape(size), ", stride ", Shape(stride),
                       " and offset ", offset, " reaches element ", last, " of a storage of ", storage);
  if (src.numel() == 0) return x.clone();
  const Strides rows = contiguous_strides(x.shape());
  const Tensor mine =
      strided_positions(shape, dense_copy ? Dims(rows.begin(), rows.end()) : x_strides, x_offset, x.device());
  const Tensor view = strided_positions(size, stride, offset, x.device());
  // Which of src's elements lands on each storage position (-1: none), read at x's.
  const Options ints{.dtype = DType::Int64, .device = x.device()};
  const Tensor writer = full({storage}, -1, ints).scatter(0, view.reshape({-1}), arange(src.numel(), ints));
  const Tensor from = writer.index_select(0, mine.reshape({-1}));
  const Tensor values = src.to(x.dtype()).reshape({-1}).index_select(0, clamp_min(from, Scalar(0)));
  return where(from >= 0, values, x.reshape({-1})).reshape(x.shape());
}

namespace {

/** index_copy's and index_reduce's operands with 0-d ones as 1-d, and dim wrapped, after
 *  checking that index is 1-d integer and source matches x but in dim, with one slice per index. */
std::tuple<Tensor, Tensor, int64_t> indexed_slices(const Tensor& x, int64_t dim, const Tensor& index,
                                                   const Tensor& source, const char* op) {
  const Tensor v = x.dim() == 0 ? x.reshape({1}) : x;
  const Tensor s = source.dim() == 0 ? source.reshape({1}) : source;
  const int64_t d = wrap_dim(dim, v.dim(), op);
  if (index.dim() > 1 || index.is_floating_point() || index.dtype() == DType::Bool)
    fail<IndexError>("[", op, "] index must be a 0-d or 1-d integer tensor, got ", index.dtype(), " ", index.shape());
  if (s.dim() != v.dim() || s.size(d) != index.numel())
    fail<IndexError>("[", op, "] source of shape ", source.shape(), " must match x's shape ", x.shape(), " with ",
                     index.numel(), " slices along dim ", d);
  for (int64_t i = 0; i < v.dim(); ++i)
    if (i != d && s.size(i) != v.size(i))
      fail<IndexError>("[", op, "] source of shape ", source.shape(), " and x of shape ", x.shape(), " differ in dim ",
                       i);
  if (x.dtype() != source.dtype())
    fail<RuntimeError>("[", op, "] source's dtype ", source.dtype(), " must be x's ", x.dtype());
  return {v, s, d};
}

}  // namespace

Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  const auto [v, s, d] = indexed_slices(x, dim, index, source, "index_copy");
  return v.scatter(d, positions_like(s, d, index.reshape({-1})), s).reshape(x.shape());
}

Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, std::string_view reduce,
                    bool include_self) {
  if (reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
    fail<RuntimeError>("[index_reduce] reduce must be one of prod, mean, amax or amin, got '", reduce, "'");
  const auto [v, s, d] = indexed_slices(x, dim, index, source, "index_reduce");
  const Tensor positions = index.reshape({-1}).to(DType::Int64);
  if (positions.numel() && ops::any_true((positions < 0).logical_or(positions >= v.size(d))))
    fail<IndexError>("[index_reduce] an index is out of range [0, ", v.size(d), ") along dim ", d, " of shape ",
                     x.shape());
  // scatter_reduce's index holds, at every element of source, the position along d it goes to.
  return scatter_reduce(v, d, positions_like(s, d, positions), s, reduce, include_self).reshape(x.shape());
}

Tensor logspace(double start, double end, int64_t steps, double base, Options opts) {
  const DType dtype = opts.dtype.value_or(get_default_dtype());
  const DType compute = is_floating(dtype) ? dtype : DType::Float64;
  const Tensor exponents = linspace(start, end, steps, {.dtype = compute, .device = opts.device});
  return pow(Scalar(base), exponents).to(dtype);
}

Tensor randint_like(const Tensor& x, int64_t low, int64_t high, Options opts) {
  return randint(low, high, Dims(x.shape().begin(), x.shape().end()),
                 {.dtype = opts.dtype.value_or(x.dtype()), .device = x.device()});
}

}  // namespace ug
