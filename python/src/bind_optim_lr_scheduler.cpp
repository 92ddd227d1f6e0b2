// ug.optim.lr_scheduler: the schedulers with torch's constructor arguments. Each keeps its
// optimizer alive; SequentialLR keeps its schedulers.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "bindings.h"
#include "ug/optim/lr_scheduler.h"

namespace ugpy {
namespace {

using namespace ug::optim;
using namespace ug::optim::lr_scheduler;

/** One number or a list of numbers (one per group). */
std::vector<double> floats(nb::handle h) {
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr())) return {nb::cast<double>(h)};
  return nb::cast<std::vector<double>>(h);
}

/** A per-group default as torch writes it: one number when it is one value. */
nb::object one_or_list(const std::vector<double>& v) {
  return v.size() == 1 ? nb::object(nb::float_(v.front())) : nb::cast(v);
}

/** A function of the epoch, as torch checks it. */
LRLambda lambda(nb::handle f, const char* name) {
  if (!PyCallable_Check(f.ptr()))
    throw ug::TypeError(std::string("[") + name + "] lr_lambda should be a function, but got " +
                        nb::cast<std::string>(f.type().attr("__name__")));
  return nb::cast<LRLambda>(f);
}

/** LambdaLR / MultiplicativeLR(optimizer, lr_lambda, last_epoch): lr_lambda a function, or a
 *  list or tuple of them (one per group). */
template <class Scheduler>
void init_lambda_scheduler(Scheduler* self, Optimizer& opt, nb::handle lr_lambda, int64_t last_epoch,
                           const char* name) {
  if (!nb::isinstance<nb::list>(lr_lambda) && !nb::isinstance<nb::tuple>(lr_lambda)) {
    new (self) Scheduler(opt, lambda(lr_lambda, name), last_epoch);
    return;
  }
  std::vector<LRLambda> fns;
  for (nb::handle f : lr_lambda) fns.push_back(lambda(f, name));
  new (self) Scheduler(opt, std::move(fns), last_epoch);
}

nb::dict state_to_python(const SchedulerState& s) {
  nb::dict out;
  for (const auto& [k, v] : s) {
    if (const double* d = std::get_if<double>(&v)) {
      out[k.c_str()] = is_counter(k) ? nb::object(nb::int_(static_cast<int64_t>(*d))) : nb::object(nb::float_(*d));
    } else {
      out[k.c_str()] = nb::cast(std::get<std::vector<double>>(v));
    }
  }
  return out;
}

SchedulerState state_from_python(nb::handle h) {
  SchedulerState out;
  for (auto [k, v] : nb::cast<nb::dict>(h)) {
    std::string key = nb::cast<std::string>(k);
    if (PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr())) out.insert(key, nb::cast<double>(v));
    else out.insert(key, nb::cast<std::vector<double>>(v));
  }
  return out;
}

}  // namespace

void bind_lr_scheduler(nb::module_& m) {
  nb::class_<LRScheduler>(m, "LRScheduler", "Base of the epoch-driven schedulers.")
      .def("step", &LRScheduler::step, "Advances one epoch and sets the groups' learning rates.")
      .def("get_last_lr", &LRScheduler::get_last_lr)
      .def_prop_ro("last_epoch", &LRScheduler::last_epoch)
      .def_prop_ro("base_lrs", &LRScheduler::base_lrs)
      .def_prop_ro("optimizer", &LRScheduler::optimizer, nb::rv_policy::reference)
      .def("state_dict", [](const LRScheduler& s) { return state_to_python(s.state_dict()); })
      .def("load_state_dict", [](LRScheduler& s, nb::handle d) { s.load_state_dict(state_from_python(d)); });

  using D = SchedulerDefaults;  // the keyword defaults, stated once in C++
  nb::class_<StepLR, LRScheduler>(m, "StepLR", "lr *= gamma every step_size epochs.")
      .def(nb::init<Optimizer&, int64_t, double, int64_t>(), nb::arg("optimizer"), nb::arg("step_size"),
           nb::arg("gamma") = D::gamma, nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<MultiStepLR, LRScheduler>(m, "MultiStepLR", "lr *= gamma at each milestone.")
      .def(nb::init<Optimizer&, std::vector<int64_t>, double, int64_t>(), nb::arg("optimizer"), nb::arg("milestones"),
           nb::arg("gamma") = D::gamma, nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<ExponentialLR, LRScheduler>(m, "ExponentialLR", "lr *= gamma every epoch.")
      .def(nb::init<Optimizer&, double, int64_t>(), nb::arg("optimizer"), nb::arg("gamma"),
           nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<CosineAnnealingLR, LRScheduler>(m, "CosineAnnealingLR",
                                             "Cosine from the base lr to eta_min in T_max epochs.")
      .def(nb::init<Optimizer&, int64_t, double, int64_t>(), nb::arg("optimizer"), nb::arg("T_max"),
           nb::arg("eta_min") = D::eta_min, nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<LinearLR, LRScheduler>(m, "LinearLR", "The lr factor moves linearly from start_factor to end_factor.")
      .def(nb::init<Optimizer&, double, double, int64_t, int64_t>(), nb::arg("optimizer"),
           nb::arg("start_factor") = D::start_factor, nb::arg("end_factor") = D::end_factor,
           nb::arg("total_iters") = D::total_iters, nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<ConstantLR, LRScheduler>(m, "ConstantLR", "lr * factor for total_iters epochs, then the lr itself.")
      .def(nb::init<Optimizer&, double, int64_t, int64_t>(), nb::arg("optimizer"), nb::arg("factor") = D::start_factor,
           nb::arg("total_iters") = D::total_iters, nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<PolynomialLR, LRScheduler>(m, "PolynomialLR", "lr * (1 - epoch / total_iters)^power, then 0.")
      .def(nb::init<Optimizer&, int64_t, double, int64_t>(), nb::arg("optimizer"),
           nb::arg("total_iters") = D::total_iters, nb::arg("power") = 1.0, nb::arg("last_epoch") = D::last_epoch,
           nb::keep_alive<1, 2>());
  nb::class_<CosineAnnealingWarmRestarts, LRScheduler>(m, "CosineAnnealingWarmRestarts",
                                                       "Cosine annealing restarted every T_i epochs, T_i *= T_mult.")
      .def(nb::init<Optimizer&, int64_t, int64_t, double, int64_t>(), nb::arg("optimizer"), nb::arg("T_0"),
           nb::arg("T_mult") = 1, nb::arg("eta_min") = D::eta_min, nb::arg("last_epoch") = D::last_epoch,
           nb::keep_alive<1, 2>())
      .def(
          "step",
          [](CosineAnnealingWarmRestarts& s, std::optional<double> epoch) {
            if (epoch) s.step(*epoch);
            else s.step();
          },
          nb::arg("epoch") = nb::none(), "The next epoch, or the (fractional) epoch given.");
  nb::class_<LambdaLR, LRScheduler>(m, "LambdaLR", "lr = base lr * lr_lambda(epoch); one function or one per group.")
      .def(
          "__init__",
          [](LambdaLR* self, Optimizer& opt, nb::handle lr_lambda, int64_t last_epoch) {
            init_lambda_scheduler(self, opt, lr_lambda, last_epoch, "LambdaLR");
          },
          nb::arg("optimizer"), nb::arg("lr_lambda"), nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<MultiplicativeLR, LRScheduler>(m, "MultiplicativeLR",
                                            "lr *= lr_lambda(epoch) each epoch; one function or one per group.")
      .def(
          "__init__",
          [](MultiplicativeLR* self, Optimizer& opt, nb::handle lr_lambda, int64_t last_epoch) {
            init_lambda_scheduler(self, opt, lr_lambda, last_epoch, "MultiplicativeLR");
          },
          nb::arg("optimizer"), nb::arg("lr_lambda"), nb::arg("last_epoch") = D::last_epoch, nb::keep_alive<1, 2>());
  nb::class_<SequentialLR, LRScheduler>(m, "SequentialLR", "Schedulers one after another, switching at milestones.")
      .def(nb::init<Optimizer&, std::vector<std::shared_ptr<LRScheduler>>, std::vector<int64_t>, int64_t>(),
           nb::arg("optimizer"), nb::arg("schedulers"), nb::arg("milestones"), nb::arg("last_epoch") = D::last_epoch,
           nb::keep_alive<1, 2>());
  const OneCycleOptions one_cycle;  // the keyword defaults, stated once in C++
  nb::class_<OneCycleLR, LRScheduler>(m, "OneCycleLR", "The 1cycle policy, with momentum cycling.")
      .def(
          "__init__",
          [](OneCycleLR* self, Optimizer& opt, nb::handle max_lr, std::optional<int64_t> total_steps,
             std::optional<int64_t> epochs, std::optional<int64_t> steps_per_epoch, double pct_start,
             std::string anneal_strategy, bool cycle_momentum, nb::handle base_momentum, nb::handle max_momentum,
             double div_factor, double final_div_factor, bool three_phase, int64_t last_epoch) {
            OneCycleOptions o{total_steps,     epochs,           steps_per_epoch,       pct_start,
                              anneal_strategy, cycle_momentum,   floats(base_momentum), floats(max_momentum),
                              div_factor,      final_div_factor, three_phase,           last_epoch};
            new (self) OneCycleLR(opt, floats(max_lr), std::move(o));
          },
          nb::arg("optimizer"), nb::arg("max_lr"), nb::arg("total_steps").none() = nb::none(),
          nb::arg("epochs").none() = nb::none(), nb::arg("steps_per_epoch").none() = nb::none(),
          nb::arg("pct_start") = one_cycle.pct_start, nb::arg("anneal_strategy") = one_cycle.anneal_strategy,
          nb::arg("cycle_momentum") = one_cycle.cycle_momentum,
          nb::arg("base_momentum") = one_or_list(one_cycle.base_momentum),
          nb::arg("max_momentum") = one_or_list(one_cycle.max_momentum), nb::arg("div_factor") = one_cycle.div_factor,
          nb::arg("final_div_factor") = one_cycle.final_div_factor, nb::arg("three_phase") = one_cycle.three_phase,
          nb::arg("last_epoch") = one_cycle.last_epoch, nb::keep_alive<1, 2>())
      .def_prop_ro("total_steps", &OneCycleLR::total_steps);

  const CyclicLROptions cyclic;
  nb::class_<CyclicLR, LRScheduler>(m, "CyclicLR",
                                    "Cyclical lr between base_lr and max_lr (triangular, triangular2, exp_range or "
                                    "scale_fn), momentum cycling the other way.")
      .def(
          "__init__",
          [](CyclicLR* self, Optimizer& opt, nb::handle base_lr, nb::handle max_lr, double step_size_up,
             std::optional<double> step_size_down, std::string mode, double gamma, nb::object scale_fn,
             std::string scale_mode, bool cycle_momentum, nb::handle base_momentum, nb::handle max_momentum,
             int64_t last_epoch) {
            std::function<double(double)> fn;
            if (!scale_fn.is_none()) {
              if (!PyCallable_Check(scale_fn.ptr())) throw ug::TypeError("[CyclicLR] scale_fn should be a function");
              // torch calls it with the cycle or the iteration, both integers.
              fn = [scale_fn](double x) {
                nb::gil_scoped_acquire gil;
                return nb::cast<double>(scale_fn(nb::int_(static_cast<int64_t>(x))));
              };
            }
            CyclicLROptions o{step_size_up,   step_size_down,        mode,
                              gamma,          std::move(fn),         std::move(scale_mode),
                              cycle_momentum, floats(base_momentum), floats(max_momentum),
                              last_epoch};
            new (self) CyclicLR(opt, floats(base_lr), floats(max_lr), std::move(o));
          },
          nb::arg("optimizer"), nb::arg("base_lr"), nb::arg("max_lr"), nb::arg("step_size_up") = cyclic.step_size_up,
          nb::arg("step_size_down").none() = nb::none(), nb::arg("mode") = cyclic.mode, nb::arg("gamma") = cyclic.gamma,
          nb::arg("scale_fn").none() = nb::none(), nb::arg("scale_mode") = cyclic.scale_mode,
          nb::arg("cycle_momentum") = cyclic.cycle_momentum,
          nb::arg("base_momentum") = one_or_list(cyclic.base_momentum),
          nb::arg("max_momentum") = one_or_list(cyclic.max_momentum), nb::arg("last_epoch") = cyclic.last_epoch,
          nb::keep_alive<1, 2>());
  nb::class_<ChainedScheduler, LRScheduler>(m, "ChainedScheduler",
                                            "Steps each scheduler in turn at every step(), composing them.")
      .def(
          "__init__",
          [](ChainedScheduler* self, nb::handle schedulers, Optimizer* optimizer) {
            std::vector<std::shared_ptr<LRScheduler>> list;
            size_t i = 0;
            for (nb::handle s : schedulers) {
              if (nb::isinstance<ReduceLROnPlateau>(s))
                throw ug::ValueError(
                    "[ChainedScheduler] does not support `ReduceLROnPlateau` scheduler as it requires additional "
                    "kwargs to be specified when calling `step`, but got one at index " +
                    std::to_string(i) + " in the given schedulers sequence.");
              if (!nb::isinstance<LRScheduler>(s))
                throw ug::TypeError("[ChainedScheduler] at index " + std::to_string(i) +
                                    " should have `optimizer` as its attribute.");
              list.push_back(nb::cast<std::shared_ptr<LRScheduler>>(s));
              ++i;
            }
            new (self) ChainedScheduler(std::move(list), optimizer);
          },
          nb::arg("schedulers"), nb::arg("optimizer").none() = nb::none(), nb::keep_alive<1, 2>(),
          nb::keep_alive<1, 3>());

  const ReduceLROnPlateauOptions plateau;
  nb::class_<ReduceLROnPlateau>(m, "ReduceLROnPlateau", "Cuts the lr when a metric stops improving.")
      .def(
          "__init__",
          [](ReduceLROnPlateau* self, Optimizer& opt, std::string mode, double factor, int64_t patience,
             double threshold, std::string threshold_mode, int64_t cooldown, nb::handle min_lr, double eps) {
            new (self) ReduceLROnPlateau(opt, ReduceLROnPlateauOptions{mode, factor, patience, threshold,
                                                                       threshold_mode, cooldown, floats(min_lr), eps});
          },
          nb::arg("optimizer"), nb::arg("mode") = plateau.mode, nb::arg("factor") = plateau.factor,
          nb::arg("patience") = plateau.patience, nb::arg("threshold") = plateau.threshold,
          nb::arg("threshold_mode") = plateau.threshold_mode, nb::arg("cooldown") = plateau.cooldown,
          nb::arg("min_lr") = one_or_list(plateau.min_lr), nb::arg("eps") = plateau.eps, nb::keep_alive<1, 2>())
      .def(
          "step",
          [](ReduceLROnPlateau& s, nb::handle metrics) {
            nb::object f = nb::steal(PyNumber_Float(metrics.ptr()));
            if (!f.is_valid()) throw nb::python_error();
            s.step(nb::cast<double>(f));
          },
          nb::arg("metrics"))
      .def("get_last_lr", &ReduceLROnPlateau::get_last_lr)
      .def_prop_ro("last_epoch", &ReduceLROnPlateau::last_epoch)
      .def_prop_ro("best", &ReduceLROnPlateau::best)
      .def_prop_ro("num_bad_epochs", &ReduceLROnPlateau::num_bad_epochs)
      .def_prop_ro("optimizer", &ReduceLROnPlateau::optimizer, nb::rv_policy::reference)
      .def("state_dict", [](const ReduceLROnPlateau& s) { return state_to_python(s.state_dict()); })
      .def("load_state_dict", [](ReduceLROnPlateau& s, nb::handle d) { s.load_state_dict(state_from_python(d)); });
}

void bind_swa_utils(nb::module_& m) {
  nb::class_<SWALR, LRScheduler>(m, "SWALR",
                                 "Anneals each group's lr to swa_lr over anneal_epochs epochs ('cos' or 'linear'), "
                                 "then holds it (torch.optim.swa_utils.SWALR).")
      .def(
          "__init__",
          [](SWALR* self, Optimizer& opt, nb::handle swa_lr, nb::handle anneal_epochs,
             const std::string& anneal_strategy, int64_t last_epoch) {
            // torch refuses a float anneal_epochs, which a cast to int would let through
            if (!PyLong_Check(anneal_epochs.ptr()) || PyBool_Check(anneal_epochs.ptr()))
              throw ug::ValueError("[SWALR] anneal_epochs must be equal or greater than 0, got " +
                                   nb::cast<std::string>(nb::repr(anneal_epochs)));
            new (self) SWALR(opt, floats(swa_lr), nb::cast<int64_t>(anneal_epochs), anneal_strategy, last_epoch);
          },
          nb::arg("optimizer"), nb::arg("swa_lr"), nb::arg("anneal_epochs") = 10, nb::arg("anneal_strategy") = "cos",
          nb::arg("last_epoch") = SchedulerDefaults::last_epoch, nb::keep_alive<1, 2>())
      .def_prop_ro("anneal_epochs", &SWALR::anneal_epochs)
      .def_prop_ro("anneal_strategy", &SWALR::anneal_strategy);
}

}  // namespace ugpy
