#include "ug/compiler/debug.h"

#include "ug/compiler/program.h"
#include "ug/graph/op_call.h"

namespace ug::compiler {

namespace {
const graph::OpDef kDebugPrint("debug_print");
}  // namespace

void debug_callback(const DebugEmit& emit, const std::vector<Tensor>& values) {
  graph::OpCall call(kDebugPrint);
  // A loop's body is traced on stand-ins of its carry: only its runs have values to show.
  if (!tracing_loop_body()) {
    OutsideTrace outside;
    emit(values);
  }
  if (call.capturing()) {
    call.set_attrs({{"effect", int64_t(1)}});  // kept though nothing reads its output
    call.set_replay([emit](const std::vector<Tensor>& in) {
      emit(in);
      return std::vector<Tensor>{empty({0}, {.dtype = DType::Float32})};
    });
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& v : values) inputs.push_back(&v);
  Tensor token = empty({0}, {.dtype = DType::Float32});  // every graph node has an output
  call.finish(inputs, {&token});
}

}  // namespace ug::compiler
