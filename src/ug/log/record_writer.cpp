#include "ug/log/record_writer.h"

#include <cerrno>
#include <cstring>

#include "ug/core/error.h"
#include "ug/log/crc32c.h"

namespace ug::logging {

namespace {

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_le(out, data.size(), 8);
  append_le(out, masked_crc32c(out), 4);
  out.append(data);
  append_le(out, masked_crc32c(data), 4);
  return out;
}

RecordWriter::RecordWriter(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) fail_io("cannot create");
}

RecordWriter::~RecordWriter() {
  if (file_) std::fclose(file_);
}

void RecordWriter::write(std::string_view data) {
  if (!file_) fail<RuntimeError>("[tfrecord] ", path_, " is closed");
  std::string record = tfrecord(data);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) fail_io("cannot write");
}

void RecordWriter::flush() {
  if (file_ && std::fflush(file_) != 0) fail_io("cannot flush");
}

void RecordWriter::close() {
  if (!file_) return;
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) fail_io("cannot close");
}

void RecordWriter::fail_io(const char* what) const {
  fail<RuntimeError>("[tfrecord] ", what, " ", path_, ": ", std::strerror(errno));
}

}  // namespace ug::logging
