#include "ug/graph/grad_mode.h"

#include "ug/graph/gradient_graph.h"

#include <atomic>

namespace ug {

namespace {
thread_local bool t_grad_enabled = true;
thread_local uint64_t t_grad_sets = 0;    // set_enabled calls made
thread_local uint64_t t_grad_set_by = 0;  // the one in force
thread_local int t_gradient_graph = -1;   // -1: no backward running (the grad mode decides)
std::atomic<bool> g_anomaly{false};
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) {
  t_grad_enabled = enabled;
  t_grad_set_by = ++t_grad_sets;
}
GradMode::State GradMode::state() { return {t_grad_enabled, t_grad_set_by}; }
void GradMode::restore(State s) {
  t_grad_enabled = s.enabled;
  t_grad_set_by = s.set_by;
}
uint64_t GradMode::sets_made() { return t_grad_sets; }

bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly.store(enabled); }

namespace graph {

bool gradient_graph_requested() { return t_gradient_graph < 0 ? t_grad_enabled : t_gradient_graph > 0; }

GradientGraphScope::GradientGraphScope(bool requested) : previous_(t_gradient_graph) {
  t_gradient_graph = requested ? 1 : 0;
}
GradientGraphScope::~GradientGraphScope() { t_gradient_graph = previous_; }

}  // namespace graph

}  // namespace ug
