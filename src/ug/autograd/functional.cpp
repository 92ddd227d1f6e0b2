#include "ug/autograd/functional.h"

#include <atomic>
#include <cstdlib>

#include "ug/autograd/engine.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/record.h"
#include "ug/autograd/tape.h"
#include "ug/core/batching.h"
#include "ug/core/random.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"

namespace ug {

namespace {

thread_local int t_transform_depth = 0;
std::atomic<int64_t> g_vmap_fallbacks{0};
thread_local std::string t_last_vmap_fallback;

/** The r-th unit vector of length n in like's dtype and device, made with ops rather than
 *  written in place, so that a trace (ug.jit of jacrev) records it as a constant. */
Tensor unit_vector(int64_t n, int64_t r, const Tensor& like) {
  NoGradGuard no_grad;
  return (arange(n, {.dtype = DType::Int64, .device = like.device()}) == r).to(like.dtype());
}

/** Counts nested transforms: inside one, every gradient must stay differentiable. */
struct TransformScope {
  TransformScope() { ++t_transform_depth; }
  ~TransformScope() { --t_transform_depth; }
};

/** Whether an enclosing transform or backward differentiates x: x requires grad or carries
 *  a tangent, or inside vmap the physical tensor under it does (grad(vmap(grad(f))): the
 *  batched argument does not require grad, the outer transform's input under it does). */
bool in_outer_graph(const Tensor& x) {
  if (x.requires_grad() || (forward::active() && forward::has_tangent(x))) return true;
  const int lvl = batching::level(x);
  return lvl > 0 && in_outer_graph(batching::physical(x, lvl));
}

/** A fresh input for the transform: a differentiable alias when x already takes part in a
 *  graph at its own level (so the outer transform sees through), else a new leaf. The leaf
 *  is cut off from x's history, except from that of a batched x's physical tensor: that is
 *  an outer transform's, and the gradient found here must stay differentiable to it. */
Tensor fresh_input(const Tensor& x) {
  if (!is_inexact(x.dtype())) return x;
  if (x.requires_grad()) return x.view(x.shape());
  const int lvl = batching::level(x);
  Tensor leaf = lvl > 0 && in_outer_graph(x) ? batching::wrap(batching::physical(x, lvl), lvl) : x.detach();
  leaf.requires_grad_(true);
  forward::copy_tangents(x, leaf);  // inside jvp (say, jacfwd(jacrev(f))) the tangents go along
  return leaf;
}

/** Gradients must form a graph when an enclosing transform, tape or backward may need them. */
bool need_graph(const Tensors& args) {
  if (!GradMode::is_enabled()) return false;
  if (t_transform_depth > 1 || GradientTape::any_recording()) return true;
  for (const Tensor& a : args)
    if (a.defined() && in_outer_graph(a)) return true;
  return false;
}

Tensors run(const TensorFn& f, const Tensors& inputs) {
  EnableGradGuard enable;
  Tensors out = f(inputs);
  if (out.empty()) fail("[transform] the function returned no tensors");
  return out;
}

/** A zero gradient for inputs the outputs do not depend on (JAX returns zeros). */
Tensor or_zeros(const Tensor& g, const Tensor& like) { return g.defined() ? g : zeros_like(like); }

}  // namespace

std::pair<Tensors, Tensors> value_and_grad(const TensorFn& f, const Tensors& args, const std::vector<int>& argnums) {
  TransformScope scope;
  Tensors inputs = args;
  for (int i : argnums) {
    if (i < 0 || i >= static_cast<int>(args.size()))
      fail<IndexError>("[grad] argnums entry ", i, " is out of range for ", args.size(), " arguments");
    if (!is_inexact(args[i].dtype()))
      fail<TypeError>("[grad] argument ", i, " has dtype ", args[i].dtype(),
                      "; only floating point and complex inputs can be differentiated");
    inputs[i] = fresh_input(args[i]);
  }
  Tensors out = run(f, inputs);
  if (out[0].numel() != 1)
    fail<TypeError>("[grad] the function must return a single-element tensor to differentiate, got shape ",
                    out[0].shape(), " (use jacrev or vjp for other outputs)");
  Tensors wrt;
  for (int i : argnums) wrt.push_back(inputs[i]);
  const bool graph = need_graph(args);
  Tensors grads;
  if (out[0].requires_grad()) {
    grads = autograd::grad({out[0]}, wrt, {}, graph, graph, true);
  } else {
    grads.resize(wrt.size());
  }
  for (size_t k = 0; k < grads.size(); ++k) grads[k] = or_zeros(grads[k], wrt[k]);
  if (!graph)
    for (Tensor& o : out) o = o.detach();
  return {out, grads};
}

std::pair<Tensors, std::function<Tensors(const Tensors&)>> vjp(const TensorFn& f, const Tensors& primals) {
  TransformScope scope;
  Tensors inputs;
  for (const Tensor& p : primals) inputs.push_back(fresh_input(p));
  Tensors out = run(f, inputs);
  const bool graph = need_graph(primals);
  auto pullback = [out, inputs, graph](const Tensors& cotangents) {
    if (cotangents.size() != out.size()) fail("[vjp] expected ", out.size(), " cotangents, got ", cotangents.size());
    Tensors roots, weights;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].requires_grad()) {
        roots.push_back(out[i]);
        weights.push_back(cotangents[i]);
      }
    Tensors grads(inputs.size());
    Tensors wrt;
    std::vector<size_t> where;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].requires_grad()) {
        wrt.push_back(inputs[i]);
        where.push_back(i);
      }
    if (!roots.empty() && !wrt.empty()) {
      Tensors g = autograd::grad(roots, wrt, weights, true, graph || GradMode::is_enabled(), true);
      for (size_t k = 0; k < where.size(); ++k) grads[where[k]] = g[k];
    }
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = or_zeros(grads[i], inputs[i]);
    return grads;
  };
  Tensors values = out;
  if (!graph)
    for (Tensor& v : values) v = v.detach();
  return {values, pullback};
}

std::pair<Tensors, Tensors> jvp(const TensorFn& f, const Tensors& primals, const Tensors& tangents) {
  if (tangents.size() != primals.size())
    fail("[jvp] expected one tangent per primal: ", primals.size(), " primals, ", tangents.size(), " tangents");
  for (size_t i = 0; i < primals.size(); ++i)
    if (!(tangents[i].shape() == primals[i].shape()))
      fail("[jvp] tangent ", i, " has shape ", tangents[i].shape(), " but its primal has shape ", primals[i].shape());
  TransformScope scope;
  // Forward mode: the inputs carry the tangents at a fresh level, each op's forward rule
  // carries them on, and the outputs' tangents are the answer.
  forward::Level level;
  Tensors inputs;
  for (size_t i = 0; i < primals.size(); ++i) {
    Tensor x = primals[i];
    if (is_inexact(x.dtype())) {
      x = x.view(x.shape());  // a fresh handle to hang the tangent on, still in any outer graph
      forward::set_tangent(x, level.id(), tangents[i].to(x.dtype()));
    }
    inputs.push_back(x);
  }
  Tensors out = run(f, inputs);
  const bool graph = need_graph(primals) || need_graph(tangents);
  Tensors tangent_out;
  for (Tensor& o : out) {
    Tensor t = forward::tangent(o, level.id());
    tangent_out.push_back(t.defined() ? t : zeros_like(o));
    if (!graph) {
      o = o.detach();
      tangent_out.back() = tangent_out.back().detach();
    }
  }
  return {out, tangent_out};
}

Tensors jacrev(const TensorFn& f, const Tensors& args, int argnum) {
  if (argnum < 0 || argnum >= static_cast<int>(args.size()))
    fail<IndexError>("[jacrev] argnum ", argnum, " out of range");
  Tensors fixed = args;
  auto [out, pullback] = vjp(
      [&](const Tensors& x) {
        Tensors all = fixed;
        all[argnum] = x[0];
        return f(all);
      },
      {args[argnum]});
  const Tensor& x = args[argnum];
  Tensors jacobians;
  for (size_t k = 0; k < out.size(); ++k) {
    // One pullback per output element: row r of the Jacobian is the gradient of out[k][r].
    Tensors rows;
    for (int64_t r = 0; r < out[k].numel(); ++r) {
      Tensors cot;
      for (size_t j = 0; j < out.size(); ++j) cot.push_back(zeros_like(out[j]));
      cot[k] = unit_vector(out[k].numel(), r, out[k]).view(out[k].shape());
      rows.push_back(pullback(cot)[0]);
    }
    Dims shape(out[k].shape().begin(), out[k].shape().end());
    for (int64_t d : x.shape()) shape.push_back(d);
    jacobians.push_back(rows.empty() ? zeros(shape, {.dtype = x.dtype()}) : stack(rows).reshape(shape));
  }
  return jacobians;
}

Tensors jacfwd(const TensorFn& f, const Tensors& args, int argnum) {
  if (argnum < 0 || argnum >= static_cast<int>(args.size()))
    fail<IndexError>("[jacfwd] argnum ", argnum, " out of range");
  const Tensor& x = args[argnum];
  std::vector<Tensors> columns;  // columns[c][k]: d out[k] / d x[c]
  Tensors out;
  for (int64_t c = 0; c < x.numel(); ++c) {
    Tensors tangents;
    for (size_t i = 0; i < args.size(); ++i) tangents.push_back(zeros_like(args[i]));
    tangents[argnum] = unit_vector(x.numel(), c, x).view(x.shape());
    auto [o, t] = jvp(f, args, tangents);
    out = o;
    columns.push_back(t);
  }
  if (columns.empty()) out = run(f, args);
  Tensors jacobians;
  for (size_t k = 0; k < out.size(); ++k) {
    Dims shape(out[k].shape().begin(), out[k].shape().end());
    for (int64_t d : x.shape()) shape.push_back(d);
    if (columns.empty()) {
      jacobians.push_back(zeros(shape, {.dtype = out[k].dtype()}));
      continue;
    }
    Tensors cols;
    for (const Tensors& c : columns) cols.push_back(c[k].reshape({-1}));
    jacobians.push_back(stack(cols, -1).reshape(shape));
  }
  return jacobians;
}

namespace {

/** Where output k's batch dim goes: out_axes[k], 0 when out_axes is empty. */
std::optional<int64_t> out_axis(const std::vector<std::optional<int64_t>>& out_axes, size_t k, size_t n_out) {
  if (out_axes.empty()) return 0;
  if (out_axes.size() != n_out) fail("[vmap] out_axes has ", out_axes.size(), " entries for ", n_out, " outputs");
  return out_axes[k];
}

[[noreturn]] void fail_batched_output(size_t k, const Tensor& out) {
  fail("[vmap] out_axes is None for output ", k, " (shape ", out.shape(),
       "), but it depends on the mapped axis; give it an axis, or compute it from unmapped arguments only");
}

}  // namespace

Tensors vmap(const TensorFn& f, const Tensors& args, const std::vector<std::optional<int64_t>>& in_axes,
             const std::vector<std::optional<int64_t>>& out_axes, std::optional<int64_t> axis_size,
             const std::optional<std::string>& axis_name, Randomness randomness) {
  if (in_axes.size() != args.size())
    fail("[vmap] in_axes has ", in_axes.size(), " entries for ", args.size(), " arguments");
  if (axis_size && *axis_size < 0) fail("[vmap] axis_size must be non-negative, got ", *axis_size);
  int64_t batch = axis_size.value_or(-1);
  std::vector<int64_t> axes(args.size(), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) continue;
    if (args[i].dim() == 0)
      fail("[vmap] argument ", i, " is 0-d and cannot be mapped over (in_axes ", *in_axes[i], ")");
    axes[i] = wrap_dim(*in_axes[i], args[i].dim(), "vmap");
    const int64_t n = args[i].size(axes[i]);
    if (batch >= 0 && n != batch)
      fail("[vmap] mapped arguments have different sizes along their axes: ", batch, axis_size ? " (axis_size)" : "",
           " and ", n, " (argument ", i, ", shape ", args[i].shape(), ")");
    batch = n;
  }
  if (batch < 0) fail("[vmap] at least one argument must be mapped (in_axes all None), or axis_size given");
  std::string per_example_reason = "UG_VMAP_LOOP is set";
  if (std::getenv("UG_VMAP_LOOP") == nullptr) {
    std::vector<uint32_t> versions;
    for (const Tensor& a : args) versions.push_back(a.defined() ? a.version() : 0);
    // The batched run: f sees one example per argument, ops apply their batching rules.
    batching::VmapScope scope(batch, randomness);
    const int lvl = scope.level();
    try {
      std::optional<lax::AxisBinding> name;
      if (axis_name) name.emplace(*axis_name, lvl, batch);
      Tensors wrapped = args;
      for (size_t i = 0; i < args.size(); ++i)
        if (in_axes[i]) wrapped[i] = batching::wrap(args[i].movedim(axes[i], 0), lvl);
      Tensors outs = f(wrapped);
      Tensors result;
      for (size_t k = 0; k < outs.size(); ++k) {
        const bool batched = batching::level(outs[k]) == lvl;
        const std::optional<int64_t> axis = out_axis(out_axes, k, outs.size());
        if (!axis) {
          if (batched) fail_batched_output(k, batching::physical(outs[k], lvl).select(0, 0));
          result.push_back(outs[k]);
          continue;
        }
        Tensor p = batching::physical(outs[k], lvl);
        if (!batched) {  // the output did not depend on the batch
          Dims target{batch};
          for (int64_t s : outs[k].shape()) target.push_back(s);
          p = outs[k].unsqueeze(0).expand(target);
        }
        result.push_back(p.movedim(0, wrap_dim(*axis, p.dim(), "vmap")));
      }
      return result;
    } catch (const NoBatchingRule& e) {
      // An op inside f has no batching rule: map example by example instead, unless f wrote
      // into an argument first (the calls per example would write it again).
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].defined() && args[i].version() != versions[i])
          fail<RuntimeError>("[vmap] the function wrote into argument ", i,
                             " in place, then ran an op with no batching rule (", e.what(),
                             "), so vmap would call it once per example and write again; write into a copy "
                             "(clone()), or run the write outside vmap");
      g_vmap_fallbacks.fetch_add(1);
      per_example_reason = t_last_vmap_fallback = e.what();
    }
  }
  // One call per example, then the results stacked along out_axes: every op and every
  // transform inside f composes, since each call is an ordinary call. A collective over the
  // axis cannot (it needs every example): it raises, saying why vmap runs this way.
  // No example, no call, so nothing says what shape the outputs have.
  if (batch == 0)
    fail("[vmap] cannot map over an empty batch dim one example at a time (", per_example_reason,
         "): there is no example to call the function on for its outputs' shapes");
  std::optional<lax::AxisBinding> name;
  if (axis_name) name.emplace(*axis_name, 0, batch, per_example_reason);
  batching::VmapScope scope(batch, randomness, /*batched=*/false);
  // randomness "same": every example draws what the first drew.
  const auto generator_at_start = default_generator().get_state();
  std::vector<Tensors> per_example;
  for (int64_t b = 0; b < batch; ++b) {
    if (randomness == Randomness::Same && b > 0) default_generator().set_state(generator_at_start);
    Tensors slice = args;
    for (size_t i = 0; i < args.size(); ++i)
      if (in_axes[i]) slice[i] = args[i].select(axes[i], b);
    per_example.push_back(f(slice));
    if (per_example.back().size() != per_example.front().size())
      fail("[vmap] the function returned a different number of outputs for example ", b);
  }
  const size_t n_out = per_example.front().size();
  Tensors out;
  for (size_t k = 0; k < n_out; ++k) {
    Tensors column;
    for (const Tensors& e : per_example) column.push_back(e[k]);
    const std::optional<int64_t> axis = out_axis(out_axes, k, n_out);
    if (!axis) {  // unbatched: every example's output must be the same
      for (const Tensor& c : column)
        if (!equal(c, column.front())) fail_batched_output(k, column.front());
      out.push_back(column.front());
      continue;
    }
    out.push_back(stack(column, wrap_dim(*axis, column.front().dim() + 1, "vmap")));
  }
  return out;
}

int64_t vmap_fallbacks() { return g_vmap_fallbacks.load(); }

std::string last_vmap_fallback() { return t_last_vmap_fallback; }

Tensors hessian(const TensorFn& f, const Tensors& args, int argnum) {
  TensorFn jacobian = [&f, argnum](const Tensors& a) { return jacrev(f, a, argnum); };
  return jacfwd(jacobian, args, argnum);
}

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  TensorFn scalar = [&f](const Tensors& a) {
    Tensor out = f(a[0]);
    if (out.numel() != 1) fail("[hessian] the function must return one element, got shape ", out.shape());
    return Tensors{out.reshape({})};
  };
  return hessian(scalar, {x}, 0)[0];
}

}  // namespace ug
