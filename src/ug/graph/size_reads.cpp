#include "ug/graph/size_reads.h"

namespace ug::graph {

namespace {
thread_local SizeReads* t_reads = nullptr;
}  // namespace

void note_size_read(const char* op, int64_t size) {
  if (t_reads) t_reads->reads_.emplace_back(op, size);
}

SizeReads::SizeReads() : previous_(t_reads) { t_reads = this; }
SizeReads::~SizeReads() { t_reads = previous_; }

}  // namespace ug::graph
