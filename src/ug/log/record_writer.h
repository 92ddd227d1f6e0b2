// TFRecord files, the container of TensorBoard event files: each record is the data's length
// (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data, and the masked
// CRC-32C of the data.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace ug::logging {

/** data framed as one record. */
std::string tfrecord(std::string_view data);

/** Appends records to a file it creates. Not thread-safe: EventFileWriter's worker owns it. */
class RecordWriter {
 public:
  /** Creates (or truncates) path; raises RuntimeError when it cannot. */
  explicit RecordWriter(std::string path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(std::string_view data);
  /** Hands buffered records to the operating system. */
  void flush();
  void close();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail_io(const char* what) const;

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace ug::logging
