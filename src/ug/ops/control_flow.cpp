#include "ug/ops/control_flow.h"

#include <string>
#include <utility>

#include "ug/core/error.h"
#include "ug/graph/forward.h"
#include "ug/graph/no_capture.h"
#include "ug/graph/op_call.h"
#include "ug/ops/binary.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

const graph::OpDef kWhileLoop("while_loop");

Tensor checked_cond(const LoopCond& cond, const std::vector<Tensor>& carry) {
  Tensor c = cond(carry);
  if (!c.defined() || c.dtype() != DType::Bool || c.numel() != 1)
    fail<TypeError>("[while_loop] cond_fun must return a boolean scalar, got ",
                    c.defined() ? std::string(dtype_name(c.dtype())) + " " + shape_str(c.shape()) : "nothing");
  return c;
}

std::vector<Tensor> checked_body(const LoopBody& body, const std::vector<Tensor>& carry) {
  std::vector<Tensor> next = body(carry);
  if (next.size() != carry.size())
    fail<TypeError>("[while_loop] body_fun must return a carry of ", carry.size(), " tensors, got ", next.size());
  for (size_t i = 0; i < next.size(); ++i)
    if (next[i].shape() != carry[i].shape() || next[i].dtype() != carry[i].dtype())
      fail<TypeError>("[while_loop] body_fun must return a carry of the same shapes and dtypes: leaf ", i, " is ",
                      dtype_name(carry[i].dtype()), " ", shape_str(carry[i].shape()), " but body_fun gives ",
                      dtype_name(next[i].dtype()), " ", shape_str(next[i].shape()));
  return next;
}

/** Whether the loop goes on: under vmap, while the condition holds for some example. */
bool holds(const Tensor& c) { return batching::level(c) ? ops::any_true(c) : c.detach().item<bool>(); }

/** The loop, eagerly. Under vmap with a condition that differs between examples (JAX's batching
 *  rule), an example whose condition no longer holds keeps its carry. */
std::vector<Tensor> run(const LoopCond& cond, const LoopBody& body, std::vector<Tensor> carry, Tensor c) {
  while (holds(c)) {
    std::vector<Tensor> next = checked_body(body, carry);
    if (batching::level(c))
      for (size_t i = 0; i < next.size(); ++i) next[i] = where(c, next[i], carry[i]);
    carry = std::move(next);
    c = checked_cond(cond, carry);
  }
  return carry;
}

/** Forward mode (JAX's rule): the loop again, carrying each value's tangent beside it, with
 *  the body differentiated in forward mode at every iteration. `tangents` holds the init's
 *  (undefined: zero); the result's tangents come back. */
std::vector<Tensor> loop_tangents(const LoopCond& cond, const LoopBody& body, const std::vector<Tensor>& init,
                                  const std::vector<Tensor>& tangents) {
  const size_t n = init.size();
  std::vector<Tensor> carry = init;
  for (size_t i = 0; i < n; ++i)
    carry.push_back(tangents[i].defined() ? tangents[i].to(init[i].dtype()) : zeros_like(init[i]));
  auto primals = [n](const std::vector<Tensor>& both) { return std::vector<Tensor>(both.begin(), both.begin() + n); };
  LoopCond cond2 = [&](const std::vector<Tensor>& both) { return cond(primals(both)); };
  LoopBody body2 = [&](const std::vector<Tensor>& both) {
    forward::Level level;
    std::vector<Tensor> in;
    for (size_t i = 0; i < n; ++i) {
      in.push_back(both[i].view(both[i].shape()));
      if (is_floating(in[i].dtype())) forward::set_tangent(in[i], level.id(), both[n + i]);
    }
    std::vector<Tensor> out = checked_body(body, in);
    for (size_t i = 0; i < n; ++i) {
      Tensor t = forward::tangent(out[i], level.id());
      out.push_back(t.defined() ? t : zeros_like(out[i]));
    }
    return out;
  };
  std::vector<Tensor> both = while_loop(cond2, body2, carry);
  return std::vector<Tensor>(both.begin() + n, both.end());
}

}  // namespace

std::vector<Tensor> while_loop(const LoopCond& cond, const LoopBody& body, const std::vector<Tensor>& init) {
  Tensor c0 = checked_cond(cond, init);
  if (!graph::detail::current_capture) return run(cond, body, init, c0);
  graph::OpCall call(kWhileLoop);
  // One iteration on stand-ins of the carry (new tensors, so the body's inputs are told apart
  // from the values it closes over), recorded as this call's parts: the Loop node's body.
  std::vector<Tensor> stand_ins;
  {
    graph::NoCapture off;
    NoGradGuard no_grad;
    for (const Tensor& x : init) stand_ins.push_back(x.detach().clone());
  }
  std::vector<Tensor> next = checked_body(body, stand_ins);
  Tensor c1 = checked_cond(cond, next);
  std::vector<Tensor> result;
  {
    graph::NoCapture off;
    NoGradGuard no_grad;
    result = run(cond, body, init, c0);
  }
  std::vector<const Tensor*> inputs{&c0}, outputs;
  for (const Tensor& x : init) inputs.push_back(&x);
  for (const Tensor& x : stand_ins) inputs.push_back(&x);
  for (const Tensor& x : next) inputs.push_back(&x);  // what the body reads that requires grad
  for (const Tensor& x : result) outputs.push_back(&x);
  outputs.push_back(&c1);
  if (call.capturing()) call.set_attrs({{"carried", static_cast<int64_t>(init.size())}});
  call.finish(
      inputs, outputs, {},
      [](graph::Saved, graph::Tensors&&) -> graph::Tensors {
        fail<TypeError>(
            "[while_loop] reverse-mode differentiation does not work for a while_loop whose condition "
            "depends on traced values (as in JAX): its trip count is not known until it runs. Use "
            "ug.fori_loop or ug.scan with a fixed trip count, or forward mode (ug.jvp).");
      },
      [&](const graph::Tensors& t) {
        const size_t n = init.size();
        for (size_t i = 0; i < n; ++i)
          if (t[1 + 2 * n + i].defined())
            fail(
                "[while_loop] forward mode through a compiled while_loop whose body closes over a value with a "
                "tangent is not supported: pass that value in the carry");
        graph::Tensors out = loop_tangents(cond, body, init, graph::Tensors(t.begin() + 1, t.begin() + 1 + n));
        out.emplace_back();  // the condition has none
        return out;
      });
  return result;
}

}  // namespace ug
