// ug::data::parse_csv on arbitrary text. The first byte picks the options (delimiter, header
// mode, dtype, a usecols list), so every combination meets hostile text.
#include "expected_errors.h"
#include "ug/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  ug::data::CsvOptions options;
  options.delimiter = ",;\t "[pick & 3];
  options.header = (pick >> 2 & 3) == 0 ? std::nullopt : std::optional<bool>((pick >> 2 & 3) == 1);
  static constexpr ug::DType dtypes[] = {ug::DType::Float32, ug::DType::Float64, ug::DType::Int64, ug::DType::UInt8};
  options.dtype = dtypes[pick >> 4 & 3];
  if (pick & 0x40) options.usecols = {int64_t{0}, int64_t{-1}, std::string("b")};
  if (pick & 0x80) options.skip_rows = 1;
  expect_clean_failure([&] {
    ug::data::parse_csv({reinterpret_cast<const char*>(data) + 1, size - 1}, options, "<fuzz>");
  });
  return 0;
}
