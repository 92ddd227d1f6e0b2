// ug.data: data set readers.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ug/data/idx.h"
#include "ug/data/npy.h"

namespace ugpy {

void bind_data(nb::module_& data) {
  data.def("read_idx", &ug::data::read_idx, nb::arg("path"),
           "The tensor in an IDX file (MNIST / Fashion-MNIST format), gzip-compressed or not.");
  data.def("read_npy", &ug::data::read_npy, nb::arg("path"), "The array in a NumPy .npy file, as a tensor.");
}

}  // namespace ugpy
