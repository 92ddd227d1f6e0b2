// GradientTape and the functional transforms. Pytrees are flattened to lists of tensors by
// unigrad/transforms.py; here the C++ transforms run over those lists.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/autograd/checkpoint.h"
#include "ug/autograd/functional.h"
#include "ug/autograd/tape.h"
#include "ug/core/batching.h"
#include "ug/ops/dynamic_slice.h"

namespace ugpy {

namespace {

ug::Randomness randomness_of(const std::string& name) {
  if (name == "error") return ug::Randomness::Error;
  if (name == "same") return ug::Randomness::Same;
  if (name == "different") return ug::Randomness::Different;
  ug::fail<ug::ValueError>("[vmap] randomness must be 'error', 'same' or 'different', got '", name, "'");
}

ug::UnconnectedGradients unconnected_of(bool zero) {
  return zero ? ug::UnconnectedGradients::Zero : ug::UnconnectedGradients::None;
}

}  // namespace

void bind_transforms(nb::module_& m) {
  using ug::Tensor;
  using ug::Tensors;
  auto defined_or_none = [](const Tensors& ts) {
    nb::list out;
    for (const Tensor& t : ts) out.append(t.defined() ? nb::cast(t) : nb::none());
    return out;
  };
  nb::class_<ug::GradientTape>(m, "_GradientTape")
      .def(nb::init<bool, bool>(), nb::arg("persistent") = false, nb::arg("watch_accessed_variables") = true)
      .def("start", &ug::GradientTape::start)
      .def("stop", &ug::GradientTape::stop)
      .def_prop_ro("recording", &ug::GradientTape::recording)
      .def("watch", &ug::GradientTape::watch)
      .def("watched", &ug::GradientTape::watched)
      .def("gradient",
           [=](ug::GradientTape& tape, const Tensors& targets, const Tensors& sources, const Tensors& output_gradients,
               bool zero) {
             return defined_or_none(tape.gradient(targets, sources, output_gradients, unconnected_of(zero)));
           })
      .def("jacobian", [=](ug::GradientTape& tape, const Tensor& target, const Tensors& sources,
                           bool zero) { return defined_or_none(tape.jacobian(target, sources, unconnected_of(zero))); })
      .def("batch_jacobian", [](ug::GradientTape& tape, const Tensor& target, const Tensor& source, bool zero) {
        Tensor j = tape.batch_jacobian(target, source, unconnected_of(zero));
        return j.defined() ? nb::cast(j) : nb::none();
      });

  nb::module_ f = m.def_submodule("_functional");
  f.def("value_and_grad", [](const ug::TensorFn& fn, const Tensors& args, const std::vector<int>& argnums) {
    return ug::value_and_grad(fn, args, argnums);
  });
  f.def("vjp", [](const ug::TensorFn& fn, const Tensors& primals) {
    auto [out, pullback] = ug::vjp(fn, primals);
    return std::make_pair(out, pullback);
  });
  f.def("jvp", &ug::jvp);
  f.def("jacrev", &ug::jacrev);
  f.def("jacfwd", &ug::jacfwd);
  f.def(
      "vmap",
      [](const ug::TensorFn& fn, const Tensors& args, const std::vector<std::optional<int64_t>>& in_axes,
         const std::function<std::vector<std::optional<int64_t>>()>& out_axes_now, std::optional<int64_t> axis_size,
         std::optional<std::string> axis_name, const std::string& randomness) {
        // The outputs' pytree, hence their flat out_axes, is known once the Python function has
        // run: ug::vmap reads out_axes after each call of f, so it is filled then.
        std::vector<std::optional<int64_t>> out_axes;
        // A missing batching rule met inside the Python function comes back as a Python error:
        // turn it into the C++ exception vmap answers with its per-example loop.
        ug::TensorFn unwrapped = [&](const Tensors& xs) {
          try {
            Tensors outs = fn(xs);
            out_axes = out_axes_now();
            return outs;
          } catch (nb::python_error& e) {
            if (e.matches(no_batching_rule_type())) throw ug::NoBatchingRule(nb::str(e.value()).c_str());
            throw;
          }
        };
        return ug::vmap(unwrapped, args, in_axes, out_axes, axis_size, axis_name, randomness_of(randomness));
      },
      nb::arg("fn"), nb::arg("args"), nb::arg("in_axes"), nb::arg("out_axes_now"), nb::arg("axis_size").none(),
      nb::arg("axis_name").none() = nb::none(), nb::arg("randomness") = "error");
  f.def("vmap_fallbacks", &ug::vmap_fallbacks);
  f.def("last_vmap_fallback", &ug::last_vmap_fallback);
  f.def(
      "checkpoint",
      [](const ug::TensorFn& fn, const Tensors& inputs, std::optional<std::function<bool(std::string)>> keep) {
        ug::CheckpointPolicy policy;
        if (keep) policy = [keep = *keep](const char* op) { return keep(op); };
        return ug::checkpoint(fn, inputs, policy);
      },
      nb::arg("fn"), nb::arg("inputs"), nb::arg("keep") = nb::none(),
      "fn(inputs) keeping for backward only the saved tensors whose op keep(op) names; backward runs fn "
      "again (same random and autocast state) for the rest.");
  f.def(
      "physical",
      [](const ug::Tensor& t) {
        const ug::BatchInfo* b = t.impl().batch();
        return b ? ug::Tensor(b->physical) : t;
      },
      "Inside vmap: the tensor of every example that t stands for, batch dim first (of the innermost "
      "vmap; t itself when it is not batched).");
  f.def(
      "batch_level", [](const ug::Tensor& t) { return ug::batching::level(t); },
      "The level of the innermost vmap t is batched by (0: none; nested vmaps count up).");
  f.def(
      "is_batched", [](const ug::Tensor& t) { return ug::batching::level(t) != 0; },
      "Whether t is a value inside vmap (one per batch element), not one tensor.");

  // The collectives over a vmap's named axis (ug/ops/axis_collectives.h); ug.lax picks them or
  // pmap's process-group ones by which binding of the name is innermost.
  nb::module_ lax = m.def_submodule("_lax");
  lax.def("psum", &ug::lax::psum);
  lax.def("pmean", &ug::lax::pmean);
  lax.def("pmax", &ug::lax::pmax);
  lax.def("pmin", &ug::lax::pmin);
  lax.def("all_gather", &ug::lax::all_gather, nb::arg("x"), nb::arg("axis_name"), nb::arg("axis") = 0,
          nb::arg("tiled") = false);
  lax.def("psum_scatter", &ug::lax::psum_scatter, nb::arg("x"), nb::arg("axis_name"), nb::arg("scatter_dimension") = 0,
          nb::arg("tiled") = false);
  lax.def("ppermute", &ug::lax::ppermute);
  lax.def("axis_index", &ug::lax::axis_index);
  lax.def("axis_size", &ug::lax::axis_size);
  lax.def("axis_depth", &ug::lax::axis_depth,
          "How many vmap axis bindings are open up to the innermost one of the name (0: unbound).");
  lax.def("open_axes", &ug::lax::open_axes, "How many vmap axis bindings are open.");
  lax.def(
      "dynamic_slice",
      [](const ug::Tensor& x, const std::vector<ug::Tensor>& starts, const std::vector<int64_t>& sizes,
         bool allow_negative_indices) {
        return ug::lax::dynamic_slice(x, starts, ug::Dims(sizes.begin(), sizes.end()), allow_negative_indices);
      },
      nb::arg("x"), nb::arg("starts"), nb::arg("sizes"), nb::arg("allow_negative_indices"));
  lax.def("dynamic_update_slice", &ug::lax::dynamic_update_slice, nb::arg("x"), nb::arg("update"), nb::arg("starts"),
          nb::arg("allow_negative_indices"));
}

}  // namespace ugpy
