#include "ug/nn/utils/rnn.h"

#include <algorithm>
#include <numeric>

#include "ug/ops/join.h"

namespace ug::nn::utils::rnn {

namespace {

Tensor int64_tensor(const std::vector<int64_t>& values) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, {.dtype = DType::Int64, .device = {}});
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

/** A 1-D integer CPU tensor's values (torch: "a 1D CPU int64 tensor"). */
std::vector<int64_t> int64_values(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) fail<RuntimeError>("[", op, "] '", what, "' should be a 1-D CPU integer tensor, got None");
  if (t.dim() != 1 || !is_integral(t.dtype()) || !(t.device() == Device()))
    fail<RuntimeError>("[", op, "] '", what, "' should be a 1-D CPU integer tensor, got a ", t.dim(), "-D ", t.dtype(),
                       " tensor on ", t.device());
  const Tensor c = t.to(DType::Int64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

/** The trailing shape of x after its first `skip` dims. */
Dims tail(const Tensor& x, int64_t skip) {
  Dims d;
  for (int64_t i = skip; i < x.dim(); ++i) d.push_back(x.size(i));
  return d;
}

Dims prepend(int64_t n, Dims rest) {
  rest.insert(rest.begin(), n);
  return rest;
}

Tensor padding(const Tensor& like, Dims shape, double value) {
  return full(shape, value, {.dtype = like.dtype(), .device = like.device()});
}

}  // namespace

std::vector<int64_t> PackedSequence::step_sizes(const char* op) const {
  if (!data.defined() || data.dim() < 1) fail("[", op, "] expected PackedSequence.data of at least 1 dim");
  std::vector<int64_t> sizes = int64_values(batch_sizes, op, "batch_sizes");
  int64_t total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] <= 0 || (t > 0 && sizes[t] > sizes[t - 1]))
      fail("[", op, "] PackedSequence.batch_sizes must be positive and non-increasing, got ", batch_sizes);
    total += sizes[t];
  }
  if (sizes.empty() || total != data.size(0))
    fail("[", op, "] PackedSequence.batch_sizes sum to ", total, " but data has shape ", data.shape());
  return sizes;
}

PackedSequence PackedSequence::to(DType dtype) const {
  return {data.to(dtype), batch_sizes, sorted_indices, unsorted_indices};
}

PackedSequence PackedSequence::to(Device device) const {
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(device) : t; };
  return {data.to(device), batch_sizes, move(sorted_indices), move(unsorted_indices)};
}

PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first,
                                    bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  if (input.dim() < 2)
    fail("[", op, "] expected input of at least 2 dims ([T, B, *] or [B, T, *]), got shape ", input.shape());
  const Tensor x = batch_first ? input.transpose(0, 1) : input;  // [T, B, *]
  const int64_t steps = x.size(0), batch = x.size(1);
  if (static_cast<int64_t>(lengths.size()) != batch)
    fail("[", op, "] expected len(lengths) to be equal to batch_size, but got ", lengths.size(), " (batch_size=", batch,
         ") for input of shape ", input.shape());
  for (int64_t len : lengths) {
    if (len <= 0)
      fail<RuntimeError>("[", op,
                         "] Length of all samples has to be greater than 0, but found an element in "
                         "'lengths' that is <= 0");
    if (len > steps)
      fail<RuntimeError>("[", op, "] a length of ", len, " is longer than the sequence: input of shape ", input.shape(),
                         " has ", steps, " steps (batch_first=", batch_first, ")");
  }
  PackedSequence out;
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  Tensor sorted = x;
  if (enforce_sorted) {
    if (!std::is_sorted(lengths.rbegin(), lengths.rend()))
      fail<RuntimeError>("[", op,
                         "] `lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                         "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                         "to sidestep this requirement if you do not need ONNX exportability.");
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
    std::vector<int64_t> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
    out.sorted_indices = int64_tensor(order).to(input.device());
    out.unsorted_indices = int64_tensor(inverse).to(input.device());
    sorted = x.index_select(1, out.sorted_indices);
  }
  // Step t holds the sequences longer than t: a prefix of the sorted batch. unbind records
  // one backward node for all steps, where a select per step would each fill a tensor of the
  // input's size.
  const std::vector<Tensor> by_step = sorted.unbind(0);
  std::vector<int64_t> sizes;
  std::vector<Tensor> rows;
  for (int64_t t = 0; t < lengths[order[0]]; ++t) {
    int64_t n = 0;
    while (n < batch && lengths[order[n]] > t) ++n;
    sizes.push_back(n);
    rows.push_back(by_step[t].narrow(0, 0, n));
  }
  out.data = cat(rows, 0);
  out.batch_sizes = int64_tensor(sizes);
  return out;
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
  return pack_padded_sequence(input, int64_values(lengths, "pack_padded_sequence", "lengths"), batch_first,
                              enforce_sorted);
}

std::pair<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                              std::optional<int64_t> total_length) {
  const char* op = "pad_packed_sequence";
  const std::vector<int64_t> sizes = sequence.step_sizes(op);
  const int64_t batch = sizes[0], steps = static_cast<int64_t>(sizes.size());
  if (total_length && *total_length < steps)
    fail("[", op,
         "] Expected total_length to be at least the length of the longest sequence in input, but got "
         "total_length=",
         *total_length, " and max sequence length being ", steps);
  const Tensor& data = sequence.data;
  const Dims feature = tail(data, 1);
  std::vector<Tensor> rows = data.split(Dims(sizes.begin(), sizes.end()), 0);  // one backward node
  for (size_t t = 0; t < rows.size(); ++t)
    if (sizes[t] < batch) rows[t] = cat({rows[t], padding(data, prepend(batch - sizes[t], feature), padding_value)}, 0);
  Tensor padded = stack(rows, 0);  // [T, B, *], sorted batch
  if (total_length && *total_length > steps)
    padded = cat({padded, padding(data, prepend(*total_length - steps, prepend(batch, feature)), padding_value)}, 0);
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    lengths[b] = std::count_if(sizes.begin(), sizes.end(), [&](int64_t n) { return n > b; });
  if (sequence.unsorted_indices.defined()) {
    const std::vector<int64_t> unsorted = int64_values(sequence.unsorted_indices.to(Device()), op, "unsorted_indices");
    if (static_cast<int64_t>(unsorted.size()) != batch)
      fail("[", op, "] PackedSequence.unsorted_indices has ", unsorted.size(), " entries for a batch of ", batch);
    std::vector<int64_t> original(lengths.size());
    for (size_t i = 0; i < unsorted.size(); ++i) original[i] = lengths.at(static_cast<size_t>(unsorted[i]));
    lengths = original;
    padded = padded.index_select(1, sequence.unsorted_indices);
  }
  return {batch_first ? padded.transpose(0, 1) : padded, int64_tensor(lengths)};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  const char* op = "pad_sequence";
  if (padding_side != "right" && padding_side != "left")
    fail("[", op, "] Expected padding_side to be one of left or right, but got ", padding_side, ".");
  if (sequences.empty()) fail("[", op, "] received an empty list of sequences");
  const Tensor& first = sequences[0];
  int64_t longest = 0;
  for (const Tensor& s : sequences) {
    if (s.dim() < 1 || tail(s, 1) != tail(first, 1) || s.dtype() != first.dtype())
      fail("[", op, "] expected sequences [L, *] with the same trailing shape and dtype, got shapes ", first.shape(),
           " (", first.dtype(), ") and ", s.shape(), " (", s.dtype(), ")");
    longest = std::max(longest, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    if (s.size(0) == longest) {
      padded.push_back(s);
      continue;
    }
    const Tensor pad = padding(s, prepend(longest - s.size(0), tail(s, 1)), padding_value);
    padded.push_back(padding_side == "right" ? cat({s, pad}, 0) : cat({pad, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.dim() ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first) {
  const char* op = "unpad_sequence";
  const std::vector<int64_t> lens = int64_values(lengths, op, "lengths");
  if (padded_sequences.dim() < 2)
    fail("[", op, "] expected padded sequences of at least 2 dims, got shape ", padded_sequences.shape());
  const Tensor x = batch_first ? padded_sequences : padded_sequences.transpose(0, 1);  // [B, T, *]
  if (static_cast<int64_t>(lens.size()) != x.size(0))
    fail("[", op, "] got ", lens.size(), " lengths for a batch of ", x.size(0), " (shape ", padded_sequences.shape(),
         ", batch_first=", batch_first, ")");
  for (int64_t len : lens)
    if (len < 0 || len > x.size(1))
      fail("[", op, "] length ", len, " is out of range for sequences of ", x.size(1), " steps");
  std::vector<Tensor> out = x.unbind(0);  // one backward node for the whole batch
  for (size_t b = 0; b < lens.size(); ++b) out[b] = out[b].narrow(0, 0, lens[b]);
  return out;
}

std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences) {
  auto [padded, lengths] = pad_packed_sequence(packed_sequences, true);
  return unpad_sequence(padded, lengths, true);
}

}  // namespace ug::nn::utils::rnn
