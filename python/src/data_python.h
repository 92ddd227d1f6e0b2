// Python values in the data pipeline: samples and batches to and from ug::data::Example, a
// Python object that worker threads may hold, and stopping worker threads at interpreter exit.
#pragma once

#include <functional>
#include <variant>

#include "casters.h"
#include "ug/data/dataset.h"

namespace ugpy {

/** A sample or batch from Python as fields: a tuple or list of tensors, numbers (bool ->
 *  bool, int -> int64, float -> float64, as torch's default_collate) and NumPy arrays, a dict
 *  of them (named fields, in the dict's order), or one such value alone (then `single` is set
 *  when given). Anything else raises TypeError naming `op` and the field. Needs the GIL. */
ug::data::Example example_from_python(nb::handle value, const char* op, bool* single = nullptr);
/** A batch for Python: a dict when the fields are named, else the tensor alone when
 *  `single`, else a list of tensors. */
nb::object example_to_python(const ug::data::Example& e, bool single);
/** A sample's or element's fields (dataset[i], a pipeline's elements): a dict when they are
 *  named, else a tuple of tensors. */
nb::object example_to_element(const ug::data::Example& e);

/** torch's default_collate on a batch (an iterable) of Python samples: tensors, numbers and
 *  NumPy arrays are stacked into tensors, strings gathered into a list, dicts collated key by
 *  key, tuples and lists field by field into a list (a namedtuple keeps its type), at any
 *  depth. A batch of flat samples (a value, or a tuple, list or dict of values) is stacked
 *  by ug::data::default_collate. Errors name `op`. Needs the GIL. */
nb::object collate_samples(nb::handle batch, const char* op);

/** torch's default_convert, what a DataLoader with batch_size=None gives each sample: NumPy
 *  arrays and scalars become tensors, dicts, lists and tuples are converted item by item (a
 *  tuple becomes a list, a namedtuple stays one), anything else is kept as it is. Needs the GIL. */
nb::object default_convert(nb::handle data);

/** A Python object that any thread may drop: it takes the GIL to let go of it. */
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(nb::object obj) : obj_(std::move(obj)) {}
  PyRef(PyRef&& other) noexcept = default;
  PyRef& operator=(PyRef&& other) noexcept;
  PyRef(const PyRef& other);
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { release(); }
  /** The object (the caller holds the GIL). */
  const nb::object& get() const { return obj_; }

 private:
  void release() noexcept;
  nb::object obj_;
};

/** What the DataLoader's workers hand over: tensors from the C++ collation, or a Python
 *  batch (whatever a collate_fn returned, or collate_samples' result). */
using PyBatch = std::variant<ug::data::Example, PyRef>;

/** While alive, `stop` is called at interpreter exit: a member of each object whose threads
 *  run Python code (a thread waiting for the GIL after exit would wait forever). */
class WorkerRegistration {
 public:
  explicit WorkerRegistration(std::function<void()> stop);
  ~WorkerRegistration();
  WorkerRegistration(const WorkerRegistration&) = delete;
  WorkerRegistration& operator=(const WorkerRegistration&) = delete;
  /** Calls every registered stop, with the GIL released so that the workers can finish. */
  static void stop_all();
};

/** Runs `f` with the GIL released if this thread holds it (a worker may need it meanwhile). */
template <class F> auto without_gil(F&& f) {
  if (!PyGILState_Check()) return f();
  nb::gil_scoped_release release;
  return f();
}

/** A seed from torch-style arguments: `seed`, or `generator` (an int, a ug.Generator's seed, or
 *  an object with initial_seed(), e.g. a torch.Generator); none when neither is given. */
std::optional<uint64_t> seed_from_python(nb::handle seed, nb::handle generator);

}  // namespace ugpy
