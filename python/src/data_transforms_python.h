// Transforms from Python objects: a ug.data.transforms.Transform as it is, any other callable
// wrapped in a Lambda that takes the GIL to call it.
#pragma once

#include <memory>

#include "bindings.h"
#include "ug/data/transforms.h"

namespace ugpy {

/** `obj` as a C++ transform; null for None. TypeError naming `op` for anything else. */
std::shared_ptr<ug::data::transforms::Transform> transform_from_python(nb::handle obj, const char* op);

/** The Python object for a transform (the callable itself for a wrapped one), None for null. */
nb::object transform_to_python(const std::shared_ptr<ug::data::transforms::Transform>& t);

}  // namespace ugpy
