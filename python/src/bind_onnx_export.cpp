#include "bindings.h"

namespace ugpy {

void bind_onnx_export(nb::module_&) {}

}  // namespace ugpy
