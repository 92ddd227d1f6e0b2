// The steps a Pipeline is made of. A node describes a step and never changes; open() starts
// a pass over it, whose state (buffers, positions, threads) lives in the returned stream, so
// one description can be iterated any number of times, even at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "ug/data/dataset.h"

namespace ug::data {

/** The elements of one pass, one at a time. */
class ElementStream {
 public:
  virtual ~ElementStream() = default;
  /** The next element, or nullopt at the end of the pass. */
  virtual std::optional<Example> next() = 0;
};

class PipelineNode {
 public:
  virtual ~PipelineNode() = default;
  /** A pass over the elements; `pass` tells passes apart, so each shuffles differently. */
  virtual std::unique_ptr<ElementStream> open(uint64_t pass) const = 0;
  /** Elements per pass, or -1 when the pass never ends. */
  virtual int64_t cardinality() const = 0;
};

using NodePtr = std::shared_ptr<const PipelineNode>;
/** A per-element function: the element's fields in, the new element's fields out. */
using MapFn = std::function<Example(Example)>;

NodePtr tensor_slices_node(Example tensors);
NodePtr shuffle_node(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed);
NodePtr map_node(NodePtr input, MapFn fn);
NodePtr batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
NodePtr prefetch_node(NodePtr input, int64_t buffer_size);
NodePtr repeat_node(NodePtr input, std::optional<int64_t> count);
NodePtr take_node(NodePtr input, int64_t count);

}  // namespace ug::data
