#include "bindings.h"

namespace ugpy {

void bind_onnx_import(nb::module_&) {}

}  // namespace ugpy
