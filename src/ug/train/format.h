// Python's formatting where files meet Python users: ModelCheckpoint's file names
// ("weights.{epoch:02d}-{val_loss:.2f}.safetensors", str.format fields) and CSV cells (repr of
// a float), so a name or a cell reads as Keras writes it.
#pragma once

#include <cstdint>
#include <string>

#include "ug/core/python_repr.h"
#include "ug/train/callback.h"

namespace ug::train {

using ug::python_repr;

/** `pattern` with each {name} or {name:spec} replaced: "epoch" by the integer epoch, other
 *  names by their value in logs; spec is Python's [sign][#][0][width][.precision][type] with
 *  type d, f, e, g, % (and their capitals). "{{" and "}}" are literal braces. `who` names the
 *  caller in the errors for unknown names or specs. */
std::string format_fields(const std::string& pattern, int64_t epoch, const Logs& logs, const char* who);

}  // namespace ug::train
