// unigrad._C: the binding of the C++ library. Exceptions keep their "[op] ..." messages.
// NumPy raises ValueError/TypeError where PyTorch raises RuntimeError for the same mistake,
// so unigrad's errors derive from both: `except ValueError` and `except RuntimeError` work.
#include <string>
#include <string_view>

#include "bindings.h"
#include "ug/core/batching.h"
#include "ug/ops/linalg.h"

namespace ugpy {
void bind_distributed(nb::module_& m);  // bind_distributed.cpp
void bind_fft(nb::module_& m);          // bind_fft.cpp
void bind_jit(nb::module_& m);          // bind_jit.cpp
void bind_nn_utils(nb::module_& nn);    // bind_nn_utils.cpp
namespace {
PyObject* g_no_batching_rule = nullptr;
}  // namespace
PyObject* no_batching_rule_type() { return g_no_batching_rule; }
}  // namespace ugpy

namespace {

PyObject* new_error(nb::module_& errors, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("unigrad.errors.") + name;
  PyObject* bases = PyTuple_Pack(2, base, PyExc_RuntimeError);
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  errors.attr(name) = nb::handle(type);  // the module holds the reference from here on
  Py_DECREF(type);
  return type;
}

}  // namespace

NB_MODULE(_C, m) {
  // A Python module held by a C++ container (Sequential) is reached through an edge Python's
  // garbage collector cannot see, so at interpreter exit nanobind reports such objects as
  // leaked although they are freed normally while the program runs (tested).
  nb::set_leak_warnings(false);
  nb::module_ errors = m.def_submodule("errors", "unigrad's exception classes");
  static PyObject* value_error =
      new_error(errors, "ValueError", PyExc_ValueError,
                "A bad value (shape, dimension, argument): a ValueError and a RuntimeError.");
  static PyObject* type_error = new_error(errors, "TypeError", PyExc_TypeError,
                                          "An unsupported dtype or argument kind: a TypeError and a RuntimeError.");
  static PyObject* index_error = new_error(errors, "IndexError", PyExc_IndexError,
                                           "An index or dimension out of range: an IndexError and a RuntimeError.");
  static PyObject* oom_error =
      new_error(errors, "OutOfMemoryError", PyExc_MemoryError,
                "An allocation past ug.memory.set_limit (or refused by the system): a MemoryError and a RuntimeError, "
                "as torch.OutOfMemoryError is a RuntimeError.");
  // torch.linalg.LinAlgError is a RuntimeError alone; unigrad.linalg exports it too.
  static PyObject* linalg_error =
      PyErr_NewExceptionWithDoc("unigrad.errors.LinAlgError",
                                "A matrix a decomposition or solve cannot take (singular, not positive-definite, "
                                "no convergence): a RuntimeError, as torch.linalg.LinAlgError.",
                                PyExc_RuntimeError, nullptr);
  errors.attr("LinAlgError") = nb::handle(linalg_error);
  Py_DECREF(linalg_error);
  // Raised through Python code inside vmap, it brings vmap back to its per-example loop.
  ugpy::g_no_batching_rule = PyErr_NewExceptionWithDoc("unigrad.errors.NoBatchingRule",
                                                       "An op met a batched tensor inside vmap and has no rule for it.",
                                                       PyExc_RuntimeError, nullptr);
  errors.attr("NoBatchingRule") = nb::handle(ugpy::g_no_batching_rule);
  Py_DECREF(ugpy::g_no_batching_rule);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ug::NoBatchingRule& e) {
      PyErr_SetString(ugpy::g_no_batching_rule, e.what());
    } catch (const ug::TypeError& e) {
      PyErr_SetString(type_error, e.what());
    } catch (const ug::ValueError& e) {
      PyErr_SetString(value_error, e.what());
    } catch (const ug::IndexError& e) {
      PyErr_SetString(index_error, e.what());
    } catch (const ug::OutOfMemoryError& e) {
      PyErr_SetString(oom_error, e.what());
    } catch (const ug::linalg::LinAlgError& e) {
      PyErr_SetString(linalg_error, e.what());
    } catch (const ug::RuntimeError& e) {
      // From Python a tensor is undefined only once a jitted call took it (donate_argnums).
      if (std::string_view(e.what()).starts_with("[tensor] use of an undefined tensor"))
        PyErr_SetString(PyExc_RuntimeError,
                        "[tensor] use of a deleted tensor: it was donated to a jitted call (donate_argnums / "
                        "donate_argnames), which took its buffer; use that call's results instead, or stop donating "
                        "it (x.is_deleted() tells)");
      else PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const ug::FileNotFoundError& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const ug::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    }
  });
  auto tensor = nb::class_<ug::Tensor>(
      m, "Tensor",
      "An n-dimensional array on a device, with autograd (torch.Tensor): made by ug.tensor(data) or the "
      "factories (zeros, ones, randn, arange, ...); its methods and operators follow torch's names.");
  ugpy::bind_core(m);
  ugpy::bind_creation(m);
  ugpy::bind_tensor(m, tensor);
  ugpy::bind_copy(m, tensor);
  ugpy::bind_dlpack(m, tensor);
  ugpy::bind_composite(m, tensor);
  ugpy::bind_composite_order(m, tensor);
  ugpy::bind_composite_math(m, tensor);
  ugpy::bind_complex(m, tensor);
  ugpy::bind_elementwise_functions(m);
  ugpy::bind_functions(m);
  ugpy::bind_autograd(m, tensor);
  ugpy::bind_transforms(m);
  ugpy::bind_linalg(m);
  ugpy::bind_fft(m);
  nb::module_ nn = m.def_submodule("nn", "modules and layers");
  nb::module_ functional = nn.def_submodule("functional", "the layers as functions");
  ugpy::bind_nn(nn);
  ugpy::bind_nn_layers(nn);
  ugpy::bind_nn_recurrent(nn);
  ugpy::bind_nn_conv(nn, functional);
  ugpy::bind_nn_functional(nn, functional);
  ugpy::bind_nn_spatial(nn, functional);
  ugpy::bind_nn_utils(nn);
  ugpy::bind_quantization(m);
  nb::module_ keras = m.def_submodule("_keras", "Keras's layers (keras.layers) that ug.nn has in torch's form");
  ugpy::bind_keras_layers(keras);
  functional.attr("pad") = m.attr("pad");  // torch.nn.functional.pad is torch's pad
  nb::module_ distributions = m.def_submodule("_distributions", "probability distributions (torch.distributions)");
  ugpy::bind_distributions(distributions);
  nb::module_ optim = m.def_submodule("optim", "optimizers and learning-rate schedules");
  ugpy::bind_optim(optim);
  ugpy::bind_amp(m);
  ugpy::bind_profiler(m);
  nb::module_ optimizers = m.def_submodule("optimizers", "Keras's optimizers (keras.optimizers)");
  ugpy::bind_optimizers(optimizers);
  nb::module_ data = m.def_submodule("data", "data sets and their readers");
  ugpy::bind_data(data);
  ugpy::bind_data_sets(data);
  ugpy::bind_data_samplers(data);
  ugpy::bind_data_loader(data);
  ugpy::bind_data_pipeline(data);
  ugpy::bind_data_readers(data);
  ugpy::bind_data_transforms(data);
  nb::module_ datasets = m.def_submodule("datasets", "ready-made data sets (torchvision.datasets)");
  ugpy::bind_datasets(datasets);
  ugpy::bind_io(m);
  nb::module_ models = m.def_submodule("models", "the built-in architectures of `ug train`");
  ugpy::bind_models(models);
  nb::module_ logging = m.def_submodule("logging", "TensorBoard event files and charts of training metrics");
  ugpy::bind_logging(logging);
  ugpy::bind_train(m);
  ugpy::bind_checkpoint(m);
  nb::module_ onnx = m.def_submodule("onnx", "ONNX export and import");
  ugpy::bind_onnx_export(onnx);
  ugpy::bind_onnx_import(onnx);
  ugpy::bind_distributed(m);
  ugpy::bind_jit(m);
}
