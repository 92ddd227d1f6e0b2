// copy.deepcopy, copy.copy and pickle for tensors, and the memo that copy.deepcopy shares with
// Module::clone: Python's memo dict carries the C++ CloneMemo under one key, and a C++ copy that
// reaches a module written in Python carries a Python memo in the CloneMemo's context, so
// whichever side starts the copy, each tensor, storage and module is copied once.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "ug/graph/grad_mode.h"
#include "ug/nn/clone.h"

namespace ugpy {

using ug::Tensor;
using ug::nn::CloneMemo;

namespace {
constexpr const char* kMemoKey = "unigrad.clone_memo";
}

CloneMemo& clone_memo(nb::dict memo) {
  if (!memo.contains(kMemoKey)) {
    nb::object created = nb::cast(CloneMemo(), nb::rv_policy::move);
    // Borrowed: the memo owns the CloneMemo, which must not own the memo back.
    nb::cast<CloneMemo&>(created).context = memo.ptr();
    memo[kMemoKey] = created;
  }
  return nb::cast<CloneMemo&>(memo[kMemoKey]);
}

nb::object python_memo(CloneMemo& memo) {
  if (auto* borrowed = std::any_cast<PyObject*>(&memo.context)) return nb::borrow(*borrowed);
  if (auto* owned = std::any_cast<std::shared_ptr<PyObject>>(&memo.context)) return nb::borrow(owned->get());
  // A copy begun in C++: a Python memo for its Python parts, pointing back at this CloneMemo
  // without owning it (it lives on the C++ stack).
  nb::dict d;
  d[kMemoKey] = nb::cast(&memo, nb::rv_policy::reference);
  memo.context = std::shared_ptr<PyObject>(d.release().ptr(), [](PyObject* p) {
    nb::gil_scoped_acquire gil;
    Py_DECREF(p);
  });
  return python_memo(memo);
}

void bind_copy(nb::module_& m, nb::class_<Tensor>& tensor) {
  nb::class_<CloneMemo>(m, "_CloneMemo", "What one copy.deepcopy has copied so far (ug::nn::CloneMemo).");

  tensor
      .def(
          "__deepcopy__",
          [](const Tensor& t, nb::dict memo) { return clone_memo(memo).tensor(concrete(t, "copy.deepcopy")); },
          nb::arg("memo"),
          "A copy of a leaf tensor with its own storage (views of one storage stay views of one new storage "
          "within one deepcopy), its requires_grad and grad, as torch's.")
      .def(
          "__copy__",
          [](const Tensor& t) {
            Tensor c = concrete(t, "copy.copy").detach();
            c.impl().set_is_parameter(t.impl().is_parameter());
            if (t.requires_grad()) c.requires_grad_(true);
            return c;
          },
          "A new tensor over the same data, as torch's copy.copy.")
      .def(
          "__getstate__",
          [](const Tensor& t) {
            Tensor c = concrete(t, "pickle").detach().contiguous();
            return nb::make_tuple(nb::bytes(static_cast<const char*>(c.raw_data()), c.nbytes()),
                                  std::string(ug::dtype_name(c.dtype())),
                                  nb::tuple(nb::cast(std::vector<int64_t>(c.shape().begin(), c.shape().end()))),
                                  t.requires_grad(), t.impl().is_parameter());
          },
          "Pickles the values (a contiguous copy: views are not kept shared, as with torch's pickle), dtype, "
          "shape and requires_grad.")
      .def("__setstate__", [](Tensor& self, nb::tuple state) {
        if (nb::len(state) != 5) ug::fail("[pickle] not a pickled unigrad tensor: expected 5 fields");
        auto data = nb::cast<nb::bytes>(state[0]);
        const ug::DType dtype = ug::dtype_from_name(nb::cast<std::string>(state[1]));
        ug::Dims shape;
        for (nb::handle d : nb::cast<nb::tuple>(state[2])) shape.push_back(nb::cast<int64_t>(d));
        Tensor t = ug::empty(shape, {.dtype = dtype});
        if (data.size() != t.nbytes())
          ug::fail("[pickle] a pickled ", dtype, " tensor of shape ", t.shape(), " needs ", t.nbytes(), " bytes, got ",
                   data.size());
        std::memcpy(t.raw_data(), data.c_str(), data.size());
        t.impl().set_is_parameter(nb::cast<bool>(state[4]));
        if (nb::cast<bool>(state[3])) t.requires_grad_(true);
        new (&self) Tensor(std::move(t));
      });
}

}  // namespace ugpy
