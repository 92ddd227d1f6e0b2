#include "ug/serve/encode.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

namespace ug::serve {

namespace {

void append_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, v);
  out.append(text, result.ptr);
}

void append_int(std::string& out, int64_t v) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof text, v);
  out.append(text, result.ptr);
}

/** The values of one block of `shape` (dims from `dim` on) as nested lists; returns the end. */
const float* append_nested(std::string& out, const float* values, const std::vector<int64_t>& shape, size_t dim) {
  out += '[';
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i) out += ',';
    if (dim + 1 == shape.size()) append_float(out, *values++);
    else values = append_nested(out, values, shape, dim + 1);
  }
  out += ']';
  return values;
}

/** The index of the largest value, NaN counting as the largest (as torch.argmax does). */
int64_t argmax(const float* row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n && !std::isnan(row[best]); ++i)
    if (std::isnan(row[i]) || row[i] > row[best]) best = i;
  return best;
}

}  // namespace

std::string encode_json(const float* outputs, int64_t rows, const std::vector<int64_t>& row_shape) {
  const int64_t row_size = std::accumulate(row_shape.begin(), row_shape.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  std::string out;
  out.reserve(static_cast<size_t>(rows * (row_size * 14 + 8) + 40));
  out += "{\"outputs\":";
  append_nested(out, outputs, shape, 0);
  if (row_shape.size() == 1) {
    out += ",\"predictions\":[";
    for (int64_t r = 0; r < rows; ++r) {
      if (r) out += ',';
      append_int(out, argmax(outputs + r * row_size, row_size));
    }
    out += ']';
  }
  out += '}';
  return out;
}

std::string encode_error(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ug::serve
