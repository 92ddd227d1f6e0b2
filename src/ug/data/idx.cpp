#include "ug/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

namespace ug::data {

namespace {

// No real IDX file comes near this; a hostile header must not make us allocate more.
constexpr uint64_t kMaxElements = uint64_t{1} << 32;
// Deflate expands at most about 1032-fold: a gzip file cannot hold more data than this.
constexpr uint64_t kMaxInflateRatio = 1032;

/** Reads exactly n bytes, or fails naming the file: gzread reads plain files too. */
void read_exact(gzFile f, void* out, size_t n, const std::string& path, const char* what) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, size_t{1} << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0) fail("[read_idx] ", path, ": the file ends inside the ", what, " (truncated or not an IDX file)");
    p += got;
    n -= static_cast<size_t>(got);
  }
}

uint32_t big_endian32(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

/** Reverses each element's bytes in place: IDX stores them big-endian. */
void to_host_order(char* data, size_t count, size_t width) {
  for (size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) fail("[read_idx] cannot open ", path, ": ", std::strerror(errno));
  unsigned char magic[4];
  read_exact(f.get(), magic, 4, path, "magic number");
  if (magic[0] != 0 || magic[1] != 0)
    fail("[read_idx] ", path, ": not an IDX file (the magic number must start with two zero bytes)");
  const int rank = magic[3];
  if (rank == 0) fail("[read_idx] ", path, ": an IDX file needs at least one dimension");
  Dims shape;
  uint64_t numel = 1, extent = 1;  // extent skips zero sizes: the strides must stay in range too
  for (int d = 0; d < rank; ++d) {
    unsigned char b[4];
    read_exact(f.get(), b, 4, path, "sizes");
    const uint32_t size = big_endian32(b);
    if (extent > kMaxElements / std::max<uint32_t>(size, 1))
      fail("[read_idx] ", path, ": the sizes describe more than 2^32 elements (dimension ", d, " is ", size, ")");
    extent *= std::max<uint32_t>(size, 1);
    numel *= size;
    shape.push_back(size);
  }
  // Checked before anything is allocated, so a small hostile header cannot ask for gigabytes.
  static constexpr int kWidth[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 2, 4, 4, 8, 0};
  const uint64_t item_width = kWidth[magic[2] & 15];
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  const uint64_t header = 4 + 4 * uint64_t(rank);
  const uint64_t room = gzdirect(f.get()) ? file_size - std::min(file_size, header) : file_size * kMaxInflateRatio;
  if (!ec && numel * item_width > room)
    fail("[read_idx] ", path, ": the file ends inside the data: the sizes describe ", numel * item_width,
         " bytes, more than the ", file_size, "-byte file can hold (truncated or not an IDX file)");
  auto read_as = [&](DType stored, size_t width) {
    Tensor t = empty(shape, {.dtype = stored, .device = {}});
    read_exact(f.get(), t.raw_data(), numel * width, path, "data");
    if (width > 1) to_host_order(static_cast<char*>(t.raw_data()), numel, width);
    return t;
  };
  switch (magic[2]) {
    case 0x08: return read_as(DType::UInt8, 1);
    case 0x09: {  // signed bytes: no int8 dtype, so int32
      std::vector<signed char> bytes(numel);
      read_exact(f.get(), bytes.data(), numel, path, "data");
      Tensor t = empty(shape, {.dtype = DType::Int32, .device = {}});
      int32_t* out = t.data_ptr<int32_t>();
      for (uint64_t i = 0; i < numel; ++i) out[i] = bytes[i];
      return t;
    }
    case 0x0B: {  // 16-bit integers, widened to int32
      std::vector<unsigned char> raw(numel * 2);
      read_exact(f.get(), raw.data(), raw.size(), path, "data");
      Tensor t = empty(shape, {.dtype = DType::Int32, .device = {}});
      int32_t* out = t.data_ptr<int32_t>();
      for (uint64_t i = 0; i < numel; ++i) out[i] = static_cast<int16_t>((raw[2 * i] << 8) | raw[2 * i + 1]);
      return t;
    }
    case 0x0C: return read_as(DType::Int32, 4);
    case 0x0D: return read_as(DType::Float32, 4);
    case 0x0E: return read_as(DType::Float64, 8);
    default: fail("[read_idx] ", path, ": unknown IDX element type 0x", std::hex, int{magic[2]});
  }
}

}  // namespace ug::data
