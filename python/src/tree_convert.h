// Python values <-> ug::io::Tree: what ug.save accepts and ug.load returns.
#pragma once

#include "casters.h"
#include "ug/io/tree.h"

namespace ugpy {

/** None, bool, int, float, str, Tensor, and lists, tuples and dicts (str or int keys) of
 *  them; anything else raises TypeError naming where it sits ("obj['a'][1]", after `name`).
 *  `op` prefixes the messages. */
ug::io::Tree tree_from_python(nb::handle obj, const char* op, const char* name = "obj");
nb::object tree_to_python(const ug::io::Tree& tree);

}  // namespace ugpy
