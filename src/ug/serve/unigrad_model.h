// A unigrad model file (ug::models::save_model) as a ServedModel.
#pragma once

#include "ug/serve/served_model.h"

namespace ug::serve {

std::unique_ptr<ServedModel> open_unigrad_model(const std::string& path);

}  // namespace ug::serve
