// ug._C._amp: the autocast state (torch.is_autocast_enabled, set_autocast_enabled, ...) that
// unigrad/amp.py's autocast context manager sets and restores, the op table's policies, and
// GradScaler.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "bindings.h"
#include "ug/nn/mixed_precision.h"
#include "ug/ops/autocast.h"
#include "ug/optim/grad_scaler.h"

namespace ugpy {

namespace {

ug::DeviceType device_type(const std::string& name) {
  if (name == "cpu") return ug::DeviceType::CPU;
  if (name == "cuda") return ug::DeviceType::CUDA;
  ug::fail("[autocast] device_type must be 'cpu' or 'cuda', got '", name, "'");
}

const char* policy_name(ug::graph::Autocast p) {
  switch (p) {
    case ug::graph::Autocast::Lower: return "lower_precision";
    case ug::graph::Autocast::Float32: return "float32";
    case ug::graph::Autocast::None: break;
  }
  return "none";
}

nb::dict scaler_state(const ug::amp::GradScaler& s) {
  nb::dict d;
  if (!s.is_enabled()) return d;  // torch: a disabled scaler's state_dict is empty
  ug::amp::GradScalerState st = s.state_dict();
  d["scale"] = st.scale;
  d["growth_factor"] = st.growth_factor;
  d["backoff_factor"] = st.backoff_factor;
  d["growth_interval"] = st.growth_interval;
  d["_growth_tracker"] = st.growth_tracker;
  return d;
}

void load_scaler_state(ug::amp::GradScaler& s, const nb::dict& d) {
  if (!s.is_enabled()) return;
  if (d.size() == 0)
    ug::fail("[GradScaler] load_state_dict: the state_dict is empty: it came from a disabled GradScaler");
  auto get = [&](const char* key) {
    if (!d.contains(key)) ug::fail("[GradScaler] load_state_dict: the state_dict has no '", key, "'");
    return d[key];
  };
  ug::amp::GradScalerState st;
  st.scale = nb::cast<double>(get("scale"));
  st.growth_factor = nb::cast<double>(get("growth_factor"));
  st.backoff_factor = nb::cast<double>(get("backoff_factor"));
  st.growth_interval = nb::cast<int64_t>(get("growth_interval"));
  st.growth_tracker = d.contains("_growth_tracker") ? nb::cast<int64_t>(d["_growth_tracker"]) : 0;
  s.load_state_dict(st);
}

}  // namespace

void bind_amp(nb::module_& m) {
  nb::module_ amp = m.def_submodule("_amp", "autocast state and GradScaler (unigrad.amp wraps them)");
  amp.def(
      "is_autocast_enabled", [](const std::string& d) { return ug::autocast::is_enabled(device_type(d)); },
      nb::arg("device_type") = "cpu");
  amp.def(
      "set_autocast_enabled",
      [](const std::string& d, bool enabled) { ug::autocast::set_enabled(device_type(d), enabled); },
      nb::arg("device_type"), nb::arg("enabled"));
  amp.def(
      "get_autocast_dtype", [](const std::string& d) { return ug::autocast::get_dtype(device_type(d)); },
      nb::arg("device_type") = "cpu");
  amp.def(
      "set_autocast_dtype",
      [](const std::string& d, ug::DType dtype) { ug::autocast::set_dtype(device_type(d), dtype); },
      nb::arg("device_type"), nb::arg("dtype"));
  // ug.autocast's __enter__ keeps what it found, its __exit__ puts it back exactly (RegionState).
  amp.def(
      "region_state",
      [](const std::string& d) {
        const ug::autocast::RegionState s = ug::autocast::region_state(device_type(d));
        return std::make_tuple(s.enabled, s.dtype, s.active);
      },
      nb::arg("device_type"));
  amp.def(
      "restore_region",
      [](const std::string& d, std::tuple<bool, ug::DType, bool> s) {
        ug::autocast::restore(device_type(d), {std::get<0>(s), std::get<1>(s), std::get<2>(s)});
      },
      nb::arg("device_type"), nb::arg("state"));
  amp.def(
      "autocast_policy", [](const std::string& op) { return policy_name(ug::graph::autocast_policy(op)); },
      nb::arg("op"), "What an op of the op table does under autocast: 'lower_precision', 'float32' or 'none'.");

  auto policy_tuple = [](const ug::mixed_precision::Policy& p) {
    return nb::make_tuple(p.name, std::string(ug::dtype_name(p.compute_dtype)),
                          std::string(ug::dtype_name(p.variable_dtype)));
  };
  amp.def(
      "policy", [=](const std::string& name) { return policy_tuple(ug::mixed_precision::policy(name)); },
      nb::arg("name"), "Keras's policy of that name as (name, compute_dtype, variable_dtype).");
  amp.def("set_global_policy", &ug::mixed_precision::set_global_policy, nb::arg("name"));
  amp.def("global_policy", [=] { return policy_tuple(ug::mixed_precision::global_policy()); });

  nb::class_<ug::amp::GradScaler>(amp, "GradScaler", "Dynamic loss scaling (torch.amp.GradScaler); see unigrad.amp.")
      .def(
          "__init__",
          [](ug::amp::GradScaler* self, double init_scale, double growth_factor, double backoff_factor,
             int64_t growth_interval, bool enabled) {
            new (self) ug::amp::GradScaler(ug::amp::GradScalerOptions{.init_scale = init_scale,
                                                                      .growth_factor = growth_factor,
                                                                      .backoff_factor = backoff_factor,
                                                                      .growth_interval = growth_interval,
                                                                      .enabled = enabled});
          },
          nb::arg("init_scale") = 65536.0, nb::arg("growth_factor") = 2.0, nb::arg("backoff_factor") = 0.5,
          nb::arg("growth_interval") = 2000, nb::arg("enabled") = true)
      .def("scale", nb::overload_cast<const ug::Tensor&>(&ug::amp::GradScaler::scale, nb::const_), nb::arg("outputs"))
      .def("unscale_", &ug::amp::GradScaler::unscale_, nb::arg("optimizer"))
      .def(
          "step",
          [](ug::amp::GradScaler& s, ug::optim::Optimizer& opt) -> nb::object {
            std::optional<ug::Tensor> loss = s.step(opt);
            if (!loss || !loss->defined()) return nb::none();
            return nb::cast(*loss);
          },
          nb::arg("optimizer"), "Unscales (unless unscale_ did) and steps, unless the gradients hold inf or NaN.")
      .def("update", &ug::amp::GradScaler::update, nb::arg("new_scale") = nb::none())
      .def("get_scale", &ug::amp::GradScaler::get_scale)
      .def("get_growth_factor", &ug::amp::GradScaler::growth_factor)
      .def("set_growth_factor", &ug::amp::GradScaler::set_growth_factor, nb::arg("new_factor"))
      .def("get_backoff_factor", &ug::amp::GradScaler::backoff_factor)
      .def("set_backoff_factor", &ug::amp::GradScaler::set_backoff_factor, nb::arg("new_factor"))
      .def("get_growth_interval", &ug::amp::GradScaler::growth_interval)
      .def("set_growth_interval", &ug::amp::GradScaler::set_growth_interval, nb::arg("new_interval"))
      .def("is_enabled", &ug::amp::GradScaler::is_enabled)
      .def("state_dict", &scaler_state)
      .def("load_state_dict", &load_scaler_state, nb::arg("state_dict"));
}

}  // namespace ugpy
