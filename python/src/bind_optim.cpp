#include "bindings.h"

namespace ugpy {

void bind_optim(nb::module_& optim) {}

}  // namespace ugpy
