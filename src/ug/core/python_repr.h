// repr(value) as Python writes it, for text that Python users read next to Python's own:
// layers' printouts (torch's extra_repr), Keras's file names and CSV cells.
#pragma once

#include <string>

namespace ug {

/** repr(value) in Python: the shortest digits that read back exactly ("0.1", "1e-05", "3.0"). */
std::string python_repr(double value);

}  // namespace ug
