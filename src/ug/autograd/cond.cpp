#include "ug/autograd/cond.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "ug/autograd/functional.h"
#include "ug/core/error.h"
#include "ug/core/random.h"
#include "ug/core/value_read.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"

namespace ug::lax {

namespace {

const graph::OpDef kCond("cond");
const graph::OpDef kBranch("cond_branch");  // one branch's ops, among a captured cond's parts

struct Signature {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
};

Signature signature_of(const std::vector<Tensor>& outs) {
  Signature s;
  for (const Tensor& t : outs) {
    s.shapes.push_back(t.shape());
    s.dtypes.push_back(t.dtype());
  }
  return s;
}

std::string describe(const Signature& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.shapes.size(); ++i)
    out += (i ? ", " : "") + std::string(dtype_name(s.dtypes[i])) + shape_str(s.shapes[i]);
  return out + ")";
}

bool holds(const Tensor& pred) {
  if (!pred.defined() || pred.numel() != 1)
    fail<TypeError>("[cond] the predicate must be a one-element tensor, got ",
                    pred.defined() ? shape_str(pred.shape()) : std::string("nothing"));
  ValueReadScope read;  // a program reads it again at every run
  return pred.detach().to(DType::Bool).item<bool>();
}

/** The branch pred picks, on operands, its outputs checked against what both branches give. */
std::vector<Tensor> run_branch(bool take, const Branch& true_fn, const Branch& false_fn,
                               const std::vector<Tensor>& operands, const Signature& expected) {
  std::vector<Tensor> outs = (take ? true_fn : false_fn)(operands);
  const Signature got = signature_of(outs);
  if (got.shapes != expected.shapes || got.dtypes != expected.dtypes)
    fail<TypeError>("[cond] the branches return different shapes or dtypes: true_fn gives ",
                    describe(take ? got : expected), ", false_fn ", describe(take ? expected : got));
  return outs;
}

/** Under a capture: both branches run, each inside a cond_branch call whose parts are its ops
 *  (the exporter's If node: then_branch and else_branch, which read what the branches close over
 *  from the enclosing graph, so a program runs the branch on its own values). The branch not
 *  taken runs with the random state put back, its results unused; the taken one's come back. */
/** Under ug.jit only the operands' gradients go through a cond: a branch's output that requires
 *  grad (it closes over such a tensor) is refused, unless the branches are another cond's
 *  derivatives, which link their results themselves. */
void refuse_closed_over_grad(const std::vector<Tensor>& outs, bool derivative) {
  if (derivative) return;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].requires_grad())
      fail<TypeError>("[cond] under ug.jit with a traced predicate, output ", i,
                      " of a branch depends on a tensor it closes over that requires grad; pass that tensor to "
                      "cond as an operand, so that its gradient goes through the branch taken");
}

std::vector<Tensor> record_branches(bool take, const Branch& true_fn, const Branch& false_fn,
                                    const std::vector<Tensor>& operands, bool derivative) {
  std::vector<Tensor> outs[2];  // true_fn's, false_fn's
  for (bool branch : {true, false}) {
    graph::OpCall call(kBranch);
    const std::array<uint64_t, 2> rng = default_generator().get_state();
    std::vector<Tensor>& out = outs[branch ? 0 : 1];
    out = (branch ? true_fn : false_fn)(operands);
    if (branch != take) default_generator().set_state(rng);
    refuse_closed_over_grad(out, derivative);
    std::vector<const Tensor*> inputs, outputs;
    for (const Tensor& x : operands) inputs.push_back(&x);
    for (const Tensor& y : out) outputs.push_back(&y);
    call.finish(inputs, outputs);
  }
  const Signature yes = signature_of(outs[0]), no = signature_of(outs[1]);
  if (yes.shapes != no.shapes || yes.dtypes != no.dtypes)
    fail<TypeError>("[cond] the branches return different shapes or dtypes: true_fn gives ", describe(yes),
                    ", false_fn ", describe(no));
  return outs[take ? 0 : 1];
}

std::vector<Tensor> op(const Tensor& pred, const Branch& true_fn, const Branch& false_fn,
                       const std::vector<Tensor>& operands, const Signature& expected, bool derivative);

/** The branch's derivative as a branch: vjp (cotangents after the operands) or jvp (tangents). */
Branch reverse(const Branch& f, size_t n) {
  return [f, n](const std::vector<Tensor>& in) {
    const std::vector<Tensor> primals(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
    EnableGradGuard grad;
    auto [outs, pullback] = vjp(f, primals);
    std::vector<Tensor> grads = pullback(std::vector<Tensor>(in.begin() + static_cast<std::ptrdiff_t>(n), in.end()));
    for (size_t i = 0; i < n; ++i)
      if (!grads[i].defined()) grads[i] = zeros_like(primals[i]);
    return grads;
  };
}

Branch forward_mode(const Branch& f, size_t n) {
  return [f, n](const std::vector<Tensor>& in) {
    const std::vector<Tensor> primals(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
    auto [outs, tangents] = jvp(f, primals, std::vector<Tensor>(in.begin() + static_cast<std::ptrdiff_t>(n), in.end()));
    for (size_t i = 0; i < tangents.size(); ++i)
      if (!tangents[i].defined()) tangents[i] = zeros_like(outs[i]);
    return tangents;
  };
}

/** The cond op on `operands`; `derivative`: its branches are another cond's derivatives, whose
 *  results (differentiable inside their transform) this op links instead. */
std::vector<Tensor> op(const Tensor& pred, const Branch& true_fn, const Branch& false_fn,
                       const std::vector<Tensor>& operands, const Signature& expected, bool derivative) {
  graph::OpCall call(kCond);
  std::vector<Tensor> detached;
  for (const Tensor& x : operands) detached.push_back(x.detach());
  std::vector<Tensor> outs = call.capturing() ? record_branches(holds(pred), true_fn, false_fn, detached, derivative)
                                              : run_branch(holds(pred), true_fn, false_fn, detached, expected);
  for (size_t i = 0; i < outs.size(); ++i) {
    // An output that is an operand (a branch `lambda v: v`) is a new value all the same: a
    // graph telling values apart by their memory would read the operand for it.
    const bool aliased = std::ranges::any_of(operands, [&](const Tensor& x) { return x.shares_storage(outs[i]); });
    outs[i] = aliased ? outs[i].detach().clone() : outs[i].detach();
  }
  std::vector<const Tensor*> inputs{&pred}, outputs;
  std::vector<graph::Save> saved{graph::input(pred)};
  for (const Tensor& x : operands) {
    inputs.push_back(&x);
    saved.push_back(graph::input(x));
  }
  for (const Tensor& y : outs) outputs.push_back(&y);
  const size_t n = operands.size();
  call.finish(
      inputs, outputs, saved,
      [true_fn, false_fn, n, outs_like = signature_of(outs)](graph::Saved s, graph::Tensors&& cts) {
        std::vector<Tensor> in(s.begin() + 1, s.end());
        for (size_t k = 0; k < cts.size(); ++k)
          in.push_back(cts[k].defined() ? cts[k]
                                        : zeros(Dims(outs_like.shapes[k].begin(), outs_like.shapes[k].end()),
                                                {.dtype = outs_like.dtypes[k]}));
        Signature grads;
        for (size_t i = 0; i < n; ++i) {
          grads.shapes.push_back(in[i].shape());
          grads.dtypes.push_back(in[i].dtype());
        }
        graph::Tensors g{Tensor()};  // none for the predicate
        for (Tensor& t : op(s[0], reverse(true_fn, n), reverse(false_fn, n), in, grads, true))
          g.push_back(std::move(t));
        return g;
      },
      [&](const graph::Tensors& t) {
        std::vector<Tensor> in = operands;
        for (size_t i = 0; i < n; ++i) in.push_back(t[1 + i].defined() ? t[1 + i] : zeros_like(operands[i]));
        return op(pred, forward_mode(true_fn, n), forward_mode(false_fn, n), in, signature_of(outs), true);
      });
  return outs;
}

}  // namespace

std::vector<Tensor> cond(const Tensor& pred, const Branch& true_fn, const Branch& false_fn,
                         const std::vector<Tensor>& operands) {
  if (!graph::detail::current_capture) return (holds(pred) ? true_fn : false_fn)(operands);
  return op(pred, true_fn, false_fn, operands, {}, false);
}

}  // namespace ug::lax
