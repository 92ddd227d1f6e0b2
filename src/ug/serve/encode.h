// Model outputs into the JSON answer {"outputs": [...], "predictions": [...]}, with floats
// written by std::to_chars (shortest form that reads back to the same float32).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ug::serve {

/** `rows` outputs of `row_shape` each, nested like it. "predictions" (the argmax of each row)
 *  only when rows are vectors. Non-finite values, which JSON lacks, are written as null. */
std::string encode_json(const float* outputs, int64_t rows, const std::vector<int64_t>& row_shape);

/** {"error": message}. */
std::string encode_error(const std::string& message);

}  // namespace ug::serve
