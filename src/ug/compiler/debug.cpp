#include "ug/compiler/debug.h"

#include <algorithm>
#include <map>

#include "ug/compiler/program.h"
#include "ug/core/batching.h"
#include "ug/graph/capture.h"
#include "ug/graph/op_call.h"

namespace ug::compiler {

namespace {

const graph::OpDef kDebugPrint("debug_print");

/** The examples of the vmaps the values are batched at, each with its indices (outermost
 *  first): one value list for each example. */
void split_examples(const std::vector<Tensor>& values, std::vector<int64_t> index,
                    std::map<std::vector<int64_t>, std::vector<Tensor>>& out) {
  int lvl = 0;
  for (const Tensor& v : values) lvl = std::max(lvl, batching::level(v));
  if (lvl == 0) {
    std::reverse(index.begin(), index.end());  // gathered innermost first
    out.emplace(std::move(index), values);
    return;
  }
  int64_t size = 0;
  for (const Tensor& v : values)
    if (batching::level(v) == lvl) size = batching::physical(v, lvl).size(0);
  for (int64_t b = 0; b < size; ++b) {
    std::vector<Tensor> example;
    for (const Tensor& v : values)
      example.push_back(batching::level(v) == lvl ? batching::physical(v, lvl).select(0, b) : v);
    index.push_back(b);
    split_examples(example, index, out);
    index.pop_back();
  }
}

/** emit(values), or under vmap once for each example in order, as jax.debug.print shows them. */
void emit_examples(const DebugEmit& emit, const std::vector<Tensor>& values) {
  std::map<std::vector<int64_t>, std::vector<Tensor>> examples;
  split_examples(values, {}, examples);
  for (const auto& [index, example] : examples) emit(example);
}

}  // namespace

void debug_callback(const DebugEmit& emit, const std::vector<Tensor>& values) {
  graph::OpCall call(kDebugPrint);
  // A loop's body is traced on stand-ins of its carry: only its runs have values to show. A
  // jit trace defers the call to the end of the trace (defer_debug_callback), which drops it
  // when the program runs afterwards and shows its own values.
  if (!tracing_loop_body()) {
    std::vector<Tensor> now;
    {
      OutsideTrace outside;
      for (const Tensor& v : values) now.push_back(v.detach().clone());  // as they are at this point of the trace
    }
    if (!defer_debug_callback([emit, now] {
          OutsideTrace outside;
          emit_examples(emit, now);
        })) {
      OutsideTrace outside;
      emit_examples(emit, now);
    }
  }
  std::vector<Tensor> recorded = values;
  if (call.capturing()) {
    call.set_attrs({{"effect", int64_t(1)}});  // kept though nothing reads its output
    // The graph holds the values of the vmaps opened inside the trace as their physical
    // tensors: the call records those, batched again at each run so that each example shows.
    const auto& vmaps = batching::open_vmaps();
    const size_t outside = graph::detail::current_capture->vmaps_outside();
    const int outer_level = outside > 0 ? vmaps[outside - 1].level : 0;
    std::vector<std::vector<int>> inner;  // by value: its levels opened inside the trace, outermost first
    for (Tensor& v : recorded) {
      std::vector<int> levels;
      while (batching::level(v) > outer_level) {
        levels.insert(levels.begin(), batching::level(v));
        v = batching::physical(v, batching::level(v));
      }
      inner.push_back(std::move(levels));
    }
    call.set_replay([emit, inner](const std::vector<Tensor>& in) {
      std::vector<Tensor> values = in;
      for (size_t i = 0; i < values.size(); ++i)
        for (int l : inner[i]) values[i] = batching::wrap(values[i], l);
      emit_examples(emit, values);
      return std::vector<Tensor>{empty({0}, {.dtype = DType::Float32})};
    });
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& v : recorded) inputs.push_back(&v);
  Tensor token = empty({0}, {.dtype = DType::Float32});  // every graph node has an output
  call.finish(inputs, {&token});
}

}  // namespace ug::compiler
