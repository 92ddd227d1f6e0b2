// ug.models: the built-in architectures of `ug train`, and saving a model with its architecture.
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/models/classifiers.h"
#include "ug/models/zoo.h"

namespace ugpy {

using namespace nb::literals;

void bind_models(nb::module_& models) {
  namespace m = ug::models;
  using ug::nn::Module;
  nb::class_<m::LeNet, Module>(models, "LeNet")
      .def(nb::init<int64_t, int64_t>(), "in_channels"_a = 1, "classes"_a = 10);
  nb::class_<m::TransformerClassifier, Module>(models, "TransformerClassifier");

  nb::class_<m::Architecture>(models, "Architecture",
                              "An architecture by name with integer settings: Architecture('mlp', hidden=256).")
      .def(
          "__init__",
          [](m::Architecture* a, std::string name, const nb::kwargs& config) {
            new (a) m::Architecture{std::move(name), {}};
            for (auto [key, value] : config) a->config[nb::cast<std::string>(key)] = nb::cast<int64_t>(value);
          },
          "name"_a, "config"_a)
      .def_rw("name", &m::Architecture::name)
      .def_rw("config", &m::Architecture::config)
      .def("__repr__", [](const m::Architecture& a) {
        std::string text = "Architecture('" + a.name + "'";
        for (const auto& [key, value] : a.config) text += ", " + key + "=" + std::to_string(value);
        return text + ")";
      });
  models.def("names", &m::names, "The architectures build() knows: 'lenet', 'mlp', 'transformer'.");
  models.def("default_config", &m::default_config, "name"_a, "The settings of an architecture and their defaults.");
  models.def("build", &m::build, "arch"_a,
             "A freshly initialised model; fills arch.config with the defaults of the settings not given.");
  models.def(
      "input_shape",
      [](const m::Architecture& a) {
        ug::Shape s = m::input_shape(a);
        return nb::tuple(nb::cast(std::vector<int64_t>(s.begin(), s.end())));
      },
      "arch"_a, "The shape of one input with a batch dim of 1, e.g. (1, 784) for the MLP.");
  models.def("save_model", &m::save_model, "model"_a, "arch"_a, "path"_a,
             "Writes the weights and the architecture to one safetensors file, atomically.");
  models.def(
      "load_model",
      [](const std::string& path) {
        m::LoadedModel loaded = m::load_model(path);
        return nb::make_tuple(loaded.model, loaded.arch);
      },
      "path"_a, "(model, arch) rebuilt from a file written by save_model or `ug train`, in eval mode.");
}

}  // namespace ugpy
