#include "ug/ops/composite.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ug/core/type_info.h"
#include "ug/graph/capture.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/opmath.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

/** (cols - rows) of the last two dims of x, as an int64 [rows, cols] grid. */
Tensor diagonal_offsets(int64_t rows, int64_t cols) {
  return arange(cols, {.dtype = DType::Int64}).unsqueeze(0) - arange(rows, {.dtype = DType::Int64}).unsqueeze(1);
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  if (x.dim() < 2) fail("[", op, "] needs at least 2 dims, got shape ", x.shape());
  const Tensor offsets = diagonal_offsets(x.size(-2), x.size(-1));
  return where(lower ? offsets <= diagonal : offsets >= diagonal, x, zeros({}, {.dtype = x.dtype()}));
}

bool is_one(Scalar s) { return !s.is_bool() && s.to_double() == 1.0; }

/** beta * input + alpha * product, torch's way: input unread when beta is 0. */
Tensor scaled_sum(const Tensor& input, Tensor product, Scalar beta, Scalar alpha) {
  if (!is_one(alpha)) product = product * alpha;
  // beta = 0: input's values unread (a NaN in it stays out) but its gradient zeros, as torch's.
  if (beta.to_double() == 0.0) return product + where(ones_like(input, {.dtype = DType::Bool}), 0.0, input);
  return (is_one(beta) ? input : input * beta) + product;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor diag(const Tensor& x, int64_t diagonal) {
  if (x.dim() == 2) {
    // Each row (k >= 0) or column (k < 0) holds at most one element of the diagonal: masked
    // sums pick them out exactly, in ops every transform and the ONNX export know (a strided
    // diagonal view has no ONNX counterpart).
    const int64_t rows = x.size(0), cols = x.size(1);
    const int64_t length =
        std::max<int64_t>(0, diagonal >= 0 ? std::min(rows, cols - diagonal) : std::min(rows + diagonal, cols));
    const Tensor kept = where(diagonal_offsets(rows, cols) == diagonal, x, zeros({}, {.dtype = x.dtype()}));
    const Tensor lines = (diagonal >= 0 ? kept.sum(Dims{1}) : kept.sum(Dims{0})).to(x.dtype());  // ints sum to int64
    return lines.narrow(0, 0, length);  // row i holds (i, i + k); column j holds (j - k, j)
  }
  if (x.dim() != 1) fail("[diag] needs a 1-d or 2-d tensor, got shape ", x.shape());
  const int64_t k = diagonal < 0 ? -diagonal : diagonal, n = x.size(0) + k;
  // Entry (i, i + k) holds x[i] above the diagonal, (j - k, j) holds x[j] below it: the values
  // by row (or by column), padded to n, kept where the offset is the diagonal's.
  const Tensor padded = pad(x, {0, k});
  const Tensor values = diagonal >= 0 ? padded.unsqueeze(1) : padded.unsqueeze(0);
  return where(diagonal_offsets(n, n) == diagonal, values, zeros({}, {.dtype = x.dtype()}));
}

Tensor trace(const Tensor& x) {
  if (x.dim() != 2) fail("[trace] needs a matrix, got shape ", x.shape());
  return diag(x).sum();
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  if (indexing != "ij" && indexing != "xy")
    fail("[meshgrid] indexing must be \"ij\" or \"xy\", got \"", indexing, "\"");
  const size_t n = tensors.size();
  Dims shape;
  for (const Tensor& t : tensors) {
    if (t.dim() > 1) fail("[meshgrid] expects 0-d or 1-d tensors, got shape ", t.shape());
    shape.push_back(t.numel());
  }
  const bool swap = indexing == "xy" && n >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < n; ++i) {
    size_t at = i;
    if (swap && i < 2) at = 1 - i;
    Dims view(n, 1);
    view[at] = tensors[i].numel();
    grids.push_back(tensors[i].reshape(view).expand(shape));
  }
  return grids;
}

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta, Scalar alpha) {
  if (autocast::active()) [[unlikely]]  // on torch's lower-precision list, input included
    return autocast::call(graph::Autocast::Lower, addmm, input, mat1, mat2, beta, alpha);
  if (mat1.dim() != 2 || mat2.dim() != 2)
    fail("[addmm] expects 2-d matrices, got shapes ", mat1.shape(), " and ", mat2.shape());
  return scaled_sum(input, mm(mat1, mat2), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta, Scalar alpha) {
  if (autocast::active()) [[unlikely]]
    return autocast::call(graph::Autocast::Lower, baddbmm, input, batch1, batch2, beta, alpha);
  if (batch1.dim() != 3 || batch2.dim() != 3)
    fail("[baddbmm] expects 3-d batches of matrices, got shapes ", batch1.shape(), " and ", batch2.shape());
  return scaled_sum(input, bmm(batch1, batch2), beta, alpha);
}

Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value) {
  return ops::in_opmath(
      [&value](const Tensor& in, const Tensor& a, const Tensor& b) {
        const Tensor product = a * b;
        return in + (is_one(value) ? product : product * value);
      },
      input, t1, t2);
}

Tensor addcdiv(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value) {
  if (!t1.is_floating_point() && !t2.is_floating_point())
    fail<RuntimeError>("[addcdiv] integer division of ", t1.dtype(), " by ", t2.dtype(),
                       " is not supported: use floating tensors");
  return ops::in_opmath(
      [&value](const Tensor& in, const Tensor& a, const Tensor& b) {
        const Tensor quotient = a / b;
        return in + (is_one(value) ? quotient : quotient * value);
      },
      input, t1, t2);
}

namespace {

/** dim in [0, rank), checked, and index as the 1-d int64 list of positions along it. */
std::pair<int64_t, Tensor> dim_and_index(const Tensor& x, int64_t dim, const Tensor& index, const char* op) {
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  if (dim < -rank || dim >= rank) fail<IndexError>("[", op, "] dim ", dim, " out of range for shape ", x.shape());
  if (index.dim() > 1 || index.is_floating_point() || index.dtype() == DType::Bool)
    fail<IndexError>("[", op, "] index must be a 0-d or 1-d integer tensor, got ", index.dtype(), " ", index.shape());
  return {dim < 0 ? dim + rank : dim, index.reshape({-1}).to(DType::Int64)};
}

}  // namespace

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha) {
  auto [d, positions] = dim_and_index(x, dim, index, "index_add");
  if (x.dim() == 0) return x + (is_one(alpha) ? source : source * alpha).reshape({});
  if (source.dim() != x.dim() || source.size(d) != positions.numel())
    fail("[index_add] source of shape ", source.shape(), " must match x's rank (", x.shape(), ") with ",
         positions.numel(), " entries along dim ", d);
  // scatter_add's index holds, at every element of source, the position along d it goes to.
  Dims view(static_cast<size_t>(x.dim()), 1);
  view[static_cast<size_t>(d)] = positions.numel();
  const Tensor spread = positions.reshape(view).expand(Dims(source.shape().begin(), source.shape().end()));
  return x.scatter_add(d, spread, is_one(alpha) ? source : source * alpha);
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  auto [d, positions] = dim_and_index(x, dim, index, "index_fill");
  const int64_t extent = x.dim() == 0 ? 1 : x.size(d);
  if (positions.numel() && ops::any_true((positions < -extent).logical_or(positions >= extent)))
    fail<IndexError>("[index_fill] an index is out of range for ", extent, " entries along dim ", d);
  positions = where(positions < 0, positions + extent, positions);
  // Which positions along d are named: one row of a [extent, count] comparison each.
  Tensor named = (arange(extent, {.dtype = DType::Int64}).unsqueeze(1) == positions.unsqueeze(0)).any(1);
  if (x.dim() == 0) return x.masked_fill(named.reshape({}), value);
  Dims view(static_cast<size_t>(x.dim()), 1);
  view[static_cast<size_t>(d)] = extent;
  return x.masked_fill(named.reshape(view), value);
}

Tensor logit(const Tensor& x, std::optional<double> eps) {
  const Tensor p = eps ? clamp(x, Scalar(*eps), Scalar(1.0 - *eps)) : x;
  return (p / (1.0 - p)).log();
}

Tensor xlogy(const Tensor& x, const Tensor& y) {
  return where((x == 0.0).logical_and(isnan(y).logical_not()), 0.0, x * y.log());
}

Tensor hypot(const Tensor& a, const Tensor& b) {
  // 16-bit operands: computed in float32 and rounded once (opmath.h).
  if (ops::is_16_bit(promote_types(a.dtype(), b.dtype())))
    return ops::in_opmath([](const Tensor& x, const Tensor& y) { return hypot(x, y); }, a, b);
  // s sqrt((a/s)^2 + (b/s)^2) with s the larger magnitude, so that neither square overflows
  // nor underflows. The value does not depend on s, so s is a constant to the derivatives:
  // they are a / h and b / h, smooth where a or b is 0 (a composition through |a| and |b|
  // lost the second derivative there, abs having none at 0). At (0, 0) the value is 0 and
  // the gradient 0, as torch's for a complex abs; the square root never sees that 0.
  const Tensor s = maximum(a.abs(), b.abs()).detach(), zero = s == 0.0;
  const Tensor safe = where(zero, 1.0, s).to(s.dtype());
  const Tensor ra = a / safe, rb = b / safe, sum = ra * ra + rb * rb;
  const Tensor h = s * where(zero, 1.0, sum).to(sum.dtype()).sqrt();
  // IEEE's hypot is infinite where either operand is, even where the other is NaN.
  const Tensor infinite = isinf(a).logical_or(isinf(b));
  return where(infinite, std::numeric_limits<double>::infinity(), where(zero, 0.0, h).to(h.dtype())).to(h.dtype());
}

namespace {

/** |x| as -x or x, so that its gradient is -1 or 1 with 1 at 0 (abs's is 0 there): fmod's
 *  sign flips then cancel to torch's gradient 1 in a, also at a = 0. */
Tensor magnitude(const Tensor& x) { return where(x < 0, -x, x); }

}  // namespace

Tensor fmod(const Tensor& a, const Tensor& b) {
  // On magnitudes the two remainders agree exactly; the sign is then a's. The gradient in b,
  // -floor(|a| / |b|) with both signs put back, is fmod's -trunc(a / b).
  const Tensor r = remainder(magnitude(a), magnitude(b));
  return where(a < 0, -r, r);
}

Tensor fmod(const Tensor& a, Scalar b) {
  const Scalar size = b.is_floating() ? Scalar(std::abs(b.to_double()))
                      : b.is_bool()   ? b
                                      : Scalar(std::abs(b.to<int64_t>()));
  const Tensor r = remainder(magnitude(a), size);
  return where(a < 0, -r, r);
}

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

/** x in float64, and the dtype its special function returns (ints and bool: the default). */
std::pair<Tensor, DType> special_input(const Tensor& x) { return {x.to(DType::Float64), to_floating(x.dtype())}; }

/** Whether each element is 0 or a negative integer: the poles of Gamma and digamma. */
Tensor at_pole(const Tensor& x) { return (x <= 0.0).logical_and(x == x.floor()); }

/** log Gamma(x) for x >= 0.5: Lanczos's series, g = 7, 9 terms (relative error ~1e-15). */
Tensor lanczos_lgamma(const Tensor& x) {
  static constexpr double p[] = {0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
                                 771.32342877765313,   -176.61502916214059,   12.507343278686905,
                                 -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  const Tensor z = x - 1.0;
  Tensor series = full_like(z, p[0]);
  for (int i = 1; i < 9; ++i) series = series + p[i] / (z + static_cast<double>(i));
  const Tensor t = z + 7.5;
  return 0.91893853320467274178 + (z + 0.5) * t.log() - t + series.log();
}

/** digamma(x) for x >= 0.5: shifted past 10 by the recurrence, then the asymptotic series. */
Tensor shifted_digamma(const Tensor& x) {
  Tensor shift = zeros_like(x);
  for (int k = 0; k < 10; ++k) shift = shift + 1.0 / (x + static_cast<double>(k));
  const Tensor z = x + 10.0, w = 1.0 / (z * z);
  // B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, by Horner in 1/z^2
  const Tensor tail =
      w * (1.0 / 12 + w * (-1.0 / 120 + w * (1.0 / 252 + w * (-1.0 / 240 + w * (1.0 / 132 + w * (-691.0 / 32760))))));
  return z.log() - 0.5 / z - tail - shift;
}

}  // namespace

Tensor lgamma(const Tensor& x) {
  auto [d, dtype] = special_input(x);
  const Tensor low = d < 0.5;
  // Each branch reads safe values only, so that the one not taken has a finite gradient.
  const Tensor reflected = where(low, 1.0 - d, d), side = where(low, d, 0.25);
  const Tensor upper = lanczos_lgamma(where(isinf(reflected), 1.0, reflected));
  const Tensor result = where(low, (kPi / (side * kPi).sin().abs()).log() - upper, upper);
  return where(at_pole(d).logical_or(isinf(d)), kInf, result).to(dtype);
}

Tensor digamma(const Tensor& x) {
  auto [d, dtype] = special_input(x);
  const Tensor low = d < 0.5;
  const Tensor reflected = where(low, 1.0 - d, d), side = where(low, d, 0.25);
  const Tensor upper = shifted_digamma(where(isinf(reflected), 1.0, reflected));
  Tensor result = where(low, upper - kPi / (side * kPi).tan(), upper);
  result = where(isinf(d).logical_and(d > 0.0), kInf, where(isinf(d), NAN, result));
  // torch: -inf at 0, NaN at the negative integers
  return where(d == 0.0, -kInf, where(at_pole(d), NAN, result)).to(dtype);
}

Tensor erfinv(const Tensor& x) {
  auto [d, dtype] = special_input(x);
  const Tensor inside = d.abs() < 1.0;
  const Tensor v = where(inside, d, 0.0);
  // Giles, "Approximating the erfinv function" (2010), single precision: two pieces in w.
  const Tensor w = -((1.0 - v) * (1.0 + v)).log();
  const Tensor near = w - 2.5, far = where(w < 5.0, 5.0, w).sqrt() - 3.0;
  static constexpr double a[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                 -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
  static constexpr double b[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                                 -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
  Tensor pa = full_like(w, a[0]), pb = full_like(w, b[0]);
  for (int i = 1; i < 9; ++i) {
    pa = pa * near + a[i];
    pb = pb * far + b[i];
  }
  Tensor y = where(w < 5.0, pa, pb) * v;
  for (int step = 0; step < 2; ++step) y = y - (y.erf() - v) / ((-(y * y)).exp() * 1.12837916709551257390);
  // +-1: +-inf; beyond: NaN (constants: no gradient path through the branch not taken)
  const Tensor edge = where(d.abs() == 1.0, where(d > 0.0, kInf, full_like(d, -kInf)), NAN);
  return where(inside, y, edge).to(dtype);
}

Tensor i0(const Tensor& x) {
  auto [d, dtype] = special_input(x);
  const Tensor near = d.abs() <= 20.0;
  // Near 0: sum_k q^k / (k!)^2 with q = x^2 / 4, all terms positive (at 20 the 40th is 1e-20
  // of the sum). Each branch reads safe values only, so that the other has a finite gradient.
  const Tensor q = where(near, d, 0.0).square() / 4.0;
  Tensor term = ones_like(q), series = ones_like(q);
  for (int k = 1; k <= 40; ++k) {
    term = term * q / static_cast<double>(k * k);
    series = series + term;
  }
  // Beyond: e^|x| / sqrt(2 pi |x|) * sum_k ((2k - 1)!!)^2 / (k! (8 |x|)^k), whose terms shrink
  // until k ~ 2|x|: 30 of them reach 1e-17 at 20.
  const Tensor a = where(near, 20.0, d.abs());
  Tensor step = ones_like(a), tail = ones_like(a);
  for (int k = 1; k <= 30; ++k) {
    step = step * static_cast<double>((2 * k - 1) * (2 * k - 1)) / (a * (8.0 * k));
    tail = tail + step;
  }
  const Tensor far = (a - 0.5 * (a * (2 * kPi)).log()).exp() * tail;
  return where(near, series, far).to(dtype);
}

Tensor frac(const Tensor& x) { return x - x.trunc(); }

Tensor rot90(const Tensor& x, int64_t k, const Dims& dims) {
  if (dims.size() != 2 || x.dim() < 2) fail("[rot90] needs two dims of a tensor of rank >= 2, got ", x.shape());
  const int64_t d0 = dims[0] < 0 ? dims[0] + x.dim() : dims[0], d1 = dims[1] < 0 ? dims[1] + x.dim() : dims[1];
  if (d0 == d1 || d0 < 0 || d1 < 0 || d0 >= x.dim() || d1 >= x.dim())
    fail("[rot90] dims must be two different dims of ", x.shape(), ", got (", dims[0], ", ", dims[1], ")");
  switch (((k % 4) + 4) % 4) {
    case 1: return x.flip({d1}).transpose(d0, d1);
    case 2: return x.flip({d0, d1});
    case 3: return x.flip({d0}).transpose(d0, d1);
    default: return x.clone();
  }
}

Tensor kron(const Tensor& a, const Tensor& b) {
  const int64_t rank = std::max(a.dim(), b.dim());
  // a's dims interleaved with b's: [a0, 1, a1, 1, ...] * [1, b0, 1, b1, ...], then merged pairwise;
  // the shorter shape is padded with leading 1s.
  auto size = [rank](const Tensor& t, int64_t i) { return i < rank - t.dim() ? 1 : t.size(i - (rank - t.dim())); };
  Dims va, vb, out;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t sa = size(a, i), sb = size(b, i);
    va.push_back(sa);
    va.push_back(1);
    vb.push_back(1);
    vb.push_back(sb);
    out.push_back(sa * sb);
  }
  return (a.reshape(va) * b.reshape(vb)).reshape(out);
}

namespace {

/** a x b along dim d of their broadcast shape (d in range, of size 3 in both). */
Tensor cross_at(const Tensor& a, const Tensor& b, int64_t d) {
  auto at = [&](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({at(a, 1) * at(b, 2) - at(a, 2) * at(b, 1), at(a, 2) * at(b, 0) - at(a, 0) * at(b, 2),
              at(a, 0) * at(b, 1) - at(a, 1) * at(b, 0)},
             d);
}

/** a and b broadcast to one shape, after torch's checks of rank and dtype. */
std::pair<Tensor, Tensor> cross_operands(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dim() != b.dim())
    fail<RuntimeError>("[", op, "] a and b must have the same rank, got ", a.shape(), " and ", b.shape());
  if (a.dtype() != b.dtype())
    fail<RuntimeError>("[", op, "] a and b must have one dtype, got ", a.dtype(), " and ", b.dtype());
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  return {a.expand(shape), b.expand(shape)};
}

}  // namespace

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  if (dim) return linalg::cross(a, b, *dim);
  const auto [x, y] = cross_operands(a, b, "cross");
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.size(d) == 3) return cross_at(x, y, d);
  fail<RuntimeError>("[cross] no dim of size 3 in ", x.shape(), " (no dim given)");
}

Tensor linalg::cross(const Tensor& a, const Tensor& b, int64_t dim) {
  const auto [x, y] = cross_operands(a, b, "linalg.cross");
  const int64_t d = wrap_dim(dim, x.dim(), "linalg.cross");
  if (a.size(d) != 3 || b.size(d) != 3)
    fail<RuntimeError>("[linalg.cross] dim ", dim, " must have length 3 in both, got ", a.shape(), " and ", b.shape());
  return cross_at(x, y, d);
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  if (!dim) return x.reshape({-1}).gather(0, indices.reshape({-1}));
  if (x.dim() != indices.dim())
    fail("[take_along_dim] x and indices must have the same rank, got ", x.shape(), " and ", indices.shape());
  const int64_t d = *dim < 0 ? *dim + x.dim() : *dim;
  if (d < 0 || d >= x.dim()) fail<IndexError>("[take_along_dim] dim ", *dim, " out of range for ", x.shape());
  // Every dim but d broadcast between the two; d keeps each one's own length.
  Shape xs = x.shape(), is = indices.shape();
  xs[static_cast<size_t>(d)] = is[static_cast<size_t>(d)] = 1;
  const Shape common = broadcast_shapes(xs, is, "take_along_dim");
  Dims xe(common.begin(), common.end()), ie(common.begin(), common.end());
  xe[static_cast<size_t>(d)] = x.size(d);
  ie[static_cast<size_t>(d)] = indices.size(d);
  return x.expand(xe).gather(d, indices.expand(ie));
}

Tensor isin(const Tensor& elements, const Tensor& test, bool invert) {
  const Tensor found = (elements.unsqueeze(-1) == test.reshape({-1})).any(-1);
  return invert ? found.logical_not() : found;
}

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  if (!x.is_floating_point()) return x.clone();
  const FloatInfo info = finfo(x.dtype());
  const Tensor replaced = where(x == std::numeric_limits<double>::infinity(), posinf.value_or(info.max), x);
  return where(isnan(x), nan,
               where(x == -std::numeric_limits<double>::infinity(), neginf.value_or(info.min), replaced));
}

Tensor nansum(const Tensor& x, const Dims& dims, bool keepdim) {
  const Tensor kept = x.is_floating_point() ? where(isnan(x), 0.0, x) : x;
  if (x.dim() == 0) return sum(kept);
  Dims reduced = dims;
  if (reduced.empty())
    for (int64_t d = 0; d < x.dim(); ++d) reduced.push_back(d);
  return sum(kept, reduced, keepdim);
}

Tensor nanmean(const Tensor& x, const Dims& dims, bool keepdim) {
  if (!x.is_floating_point()) fail<RuntimeError>("[nanmean] needs a floating tensor, got ", x.dtype());
  return nansum(x, dims, keepdim) / nansum(isnan(x).logical_not().to(x.dtype()), dims, keepdim);
}

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim) {
  if (x.dim() == 0) fail<RuntimeError>("[tensor_split] needs at least 1 dim, got a 0-d tensor");
  if (sections <= 0) fail<RuntimeError>("[tensor_split] sections must be positive, got ", sections);
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  std::vector<Tensor> parts;
  for (int64_t i = 0, start = 0; i < sections; ++i) {
    const int64_t length = n / sections + (i < n % sections ? 1 : 0);
    parts.push_back(x.narrow(d, start, length));
    start += length;
  }
  return parts;
}

std::vector<Tensor> tensor_split(const Tensor& x, const Dims& indices, int64_t dim) {
  if (x.dim() == 0) fail<RuntimeError>("[tensor_split] needs at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  // Each part is x[start:end] along d, the points read as slice bounds are: negative ones
  // count from the end, all are clamped to [0, n], and a part never has negative length.
  auto bound = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t point : indices) {
    const int64_t end = bound(point);
    parts.push_back(x.narrow(d, std::min(start, n), std::max<int64_t>(end - start, 0)));
    start = end;
  }
  parts.push_back(x.narrow(d, start, n - start));
  return parts;
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::string_view compute_mode) {
  if (x1.dim() < 2 || x2.dim() < 2 || x1.size(-1) != x2.size(-1))
    fail<RuntimeError>("[cdist] needs x1 [..., P, M] and x2 [..., R, M] with the same M, got shapes ", x1.shape(),
                       " and ", x2.shape());
  if (!x1.is_floating_point() || x1.dtype() != x2.dtype())
    fail<RuntimeError>("[cdist] needs two floating tensors of one dtype, got ", x1.dtype(), " and ", x2.dtype());
  if (p < 0) fail<RuntimeError>("[cdist] p must be non-negative, got ", p);
  const bool mm = compute_mode == "use_mm_for_euclid_dist";
  if (!mm && compute_mode != "use_mm_for_euclid_dist_if_necessary" && compute_mode != "donot_use_mm_for_euclid_dist")
    fail<RuntimeError>(
        "[cdist] compute_mode must be use_mm_for_euclid_dist_if_necessary, use_mm_for_euclid_dist or "
        "donot_use_mm_for_euclid_dist, got '",
        compute_mode, "'");
  const bool large = x1.size(-2) > 25 || x2.size(-2) > 25;
  if (p == 2.0 && (mm || (large && compute_mode == "use_mm_for_euclid_dist_if_necessary"))) {
    // torch's form: |a|^2 + |b|^2 - 2 a.b as one product of padded operands, clamped at 0.
    const Tensor n1 = (x1 * x1).sum(Dims{-1}, true), n2 = (x2 * x2).sum(Dims{-1}, true);
    const Tensor a = cat({x1 * -2.0, n1, ones_like(n1)}, -1), b = cat({x2, ones_like(n2), n2}, -1);
    const Tensor squared = clamp(matmul(a, b.mT()), Scalar(0), std::nullopt);
    // sqrt with a gradient of 0 at 0, as torch's rule gives
    return where(squared == 0.0, 0.0, where(squared == 0.0, 1.0, squared).sqrt());
  }
  const Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  if (p == 2.0) {
    const Tensor squared = (diff * diff).sum(Dims{-1});
    return where(squared == 0.0, 0.0, where(squared == 0.0, 1.0, squared).sqrt());
  }
  return norm(diff, p, Dims{-1});
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  if (mask.dtype() != DType::Bool) fail<TypeError>("[masked_scatter] mask must be bool, got ", mask.dtype());
  if (source.dtype() != x.dtype())
    fail<RuntimeError>("[masked_scatter] source must have the tensor's dtype ", x.dtype(), ", got ", source.dtype());
  const Tensor where_true = mask.expand(Dims(x.shape().begin(), x.shape().end()));
  // Each selected element's place in source: the count of selected elements before it.
  const Tensor place = where_true.reshape({-1}).to(DType::Int64).cumsum(0) - 1;
  if (graph::detail::current_capture) {
    // How many the mask selects is a value of each run, not of the trace: the program takes the
    // general form (and, as under jax.jit, cannot check the count).
    if (source.numel() == 0)
      fail("[masked_scatter] source is empty (shape ", source.shape(),
           "), which a compiled program can take only "
           "with a mask that selects nothing; the mask is not known while the function is traced");
  } else {
    // Under vmap, what the example selecting the most needs.
    const int64_t needed =
        x.numel() ? std::max<int64_t>(ops::integer_range(place.narrow(0, x.numel() - 1, 1)).second + 1, 0) : 0;
    if (needed > source.numel())
      fail<RuntimeError>("[masked_scatter] the mask selects ", needed, " elements, source of shape ", source.shape(),
                         " has ", source.numel());
    if (needed == 0) return x.clone();
  }
  const Tensor taken = source.reshape({-1}).gather(0, clamp(place, Scalar(0), Scalar(source.numel() - 1)));
  return where(where_true, taken.reshape(Dims(x.shape().begin(), x.shape().end())), x);
}

Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  std::vector<Tensor> positions;  // one integer index per leading dim, masks expanded into theirs
  for (const Tensor& index : indices) {
    if (index.dtype() == DType::Bool || index.dtype() == DType::UInt8) {
      const Tensor coords = index.nonzero();
      for (int64_t j = 0; j < coords.size(1); ++j) positions.push_back(coords.select(1, j));
    } else if (!index.is_floating_point()) {
      positions.push_back(index.to(DType::Int64));
    } else {
      fail<IndexError>("[index_put] indices must be integer or bool tensors, got ", index.dtype());
    }
  }
  const int64_t k = static_cast<int64_t>(positions.size());
  if (k == 0 || k > x.dim())
    fail<IndexError>("[index_put] ", k, " index dims for a tensor of shape ", x.shape(), " (", x.dtype(), ")");
  Shape common = positions[0].shape();
  for (const Tensor& p : positions) common = broadcast_shapes(common, p.shape(), "index_put");
  // The positions as one index into x's first k dims flattened, checked and wrapped.
  Tensor linear = zeros({}, {.dtype = DType::Int64, .device = x.device()});
  Tensor outside;  // under a capture: which positions a program's run finds out of range
  int64_t rows = 1;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t n = x.size(j);
    const Tensor& p = positions[static_cast<size_t>(j)];
    const Tensor out_of_range = (p < -n).logical_or(p >= n);
    if (p.numel() && ops::any_true(out_of_range))
      fail<IndexError>("[index_put] an index is out of range for dim ", j, " of size ", n, " (shape ", x.shape(), ")");
    if (graph::detail::current_capture) outside = outside.defined() ? outside.logical_or(out_of_range) : out_of_range;
    linear = linear * n + where(p < 0, p + n, p);
    rows *= n;
  }
  // A position out of range in one dim would land in another row of the flattened x: it gets a
  // position the scatter below refuses instead (the user's own where there is one dim).
  if (outside.defined())
    linear = k == 1 ? where(outside, positions[0], linear) : where(outside, Scalar(-(rows + 1)), linear);
  Dims merged{rows}, spread(common.begin(), common.end());
  for (int64_t d = k; d < x.dim(); ++d) {
    merged.push_back(x.size(d));
    spread.push_back(x.size(d));
  }
  const Tensor flat = x.reshape(merged);
  const Tensor lin = linear.expand(Dims(common.begin(), common.end())).reshape({-1});
  Dims value_rows = merged;
  value_rows[0] = lin.numel();
  const Tensor v = values.to(x.dtype()).expand(spread).reshape(value_rows);
  if (accumulate) return index_add(flat, 0, lin, v).reshape(Dims(x.shape().begin(), x.shape().end()));
  Dims line(merged.size(), 1);
  line[0] = lin.numel();
  return flat.scatter(0, lin.reshape(line).expand(value_rows), v).reshape(Dims(x.shape().begin(), x.shape().end()));
}

}  // namespace ug
