// unigrad._C: the binding of the C++ library. Exceptions keep their "[op] ..." messages and
// become the Python built-ins PyTorch raises: ValueError, TypeError, IndexError, RuntimeError.
#include "bindings.h"

NB_MODULE(_C, m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ug::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ug::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ug::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ug::RuntimeError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  auto tensor = nb::class_<ug::Tensor>(m, "Tensor");
  ugpy::bind_core(m);
  ugpy::bind_creation(m);
  ugpy::bind_tensor(m, tensor);
  ugpy::bind_elementwise_functions(m);
}
