// torch's order statistics, uniqueness, counting, searching and running extremes (composite.h),
// written with sort, gather, scatter and cumulative sums: their derivatives, batching rules and
// forward mode are those ops'. A selected value is read back from the input by gather, so its
// gradient goes to the element selected, as torch's rules send it.
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "ug/graph/capture.h"
#include "ug/core/value_read.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

Options int64_like(const Tensor& x) { return {.dtype = DType::Int64, .device = x.device()}; }

/** A 0-d x as a 1-d view (torch reduces a 0-d tensor along dim 0 or -1), and the dim wrapped. */
std::pair<Tensor, int64_t> along(const Tensor& x, int64_t dim, const char* op) {
  const Tensor v = x.dim() == 0 ? x.reshape({1}) : x;
  return {v, wrap_dim(dim, v.dim(), op)};
}

/** x's element at sorted position `position` (int64, x's shape with 1 at d) of each row along
 *  d, and its index; a 0-d x gives 0-d results whatever keepdim says, as torch's. */
std::pair<Tensor, Tensor> picked(const Tensor& x, const Tensor& v, int64_t d, const Tensor& order,
                                 const Tensor& position, bool keepdim) {
  const Tensor index = order.gather(d, position);
  const Tensor value = v.gather(d, index);
  if (x.dim() == 0) return {value.reshape({}), index.reshape({})};
  if (keepdim) return {value, index};
  return {value.squeeze(Dims{d}), index.squeeze(Dims{d})};
}

/** The (lower) median along d: sorted position (n - 1) / 2 of each row, or of its non-NaN
 *  values (skip_nan); a row holding a NaN has the NaN as median unless they are skipped. */
std::pair<Tensor, Tensor> median_along(const Tensor& x, int64_t dim, bool keepdim, bool skip_nan, const char* op) {
  auto [v, d] = along(x, dim, op);
  const int64_t n = v.size(d);
  if (n == 0) fail<IndexError>("[", op, "] dim ", d, " of shape ", x.shape(), " (", x.dtype(), ") is empty");
  const Tensor order = argsort(v, d, false, /*stable=*/true);
  Tensor position = full_like(v.narrow(d, 0, 1), (n - 1) / 2, int64_like(v));
  if (v.is_floating_point()) {
    const Tensor nans = isnan(v).sum(Dims{d}, true);  // the NaNs sort last, in their order
    position =
        skip_nan ? clamp(floor_divide(n - 1 - nans, 2), Scalar(0), std::nullopt) : where(nans > 0, n - nans, position);
  }
  return picked(x, v, d, order, position, keepdim);
}

/** The whole tensor's median as a 0-d tensor (NaN for an empty floating tensor, as torch). */
Tensor median_all(const Tensor& x, bool skip_nan, const char* op) {
  if (x.numel() == 0 && x.is_floating_point()) return full({}, NAN, {.dtype = x.dtype(), .device = x.device()});
  return median_along(x.reshape({-1}), 0, false, skip_nan, op).first;
}

/** Where each run of equal values along d starts (the first position, and where `differs` from
 *  the one before: NaN never equals NaN, each is a run of its own), and each position's run
 *  number (int64, from 0). */
std::pair<Tensor, Tensor> runs(const Tensor& first, const Tensor& differs, int64_t d) {
  const Tensor starts = cat({ones_like(first, {.dtype = DType::Bool, .device = first.device()}), differs}, d);
  return {starts, starts.cumsum(d) - 1};
}

/** unique's and unique_consecutive's results from rows (dim 0) in the order `order` (absent: as
 *  they are): the rows that start a run of equal rows, each row's run and the runs' lengths. */
std::tuple<Tensor, Tensor, Tensor> row_runs(const Tensor& rows, const std::optional<Tensor>& order) {
  const int64_t n = rows.size(0);
  const Tensor s = order ? rows.index_select(0, *order) : rows;
  const Tensor differs = (s.narrow(0, 1, n - 1) != s.narrow(0, 0, n - 1)).any(1);
  auto [starts, run] = runs(s.select(1, 0).narrow(0, 0, 1), differs, 0);
  const Tensor firsts = starts.nonzero().reshape({-1});
  const Tensor inverse = order ? zeros_like(run).scatter(0, *order, run) : run;
  const Tensor counts = zeros({firsts.numel()}, int64_like(rows)).scatter_add(0, run, ones_like(run));
  return {order ? order->index_select(0, firsts) : firsts, inverse, counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_rows(const Tensor& x, bool sort_rows, bool return_inverse, bool return_counts,
                                               std::optional<int64_t> dim, const char* op) {
  const Tensor values = x.detach();  // torch defines no derivative
  const Tensor none = zeros({0}, int64_like(x));
  if (!dim) {
    const Tensor flat = values.reshape({-1, 1});
    if (flat.size(0) == 0) return {values.reshape({-1}), return_inverse ? zeros_like(x, int64_like(x)) : none, none};
    auto [firsts, inverse, counts] =
        row_runs(flat, sort_rows ? std::optional(argsort(flat.reshape({-1}), 0, false, true)) : std::nullopt);
    return {flat.reshape({-1}).index_select(0, firsts), return_inverse ? inverse.reshape(x.shape()) : none,
            return_counts ? counts : none};
  }
  if (x.dim() == 0) fail<IndexError>("[", op, "] dim ", *dim, " given for a 0-d tensor (", x.dtype(), ")");
  const int64_t d = wrap_dim(*dim, x.dim(), op);
  const int64_t n = x.size(d);
  if (n == 0 || x.numel() == 0)
    fail<RuntimeError>("[", op, "] with dim ", d, " needs a non-empty tensor, got shape ", x.shape());
  const Tensor rows = values.movedim(d, 0).reshape({n, -1});
  std::optional<Tensor> order;
  if (sort_rows) {  // lexicographic: stable sorts by each column, the last first
    order = arange(n, int64_like(x));
    for (int64_t c = rows.size(1) - 1; c >= 0; --c)
      order = order->index_select(0, argsort(rows.select(1, c).index_select(0, *order), 0, false, true));
  }
  auto [firsts, inverse, counts] = row_runs(rows, order);
  return {values.index_select(d, firsts), return_inverse ? inverse : none, return_counts ? counts : none};
}

/** The insertion points of values (rows [..., N]) into sorted rows seq ([..., M]), from one
 *  stable sort of both: each value's point is the count of sequence elements sorted before it.
 *  Values go first (left: before equal elements) or last (right: after them). */
Tensor insertion_points(const Tensor& seq, const Tensor& values, bool right) {
  const int64_t m = seq.size(-1), n = values.size(-1);
  const Tensor merged = right ? cat({seq, values}, -1) : cat({values, seq}, -1);
  const Tensor order = argsort(merged, -1, false, /*stable=*/true);
  const Tensor from_seq = right ? order < m : order >= n;
  const Tensor before = from_seq.cumsum(-1);  // at a value's place: the sequence elements before it
  const Tensor points = zeros_like(before).scatter(-1, order, before);
  return points.narrow(-1, right ? m : 0, n);
}

/** cummax / cummin: a Hillis-Steele scan of (value, index) pairs in log2(n) steps. The later
 *  element wins a tie, and a NaN wins over every number, as in torch's loop, a rule that is
 *  associative, so the scan's order of combination gives the loop's result. */
std::pair<Tensor, Tensor> running_extreme(const Tensor& x, int64_t dim, bool largest, const char* op) {
  auto [v, d] = along(x, dim, op);
  const int64_t n = v.size(d);
  Dims line(static_cast<size_t>(v.dim()), 1);
  line[static_cast<size_t>(d)] = n;
  Tensor best = v.detach();
  Tensor at = arange(n, int64_like(v)).reshape(line).expand(Dims(v.shape().begin(), v.shape().end()));
  for (int64_t s = 1; s < n; s *= 2) {
    const Tensor prev = best.narrow(d, 0, n - s), cur = best.narrow(d, s, n - s);
    const Tensor later = (largest ? cur >= prev : cur <= prev).logical_or(isnan(cur));
    at = cat({at.narrow(d, 0, s), where(later, at.narrow(d, s, n - s), at.narrow(d, 0, n - s))}, d);
    best = cat({best.narrow(d, 0, s), where(later, cur, prev)}, d);
  }
  const Tensor values = v.gather(d, at);
  if (x.dim() == 0) return {values.reshape({}), at.reshape({})};
  return {values, at};
}

void check_quantile_q(const Tensor& x, const Tensor& q, const char* op) {
  if (!x.is_floating_point() || x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16)
    fail<RuntimeError>("[", op, "] input must be float32 or float64, got ", x.dtype(), " ", x.shape());
  if (q.dtype() != x.dtype())
    fail<RuntimeError>("[", op, "] q must have the input's dtype ", x.dtype(), ", got ", q.dtype());
  if (q.dim() > 1) fail<RuntimeError>("[", op, "] q must be a scalar or a 1-d tensor, got shape ", q.shape());
  if (x.numel() == 0) fail<RuntimeError>("[", op, "] input is empty (shape ", x.shape(), ")");
  if (q.numel() && !ops::all_true((q >= 0.0).logical_and(q <= 1.0)))
    fail<RuntimeError>("[", op, "] q must be in [0, 1], got ", q);
}

enum class Interpolation { Linear, Lower, Higher, Midpoint, Nearest };

Interpolation interpolation_of(std::string_view interpolation, const char* op) {
  static constexpr std::string_view kModes[] = {"linear", "lower", "higher", "midpoint", "nearest"};
  for (int i = 0; i < 5; ++i)
    if (interpolation == kModes[i]) return static_cast<Interpolation>(i);
  fail<RuntimeError>("[", op, "] interpolation must be linear, lower, higher, midpoint or nearest, got '",
                     interpolation, "'");
}

/** torch's quantile: the sorted rows' values at ranks q * (n - 1) (of the non-NaN count when
 *  NaNs are skipped; the last rank, a NaN, when a row holds one and they are not), interpolated
 *  between the neighbours as torch does it (its lerp's two formulas). */
Tensor quantile_of(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation, bool skip_nan, const char* op) {
  check_quantile_q(x, q, op);
  const Interpolation mode = interpolation_of(interpolation, op);
  Tensor rows;  // the reduced elements along the last dim, the others as the result's with keepdim
  int64_t d = 0;
  if (dim) {
    const auto [v, wrapped] = along(x, *dim, op);
    d = wrapped;
    rows = v.unsqueeze(-1).transpose(d, -1);
  } else {
    rows = x.reshape({-1});
  }
  const Tensor sorted = sort(rows, -1).first;
  const int64_t last = sorted.size(-1) - 1;
  const Tensor qs = q.reshape({-1});  // the ranks' last dim: one per q
  Tensor ranks;
  if (skip_nan) {
    const Tensor valid = isnan(sorted).logical_not().sum(Dims{-1}, true);
    ranks = clamp(qs * (valid - 1).to(x.dtype()), Scalar(0), std::nullopt);
  } else {
    ranks = where(isnan(sorted).any(-1, true), static_cast<double>(last), qs * static_cast<double>(last));
  }
  if (mode == Interpolation::Lower) ranks = ranks.floor();
  if (mode == Interpolation::Higher) ranks = ranks.ceil();
  if (mode == Interpolation::Nearest) ranks = ranks.round();
  const Tensor below_at = ranks.to(DType::Int64);
  Tensor result = sorted.gather(-1, below_at);
  if (mode == Interpolation::Linear || mode == Interpolation::Midpoint) {
    const Tensor above = sorted.gather(-1, ranks.ceil().to(DType::Int64));
    const Tensor w = mode == Interpolation::Midpoint ? full_like(ranks, 0.5) : ranks - below_at.to(x.dtype());
    const Tensor span = above - result;
    result = where(w < 0.5, result + w * span, above - span * (1.0 - w));
  }
  result = result.movedim(-1, 0);  // [q, the kept dims]
  if (dim && (!keepdim || x.dim() == 0)) result = result.squeeze(Dims{d + 1});
  if (!dim && keepdim) {
    Dims shape(static_cast<size_t>(x.dim()) + 1, 1);
    shape[0] = qs.numel();
    result = result.reshape(shape);
  }
  return q.dim() == 0 ? result.squeeze(Dims{0}) : result;
}

}  // namespace

Tensor median(const Tensor& x) { return median_all(x, false, "median"); }
Tensor nanmedian(const Tensor& x) { return median_all(x, true, "nanmedian"); }
std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  return median_along(x, dim, keepdim, false, "median");
}
std::pair<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  return median_along(x, dim, keepdim, true, "nanmedian");
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  auto [v, d] = along(x, dim, "kthvalue");
  const int64_t n = v.size(d);
  if (k < 1 || k > n)
    fail<RuntimeError>("[kthvalue] k = ", k, " out of range for dim ", d, " of size ", n, " (shape ", x.shape(),
                       ", dtype ", x.dtype(), ")");
  const Tensor order = argsort(v, d, false, /*stable=*/true);
  return picked(x, v, d, order, full_like(v.narrow(d, 0, 1), k - 1, int64_like(v)), keepdim);
}

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  auto [v, d] = along(x, dim, "mode");
  const int64_t n = v.size(d);
  if (n == 0) fail<IndexError>("[mode] dim ", d, " of shape ", x.shape(), " (", x.dtype(), ") is empty");
  auto [sorted, order] = sort(v.detach(), d, false, /*stable=*/true);
  const Tensor run = runs(sorted.narrow(d, 0, 1), sorted.narrow(d, 1, n - 1) != sorted.narrow(d, 0, n - 1), d).second;
  const Tensor count = zeros_like(run).scatter_add(d, run, ones_like(run)).gather(d, run);
  // The longest run, the smallest value among equally long ones (max's first position: the
  // run's start); torch's index is the value's last occurrence, the run's end (stable sort).
  auto [longest, start] = count.max(d, true);
  return picked(x, v, d, order, start + longest - 1, keepdim);
}

Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                std::string_view interpolation) {
  return quantile_of(x, q, dim, keepdim, interpolation, false, "quantile");
}
Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim, std::string_view interpolation) {
  return quantile(x, full({}, q, {.dtype = x.dtype(), .device = x.device()}), dim, keepdim, interpolation);
}
Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation) {
  return quantile_of(x, q, dim, keepdim, interpolation, true, "nanquantile");
}
Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation) {
  return nanquantile(x, full({}, q, {.dtype = x.dtype(), .device = x.device()}), dim, keepdim, interpolation);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool sorted, bool return_inverse, bool return_counts,
                                          std::optional<int64_t> dim) {
  (void)sorted;  // torch leaves the order unspecified when not sorted: sorted is one such order
  return unique_rows(x, true, return_inverse, return_counts, dim, "unique");
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts,
                                                      std::optional<int64_t> dim) {
  return unique_rows(x, false, return_inverse, return_counts, dim, "unique_consecutive");
}

Tensor bincount(const Tensor& x, const std::optional<Tensor>& weights, int64_t minlength) {
  if (x.dim() != 1 || x.is_floating_point() || x.dtype() == DType::Bool)
    fail<RuntimeError>("[bincount] needs a 1-d tensor of non-negative integers, got ", x.dtype(), " ", x.shape());
  if (minlength < 0) fail<RuntimeError>("[bincount] minlength must be non-negative, got ", minlength);
  if (weights && (weights->dim() != 1 || weights->size(0) != x.size(0)))
    fail<RuntimeError>("[bincount] weights must be 1-d with the input's length ", x.size(0), ", got shape ",
                       weights->shape());
  // As jax.numpy.bincount without a static length: the output's length is the data's.
  if (graph::detail::current_capture)
    fail(
        "[bincount] its output's length is the largest value + 1, which depends on the data; a compiled "
        "program's shapes cannot (as under jax.jit, which asks for length=): count into a fixed length with "
        "zeros(n).scatter_add(0, x, ones_like(x)), or one_hot(x, n).sum(0)");
  const Tensor index = x.to(DType::Int64);
  if (x.numel() && index.min().item<int64_t>() < 0)
    fail<RuntimeError>("[bincount] needs non-negative integers, got a negative one in ", x.dtype(), " ", x.shape());
  const int64_t length = std::max(minlength, x.numel() ? index.max().item<int64_t>() + 1 : 0);
  if (!weights) return zeros({length}, int64_like(x)).scatter_add(0, index, ones_like(index));
  // torch: float32 and float64 weights keep their dtype, any other sums in float64.
  const DType dtype = weights->dtype() == DType::Float32 ? DType::Float32 : DType::Float64;
  return zeros({length}, {.dtype = dtype, .device = x.device()}).scatter_add(0, index, weights->detach().to(dtype));
}

Tensor histc(const Tensor& x, int64_t bins, double min, double max) {
  if (!x.is_floating_point()) fail<RuntimeError>("[histc] needs a floating tensor, got ", x.dtype(), " ", x.shape());
  if (bins <= 0) fail<RuntimeError>("[histc] bins must be > 0, got ", bins);
  const Options like_x{.dtype = x.dtype(), .device = x.device()};
  const Tensor flat = x.detach().reshape({-1});
  const bool from_data = min == max && x.numel();
  if (!from_data && min == max) {
    min -= 1;
    max += 1;
  }
  Tensor left = full({}, min, like_x), right = full({}, max, like_x);
  if (from_data) {  // the data's range, as tensors (a compiled program computes it at every run)
    const Tensor lo = flat.amin(), hi = flat.amax(), one_value = lo.eq(hi);
    left = where(one_value, lo - 1, lo);
    right = where(one_value, hi + 1, hi);
  }
  if (ValueReadScope check; !left.isfinite().logical_and(right.isfinite()).item<bool>())
    fail<RuntimeError>("[histc] range [", left.item<double>(), ", ", right.item<double>(), "] is not finite (",
                       x.dtype(), " ", x.shape(), ")");
  if (min > max) fail<RuntimeError>("[histc] max (", max, ") must be larger than min (", min, ")");
  // torch's arithmetic, in x's dtype: bin (v - lo) * bins / (hi - lo), the top edge in the last
  // bin. Every element takes a bin, weighted 0 outside the range: the shapes never depend on
  // the data.
  const Tensor inside = (flat >= left).logical_and(flat <= right);
  const Tensor bin = ((where(inside, flat, left) - left) * bins / (right - left)).to(DType::Int64);
  const Tensor index = clamp(bin, std::nullopt, Scalar(bins - 1));
  return zeros({bins}, like_x).scatter_add(0, index, inside.to(x.dtype()));
}

namespace {

/** histogram's checks of x and weight. */
void check_histogram_operands(const Tensor& x, const std::optional<Tensor>& weight) {
  if (!x.is_floating_point())
    fail<RuntimeError>("[histogram] needs a floating tensor, got ", x.dtype(), " ", x.shape());
  if (weight && (weight->shape() != x.shape() || weight->dtype() != x.dtype()))
    fail<RuntimeError>("[histogram] weight must have the input's shape ", x.shape(), " and dtype ", x.dtype(), ", got ",
                       weight->dtype(), " ", weight->shape());
}

/** The histogram of x between checked edges (1-d, x's dtype, at least 2 of them). */
std::pair<Tensor, Tensor> histogram_between(const Tensor& x, const Tensor& edges, const std::optional<Tensor>& weight,
                                            bool density) {
  const int64_t bins = edges.numel() - 1;
  const Tensor flat = x.detach().reshape({-1}), e = edges.detach();
  const Tensor inside = (flat >= e.select(0, 0)).logical_and(flat <= e.select(0, bins));
  // The bin whose left edge is the last one <= the value; the top edge is in the last bin.
  const Tensor bin = clamp(searchsorted(e, flat, false, true) - 1, Scalar(0), Scalar(bins - 1));
  const Tensor w = weight ? weight->detach().reshape({-1}) : ones_like(flat);
  Tensor hist = zeros({bins}, {.dtype = x.dtype(), .device = x.device()}).scatter_add(0, bin, where(inside, w, 0.0));
  if (density) hist = hist / (hist.sum() * (e.narrow(0, 1, bins) - e.narrow(0, 0, bins)));
  return {hist, e};
}

}  // namespace

namespace {

/** `bins` + 1 equal-width edges over range, or over x's own range when not given ([0, 1] for an
 *  empty x; an empty range is widened by 0.5 each way), in x's dtype. */
Tensor equal_edges(const char* op, const Tensor& x, int64_t bins, std::optional<std::pair<double, double>> range) {
  if (bins <= 0) fail<RuntimeError>("[", op, "] bins must be > 0, got ", bins);
  if (range && range->first > range->second)
    fail<RuntimeError>("[", op, "] range's min (", range->first, ") must not exceed its max (", range->second, ")");
  const Options like_x{.dtype = x.dtype(), .device = x.device()};
  const auto [lo, hi] = range.value_or(std::pair{0.0, 1.0});  // an empty x without a range: [0, 1]
  Tensor left = full({}, lo == hi ? lo - 0.5 : lo, like_x), right = full({}, lo == hi ? hi + 0.5 : hi, like_x);
  if (!range && x.numel()) {  // the data's range, as tensors (a compiled program computes it at every run)
    const Tensor flat = x.detach().reshape({-1}), low = flat.amin(), high = flat.amax(), one_value = low.eq(high);
    left = where(one_value, low - 0.5, low);
    right = where(one_value, high + 0.5, high);
  }
  if (ValueReadScope check; !left.isfinite().logical_and(right.isfinite()).item<bool>())
    fail<RuntimeError>("[", op, "] range [", left.item<double>(), ", ", right.item<double>(), "] is not finite (",
                       x.dtype(), " ", x.shape(), ")");
  // torch's linspace, in x's dtype: up from the left edge in the first half, down from the right
  // in the second.
  const Tensor i = arange(bins + 1, like_x), step = (right - left) / bins;
  return where(i < (bins + 1) / 2, left + step * i, right - step * (bins - i));
}

}  // namespace

std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins, std::optional<std::pair<double, double>> range,
                                    const std::optional<Tensor>& weight, bool density) {
  check_histogram_operands(x, weight);
  return histogram_between(x, equal_edges("histogram", x, bins, range), weight, density);
}

std::pair<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bins, const std::optional<Tensor>& weight,
                                    bool density) {
  check_histogram_operands(x, weight);
  if (bins.dim() != 1 || bins.numel() < 2 || bins.dtype() != x.dtype())
    fail<RuntimeError>("[histogram] bins must be a 1-d tensor of at least 2 edges in the input's dtype ", x.dtype(),
                       ", got ", bins.dtype(), " ", bins.shape());
  return histogram_between(x, bins, weight, density);
}

namespace {

/** x's points, rows of its last dim, after histogramdd's checks of x, the number of dims and weight. */
Tensor histogramdd_points(const Tensor& x, size_t dims, const std::optional<Tensor>& weight) {
  if (!x.is_floating_point())
    fail<RuntimeError>("[histogramdd] needs a floating tensor, got ", x.dtype(), " ", x.shape());
  if (x.dim() < 2)
    fail<RuntimeError>("[histogramdd] input must have at least 2 dimensions (points in its last), got shape ",
                       x.shape());
  const int64_t d = x.size(-1);
  if (static_cast<int64_t>(dims) != d)
    fail<RuntimeError>("[histogramdd] bins must give one entry per dimension of the points, ", d, " (input ", x.shape(),
                       "), got ", dims);
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  if (weight && (weight->shape() != lead || weight->dtype() != x.dtype()))
    fail<RuntimeError>("[histogramdd] weight must have the input's shape less its last dim, ", lead, ", and dtype ",
                       x.dtype(), ", got ", weight->dtype(), " ", weight->shape());
  return x.detach().reshape({-1, d});
}

/** The histogram of points (n, d) between checked edges, one set per dim. */
std::pair<Tensor, std::vector<Tensor>> histogramdd_between(const Tensor& points, std::vector<Tensor> edges,
                                                           const std::optional<Tensor>& weight, bool density) {
  const int64_t n = points.size(0);
  Tensor inside = ones({n}, {.dtype = DType::Bool, .device = points.device()});
  Tensor flat = zeros({n}, {.dtype = DType::Int64, .device = points.device()});
  Dims shape;
  for (size_t k = 0; k < edges.size(); ++k) {
    const Tensor v = points.select(1, static_cast<int64_t>(k)), e = edges[k].detach();
    const int64_t bins = e.numel() - 1;
    inside = inside.logical_and(v >= e.select(0, 0)).logical_and(v <= e.select(0, bins));
    // as histogram: the last edge <= the value gives the bin; the top edge is in the last bin
    flat = flat * bins + clamp(searchsorted(e, v, false, true) - 1, Scalar(0), Scalar(bins - 1));
    shape.push_back(bins);
  }
  const Tensor w =
      weight ? weight->detach().reshape({-1}) : ones({n}, {.dtype = points.dtype(), .device = points.device()});
  int64_t total = 1;
  for (int64_t b : shape) total *= b;
  Tensor hist = zeros({total}, {.dtype = points.dtype(), .device = points.device()})
                    .scatter_add(0, flat, where(inside, w, 0.0))
                    .reshape(shape);
  if (density) {
    hist = hist / hist.sum();
    for (size_t k = 0; k < edges.size(); ++k) {  // each dim's bin widths along its axis
      const int64_t bins = shape[k];
      Dims along(shape.size(), 1);
      along[k] = bins;
      hist = hist / (edges[k].narrow(0, 1, bins) - edges[k].narrow(0, 0, bins)).reshape(along);
    }
  }
  return {hist, std::move(edges)};
}

}  // namespace

std::pair<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<int64_t>& bins,
                                                   const std::optional<std::vector<double>>& range,
                                                   const std::optional<Tensor>& weight, bool density) {
  const Tensor points = histogramdd_points(x, bins.size(), weight);
  if (range && range->size() != 2 * bins.size())
    fail<RuntimeError>("[histogramdd] for a ", bins.size(), "-dimensional histogram range should have ",
                       2 * bins.size(), " elements, but got ", range->size());
  std::vector<Tensor> edges;
  for (size_t k = 0; k < bins.size(); ++k) {
    std::optional<std::pair<double, double>> r;
    if (range) r = std::pair{(*range)[2 * k], (*range)[2 * k + 1]};
    edges.push_back(equal_edges("histogramdd", points.select(1, static_cast<int64_t>(k)), bins[k], r));
  }
  return histogramdd_between(points, std::move(edges), weight, density);
}

std::pair<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<Tensor>& bins,
                                                   const std::optional<Tensor>& weight, bool density) {
  const Tensor points = histogramdd_points(x, bins.size(), weight);
  for (const Tensor& e : bins)
    if (e.dim() != 1 || e.numel() < 2 || e.dtype() != x.dtype())
      fail<RuntimeError>("[histogramdd] each dim's bins must be a 1-d tensor of at least 2 edges in the input's dtype ",
                         x.dtype(), ", got ", e.dtype(), " ", e.shape());
  return histogramdd_between(points, bins, weight, density);
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  if (side && *side != "left" && *side != "right")
    fail<RuntimeError>("[searchsorted] side must be 'left' or 'right', got '", *side, "'");
  if (side && right && *side == "left")
    fail<RuntimeError>("[searchsorted] side 'left' and right=True contradict each other");
  const bool upper = right || (side && *side == "right");
  const Tensor& seq = sorted_sequence;
  if (seq.dim() == 0) fail<RuntimeError>("[searchsorted] sorted_sequence must have at least 1 dim, got a 0-d tensor");
  bool leading_match = seq.dim() == values.dim();
  for (int64_t i = 0; leading_match && i + 1 < seq.dim(); ++i) leading_match = seq.size(i) == values.size(i);
  if (seq.dim() > 1 && !leading_match)
    fail<RuntimeError>("[searchsorted] sorted_sequence of shape ", seq.shape(),
                       " must be 1-d or share all but its last dim with values, of shape ", values.shape());
  Tensor ordered = seq.detach();
  if (sorter) {
    if (sorter->shape() != seq.shape() || sorter->is_floating_point() || sorter->dtype() == DType::Bool)
      fail<RuntimeError>("[searchsorted] sorter must be integer indices of sorted_sequence's shape ", seq.shape(),
                         ", got ", sorter->dtype(), " ", sorter->shape());
    ordered = ordered.gather(-1, sorter->to(DType::Int64));
  }
  Tensor points;
  if (seq.dim() == 1) {
    points = insertion_points(ordered.unsqueeze(0), values.detach().reshape({1, -1}), upper).reshape(values.shape());
  } else {
    points = insertion_points(ordered, values.detach(), upper);
  }
  return out_int32 ? points.to(DType::Int32) : points;
}

Tensor searchsorted(const Tensor& sorted_sequence, Scalar value, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  return searchsorted(sorted_sequence, scalar_tensor(value, {.device = sorted_sequence.device()}), out_int32, right,
                      side, sorter);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
  if (boundaries.dim() != 1) fail<RuntimeError>("[bucketize] boundaries must be 1-d, got shape ", boundaries.shape());
  return searchsorted(boundaries, x, out_int32, right);
}

std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) { return running_extreme(x, dim, true, "cummax"); }
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) { return running_extreme(x, dim, false, "cummin"); }

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  if (!x.is_floating_point())
    fail<RuntimeError>("[logcumsumexp] needs a floating tensor, got ", x.dtype(), " ", x.shape());
  auto [v, d] = along(x, dim, "logcumsumexp");
  const int64_t n = v.size(d);
  // A Hillis-Steele scan of logaddexp: log2(n) steps, each without overflow.
  Tensor out = v;
  for (int64_t s = 1; s < n; s *= 2)
    out = cat({out.narrow(d, 0, s), logaddexp(out.narrow(d, 0, n - s), out.narrow(d, s, n - s))}, d);
  return x.dim() == 0 ? out.reshape({}) : out;
}

}  // namespace ug
