// Numeric CSV files (RFC 4180): a table of numbers, optionally under a row of column names,
// read into one 2-D tensor like numpy.loadtxt, with pandas' habits for headers and gaps.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::data {

struct CsvOptions {
  char delimiter = ',';
  /** true: the first row (after skip_rows) names the columns; false: every row is data;
   *  nullopt ("infer"): a header exactly when that row has a cell that is not a number. */
  std::optional<bool> header;
  /** float16/bfloat16/float32/float64 (a missing cell is NaN) or uint8/int32/int64
   *  (a missing cell is an error). */
  DType dtype = DType::Float32;
  /** The columns to keep, in this order: indices (negative count from the end) or header
   *  names. Empty: all of them. */
  std::vector<std::variant<int64_t, std::string>> usecols;
  /** Lines skipped at the start of the file before anything is parsed (as numpy's skiprows). */
  int64_t skip_rows = 0;
};

/** The numbers and, when the file has a header, the names of the kept columns. */
struct CsvTable {
  Tensor data;  // (rows, columns)
  std::vector<std::string> columns;
};

/** Fields may be quoted ("1,5" with "" for a quote, line breaks inside), lines end in LF or
 *  CRLF, blank lines are skipped, and an empty cell or NA, N/A, null is missing. A cell that
 *  is not a number or a row of the wrong length raises ValueError naming file:line:column. */
CsvTable read_csv_table(const std::string& path, const CsvOptions& options = {});
/** read_csv_table's numbers alone. */
Tensor read_csv(const std::string& path, const CsvOptions& options = {});
/** The same from CSV text in memory; `name` stands for the file in error messages. */
CsvTable parse_csv(std::string_view text, const CsvOptions& options = {}, const std::string& name = "<text>");

}  // namespace ug::data
