// The pieces of the unigrad._C module, one function per area.
#pragma once

#include <nanobind/nanobind.h>

#include "casters.h"
#include "ug/graph/grad_mode.h"

namespace ug::nn {
class CloneMemo;
}

namespace ugpy {

/** Runs f with its draws from `generator` (a ug.Generator, torch's generator=) when one is
 *  given, else from the global generator. */
template <class F> decltype(auto) with_generator(nb::handle generator, const char* op, F&& f) {
  if (generator.is_none()) return f();
  if (!nb::isinstance<ug::Generator>(generator))
    ug::fail<ug::TypeError>("[", op, "] generator must be a ug.Generator, got ", nb::inst_name(generator).c_str());
  ug::GeneratorScope scope(nb::cast<ug::Generator&>(generator));
  return f();
}

/** Whether a gradient is recorded through a (a tensor that requires grad). */
template <class A> bool records_grad(const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, ug::Tensor>) return a.defined() && a.requires_grad();
  else return false;
}

/** What an in-place method made of an op and copy_ passes the op for t: t itself, or a copy of
 *  it while a gradient is recorded, so that what the op saves for backward is not the tensor
 *  the copy_ then overwrites (torch's in-place ops keep working there). */
template <class... A> ug::Tensor operand_of_in_place(const ug::Tensor& t, const A&... args) {
  const bool recorded = ug::GradMode::is_enabled() && (t.requires_grad() || (records_grad(args) || ...));
  return recorded ? t.clone() : t;
}

/** Keras's dtype attributes of a layer with dtype_policy(), compute_dtype() and weight_dtype():
 *  dtype_policy (a ug.mixed_precision.Policy), and compute_dtype, variable_dtype and dtype (names). */
template <class Layer, class Class> void def_keras_dtypes(Class& cls) {
  cls.def_prop_ro(
         "dtype_policy",
         [](const Layer& l) {
           return nb::module_::import_("unigrad.mixed_precision").attr("Policy")(l.dtype_policy().name);
         },
         "Keras's layer.dtype_policy: its dtype= policy, else the global one when it was made")
      .def_prop_ro(
          "compute_dtype",
          [](const Layer& l) { return std::string(ug::dtype_name(l.compute_dtype().value_or(l.weight_dtype()))); },
          "Keras's: the name of the dtype the layer computes in")
      .def_prop_ro(
          "variable_dtype", [](const Layer& l) { return std::string(ug::dtype_name(l.weight_dtype())); },
          "Keras's: the name of its weights' dtype")
      .def_prop_ro(
          "dtype", [](const Layer& l) { return std::string(ug::dtype_name(l.weight_dtype())); },
          "Keras's layer.dtype: variable_dtype");
}

void bind_core(nb::module_& m);
/** torch's conveniences (ops/composite.h), NumPy-name aliases, new_* factories, finfo/iinfo. */
void bind_composite(nb::module_& m, nb::class_<ug::Tensor>& tensor);
/** Order statistics, unique, bincount, histc, searchsorted, cummax... (ops/composite_order.cpp). */
void bind_composite_order(nb::module_& m, nb::class_<ug::Tensor>& tensor);
/** tensordot, cov, diff, erfc, fmax, slice_scatter... (ops/composite_math.cpp). */
void bind_composite_math(nb::module_& m, nb::class_<ug::Tensor>& tensor);
void bind_complex(nb::module_& m, nb::class_<ug::Tensor>& tensor);  // bind_complex.cpp
/** copy.deepcopy / copy.copy / pickle of tensors and the deepcopy memo (after bind_tensor). */
void bind_copy(nb::module_& m, nb::class_<ug::Tensor>& tensor);
/** The C++ memo that travels in copy.deepcopy's memo dict, made on first use. */
ug::nn::CloneMemo& clone_memo(nb::dict memo);
/** The Python memo of a copy, for the parts written in Python (made for a copy begun in C++). */
nb::object python_memo(ug::nn::CloneMemo& memo);
void bind_tensor(nb::module_& m, nb::class_<ug::Tensor>& cls);
/** Tensor.__dlpack__, ug.from_dlpack / to_dlpack: zero-copy exchange with torch, JAX, NumPy. */
void bind_dlpack(nb::module_& m, nb::class_<ug::Tensor>& tensor);
void bind_elementwise_methods(nb::class_<ug::Tensor>& cls);
void bind_elementwise_functions(nb::module_& m);
void bind_creation(nb::module_& m);
void bind_functions(nb::module_& m);
void bind_autograd(nb::module_& m, nb::class_<ug::Tensor>& cls);
/** ug._C._amp: autocast state, the op table's autocast policies, GradScaler (after bind_optim). */
void bind_amp(nb::module_& m);
void bind_transforms(nb::module_& m);
/** ug._C._linalg: ug::linalg's functions (unigrad/linalg.py gives them torch's signatures). */
void bind_linalg(nb::module_& m);
/** ug.nn: Module and the layers (bind_nn first: the layers derive from its Module). */
void bind_nn(nb::module_& nn);
void bind_nn_layers(nb::module_& nn);
void bind_nn_recurrent(nb::module_& nn);
void bind_nn_conv(nb::module_& nn, nb::module_& functional);
void bind_nn_functional(nb::module_& nn, nb::module_& functional);
void bind_nn_spatial(nb::module_& nn, nb::module_& functional);
/** ug.keras.layers' convolution, pooling and batch-normalization layers (after bind_nn). */
void bind_keras_layers(nb::module_& m);
/** ug.distributions (torch.distributions): ug::distributions' classes and kl_divergence. */
void bind_distributions(nb::module_& m);
void bind_optim(nb::module_& optim);
/** Keras's apply_gradients argument: (gradient or None, variable) pairs (bind_optim.cpp). */
std::vector<std::pair<ug::Tensor, ug::Tensor>> grads_and_vars_from_python(nb::iterable grads_and_vars);
/** ug.optimizers: Keras's optimizers (after bind_optim: they derive from ug.optim.Optimizer). */
void bind_optimizers(nb::module_& m);
void bind_data(nb::module_& data);
/** ug.models: the built-in architectures and save_model / load_model. */
void bind_models(nb::module_& models);
/** Module.compile/fit/evaluate/predict and ug.callbacks (after bind_nn: it adds to Module). */
void bind_train(nb::module_& m);
/** ug.data's data sets, samplers, DataLoader and tf.data-style Pipeline. */
void bind_data_sets(nb::module_& data);
void bind_data_samplers(nb::module_& data);
void bind_data_loader(nb::module_& data);
void bind_data_pipeline(nb::module_& data);
/** ug.data.read_csv and read_npz. */
void bind_data_readers(nb::module_& data);
/** ug.data.transforms: the image transforms. */
void bind_data_transforms(nb::module_& data);
/** ug.datasets: FashionMNIST. */
void bind_datasets(nb::module_& datasets);
/** ug.save, ug.load and ug.safetensors (the safetensors format). */
void bind_io(nb::module_& m);
/** ug.logging: SummaryWriter (TensorBoard event files) and SVG charts of training metrics. */
void bind_logging(nb::module_& logging);
/** ug._C._profiler: the profiler (torch.profiler), wrapped by unigrad/profiler.py. */
void bind_profiler(nb::module_& m);
/** ug.train.save_checkpoint / load_checkpoint. */
void bind_checkpoint(nb::module_& m);
/** ug.onnx.export (tracing a forward pass) and ug.onnx.load (a trainable Module). */
void bind_onnx_export(nb::module_& onnx);
/** ug.quantize_per_tensor / dequantize and _C.quantization (after bind_nn). */
void bind_quantization(nb::module_& m);
void bind_onnx_import(nb::module_& onnx);

/** m.<name>, created on first use: several bind_* files add to one submodule (_C.train). */
inline nb::module_ get_or_create_submodule(nb::module_& m, const char* name, const char* doc) {
  if (nb::hasattr(m, name)) {
    nb::object existing = m.attr(name);
    if (PyModule_Check(existing.ptr())) return nb::borrow<nb::module_>(existing);
  }
  return m.def_submodule(name, doc);
}
/** unigrad.errors.NoBatchingRule, the Python face of ug::NoBatchingRule. */
PyObject* no_batching_rule_type();

/** The (values, indices) named tuple returned by max(dim), sort, topk. */
nb::object values_indices_type();

}  // namespace ugpy
