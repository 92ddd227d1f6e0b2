// A tf.data-style chain: Pipeline::from_tensor_slices({x, y}).shuffle(1000).map(f)
// .batch(32).prefetch(AUTOTUNE), or from_tensor_slices({{"data", x}, {"label", y}}), whose
// elements and batches have named fields. Each step returns a new Pipeline; the description never
// changes, and each pass (start_epoch) runs over it afresh, so shuffles differ per pass
// (tf's reshuffle_each_iteration) and depend on (seed, epoch) when seeded. After .batch it
// is a BatchSource like DataLoader.
#pragma once

#include "ug/core/ordered_dict.h"
#include "ug/data/pipeline_nodes.h"

namespace ug::data {

/** prefetch(AUTOTUNE): a buffer of 4 elements (tf tunes it at run time; a few batches ahead
 *  is what it settles on for a training loop). */
inline constexpr int64_t AUTOTUNE = -1;

class Pipeline : public BatchSource {
 public:
  /** Element i is (t[i] for t in tensors), its fields named as the tensors are (if they are). */
  static Pipeline from_tensor_slices(Example tensors);
  /** tf.data's dict form: element i is {name: t[i]}, the names in the given order. */
  static Pipeline from_tensor_slices(const OrderedDict<Tensor>& named);

  /** Elements drawn at random from a buffer of the next buffer_size ones. */
  Pipeline shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt) const;
  /** fn applied to each element (on the thread that pulls it: a prefetch's thread after prefetch). */
  Pipeline map(MapFn fn) const;
  /** Runs of batch_size elements stacked field by field; the last may be shorter. */
  Pipeline batch(int64_t batch_size, bool drop_remainder = false) const;
  /** Elements prepared on a background thread, up to buffer_size ahead (or AUTOTUNE). */
  Pipeline prefetch(int64_t buffer_size) const;
  /** The elements `count` times over (forever without a count), reshuffled each time. */
  Pipeline repeat(std::optional<int64_t> count = std::nullopt) const;
  /** The first `count` elements (-1: all). */
  Pipeline take(int64_t count) const;

  /** A pass over the elements at `epoch`, independent of any other pass. */
  std::unique_ptr<ElementStream> open(int64_t epoch) const { return node_->open(static_cast<uint64_t>(epoch)); }
  /** Elements per pass; -1 when it never ends. */
  int64_t cardinality() const { return node_->cardinality(); }

  /** A pass at the epoch after the previous one (from 0), for iteration. */
  std::unique_ptr<ElementStream> begin_pass() { return open(next_epoch_++); }

  void start_epoch(int64_t epoch) override;
  /** The next element of the current pass; without start_epoch, the first call starts the
   *  pass of the next epoch. */
  std::optional<Example> next() override;
  int64_t num_batches() const override { return cardinality(); }

 private:
  explicit Pipeline(NodePtr node) : node_(std::move(node)) {}
  NodePtr node_;
  std::unique_ptr<ElementStream> pass_;
  int64_t next_epoch_ = 0;
};

}  // namespace ug::data
