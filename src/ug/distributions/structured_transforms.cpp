#include "ug/distributions/structured_transforms.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ug/core/error.h"
#include "ug/ops/binary.h"
#include "ug/ops/composite.h"
#include "ug/ops/composite_math.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/unary.h"

namespace ug::distributions {

// ---- IndependentTransform ----------------------------------------------------------------

std::string IndependentTransform::repr() const {
  return "IndependentTransform(" + base_->repr() + ", " + std::to_string(n_) + ")";
}

Tensor IndependentTransform::forward(const Tensor& x) const {
  if (x.dim() < domain().event_dim) fail("[IndependentTransform] Too few dimensions on input");
  return base_->forward(x);
}

Tensor IndependentTransform::inverse(const Tensor& y) const {
  if (y.dim() < codomain().event_dim) fail("[IndependentTransform] Too few dimensions on input");
  return base_->inverse(y);
}

Tensor IndependentTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  return sum_rightmost(base_->log_abs_det_jacobian(x, y), n_);
}

// ---- ReshapeTransform --------------------------------------------------------------------

namespace {

/** shape with its rightmost `from` dims replaced by `to` (torch's checks and messages). */
Dims swap_event(const Dims& shape, const Dims& from, const Dims& to) {
  if (shape.size() < from.size()) fail("[ReshapeTransform] Too few dimensions on input");
  const Dims tail(shape.end() - static_cast<int64_t>(from.size()), shape.end());
  if (tail != from) fail("[ReshapeTransform] Shape mismatch: expected ", shape_str(tail), " but got ", shape_str(from));
  return concat(Dims(shape.begin(), shape.end() - static_cast<int64_t>(from.size())), to);
}

Dims batch_of(const Tensor& t, const Dims& event) {
  return Dims(t.shape().begin(), t.shape().end() - static_cast<int64_t>(event.size()));
}

using Map = Tensor (Transform::*)(const Tensor&) const;  // forward or inverse

/** Each part's map on its slice of t along dim (lengths[i] wide), the results joined again. */
Tensor map_slices(const Transforms& parts, const std::vector<int64_t>& lengths, int64_t dim, const Tensor& t, Map map) {
  std::vector<Tensor> out;
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); start += lengths[i], ++i)
    out.push_back((*parts[i].*map)(t.narrow(dim, start, lengths[i])));
  return cat(out, dim);
}

/** Each part's map on its entry of t along dim, the results stacked again. */
Tensor map_entries(const Transforms& parts, int64_t dim, const Tensor& t, Map map) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < parts.size(); ++i) out.push_back((*parts[i].*map)(t.select(dim, static_cast<int64_t>(i))));
  return stack(out, dim);
}

/** Each part's domain or codomain. */
std::vector<Constraint> each(const Transforms& parts, Constraint (Transform::*of)() const) {
  std::vector<Constraint> c;
  for (const auto& t : parts) c.push_back((*t.*of)());
  return c;
}
}  // namespace

ReshapeTransform::ReshapeTransform(Dims in_shape, Dims out_shape)
    : in_(std::move(in_shape)), out_(std::move(out_shape)) {
  if (numel_of(in_) != numel_of(out_))
    fail("[ReshapeTransform] in_shape, out_shape have different numbers of elements");
}

Tensor ReshapeTransform::forward(const Tensor& x) const { return x.reshape(concat(batch_of(x, in_), out_)); }
Tensor ReshapeTransform::inverse(const Tensor& y) const { return y.reshape(concat(batch_of(y, out_), in_)); }

Tensor ReshapeTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return zeros(batch_of(x, in_), like(x));
}

Constraint ReshapeTransform::domain() const {
  return constraints::independent(constraints::real(), static_cast<int64_t>(in_.size()));
}
Constraint ReshapeTransform::codomain() const {
  return constraints::independent(constraints::real(), static_cast<int64_t>(out_.size()));
}
Dims ReshapeTransform::forward_shape(const Dims& shape) const { return swap_event(shape, in_, out_); }
Dims ReshapeTransform::inverse_shape(const Dims& shape) const { return swap_event(shape, out_, in_); }

// ---- CatTransform and StackTransform -----------------------------------------------------

CatTransform::CatTransform(Transforms parts, int64_t dim, std::vector<int64_t> lengths)
    : parts_(std::move(parts)), dim_(dim), lengths_(std::move(lengths)) {
  if (lengths_.empty()) lengths_.assign(parts_.size(), 1);
  if (lengths_.size() != parts_.size())
    fail("[CatTransform] lengths (", lengths_.size(), ") must match transforms (", parts_.size(), ")");
}

int64_t CatTransform::event_dim() const {
  int64_t e = 0;
  for (const auto& t : parts_) e = std::max(e, t->domain().event_dim);
  return e;
}

void CatTransform::check(const Tensor& t, const char* name) const {
  if (dim_ < -t.dim() || dim_ >= t.dim())
    fail("[CatTransform] dim ", dim_, " out of range for ", name, " with ", t.dim(), " dimensions");
  const int64_t length = std::accumulate(lengths_.begin(), lengths_.end(), int64_t{0});
  if (t.size(dim_) != length)
    fail("[CatTransform] ", name, ".size(", dim_, ") = ", t.size(dim_), " must equal length ", length);
}

Tensor CatTransform::forward(const Tensor& x) const {
  check(x, "x");
  return map_slices(parts_, lengths_, dim_, x, &Transform::forward);
}

Tensor CatTransform::inverse(const Tensor& y) const {
  check(y, "y");
  return map_slices(parts_, lengths_, dim_, y, &Transform::inverse);
}

Tensor CatTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  check(x, "x");
  check(y, "y");
  const int64_t e = event_dim();
  std::vector<Tensor> terms;
  int64_t start = 0;
  for (size_t i = 0; i < parts_.size(); start += lengths_[i], ++i) {
    const Tensor term =
        parts_[i]->log_abs_det_jacobian(x.narrow(dim_, start, lengths_[i]), y.narrow(dim_, start, lengths_[i]));
    terms.push_back(sum_rightmost(term, e - parts_[i]->domain().event_dim));
  }
  // dim counted from the right, past the event dims: a batch dim the terms line up along, or
  // one of the event dims they were summed over.
  const int64_t d = (dim_ >= 0 ? dim_ - x.dim() : dim_) + e;
  if (d < 0) return cat(terms, d);
  Tensor total = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) total = total + terms[i];
  return total;
}

Constraint CatTransform::domain() const { return constraints::cat(each(parts_, &Transform::domain), dim_, lengths_); }

Constraint CatTransform::codomain() const {
  return constraints::cat(each(parts_, &Transform::codomain), dim_, lengths_);
}

bool CatTransform::bijective() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& t) { return t->bijective(); });
}

void StackTransform::check(const Tensor& t, const char* name) const {
  if (dim_ < -t.dim() || dim_ >= t.dim())
    fail("[StackTransform] dim ", dim_, " out of range for ", name, " with ", t.dim(), " dimensions");
  if (t.size(dim_) != static_cast<int64_t>(parts_.size()))
    fail("[StackTransform] ", name, ".size(", dim_, ") = ", t.size(dim_), " must equal len(transforms) ",
         parts_.size());
}

Tensor StackTransform::forward(const Tensor& x) const {
  check(x, "x");
  return map_entries(parts_, dim_, x, &Transform::forward);
}

Tensor StackTransform::inverse(const Tensor& y) const {
  check(y, "y");
  return map_entries(parts_, dim_, y, &Transform::inverse);
}

Tensor StackTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  check(x, "x");
  check(y, "y");
  std::vector<Tensor> out;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    out.push_back(parts_[i]->log_abs_det_jacobian(x.select(dim_, k), y.select(dim_, k)));
  }
  return stack(out, dim_);
}

Constraint StackTransform::domain() const { return constraints::stack(each(parts_, &Transform::domain), dim_); }

Constraint StackTransform::codomain() const { return constraints::stack(each(parts_, &Transform::codomain), dim_); }

bool StackTransform::bijective() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& t) { return t->bijective(); });
}

// ---- the matrix transforms ---------------------------------------------------------------

Tensor LowerCholeskyTransform::forward(const Tensor& x) const {
  return tril(x, -1) + diag_embed(x.diagonal(0, -2, -1).exp());
}

Tensor LowerCholeskyTransform::inverse(const Tensor& y) const {
  return tril(y, -1) + diag_embed(y.diagonal(0, -2, -1).log());
}

Tensor PositiveDefiniteTransform::forward(const Tensor& x) const {
  const Tensor l = LowerCholeskyTransform().forward(x);
  return l.matmul(l.mT());
}

Tensor PositiveDefiniteTransform::inverse(const Tensor& y) const {
  return LowerCholeskyTransform().inverse(linalg::cholesky(y));
}

namespace {
/** Row-major flat indices of the entries of a d x d matrix at or below `diag` < 0 (torch's
 *  tril_matrix_to_vec order), from their count alone: no nonzero, so jit can trace it. Entry k
 *  lies in the r-th row that has entries, r = floor((1 + sqrt(1 + 8k)) / 2) (exact: the roots
 *  are of perfect squares where r changes). */
Tensor tril_flat_indices(int64_t d, int64_t diag) {
  const int64_t rows = d + diag;  // rows -diag .. d - 1, the r-th holding r entries
  const Tensor k = arange(rows * (rows + 1) / 2, {.dtype = DType::Float64});
  const Tensor r = ((1 + (1 + 8 * k).sqrt()) / 2).floor();
  const Tensor j = k - r * (r - 1) / 2;
  return ((r - 1 - diag) * static_cast<double>(d) + j).to(DType::Int64);
}

Tensor tril_to_vec(const Tensor& m, int64_t diag) {
  return m.flatten(-2).index_select(-1, tril_flat_indices(m.size(-1), diag));
}

/** The strictly lower d x d matrix holding v (of d (d - 1) / 2) in row order, zeros elsewhere. */
Tensor vec_to_strict_tril(const Tensor& v, int64_t d) {
  const int64_t n = v.size(-1);
  // Where each matrix entry reads from v padded with one zero: index n outside the triangle.
  const Tensor from = scatter(full({d * d}, n, {.dtype = DType::Int64}), 0, tril_flat_indices(d, -1),
                              arange(n, {.dtype = DType::Int64}));
  return pad(v, {0, 1}).index_select(-1, from).unflatten(-1, {d, d});
}

int64_t corr_dim(int64_t n) {
  const auto d = static_cast<int64_t>(std::lround(std::sqrt(0.25 + 2.0 * static_cast<double>(n)) + 0.5));
  if (d * (d - 1) / 2 != n) fail("[CorrCholeskyTransform] Input is not a flattened lower-diagonal number");
  return d;
}

/** 1 prepended to x's last dim less its last entry: x shifted right by one. */
Tensor shift_right(const Tensor& x) { return pad(x.narrow(-1, 0, x.size(-1) - 1), {1, 0}, "constant", 1.0); }
}  // namespace

Tensor CorrCholeskyTransform::forward(const Tensor& x) const {
  const double eps = eps_of(x);
  const Tensor r = vec_to_strict_tril(x.tanh().clamp(Scalar(-1 + eps), Scalar(1 - eps)), corr_dim(x.size(-1)));
  const Tensor rest = (1 - r.square()).sqrt().cumprod(-1);
  const int64_t d = r.size(-1);
  return (r + eye(d, d, like(r))) * shift_right(rest);
}

Tensor CorrCholeskyTransform::inverse(const Tensor& y) const {
  const Tensor left = shift_right(1 - (y * y).cumsum(-1));
  const Tensor t = tril_to_vec(y, -1) / tril_to_vec(left, -1).sqrt();
  return (t.log1p() - (-t).log1p()) / 2;
}

Tensor CorrCholeskyTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  const Tensor left = 1 - (y * y).cumsum(-1);
  const Tensor stick = 0.5 * tril_to_vec(left, -2).log().sum({-1});
  const Tensor tanh_term = -2 * (x + (-2 * x).logaddexp(0) - std::log(2.0)).sum({-1});
  return stick + tanh_term;
}

Dims CorrCholeskyTransform::forward_shape(const Dims& shape) const {
  if (shape.empty()) fail("[CorrCholeskyTransform] Too few dimensions on input");
  const int64_t d = corr_dim(shape.back());
  return concat(Dims(shape.begin(), shape.end() - 1), {d, d});
}

Dims CorrCholeskyTransform::inverse_shape(const Dims& shape) const {
  if (shape.size() < 2) fail("[CorrCholeskyTransform] Too few dimensions on input");
  if (shape[shape.size() - 2] != shape.back()) fail("[CorrCholeskyTransform] Input is not square");
  const int64_t d = shape.back();
  return concat(Dims(shape.begin(), shape.end() - 2), {d * (d - 1) / 2});
}

// ---- biject_to and transform_to ----------------------------------------------------------

namespace {
std::shared_ptr<const Transform> to_set(const Constraint& c, bool bijective) {
  const std::string kind = c.kind();
  auto recurse = [&](const Constraint& part) { return to_set(part, bijective); };
  if (kind == "Real") return std::make_shared<ComposeTransform>(Transforms{});
  if (kind == "IndependentConstraint")
    return std::make_shared<IndependentTransform>(recurse(c.parts[0]), c.event_dim - c.parts[0].event_dim);
  if (kind == "GreaterThan" || kind == "GreaterThanEq") {
    if (!c.lower.defined()) return std::make_shared<ExpTransform>();  // positive, nonnegative
    return std::make_shared<ComposeTransform>(
        Transforms{std::make_shared<ExpTransform>(), std::make_shared<AffineTransform>(c.lower, ones_like(c.lower))});
  }
  if (kind == "LessThan")
    return std::make_shared<ComposeTransform>(
        Transforms{std::make_shared<ExpTransform>(), std::make_shared<AffineTransform>(c.upper, -ones_like(c.upper))});
  if (kind == "Interval" || kind == "HalfOpenInterval") {
    if (!c.lower.defined() || c.repr == constraints::unit_interval().repr) return std::make_shared<SigmoidTransform>();
    return std::make_shared<ComposeTransform>(Transforms{
        std::make_shared<SigmoidTransform>(), std::make_shared<AffineTransform>(c.lower, c.upper - c.lower)});
  }
  if (kind == "Simplex") {
    if (bijective) return std::make_shared<StickBreakingTransform>();
    return std::make_shared<SoftmaxTransform>();
  }
  if (kind == "CorrCholesky") return std::make_shared<CorrCholeskyTransform>();
  if (!bijective && kind == "LowerCholesky") return std::make_shared<LowerCholeskyTransform>();
  if (!bijective && kind == "PositiveDefinite") return std::make_shared<PositiveDefiniteTransform>();
  if (kind == "Cat" || kind == "Stack") {
    Transforms parts;
    for (const Constraint& p : c.parts) parts.push_back(recurse(p));
    if (kind == "Cat") return std::make_shared<CatTransform>(parts, c.dim, c.lengths);
    return std::make_shared<StackTransform>(parts, c.dim);
  }
  throw NotImplementedError(
      detail::cat("[", bijective ? "biject_to" : "transform_to", "] Cannot transform ", c.repr, " constraints"));
}
}  // namespace

std::shared_ptr<const Transform> biject_to(const Constraint& c) { return to_set(c, true); }
std::shared_ptr<const Transform> transform_to(const Constraint& c) { return to_set(c, false); }

}  // namespace ug::distributions
