// An ONNX model (ug::onnx::load, the importer's graph interpreter) as a ServedModel.
#pragma once

#include "ug/serve/served_model.h"

namespace ug::serve {

std::unique_ptr<ServedModel> open_onnx_model(const std::string& path);

}  // namespace ug::serve
