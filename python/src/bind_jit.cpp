// ug._C._jit: the compiler's programs and program caches (ug/compiler/). python/unigrad/jit.py
// builds ug.jit, ug.function and ug.compile on them: it flattens pytrees, makes the call
// signatures and gives the retrace warnings as Python warnings.
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "bindings.h"
#include "state_epoch.h"
#include "ug/compiler/cache.h"
#include "ug/compiler/program.h"
#include "ug/compiler/debug.h"
#include "ug/compiler/jit.h"
#include "ug/autograd/cond.h"
#include "ug/ops/control_flow.h"

namespace ugpy {

namespace {

namespace compiler = ug::compiler;
using Parts = std::vector<std::pair<std::string, std::string>>;
using ug::Tensor;
using Tensors = std::vector<Tensor>;

compiler::Signature signature(Parts parts) { return compiler::Signature{std::move(parts)}; }

/** `with OutsideTrace():` the block's ops go into no trace (compiler::OutsideTrace). */
struct OutsideTraceScope {
  std::unique_ptr<compiler::OutsideTrace> scope;
};

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

/** The fast key of a jitted call (compiled.py, JitFunction._fast_key) made in one pass over the
 *  arguments: a call that hits the cache pays for it on every step of a training loop (a
 *  Python walk of the MLP step's 19 tensors took ~14 us of its ~200). The key is bytes
 *  holding the arguments' structure (exact dicts with str keys, lists, tuples, None), each
 *  tensor's dtype, shape and device, and the plain static values (bool, int, float, str) with
 *  their types, so it tells apart every pair of calls that _Call's signature tells apart. It
 *  comes with the tensor leaves in tree_flatten's order (dict keys sorted) and the indices of
 *  the donated arguments' leaves. None for what the key does not describe (a tensor subclass,
 *  a namedtuple or another container type, any other static value, a deleted tensor): the
 *  Python key takes those calls. */
class FastKey {
 public:
  FastKey(std::set<size_t> static_nums, std::set<std::string> static_names, std::set<size_t> donate_nums,
          std::set<std::string> donate_names)
      : static_nums_(std::move(static_nums)),
        static_names_(std::move(static_names)),
        donate_nums_(std::move(donate_nums)),
        donate_names_(std::move(donate_names)) {}

  nb::object operator()(nb::tuple args, nb::dict kwargs) const {
    std::string key;
    nb::list tensors, donated;
    std::vector<const void*> storages;  // of the tensor leaves, in order
    auto add = [&](nb::handle value, bool is_static, bool donates) {
      const size_t start = storages.size();
      if (!(is_static ? plain(value, key) : part(value, key, tensors, storages))) return false;
      for (size_t i = start; donates && i < storages.size(); ++i) donated.append(i);
      return true;
    };
    key.push_back(static_cast<char>(ug::get_default_dtype()));  // ug.zeros(...) in the body takes it
    put(key, 'A', args.size());
    for (size_t i = 0; i < args.size(); ++i)
      if (!add(args[i], static_nums_.contains(i), donate_nums_.contains(i))) return nb::none();
    std::vector<std::pair<std::string, nb::handle>> named;
    for (auto [k, v] : kwargs) named.emplace_back(nb::cast<std::string>(k), v);
    std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    put(key, 'K', named.size());
    for (const auto& [name, value] : named) {
      put_string(key, name);
      if (!add(value, static_names_.contains(name), donate_names_.contains(name))) return nb::none();
    }
    // Arguments sharing memory trace another program (compiler::aliasing): each leaf's first
    // earlier leaf of the same storage, if any.
    for (const auto& [i, j] : compiler::sharing(storages)) {
      put(key, '=', i);
      put_raw<uint32_t>(key, static_cast<uint32_t>(j));
    }
    return nb::make_tuple(nb::bytes(key.data(), key.size()), tensors, donated);
  }

 private:
  template <class T> static void put_raw(std::string& key, T value) {
    key.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  static void put(std::string& key, char tag, size_t n) {
    key.push_back(tag);
    put_raw<uint32_t>(key, static_cast<uint32_t>(n));
  }
  static void put_string(std::string& key, std::string_view s) {
    put_raw<uint32_t>(key, static_cast<uint32_t>(s.size()));
    key.append(s);
  }

  /** A plain static value with its type: bool, int (64-bit), float (its bits) or str. */
  static bool plain(nb::handle v, std::string& key) {
    PyObject* o = v.ptr();
    if (PyBool_Check(o)) {
      key.push_back(o == Py_True ? 'y' : 'n');
    } else if (PyLong_CheckExact(o)) {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) return false;
      key.push_back('i');
      put_raw<long long>(key, i);
    } else if (PyFloat_CheckExact(o)) {
      key.push_back('f');
      put_raw<double>(key, PyFloat_AS_DOUBLE(o));
    } else if (PyUnicode_CheckExact(o)) {
      Py_ssize_t size = 0;
      const char* s = PyUnicode_AsUTF8AndSize(o, &size);
      if (!s) {
        PyErr_Clear();
        return false;
      }
      key.push_back('s');
      put_string(key, std::string_view(s, static_cast<size_t>(size)));
    } else {
      return false;
    }
    return true;
  }

  static bool part(nb::handle v, std::string& key, nb::list& tensors, std::vector<const void*>& storages) {
    PyObject* o = v.ptr();
    if (v.type().is(nb::type<Tensor>())) {
      const Tensor& t = nb::cast<const Tensor&>(v);
      if (!t.defined() || t.dim() > 255) return false;  // a deleted tensor: the Python key raises
      key.push_back('T');
      put_raw<uint8_t>(key, static_cast<uint8_t>(t.dtype()));
      put_raw<uint8_t>(key, static_cast<uint8_t>(t.device().type));
      put_raw<int32_t>(key, t.device().index);
      put_raw<uint8_t>(key, static_cast<uint8_t>(t.dim()));
      for (int64_t d : t.shape()) put_raw<int64_t>(key, d);
      tensors.append(v);
      storages.push_back(t.storage().get());
      return true;
    }
    if (o == Py_None) {
      key.push_back('N');
      return true;
    }
    if (PyDict_CheckExact(o)) {
      std::vector<std::pair<std::string_view, PyObject*>> items;
      PyObject *k = nullptr, *value = nullptr;
      Py_ssize_t pos = 0;
      while (PyDict_Next(o, &pos, &k, &value)) {
        if (!PyUnicode_CheckExact(k)) return false;
        Py_ssize_t size = 0;
        const char* s = PyUnicode_AsUTF8AndSize(k, &size);
        if (!s) {
          PyErr_Clear();
          return false;
        }
        items.emplace_back(std::string_view(s, static_cast<size_t>(size)), value);
      }
      // UTF-8 bytes sort as their code points, as Python's sorted() on str keys does.
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      put(key, 'd', items.size());
      for (const auto& [name, item] : items) {
        put_string(key, name);
        if (!part(item, key, tensors, storages)) return false;
      }
      return true;
    }
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
      const bool list = PyList_CheckExact(o);
      const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
      put(key, list ? 'l' : 't', static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!part(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), key, tensors, storages)) return false;
      return true;
    }
    return plain(v, key);
  }

  std::set<size_t> static_nums_;
  std::set<std::string> static_names_;
  std::set<size_t> donate_nums_;
  std::set<std::string> donate_names_;
};

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
      .def_prop_ro("outside_grads", &compiler::Program::outside_grads,
                   "Parameters whose .grad from before the call an optimizer's step in the program reads.")
      .def_prop_ro("num_inputs", &compiler::Program::num_inputs)
      .def_prop_ro("num_outputs", &compiler::Program::num_outputs)
      .def("node_types", &compiler::Program::node_types)
      .def("as_text", &compiler::Program::text, nb::arg("as_run") = false,
           "The graph as text, a node a line with the line of code that traced it: as traced and "
           "simplified (what save writes), or with as_run as it runs (elementwise chains fused).")
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
            d["applied"] = s.applied;
            return d;
          },
          "What the graph passes did: Identity nodes forwarded, nodes folded into constants, common "
          "subexpressions merged, dead nodes dropped, elementwise nodes computed again for late readers, nodes run as "
          "fused elementwise groups "
          "and the groups, optimizer updates that add themselves to their parameter (apply_updates).")
      .def("onnx_bytes",
           [](const compiler::Program& p) {
             const std::string bytes = p.onnx_bytes();
             return nb::bytes(bytes.data(), bytes.size());
           })
      .def("called_back", &compiler::Program::called_back)
      .def("save", &compiler::Program::save, nb::arg("path"));

  nb::class_<compiler::Signature>(jit, "Signature",
                                  "A call signature made once, for the calls that hit the cache with it.")
      .def("__init__", [](compiler::Signature* s, Parts parts) { new (s) compiler::Signature{std::move(parts)}; });
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
          [](compiler::ProgramCache& c, const compiler::Signature& s) -> nb::object {
            const compiler::Program* p = c.find(s);
            return p ? nb::cast(*p) : nb::none();
          },
          nb::arg("signature"))
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
      .def("lifted", &compiler::ProgramCache::lifted,
           "[(name, tensor)] closed over, written in place after a trace held them as constants: read live since.")
      .def("clear", &compiler::ProgramCache::clear);

  nb::class_<FastKey>(jit, "FastKey", "A jitted call's fast cache key (see compiled.py's JitFunction._fast_key).")
      .def(nb::init<std::set<size_t>, std::set<std::string>, std::set<size_t>, std::set<std::string>>(),
           nb::arg("static_nums"), nb::arg("static_names"), nb::arg("donate_nums"), nb::arg("donate_names"))
      .def("__call__", &FastKey::operator(), nb::arg("args"), nb::arg("kwargs"),
           "(key bytes, tensor leaves, donated leaf indices) of a call's arguments, or None.");
  jit.def("exchange_jit_disabled", &ug::detail::exchange_jit_disabled, nb::arg("setting"),
          "Sets this thread's disable_jit setting (1 disabled, 0 enabled, -1 none) and returns the previous one.");
  jit.def("jit_disabled", &ug::jit_disabled, "Whether jitted functions run their Python body on this thread now.");
  jit.def("run_functions_eagerly", &ug::run_functions_eagerly, nb::arg("run_eagerly"));
  jit.def("functions_run_eagerly", &ug::functions_run_eagerly);
  jit.def(
      "state_epoch", [] { return state_epoch(); },
      "A count that moves whenever Python changes a module's training mode, attributes or children, or a "
      "tensor's requires_grad (a jitted function's guards are read again only then).");
  jit.def("debug_print", &debug_print, nb::arg("emit"), nb::arg("values"),
          "Calls emit(values) now and at every run of a program that traces this call.");
  jit.def("aliasing", &compiler::aliasing, nb::arg("tensors"),
          "Which tensor arguments share memory ('1=0': the second is the first's), 'none' when none do.");
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
      "cond", &ug::lax::cond, nb::arg("pred"), nb::arg("true_fn"), nb::arg("false_fn"), nb::arg("operands"),
      "jax.lax.cond over flat operands: under a capture, one op whose program runs the branch its predicate picks.");
  jit.def(
      "capturing", [] { return ug::graph::detail::current_capture != nullptr; },
      "Whether ops are being recorded on this thread (ug.jit's trace, ug.onnx.export).");
  nb::class_<OutsideTraceScope>(jit, "OutsideTrace",
                                "A block whose ops no trace records and whose tensors are none's traced values "
                                "(work done only for its results' shapes).")
      .def(nb::init<>())
      .def("__enter__", [](OutsideTraceScope& s) { s.scope = std::make_unique<compiler::OutsideTrace>(); })
      .def("__exit__", [](OutsideTraceScope& s, nb::args) { s.scope.reset(); });
  jit.def("is_traced", &compiler::is_traced, nb::arg("tensor"),
          "Whether the tensor holds a value computed from the inputs of a function being traced.");
}

}  // namespace ugpy
