#include "ug/data/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>

namespace ug::data {

namespace {

constexpr size_t kMaxHeader = size_t{1} << 16;  // NumPy itself writes a few hundred bytes

struct Descr {
  DType dtype;
  size_t width;
  bool swap;
};

Descr parse_descr(const std::string& d, const std::string& path) {
  if (d.size() < 3) fail("[read_npy] ", path, ": unsupported dtype '", d, "'");
  const char order = d[0];
  const std::string kind = d.substr(1);
  const bool big = order == '>';
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail("[read_npy] ", path, ": unsupported byte order in dtype '", d, "'");
  static const std::pair<const char*, Descr> known[] = {
      {"f4", {DType::Float32, 4, false}}, {"f8", {DType::Float64, 8, false}}, {"f2", {DType::Float16, 2, false}},
      {"i4", {DType::Int32, 4, false}},   {"i8", {DType::Int64, 8, false}},   {"u1", {DType::UInt8, 1, false}},
      {"b1", {DType::Bool, 1, false}}};
  for (const auto& [name, descr] : known)
    if (kind == name) return {descr.dtype, descr.width, big && descr.width > 1};
  fail("[read_npy] ", path, ": unsupported dtype '", d, "' (float16/32/64, int32/64, uint8 and bool are read)");
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("[read_npy] cannot open ", path, ": ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char pre[10];
  if (!in.read(pre, 10) || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    fail("[read_npy] ", path, ": not an .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(pre[6]);
  uint64_t header_len = static_cast<unsigned char>(pre[8]) | (uint64_t{static_cast<unsigned char>(pre[9])} << 8);
  uint64_t offset = 10;
  if (major >= 2) {
    char more[2];
    if (!in.read(more, 2)) fail("[read_npy] ", path, ": the file ends inside the header length");
    header_len |= (uint64_t{static_cast<unsigned char>(more[0])} << 16) | (uint64_t{static_cast<unsigned char>(more[1])} << 24);
    offset = 12;
  }
  if (major < 1 || major > 3) fail("[read_npy] ", path, ": unsupported .npy version ", major);
  if (header_len > kMaxHeader || offset + header_len > file_size)
    fail("[read_npy] ", path, ": header length ", header_len, " does not fit the file (", file_size, " bytes)");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    fail("[read_npy] ", path, ": the header has no 'descr'");
  const Descr descr = parse_descr(m[1], path);
  if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    fail("[read_npy] ", path, ": the header has no 'fortran_order'");
  const bool fortran = m[1] == "True";
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    fail("[read_npy] ", path, ": the header has no 'shape'");
  Dims shape;
  uint64_t numel = 1;
  const std::string dims = m[1];
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const std::string digits = it->str();
    if (digits.size() > 12) fail("[read_npy] ", path, ": absurd dimension ", digits);
    const uint64_t n = std::stoull(digits);
    if (n > 0 && numel > (file_size + 1) / n) fail("[read_npy] ", path, ": the shape describes more data than the file holds");
    numel *= n;
    shape.push_back(static_cast<int64_t>(n));
  }
  if (numel * descr.width > file_size - offset - header_len)
    fail("[read_npy] ", path, ": the file ends inside the data (", numel * descr.width, " bytes expected, ",
         file_size - offset - header_len, " present)");
  Dims stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  Tensor t = empty(stored, {.dtype = descr.dtype, .device = {}});
  in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(numel * descr.width));
  if (descr.swap) {
    char* p = static_cast<char*>(t.raw_data());
    for (uint64_t i = 0; i < numel; ++i) std::reverse(p + i * descr.width, p + (i + 1) * descr.width);
  }
  if (!fortran) return t;
  Dims reversed;
  for (int64_t d = t.dim() - 1; d >= 0; --d) reversed.push_back(d);
  return t.permute(reversed).contiguous();
}

}  // namespace ug::data
