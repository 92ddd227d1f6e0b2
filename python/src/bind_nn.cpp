#include "bindings.h"

namespace ugpy {

void bind_nn(nb::module_& nn) {}

}  // namespace ugpy
