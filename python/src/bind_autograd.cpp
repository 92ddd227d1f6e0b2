// Autograd in Python: Tensor.requires_grad/grad/backward/..., ug.autograd.grad, grad mode and
// anomaly mode switches (the context managers live in unigrad/autograd.py).
#include <any>
#include <memory>
#include <optional>
#include <set>

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/core/print_options.h"
#include "state_epoch.h"
#include "trace_provider.h"
#include "ug/graph/debugging.h"
#include "ug/autograd/custom_function.h"
#include "ug/autograd/engine.h"
#include "ug/autograd/gradcheck.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/ops/inplace_history.h"
#include "ug/graph/inference_mode.h"
#include "ug/graph/node.h"
#include "ug/ops/view.h"

namespace ugpy {

namespace {

using ug::Tensor;

/** What Tensor.register_hook (and register_post_accumulate_grad_hook) returns: handle.remove()
 *  takes the hook off again. */
struct HookHandle {
  Tensor tensor;
  size_t id;
  bool post_accumulate = false;
};

/** A recorded node as Python sees it (Tensor.grad_fn). */
struct PyNode {
  ug::Ref<ug::Node> node;
};

std::vector<Tensor> as_tensor_list(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return {nb::cast<Tensor>(h)};
  return nb::cast<std::vector<Tensor>>(h);
}

std::vector<Tensor> optional_tensor_list(nb::handle h) {
  if (h.is_none()) return {};
  if (nb::isinstance<Tensor>(h)) return {nb::cast<Tensor>(h)};
  std::vector<Tensor> out;
  for (nb::handle item : nb::iter(h)) out.push_back(item.is_none() ? Tensor() : nb::cast<Tensor>(item));
  return out;
}

/** backward's `inputs`: none for every leaf, else a tensor or a non-empty sequence of them
 *  (torch refuses an empty one, which C++ would read as "every leaf"). */
std::vector<Tensor> backward_inputs(nb::handle h) {
  if (h.is_none()) return {};
  std::vector<Tensor> out = as_tensor_list(h);
  if (out.empty()) ug::fail<ug::ValueError>("[backward] inputs must not be empty: leave it None to reach every leaf");
  return out;
}

std::string node_repr(const ug::Node& node) { return std::string("<") + node.name() + "Backward>"; }

/** A Python object held from C++ where the last reference may drop on any thread (backward
 *  can run without the GIL): released with the GIL, or leaked once the interpreter is gone. */
using PyRef = std::shared_ptr<nb::object>;
PyRef hold(nb::object o) {
  return PyRef(new nb::object(std::move(o)), [](nb::object* p) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

/** torch.autograd.forward_ad's dual level: a forward-mode level (ug::forward::Level) open
 *  between enter() and exit(), at which make_dual sets tangents and ops propagate them. */
class PyDualLevel {
 public:
  int64_t enter() {
    if (level_) ug::fail<ug::RuntimeError>("[forward_ad] this dual level is already entered");
    return level_.emplace().id();
  }
  void exit() { level_.reset(); }

 private:
  std::optional<ug::forward::Level> level_;
};

/** torch.autograd.graph.saved_tensors_hooks: while entered on this thread, each tensor an op
 *  saves for backward goes through pack(t) and comes back from unpack(what pack returned). */
class PySavedTensorHooks {
 public:
  PySavedTensorHooks(nb::callable pack, nb::callable unpack) {
    PyRef p = hold(std::move(pack)), u = hold(std::move(unpack));
    auto keep = [p](const Tensor& t) -> std::any {
      nb::gil_scoped_acquire gil;
      return hold((*p)(t));
    };
    auto give_back = [u](const std::any& packed) -> Tensor {
      nb::gil_scoped_acquire gil;
      nb::object out = (*u)(*std::any_cast<const PyRef&>(packed));
      if (!nb::isinstance<Tensor>(out))
        ug::fail<ug::TypeError>("[saved_tensors_hooks] unpack_hook must return a Tensor, got ",
                                nb::inst_name(out).c_str());
      return nb::cast<Tensor>(out);
    };
    hooks_ = std::make_shared<ug::SavedTensorHooks>(ug::SavedTensorHooks{keep, give_back});
  }
  void enter() {
    if (guard_) ug::fail<ug::RuntimeError>("[saved_tensors_hooks] these hooks are already entered");
    guard_.emplace(hooks_);
  }
  void exit() { guard_.reset(); }

 private:
  std::shared_ptr<const ug::SavedTensorHooks> hooks_;
  std::optional<ug::SavedTensorHooksGuard> guard_;
};

/** torch's repr: the values, then where autograd stands: grad_fn=<mulBackward> for a result it
 *  recorded, requires_grad=True for a leaf that takes gradients. A donated tensor says so. */
std::string tensor_repr(const Tensor& t) {
  if (!t.defined()) return "tensor(<deleted>)";
  std::vector<std::string> state;
  if (ug::Ref<ug::Node> fn = t.grad_fn()) state.push_back("grad_fn=" + node_repr(*fn));
  else if (t.requires_grad()) state.push_back("requires_grad=True");
  return ug::tensor_string(t, state);
}

}  // namespace

void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  m.def("stop_gradient", &ug::stop_gradient, nb::arg("input"),
        "tf.stop_gradient / jax.lax.stop_gradient: input's elements with no gradient through them "
        "(Tensor.detach), kept by compiled programs.");
  nb::class_<PyNode>(m, "Node")
      .def("name", [](const PyNode& n) { return std::string(n.node->name()); })
      .def("__repr__", [](const PyNode& n) { return node_repr(*n.node); })
      .def_prop_ro("next_functions", [](const PyNode& n) {
        nb::list out;
        for (const ug::Edge& e : n.node->next_edges())
          out.append(nb::make_tuple(e.valid() ? nb::cast(PyNode{e.node}) : nb::none(), e.input_nr));
        return nb::tuple(out);
      });

  nb::class_<HookHandle>(m, "RemovableHandle").def("remove", [](HookHandle& h) {
    if (h.post_accumulate) ug::autograd::remove_post_accumulate_grad_hook(h.tensor, h.id);
    else h.tensor.remove_hook(h.id);
  });

  cls.def("__repr__", &tensor_repr)
      .def_prop_rw(
          "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
          [](Tensor& t, bool v) {
            touch_state();
            t.requires_grad_(v);
          })
      .def(
          "requires_grad_",
          [](Tensor& t, bool v) {
            touch_state();
            return t.requires_grad_(v);
          },
          nb::arg("requires_grad") = true)
      .def_prop_rw(
          "grad",
          [](const Tensor& t) -> std::optional<Tensor> {
            Tensor g = t.grad();
            if (!g.defined()) return std::nullopt;
            return g;
          },
          [](Tensor& t, std::optional<Tensor> g) { t.set_grad(g ? *g : Tensor()); }, nb::arg("grad").none())
      .def_prop_ro("grad_fn",
                   [](const Tensor& t) -> nb::object {
                     ug::Ref<ug::Node> fn = t.grad_fn();
                     return fn ? nb::cast(PyNode{fn}) : nb::none();
                   })
      .def_prop_rw(
          "stop_gradient", [](const Tensor& t) { return !t.requires_grad(); },  // PaddlePaddle's spelling
          [](Tensor& t, bool stop) { t.requires_grad_(!stop); })
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def("is_inference", &ug::is_inference, "Whether its memory was allocated in inference mode (torch's).")
      .def("detach", &ug::stop_gradient)
      .def_prop_rw(
          "data", [](const Tensor& t) { return t.detach(); },
          [](Tensor& t, const Tensor& src) {
            touch_state();
            t.set_data(src);
          },
          "torch's .data: the same data without gradient tracking; `t.data = src` makes t hold src's data, shape and "
          "dtype (t keeps its identity and requires_grad)")
      .def("detach_",
           [](Tensor& t) {
             ug::AutogradMeta* meta = ug::autograd::meta_if(t);
             if (meta) {
               meta->grad_fn = ug::Ref<ug::Node>();
               meta->requires_grad = false;
             }
             return t;
           })
      .def("retain_grad", &Tensor::retain_grad)
      .def_prop_ro("retains_grad", &Tensor::retains_grad)
      .def(
          "backward",
          [](const Tensor& t, std::optional<Tensor> gradient, std::optional<bool> retain_graph, bool create_graph,
             nb::handle inputs) {
            ug::autograd::backward({t}, gradient ? std::vector<Tensor>{*gradient} : std::vector<Tensor>{}, retain_graph,
                                   create_graph, backward_inputs(inputs));
          },
          nb::arg("gradient") = nb::none(), nb::arg("retain_graph") = nb::none(), nb::arg("create_graph") = false,
          nb::arg("inputs") = nb::none(),
          "Adds the gradient of this tensor into the .grad of the leaves it depends on (of `inputs` alone, "
          "when given); a non-scalar tensor needs `gradient`.")
      .def("register_hook",
           [](const Tensor& t, nb::object fn) {
             size_t id = t.register_hook([fn](const Tensor& g) -> Tensor {
               nb::gil_scoped_acquire gil;
               nb::object r = fn(g);
               return r.is_none() ? Tensor() : nb::cast<Tensor>(r);
             });
             return HookHandle{t, id};
           })
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, nb::object fn) {
            size_t id = ug::autograd::register_post_accumulate_grad_hook(t, [fn](const Tensor& leaf) {
              nb::gil_scoped_acquire gil;
              fn(leaf);
            });
            return HookHandle{t, id, true};
          },
          nb::arg("hook"), "Calls hook(tensor) after each backward has added into this leaf's .grad (torch's).")
      .def_prop_ro("_version", &Tensor::version);

  nb::module_ ag = m.def_submodule("_autograd");
  ag.def(
      "grad",
      [](nb::handle outputs, nb::handle inputs, nb::handle grad_outputs, std::optional<bool> retain_graph,
         bool create_graph, bool allow_unused) {
        std::vector<Tensor> result =
            ug::autograd::grad(as_tensor_list(outputs), as_tensor_list(inputs), optional_tensor_list(grad_outputs),
                               retain_graph, create_graph, allow_unused);
        nb::list out;
        for (const Tensor& g : result) out.append(g.defined() ? nb::cast(g) : nb::none());
        return nb::tuple(out);
      },
      nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs") = nb::none(), nb::arg("retain_graph") = nb::none(),
      nb::arg("create_graph") = false, nb::arg("allow_unused") = false);
  ag.def(
      "backward",
      [](nb::handle tensors, nb::handle grad_tensors, std::optional<bool> retain_graph, bool create_graph,
         nb::handle inputs) {
        ug::autograd::backward(as_tensor_list(tensors), optional_tensor_list(grad_tensors), retain_graph, create_graph,
                               backward_inputs(inputs));
      },
      nb::arg("tensors"), nb::arg("grad_tensors") = nb::none(), nb::arg("retain_graph") = nb::none(),
      nb::arg("create_graph") = false, nb::arg("inputs") = nb::none());
  ag.def("gradcheck", [](const ug::TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                         double rtol, bool raise_exception, bool second_order) {
    ug::autograd::GradcheckOptions o{eps, atol, rtol, raise_exception};
    return second_order ? ug::autograd::gradgradcheck(fn, inputs, o) : ug::autograd::gradcheck(fn, inputs, o);
  });
  ag.def(
      "custom_function",
      [](const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
         nb::callable vjp, nb::object jvp, const std::vector<Tensor>& saved) {
        // Nodes keep their name as a C string: each distinct name is kept once, for good.
        static std::set<std::string> names;
        const char* stable = names.insert(name).first->c_str();
        // Python's rules take and return lists, None where a value is missing.
        auto as_list = [](const ug::Tensors& xs) {
          nb::list out;
          for (const Tensor& x : xs) out.append(x.defined() ? nb::cast(x) : nb::none());
          return out;
        };
        ug::CustomJvp forward_rule;
        if (!jvp.is_none())
          forward_rule = [as_list, jvp = nb::cast<nb::callable>(jvp)](const ug::Tensors& t) {
            nb::gil_scoped_acquire gil;
            return optional_tensor_list(jvp(as_list(t)));
          };
        auto backward_rule = [as_list, vjp](const ug::Tensors& kept, const ug::Tensors& g) {
          nb::gil_scoped_acquire gil;
          return optional_tensor_list(vjp(as_list(kept), as_list(g)));
        };
        return ug::custom_function(stable, inputs, outputs, backward_rule, forward_rule, saved);
      },
      nb::arg("name"), nb::arg("inputs"), nb::arg("outputs"), nb::arg("vjp"), nb::arg("jvp").none(), nb::arg("saved"),
      "outputs (computed without recording) differentiating as vjp(saved, grad_outputs) -> input gradients and "
      "jvp(input_tangents) -> output tangents say (ug::custom_function).");
  ag.def(
      "custom_call",
      [](const std::string& name, const std::vector<Tensor>& inputs, nb::callable run, nb::callable again) {
        static std::set<std::string> names;  // kept for good, as custom_function's
        const char* stable = names.insert(name).first->c_str();
        auto replay = [again](const std::vector<Tensor>& in) {
          nb::gil_scoped_acquire gil;
          return nb::cast<std::vector<Tensor>>(again(in));
        };
        return ug::custom_call(
            stable, inputs, [&] { return nb::cast<std::vector<Tensor>>(run()); }, std::move(replay));
      },
      nb::arg("name"), nb::arg("inputs"), nb::arg("run"), nb::arg("again"),
      "run() -> outputs as one call of a custom function under a capture (ug::custom_call): a compiled program "
      "whose run autograd records through calls again(inputs) -> outputs.");
  ag.def(
      "capturing", [] { return ug::graph::detail::current_capture != nullptr; },
      "Whether ops are being captured on this thread (a jit trace, onnx.export).");
  ag.def(
      "has_tangent", [](const Tensor& t) { return ug::forward::active() && ug::forward::has_tangent(t); },
      "Whether t carries a forward-mode tangent (inside ug.jvp).");
  nb::class_<PyDualLevel>(ag, "DualLevel")
      .def(nb::init<>())
      .def("enter", &PyDualLevel::enter, "Opens the level; returns its id.")
      .def("exit", &PyDualLevel::exit);
  ag.def(
      "set_tangent",
      [](const Tensor& t, int64_t level, std::optional<Tensor> tangent) {
        ug::forward::set_tangent(t, level, tangent.value_or(Tensor()));
      },
      nb::arg("t"), nb::arg("level"), nb::arg("tangent").none(),
      "Sets (None: clears) t's tangent at an open forward-mode level.");
  ag.def(
      "tangent",
      [](const Tensor& t, int64_t level) -> std::optional<Tensor> {
        Tensor g = ug::forward::tangent(t, level);
        return g.defined() ? std::optional<Tensor>(g) : std::nullopt;
      },
      "t's tangent at a forward-mode level, or None.");
  nb::class_<PySavedTensorHooks>(ag, "SavedTensorHooks")
      .def(nb::init<nb::callable, nb::callable>(), nb::arg("pack_hook"), nb::arg("unpack_hook"))
      .def("enter", &PySavedTensorHooks::enter, "Installs the hooks on this thread until exit().")
      .def("exit", &PySavedTensorHooks::exit);
  ag.def("is_grad_enabled", &ug::GradMode::is_enabled);
  ag.def(
      "rebase_history",
      [](const Tensor& t, const Tensor& result, const std::string& op) {
        if (ug::ops::inplace_needs_rebase(t, &result, op.c_str())) ug::ops::rebase_history(t, result);
      },
      nb::arg("t"), nb::arg("result"), nb::arg("op"),
      "Gives t, written in place by op (a Function that marked it dirty), the history of result, "
      "which holds t's new values: as an in-place op does, through t's base for a view.");
  ag.def("set_grad_enabled", &ug::GradMode::set_enabled);
  ag.def(
      "grad_mode_state",
      [] {
        const ug::GradMode::State s = ug::GradMode::state();
        return std::make_pair(s.enabled, s.set_by);
      },
      "(enabled, the set_grad_enabled call in force) for restore_grad_mode (GradMode::State).");
  ag.def(
      "restore_grad_mode",
      [](const std::pair<bool, uint64_t>& s) {
        ug::GradMode::restore({s.first, s.second});
      },
      "Grad mode as grad_mode_state() gave it: what a scope ending restores.");
  ag.def("is_inference_mode_enabled", &ug::InferenceMode::is_enabled);
  ag.def(
      "set_inference_mode",
      [](bool on) {
        const bool prev = ug::InferenceMode::is_enabled();
        ug::InferenceMode::set_enabled(on);
        return prev;
      },
      "Turns inference mode on or off on this thread and returns what it was.");
  ag.def("is_anomaly_enabled", &ug::AnomalyMode::is_enabled);
  ag.def("set_anomaly_enabled", [](bool on) {
    ug::AnomalyMode::set_enabled(on);
    // Anomaly mode records where each op ran: the Python frames outside unigrad itself.
    update_trace_provider();
  });

  // A program's trace keeps the user's line on each node, for the checks that run it.
  install_source_provider();
  nb::module_ dbg = m.def_submodule("_debugging");
  dbg.def("check_numerics", &ug::debugging::check_numerics, nb::arg("tensor"), nb::arg("message"));
  dbg.def("enable_check_numerics", &ug::debugging::enable_check_numerics);
  dbg.def("disable_check_numerics", &ug::debugging::disable_check_numerics);
}

}  // namespace ugpy
