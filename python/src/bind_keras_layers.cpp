// ug.keras.layers' convolution, pooling and batch-normalization layers (ug::nn::Conv2D, ...; see
// src/ug/nn/layers/keras_conv.h), with Keras 3's constructors: ints or tuples for sizes, None
// for Keras's defaults, activation a name or a callable. Also the functional API's C++ half:
// the merge layers, Activation, and Functional (src/ug/nn/functional_model.h), which
// unigrad/keras_functional.py builds from keras.Input's symbolic tensors.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <any>

#include "bindings.h"
#include "ug/nn/functional_model.h"
#include "ug/nn/layers/keras_conv.h"
#include "ug/nn/layers/linear.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using namespace ug::nn;

nb::tuple as_tuple(const ug::Dims& dims) {
  nb::list out;
  for (int64_t d : dims) out.append(d);
  return nb::tuple(out);
}

/** activation=: None, a name (Dense's), or a callable applied to the output. */
void set_activation(KerasConvImpl& layer, nb::handle activation) {
  if (activation.is_none() || nb::isinstance<nb::str>(activation)) return;
  if (!PyCallable_Check(activation.ptr()))
    ug::fail<ug::TypeError>("[", layer.type_name(), "] activation must be a name such as 'relu' or a callable, got ",
                            nb::cast<std::string>(nb::repr(activation)));
  layer.set_activation([fn = nb::borrow<nb::object>(activation)](const Tensor& y) { return nb::cast<Tensor>(fn(y)); });
}

std::string activation_name(nb::handle activation) {
  return nb::isinstance<nb::str>(activation) ? nb::cast<std::string>(activation) : "";
}

template <class Impl, class Base> void bind_conv(nb::module_& m, const char* name, const char* doc) {
  nb::class_<Impl, Base>(m, name, doc)
      .def(
          "__init__",
          [name](Impl* self, int64_t filters, nb::handle kernel_size, nb::handle strides, const std::string& padding,
                 std::optional<std::string> data_format, nb::handle dilation_rate, int64_t groups,
                 nb::handle activation, bool use_bias, const std::string& kernel_initializer,
                 const std::string& bias_initializer, std::optional<std::string> layer_name, nb::handle dtype) {
            KerasConvOptions options{.strides = dims_from_sequence(strides, name),
                                     .padding = padding,
                                     .data_format = data_format.value_or("channels_last"),
                                     .dilation_rate = dims_from_sequence(dilation_rate, name),
                                     .groups = groups,
                                     .activation = activation_name(activation),
                                     .use_bias = use_bias,
                                     .kernel_initializer = kernel_initializer,
                                     .bias_initializer = bias_initializer,
                                     .name = layer_name.value_or(""),
                                     .dtype = policy_name_from_python(dtype)};
            const ug::Dims kernel = dims_from_sequence(kernel_size, name);
            if constexpr (std::is_same_v<Impl, Conv1DImpl>) {
              if (kernel.size() != 1)
                ug::fail("[Conv1D] kernel_size must be a positive int or a tuple of 1 positive ints, got ",
                         ug::nn::tuple_repr(kernel));
              new (self) Impl(filters, kernel[0], std::move(options));
            } else {
              new (self) Impl(filters, kernel, std::move(options));
            }
            set_activation(*self, activation);
          },
          "filters"_a, "kernel_size"_a, "strides"_a = 1, "padding"_a = "valid", "data_format"_a = nb::none(),
          "dilation_rate"_a = 1, "groups"_a = 1, "activation"_a = nb::none(), "use_bias"_a = true,
          "kernel_initializer"_a = "glorot_uniform", "bias_initializer"_a = "zeros", "name"_a = nb::none(),
          "dtype"_a = nb::none());
}

template <class Impl> void bind_pool(nb::module_& m, const char* name, bool pool_size_required, const char* doc) {
  auto init = [name](Impl* self, nb::handle pool_size, nb::handle strides, const std::string& padding,
                     std::optional<std::string> data_format, std::optional<std::string> layer_name) {
    KerasPoolOptions options{.strides = strides.is_none() ? ug::Dims{} : dims_from_sequence(strides, name),
                             .padding = padding,
                             .data_format = data_format.value_or("channels_last"),
                             .name = layer_name.value_or("")};
    new (self) Impl(dims_from_sequence(pool_size, name), std::move(options));
  };
  nb::class_<Impl, KerasPoolImpl> cls(m, name, doc);
  // Keras's average poolings have no default pool_size.
  if (pool_size_required)
    cls.def("__init__", init, "pool_size"_a, "strides"_a = nb::none(), "padding"_a = "valid",
            "data_format"_a = nb::none(), "name"_a = nb::none());
  else
    cls.def("__init__", init, "pool_size"_a = 2, "strides"_a = nb::none(), "padding"_a = "valid",
            "data_format"_a = nb::none(), "name"_a = nb::none());
}

template <class Impl> void bind_global_pool(nb::module_& m, const char* name, const char* doc) {
  nb::class_<Impl, KerasGlobalPoolImpl>(m, name, doc)
      .def(
          "__init__",
          [](Impl* self, std::optional<std::string> data_format, bool keepdims, std::optional<std::string> layer_name) {
            new (self) Impl(data_format.value_or("channels_last"), keepdims, layer_name.value_or(""));
          },
          "data_format"_a = nb::none(), "keepdims"_a = false, "name"_a = nb::none());
}

/** The InputLayers keras.Model(inputs=, outputs=) gave a Functional (a copy of the list; empty
 *  for one built otherwise). */
nb::list input_layers(nb::handle model) {
  nb::list out;
  if (nb::hasattr(model, "_input_layers"))
    for (nb::handle layer : model.attr("_input_layers")) out.append(layer);
  return out;
}

}  // namespace

void bind_keras_layers(nb::module_& m) {
  auto conv = nb::class_<KerasConvImpl, Module>(m, "_Conv");
  def_keras_dtypes<KerasConvImpl>(conv);
  conv.def_prop_ro("built", &KerasConvImpl::built)
      .def_prop_ro("filters", &KerasConvImpl::filters)
      .def_prop_ro("kernel_size", [](const KerasConvImpl& c) { return as_tuple(c.kernel_size()); })
      .def_prop_ro("strides", [](const KerasConvImpl& c) { return as_tuple(c.options().strides); })
      .def_prop_ro("dilation_rate", [](const KerasConvImpl& c) { return as_tuple(c.options().dilation_rate); })
      .def_prop_ro("padding", [](const KerasConvImpl& c) { return c.options().padding; })
      .def_prop_ro("data_format", [](const KerasConvImpl& c) { return c.options().data_format; })
      .def_prop_ro("groups", [](const KerasConvImpl& c) { return c.options().groups; })
      .def_prop_ro("use_bias", [](const KerasConvImpl& c) { return c.options().use_bias; })
      .def_prop_rw("name", &KerasConvImpl::name, &KerasConvImpl::set_name)
      .def(
          "build",
          [](KerasConvImpl& c, nb::handle input_shape) {
            c.build(nb::cast<int64_t>(input_shape[c.options().data_format == "channels_last" ? -1 : 1]));
          },
          "input_shape"_a, "Makes the kernel and bias for an input of input_shape (Keras's layer.build).");
  bind_conv<Conv1DImpl, KerasConvImpl>(
      m, "Conv1D", "keras.layers.Conv1D: a (batch, steps, channels) input; padding 'valid', 'same' or 'causal'.");
  bind_conv<Conv2DImpl, KerasConvImpl>(
      m, "Conv2D", "keras.layers.Conv2D: a (batch, height, width, channels) input (channels_last).");

  nb::class_<KerasPoolImpl, Module>(m, "_Pooling")
      .def_prop_ro("pool_size", [](const KerasPoolImpl& p) { return as_tuple(p.pool_size()); })
      .def_prop_ro("strides", [](const KerasPoolImpl& p) { return as_tuple(p.options().strides); })
      .def_prop_ro("padding", [](const KerasPoolImpl& p) { return p.options().padding; })
      .def_prop_ro("data_format", [](const KerasPoolImpl& p) { return p.options().data_format; })
      .def_prop_rw("name", &KerasPoolImpl::name, &KerasPoolImpl::set_name);
  bind_pool<MaxPooling1DImpl>(m, "MaxPooling1D", false,
                              "keras.layers.MaxPooling1D(pool_size=2, strides=None (pool_size), padding='valid').");
  bind_pool<MaxPooling2DImpl>(
      m, "MaxPooling2D", false,
      "keras.layers.MaxPooling2D(pool_size=(2, 2), strides=None (pool_size), padding='valid').");
  bind_pool<AveragePooling1DImpl>(
      m, "AveragePooling1D", true,
      "keras.layers.AveragePooling1D(pool_size, strides=None (pool_size), padding='valid').");
  bind_pool<AveragePooling2DImpl>(
      m, "AveragePooling2D", true,
      "keras.layers.AveragePooling2D(pool_size, strides=None (pool_size), padding='valid').");

  nb::class_<KerasGlobalPoolImpl, Module>(m, "_GlobalPooling")
      .def_prop_ro("data_format", &KerasGlobalPoolImpl::data_format)
      .def_prop_ro("keepdims", &KerasGlobalPoolImpl::keepdims)
      .def_prop_rw("name", &KerasGlobalPoolImpl::name, &KerasGlobalPoolImpl::set_name);
  bind_global_pool<GlobalAveragePooling1DImpl>(m, "GlobalAveragePooling1D",
                                               "keras.layers.GlobalAveragePooling1D: the mean over the steps.");
  bind_global_pool<GlobalAveragePooling2DImpl>(m, "GlobalAveragePooling2D",
                                               "keras.layers.GlobalAveragePooling2D: the mean over height and width.");
  bind_global_pool<GlobalMaxPooling1DImpl>(m, "GlobalMaxPooling1D",
                                           "keras.layers.GlobalMaxPooling1D: the max over the steps.");
  bind_global_pool<GlobalMaxPooling2DImpl>(m, "GlobalMaxPooling2D",
                                           "keras.layers.GlobalMaxPooling2D: the max over height and width.");

  auto batch_norm =
      nb::class_<BatchNormalizationImpl, Module>(
          m, "BatchNormalization",
          "keras.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=1e-3): normalizes each entry of axis over "
          "the other dims; training uses the batch's statistics and moves moving_mean / moving_variance towards them "
          "by "
          "1 - momentum, eval the moving ones. Weights in Keras's order: gamma, beta, moving_mean, moving_variance.")
          .def(
              "__init__",
              [](BatchNormalizationImpl* self, int64_t axis, double momentum, double epsilon, bool center, bool scale,
                 const std::string& beta_initializer, const std::string& gamma_initializer,
                 const std::string& moving_mean_initializer, const std::string& moving_variance_initializer,
                 std::optional<std::string> layer_name, nb::handle dtype) {
                new (self) BatchNormalizationImpl({.axis = axis,
                                                   .momentum = momentum,
                                                   .epsilon = epsilon,
                                                   .center = center,
                                                   .scale = scale,
                                                   .beta_initializer = beta_initializer,
                                                   .gamma_initializer = gamma_initializer,
                                                   .moving_mean_initializer = moving_mean_initializer,
                                                   .moving_variance_initializer = moving_variance_initializer,
                                                   .name = layer_name.value_or(""),
                                                   .dtype = policy_name_from_python(dtype)});
              },
              "axis"_a = -1, "momentum"_a = 0.99, "epsilon"_a = 1e-3, "center"_a = true, "scale"_a = true,
              "beta_initializer"_a = "zeros", "gamma_initializer"_a = "ones", "moving_mean_initializer"_a = "zeros",
              "moving_variance_initializer"_a = "ones", "name"_a = nb::none(), "dtype"_a = nb::none())
          .def(
              "build",
              [](BatchNormalizationImpl& b, nb::handle input_shape) {
                b.build(dims_from_sequence(input_shape, "BatchNormalization"));
              },
              "input_shape"_a, "Makes gamma, beta and the moving statistics (Keras's layer.build).")
          .def_prop_ro("built", &BatchNormalizationImpl::built)
          .def_prop_ro("axis", [](const BatchNormalizationImpl& b) { return b.options().axis; })
          .def_prop_ro("momentum", [](const BatchNormalizationImpl& b) { return b.options().momentum; })
          .def_prop_ro("epsilon", [](const BatchNormalizationImpl& b) { return b.options().epsilon; })
          .def_prop_ro("center", [](const BatchNormalizationImpl& b) { return b.options().center; })
          .def_prop_ro("scale", [](const BatchNormalizationImpl& b) { return b.options().scale; })
          .def_prop_rw("name", &BatchNormalizationImpl::name, &BatchNormalizationImpl::set_name);
  def_keras_dtypes<BatchNormalizationImpl>(batch_norm);

  m.def("layer_name", &keras_layer_name, "type_name"_a, "name"_a = "",
        "Keras's layer.name: name if given, else the class's snake-case name made unique (\"dense_1\").");
  nb::class_<MergeImpl, Module>(m, "_Merge")
      .def_prop_rw("name", &MergeImpl::name, &MergeImpl::set_name)
      .def(
          "forward", [](MergeImpl& layer, const std::vector<Tensor>& inputs) { return layer.merge(inputs); },
          "inputs"_a, "The inputs merged into one tensor.");
  nb::class_<AddImpl, MergeImpl>(m, "Add", "keras.layers.Add: Add()([a, b]) is a + b (broadcast).")
      .def(nb::init<const std::string&>(), "name"_a = "");
  nb::class_<MultiplyImpl, MergeImpl>(m, "Multiply", "keras.layers.Multiply: Multiply()([a, b]) is a * b.")
      .def(nb::init<const std::string&>(), "name"_a = "");
  nb::class_<ConcatenateImpl, MergeImpl>(m, "Concatenate",
                                         "keras.layers.Concatenate(axis=-1): the inputs joined along axis.")
      .def(nb::init<int64_t, const std::string&>(), "axis"_a = -1, "name"_a = "")
      .def_prop_ro("axis", &ConcatenateImpl::axis);
  nb::class_<OperationImpl, MergeImpl>(
      m, "Operation",
      "A Keras operation on symbolic tensors (x + y, x[:, 0]) as a layer: fn(list of input tensors), shown "
      "under type_name (Keras's class name, \"Add\").")
      .def(
          "__init__",
          [](OperationImpl* self, const std::string& type_name, nb::callable fn, const std::string& name) {
            new (self) OperationImpl(
                type_name,
                [fn = nb::object(fn), type_name](const std::vector<Tensor>& inputs) {
                  nb::gil_scoped_acquire gil;
                  nb::object out = fn(inputs);
                  if (!nb::isinstance<Tensor>(out))
                    ug::fail<ug::TypeError>("[", type_name, "] must return a Tensor, got ", nb::inst_name(out).c_str());
                  return nb::cast<Tensor>(out);
                },
                name);
          },
          "type_name"_a, "fn"_a, "name"_a = "");
  auto activation =
      nb::class_<KerasActivationImpl, Module>(m, "Activation",
                                              "keras.layers.Activation('relu'): the activation of that name.")
          .def(
              "__init__",
              [](KerasActivationImpl* self, const std::string& activation, const std::string& name, nb::handle dtype) {
                new (self) KerasActivationImpl(activation, name, policy_name_from_python(dtype));
              },
              "activation"_a, "name"_a = "", "dtype"_a = nb::none())
          .def_prop_ro("activation", &KerasActivationImpl::activation_name)
          .def_prop_rw("name", &KerasActivationImpl::name, &KerasActivationImpl::set_name);
  def_keras_dtypes<KerasActivationImpl>(activation);

  nb::class_<FunctionalImpl, Module>(
      m, "Functional",
      "Keras's functional Model: a graph of layers, built by keras.Model(inputs=..., outputs=...). Called on one "
      "tensor per input (or one list of them), it returns its output, or a list of its outputs.")
      .def(
          "__init__",
          [](FunctionalImpl* self, int64_t inputs, const std::string& name, const std::vector<nb::object>& shapes,
             const std::vector<std::string>& input_names) {
            std::vector<ug::Shape> dims;
            for (const nb::object& shape : shapes) dims.push_back(dims_from_sequence(shape, "Functional"));
            new (self) FunctionalImpl(inputs, name, std::move(dims), input_names);
          },
          "inputs"_a = 1, "name"_a = "functional", "input_shapes"_a = std::vector<nb::object>{},
          "input_names"_a = std::vector<std::string>{})
      .def("add_layer", &FunctionalImpl::add_layer, "name"_a, "layer"_a)
      .def(
          "add_node",
          [](FunctionalImpl& f, int64_t layer, std::vector<int64_t> inputs, nb::handle shape) {
            return f.add_node(layer, std::move(inputs), dims_from_sequence(shape, "Functional"));
          },
          "layer"_a, "inputs"_a, "shape"_a)
      .def("set_outputs", &FunctionalImpl::set_outputs, "outputs"_a, "keys"_a = std::vector<std::string>{},
           "The output values; keys (one per output) make the outputs a dict, as Keras's outputs={...}.")
      .def(
          "forward",
          [](FunctionalImpl& f, nb::args args) -> nb::object {
            nb::handle items = args;
            if (args.size() == 1 && (nb::isinstance<nb::list>(args[0]) || nb::isinstance<nb::tuple>(args[0])))
              items = args[0];  // Keras's model([a, b])
            std::vector<Tensor> inputs;
            for (nb::handle x : items) {
              if (!nb::isinstance<Tensor>(x))
                ug::fail<ug::TypeError>("[", f.name(), "] expects tensors, got ",
                                        nb::cast<std::string>(nb::str(x.type().attr("__name__"))));
              inputs.push_back(nb::cast<Tensor>(x));
            }
            std::vector<Tensor> out = f.forward_all(inputs);
            if (f.dict_outputs()) {
              nb::dict d;
              for (size_t i = 0; i < out.size(); ++i) d[f.output_names()[i].c_str()] = nb::cast(out[i]);
              return d;
            }
            if (out.size() == 1) return nb::cast(out[0]);
            return nb::cast(out);
          },
          "The outputs for these inputs (one tensor per input, or one list).")
      .def("__call__",
           [](nb::handle self, nb::args args, nb::kwargs kwargs) -> nb::object {
             auto& f = nb::cast<FunctionalImpl&>(self);
             if (f.num_inputs() == 1 && f.outputs().size() == 1 && !f.dict_outputs())
               return nb::type<Module>().attr("__call__")(self, *args, **kwargs);  // the one-tensor fast path
             // Several inputs or outputs: Module's general call (its hooks) around forward.
             std::any out = f.call(std::any(nb::object(args)), [&](const std::any& inputs) {
               return std::any(self.attr("forward")(*std::any_cast<const nb::object&>(inputs), **kwargs));
             });
             return std::any_cast<nb::object>(out);
           })
      .def_prop_ro("name", &FunctionalImpl::name)
      .def_prop_ro(
          "layers",
          [](nb::handle self) {
            nb::list out = input_layers(self);
            for (const auto& layer : nb::cast<const FunctionalImpl&>(self).layers())
              if (!std::dynamic_pointer_cast<OperationImpl>(layer)) out.append(nb::cast(layer));
            return out;
          },
          "Keras's model.layers: an InputLayer per input, then the layers in node order (the operations "
          "on symbolic tensors, x + y, left out).")
      .def_prop_ro("layer_names", &FunctionalImpl::layer_names)
      .def_prop_ro("input_names", &FunctionalImpl::input_names)
      .def_prop_ro("num_inputs", &FunctionalImpl::num_inputs)
      .def_prop_ro("output_ids", &FunctionalImpl::outputs)
      .def_prop_ro("output_names", &FunctionalImpl::output_names,
                   "Keras's output names: the outputs dict's keys, else the output layers' names.")
      .def(
          "get_layer",
          [](nb::handle self, const std::string& name) -> nb::object {
            for (nb::handle layer : input_layers(self))
              if (nb::cast<std::string>(layer.attr("name")) == name) return nb::borrow(layer);
            const auto& f = nb::cast<const FunctionalImpl&>(self);
            const auto& names = f.layer_names();
            auto it = std::find(names.begin(), names.end(), name);
            if (it == names.end()) ug::fail<ug::ValueError>("[get_layer] no layer named '", name, "'");
            return nb::cast(f.layers()[it - names.begin()]);
          },
          "name"_a, "The layer of that (Keras) name, an InputLayer's included.")
      .def(
          "summary", [](const FunctionalImpl& f) { nb::print(nb::str(f.summary().c_str()), nb::str("")); },
          "Prints Keras's table: an InputLayer row per input, then each node's layer, output shape and "
          "parameters.");
}

}  // namespace ugpy
