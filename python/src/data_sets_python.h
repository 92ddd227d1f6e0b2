// Data sets from Python objects: a ug.data.Dataset (C++, or a Python subclass through its
// trampoline) or any object with __len__ and __getitem__.
#pragma once

#include <memory>

#include "data_python.h"

namespace ugpy {

/** A data set whose samples come from Python: as the values they are (for a DataLoader's
 *  collation, which takes nested values and strings as torch's does) or as fields (get). */
class PythonSamples {
 public:
  virtual ~PythonSamples() = default;
  /** Sample `index` as Python returns it. Needs the GIL. */
  virtual nb::object sample(int64_t index) const = 0;

 protected:
  /** Sample `index` as fields; takes the GIL. */
  ug::data::Example fields(int64_t index) const {
    nb::gil_scoped_acquire gil;
    return example_from_python(sample(index), "Dataset.__getitem__");
  }
};

/** `obj` as a C++ data set. */
std::shared_ptr<ug::data::Dataset> dataset_from_python(nb::handle obj, const char* op);
/** Sample `index` of `d` as Python sees it: a Python data set's as it is, a StackDataset's as
 *  a tuple or dict of its data sets' samples, a Subset's or ConcatDataset's as its data set's,
 *  any other's as a tuple (or dict) of tensors. Needs the GIL. */
nb::object python_sample(const ug::data::Dataset& d, int64_t index);
/** Whether a DataLoader collates `d`'s samples as Python values (which may nest or hold
 *  strings) rather than as fields in C++. */
bool has_python_samples(const ug::data::Dataset& d);

}  // namespace ugpy
