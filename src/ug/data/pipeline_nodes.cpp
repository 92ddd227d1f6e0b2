#include "ug/data/pipeline_nodes.h"

#include <algorithm>

#include "ug/core/error.h"
#include "ug/data/collate.h"
#include "ug/data/prefetcher.h"
#include "ug/data/seeding.h"

namespace ug::data {

namespace {

/** A stream defined by one function. */
class FnStream : public ElementStream {
 public:
  explicit FnStream(std::function<std::optional<Example>()> next) : next_(std::move(next)) {}
  std::optional<Example> next() override { return next_(); }

 private:
  std::function<std::optional<Example>()> next_;
};

template <class Next> std::unique_ptr<ElementStream> stream(Next next) {
  return std::make_unique<FnStream>(std::move(next));
}

/** A node defined by its open and cardinality functions. */
class FnNode : public PipelineNode {
 public:
  FnNode(std::function<std::unique_ptr<ElementStream>(uint64_t)> open, int64_t cardinality)
      : open_(std::move(open)), cardinality_(cardinality) {}
  std::unique_ptr<ElementStream> open(uint64_t pass) const override { return open_(pass); }
  int64_t cardinality() const override { return cardinality_; }

 private:
  std::function<std::unique_ptr<ElementStream>(uint64_t)> open_;
  int64_t cardinality_;
};

NodePtr node(std::function<std::unique_ptr<ElementStream>(uint64_t)> open, int64_t cardinality) {
  return std::make_shared<FnNode>(std::move(open), cardinality);
}

void check_input(const NodePtr& input, const char* op) {
  if (!input) fail("[", op, "] expected an input pipeline, got none");
}

/** A stream that runs its input on a background thread, up to `capacity` elements ahead.
 *  The input is declared first so that the thread stops before the input goes away. */
class PrefetchStream : public ElementStream {
 public:
  PrefetchStream(std::unique_ptr<ElementStream> input, int64_t capacity)
      : input_(std::move(input)), ahead_([in = input_.get()](int64_t) { return in->next(); }, 1, capacity) {}
  std::optional<Example> next() override { return ahead_.next(); }

 private:
  std::unique_ptr<ElementStream> input_;
  Prefetcher<Example> ahead_;
};

constexpr int64_t kAutotunePrefetch = 4;

}  // namespace

NodePtr tensor_slices_node(Example tensors) {
  if (tensors.empty()) fail("[from_tensor_slices] expected at least one tensor");
  auto label = [&](size_t i) {
    return tensors.names.empty() ? "tensor " + std::to_string(i) : "'" + tensors.names[i] + "'";
  };
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].dim() == 0)
      fail("[from_tensor_slices] every tensor needs a first dimension; ", label(i), " is a scalar");
  const int64_t n = tensors[0].size(0);
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].size(0) != n)
      fail("[from_tensor_slices] the tensors' first dimensions differ: ", label(0), " has shape ", tensors[0].shape(),
           ", ", label(i), " has shape ", tensors[i].shape());
  return node(
      [tensors, n](uint64_t) {
        return stream([tensors, n, i = int64_t{0}]() mutable -> std::optional<Example> {
          if (i >= n) return std::nullopt;
          Example e;
          for (const Tensor& t : tensors) e.push_back(t.select(0, i));
          e.names = tensors.names;
          ++i;
          return e;
        });
      },
      n);
}

NodePtr shuffle_node(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed) {
  check_input(input, "shuffle");
  if (buffer_size < 1) fail("[shuffle] buffer_size must be at least 1, got ", buffer_size);
  return node(
      [input, buffer_size, seed](uint64_t pass) {
        // tf.data's buffered shuffle: hand out a random element of a buffer holding the
        // next buffer_size elements and put the following input element in its place.
        auto in = std::shared_ptr<ElementStream>(input->open(pass));
        auto g = std::make_shared<Generator>(seed ? mix_seed(*seed, {pass}) : draw_seed());
        return stream([in, g, buffer_size, buffer = std::vector<Example>()]() mutable -> std::optional<Example> {
          while (static_cast<int64_t>(buffer.size()) < buffer_size) {
            std::optional<Example> e = in->next();
            if (!e) break;
            buffer.push_back(std::move(*e));
          }
          if (buffer.empty()) return std::nullopt;
          const size_t pick = std::min(
              buffer.size() - 1, static_cast<size_t>(uniform_doubles(*g, 1)[0] * static_cast<double>(buffer.size())));
          std::swap(buffer[pick], buffer.back());
          Example out = std::move(buffer.back());
          buffer.pop_back();
          return out;
        });
      },
      input->cardinality());
}

NodePtr map_node(NodePtr input, MapFn fn) {
  check_input(input, "map");
  if (!fn) fail("[map] expected a function, got none");
  return node(
      [input, fn](uint64_t pass) {
        return stream([in = std::shared_ptr<ElementStream>(input->open(pass)), fn]() -> std::optional<Example> {
          std::optional<Example> e = in->next();
          if (!e) return std::nullopt;
          return fn(std::move(*e));
        });
      },
      input->cardinality());
}

NodePtr batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  check_input(input, "batch");
  if (batch_size < 1) fail("[batch] batch_size must be at least 1, got ", batch_size);
  const int64_t n = input->cardinality();
  const int64_t batches = n < 0 ? -1 : drop_remainder ? n / batch_size : (n + batch_size - 1) / batch_size;
  return node(
      [input, batch_size, drop_remainder](uint64_t pass) {
        return stream([in = std::shared_ptr<ElementStream>(input->open(pass)), batch_size,
                       drop_remainder]() -> std::optional<Example> {
          std::vector<Example> rows;
          while (static_cast<int64_t>(rows.size()) < batch_size) {
            std::optional<Example> e = in->next();
            if (!e) break;
            rows.push_back(std::move(*e));
          }
          if (rows.empty() || (drop_remainder && static_cast<int64_t>(rows.size()) < batch_size)) return std::nullopt;
          return default_collate(rows);
        });
      },
      batches);
}

NodePtr prefetch_node(NodePtr input, int64_t buffer_size) {
  check_input(input, "prefetch");
  if (buffer_size == -1) buffer_size = kAutotunePrefetch;
  if (buffer_size < 1) fail("[prefetch] buffer_size must be at least 1 (or AUTOTUNE), got ", buffer_size);
  return node(
      [input, buffer_size](uint64_t pass) { return std::make_unique<PrefetchStream>(input->open(pass), buffer_size); },
      input->cardinality());
}

NodePtr repeat_node(NodePtr input, std::optional<int64_t> count) {
  check_input(input, "repeat");
  if (count && *count == -1) count.reset();  // tf.data: -1 repeats forever
  if (count && *count < 0) fail("[repeat] count must be non-negative, -1 or None, got ", *count);
  const int64_t n = input->cardinality();
  const int64_t total = n == 0 || (count && *count == 0) ? 0 : !count || n < 0 ? -1 : n * *count;
  return node(
      [input, count](uint64_t pass) {
        std::shared_ptr<ElementStream> first;
        if (!count || *count > 0) first = input->open(mix_seed(pass, {0}));
        return stream(
            [input, count, pass, in = first, round = int64_t{0}, produced = false]() mutable -> std::optional<Example> {
              while (in) {
                if (std::optional<Example> e = in->next()) {
                  produced = true;
                  return e;
                }
                // An empty pass would repeat forever without producing anything: stop instead.
                if (!produced || (count && round + 1 >= *count)) {
                  in.reset();
                  break;
                }
                ++round;
                produced = false;
                in.reset();  // stop the previous pass's threads before the next one starts
                in = input->open(mix_seed(pass, {static_cast<uint64_t>(round)}));
              }
              return std::nullopt;
            });
      },
      total);
}

NodePtr take_node(NodePtr input, int64_t count) {
  check_input(input, "take");
  if (count < -1) fail("[take] count must be non-negative or -1 (everything), got ", count);
  const int64_t n = input->cardinality();
  const int64_t total = count == -1 ? n : n < 0 ? count : std::min(n, count);
  return node(
      [input, count](uint64_t pass) {
        return stream([in = std::shared_ptr<ElementStream>(input->open(pass)), count,
                       taken = int64_t{0}]() mutable -> std::optional<Example> {
          if (count != -1 && taken >= count) return std::nullopt;
          ++taken;
          return in->next();
        });
      },
      total);
}

}  // namespace ug::data
