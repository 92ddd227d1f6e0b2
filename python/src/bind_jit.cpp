// ug._C._jit: the compiler's programs and program caches (ug/compiler/). python/unigrad/jit.py
// builds ug.jit, ug.function and ug.compile on them: it flattens pytrees, makes the call
// signatures and gives the retrace warnings as Python warnings.
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/compiler/cache.h"
#include "ug/compiler/program.h"
#include "ug/compiler/debug.h"
#include "ug/ops/control_flow.h"

namespace ugpy {

namespace {

namespace compiler = ug::compiler;
using Parts = std::vector<std::pair<std::string, std::string>>;
using ug::Tensor;
using Tensors = std::vector<Tensor>;

compiler::Signature signature(Parts parts) { return compiler::Signature{std::move(parts)}; }

/** ug.debug.print: emit (a Python callable) called with the GIL, now and at each program run. */
void debug_print(nb::callable emit, const Tensors& values) {
  compiler::debug_callback(
      [emit](const Tensors& v) {
        nb::gil_scoped_acquire gil;
        emit(v);
      },
      values);
}

/** Whether a donated tensor's buffer can become the program's alone: the caller's handle is the
 *  only one on its view and on its storage (a module's parameter, a view or a tensor an
 *  autograd node keeps is held elsewhere too, and stays the caller's: "not usable", as in JAX). */
bool donatable(const Tensor& t) {
  return t.defined() && t.impl_ref()->use_count() == 1 && t.storage()->use_count() == 1;
}

/** A program run on `inputs`, the tensors at the `donated` indices moved out of the caller's
 *  Python objects (left undefined: deleted, as a donated jax.Array) into the run, which may
 *  then write its results into their buffers (onnx::run_graph's in-place rule). */
Tensors call_donating(const compiler::Program& program, const std::vector<nb::object>& inputs,
                      const std::vector<size_t>& donated) {
  Tensors values;
  values.reserve(inputs.size());
  for (const nb::object& x : inputs) values.push_back(nb::cast<Tensor>(x));
  for (size_t i : donated) {
    if (i >= inputs.size()) ug::fail("[jit] donated input ", i, " of ", inputs.size());
    values[i] = Tensor();  // the copy above: the caller's handle is then the only one
    values[i] = std::move(nb::cast<Tensor&>(inputs[i]));
  }
  return program(std::move(values));
}

}  // namespace

void bind_jit(nb::module_& m) {
  nb::module_ jit = m.def_submodule("_jit", "compiled programs (ug/compiler)");
  jit.def("donatable", &donatable, nb::arg("tensor"),
          "Whether the tensor's buffer is held by this handle alone, so that donating it can free it.");
  jit.def(
      "delete", [](Tensor& t) { t = Tensor(); }, nb::arg("tensor"),
      "Drops the tensor's buffer, as a donated jax.Array is deleted: every later use raises.");
  nb::class_<compiler::Program>(jit, "Program", "A function traced once into a graph of ops, run from that graph.")
      .def_static("trace", &compiler::Program::trace, nb::arg("fn"), nb::arg("example_inputs"),
                  nb::arg("state") = compiler::NamedTensors{},
                  "Runs fn(list of tensors) -> list of tensors once, recording its ops; the tensors "
                  "of `state` (name, tensor) are read live at every run, other tensors fn reads are constants.")
      .def_static("trace_with_outputs", &compiler::Program::trace_with_outputs, nb::arg("fn"),
                  nb::arg("example_inputs"), nb::arg("state") = compiler::NamedTensors{}, nb::arg("free_sizes") = false,
                  "trace, also returning what the traced run returned: (program, outputs). With free_sizes "
                  "(reduce_retracing), the graph reads the sizes it needs from its inputs' shapes where it can.")
      .def("__call__", &compiler::Program::operator(), nb::arg("inputs"))
      .def("call_donating", &call_donating, nb::arg("inputs"), nb::arg("donated"),
           "__call__, moving the tensors at the donated indices out of their Python objects into the run.")
      .def_prop_ro("writes_state", &compiler::Program::writes_state,
                   "Whether a run writes parameters, optimizer state or .grad back (a PyTorch-style step).")
      .def_prop_ro("num_inputs", &compiler::Program::num_inputs)
      .def_prop_ro("num_outputs", &compiler::Program::num_outputs)
      .def("node_types", &compiler::Program::node_types)
      .def_prop_ro("any_size_dims", &compiler::Program::any_size_dims,
                   "For each input, which dims take any size (reduce_retracing).")
      .def_prop_ro("shape_read_at", &compiler::Program::shape_read_at,
                   "Where the traced function read a traced tensor's shape from Python ('' if nowhere).")
      .def(
          "optimizer_stats",
          [](const compiler::Program& p) {
            const compiler::SimplifyStats& s = p.stats();
            nb::dict d;
            d["identities"] = s.identities;
            d["folded"] = s.folded;
            d["merged"] = s.merged;
            d["dead"] = s.dead;
            d["recomputed"] = s.recomputed;
            d["fused"] = s.fused;
            d["fused_groups"] = s.fused_groups;
            return d;
          },
          "What the graph passes did: Identity nodes forwarded, nodes folded into constants, common "
          "subexpressions merged, dead nodes dropped, elementwise nodes computed again for late readers, nodes run as "
          "fused elementwise groups "
          "and the groups.")
      .def("onnx_bytes",
           [](const compiler::Program& p) { return nb::bytes(p.onnx_bytes().data(), p.onnx_bytes().size()); })
      .def("save", &compiler::Program::save, nb::arg("path"));

  nb::class_<compiler::ProgramCache>(jit, "ProgramCache", "One program per call signature, bounded, LRU.")
      .def(nb::init<std::string, size_t, bool>(), nb::arg("name"), nb::arg("capacity") = 8,
           nb::arg("reduce_retracing") = false)
      .def(
          "traced_for",
          [](const compiler::ProgramCache& c, Parts parts) -> nb::object {
            const compiler::Signature* s = c.traced_for(signature(std::move(parts)));
            return s ? nb::cast(s->parts) : nb::none();
          },
          nb::arg("signature"), "The signature of the trace whose program a call of this one runs, or None.")
      .def(
          "find",
          [](compiler::ProgramCache& c, Parts parts) -> nb::object {
            const compiler::Program* p = c.find(signature(std::move(parts)));
            return p ? nb::cast(*p) : nb::none();
          },
          nb::arg("signature"))
      .def(
          "why_not",
          [](const compiler::ProgramCache& c, Parts parts) { return c.why_not(signature(std::move(parts))); },
          nb::arg("signature"))
      .def(
          "insert",
          [](compiler::ProgramCache& c, Parts parts, const compiler::Program& p) {
            return c.insert(signature(std::move(parts)), p);
          },
          nb::arg("signature"), nb::arg("program"))
      .def("info",
           [](const compiler::ProgramCache& c) {
             compiler::CacheInfo i = c.info();
             return nb::make_tuple(i.hits, i.misses, i.traces, i.size, i.capacity);
           })
      .def("clear", &compiler::ProgramCache::clear);

  jit.def("debug_print", &debug_print, nb::arg("emit"), nb::arg("values"),
          "Calls emit(values) now and at every run of a program that traces this call.");
  jit.def(
      "describe",
      [](const Tensor& t) {
        if (!t.defined())
          ug::fail<ug::RuntimeError>(
              "[jit] an argument is a deleted tensor: it was donated to a jitted function (donate_argnums), "
              "which took its buffer");
        return compiler::describe(t);
      },
      nb::arg("tensor"), "A tensor's part of a call signature: dtype[shape].");
  jit.def(
      "while_loop",
      [](const ug::LoopCond& cond, const ug::LoopBody& body, const std::vector<ug::Tensor>& init) {
        auto traced_cond = [&](const std::vector<ug::Tensor>& carry) {
          compiler::LoopBodyScope scope;
          return cond(carry);
        };
        auto traced_body = [&](const std::vector<ug::Tensor>& carry) {
          compiler::LoopBodyScope scope;
          return body(carry);
        };
        return ug::while_loop(traced_cond, traced_body, init);
      },
      nb::arg("cond"), nb::arg("body"), nb::arg("init"),
      "jax.lax.while_loop over a flat carry, as one op a program runs as an ONNX Loop.");
  jit.def(
      "capturing", [] { return ug::graph::detail::current_capture != nullptr; },
      "Whether ops are being recorded on this thread (ug.jit's trace, ug.onnx.export).");
  jit.def("is_traced", &compiler::is_traced, nb::arg("tensor"),
          "Whether the tensor holds a value computed from the inputs of a function being traced.");
}

}  // namespace ugpy
