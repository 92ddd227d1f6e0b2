#include "bindings.h"

namespace ugpy {

void bind_nn_functional(nb::module_& nn, nb::module_& functional) {}

}  // namespace ugpy
