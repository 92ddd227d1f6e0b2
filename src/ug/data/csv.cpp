#include "ug/data/csv.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace ug::data {

namespace {

/** One cell: its text (quotes removed) and where it starts, for error messages. */
struct Field {
  std::string_view raw;   // a view of the input
  std::string unescaped;  // a quoted cell with "" inside, with one quote for each pair
  bool escaped = false;
  int64_t line = 0, column = 0;
  // Looked up on each use: a view into `unescaped` would dangle once the field is moved.
  std::string_view text() const { return escaped ? std::string_view(unescaped) : raw; }
};

/** Splits CSV text into records; owns the position, line and column bookkeeping. */
class Splitter {
 public:
  Splitter(std::string_view text, char delimiter, const std::string& name)
      : s_(text), delimiter_(delimiter), name_(name) {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = line_start_ = 3;  // a UTF-8 byte-order mark
  }

  template <class... Args> [[noreturn]] void bad_at(int64_t line, int64_t column, const Args&... args) const {
    fail("[read_csv] ", name_, ":", line, ":", column, ": ", args...);
  }

  void skip_lines(int64_t count) {
    for (int64_t i = 0; i < count && pos_ < s_.size(); ++i) {
      while (pos_ < s_.size() && s_[pos_] != '\n' && s_[pos_] != '\r') ++pos_;
      end_line();
    }
  }

  /** The next non-blank record into `fields` (reusing its storage); false at the end. */
  bool next(std::vector<Field>& fields) {
    while (true) {
      size_t p = pos_;
      while (p < s_.size() && is_blank(s_[p])) ++p;
      if (p == s_.size()) {
        pos_ = p;
        return false;
      }
      if (s_[p] != '\n' && s_[p] != '\r') break;
      pos_ = p;
      end_line();
    }
    size_t count = 0;
    while (true) {
      if (fields.size() == count) fields.emplace_back();
      read_field(fields[count++]);
      if (pos_ < s_.size() && s_[pos_] == delimiter_) {
        ++pos_;
        continue;
      }
      end_line();
      break;
    }
    fields.resize(count);
    return true;
  }

  /** Where the last record ended: its line and the column just past its text. */
  int64_t last_line() const { return last_line_; }
  int64_t last_column() const { return last_column_; }

 private:
  bool is_blank(char c) const { return (c == ' ' || c == '\t') && c != delimiter_; }
  int64_t column_of(size_t p) const { return static_cast<int64_t>(p - line_start_) + 1; }

  /** Steps over the line break at pos_ (LF, CRLF or a lone CR), if any. */
  void end_line() {
    last_line_ = line_;
    last_column_ = column_of(pos_);
    if (pos_ >= s_.size()) return;
    if (s_[pos_] == '\r') {
      ++pos_;
      if (pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
    } else if (s_[pos_] == '\n') {
      ++pos_;
    }
    ++line_;
    line_start_ = pos_;
  }

  void read_field(Field& f) {
    size_t p = pos_;
    while (p < s_.size() && is_blank(s_[p])) ++p;
    f.line = line_;
    f.column = column_of(p);
    if (p == s_.size() || s_[p] != '"') {
      size_t q = p;
      while (q < s_.size() && s_[q] != delimiter_ && s_[q] != '\n' && s_[q] != '\r') ++q;
      f.raw = s_.substr(p, q - p);
      f.escaped = false;
      pos_ = q;
      return;
    }
    // Quoted: runs to the next lone quote; "" stands for one quote; line breaks are kept.
    f.unescaped.clear();
    bool escaped = false;
    size_t segment = p + 1;
    size_t q = segment;
    while (true) {
      const size_t quote = s_.find('"', q);
      if (quote == std::string_view::npos) bad_at(f.line, f.column, "a quoted field never ends");
      for (size_t i = q; i < quote; ++i)
        if (s_[i] == '\n') {
          ++line_;
          line_start_ = i + 1;
        }
      if (quote + 1 < s_.size() && s_[quote + 1] == '"') {
        f.unescaped.append(s_.substr(segment, quote + 1 - segment));
        escaped = true;
        q = segment = quote + 2;
        continue;
      }
      if (escaped) f.unescaped.append(s_.substr(segment, quote - segment));
      f.raw = s_.substr(p + 1, quote - p - 1);
      f.escaped = escaped;
      pos_ = quote + 1;
      break;
    }
    while (pos_ < s_.size() && is_blank(s_[pos_])) ++pos_;
    if (pos_ < s_.size() && s_[pos_] != delimiter_ && s_[pos_] != '\n' && s_[pos_] != '\r')
      bad_at(line_, column_of(pos_), "unexpected character '", s_[pos_], "' after a closing quote");
  }

  std::string_view s_;
  char delimiter_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int64_t line_ = 1;
  int64_t last_line_ = 1, last_column_ = 1;
};

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

/** pandas' spellings of a missing value that are not numbers themselves (nan is one). */
bool is_missing(std::string_view v) { return v.empty() || v == "NA" || v == "N/A" || v == "null" || v == "NULL"; }

/** A number in the whole of v: from_chars's syntax plus an optional leading '+'. */
template <class T> bool parse_number(std::string_view v, T& out) {
  if (v.size() > 1 && v[0] == '+' && v[1] != '-' && v[1] != '+') v.remove_prefix(1);
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size();
}

/** The column positions `options.usecols` names, checked against the first record. */
std::vector<size_t> resolve_usecols(const CsvOptions& options, const std::vector<std::string>& header, size_t width,
                                    const std::string& name) {
  std::vector<size_t> cols;
  if (options.usecols.empty()) {
    for (size_t c = 0; c < width; ++c) cols.push_back(c);
    return cols;
  }
  for (const auto& col : options.usecols) {
    if (const auto* index = std::get_if<int64_t>(&col)) {
      const int64_t i = *index < 0 ? *index + static_cast<int64_t>(width) : *index;
      if (i < 0 || i >= static_cast<int64_t>(width))
        fail<IndexError>("[read_csv] ", name, ": usecols index ", *index, " is out of range for ", width, " columns");
      cols.push_back(static_cast<size_t>(i));
      continue;
    }
    const std::string& wanted = std::get<std::string>(col);
    if (header.empty()) fail("[read_csv] ", name, ": usecols names column '", wanted, "' but the file has no header");
    const auto it = std::find(header.begin(), header.end(), wanted);
    if (it == header.end()) {
      std::ostringstream known;
      for (size_t c = 0; c < header.size(); ++c) known << (c ? ", " : "") << "'" << header[c] << "'";
      fail("[read_csv] ", name, ": no column named '", wanted, "' (the header has ", known.str(), ")");
    }
    cols.push_back(static_cast<size_t>(it - header.begin()));
  }
  return cols;
}

/** The cells of the kept columns, parsed as T (double for float dtypes, int64_t otherwise). */
template <class T>
Tensor parse_rows(Splitter& splitter, std::vector<Field>& fields, bool have_row, size_t width,
                  const std::vector<size_t>& cols, DType dtype) {
  const auto [lo, hi] = [&]() -> std::pair<int64_t, int64_t> {
    if (dtype == DType::UInt8) return {0, 255};
    if (dtype == DType::Int32) return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }();
  std::vector<T> values;
  int64_t rows = 0;
  for (; have_row; have_row = splitter.next(fields)) {
    if (fields.size() != width) {
      const bool long_row = fields.size() > width;
      splitter.bad_at(long_row ? fields[width].line : splitter.last_line(),
                      long_row ? fields[width].column : splitter.last_column(), "this row has ", fields.size(),
                      " fields, the first has ", width);
    }
    for (size_t c : cols) {
      const Field& f = fields[c];
      const std::string_view text = trim(f.text());
      T v{};
      if (is_missing(text)) {
        if constexpr (std::is_floating_point_v<T>) {
          v = std::numeric_limits<T>::quiet_NaN();
        } else {
          splitter.bad_at(f.line, f.column, "missing value in column ", c + 1, " (", dtype,
                          " has no NaN; read as a float dtype to keep gaps)");
        }
      } else if (!parse_number(text, v)) {
        splitter.bad_at(f.line, f.column, "'", text, "' in column ", c + 1, " is not ",
                        std::is_floating_point_v<T> ? "a number" : "an integer");
      }
      if constexpr (!std::is_floating_point_v<T>) {
        if (v < lo || v > hi) splitter.bad_at(f.line, f.column, v, " in column ", c + 1, " does not fit ", dtype);
      }
      values.push_back(v);
    }
    ++rows;
  }
  Tensor t = empty({rows, static_cast<int64_t>(cols.size())}, {.dtype = dtype_of<T>, .device = {}});
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t.to(dtype);
}

}  // namespace

CsvTable parse_csv(std::string_view text, const CsvOptions& options, const std::string& name) {
  const char d = options.delimiter;
  if (d == '"' || d == '\n' || d == '\r' || d == '\0')
    fail("[read_csv] the delimiter cannot be a quote, a line break or NUL");
  if (options.skip_rows < 0) fail("[read_csv] skip_rows must be >= 0, got ", options.skip_rows);
  const DType dtype = options.dtype;
  if (dtype == DType::Bool) fail<TypeError>("[read_csv] dtype must be a float or integer type, got bool");

  Splitter splitter(text, d, name);
  splitter.skip_lines(options.skip_rows);
  std::vector<Field> fields;
  bool have_row = splitter.next(fields);
  CsvTable out;
  std::vector<std::string> header;
  if (have_row) {
    double number;
    const bool is_header = options.header.value_or(std::any_of(fields.begin(), fields.end(), [&](const Field& f) {
      const std::string_view cell = trim(f.text());
      return !is_missing(cell) && !parse_number(cell, number);
    }));
    if (is_header) {
      for (const Field& f : fields) header.emplace_back(trim(f.text()));
      have_row = splitter.next(fields);
    }
  } else if (options.header.value_or(false)) {
    fail("[read_csv] ", name, ": the file is empty, so it has no header row");
  }
  const size_t width = !header.empty() ? header.size() : have_row ? fields.size() : 0;
  const std::vector<size_t> cols = resolve_usecols(options, header, width, name);
  if (!header.empty())
    for (size_t c : cols) out.columns.push_back(header[c]);
  out.data = is_floating(dtype) ? parse_rows<double>(splitter, fields, have_row, width, cols, dtype)
                                : parse_rows<int64_t>(splitter, fields, have_row, width, cols, dtype);
  return out;
}

CsvTable read_csv_table(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("[read_csv] cannot open ", path, ": ", std::strerror(errno));
  if (std::filesystem::is_directory(path)) fail("[read_csv] cannot read ", path, ": it is a directory");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_csv(text.view(), options, path);
}

Tensor read_csv(const std::string& path, const CsvOptions& options) { return read_csv_table(path, options).data; }

}  // namespace ug::data
