#include "ug/graph/debugging.h"

#include <atomic>

#include "ug/backend/backend.h"
#include "ug/core/value_read.h"

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
bool any(const Tensor& x, ops::UnaryOp test) {
  Backend& backend = backend_for(x.device());
  Tensor flags = empty(x.shape(), {.dtype = DType::Bool, .device = x.device()});
  backend.unary(test, x, flags);
  Tensor result = empty({}, {.dtype = DType::Bool, .device = x.device()});
  backend.reduce(ops::ReduceOp::Any, flags, 1, flags.numel(), 1, result);
  ValueReadScope check;
  return result.item<bool>();
}
}  // namespace

const Tensor& check_numerics(const Tensor& x, std::string_view message) {
  if (!is_inexact(x.dtype()) || x.numel() == 0) return x;
  const bool nan = any(x, ops::UnaryOp::IsNan);
  const bool inf = any(x, ops::UnaryOp::IsInf);
  if (nan || inf)
    fail<RuntimeError>("[check_numerics] ", message, ": tensor of shape ", x.shape(), " and dtype ", x.dtype(), " has ",
                       nan && inf ? "NaN and Inf"
                       : nan      ? "NaN"
                                  : "Inf",
                       " values", traced_at().empty() ? "" : "\nThe op was traced at:\n", traced_at());
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
