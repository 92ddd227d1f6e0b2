// Variable-length batches for the recurrent layers, torch.nn.utils.rnn: a PackedSequence keeps
// only the real steps of each sequence, time-major, so that an RNN/LSTM/GRU runs step t on the
// batch_sizes[t] sequences that are that long and takes each sequence's final state at its
// own last step. Everything here is built from ops (index_select, narrow, cat, stack), so
// gradients flow through packing and padding.
//   auto packed = pack_padded_sequence(x, lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
//   auto [out, state] = lstm->forward(packed, std::nullopt);
//   auto [padded, out_lengths] = pad_packed_sequence(out, /*batch_first=*/true);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::nn::utils::rnn {

/** torch.nn.utils.rnn.PackedSequence. data [sum of lengths, *] holds step 0 of every
 *  sequence, then step 1 of those that have one, ...; batch_sizes (int64, CPU) how many
 *  sequences have step t; sorted_indices the batch order by decreasing length and
 *  unsorted_indices its inverse (both undefined when the batch came sorted). */
struct PackedSequence {
  Tensor data, batch_sizes, sorted_indices, unsorted_indices;

  /** batch_sizes as numbers, checked: 1-D int64, positive, non-increasing, summing to
   *  data.size(0). `op` names the caller in errors. */
  std::vector<int64_t> step_sizes(const char* op) const;
  /** The same sequence with data converted (and the indices moved to data's device). */
  PackedSequence to(DType dtype) const;
  PackedSequence to(Device device) const;
};

/** Packs input [T, B, *] ([B, T, *] when batch_first) whose sequence b is lengths[b] long
 *  (1-D int64, each in 1..T). enforce_sorted: lengths must be non-increasing; otherwise the
 *  batch is sorted and the permutation kept in the result. */
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

/** The inverse: (padded [T, B, *] or [B, T, *], lengths int64 [B]) in the original batch
 *  order, with padding_value after each sequence's end and T = total_length when given. */
std::pair<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                              double padding_value = 0.0,
                                              std::optional<int64_t> total_length = std::nullopt);

/** Stacks sequences [L_i, *] into [max L, B, *] ([B, max L, *] when batch_first), padded
 *  with padding_value on padding_side ("right" or "left"). */
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    const std::string& padding_side = "right");

/** pack_padded_sequence(pad_sequence(sequences), their lengths). */
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

/** The sequences of a padded batch: padded[:lengths[b], b] (padded[b, :lengths[b]] when batch_first). */
std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first = false);

/** The sequences of a packed batch, in the original order. */
std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences);

}  // namespace ug::nn::utils::rnn
