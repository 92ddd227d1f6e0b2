#include "ug/autograd/debugging.h"

#include <atomic>

#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug::debugging {

namespace {
std::atomic<bool> g_check_numerics{false};
std::function<std::string()>& provider() {
  static std::function<std::string()> p;
  return p;
}
}  // namespace

const Tensor& check_numerics(const Tensor& x, std::string_view message) {
  if (!is_floating(x.dtype()) || x.numel() == 0) return x;
  const bool nan = x.isnan().any().item<bool>();
  const bool inf = x.isinf().any().item<bool>();
  if (nan || inf)
    fail<RuntimeError>("[check_numerics] ", message, ": tensor of shape ", x.shape(), " and dtype ", x.dtype(),
                       " has ", nan && inf ? "NaN and Inf" : nan ? "NaN" : "Inf", " values");
  return x;
}

void enable_check_numerics() { g_check_numerics = true; }
void disable_check_numerics() { g_check_numerics = false; }
bool check_numerics_enabled() { return g_check_numerics.load(std::memory_order_relaxed); }

void set_trace_provider(std::function<std::string()> p) { provider() = std::move(p); }
std::string current_trace() { return provider() ? provider()() : std::string(); }

}  // namespace ug::debugging
