#include "ug/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "ug/core/file_bytes.h"

namespace ug::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian: a big-endian build must swap bytes");

using nlohmann::json;
using nlohmann::ordered_json;

// The reference refuses headers above 100 MB; so do we, before allocating one.
constexpr uint64_t kMaxHeader = 100'000'000;

struct Format {
  DType dtype;
  const char* name;
};
// Ordered as the reference lays tensors out: widest first (then by name), so every tensor
// starts at a multiple of its item size once the header is padded to 8 bytes.
constexpr std::array<Format, 13> kFormats{{{DType::UInt64, "U64"},
                                           {DType::Int64, "I64"},
                                           {DType::Float64, "F64"},
                                           {DType::Float32, "F32"},
                                           {DType::UInt32, "U32"},
                                           {DType::Int32, "I32"},
                                           {DType::BFloat16, "BF16"},
                                           {DType::Float16, "F16"},
                                           {DType::UInt16, "U16"},
                                           {DType::Int16, "I16"},
                                           {DType::Int8, "I8"},
                                           {DType::UInt8, "U8"},
                                           {DType::Bool, "BOOL"}}};

size_t layout_rank(DType t) {
  for (size_t i = 0; i < kFormats.size(); ++i)
    if (kFormats[i].dtype == t) return i;
  if (is_complex(t))
    fail<TypeError>("[safetensors] the format has no complex dtype (", t,
                    "); save ug.view_as_real(z) and load with "
                    "ug.view_as_complex");
  fail<TypeError>("[safetensors] no safetensors name for dtype ", t);
}
std::optional<DType> dtype_of_name(const std::string& name) {
  for (const Format& f : kFormats)
    if (name == f.name) return f.dtype;
  return std::nullopt;
}

[[noreturn]] void os_fail(const char* what, const std::string& path) {
  fail<RuntimeError>("[safetensors] cannot ", what, " '", path, "': ", std::strerror(errno));
}

// ---- saving -------------------------------------------------------------------------------

/** The length prefix and padded header, and the contiguous CPU tensors in file order. */
struct Prepared {
  std::string head;
  std::vector<Tensor> data;
};

Prepared prepare(const TensorDict& tensors, const Metadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> items;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) fail<ValueError>("[safetensors] tensor '", name, "' is undefined");
    if (name == "__metadata__") fail<ValueError>("[safetensors] '__metadata__' is reserved, not a tensor name");
    items.emplace_back(name, t.detach().to(Device{}).contiguous());
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    size_t ra = layout_rank(a.second.dtype()), rb = layout_rank(b.second.dtype());
    return ra != rb ? ra < rb : a.first < b.first;
  });
  // Written piece by piece: ordered_json's lookups are linear, quadratic over many tensors.
  Prepared out;
  std::string text = "{";
  try {
    if (!metadata.empty()) text += "\"__metadata__\":" + ordered_json(metadata).dump() + ",";
    uint64_t offset = 0;
    for (auto& [name, t] : items) {
      uint64_t end = offset + t.nbytes();
      ordered_json info = {{"dtype", kFormats[layout_rank(t.dtype())].name},
                           {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                           {"data_offsets", {offset, end}}};
      text += ordered_json(name).dump() + ":" + info.dump() + ",";
      offset = end;
      out.data.push_back(std::move(t));
    }
  } catch (const json::exception& e) {
    fail<ValueError>("[safetensors] a tensor name or metadata entry is not valid UTF-8: ", e.what());
  }
  if (text.size() > 1) text.pop_back();
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  out.head.assign(reinterpret_cast<const char*>(&n), 8);
  out.head += text;
  return out;
}

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      os_fail("write", path);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

/** A temporary file next to the target; removed by the destructor unless committed. */
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) {
    static std::atomic<uint64_t> counter{0};
    std::filesystem::path dir = target.parent_path();
    for (int attempt = 0; fd_ < 0; ++attempt) {
      path_ = (dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter++)))
                  .string();
      // 0666 and O_EXCL: the umask applies as for any new file, and no one else's file is reused.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && (errno != EEXIST || attempt > 100)) os_fail("create a temporary file", path_);
    }
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  /** fsync, close and rename over target: after this the target holds the new content. */
  void commit(const std::string& target) {
    if (::fsync(fd_) != 0) os_fail("fsync", path_);
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) os_fail("close", path_);
    if (::rename(path_.c_str(), target.c_str()) != 0) os_fail("rename a temporary file onto", target);
    committed_ = true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

/** Makes a rename in dir durable. */
void sync_directory(const std::filesystem::path& dir) {
  std::string d = dir.empty() ? "." : dir.string();
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) os_fail("open the directory", d);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) os_fail("fsync the directory", d);
}

// ---- loading ------------------------------------------------------------------------------

/** Random access to the bytes of a file or buffer. */
struct Source {
  std::string name;
  uint64_t size;
  std::function<void(uint64_t offset, void* dst, uint64_t n)> read;
};

template <class... Args> [[noreturn]] void bad(const Source& src, const Args&... args) {
  fail<ValueError>("[safetensors] '", src.name, "': ", args...);
}

struct Entry {
  std::string name;
  DType dtype;
  Dims shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;
  Metadata metadata;
  uint64_t data_start;
};

uint64_t read_uint(const Source& src, const json& v, const std::string& name, const char* field) {
  if (!v.is_number_unsigned())
    bad(src, "tensor '", name, "': ", field, " holds ", v.dump(), ", not a non-negative integer");
  return v.get<uint64_t>();
}

Entry parse_entry(const Source& src, const std::string& name, const json& info, uint64_t data_size) {
  auto field = [&](const char* key) -> const json& {
    if (!info.is_object() || !info.contains(key)) bad(src, "tensor '", name, "' has no \"", key, "\"");
    return info.at(key);
  };
  Entry e{name, DType::Float32, {}, 0, 0};
  const json& dtype = field("dtype");
  std::optional<DType> dt = dtype.is_string() ? dtype_of_name(dtype.get<std::string>()) : std::nullopt;
  if (!dt) bad(src, "tensor '", name, "' has unknown or unsupported dtype ", dtype.dump());
  e.dtype = *dt;
  const json& shape = field("shape");
  if (!shape.is_array()) bad(src, "tensor '", name, "': shape ", shape.dump(), " is not a list");
  uint64_t numel = 1;
  for (const json& d : shape) {
    if (!d.is_number_unsigned())
      bad(src, "tensor '", name, "': shape ", shape.dump(), " has a dimension that is not a non-negative integer");
    uint64_t n = d.get<uint64_t>();
    if (n > uint64_t(std::numeric_limits<int64_t>::max()) || __builtin_mul_overflow(numel, n, &numel))
      bad(src, "tensor '", name, "': shape ", shape.dump(), " overflows");
    e.shape.push_back(static_cast<int64_t>(n));
  }
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, uint64_t(itemsize(e.dtype)), &nbytes) ||
      nbytes > uint64_t(std::numeric_limits<int64_t>::max()))
    bad(src, "tensor '", name, "': shape ", shape.dump(), " overflows");
  const json& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2)
    bad(src, "tensor '", name, "': data_offsets ", offsets.dump(), " is not a [begin, end] pair");
  e.begin = read_uint(src, offsets[0], name, "data_offsets");
  e.end = read_uint(src, offsets[1], name, "data_offsets");
  if (e.end < e.begin) bad(src, "tensor '", name, "': data_offsets ", offsets.dump(), " end before they begin");
  if (e.end > data_size)
    bad(src, "tensor '", name, "': data_offsets ", offsets.dump(), " run past the end of the ", data_size,
        "-byte data section (truncated file?)");
  if (e.end - e.begin != nbytes)
    bad(src, "tensor '", name, "': data_offsets ", offsets.dump(), " span ", e.end - e.begin, " bytes but ",
        kFormats[layout_rank(e.dtype)].name, " shape ", shape.dump(), " needs ", nbytes);
  return e;
}

Header parse_header(const Source& src) {
  if (src.size < 8) bad(src, "the file is ", src.size, " bytes, too short for the 8-byte header length");
  uint64_t n;
  src.read(0, &n, 8);
  if (n > kMaxHeader) bad(src, "header length ", n, " exceeds the limit of ", kMaxHeader, " bytes");
  if (n > src.size - 8)
    bad(src, "header length ", n, " exceeds the ", src.size - 8, " bytes after the length (truncated file?)");
  std::string text(n, '\0');
  src.read(8, text.data(), n);

  // nlohmann keeps the last of repeated keys: the callback sees each top-level key first.
  std::optional<std::string> duplicate;
  std::set<std::string> seen;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second)
      duplicate = duplicate.value_or(parsed.get<std::string>());
    return true;
  };
  json header;
  try {
    header = json::parse(text, on_event);
  } catch (const json::exception& e) {
    bad(src, "the header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) bad(src, "the header is not a JSON object");
  if (duplicate) bad(src, "tensor '", *duplicate, "' appears more than once");

  Header out;
  out.data_start = 8 + n;
  uint64_t data_size = src.size - out.data_start;
  for (const auto& [name, info] : header.items()) {
    if (name != "__metadata__") {
      out.entries.push_back(parse_entry(src, name, info, data_size));
      continue;
    }
    if (!info.is_object()) bad(src, "__metadata__ is not a JSON object");
    for (const auto& [k, v] : info.items()) {
      if (!v.is_string()) bad(src, "__metadata__ entry '", k, "' is ", v.dump(), ", not a string");
      out.metadata.emplace(k, v.get<std::string>());
    }
  }
  // As the reference: the ranges tile the data section, without gaps or overlaps.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : out.entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    if (e->begin < covered) bad(src, "tensors '", previous->name, "' and '", e->name, "' overlap");
    if (e->begin > covered)
      bad(src, "bytes ", covered, " to ", e->begin, " before tensor '", e->name, "' belong to no tensor");
    covered = e->end;
    previous = e;
  }
  if (covered != data_size) bad(src, "the tensors cover ", covered, " bytes but the data section holds ", data_size);
  return out;
}

TensorDict load(const Source& src, Metadata* metadata) {
  Header header = parse_header(src);
  if (metadata) *metadata = std::move(header.metadata);
  std::sort(header.entries.begin(), header.entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  TensorDict out;
  for (const Entry& e : header.entries) {
    Tensor t = empty(e.shape, {.dtype = e.dtype});
    src.read(header.data_start + e.begin, t.raw_data(), e.end - e.begin);
    canonicalize_read_bytes(t);
    out.insert(e.name, std::move(t));
  }
  return out;
}

/** Reads with pread, so a file that shrinks while read raises instead of returning junk. */
class FileSource {
 public:
  explicit FileSource(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) os_fail("open", path);
    struct stat st;
    if (::fstat(fd_, &st) != 0) {
      ::close(fd_);
      os_fail("stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail<ValueError>("[safetensors] '", path, "' is not a regular file");
    }
    int fd = fd_;
    source_ = {path, static_cast<uint64_t>(st.st_size), [fd, path](uint64_t offset, void* dst, uint64_t n) {
                 char* p = static_cast<char*>(dst);
                 while (n > 0) {
                   ssize_t r = ::pread(fd, p, std::min<uint64_t>(n, uint64_t{1} << 30), static_cast<off_t>(offset));
                   if (r < 0 && errno == EINTR) continue;
                   if (r < 0) os_fail("read", path);
                   if (r == 0)
                     fail<ValueError>("[safetensors] '", path, "': the file ended early (changed while read?)");
                   p += r;
                   offset += static_cast<uint64_t>(r);
                   n -= static_cast<uint64_t>(r);
                 }
               }};
  }
  ~FileSource() { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  const Source& source() const { return source_; }

 private:
  int fd_ = -1;
  Source source_;
};

}  // namespace

std::string save_bytes(const TensorDict& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = std::move(p.head);
  for (const Tensor& t : p.data)
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

void save_file(const TensorDict& tensors, const std::string& path, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);  // every check before the disk is touched
  std::filesystem::path target(path);
  TempFile tmp(target);
  write_all(tmp.fd(), p.head.data(), p.head.size(), tmp.path());
  for (const Tensor& t : p.data) write_all(tmp.fd(), static_cast<const char*>(t.raw_data()), t.nbytes(), tmp.path());
  tmp.commit(path);
  sync_directory(target.parent_path());
}

TensorDict load_bytes(std::string_view data, Metadata* metadata) {
  Source src{"<bytes>", data.size(), [data](uint64_t offset, void* dst, uint64_t n) {
               if (n > 0) std::memcpy(dst, data.data() + offset, n);
             }};
  return load(src, metadata);
}

TensorDict load_file(const std::string& path, Metadata* metadata) {
  FileSource file(path);
  return load(file.source(), metadata);
}

Metadata load_metadata(const std::string& path) {
  FileSource file(path);
  return parse_header(file.source()).metadata;
}

}  // namespace ug::io
