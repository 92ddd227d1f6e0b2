// ug.nn.Module and the basic layers. Python subclasses the C++ Module through a trampoline,
// so C++ (Sequential, summary, the training loops) calls a Python forward. Attributes that
// are parameters, buffers or modules are registered in the C++ tree by __setattr__ and read
// back by __getattr__; everything else is a plain Python attribute.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include <any>
#include <exception>

#include "bindings.h"
#include "state_epoch.h"
#include "ug/graph/grad_mode.h"
#include "ug/nn/clone.h"
#include "ug/nn/nn.h"
#include "ug/nn/parametrizations.h"

namespace ugpy {

using namespace nb::literals;

namespace {

/** Sequential's and ModuleList's pop(key): the module at key, taken out (the rest renumbered). */
template <class List> std::shared_ptr<ug::nn::Module> pop(List& list, int64_t i) {
  auto m = list[i];
  list.erase({i});
  return m;
}

/** The indices a Python slice picks out of `size` items. */
std::vector<int64_t> slice_indices(const nb::slice& sl, size_t size) {
  auto [start, stop, step, length] = sl.compute(size);
  std::vector<int64_t> out;
  for (size_t k = 0; k < length; ++k) out.push_back(start + static_cast<int64_t>(k) * step);
  return out;
}

using ug::Tensor;
using ug::nn::Module;
using ug::nn::TensorDict;

/** The in_features of the module's first layer (through nested Sequentials) when it is a
 *  Linear/Dense layer that knows it, else -1. */
int64_t declared_in_features(Module& m) {
  Module* first = &m;
  while (auto* seq = dynamic_cast<ug::nn::SequentialImpl*>(first)) {
    if (seq->size() == 0) return -1;
    first = (*seq)[0].get();
  }
  auto* linear = dynamic_cast<ug::nn::LinearImpl*>(first);
  return linear ? linear->in_features() : -1;
}

struct PyModule : Module {
  NB_TRAMPOLINE(Module, 3);
  PyModule() = default;
  /** The C++ half of a copy.deepcopy: member-wise, entries replaced next (copy_entries). */
  explicit PyModule(const Module& original) : Module(original) {}
  Tensor forward(const Tensor& x) override { NB_OVERRIDE(forward, x); }
  std::string extra_repr() const override { NB_OVERRIDE(extra_repr); }
  void reset_parameters() override { NB_OVERRIDE(reset_parameters); }

 protected:
  /** A module written in Python, reached by a copy (a C++ container's clone, or deepcopy
   *  through C++ children), is copied by Python's deepcopy with the copy's Python memo. */
  std::shared_ptr<Module> clone_into(ug::nn::CloneMemo& memo) const override {
    nb::gil_scoped_acquire gil;
    nb::handle self = nb::find(static_cast<const Module&>(*this));
    if (!self.is_valid()) ug::fail("[clone] ", type_name(), " was written in Python and its Python object is gone");
    nb::object copy = nb::module_::import_("copy").attr("deepcopy")(self, python_memo(memo));
    return nb::cast<std::shared_ptr<Module>>(copy);
  }
};

/** What register_forward_hook returns: handle.remove() takes the hook off again. */
struct ModuleHookHandle {
  nb::object module;  // the Python object, alive while the handle lives (it may own no shared_ptr)
  size_t id;
};

Module& as_module(nb::handle self) {
  if (!nb::inst_ready(self))
    throw nb::type_error("[Module] the module is not initialised: call super().__init__() first in __init__");
  return nb::cast<Module&>(self);
}

/** The Python object a hook is given for the module it runs on: the module's own where one is
 *  alive, else a new one over the shared module (a layer made in C++, such as a
 *  TransformerEncoder's copies, whose temporary Python object is gone). A hook never holds the
 *  object itself: that would keep a freed one, or make a cycle through C++ no collector sees. */
nb::object module_object(Module& m) {
  if (nb::handle existing = nb::find(m); existing.is_valid()) return nb::borrow(existing);
  return nb::cast(m.shared_from_this());
}

nb::object tensor_or_none(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

nb::dict to_python(const TensorDict& d) {
  nb::dict out;
  for (const auto& [k, v] : d) out[nb::str(k.c_str())] = nb::cast(v);
  return out;
}

TensorDict from_python(nb::handle mapping, const char* op) {
  if (!PyMapping_Check(mapping.ptr()))
    throw nb::type_error((std::string("[") + op + "] expected a dict of name -> Tensor").c_str());
  TensorDict out;
  for (nb::handle key : nb::iter(mapping)) {
    nb::object value = mapping[key];
    if (!nb::isinstance<Tensor>(value))
      throw nb::type_error(
          (std::string("[") + op + "] entry '" + nb::cast<std::string>(nb::str(key)) + "' is not a Tensor").c_str());
    out.insert(nb::cast<std::string>(key), nb::cast<Tensor>(value));
  }
  return out;
}

/** A module's (name, value) pairs as a list of Python tuples. */
template <class V> nb::list pairs(const std::vector<std::pair<std::string, V>>& items, const std::string& prefix = "") {
  nb::list out;
  for (const auto& [k, v] : items)
    out.append(nb::make_tuple(prefix.empty() ? k : (k.empty() ? prefix : prefix + "." + k), v));
  return out;
}

/** The Python object a general call's inputs or output hold (Module::call). */
const nb::object& held(const std::any& value) { return std::any_cast<const nb::object&>(value); }

/** What a hook sees of a general call's inputs or output: the front end's own object, or the
 *  tensors of a call made from C++ (Module::call's tensor form) as a tuple, None where
 *  undefined; a single output is the tensor itself, as torch's hooks see a layer's result. */
nb::object for_hook(const std::any& value, bool output = false) {
  if (const auto* tensors = std::any_cast<std::vector<Tensor>>(&value)) {
    if (output && tensors->size() == 1) return (*tensors)[0].defined() ? nb::cast((*tensors)[0]) : nb::none();
    nb::list items;
    for (const Tensor& t : *tensors) items.append(t.defined() ? nb::cast(t) : nb::none());
    return nb::tuple(items);
  }
  return held(value);
}

/** A hook's replacement in the form of what it replaces: for a call from C++, tensors (a tuple
 *  or list of tensors and Nones, or one tensor). */
std::any from_hook(nb::object r, const std::any& replaced) {
  if (!std::any_cast<std::vector<Tensor>>(&replaced)) return std::any(std::move(r));
  std::vector<Tensor> tensors;
  auto add = [&](nb::handle item) {
    if (item.is_none()) tensors.emplace_back();
    else if (nb::isinstance<Tensor>(item)) tensors.push_back(nb::cast<Tensor>(item));
    else
      throw nb::type_error(("[register_forward_hook] a hook on a layer called from C++ must return tensors "
                            "(or None in their place), got " +
                            nb::cast<std::string>(nb::str(item.type())))
                               .c_str());
  };
  if (nb::isinstance<nb::tuple>(r) || nb::isinstance<nb::list>(r))
    for (nb::handle item : r) add(item);
  else add(r);
  return std::any(std::move(tensors));
}

/** Keras's functional API (unigrad/keras_functional.py): its symbolic tensor class, and the
 *  function that records a module called on one instead of running it. */
struct SymbolicCall {
  nb::object tensor_type, record;
};
SymbolicCall& symbolic_call() {
  static auto* call = new SymbolicCall();  // never freed: Python objects outlive no interpreter
  return *call;
}

/** Whether an argument is a symbolic tensor, or a list or tuple holding one (Add()([a, b])). */
bool is_symbolic(nb::handle arg, nb::handle type) {
  if (nb::isinstance(arg, type)) return true;
  if (nb::isinstance<nb::list>(arg) || nb::isinstance<nb::tuple>(arg))
    for (nb::handle item : arg)
      if (nb::isinstance(item, type)) return true;
  return false;
}

nb::object call_module(nb::handle self, nb::args args, nb::kwargs kwargs) {
  Module& m = as_module(self);
  // A layer written in C++ called on one tensor: the C++ path (its hooks, then its forward).
  // A module written in Python may return anything (a tuple, a dict), so it takes the
  // general path, as do several arguments or keywords; the same hooks see the arguments' tuple.
  if (args.size() == 1 && kwargs.size() == 0 && nb::isinstance<Tensor>(args[0]) && !dynamic_cast<PyModule*>(&m))
    return nb::cast(m(nb::cast<Tensor>(args[0])));
  // Called on Keras's symbolic tensors (keras.Input): a node of a functional model is recorded.
  if (const SymbolicCall& symbolic = symbolic_call(); symbolic.record.is_valid())
    for (nb::handle arg : args)
      if (is_symbolic(arg, symbolic.tensor_type)) return symbolic.record(self, *args, **kwargs);
  std::any out = m.call(std::any(nb::object(args)), [&](const std::any& inputs) {
    return std::any(self.attr("forward")(*held(inputs), **kwargs));
  });
  return held(out);
}

/** Keras's variables of a module: the trainable ones (parameters that require grad), then the
 *  others (frozen parameters, floating buffers). */
std::vector<Tensor> keras_weights(const Module& m, bool trainable, bool frozen) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters())
    if (p.requires_grad() && trainable) out.push_back(p);
  if (!frozen) return out;
  for (const Tensor& p : m.parameters())
    if (!p.requires_grad()) out.push_back(p);
  for (const Tensor& b : m.buffers())
    if (b.defined() && b.is_floating_point()) out.push_back(b);
  return out;
}

void set_attribute(nb::handle self, const std::string& name, nb::handle value) {
  Module& m = as_module(self);
  touch_state();
  if (nb::isinstance<Tensor>(value) && ug::nn::parametrize::is_parametrized(m, name)) {
    ug::nn::parametrize::assign(m, name, nb::cast<Tensor>(value));
    return;
  }
  nb::object dict = nb::steal(PyObject_GenericGetDict(self.ptr(), nullptr));
  auto drop_plain = [&] {
    if (PyDict_DelItemString(dict.ptr(), name.c_str()) != 0) PyErr_Clear();
  };
  if (nb::isinstance<Module>(value)) {
    drop_plain();
    if (!m.has_module(name)) m.unregister(name);  // a child is replaced where it stands, as torch's
    m.register_module(name, nb::cast<std::shared_ptr<Module>>(value));
    return;
  }
  if (nb::isinstance<Tensor>(value)) {
    Tensor t = nb::cast<Tensor>(value);
    if (t.impl().is_parameter()) {
      drop_plain();
      if (!m.has_parameter(name)) m.unregister(name);
      m.register_parameter(name, t, t.requires_grad());
      return;
    }
    if (std::optional<bool> persistent = t.impl().buffer_mark(); persistent && !m.has_parameter(name)) {
      drop_plain();
      m.unregister(name);
      m.register_buffer(name, t, *persistent);
      return;
    }
    if (m.has_buffer(name)) {
      m.buffer(name) = t;
      return;
    }
    if (m.has_parameter(name))
      throw nb::type_error(
          ("[Module] cannot assign a plain Tensor to parameter '" + name + "' (a ug.nn.Parameter or None is expected)")
              .c_str());
  }
  if (value.is_none() && m.has_parameter(name)) {
    m.parameter(name) = Tensor();
    return;
  }
  if (value.is_none() && m.has_buffer(name)) {
    m.buffer(name) = Tensor();
    return;
  }
  m.unregister(name);
  if (PyObject_GenericSetAttr(self.ptr(), nb::str(name.c_str()).ptr(), value.ptr()) != 0) throw nb::python_error();
}

nb::object get_attribute(nb::handle self, const std::string& name) {
  if (nb::inst_ready(self)) {
    Module& m = nb::cast<Module&>(self);
    if (ug::nn::parametrize::is_parametrized(m, name)) return nb::cast(ug::nn::parametrize::value(m, name));
    if (std::optional<Tensor> w = ug::nn::utils::normalized_weight(m, name)) return nb::cast(*w);
    if (m.has_parameter(name)) return tensor_or_none(m.parameter(name));
    if (m.has_buffer(name)) return tensor_or_none(m.buffer(name));
    if (m.has_module(name)) return nb::cast(m.child(name));
  }
  throw nb::attribute_error(
      ("'" + nb::cast<std::string>(self.type().attr("__name__")) + "' object has no attribute '" + name + "'").c_str());
}

/** copy.deepcopy(module): C++ layers through Module::clone; a module written in Python as a
 *  new object of its class whose C++ half is copied member-wise and whose registered entries and
 *  plain attributes are deep-copied with the same memo (so ties and shared children survive). */
nb::object module_deepcopy(nb::handle self, nb::dict memo) {
  Module& m = as_module(self);
  ug::nn::CloneMemo& cm = clone_memo(memo);
  nb::int_ id(reinterpret_cast<uintptr_t>(self.ptr()));
  nb::object copy;
  if (dynamic_cast<PyModule*>(&m)) {
    copy = self.type().attr("__new__")(self.type());
    new (nb::inst_ptr<PyModule>(copy)) PyModule(m);
    nb::inst_mark_ready(copy);
    memo[id] = copy;  // a cycle through the entries or attributes comes back to this copy
    nb::cast<Module&>(copy).copy_entries(cm);
  } else {
    copy = nb::cast(cm.module(m));
    if (!copy.type().is(self.type()))
      throw nb::type_error(("[deepcopy] " + nb::cast<std::string>(self.type().attr("__name__")) +
                            " is a Python subclass of the C++ layer " +
                            nb::cast<std::string>(copy.type().attr("__name__")) +
                            ", which copy.deepcopy cannot copy as its subclass; subclass ug.nn.Module instead")
                               .c_str());
    memo[id] = copy;
  }
  nb::object attributes = nb::steal(PyObject_GenericGetDict(self.ptr(), nullptr));
  if (nb::len(attributes))
    copy.attr("__dict__").attr("update")(nb::module_::import_("copy").attr("deepcopy")(attributes, memo));
  return copy;
}

/** Module.to(dtype), .to(device), .to("cpu"), .to(tensor): like Tensor.to, in place. */
void module_to(Module& m, nb::handle what) {
  if (nb::isinstance<Tensor>(what)) {
    const Tensor& t = nb::cast<const Tensor&>(what);
    m.to(t.device());
    m.to(t.dtype());
    return;
  }
  std::exception_ptr not_a_dtype;
  try {
    m.to(dtype_from_python(what));
    return;
  } catch (const std::exception&) {
    not_a_dtype = std::current_exception();
  }
  // a device ("cpu", "cuda:0", ug.device(...)); what is neither raises the dtype's error
  std::optional<ug::Device> device;
  try {
    device = device_from_python(what);
  } catch (const std::exception&) {
    std::rethrow_exception(not_a_dtype);
  }
  m.to(*device);
}

}  // namespace

void bind_nn(nb::module_& nn) {
  nn.def(
      "_set_symbolic_call",
      [](nb::object tensor_type, nb::object record) {
        symbolic_call() = {std::move(tensor_type), std::move(record)};
      },
      "tensor_type"_a, "record"_a,
      "Makes a module called on an instance of tensor_type return record(module, *args, **kwargs) (keras.Input).");
  nb::class_<ModuleHookHandle>(nn, "RemovableHandle", "What register_forward_hook returns.")
      .def(
          "remove",
          [](ModuleHookHandle& h) {
            touch_state();
            nb::cast<Module&>(h.module).remove_hook(h.id);
          },
          "Takes the hook off the module; a second call does nothing.");

  nb::class_<Module, PyModule>(
      nn, "Module", nb::dynamic_attr(),
      "The base of every layer and model (torch.nn.Module); subclass it with __init__ and forward.")
      .def("__init__",
           [](nb::pointer_and_handle<Module> self) {
             new (static_cast<void*>(self.p)) PyModule();
             self.p->set_type_name(nb::cast<std::string>(self.h.type().attr("__name__")));
           })
      .def("__call__", &call_module)
      .def("__deepcopy__", &module_deepcopy, "memo"_a)
      .def("__setattr__", &set_attribute, "name"_a, "value"_a.none())
      .def("__getattr__", &get_attribute)
      .def("__delattr__",
           [](nb::handle self, const std::string& name) {
             Module& m = as_module(self);
             touch_state();
             if (m.has_parameter(name) || m.has_buffer(name) || m.has_module(name)) {
               m.unregister(name);
               return;
             }
             if (PyObject_GenericSetAttr(self.ptr(), nb::str(name.c_str()).ptr(), nullptr) != 0)
               throw nb::python_error();
           })
      .def("forward", &Module::forward, "x"_a)
      .def("_hook_ids", &Module::hook_ids, "The ids of the forward (pre-)hooks on the module now.")
      .def("extra_repr", &Module::extra_repr)
      .def("reset_parameters", &Module::reset_parameters)
      .def("__repr__", &Module::to_string)
      .def(
          "register_parameter",
          [](Module& m, const std::string& name, std::optional<Tensor> t) {
            m.register_parameter(name, t.value_or(Tensor()),
                                 t ? t->requires_grad() || !t->impl().is_parameter() : true);
          },
          "name"_a, "param"_a.none())
      .def(
          "register_buffer",
          [](Module& m, const std::string& name, std::optional<Tensor> t, bool persistent) {
            m.register_buffer(name, t.value_or(Tensor()), persistent);
          },
          "name"_a, "tensor"_a.none(), "persistent"_a = true)
      .def(
          "register_module",
          [](Module& m, const std::string& name, std::shared_ptr<Module> child) {
            m.register_module(name, std::move(child));
          },
          "name"_a, "module"_a)
      .def(
          "add_module",
          [](Module& m, const std::string& name, std::shared_ptr<Module> child) {
            m.register_module(name, std::move(child));
          },
          "name"_a, "module"_a)
      .def("parameters", &Module::parameters, "recurse"_a = true)
      .def(
          "named_parameters",
          [](const Module& m, const std::string& prefix, bool recurse) {
            return pairs(m.named_parameters(recurse), prefix);
          },
          "prefix"_a = "", "recurse"_a = true)
      .def("buffers", &Module::buffers, "recurse"_a = true)
      .def(
          "named_buffers",
          [](const Module& m, const std::string& prefix, bool recurse) {
            return pairs(m.named_buffers(recurse), prefix);
          },
          "prefix"_a = "", "recurse"_a = true)
      .def("children", &Module::children)
      .def("named_children", [](const Module& m) { return pairs(m.named_children()); })
      .def("modules", &Module::modules)
      .def("named_modules", [](Module& m) { return pairs(m.named_modules()); })
      .def("get_submodule", &Module::get_submodule, "target"_a)
      .def("state_dict", [](const Module& m) { return to_python(m.state_dict()); })
      .def(
          "load_state_dict",
          [](Module& m, nb::handle state, bool strict) {
            TensorDict values = from_python(state, "load_state_dict");
            ug::nn::parametrizations::upgrade_weight_norm_keys(m, values);
            auto [missing, unexpected] = m.load_state_dict(values, strict);
            nb::object result = nb::module_::import_("collections")
                                    .attr("namedtuple")("IncompatibleKeys", "missing_keys unexpected_keys");
            return result(missing, unexpected);
          },
          "state_dict"_a, "strict"_a = true)
      .def(
          "train",
          [](nb::handle self, bool mode) {
            touch_state();
            as_module(self).train(mode);
            return nb::borrow(self);
          },
          "mode"_a = true)
      .def("eval",
           [](nb::handle self) {
             touch_state();
             as_module(self).eval();
             return nb::borrow(self);
           })
      .def_prop_rw("training", &Module::is_training,
                   [](Module& m, bool on) {
                     touch_state();
                     m.train(on);
                   })
      .def("zero_grad", &Module::zero_grad, "set_to_none"_a = true)
      .def(
          "requires_grad_",
          [](nb::handle self, bool on) {
            touch_state();
            as_module(self).requires_grad_(on);
            return nb::borrow(self);
          },
          "requires_grad"_a = true)
      .def(
          "to",
          [](nb::handle self, nb::handle what) {
            module_to(as_module(self), what);
            return nb::borrow(self);
          },
          "dtype_or_device"_a)
      .def("float",
           [](nb::handle self) {
             as_module(self).to(ug::DType::Float32);
             return nb::borrow(self);
           })
      .def("double",
           [](nb::handle self) {
             as_module(self).to(ug::DType::Float64);
             return nb::borrow(self);
           })
      .def("half",
           [](nb::handle self) {
             as_module(self).to(ug::DType::Float16);
             return nb::borrow(self);
           })
      .def("bfloat16",
           [](nb::handle self) {
             as_module(self).to(ug::DType::BFloat16);
             return nb::borrow(self);
           })
      .def("cpu",
           [](nb::handle self) {
             as_module(self).to(ug::Device());
             return nb::borrow(self);
           })
      .def(
          "apply",
          [](nb::handle self, nb::handle fn_or_params, nb::args args, nb::kwargs kwargs) -> nb::object {
            Module& m = as_module(self);
            if (PyMapping_Check(fn_or_params.ptr())) {
              // Flax's model.apply(params, x): forward with these parameters, the module untouched.
              ug::nn::ParameterSwap swap(m, from_python(fn_or_params, "apply"));
              return call_module(self, args, kwargs);
            }
            m.apply([&](Module& sub) { fn_or_params(nb::cast(&sub, nb::rv_policy::reference)); });
            return nb::borrow(self);
          },
          "fn_or_params"_a, "args"_a, "kwargs"_a,
          "apply(fn) calls fn on every submodule and this module (torch); apply(params, *args) runs "
          "forward with the given parameters (Flax).")
      .def(
          "init",
          [](nb::handle self, const Tensor& key, nb::args args, nb::kwargs kwargs) {
            Module& m = as_module(self);
            if (args.size() > 0 || kwargs.size() > 0) {
              ug::NoGradGuard no_grad;  // one forward creates lazily sized parameters
              call_module(self, args, kwargs);
            }
            return to_python(m.init(key));
          },
          "key"_a, "args"_a, "kwargs"_a,
          "Fresh parameters drawn from a ug.random key, as a dict name -> Tensor (Flax's model.init); "
          "example inputs, if given, size lazy layers first.")
      .def_prop_ro(
          "trainable_variables", [](const Module& m) { return keras_weights(m, true, false); },
          "Keras's name for the parameters that require grad.")
      .def_prop_ro(
          "non_trainable_variables", [](const Module& m) { return keras_weights(m, false, true); },
          "Keras's name for the frozen parameters and the floating buffers (BatchNorm's running statistics).")
      .def_prop_ro(
          "variables", [](const Module& m) { return keras_weights(m, true, true); },
          "Keras's: trainable_variables, then non_trainable_variables.")
      .def_prop_ro(
          "trainable_weights", [](const Module& m) { return keras_weights(m, true, false); }, "trainable_variables")
      .def_prop_ro(
          "non_trainable_weights", [](const Module& m) { return keras_weights(m, false, true); },
          "non_trainable_variables")
      .def_prop_ro(
          "weights", [](const Module& m) { return keras_weights(m, true, true); }, "variables")
      .def("num_parameters", &Module::num_parameters, "trainable_only"_a = false)
      .def("count_params", [](const Module& m) { return m.num_parameters(); })
      .def(
          "summary",
          [](Module& m, nb::handle input_size, std::optional<ug::DType> dtype) {
            if (input_size.is_none()) {
              // Keras prints a model whose input shape is known: here, a first Linear/Dense layer's.
              const int64_t features = declared_in_features(m);
              if (features < 0)
                ug::fail<ug::ValueError>(
                    "[summary] the input size is not known (the first layer is not a Linear/Dense layer with "
                    "its input size given): pass input_size, e.g. model.summary((None, 784))");
              nb::print(nb::str(m.summary({1, features}, dtype).c_str()), nb::str(""));
              return;
            }
            // Keras writes the batch dim as None: (None, 784) runs one example.
            nb::list sizes;
            for (nb::handle d : nb::iter(input_size)) sizes.append(d.is_none() ? nb::int_(1) : nb::borrow(d));
            nb::print(nb::str(m.summary(dims_from_sequence(sizes, "summary"), dtype).c_str()), nb::str(""));
          },
          "input_size"_a = nb::none(), "dtype"_a = nb::none(),
          "Prints a Keras-style table of layers, output shapes and parameter counts for one forward "
          "pass on zeros of input_size (batch dim included); without input_size, the one a first "
          "Linear/Dense layer declares (Dense(8, input_dim=4): (None, 4)).")
      .def(
          "register_forward_hook",
          [](nb::handle self, nb::object hook) {
            // hook(module, inputs, output): inputs is the positional arguments' tuple.
            touch_state();  // a compiled call guards on the hooks
            size_t id = as_module(self).register_forward_hook(
                [hook](Module& m, const Tensor& in, const Tensor& out) {
                  nb::object r = hook(module_object(m), nb::make_tuple(in), out);
                  return r.is_none() ? std::optional<Tensor>() : std::optional<Tensor>(nb::cast<Tensor>(r));
                },
                [hook](Module& m, const std::any& in, const std::any& out) {
                  nb::object r = hook(module_object(m), for_hook(in), for_hook(out, true));
                  return r.is_none() ? std::optional<std::any>() : std::optional<std::any>(from_hook(r, out));
                });
            return ModuleHookHandle{nb::borrow(self), id};
          },
          "hook"_a,
          "Calls hook(module, inputs, output) after each forward; a result other than None replaces "
          "the output. Returns a handle whose remove() takes the hook off.")
      .def(
          "register_forward_pre_hook",
          [](nb::handle self, nb::object hook) {
            // hook(module, inputs) may return new inputs: a tuple, or one value.
            touch_state();
            size_t id = as_module(self).register_forward_pre_hook(
                [hook](Module& m, const Tensor& in) {
                  nb::object r = hook(module_object(m), nb::make_tuple(in));
                  if (r.is_none()) return std::optional<Tensor>();
                  if (nb::isinstance<nb::tuple>(r)) r = r[0];
                  return std::optional<Tensor>(nb::cast<Tensor>(r));
                },
                [hook](Module& m, const std::any& in) {
                  nb::object r = hook(module_object(m), for_hook(in));
                  if (r.is_none()) return std::optional<std::any>();
                  if (!nb::isinstance<nb::tuple>(r)) r = nb::make_tuple(r);
                  return std::optional<std::any>(from_hook(r, in));
                });
            return ModuleHookHandle{nb::borrow(self), id};
          },
          "hook"_a,
          "Calls hook(module, inputs) before each forward; a result other than None replaces the "
          "inputs. Returns a handle whose remove() takes the hook off.");

  nn.def(
      "_make_parameter",
      [](const Tensor& data, bool requires_grad) {
        if (requires_grad && !data.is_floating_point())
          throw ug::TypeError("[Parameter] only floating tensors can require gradients, got " +
                              std::string(ug::dtype_name(data.dtype())));
        Tensor p = data.detach();
        p.requires_grad_(requires_grad);
        p.impl().set_is_parameter(true);
        return p;
      },
      "data"_a, "requires_grad"_a = true);
  nn.def("_is_parameter", [](const Tensor& t) { return t.impl().is_parameter(); });
  nn.def(
      "_make_buffer",
      [](const Tensor& data, bool persistent) {
        Tensor b = data.detach();
        b.requires_grad_(data.requires_grad());
        b.impl().set_buffer_mark(persistent);
        return b;
      },
      "data"_a, "persistent"_a = true);
  nn.def(
      "_buffer_persistent", [](const Tensor& t) { return t.impl().buffer_mark(); },
      "Whether a ug.nn.Buffer is persistent; None for another tensor.");

  struct SwapScope {
    std::shared_ptr<Module> module;
    TensorDict values;
    std::unique_ptr<ug::nn::ParameterSwap> swap;
  };
  nb::class_<SwapScope>(nn, "_ParameterSwap")
      .def("__init__",
           [](SwapScope* s, std::shared_ptr<Module> m, nb::handle values) {
             new (s) SwapScope{std::move(m), from_python(values, "functional_call"), nullptr};
           })
      .def("__enter__", [](SwapScope& s) { s.swap = std::make_unique<ug::nn::ParameterSwap>(*s.module, s.values); })
      .def("__exit__", [](SwapScope& s, nb::args) { s.swap.reset(); });

  // ---- initialisers (ug.nn.init) ------------------------------------------------------------
  namespace init = ug::nn::init;
  nb::module_ in = nn.def_submodule("init", "in-place initialisers (torch.nn.init)");
  in.def(
      "calculate_gain",
      [](const std::string& nonlinearity, std::optional<double> param) {
        return init::calculate_gain(nonlinearity, param.value_or(0.01));
      },
      "nonlinearity"_a, "param"_a = nb::none());
  in.def("_calculate_fan_in_and_fan_out", &init::calculate_fan_in_and_fan_out, "tensor"_a);
  in.def(
      "uniform_", [](Tensor t, double a, double b) { return init::uniform_(t, a, b); }, "tensor"_a, "a"_a = 0.0,
      "b"_a = 1.0);
  in.def(
      "normal_", [](Tensor t, double mean, double std) { return init::normal_(t, mean, std); }, "tensor"_a,
      "mean"_a = 0.0, "std"_a = 1.0);
  in.def(
      "trunc_normal_",
      [](Tensor t, double mean, double std, double a, double b) { return init::trunc_normal_(t, mean, std, a, b); },
      "tensor"_a, "mean"_a = 0.0, "std"_a = 1.0, "a"_a = -2.0, "b"_a = 2.0);
  in.def(
      "constant_", [](Tensor t, double v) { return init::constant_(t, v); }, "tensor"_a, "val"_a);
  in.def(
      "zeros_", [](Tensor t) { return init::zeros_(t); }, "tensor"_a);
  in.def(
      "ones_", [](Tensor t) { return init::ones_(t); }, "tensor"_a);
  in.def(
      "xavier_uniform_", [](Tensor t, double gain) { return init::xavier_uniform_(t, gain); }, "tensor"_a,
      "gain"_a = 1.0);
  in.def(
      "xavier_normal_", [](Tensor t, double gain) { return init::xavier_normal_(t, gain); }, "tensor"_a,
      "gain"_a = 1.0);
  in.def(
      "kaiming_uniform_",
      [](Tensor t, double a, const std::string& mode, const std::string& nl) {
        return init::kaiming_uniform_(t, a, mode, nl);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu");
  in.def(
      "kaiming_normal_",
      [](Tensor t, double a, const std::string& mode, const std::string& nl) {
        return init::kaiming_normal_(t, a, mode, nl);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu");
  in.def(
      "orthogonal_", [](Tensor t, double gain) { return init::orthogonal_(t, gain); }, "tensor"_a, "gain"_a = 1.0);
  in.def(
      "eye_", [](Tensor t) { return init::eye_(t); }, "tensor"_a);
  in.def(
      "dirac_", [](Tensor t, int64_t groups) { return init::dirac_(t, groups); }, "tensor"_a, "groups"_a = 1);
  in.def(
      "sparse_", [](Tensor t, double sparsity, double std) { return init::sparse_(t, sparsity, std); }, "tensor"_a,
      "sparsity"_a, "std"_a = 0.01);

  // ---- containers ------------------------------------------------------------------------
  using ug::nn::SequentialImpl;
  nb::class_<SequentialImpl, Module>(nn, "Sequential", "Runs its modules in order: Sequential(Linear(4, 8), ReLU()).")
      .def("__init__",
           [](SequentialImpl* s, nb::args modules) {
             new (s) SequentialImpl();
             if (modules.size() == 1 && nb::hasattr(modules[0], "keys") && !nb::isinstance<Module>(modules[0])) {
               for (nb::handle key : nb::iter(modules[0]))
                 s->push_back(nb::cast<std::string>(key), nb::cast<std::shared_ptr<Module>>(modules[0][key]));
               return;
             }
             // Keras passes one list: Sequential([Dense(128, activation="relu"), Dense(10)]).
             nb::handle items =
                 modules.size() == 1 && (nb::isinstance<nb::list>(modules[0]) || nb::isinstance<nb::tuple>(modules[0]))
                     ? modules[0]
                     : nb::handle(modules);
             for (nb::handle m : nb::iter(items)) s->push_back(nb::cast<std::shared_ptr<Module>>(m));
           })
      .def("append",
           [](nb::handle self, std::shared_ptr<Module> m) {
             nb::cast<SequentialImpl&>(self).push_back(std::move(m));
             return nb::borrow(self);
           })
      .def(
          "add", [](SequentialImpl& s, std::shared_ptr<Module> m) { s.push_back(std::move(m)); }, "layer"_a,
          "Keras's and Gluon's model.add(layer).")
      .def("__len__", &SequentialImpl::size)
      .def("__getitem__", [](const SequentialImpl& s, int64_t i) { return s[i]; })
      .def("__getitem__", [](const SequentialImpl& s, nb::slice sl) { return s.slice(slice_indices(sl, s.size())); })
      .def("__setitem__", &SequentialImpl::set)
      .def("__delitem__", [](SequentialImpl& s, int64_t i) { s.erase({i}); })
      .def("__delitem__", [](SequentialImpl& s, nb::slice sl) { s.erase(slice_indices(sl, s.size())); })
      .def(
          "insert",
          [](nb::handle self, int64_t index, std::shared_ptr<Module> m) {
            nb::cast<SequentialImpl&>(self).insert(index, std::move(m));
            return nb::borrow(self);
          },
          "index"_a, "module"_a)
      .def("extend",
           [](nb::handle self, nb::handle modules) {
             auto& s = nb::cast<SequentialImpl&>(self);
             for (nb::handle m : nb::iter(modules)) s.push_back(nb::cast<std::shared_ptr<Module>>(m));
             return nb::borrow(self);
           })
      .def("pop", &pop<SequentialImpl>, "key"_a)
      .def("__iter__", [](const SequentialImpl& s) { return nb::iter(nb::cast(s.children())); });

  using ug::nn::ModuleListImpl;
  nb::class_<ModuleListImpl, Module>(nn, "ModuleList", "A list of modules whose parameters are registered.")
      .def(
          "__init__",
          [](ModuleListImpl* l, nb::handle modules) {
            new (l) ModuleListImpl();
            if (!modules.is_none())
              for (nb::handle m : nb::iter(modules)) l->push_back(nb::cast<std::shared_ptr<Module>>(m));
          },
          "modules"_a = nb::none())
      .def("append",
           [](nb::handle self, std::shared_ptr<Module> m) {
             nb::cast<ModuleListImpl&>(self).push_back(std::move(m));
             return nb::borrow(self);
           })
      .def("extend",
           [](nb::handle self, nb::handle modules) {
             for (nb::handle m : nb::iter(modules))
               nb::cast<ModuleListImpl&>(self).push_back(nb::cast<std::shared_ptr<Module>>(m));
             return nb::borrow(self);
           })
      .def("__len__", &ModuleListImpl::size)
      .def("__getitem__", [](const ModuleListImpl& l, int64_t i) { return l[i]; })
      .def("__getitem__", [](const ModuleListImpl& l, nb::slice sl) { return l.slice(slice_indices(sl, l.size())); })
      .def("__setitem__", &ModuleListImpl::set)
      .def("__delitem__", [](ModuleListImpl& l, int64_t i) { l.erase({i}); })
      .def("__delitem__", [](ModuleListImpl& l, nb::slice sl) { l.erase(slice_indices(sl, l.size())); })
      .def("insert", &ModuleListImpl::insert, "index"_a, "module"_a)
      .def("pop", &pop<ModuleListImpl>, "key"_a)
      .def("__iter__", [](const ModuleListImpl& l) { return nb::iter(nb::cast(l.children())); });

  using ug::nn::ModuleDictImpl;
  nb::class_<ModuleDictImpl, Module>(nn, "ModuleDict", "A dict of modules whose parameters are registered.")
      .def(
          "__init__",
          [](ModuleDictImpl* d, nb::handle modules) {
            new (d) ModuleDictImpl();
            if (!modules.is_none())
              for (nb::handle key : nb::iter(modules))
                d->insert(nb::cast<std::string>(key), nb::cast<std::shared_ptr<Module>>(modules[key]));
          },
          "modules"_a = nb::none())
      .def("__setitem__", &ModuleDictImpl::insert)
      .def("__getitem__", &ModuleDictImpl::operator[])
      .def("__contains__", &ModuleDictImpl::contains)
      .def("__len__", &ModuleDictImpl::size)
      .def("__iter__", [](const ModuleDictImpl& d) { return nb::iter(nb::cast(d.keys())); })
      .def("keys", &ModuleDictImpl::keys)
      .def("values", &ModuleDictImpl::children)
      .def("items", [](const ModuleDictImpl& d) { return pairs(d.named_children()); });

  using ug::nn::ParameterListImpl;
  nb::class_<ParameterListImpl, Module>(
      nn, "ParameterList", "Parameters in a list, registered as \"0\", \"1\", ... (torch.nn.ParameterList).")
      .def(
          "__init__",
          [](ParameterListImpl* l, nb::handle values) {
            new (l) ParameterListImpl();
            if (!values.is_none())
              for (nb::handle t : nb::iter(values)) l->push_back(nb::cast<Tensor>(t));
          },
          "values"_a = nb::none())
      .def("append",
           [](nb::handle self, const Tensor& t) {
             nb::cast<ParameterListImpl&>(self).push_back(t);
             return nb::borrow(self);
           })
      .def("extend",
           [](nb::handle self, nb::handle values) {
             for (nb::handle t : nb::iter(values)) nb::cast<ParameterListImpl&>(self).push_back(nb::cast<Tensor>(t));
             return nb::borrow(self);
           })
      .def("__len__", &ParameterListImpl::size)
      .def("__getitem__", [](ParameterListImpl& l, int64_t i) { return l[i]; })
      .def("__setitem__", &ParameterListImpl::set)
      .def("__iter__", [](const ParameterListImpl& l) { return nb::iter(nb::cast(l.parameters(false))); });

  using ug::nn::ParameterDictImpl;
  auto lookup = [](ParameterDictImpl& d, const std::string& key) {
    if (!d.contains(key)) throw nb::key_error(key.c_str());
    return d[key];
  };
  // torch's update: an OrderedDict or ParameterDict in its order, another mapping sorted by
  // key, else an iterable of (key, parameter) pairs.
  auto update = [](ParameterDictImpl& d, nb::handle values) {
    const bool ordered =
        nb::isinstance<ParameterDictImpl>(values) ||
        PyObject_IsInstance(values.ptr(), nb::module_::import_("collections").attr("OrderedDict").ptr());
    nb::object items = nb::borrow(values);
    if (nb::hasattr(values, "items")) {
      items = values.attr("items")();
      if (!ordered) items = nb::module_::import_("builtins").attr("sorted")(items);
    }
    for (nb::handle kv : nb::iter(items)) d.insert(nb::cast<std::string>(kv[0]), nb::cast<Tensor>(kv[1]));
  };
  nb::class_<ParameterDictImpl, Module>(nn, "ParameterDict",
                                        "Parameters registered under their keys (torch.nn.ParameterDict).")
      .def(
          "__init__",
          [update](ParameterDictImpl* d, nb::handle parameters) {
            new (d) ParameterDictImpl();
            if (!parameters.is_none()) update(*d, parameters);
          },
          "parameters"_a = nb::none())
      .def("update", update, "values"_a)
      .def("__getitem__", lookup)
      .def(
          "get",
          [lookup](ParameterDictImpl& d, const std::string& key, nb::handle fallback) {
            return d.contains(key) ? nb::cast(lookup(d, key)) : nb::borrow(fallback);
          },
          "key"_a, "default"_a = nb::none())
      .def("__setitem__", &ParameterDictImpl::insert)
      .def("__delitem__",
           [lookup](ParameterDictImpl& d, const std::string& key) {
             lookup(d, key);
             d.erase(key);
           })
      .def("__contains__", &ParameterDictImpl::contains)
      .def("__len__", &ParameterDictImpl::size)
      .def("__iter__", [](const ParameterDictImpl& d) { return nb::iter(nb::cast(d.keys())); })
      .def("keys", &ParameterDictImpl::keys)
      .def("values", [](const ParameterDictImpl& d) { return d.parameters(false); })
      .def("items", [](const ParameterDictImpl& d) { return pairs(d.named_parameters(false)); });

  // ---- layers ------------------------------------------------------------------------------
  using ug::nn::LinearImpl;
  nb::class_<LinearImpl, Module>(nn, "Linear", "y = x @ weight.T + bias (torch.nn.Linear).")
      .def(nb::init<int64_t, int64_t, bool, std::optional<ug::DType>>(), "in_features"_a, "out_features"_a,
           "bias"_a = true, "dtype"_a = nb::none())
      .def_prop_ro("in_features", &LinearImpl::in_features)
      .def_prop_ro("out_features", &LinearImpl::out_features);
  using ug::nn::DenseImpl;
  auto dense =
      nb::class_<DenseImpl, LinearImpl>(nn, "Dense",
                                        "Keras's Dense(units, activation): the input size comes from the first call. "
                                        "flatten=True is Gluon's Dense: the dims after the first are flattened first.");
  def_keras_dtypes<DenseImpl>(dense);
  dense
      .def(
          "__init__",
          [](DenseImpl* d, int64_t units, std::optional<std::string> activation, std::optional<int64_t> input_dim,
             bool use_bias, nb::handle dtype, bool flatten, std::optional<std::string> name) {
            new (d) DenseImpl(units, activation.value_or(""), input_dim.value_or(-1), use_bias,
                              policy_name_from_python(dtype), flatten, name.value_or(""));
          },
          "units"_a, "activation"_a = nb::none(), "input_dim"_a = nb::none(), "use_bias"_a = true,
          "dtype"_a = nb::none(), "flatten"_a = false, "name"_a = nb::none())
      .def_prop_ro("flatten", &DenseImpl::flatten)
      .def_prop_rw("name", &DenseImpl::name, &DenseImpl::set_name,
                   "Keras's layer.name: the name= given, else 'dense', 'dense_1', ...");
  nb::class_<ug::nn::IdentityImpl, Module>(nn, "Identity")
      .def("__init__", [](ug::nn::IdentityImpl* i, nb::args, nb::kwargs) { new (i) ug::nn::IdentityImpl(); });
  nb::class_<ug::nn::FlattenImpl, Module>(nn, "Flatten")
      .def(nb::init<int64_t, int64_t>(), "start_dim"_a = 1, "end_dim"_a = -1);
  nb::class_<ug::nn::UnflattenImpl, Module>(nn, "Unflatten", "Splits dim into unflattened_size (torch.nn.Unflatten).")
      .def(
          "__init__",
          [](ug::nn::UnflattenImpl* u, int64_t dim, nb::handle sizes) {
            new (u) ug::nn::UnflattenImpl(dim, dims_from_sequence(sizes, "Unflatten"));
          },
          "dim"_a, "unflattened_size"_a);

  nb::class_<ug::nn::ActivationImpl, Module>(nn, "_Activation");
  nb::class_<ug::nn::ReLUImpl, ug::nn::ActivationImpl>(nn, "ReLU").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::SigmoidImpl, ug::nn::ActivationImpl>(nn, "Sigmoid").def(nb::init<>());
  nb::class_<ug::nn::TanhImpl, ug::nn::ActivationImpl>(nn, "Tanh").def(nb::init<>());
  nb::class_<ug::nn::SiLUImpl, ug::nn::ActivationImpl>(nn, "SiLU").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::GELUImpl, ug::nn::ActivationImpl>(nn, "GELU")
      .def(nb::init<const std::string&>(), "approximate"_a = "none");
  nb::class_<ug::nn::LeakyReLUImpl, ug::nn::ActivationImpl>(nn, "LeakyReLU")
      .def(nb::init<double, bool>(), "negative_slope"_a = 0.01, "inplace"_a = false);
  nb::class_<ug::nn::RReLUImpl, Module>(nn, "RReLU", "Leaky ReLU with random slopes in training (torch.nn.RReLU).")
      .def(nb::init<double, double, bool>(), "lower"_a = 1.0 / 8, "upper"_a = 1.0 / 3, "inplace"_a = false);
  nb::class_<ug::nn::SoftmaxImpl, ug::nn::ActivationImpl>(nn, "Softmax").def(nb::init<int64_t>(), "dim"_a = -1);
  nb::class_<ug::nn::Softmax2dImpl, ug::nn::ActivationImpl>(nn, "Softmax2d").def(nb::init<>());
  nb::class_<ug::nn::LogSoftmaxImpl, ug::nn::ActivationImpl>(nn, "LogSoftmax").def(nb::init<int64_t>(), "dim"_a = -1);
  nb::class_<ug::nn::ReLU6Impl, ug::nn::ActivationImpl>(nn, "ReLU6").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::ELUImpl, ug::nn::ActivationImpl>(nn, "ELU").def(nb::init<double, bool>(), "alpha"_a = 1.0,
                                                                     "inplace"_a = false);
  nb::class_<ug::nn::SELUImpl, ug::nn::ActivationImpl>(nn, "SELU").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::CELUImpl, ug::nn::ActivationImpl>(nn, "CELU")
      .def(nb::init<double, bool>(), "alpha"_a = 1.0, "inplace"_a = false);
  nb::class_<ug::nn::MishImpl, ug::nn::ActivationImpl>(nn, "Mish").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::LogSigmoidImpl, ug::nn::ActivationImpl>(nn, "LogSigmoid").def(nb::init<>());
  nb::class_<ug::nn::SoftplusImpl, ug::nn::ActivationImpl>(nn, "Softplus")
      .def(nb::init<double, double>(), "beta"_a = 1.0, "threshold"_a = 20.0);
  nb::class_<ug::nn::SoftsignImpl, ug::nn::ActivationImpl>(nn, "Softsign").def(nb::init<>());
  nb::class_<ug::nn::HardtanhImpl, ug::nn::ActivationImpl>(nn, "Hardtanh")
      .def(nb::init<double, double, bool>(), "min_val"_a = -1.0, "max_val"_a = 1.0, "inplace"_a = false);
  nb::class_<ug::nn::HardsigmoidImpl, ug::nn::ActivationImpl>(nn, "Hardsigmoid")
      .def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::HardswishImpl, ug::nn::ActivationImpl>(nn, "Hardswish").def(nb::init<bool>(), "inplace"_a = false);
  nb::class_<ug::nn::GLUImpl, ug::nn::ActivationImpl>(nn, "GLU").def(nb::init<int64_t>(), "dim"_a = -1);
  nb::class_<ug::nn::SoftminImpl, ug::nn::ActivationImpl>(nn, "Softmin")
      .def(nb::init<std::optional<int64_t>>(), "dim"_a = nb::none());
  nb::class_<ug::nn::TanhshrinkImpl, ug::nn::ActivationImpl>(nn, "Tanhshrink").def(nb::init<>());
  nb::class_<ug::nn::ThresholdImpl, ug::nn::ActivationImpl>(nn, "Threshold")
      .def(nb::init<double, double, bool>(), "threshold"_a, "value"_a, "inplace"_a = false);
  nb::class_<ug::nn::HardshrinkImpl, ug::nn::ActivationImpl>(nn, "Hardshrink").def(nb::init<double>(), "lambd"_a = 0.5);
  nb::class_<ug::nn::SoftshrinkImpl, ug::nn::ActivationImpl>(nn, "Softshrink").def(nb::init<double>(), "lambd"_a = 0.5);
  using ug::nn::PReLUImpl;
  nb::class_<PReLUImpl, Module>(nn, "PReLU",
                                "x where x > 0, weight * x elsewhere, with a learnable weight (torch.nn.PReLU).")
      .def(nb::init<int64_t, double>(), "num_parameters"_a = 1, "init"_a = 0.25)
      .def_prop_ro("num_parameters", &PReLUImpl::num_parameters);
  using ug::nn::CosineSimilarityImpl;
  nb::class_<CosineSimilarityImpl, Module>(nn, "CosineSimilarity",
                                           "Cosine similarity of x1 and x2 along dim (torch.nn.CosineSimilarity).")
      .def(nb::init<int64_t, double>(), "dim"_a = 1, "eps"_a = 1e-8)
      .def("forward", &CosineSimilarityImpl::forward, "x1"_a, "x2"_a);
  using ug::nn::PairwiseDistanceImpl;
  nb::class_<PairwiseDistanceImpl, Module>(
      nn, "PairwiseDistance", "The p-norm of x1 - x2 + eps along the last dim (torch.nn.PairwiseDistance).")
      .def(nb::init<double, double, bool>(), "p"_a = 2.0, "eps"_a = 1e-6, "keepdim"_a = false)
      .def("forward", &PairwiseDistanceImpl::forward, "x1"_a, "x2"_a);
}

}  // namespace ugpy
