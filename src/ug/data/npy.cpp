#include "ug/data/npy.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>

#include "ug/core/file_bytes.h"

namespace ug::data {

namespace {

constexpr size_t kMaxHeader = size_t{1} << 16;  // NumPy itself writes a few hundred bytes
constexpr size_t kPreamble = 12;                // magic, version and the longest length field

struct Descr {
  DType dtype;
  size_t width;
  bool swap;
};

struct Header {
  Descr descr;
  bool fortran;
  Dims shape;
  uint64_t nbytes;       // of the data
  uint64_t data_offset;  // where the data starts
};

template <class... Args> [[noreturn]] void bad(const std::string& name, const Args&... args) {
  fail("[read_npy] ", name, ": ", args...);
}

Descr parse_descr(const std::string& d, const std::string& name) {
  if (d.size() < 3) bad(name, "unsupported dtype '", d, "'");
  const char order = d[0];
  const std::string kind = d.substr(1);
  const bool big = order == '>';
  if (order != '<' && order != '>' && order != '|' && order != '=')
    bad(name, "unsupported byte order in dtype '", d, "'");
  static const std::pair<const char*, Descr> known[] = {
      {"f4", {DType::Float32, 4, false}}, {"f8", {DType::Float64, 8, false}}, {"f2", {DType::Float16, 2, false}},
      {"i4", {DType::Int32, 4, false}},   {"i8", {DType::Int64, 8, false}},   {"u1", {DType::UInt8, 1, false}},
      {"i1", {DType::Int8, 1, false}},    {"i2", {DType::Int16, 2, false}},   {"u2", {DType::UInt16, 2, false}},
      {"u4", {DType::UInt32, 4, false}},  {"u8", {DType::UInt64, 8, false}},  {"b1", {DType::Bool, 1, false}}};
  for (const auto& [kind_name, descr] : known)
    if (kind == kind_name) return {descr.dtype, descr.width, big && descr.width > 1};
  bad(name, "unsupported dtype '", d, "' (float16/32/64, int8/16/32/64, uint8/16/32/64 and bool are read)");
}

/** The header dict, a Python literal with string keys and string, bool or int-tuple values:
 *  parsed by hand, as NumPy's safe literal_eval does, so odd text cannot run away. */
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<Dims> shape;

  void parse() {
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr = string_literal();
      } else if (key == "fortran_order") {
        fortran = boolean();
      } else if (key == "shape") {
        shape = tuple();
      } else {
        bad(name_, "unexpected key '", key, "' in the header");
      }
      skip_space();
      if (peek() == ',') ++pos_;
      else if (peek() != '}') bad(name_, "expected ',' or '}' at byte ", pos_, " of the header");
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) bad(name_, "unexpected text after the header dict at byte ", pos_);
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(name_, "expected '", c, "' at byte ", pos_, " of the header");
    ++pos_;
  }
  std::string string_literal() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad(name_, "expected a quoted string at byte ", pos_, " of the header");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad(name_, "unterminated string in the header");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}})
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    bad(name_, "'fortran_order' must be True or False");
  }
  Dims tuple() {
    expect('(');
    Dims dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      int64_t n = 0;
      auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), n);
      if (ec != std::errc() || n < 0) bad(name_, "'shape' holds something other than sizes at byte ", pos_);
      pos_ = static_cast<size_t>(end - s_.data());
      dims.push_back(n);
      skip_space();
      if (peek() == ',') ++pos_;
      else if (peek() != ')') bad(name_, "expected ',' or ')' in 'shape' at byte ", pos_);
    }
    ++pos_;
    return dims;
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

/** Reads the header from the file's first bytes (`head`, up to kPreamble + kMaxHeader of
 *  them) and checks that its data fits the `total` bytes there are. */
Header parse_header(std::string_view head, uint64_t total, const std::string& name) {
  if (head.size() < 10 || std::memcmp(head.data(), "\x93NUMPY", 6) != 0)
    bad(name, "not an .npy file (no \\x93NUMPY magic)");
  const auto byte = [&](size_t i) { return uint64_t{static_cast<unsigned char>(head[i])}; };
  const uint64_t major = byte(6);
  if (major < 1 || major > 3) bad(name, "unsupported .npy version ", major);
  uint64_t header_len = byte(8) | byte(9) << 8;
  uint64_t offset = 10;
  if (major >= 2) {
    if (head.size() < 12) bad(name, "the file ends inside the header length");
    header_len |= byte(10) << 16 | byte(11) << 24;
    offset = 12;
  }
  if (header_len > kMaxHeader || offset + header_len > head.size())
    bad(name, "header length ", header_len, " does not fit the file (", total, " bytes)");
  DictParser dict(head.substr(offset, header_len), name);
  dict.parse();
  if (!dict.descr) bad(name, "the header has no 'descr'");
  if (!dict.fortran) bad(name, "the header has no 'fortran_order'");
  if (!dict.shape) bad(name, "the header has no 'shape'");
  Header h{parse_descr(*dict.descr, name), *dict.fortran, *dict.shape, 0, offset + header_len};
  const uint64_t available = total - h.data_offset;
  uint64_t numel = 1, extent = 1;  // extent ignores zero sizes: the strides must not overflow either
  for (int64_t n : h.shape) {
    if (__builtin_mul_overflow(extent, static_cast<uint64_t>(std::max<int64_t>(n, 1)), &extent) ||
        extent > (uint64_t{1} << 62))
      bad(name, "the shape ", h.shape, " overflows");
    numel *= static_cast<uint64_t>(n);
  }
  if (__builtin_mul_overflow(numel, uint64_t{h.descr.width}, &h.nbytes) || h.nbytes > available)
    bad(name, "the shape describes more data than the file holds (", numel, " elements of ", h.descr.width, " bytes, ",
        available, " bytes present)");
  return h;
}

/** The tensor for `h`, its bytes filled by `read(dst, n)`. */
Tensor make_tensor(const Header& h, const std::function<void(char*, uint64_t)>& read) {
  Dims stored = h.shape;
  if (h.fortran) std::reverse(stored.begin(), stored.end());
  Tensor t = empty(stored, {.dtype = h.descr.dtype, .device = {}});
  char* p = static_cast<char*>(t.raw_data());
  read(p, h.nbytes);
  canonicalize_read_bytes(t);
  if (h.descr.swap)
    for (uint64_t i = 0; i < h.nbytes; i += h.descr.width) std::reverse(p + i, p + i + h.descr.width);
  if (!h.fortran) return t;
  Dims reversed;
  for (int64_t d = t.dim() - 1; d >= 0; --d) reversed.push_back(d);
  return t.permute(reversed).contiguous();
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& name) {
  const Header h = parse_header(bytes.substr(0, kPreamble + kMaxHeader), bytes.size(), name);
  return make_tensor(h, [&](char* dst, uint64_t n) {
    if (n > 0) std::memcpy(dst, bytes.data() + h.data_offset, n);
  });
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("[read_npy] cannot open ", path, ": ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::string head(std::min<uint64_t>(file_size, kPreamble + kMaxHeader), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  const Header h = parse_header(head, file_size, path);
  return make_tensor(h, [&](char* dst, uint64_t n) {
    in.seekg(static_cast<std::streamoff>(h.data_offset));
    if (!in.read(dst, static_cast<std::streamsize>(n))) bad(path, "the file ended early (changed while read?)");
  });
}

}  // namespace ug::data
