// The two interfaces the data pipeline is built on. A Dataset answers "sample i"; a
// BatchSource hands out batches one pass (epoch) at a time. DataLoader turns the first into
// the second; the training loop (ug::train) and the `ug` program consume only the second, so
// a tf.data-style pipeline or a Python iterable feeds them just as well.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::data {

/** One sample's fields (e.g. {image, label}), or one batch's, each stacked along a new dim 0.
 *  The fields may be named, as a dict sample in torch or an element of tf.data's
 *  from_tensor_slices({"data": x, "label": y}): `names` then has one name per field, in
 *  order; it is empty for a plain tuple. The fields keep their order either way, so a
 *  training loop reads a named (data, label) pair as (x, y), as MindSpore reads columns. */
struct Example : std::vector<Tensor> {
  using std::vector<Tensor>::vector;
  Example() = default;
  Example(std::vector<Tensor> fields) : std::vector<Tensor>(std::move(fields)) {}
  /** Named fields; as many names as fields, each once (ValueError otherwise). */
  Example(std::vector<Tensor> fields, std::vector<std::string> names);

  /** The field called `name` (IndexError when there is none). */
  const Tensor& field(const std::string& name) const;

  std::vector<std::string> names;
};

/** A map-style data set: a known number of samples, each read by index. */
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  /** Sample `index`, 0 <= index < size(). */
  virtual Example get(int64_t index) const = 0;
  /** The samples at `indices`, collated into one batch. The default stacks get(i) field by
   *  field; data sets held as whole tensors override it with one gather per field. */
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

/** Batches, one pass at a time. Implementations: DataLoader, the tf.data-style Pipeline,
 *  and (in Python) any iterable of batches. */
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /** Starts pass `epoch` (from 0). Shuffling that depends on a seed uses (seed, epoch), so a
   *  run resumed at epoch k sees the same order as one that never stopped. */
  virtual void start_epoch(int64_t epoch) = 0;
  /** The next batch of the current pass, or nullopt at its end. */
  virtual std::optional<Example> next() = 0;
  /** Batches per pass, or -1 when unknown (an iterable data set). */
  virtual int64_t num_batches() const = 0;
};

}  // namespace ug::data
