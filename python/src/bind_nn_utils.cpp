// ug.nn.utils: parametrize and parametrizations (ug/nn/parametrize.h, ug/nn/parametrizations.h),
// the hook-based weight_norm / spectral_norm and the conv/linear + batch norm fusions
// (ug/nn/fusion.h). Module.__getattr__ / __setattr__ (bind_nn.cpp) read a parametrized tensor
// and assign through its right inverses; a parametrization written in Python is called through
// its Python object. Each binding that changes a module's structure moves the state epoch
// (state_epoch.h), so that a compiled call reads its guards again.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "state_epoch.h"
#include "ug/nn/nn.h"
#include "ug/nn/fusion.h"
#include "ug/nn/parametrizations.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using ug::nn::Module;
namespace pz = ug::nn::parametrize;
namespace pzs = ug::nn::parametrizations;

nb::object python_module(Module& m) {
  if (nb::handle existing = nb::find(m); existing.is_valid()) return nb::borrow(existing);
  return nb::cast(m.shared_from_this());
}

Tensor python_forward(Module& m, const std::vector<Tensor>& inputs) {
  nb::gil_scoped_acquire gil;
  nb::list args;
  for (const Tensor& t : inputs) args.append(nb::cast(t));
  nb::object out = python_module(m)(*nb::tuple(args));
  if (!nb::isinstance<Tensor>(out))
    throw nb::type_error(("[parametrize] a parametrization must return a Tensor, got " +
                          nb::cast<std::string>(nb::str(out.type().attr("__name__"))))
                             .c_str());
  return nb::cast<Tensor>(out);
}

std::optional<pz::Originals> python_right_inverse(Module& m, const Tensor& value, bool at_registration) {
  nb::gil_scoped_acquire gil;
  nb::object self = python_module(m);
  if (!nb::hasattr(self, "right_inverse")) return std::nullopt;
  nb::object out;
  try {
    out = self.attr("right_inverse")(value);
  } catch (nb::python_error& e) {
    if (at_registration && e.matches(PyExc_NotImplementedError)) return std::nullopt;
    throw;
  }
  if (nb::isinstance<Tensor>(out)) return pz::Originals{{nb::cast<Tensor>(out)}, true};
  if (!PySequence_Check(out.ptr()))
    throw nb::value_error(("[parametrize] right_inverse must return a Tensor or a sequence of tensors, got " +
                           nb::cast<std::string>(nb::str(out.type().attr("__name__"))))
                              .c_str());
  pz::Originals r{{}, false};
  for (nb::handle t : out) {
    if (!nb::isinstance<Tensor>(t))
      throw nb::value_error("[parametrize] right_inverse must return a sequence of tensors");
    r.tensors.push_back(nb::cast<Tensor>(t));
  }
  return r;
}

/** The `with parametrize.cached():` object. */
struct CachedScope {
  std::unique_ptr<pz::Cached> scope;
};

}  // namespace

void bind_nn_utils(nb::module_& nn) {
  pz::set_foreign_parametrization({python_forward, python_right_inverse});
  nb::module_ p =
      nn.def_submodule("_utils", "torch.nn.utils: parametrize, parametrizations, fusion; the lazy layers' helpers");

  nb::class_<pz::ParametrizationImpl, Module>(p, "_Parametrization");
  nb::class_<pz::ParametrizationListImpl, ug::nn::ModuleListImpl>(
      p, "ParametrizationList", "module.parametrizations[name]: the parametrizations of one tensor and its originals.")
      .def("forward", &pz::ParametrizationListImpl::value, "The parametrized tensor.")
      .def("right_inverse", &pz::ParametrizationListImpl::right_inverse, "value"_a,
           "Sets the originals so that forward() gives value.")
      .def_prop_rw("unsafe", &pz::ParametrizationListImpl::unsafe, &pz::ParametrizationListImpl::set_unsafe)
      .def_prop_ro("is_tensor", &pz::ParametrizationListImpl::is_tensor)
      .def_prop_ro("ntensors", &pz::ParametrizationListImpl::ntensors);
  nb::class_<pz::ParametrizationsImpl, ug::nn::ModuleDictImpl>(p, "_Parametrizations");

  p.def(
      "register_parametrization",
      [](nb::handle module, const std::string& tensor_name, std::shared_ptr<Module> parametrization, bool unsafe) {
        touch_state();
        pz::register_parametrization(nb::cast<Module&>(module), tensor_name, std::move(parametrization), unsafe);
        return nb::borrow(module);
      },
      "module"_a, "tensor_name"_a, "parametrization"_a, nb::kw_only(), "unsafe"_a = false);
  p.def(
      "is_parametrized",
      [](const Module& module, std::optional<std::string> tensor_name) {
        return pz::is_parametrized(module, tensor_name);
      },
      "module"_a, "tensor_name"_a = nb::none());
  p.def(
      "remove_parametrizations",
      [](nb::handle module, const std::string& tensor_name, bool leave_parametrized) {
        touch_state();
        pz::remove_parametrizations(nb::cast<Module&>(module), tensor_name, leave_parametrized);
        return nb::borrow(module);
      },
      "module"_a, "tensor_name"_a, "leave_parametrized"_a = true);
  p.def(
      "transfer_parametrizations_and_params",
      [](Module& from_module, nb::handle to_module, std::optional<std::string> tensor_name) {
        touch_state();
        pz::transfer_parametrizations_and_params(from_module, nb::cast<Module&>(to_module), tensor_name);
        return nb::borrow(to_module);
      },
      "from_module"_a, "to_module"_a, "tensor_name"_a = nb::none());
  nb::class_<CachedScope>(p, "_Cached")
      .def(nb::init<>())
      .def("__enter__", [](CachedScope& c) { c.scope = std::make_unique<pz::Cached>(); })
      .def("__exit__", [](CachedScope& c, nb::args) { c.scope.reset(); });

  nb::class_<pzs::WeightNormImpl, pz::ParametrizationImpl>(p, "_WeightNorm")
      .def(nb::init<std::optional<int64_t>>(), "dim"_a.none() = 0)
      .def(
          "forward",
          [](pzs::WeightNormImpl& w, const Tensor& g, const Tensor& v) {
            return w.forward_originals({g, v});
          },
          "weight_g"_a, "weight_v"_a)
      .def(
          "right_inverse",
          [](pzs::WeightNormImpl& w, const Tensor& weight) {
            auto r = *w.right_inverse(weight);
            return nb::make_tuple(r.tensors[0], r.tensors[1]);
          },
          "weight"_a)
      .def_prop_ro("dim", &pzs::WeightNormImpl::dim);
  nb::class_<pzs::SpectralNormImpl, pz::ParametrizationImpl>(p, "_SpectralNorm")
      .def(nb::init<const Tensor&, int64_t, int64_t, double>(), "weight"_a, "n_power_iterations"_a = 1, "dim"_a = 0,
           "eps"_a = 1e-12)
      .def(
          "right_inverse", [](pzs::SpectralNormImpl&, const Tensor& value) { return value; }, "value"_a)
      .def_prop_ro("dim", &pzs::SpectralNormImpl::dim)
      .def_prop_ro("eps", &pzs::SpectralNormImpl::eps)
      .def_prop_ro("n_power_iterations", &pzs::SpectralNormImpl::n_power_iterations);
  nb::class_<pzs::OrthogonalImpl, pz::ParametrizationImpl>(p, "_Orthogonal")
      .def(
          "right_inverse", [](pzs::OrthogonalImpl& o, const Tensor& q) { return o.right_inverse(q)->tensors[0]; },
          "Q"_a)
      .def_prop_ro("orthogonal_map", &pzs::OrthogonalImpl::orthogonal_map);

  p.def(
      "weight_norm",
      [](nb::handle module, const std::string& name, std::optional<int64_t> dim) {
        touch_state();
        pzs::weight_norm(nb::cast<Module&>(module), name, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "dim"_a.none() = 0);
  p.def(
      "spectral_norm",
      [](nb::handle module, const std::string& name, int64_t n_power_iterations, double eps,
         std::optional<int64_t> dim) {
        touch_state();
        pzs::spectral_norm(nb::cast<Module&>(module), name, n_power_iterations, eps, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "n_power_iterations"_a = 1, "eps"_a = 1e-12, "dim"_a = nb::none());
  p.def(
      "orthogonal",
      [](nb::handle module, const std::string& name, std::optional<std::string> orthogonal_map,
         bool use_trivialization) {
        touch_state();
        pzs::orthogonal(nb::cast<Module&>(module), name, orthogonal_map, use_trivialization);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "orthogonal_map"_a = nb::none(), nb::kw_only(), "use_trivialization"_a = true);
  namespace ut = ug::nn::utils;
  p.def(
      "hook_weight_norm",
      [](nb::handle module, const std::string& name, std::optional<int64_t> dim) {
        touch_state();
        ut::weight_norm(nb::cast<Module&>(module), name, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "dim"_a.none() = 0);
  p.def(
      "remove_weight_norm",
      [](nb::handle module, const std::string& name) {
        touch_state();
        ut::remove_weight_norm(nb::cast<Module&>(module), name);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight");
  p.def(
      "hook_spectral_norm",
      [](nb::handle module, const std::string& name, int64_t n_power_iterations, double eps,
         std::optional<int64_t> dim) {
        touch_state();
        ut::spectral_norm(nb::cast<Module&>(module), name, n_power_iterations, eps, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "n_power_iterations"_a = 1, "eps"_a = 1e-12, "dim"_a = nb::none());
  p.def(
      "remove_spectral_norm",
      [](nb::handle module, const std::string& name) {
        touch_state();
        ut::remove_spectral_norm(nb::cast<Module&>(module), name);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight");
  auto or_undefined = [](const std::optional<Tensor>& t) { return t.value_or(Tensor()); };
  p.def(
      "fuse_conv_bn_weights",
      [or_undefined](const Tensor& conv_w, std::optional<Tensor> conv_b, const Tensor& bn_rm, const Tensor& bn_rv,
                     double bn_eps, std::optional<Tensor> bn_w, std::optional<Tensor> bn_b, bool transpose) {
        return ut::fuse_conv_bn_weights(conv_w, or_undefined(conv_b), bn_rm, bn_rv, bn_eps, or_undefined(bn_w),
                                        or_undefined(bn_b), transpose);
      },
      "conv_w"_a, "conv_b"_a.none(), "bn_rm"_a, "bn_rv"_a, "bn_eps"_a, "bn_w"_a.none(), "bn_b"_a.none(),
      "transpose"_a = false);
  p.def(
      "fuse_linear_bn_weights",
      [or_undefined](const Tensor& linear_w, std::optional<Tensor> linear_b, const Tensor& bn_rm, const Tensor& bn_rv,
                     double bn_eps, std::optional<Tensor> bn_w, std::optional<Tensor> bn_b) {
        return ut::fuse_linear_bn_weights(linear_w, or_undefined(linear_b), bn_rm, bn_rv, bn_eps, or_undefined(bn_w),
                                          or_undefined(bn_b));
      },
      "linear_w"_a, "linear_b"_a.none(), "bn_rm"_a, "bn_rv"_a, "bn_eps"_a, "bn_w"_a.none(), "bn_b"_a.none());
  p.def("fuse_conv_bn_eval", &ut::fuse_conv_bn_eval, "conv"_a, "bn"_a, "transpose"_a = false);
  p.def("fuse_linear_bn_eval", &ut::fuse_linear_bn_eval, "linear"_a, "bn"_a);
  p.def(
      "_set_type_name", [](Module& m, const std::string& name) { m.set_type_name(name); }, "module"_a, "name"_a,
      "The name a module prints as (a lazy layer's, until its first forward).");
  p.def("householder_product", &pzs::householder_product, "A"_a, "tau"_a);
}

}  // namespace ugpy
