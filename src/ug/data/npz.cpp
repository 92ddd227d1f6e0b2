#include "ug/data/npz.h"

#include <zip.h>

#include <filesystem>
#include <memory>
#include <set>

#include "ug/data/npy.h"

namespace ug::data {

namespace {

// Deflate expands at most about 1032-fold; a larger declared size is a lie or a bomb.
constexpr uint64_t kMaxInflateRatio = 1032;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Archive = std::unique_ptr<zip_t, ZipCloser>;

std::string error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string text = zip_error_strerror(&e);
  zip_error_fini(&e);
  return text;
}

/** One member's bytes, checked against what its compressed size allows before allocating;
 *  reading to the end makes libzip check the size and CRC. */
std::string member_bytes(zip_t* z, zip_uint64_t index, const zip_stat_t& st, uint64_t archive_size,
                         const std::string& where) {
  constexpr zip_uint64_t kNeeded = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((st.valid & kNeeded) != kNeeded) fail("[read_npz] ", where, ": the zip directory entry is incomplete");
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
    fail("[read_npz] ", where, ": the member is encrypted");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    fail("[read_npz] ", where, ": compression method ", st.comp_method, " (only stored and deflate members are read)");
  const uint64_t limit = st.comp_method == ZIP_CM_STORE ? st.comp_size : st.comp_size * kMaxInflateRatio + 1024;
  if (st.comp_size > archive_size || st.size > limit)
    fail("[read_npz] ", where, ": declared size ", st.size, " bytes is impossible for ", st.comp_size,
         " compressed bytes in a ", archive_size, "-byte archive (corrupt or hostile file)");
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z, index, 0));
  if (!f) fail("[read_npz] ", where, ": cannot open the member: ", zip_strerror(z));
  std::string bytes(st.size, '\0');
  uint64_t got = 0;
  while (got < st.size) {
    const zip_int64_t n = zip_fread(f.get(), bytes.data() + got, st.size - got);
    if (n < 0) fail("[read_npz] ", where, ": ", zip_file_strerror(f.get()));
    if (n == 0) fail("[read_npz] ", where, ": the member ends after ", got, " of its ", st.size, " bytes");
    got += static_cast<uint64_t>(n);
  }
  char extra;
  const zip_int64_t n = zip_fread(f.get(), &extra, 1);
  if (n < 0) fail("[read_npz] ", where, ": ", zip_file_strerror(f.get()));
  if (n > 0) fail("[read_npz] ", where, ": the member holds more than its declared ", st.size, " bytes");
  return bytes;
}

NpzArrays read_archive(zip_t* z, uint64_t archive_size, const std::string& name) {
  const zip_int64_t count = zip_get_num_entries(z, 0);
  NpzArrays out;
  std::set<std::string> seen;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      fail("[read_npz] ", name, ": cannot read entry ", i, ": ", zip_strerror(z));
    const std::string member = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
    const std::string where = name + " (member '" + member + "')";
    if (member.size() < 4 || member.compare(member.size() - 4, 4, ".npy") != 0)
      fail("[read_npz] ", where, ": not an .npy member (an .npz archive holds only .npy files)");
    std::string key = member.substr(0, member.size() - 4);
    if (!seen.insert(key).second) fail("[read_npz] ", where, ": the name appears more than once");
    const std::string bytes = member_bytes(z, static_cast<zip_uint64_t>(i), st, archive_size, where);
    out.emplace_back(std::move(key), parse_npy(bytes, where));
  }
  return out;
}

}  // namespace

NpzArrays read_npz(const std::string& path) {
  int code = 0;
  Archive z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!z) {
    if (code == ZIP_ER_OPEN || code == ZIP_ER_NOENT || code == ZIP_ER_READ)
      fail("[read_npz] cannot open ", path, ": ", error_text(code));
    fail("[read_npz] ", path, ": not a valid .npz (zip) archive: ", error_text(code));
  }
  return read_archive(z.get(), std::filesystem::file_size(path), path);
}

NpzArrays parse_npz(std::string_view bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) fail("[read_npz] ", name, ": ", zip_error_strerror(&error));
  Archive z(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!z) {
    zip_source_free(src);
    const std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    fail("[read_npz] ", name, ": not a valid .npz (zip) archive: ", text);
  }
  zip_error_fini(&error);
  return read_archive(z.get(), bytes.size(), name);
}

}  // namespace ug::data
