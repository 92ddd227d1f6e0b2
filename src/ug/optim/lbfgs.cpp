#include "ug/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <tuple>

#include "ug/graph/grad_mode.h"

namespace ug::optim {

LBFGSOptions::operator Hyper() const {
  if (lr_ < 0) fail<ValueError>("[LBFGS] Invalid learning rate: ", lr_);
  const int64_t max_eval = max_eval_ ? *max_eval_ : max_iter_ * 5 / 4;
  return {{"lr", lr_},
          {"max_iter", double(max_iter_)},
          {"max_eval", double(max_eval)},
          {"tolerance_grad", tolerance_grad_},
          {"tolerance_change", tolerance_change_},
          {"history_size", double(history_size_)},
          {"line_search_fn", line_search_fn_ ? HyperValue(*line_search_fn_) : HyperValue(std::monostate{})}};
}

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options)
    : LBFGS(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

LBFGS::LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults) : Optimizer("LBFGS", std::move(groups), defaults) {
  if (param_groups().size() != 1)
    fail<ValueError>("[LBFGS] doesn't support per-parameter options (parameter groups): got ", param_groups().size(),
                     " groups");
}

TensorDict LBFGS::init_state(const Tensor&, const Hyper&) const {
  fail<RuntimeError>("[LBFGS] has no per-parameter update: call step(closure), the closure re-evaluating the loss");
}

void LBFGS::update_param(const Hyper& h, const Tensor& param, const Tensor&, TensorDict&) const {
  init_state(param, h);
}

namespace {

template <class T> using Vec = std::vector<T>;

// Reductions accumulate in double and round to T: torch's give a tensor of the parameters' dtype.
template <class T> T dot(const Vec<T>& a, const Vec<T>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return T(s);
}

template <class T> T abs_max(const Vec<T>& a) {
  T m = 0;
  for (T v : a) m = std::max(m, std::abs(v));
  return m;
}

template <class T> T abs_sum(const Vec<T>& a) {
  double s = 0;
  for (T v : a) s += std::abs(double(v));
  return T(s);
}

template <class T> Vec<T> neg(const Vec<T>& a) {
  Vec<T> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = -a[i];
  return out;
}

/** The parameters seen as one flat vector, and the closure that evaluates the loss at them. */
template <class T> class Problem {
 public:
  Problem(const std::vector<Tensor>& params, const Optimizer::LossClosure& closure)
      : params_(params), closure_(closure) {
    for (const Tensor& p : params) n_ += p.numel();
  }
  int64_t n() const { return n_; }

  /** The loss (the closure runs with grad mode on), kept in `out` when given. */
  double evaluate(Tensor* out = nullptr) const {
    Tensor loss;
    {
      EnableGradGuard enable;
      loss = closure_();
    }
    if (!loss.defined() || loss.numel() != 1)
      fail<ValueError>("[LBFGS] the closure must return the loss, a single number");
    if (out) *out = loss;
    return loss.item<double>();
  }

  /** The gradients in parameter order, zeros for a parameter without one. */
  Vec<T> flat_grad() const {
    Vec<T> g(n_, T(0));
    int64_t off = 0;
    for (const Tensor& p : params_) {
      if (Tensor grad = p.grad(); grad.defined()) {
        if (grad.dtype() != p.dtype() || grad.shape() != p.shape())
          fail<ValueError>("[LBFGS] gradient of shape ", grad.shape(), " and dtype ", grad.dtype(),
                           " for a parameter of shape ", p.shape(), " and dtype ", p.dtype());
        const Tensor c = grad.detach().contiguous();
        std::copy_n(c.data_ptr<T>(), p.numel(), g.data() + off);
      }
      off += p.numel();
    }
    return g;
  }

  /** params += t * d, rounded as torch's p.add_(d, alpha=t). */
  void add(double t, const Vec<T>& d) const {
    const T a = T(t);
    int64_t off = 0;
    for (const Tensor& p : params_) {
      Tensor work = p.is_contiguous() ? p : p.contiguous();
      T* x = work.data_ptr<T>();
      for (int64_t i = 0; i < p.numel(); ++i) x[i] = x[i] + a * d[off + i];
      if (work.impl_ref().get() != p.impl_ref().get()) Tensor(p).copy_(work);
      p.bump_version();
      off += p.numel();
    }
  }

  std::vector<Tensor> values() const {
    std::vector<Tensor> out;
    for (const Tensor& p : params_) out.push_back(p.to(p.dtype(), /*copy=*/true).contiguous());
    return out;
  }

  void set(const std::vector<Tensor>& values) const {
    for (size_t i = 0; i < params_.size(); ++i) Tensor(params_[i]).copy_(values[i]);
  }

 private:
  const std::vector<Tensor>& params_;
  const Optimizer::LossClosure& closure_;
  int64_t n_ = 0;
};

/** The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, within bounds
 *  (by default [x1, x2]); their middle where the cubic has no minimum. */
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair(x1, x2) : std::pair(x2, x1));
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

template <class T> struct Search {
  double f;
  Vec<T> g;
  double t;
  int64_t evals;
};

/** torch's _strong_wolfe: a step t along d satisfying the strong Wolfe conditions, found by
 *  bracketing then zooming with cubic interpolation, in at most max_ls evaluations. obj(t) gives
 *  the loss and gradient at x + t d. */
template <class T, class Obj>
Search<T> strong_wolfe(const Obj& obj, double t, const Vec<T>& d, double f, const Vec<T>& g, double gtd,
                       int64_t max_ls) {
  constexpr double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;  // torch passes its defaults
  const double d_norm = abs_max(d);
  auto [f_new, g_new] = obj(t);
  int64_t evals = 1;
  double gtd_new = dot(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Vec<T> g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Vec<T>> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair(min_step, max_step));
    t_prev = tmp, f_prev = f_new, g_prev = g_new, gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) bracket = {0, t}, bracket_f = {f, f_new}, bracket_g = {g, g_new};

  // Zoom: shrink the bracket until a point satisfies the conditions.
  bool insuf_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double b_max = std::max(bracket[0], bracket[1]), b_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (std::min(b_max - t, t - b_min) < eps) {
      // Too close to an end: move away from it, unless the last step made progress.
      if (insuf_progress || t >= b_max || t <= b_min) {
        t = std::abs(t - b_max) < std::abs(t - b_min) ? b_max - eps : b_min + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t, bracket_f[high] = f_new, bracket_g[high] = g_new, bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low], bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low], bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t, bracket_f[low] = f_new, bracket_g[low] = g_new, bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], std::move(bracket_g[low]), bracket[low], evals};
}

double number(const TensorDict& state, const std::string& key, double otherwise) {
  const Tensor* t = state.find(key);
  return t ? t->item<double>() : otherwise;
}

template <class T> Vec<T> vec_from(const Tensor& t, int64_t n) {
  if (t.numel() != n)
    fail<ValueError>("[LBFGS] state of ", t.numel(), " elements for parameters of ", n, " elements in all");
  const Tensor c = t.to(dtype_of<T>, /*copy=*/false).contiguous();
  return Vec<T>(c.data_ptr<T>(), c.data_ptr<T>() + n);
}

template <class T> std::deque<Vec<T>> rows_from(const TensorDict& state, const std::string& key, int64_t n) {
  std::deque<Vec<T>> out;
  const Tensor* t = state.find(key);
  if (!t) return out;
  if (t->dim() != 2 || t->shape()[1] != n)
    fail<ValueError>("[LBFGS] state '", key, "' of shape ", t->shape(), ", expected rows of ", n, " elements");
  for (int64_t i = 0; i < t->shape()[0]; ++i) out.push_back(vec_from<T>(t->select(0, i), n));
  return out;
}

template <class T> Tensor tensor_of(const Vec<T>& v) {
  Tensor out = zeros({static_cast<int64_t>(v.size())}, Options{dtype_of<T>, {}});
  std::copy(v.begin(), v.end(), out.data_ptr<T>());
  return out;
}

template <class T> Tensor rows_tensor(const std::deque<Vec<T>>& rows, int64_t n) {
  Tensor out = zeros({static_cast<int64_t>(rows.size()), n}, Options{dtype_of<T>, {}});
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), out.data_ptr<T>() + i * n);
  return out;
}

Tensor number_tensor(double v, DType dtype) { return scalar_tensor(v, Options{dtype, {}}); }

/** torch's LBFGS.step: the rounding of each vector operation and of each reduction's result to
 *  T follows it; reductions sum in double. */
template <class T>
Tensor lbfgs_step(const std::vector<Tensor>& params, const Hyper& h, TensorDict& state,
                  const Optimizer::LossClosure& closure) {
  const double lr = hyper_get<double>(h, "lr"), tolerance_grad = hyper_get<double>(h, "tolerance_grad");
  const double tolerance_change = hyper_get<double>(h, "tolerance_change");
  const auto max_iter = static_cast<int64_t>(hyper_get<double>(h, "max_iter"));
  const auto max_eval = static_cast<int64_t>(hyper_get<double>(h, "max_eval"));
  const auto history_size = static_cast<size_t>(hyper_get<double>(h, "history_size"));
  bool wolfe = false;
  if (const HyperValue* ls = h.find("line_search_fn"); ls && !std::holds_alternative<std::monostate>(*ls)) {
    const std::string* name = std::get_if<std::string>(ls);
    if (!name || *name != "strong_wolfe")
      fail<RuntimeError>("[LBFGS] only 'strong_wolfe' is supported as line_search_fn");
    wolfe = true;
  }

  Problem<T> prob(params, closure);
  const int64_t n = prob.n();
  auto func_evals = static_cast<int64_t>(number(state, "func_evals", 0));
  auto n_iter = static_cast<int64_t>(number(state, "n_iter", 0));
  auto save_counters = [&] {
    state.insert("func_evals", number_tensor(double(func_evals), DType::Int64));
    state.insert("n_iter", number_tensor(double(n_iter), DType::Int64));
  };

  Tensor orig_loss;
  double loss = prob.evaluate(&orig_loss);
  int64_t current_evals = 1;
  ++func_evals;
  Vec<T> flat_grad = prob.flat_grad();
  bool opt_cond = abs_max(flat_grad) <= T(tolerance_grad);
  if (opt_cond) {
    save_counters();
    return orig_loss;
  }

  const Tensor* saved_d = state.find("d");
  Vec<T> d = saved_d ? vec_from<T>(*saved_d, n) : Vec<T>();
  const Tensor* saved_prev = state.find("prev_flat_grad");
  Vec<T> prev_flat_grad = saved_prev ? vec_from<T>(*saved_prev, n) : Vec<T>();
  std::deque<Vec<T>> old_dirs = rows_from<T>(state, "old_dirs", n), old_stps = rows_from<T>(state, "old_stps", n);
  std::deque<T> ro;
  if (const Tensor* r = state.find("ro"))
    for (T v : vec_from<T>(*r, r->numel())) ro.push_back(v);
  if (ro.size() != old_dirs.size() || old_stps.size() != old_dirs.size())
    fail<ValueError>("[LBFGS] state with ", old_dirs.size(), " old_dirs, ", old_stps.size(), " old_stps and ",
                     ro.size(), " ro");
  double t = number(state, "t", lr), prev_loss = number(state, "prev_loss", 0);
  T h_diag = T(number(state, "H_diag", 1));

  for (int64_t iter = 1; iter <= max_iter; ++iter) {
    ++n_iter;
    if (n_iter == 1) {
      d = neg(flat_grad);
      old_dirs.clear(), old_stps.clear(), ro.clear();
      h_diag = 1;
    } else {
      // The newest curvature pair (gradient change y, step s), kept where y.s > 1e-10.
      if (d.size() != size_t(n) || prev_flat_grad.size() != size_t(n))
        fail<ValueError>("[LBFGS] state lacks the last direction or gradient");
      Vec<T> y(n), s(n);
      const T tt = T(t);
      for (int64_t i = 0; i < n; ++i) y[i] = flat_grad[i] - prev_flat_grad[i], s[i] = d[i] * tt;
      const T ys = dot(y, s);
      if (ys > T(1e-10)) {
        if (old_dirs.size() == history_size) old_dirs.pop_front(), old_stps.pop_front(), ro.pop_front();
        old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(T(1) / ys);
        h_diag = ys / dot(y, y);
      }
      // The two-loop recursion: d = -H g with H the inverse Hessian estimate.
      const size_t k = old_dirs.size();
      std::vector<T> al(k);
      Vec<T> q = neg(flat_grad);
      for (size_t i = k; i-- > 0;) {
        al[i] = dot(old_stps[i], q) * ro[i];
        const T a = -al[i];
        for (int64_t j = 0; j < n; ++j) q[j] = q[j] + a * old_dirs[i][j];
      }
      for (int64_t j = 0; j < n; ++j) q[j] = q[j] * h_diag;
      d = std::move(q);
      for (size_t i = 0; i < k; ++i) {
        const T be_i = dot(old_dirs[i], d) * ro[i];
        const T a = al[i] - be_i;
        for (int64_t j = 0; j < n; ++j) d[j] = d[j] + a * old_stps[i][j];
      }
    }
    prev_flat_grad = flat_grad;
    prev_loss = loss;
    if (n_iter == 1) {
      const T inv = T(1) / abs_sum(flat_grad);
      t = inv < T(1) ? double(inv * T(lr)) : lr;
    } else {
      t = lr;
    }
    const T gtd = dot(flat_grad, d);
    if (gtd > T(-tolerance_change)) break;  // not a descent direction

    int64_t ls_evals = 0;
    if (wolfe) {
      const std::vector<Tensor> x_init = prob.values();
      auto obj = [&](double step) {
        prob.add(step, d);
        const double f = prob.evaluate();
        Vec<T> g = prob.flat_grad();
        prob.set(x_init);
        return std::pair(f, std::move(g));
      };
      Search<T> found = strong_wolfe<T>(obj, t, d, loss, flat_grad, gtd, max_eval - current_evals);
      loss = found.f, flat_grad = std::move(found.g), t = found.t, ls_evals = found.evals;
      prob.add(t, d);
      opt_cond = abs_max(flat_grad) <= T(tolerance_grad);
    } else {
      prob.add(t, d);
      if (iter != max_iter) {
        loss = prob.evaluate();
        flat_grad = prob.flat_grad();
        opt_cond = abs_max(flat_grad) <= T(tolerance_grad);
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    func_evals += ls_evals;

    if (iter == max_iter || current_evals >= max_eval || opt_cond) break;
    T step_max = 0;
    for (T v : d) step_max = std::max(step_max, std::abs(v * T(t)));
    if (step_max <= T(tolerance_change)) break;
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }

  save_counters();
  state.insert("d", tensor_of(d));
  state.insert("t", number_tensor(t, DType::Float64));
  state.insert("old_dirs", rows_tensor(old_dirs, n));
  state.insert("old_stps", rows_tensor(old_stps, n));
  state.insert("ro", tensor_of(Vec<T>(ro.begin(), ro.end())));
  state.insert("H_diag", number_tensor(double(h_diag), dtype_of<T>));
  state.insert("prev_flat_grad", tensor_of(prev_flat_grad));
  state.insert("prev_loss", number_tensor(prev_loss, DType::Float64));
  return orig_loss;
}

}  // namespace

Tensor LBFGS::step(const LossClosure& closure) {
  if (!closure) fail<ValueError>("[LBFGS] step needs a closure that re-evaluates the loss: step(closure)");
  if (param_groups().size() != 1)
    fail<ValueError>("[LBFGS] doesn't support per-parameter options (parameter groups): has ", param_groups().size(),
                     " groups");
  const ParamGroup& group = param_groups()[0];
  const std::vector<Tensor>& params = group.params();
  for (const Tensor& p : params)
    if (p.dtype() != params[0].dtype())
      fail<TypeError>("[LBFGS] all parameters must have one dtype, got ", params[0].dtype(), " and ", p.dtype());
  NoGradGuard no_grad;
  Tensor loss;
  UG_OPTIM_DISPATCH(params[0].dtype(), T, { loss = lbfgs_step<T>(params, group.options(), state(params[0]), closure); })
  return loss;
}

}  // namespace ug::optim
