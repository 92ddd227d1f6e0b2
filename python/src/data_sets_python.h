// Data sets from Python objects: a ug.data.Dataset (C++, or a Python subclass through its
// trampoline) or any object with __len__ and __getitem__.
#pragma once

#include <atomic>
#include <memory>

#include "data_python.h"

namespace ugpy {

/** A data set whose samples come from Python. It notes whether a sample was one value
 *  rather than a tuple, so that the DataLoader yields a tensor, not a list, as torch does. */
class PythonSamples {
 public:
  virtual ~PythonSamples() = default;
  bool single() const { return single_.load(); }

 protected:
  ug::data::Example convert(nb::handle sample, const char* op) const {
    bool single = false;
    ug::data::Example e = example_from_python(sample, op, &single);
    single_.store(single);
    return e;
  }

 private:
  mutable std::atomic<bool> single_{false};
};

/** `obj` as a C++ data set. */
std::shared_ptr<ug::data::Dataset> dataset_from_python(nb::handle obj, const char* op);
/** Whether samples of `d` are single values (see PythonSamples). */
bool yields_single(const ug::data::Dataset& d);

}  // namespace ugpy
