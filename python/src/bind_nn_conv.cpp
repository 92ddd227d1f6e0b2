#include "bindings.h"

namespace ugpy {

void bind_nn_conv(nb::module_& nn, nb::module_& functional) {}

}  // namespace ugpy
