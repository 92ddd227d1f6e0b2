// ug.optim: the optimizers with torch's constructor arguments, their param_groups as mutable
// mappings over the C++ groups, torch-structured state dicts, the functional init/update
// (over lists of tensors: ug.optim wraps them for pytrees), and gradient clipping (ug.nn.utils).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "bindings.h"
#include "ug/graph/grad_mode.h"
#include "ug/optim/optim.h"

namespace ugpy {

void bind_lr_scheduler(nb::module_& lr_scheduler);
void bind_swa_utils(nb::module_& swa_utils);

namespace {

using ug::Tensor;
using namespace ug::optim;

/** A norm's order as torch's float(norm_type): a number, or a string such as 'inf'. */
double norm_order(nb::handle norm_type, const char* op) {
  if (nb::isinstance<nb::float_>(norm_type) || nb::isinstance<nb::int_>(norm_type) ||
      nb::isinstance<nb::str>(norm_type)) {
    PyObject* f = PyNumber_Float(norm_type.ptr());
    if (f) return nb::cast<double>(nb::steal(f));
    PyErr_Clear();
  }
  ug::fail<ug::ValueError>("[", op, "] norm_type must be a number or a string such as 'inf', got ",
                           nb::repr(norm_type).c_str());
}

nb::object hyper_to_python(const HyperValue& v) {
  if (const double* d = std::get_if<double>(&v)) return nb::float_(*d);
  if (const bool* b = std::get_if<bool>(&v)) return nb::bool_(*b);
  // A pair's NaN is torch's None (Adafactor's eps=(None, 1e-3)).
  auto item = [](double x) { return std::isnan(x) ? nb::none() : nb::object(nb::float_(x)); };
  if (const auto* p = std::get_if<std::pair<double, double>>(&v))
    return nb::make_tuple(item(p->first), item(p->second));
  if (std::holds_alternative<std::monostate>(v)) return nb::none();
  return nb::str(std::get<std::string>(v).c_str());
}

HyperValue hyper_from_python(const std::string& key, nb::handle h) {
  if (h.is_none()) return std::monostate{};
  if (PyBool_Check(h.ptr())) return nb::cast<bool>(h);
  if (PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr())) return nb::cast<double>(h);
  if (PyUnicode_Check(h.ptr())) return nb::cast<std::string>(h);
  if ((PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) && nb::len(h) == 2) {
    auto item = [](nb::handle x) { return x.is_none() ? std::nan("") : nb::cast<double>(x); };
    return std::pair<double, double>(item(h[0]), item(h[1]));
  }
  ug::fail<ug::TypeError>("[optim] option '", key,
                          "' must be a number, a bool, a pair of numbers, a string or None, got ",
                          nb::inst_name(h).c_str());
}

/** A parameter list: tensors, or (name, tensor) pairs as model.named_parameters() gives. */
std::vector<Tensor> tensors_from_python(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return {nb::cast<Tensor>(h)};
  std::vector<Tensor> out;
  for (nb::handle item : nb::iter(h)) {
    if (nb::isinstance<Tensor>(item)) out.push_back(nb::cast<Tensor>(item));
    else if (PyTuple_Check(item.ptr()) && nb::len(item) == 2 && nb::isinstance<Tensor>(item[1]))
      out.push_back(nb::cast<Tensor>(item[1]));
    else
      ug::fail<ug::TypeError>("[optim] optimizer can only optimize Tensors, but one of the params is ",
                              nb::inst_name(item).c_str());
  }
  return out;
}

ParamGroup group_from_dict(nb::handle d) {
  nb::dict dict = nb::cast<nb::dict>(d);
  if (!dict.contains("params")) ug::fail<ug::ValueError>("[optim] a parameter group dict needs a 'params' entry");
  Hyper options;
  for (auto [k, v] : dict) {
    std::string key = nb::cast<std::string>(k);
    if (key != "params") options.insert(key, hyper_from_python(key, v));
  }
  return ParamGroup(tensors_from_python(dict["params"]), std::move(options));
}

/** torch's `params` argument: an iterable of tensors (one group) or of dicts (groups). */
std::vector<ParamGroup> groups_from_python(nb::handle params) {
  if (params.is_none()) return {};
  if (nb::isinstance<Tensor>(params))
    ug::fail<ug::TypeError>(
        "[optim] params argument given to the optimizer should be an iterable of Tensors or dicts, "
        "but got a Tensor");
  nb::list items = nb::list(params);
  if (nb::len(items) == 0) ug::fail<ug::ValueError>("[optim] optimizer got an empty parameter list");
  if (!PyDict_Check(items[0].ptr())) return {ParamGroup(tensors_from_python(items))};
  std::vector<ParamGroup> groups;
  for (nb::handle d : items) groups.push_back(group_from_dict(d));
  return groups;
}

/** opt.param_groups[i] (or opt.defaults when index < 0): a live view, so `g["lr"] = 0.1` changes the optimizer. */
struct GroupView {
  nb::object owner;  // keeps the optimizer alive
  Optimizer* opt;
  int64_t index;

  Hyper& options() const {
    if (index < 0) return opt->defaults();
    if (index >= static_cast<int64_t>(opt->param_groups().size()))
      ug::fail<ug::IndexError>("[optim] parameter group ", index, " no longer exists");
    return opt->param_groups()[index].options();
  }
  bool has_params() const { return index >= 0; }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    if (has_params()) k.push_back("params");
    for (const std::string& key : options().keys()) k.push_back(key);
    return k;
  }
  nb::object get(const std::string& key) const {
    if (key == "params" && has_params()) return nb::cast(opt->param_groups()[index].params());
    const HyperValue* v = options().find(key);
    if (!v) throw nb::key_error(key.c_str());
    return hyper_to_python(*v);
  }
  void set(const std::string& key, nb::handle value) const {
    if (key == "params" && has_params()) opt->param_groups()[index].params() = tensors_from_python(value);
    else options().insert(key, hyper_from_python(key, value));
  }
};

nb::dict view_to_dict(const GroupView& v) {
  nb::dict d;
  for (const std::string& k : v.keys()) d[k.c_str()] = v.get(k);
  return d;
}

/** opt.state[p]: the state dict of one parameter (sharing its tensors). */
struct StateView {
  nb::object owner;
  Optimizer* opt;
};

nb::dict tensor_dict_to_python(const TensorDict& d) {
  nb::dict out;
  for (const auto& [k, t] : d) out[k.c_str()] = nb::cast(t);
  return out;
}

TensorDict tensor_dict_from_python(nb::handle h) {
  TensorDict out;
  for (auto [k, v] : nb::cast<nb::dict>(h)) {
    std::string key = nb::cast<std::string>(k);
    if (nb::isinstance<Tensor>(v)) out.insert(key, nb::cast<Tensor>(v));
    else  // torch's old checkpoints keep "step" as a number
      out.insert(key, ug::scalar_tensor(nb::cast<double>(v), ug::Options{ug::DType::Float32, {}}));
  }
  return out;
}

nb::dict state_dict_to_python(const OptimizerStateDict& sd) {
  nb::dict state;
  for (const auto& [index, st] : sd.state) state[nb::int_(index)] = tensor_dict_to_python(st);
  nb::list groups;
  for (const auto& g : sd.param_groups) {
    nb::dict d;
    for (const auto& [k, v] : g.options) d[k.c_str()] = hyper_to_python(v);
    d["params"] = nb::cast(g.params);
    groups.append(d);
  }
  nb::dict out;
  out["state"] = state;
  out["param_groups"] = groups;
  return out;
}

OptimizerStateDict state_dict_from_python(nb::handle h) {
  nb::dict d = nb::cast<nb::dict>(h);
  if (!d.contains("state") || !d.contains("param_groups"))
    ug::fail<ug::ValueError>("[optim] a state dict needs 'state' and 'param_groups' entries");
  OptimizerStateDict sd;
  for (auto [k, v] : nb::cast<nb::dict>(d["state"]))
    sd.state.emplace_back(nb::cast<int64_t>(k), tensor_dict_from_python(v));
  for (nb::handle g : d["param_groups"]) {
    OptimizerStateDict::Group rec;
    for (auto [k, v] : nb::cast<nb::dict>(g)) {
      std::string key = nb::cast<std::string>(k);
      if (key == "params") rec.params = nb::cast<std::vector<int64_t>>(v);
      else if (!(v.is_none() && (key == "foreach" || key == "fused")))  // torch's unset implementation flags
        rec.options.insert(key, hyper_from_python(key, v));
    }
    sd.param_groups.push_back(std::move(rec));
  }
  return sd;
}

// ---- functional form: lists of the leaves ug.optim's init/update/apply_updates flatten pytrees to

/** Tensors, None for a missing one (a parameter without a gradient). */
std::vector<Tensor> tensors_in(const nb::list& items) {
  std::vector<Tensor> out;
  for (nb::handle v : items) out.push_back(v.is_none() ? Tensor() : nb::cast<Tensor>(v));
  return out;
}

OptState opt_state_in(const nb::list& items) {
  OptState out;
  size_t i = 0;
  for (nb::handle v : items) out.insert(std::to_string(i++), tensor_dict_from_python(v));
  return out;
}

nb::list states_out(const OptState& state) {
  nb::list out;
  for (const auto& item : state) out.append(tensor_dict_to_python(item.second));
  return out;
}

std::string optimizer_repr(const Optimizer& opt) {
  std::string s = opt.name() + " (";
  for (size_t i = 0; i < opt.param_groups().size(); ++i) {
    s += "\nParameter Group " + std::to_string(i);
    Hyper sorted = opt.param_groups()[i].options();
    std::vector<std::string> keys = sorted.keys();
    std::sort(keys.begin(), keys.end());
    for (const std::string& k : keys)
      s += "\n    " + k + ": " + nb::cast<std::string>(nb::repr(hyper_to_python(sorted.at(k))));
  }
  return s + "\n)";
}

/** torch's implementation choices: foreach and fused pick kernels, capturable CUDA graphs;
 *  there is one implementation here, whose results they would not change. differentiable=True
 *  (a step that autograd records) is refused. */
void check_implementation(const char* name, std::optional<bool> foreach, std::optional<bool> fused,
                          bool differentiable) {
  if (foreach.value_or(false) && fused.value_or(false))
    throw ug::RuntimeError(std::string("[") + name + "] `fused` and `foreach` cannot be `True` together.");
  if (differentiable)
    throw ug::ValueError(std::string("[") + name +
                         "] differentiable=True (a step that autograd records) is not supported");
}

}  // namespace

std::vector<std::pair<Tensor, Tensor>> grads_and_vars_from_python(nb::iterable grads_and_vars) {
  std::vector<std::pair<Tensor, Tensor>> pairs;
  for (nb::handle pair : grads_and_vars) {
    nb::tuple gv = nb::tuple(nb::borrow(pair));
    if (gv.size() != 2) ug::fail("[apply_gradients] expected (gradient, variable) pairs, got ", gv.size(), " items");
    pairs.emplace_back(gv[0].is_none() ? Tensor() : nb::cast<Tensor>(gv[0]), nb::cast<Tensor>(gv[1]));
  }
  return pairs;
}

void bind_optim(nb::module_& optim) {
  nb::class_<GroupView>(optim, "_ParamGroup", "A live view of one parameter group (or the defaults) as a dict.")
      .def("__getitem__", [](const GroupView& v, const std::string& k) { return v.get(k); })
      .def("__setitem__", [](const GroupView& v, const std::string& k, nb::handle value) { v.set(k, value); })
      .def("__delitem__",
           [](const GroupView& v, const std::string& k) {
             if (k == "params" || !v.options().erase(k)) throw nb::key_error(k.c_str());
           })
      .def("__contains__",
           [](const GroupView& v, const std::string& k) {
             return (k == "params" && v.has_params()) || v.options().contains(k);
           })
      .def("__len__", [](const GroupView& v) { return v.keys().size(); })
      .def("__iter__", [](const GroupView& v) { return nb::iter(nb::cast(v.keys())); })
      .def("keys", [](const GroupView& v) { return v.keys(); })
      .def("values", [](const GroupView& v) { return view_to_dict(v).attr("values")(); })
      .def("items", [](const GroupView& v) { return view_to_dict(v).attr("items")(); })
      .def(
          "get",
          [](const GroupView& v, const std::string& k, nb::object dflt) {
            return ((k == "params" && v.has_params()) || v.options().contains(k)) ? v.get(k) : dflt;
          },
          nb::arg("key"), nb::arg("default") = nb::none())
      .def(
          "setdefault",
          [](const GroupView& v, const std::string& k, nb::object dflt) {
            if (!v.options().contains(k) && !(k == "params" && v.has_params())) v.set(k, dflt);
            return v.get(k);
          },
          nb::arg("key"), nb::arg("default") = nb::none())
      .def("update",
           [](const GroupView& v, nb::dict d) {
             for (auto [k, value] : d) v.set(nb::cast<std::string>(k), value);
           })
      .def("copy", &view_to_dict)
      .def("__eq__", [](const GroupView& v, nb::handle other) { return view_to_dict(v).equal(other); })
      .def("__repr__", [](const GroupView& v) { return nb::repr(view_to_dict(v)); });
  nb::module_::import_("collections.abc").attr("MutableMapping").attr("register")(optim.attr("_ParamGroup"));

  nb::class_<StateView>(optim, "_OptimizerState", "opt.state: parameter -> its state dict.")
      .def("__getitem__",
           [](const StateView& v, const Tensor& p) {
             const TensorDict* st = v.opt->find_state(p);
             return st ? tensor_dict_to_python(*st) : nb::dict();
           })
      .def("__contains__",
           [](const StateView& v, const Tensor& p) {
             const TensorDict* st = v.opt->find_state(p);
             return st && !st->empty();
           })
      .def("__len__", [](const StateView& v) {
        size_t n = 0;
        for (const ParamGroup& g : v.opt->param_groups())
          for (const Tensor& p : g.params())
            if (const TensorDict* st = v.opt->find_state(p); st && !st->empty()) ++n;
        return n;
      });

  nb::class_<Optimizer>(optim, "Optimizer", "Base of the optimizers: parameter groups, state, step and zero_grad.")
      .def_prop_ro("param_groups",
                   [](nb::handle self) {
                     Optimizer& opt = nb::cast<Optimizer&>(self);
                     nb::list out;
                     for (size_t i = 0; i < opt.param_groups().size(); ++i)
                       out.append(GroupView{nb::borrow(self), &opt, static_cast<int64_t>(i)});
                     return out;
                   })
      .def_prop_ro("defaults",
                   [](nb::handle self) {
                     return GroupView{nb::borrow(self), &nb::cast<Optimizer&>(self), -1};
                   })
      .def_prop_ro("state",
                   [](nb::handle self) {
                     return StateView{nb::borrow(self), &nb::cast<Optimizer&>(self)};
                   })
      .def(
          "step",
          [](Optimizer& opt, nb::object closure) {
            nb::object loss = nb::none();
            if (!closure.is_none()) {
              ug::EnableGradGuard enable;
              loss = closure();
            }
            opt.step();
            return loss;
          },
          nb::arg("closure") = nb::none(),
          "Updates the parameters from their .grad; closure (optional) re-evaluates the loss first.")
      .def("zero_grad", &Optimizer::zero_grad, nb::arg("set_to_none") = true)
      .def(
          "apply_gradients",
          [](Optimizer& opt, nb::iterable grads_and_vars) {
            opt.apply_gradients(grads_and_vars_from_python(grads_and_vars));
          },
          nb::arg("grads_and_vars"),
          "TensorFlow/Keras's step: optimizer.apply_gradients(zip(grads, model.trainable_variables)).")
      .def("add_param_group", [](Optimizer& opt, nb::handle group) { opt.add_param_group(group_from_dict(group)); })
      .def("state_dict", [](const Optimizer& opt) { return state_dict_to_python(opt.state_dict()); })
      .def("load_state_dict", [](Optimizer& opt, nb::handle sd) { opt.load_state_dict(state_dict_from_python(sd)); })
      // ug.optim wraps these two as init and update, which take pytrees.
      .def(
          "_init",
          [](const Optimizer& opt, const nb::list& params) {
            return states_out(opt.init(as_dict(tensors_in(params))));
          },
          nb::arg("params"))
      .def(
          "_update",
          [](const Optimizer& opt, const nb::list& grads, const nb::list& state, const nb::list& params) {
            auto [updates, next] =
                opt.update(as_dict(tensors_in(grads)), opt_state_in(state), as_dict(tensors_in(params)));
            return nb::make_tuple(as_list(updates), states_out(next));
          },
          nb::arg("grads"), nb::arg("state"), nb::arg("params"))
      .def("__repr__", &optimizer_repr);

  // The constructors' defaults are the C++ option structs' own.
  const SGDOptions sgd;
  const AdamOptions adam;
  const AdamWOptions adamw;
  const RMSpropOptions rmsprop;
  const AdagradOptions adagrad;
  nb::class_<SGD, Optimizer>(optim, "SGD", "torch.optim.SGD: momentum, dampening, Nesterov, weight decay.")
      .def(
          "__init__",
          [](SGD* self, nb::handle params, double lr, double momentum, double dampening, double weight_decay,
             bool nesterov, bool maximize, std::optional<bool> foreach, bool differentiable,
             std::optional<bool> fused) {
            check_implementation("SGD", foreach, fused, differentiable);
            new (self) SGD(groups_from_python(params), SGDOptions(lr)
                                                           .momentum(momentum)
                                                           .dampening(dampening)
                                                           .weight_decay(weight_decay)
                                                           .nesterov(nesterov)
                                                           .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = sgd.lr(), nb::arg("momentum") = sgd.momentum(),
          nb::arg("dampening") = sgd.dampening(), nb::arg("weight_decay") = sgd.weight_decay(),
          nb::arg("nesterov") = sgd.nesterov(), nb::kw_only(), nb::arg("maximize") = sgd.maximize(),
          nb::arg("foreach") = nb::none(), nb::arg("differentiable") = false, nb::arg("fused") = nb::none());

  nb::class_<Adam, Optimizer>(optim, "Adam", "torch.optim.Adam: amsgrad, weight decay (L2 or decoupled), maximize.")
      .def(
          "__init__",
          [](Adam* self, nb::handle params, double lr, std::pair<double, double> betas, double eps, double weight_decay,
             bool amsgrad, std::optional<bool> foreach, bool maximize, bool, bool differentiable,
             std::optional<bool> fused, bool decoupled) {
            check_implementation("Adam", foreach, fused, differentiable);
            new (self) Adam(groups_from_python(params), AdamOptions(lr)
                                                            .betas(betas)
                                                            .eps(eps)
                                                            .weight_decay(weight_decay)
                                                            .amsgrad(amsgrad)
                                                            .maximize(maximize)
                                                            .decoupled_weight_decay(decoupled));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adam.lr(), nb::arg("betas") = adam.betas(),
          nb::arg("eps") = adam.eps(), nb::arg("weight_decay") = adam.weight_decay(),
          nb::arg("amsgrad") = adam.amsgrad(), nb::kw_only(), nb::arg("foreach") = nb::none(),
          nb::arg("maximize") = adam.maximize(), nb::arg("capturable") = false, nb::arg("differentiable") = false,
          nb::arg("fused") = nb::none(), nb::arg("decoupled_weight_decay") = adam.decoupled_weight_decay());

  nb::class_<AdamW, Adam>(optim, "AdamW", "torch.optim.AdamW: Adam with decoupled weight decay.")
      .def(
          "__init__",
          [](AdamW* self, nb::handle params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool amsgrad, bool maximize, std::optional<bool> foreach, bool, bool differentiable,
             std::optional<bool> fused) {
            check_implementation("AdamW", foreach, fused, differentiable);
            new (self) AdamW(
                groups_from_python(params),
                AdamWOptions(lr).betas(betas).eps(eps).weight_decay(weight_decay).amsgrad(amsgrad).maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adamw.lr(), nb::arg("betas") = adamw.betas(),
          nb::arg("eps") = adamw.eps(), nb::arg("weight_decay") = adamw.weight_decay(),
          nb::arg("amsgrad") = adamw.amsgrad(), nb::kw_only(), nb::arg("maximize") = adamw.maximize(),
          nb::arg("foreach") = nb::none(), nb::arg("capturable") = false, nb::arg("differentiable") = false,
          nb::arg("fused") = nb::none());

  nb::class_<RMSprop, Optimizer>(optim, "RMSprop", "torch.optim.RMSprop: momentum, centered, weight decay.")
      .def(
          "__init__",
          [](RMSprop* self, nb::handle params, double lr, double alpha, double eps, double weight_decay,
             double momentum, bool centered, bool, std::optional<bool> foreach, bool maximize, bool differentiable) {
            check_implementation("RMSprop", foreach, std::nullopt, differentiable);
            new (self) RMSprop(groups_from_python(params), RMSpropOptions(lr)
                                                               .alpha(alpha)
                                                               .eps(eps)
                                                               .weight_decay(weight_decay)
                                                               .momentum(momentum)
                                                               .centered(centered)
                                                               .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = rmsprop.lr(), nb::arg("alpha") = rmsprop.alpha(),
          nb::arg("eps") = rmsprop.eps(), nb::arg("weight_decay") = rmsprop.weight_decay(),
          nb::arg("momentum") = rmsprop.momentum(), nb::arg("centered") = rmsprop.centered(),
          nb::arg("capturable") = false, nb::arg("foreach") = nb::none(), nb::arg("maximize") = rmsprop.maximize(),
          nb::arg("differentiable") = false);

  nb::class_<Adagrad, Optimizer>(optim, "Adagrad", "torch.optim.Adagrad: lr_decay, weight decay, initial accumulator.")
      .def(
          "__init__",
          [](Adagrad* self, nb::handle params, double lr, double lr_decay, double weight_decay,
             double initial_accumulator_value, double eps, std::optional<bool> foreach, bool maximize,
             bool differentiable, std::optional<bool> fused) {
            check_implementation("Adagrad", foreach, fused, differentiable);
            new (self) Adagrad(groups_from_python(params), AdagradOptions(lr)
                                                               .lr_decay(lr_decay)
                                                               .weight_decay(weight_decay)
                                                               .initial_accumulator_value(initial_accumulator_value)
                                                               .eps(eps)
                                                               .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adagrad.lr(), nb::arg("lr_decay") = adagrad.lr_decay(),
          nb::arg("weight_decay") = adagrad.weight_decay(),
          nb::arg("initial_accumulator_value") = adagrad.initial_accumulator_value(), nb::arg("eps") = adagrad.eps(),
          nb::arg("foreach") = nb::none(), nb::kw_only(), nb::arg("maximize") = adagrad.maximize(),
          nb::arg("differentiable") = false, nb::arg("fused") = nb::none());

  // NAdam, RAdam, Adamax, Adadelta, Rprop: torch's constructors (its implementation flags as above),
  // their defaults the option structs'.
  const NAdamOptions nadam;
  nb::class_<NAdam, Optimizer>(optim, "NAdam", "torch.optim.NAdam: momentum_decay, weight decay (L2 or decoupled).")
      .def(
          "__init__",
          [](NAdam* self, nb::handle params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, double momentum_decay, bool decoupled, std::optional<bool> foreach, bool maximize,
             bool, bool differentiable) {
            check_implementation("NAdam", foreach, std::nullopt, differentiable);
            new (self) NAdam(groups_from_python(params), NAdamOptions(lr)
                                                             .betas(betas)
                                                             .eps(eps)
                                                             .weight_decay(weight_decay)
                                                             .momentum_decay(momentum_decay)
                                                             .decoupled_weight_decay(decoupled)
                                                             .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = nadam.lr(), nb::arg("betas") = nadam.betas(),
          nb::arg("eps") = nadam.eps(), nb::arg("weight_decay") = nadam.weight_decay(),
          nb::arg("momentum_decay") = nadam.momentum_decay(),
          nb::arg("decoupled_weight_decay") = nadam.decoupled_weight_decay(), nb::kw_only(),
          nb::arg("foreach") = nb::none(), nb::arg("maximize") = nadam.maximize(), nb::arg("capturable") = false,
          nb::arg("differentiable") = false);

  const RAdamOptions radam;
  nb::class_<RAdam, Optimizer>(optim, "RAdam", "torch.optim.RAdam: rectified Adam, weight decay (L2 or decoupled).")
      .def(
          "__init__",
          [](RAdam* self, nb::handle params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, bool decoupled, std::optional<bool> foreach, bool maximize, bool,
             bool differentiable) {
            check_implementation("RAdam", foreach, std::nullopt, differentiable);
            new (self) RAdam(groups_from_python(params), RAdamOptions(lr)
                                                             .betas(betas)
                                                             .eps(eps)
                                                             .weight_decay(weight_decay)
                                                             .decoupled_weight_decay(decoupled)
                                                             .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = radam.lr(), nb::arg("betas") = radam.betas(),
          nb::arg("eps") = radam.eps(), nb::arg("weight_decay") = radam.weight_decay(),
          nb::arg("decoupled_weight_decay") = radam.decoupled_weight_decay(), nb::kw_only(),
          nb::arg("foreach") = nb::none(), nb::arg("maximize") = radam.maximize(), nb::arg("capturable") = false,
          nb::arg("differentiable") = false);

  const AdamaxOptions adamax;
  nb::class_<Adamax, Optimizer>(optim, "Adamax", "torch.optim.Adamax: Adam with the infinity norm, weight decay.")
      .def(
          "__init__",
          [](Adamax* self, nb::handle params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay, std::optional<bool> foreach, bool maximize, bool differentiable, bool) {
            check_implementation("Adamax", foreach, std::nullopt, differentiable);
            new (self) Adamax(groups_from_python(params),
                              AdamaxOptions(lr).betas(betas).eps(eps).weight_decay(weight_decay).maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adamax.lr(), nb::arg("betas") = adamax.betas(),
          nb::arg("eps") = adamax.eps(), nb::arg("weight_decay") = adamax.weight_decay(),
          nb::arg("foreach") = nb::none(), nb::kw_only(), nb::arg("maximize") = adamax.maximize(),
          nb::arg("differentiable") = false, nb::arg("capturable") = false);

  const AdadeltaOptions adadelta;
  nb::class_<Adadelta, Optimizer>(optim, "Adadelta", "torch.optim.Adadelta: rho, eps, weight decay.")
      .def(
          "__init__",
          [](Adadelta* self, nb::handle params, double lr, double rho, double eps, double weight_decay,
             std::optional<bool> foreach, bool, bool maximize, bool differentiable) {
            check_implementation("Adadelta", foreach, std::nullopt, differentiable);
            new (self) Adadelta(groups_from_python(params),
                                AdadeltaOptions(lr).rho(rho).eps(eps).weight_decay(weight_decay).maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adadelta.lr(), nb::arg("rho") = adadelta.rho(),
          nb::arg("eps") = adadelta.eps(), nb::arg("weight_decay") = adadelta.weight_decay(),
          nb::arg("foreach") = nb::none(), nb::kw_only(), nb::arg("capturable") = false,
          nb::arg("maximize") = adadelta.maximize(), nb::arg("differentiable") = false);

  const RpropOptions rprop;
  nb::class_<Rprop, Optimizer>(optim, "Rprop", "torch.optim.Rprop: etas, step_sizes, maximize.")
      .def(
          "__init__",
          [](Rprop* self, nb::handle params, double lr, std::pair<double, double> etas,
             std::pair<double, double> step_sizes, bool, std::optional<bool> foreach, bool maximize,
             bool differentiable) {
            check_implementation("Rprop", foreach, std::nullopt, differentiable);
            new (self) Rprop(groups_from_python(params),
                             RpropOptions(lr).etas(etas).step_sizes(step_sizes).maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = rprop.lr(), nb::arg("etas") = rprop.etas(),
          nb::arg("step_sizes") = rprop.step_sizes(), nb::kw_only(), nb::arg("capturable") = false,
          nb::arg("foreach") = nb::none(), nb::arg("maximize") = rprop.maximize(), nb::arg("differentiable") = false);

  const ASGDOptions asgd;
  nb::class_<ASGD, Optimizer>(optim, "ASGD", "torch.optim.ASGD: lambd, alpha, t0, weight decay, maximize.")
      .def(
          "__init__",
          [](ASGD* self, nb::handle params, double lr, double lambd, double alpha, double t0, double weight_decay,
             std::optional<bool> foreach, bool maximize, bool differentiable, bool) {
            check_implementation("ASGD", foreach, std::nullopt, differentiable);
            new (self)
                ASGD(groups_from_python(params),
                     ASGDOptions(lr).lambd(lambd).alpha(alpha).t0(t0).weight_decay(weight_decay).maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = asgd.lr(), nb::arg("lambd") = asgd.lambd(),
          nb::arg("alpha") = asgd.alpha(), nb::arg("t0") = asgd.t0(), nb::arg("weight_decay") = asgd.weight_decay(),
          nb::arg("foreach") = nb::none(), nb::arg("maximize") = asgd.maximize(), nb::arg("differentiable") = false,
          nb::arg("capturable") = false);

  const AdafactorOptions adafactor;
  nb::class_<Adafactor, Optimizer>(optim, "Adafactor",
                                   "torch.optim.Adafactor: factored second moment, beta2_decay, eps=(eps1, eps2), d.")
      .def(
          "__init__",
          [](Adafactor* self, nb::handle params, double lr, double beta2_decay, nb::handle eps, double d,
             double weight_decay, std::optional<bool> foreach, bool maximize) {
            check_implementation("Adafactor", foreach, std::nullopt, false);
            const HyperValue e = hyper_from_python("eps", eps);
            if (!std::holds_alternative<Betas>(e)) throw ug::TypeError("[Adafactor] eps must be a pair (eps1, eps2)");
            new (self) Adafactor(groups_from_python(params), AdafactorOptions(lr)
                                                                 .beta2_decay(beta2_decay)
                                                                 .eps(std::get<Betas>(e))
                                                                 .d(d)
                                                                 .weight_decay(weight_decay)
                                                                 .maximize(maximize));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = adafactor.lr(),
          nb::arg("beta2_decay") = adafactor.beta2_decay(),
          nb::arg("eps") = nb::make_tuple(nb::none(), adafactor.eps().second), nb::arg("d") = adafactor.d(),
          nb::arg("weight_decay") = adafactor.weight_decay(), nb::kw_only(), nb::arg("foreach") = nb::none(),
          nb::arg("maximize") = adafactor.maximize());

  const LBFGSOptions lbfgs;
  nb::class_<LBFGS, Optimizer>(optim, "LBFGS",
                               "torch.optim.LBFGS: step(closure) runs up to max_iter L-BFGS iterations with a "
                               "fixed step or line_search_fn='strong_wolfe'; one parameter group.")
      .def(
          "__init__",
          [](LBFGS* self, nb::handle params, double lr, int64_t max_iter, std::optional<int64_t> max_eval,
             double tolerance_grad, double tolerance_change, int64_t history_size,
             std::optional<std::string> line_search_fn) {
            new (self) LBFGS(groups_from_python(params), LBFGSOptions(lr)
                                                             .max_iter(max_iter)
                                                             .max_eval(max_eval)
                                                             .tolerance_grad(tolerance_grad)
                                                             .tolerance_change(tolerance_change)
                                                             .history_size(history_size)
                                                             .line_search_fn(line_search_fn));
          },
          nb::arg("params").none() = nb::none(), nb::arg("lr") = lbfgs.lr(), nb::arg("max_iter") = lbfgs.max_iter(),
          nb::arg("max_eval").none() = nb::none(), nb::arg("tolerance_grad") = lbfgs.tolerance_grad(),
          nb::arg("tolerance_change") = lbfgs.tolerance_change(), nb::arg("history_size") = lbfgs.history_size(),
          nb::arg("line_search_fn").none() = nb::none())
      .def(
          "step",
          [](LBFGS& opt, nb::object closure) {
            // The closure's first result is returned as it came (a tensor or a number).
            nb::object first;
            opt.step([&]() -> Tensor {
              nb::object loss = closure();
              if (!first.is_valid()) first = loss;
              if (nb::isinstance<Tensor>(loss)) return nb::cast<Tensor>(loss);
              return ug::scalar_tensor(nb::cast<double>(loss), ug::Options{ug::DType::Float64, {}});
            });
            return first;
          },
          nb::arg("closure"), "Runs up to max_iter iterations; closure re-evaluates the loss and its gradients.");

  optim.def(
      "_apply_updates",
      [](const nb::list& params, const nb::list& updates) {
        return apply_updates(tensors_in(params), tensors_in(updates));
      },
      nb::arg("params"), nb::arg("updates"));

  nb::module_ utils = optim.def_submodule("_utils", "gradient clipping (re-exported by ug.nn.utils)");
  utils.def(
      "clip_grad_norm_",
      [](nb::handle parameters, double max_norm, nb::handle norm_type, bool error_if_nonfinite, std::optional<bool>) {
        return ug::nn::utils::clip_grad_norm_(tensors_from_python(parameters), max_norm,
                                              norm_order(norm_type, "clip_grad_norm_"), error_if_nonfinite);
      },
      nb::arg("parameters"), nb::arg("max_norm"), nb::arg("norm_type") = 2.0, nb::arg("error_if_nonfinite") = false,
      nb::arg("foreach") = nb::none(),
      "Scales the gradients so their joint norm is at most max_norm; returns the norm before clipping. norm_type may "
      "be 'inf'; foreach is accepted for torch's signature.");
  utils.def(
      "clip_grad_value_",
      [](nb::handle parameters, double clip_value, std::optional<bool>) {
        ug::nn::utils::clip_grad_value_(tensors_from_python(parameters), clip_value);
      },
      nb::arg("parameters"), nb::arg("clip_value"), nb::arg("foreach") = nb::none(),
      "Clamps every gradient element into [-clip_value, clip_value].");

  utils.def(
      "get_total_norm",
      [](nb::handle tensors, nb::handle norm_type, bool error_if_nonfinite, std::optional<bool>) {
        return ug::nn::utils::get_total_norm(tensors_from_python(tensors), norm_order(norm_type, "get_total_norm"),
                                             error_if_nonfinite);
      },
      nb::arg("tensors"), nb::arg("norm_type") = 2.0, nb::arg("error_if_nonfinite") = false,
      nb::arg("foreach") = nb::none(), "The norm of the tensors' norms (of order norm_type), as one vector's.");
  utils.def(
      "clip_grads_with_norm_",
      [](nb::handle parameters, double max_norm, const Tensor& total_norm, std::optional<bool>) {
        ug::nn::utils::clip_grads_with_norm_(tensors_from_python(parameters), max_norm, total_norm);
      },
      nb::arg("parameters"), nb::arg("max_norm"), nb::arg("total_norm"), nb::arg("foreach") = nb::none(),
      "Scales the gradients by min(1, max_norm / (total_norm + 1e-6)).");
  utils.def(
      "parameters_to_vector",
      [](nb::handle parameters) { return ug::nn::utils::parameters_to_vector(tensors_from_python(parameters)); },
      nb::arg("parameters"), "The parameters flattened into one vector.");
  utils.def(
      "vector_to_parameters",
      [](nb::handle vec, nb::handle parameters) {
        if (!nb::isinstance<Tensor>(vec))
          throw ug::TypeError(std::string("[vector_to_parameters] expected a Tensor, but got: ") +
                              nb::inst_name(vec).c_str());
        ug::nn::utils::vector_to_parameters(nb::cast<Tensor>(vec), tensors_from_python(parameters));
      },
      nb::arg("vec"), nb::arg("parameters"), "Copies consecutive slices of vec into the parameters.");

  nb::module_ lr_scheduler = optim.def_submodule("lr_scheduler", "learning-rate schedules");
  bind_lr_scheduler(lr_scheduler);
  nb::module_ swa_utils = optim.def_submodule("swa_utils",
                                              "stochastic weight averaging: SWALR (AveragedModel and "
                                              "update_bn are Python, in unigrad.optim.swa_utils)");
  bind_swa_utils(swa_utils);
}

}  // namespace ugpy
