#include "ug/graph/debugging.h"

#include <atomic>

#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/core/value_read.h"
#include "ug/graph/capture.h"
#include "ug/graph/op_call.h"

namespace ug::debugging {

namespace {
std::atomic<bool> g_check_numerics{false};
std::function<std::string()>& provider() {
  static std::function<std::string()> p;
  return p;
}
std::function<std::string()>& source_provider() {
  static std::function<std::string()> p;
  return p;
}
const std::string kNowhere;
thread_local const std::string* t_traced_at = &kNowhere;
}  // namespace

const std::string& traced_at() { return *t_traced_at; }
TracedAt::TracedAt(const std::string& where) : previous_(t_traced_at) { t_traced_at = &where; }
TracedAt::~TracedAt() { t_traced_at = previous_; }

namespace {
/** Whether any element of x passes `test`, with the kernels themselves: this layer is below
 *  the ops. */
bool any(Tensor x, ops::UnaryOp test) {
  while (const int lvl = batching::level(x)) x = batching::physical(x, lvl);  // under vmap: every example
  Backend& backend = backend_for(x.device());
  Tensor flags = empty(x.shape(), {.dtype = DType::Bool, .device = x.device()});
  backend.unary(test, x, flags);
  Tensor result = empty({}, {.dtype = DType::Bool, .device = x.device()});
  backend.reduce(ops::ReduceOp::Any, flags, 1, flags.numel(), 1, result);
  ValueReadScope check;
  return result.item<bool>();
}

const graph::OpDef kCheckNumerics("check_numerics");

void check(const Tensor& x, std::string_view message) {
  const bool nan = any(x, ops::UnaryOp::IsNan);
  const bool inf = any(x, ops::UnaryOp::IsInf);
  if (nan || inf)
    fail<RuntimeError>("[check_numerics] ", message, ": tensor of shape ", x.shape(), " and dtype ", x.dtype(), " has ",
                       nan && inf ? "NaN and Inf"
                       : nan      ? "NaN"
                                  : "Inf",
                       " values", traced_at().empty() ? "" : "\nThe op was traced at:\n", traced_at());
}
}  // namespace

const Tensor& check_numerics(const Tensor& x, std::string_view message) {
  if (!is_inexact(x.dtype()) || x.numel() == 0) return x;
  check(x, message);
  if (!graph::detail::current_capture) return x;
  // Traced (ug.jit), the check is an op of the program, kept though nothing reads its output,
  // which checks the values of every run (tf.debugging.check_numerics in a tf.function). It
  // records the physical tensor of the vmaps opened inside the trace: every example at once.
  graph::OpCall call(kCheckNumerics);
  const size_t outside = graph::detail::current_capture->vmaps_outside();
  const int outer_level = outside > 0 ? batching::open_vmaps()[outside - 1].level : 0;
  Tensor recorded = x;
  while (batching::level(recorded) > outer_level) recorded = batching::physical(recorded, batching::level(recorded));
  call.set_attrs({{"effect", int64_t(1)}});
  call.set_replay([message = std::string(message)](const std::vector<Tensor>& in) {
    check(in[0], message);
    return std::vector<Tensor>{empty({0}, {.dtype = DType::Float32})};
  });
  const Tensor token = empty({0}, {.dtype = DType::Float32});  // every graph node has an output
  call.finish({&recorded}, {&token});
  return x;
}

void enable_check_numerics() { g_check_numerics = true; }
void disable_check_numerics() { g_check_numerics = false; }
bool check_numerics_enabled() { return g_check_numerics.load(std::memory_order_relaxed); }

void set_trace_provider(std::function<std::string()> p) { provider() = std::move(p); }
std::string current_trace() {
  std::string here = provider() ? provider()() : std::string();
  if (traced_at().empty()) return here;
  return "a compiled program's op, traced at:\n" + traced_at() +
         (here.empty() ? "" : "run by the program called at:\n" + here);
}

void set_source_provider(std::function<std::string()> p) { source_provider() = std::move(p); }
std::string current_source() { return source_provider() ? source_provider()() : std::string(); }

}  // namespace ug::debugging
