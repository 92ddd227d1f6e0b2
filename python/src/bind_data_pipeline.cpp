// ug.data's tf.data-style chain: from_tensor_slices((x, y)).shuffle(...).map(fn).batch(32)
// .prefetch(AUTOTUNE), or from_tensor_slices({"data": x, "label": y}) with dict elements. The steps are C++
// (ug::data::Pipeline); this file adapts Python functions for map and iterates passes from Python.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/unique_ptr.h>

#include "bindings.h"
#include "data_python.h"
#include "ug/data/pipeline.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::data::ElementStream;
using ug::data::Example;
using ug::data::Pipeline;

/** A Python function of the element's fields (tf.data unpacks tuples and passes a dict as
 *  it is), returning a tensor, a tuple or a dict of tensors. It runs on whichever thread
 *  pulls the element, with the GIL. */
ug::data::MapFn map_fn_from_python(nb::handle fn) {
  if (!PyCallable_Check(fn.ptr())) ug::fail<ug::TypeError>("[map] expected a callable");
  return [f = std::make_shared<PyRef>(nb::borrow(fn))](Example e) {
    nb::gil_scoped_acquire gil;
    nb::object element = example_to_element(e);
    nb::object result = e.names.empty() ? f->get()(*element) : f->get()(element);
    return example_from_python(result, "map: the function's result");
  };
}

/** One pass of a Pipeline, as a Python iterator. Dropping it stops its prefetch threads. */
class PipelineIterator {
 public:
  PipelineIterator(std::unique_ptr<ElementStream> pass, nb::object pipeline)
      : pass_(std::move(pass)), pipeline_(std::move(pipeline)) {}
  ~PipelineIterator() {
    without_gil([&] { pass_.reset(); });
  }
  nb::object next() {
    std::optional<Example> e = without_gil([&] { return pass_ ? pass_->next() : std::nullopt; });
    if (!e) throw nb::stop_iteration();
    return example_to_element(*e);
  }

 private:
  std::unique_ptr<ElementStream> pass_;
  PyRef pipeline_;
  WorkerRegistration registration_{[this] { pass_.reset(); }};
};

}  // namespace

void bind_data_pipeline(nb::module_& data) {
  data.attr("AUTOTUNE") = ug::data::AUTOTUNE;

  nb::class_<PipelineIterator>(data, "_PipelineIterator")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &PipelineIterator::next);

  nb::class_<Pipeline, ug::data::BatchSource>(
      data, "Pipeline",
      "A tf.data-style chain of steps over elements (tuples of tensors, or dicts of them); each step returns a new "
      "Pipeline, and each iteration is a fresh pass (reshuffled).")
      .def("shuffle", &Pipeline::shuffle, "buffer_size"_a, "seed"_a.none() = nb::none(),
           "Elements drawn at random from a buffer of the next buffer_size ones (tf.data's shuffle).")
      .def(
          "map", [](const Pipeline& p, nb::handle fn) { return p.map(map_fn_from_python(fn)); }, "map_func"_a,
          "map_func(*fields) applied to each element; map_func(element) when the element is a dict.")
      .def("batch", &Pipeline::batch, "batch_size"_a, "drop_remainder"_a = false)
      .def("prefetch", &Pipeline::prefetch, "buffer_size"_a,
           "Elements prepared on a background thread, up to buffer_size ahead (AUTOTUNE: 4).")
      .def("repeat", &Pipeline::repeat, "count"_a.none() = nb::none())
      .def("take", &Pipeline::take, "count"_a)
      .def("cardinality", &Pipeline::cardinality, "Elements per pass; -1 when infinite.")
      .def("__len__",
           [](const Pipeline& p) {
             if (p.cardinality() < 0) throw nb::type_error("[Pipeline] the pipeline is infinite: it has no len()");
             return p.cardinality();
           })
      .def("__iter__", [](nb::handle self) {
        return std::make_unique<PipelineIterator>(nb::cast<Pipeline&>(self).begin_pass(), nb::borrow(self));
      });

  data.def(
      "from_tensor_slices",
      [](nb::handle tensors) {
        return Pipeline::from_tensor_slices(example_from_python(tensors, "from_tensor_slices"));
      },
      "tensors"_a,
      "A pipeline whose element i is (t[i] for t in tensors); tensors: a tensor, a tuple of them, or a dict name -> "
      "tensor, whose elements (and batches) are dicts, as tf.data's and MindSpore's NumpySlicesDataset's.");
}

}  // namespace ugpy
