#include "ug/graph/forward.h"

#include <algorithm>
#include <atomic>

#include "ug/graph/node.h"

namespace ug::forward {

namespace detail {
thread_local int open_levels = 0;  // t_levels.size(), read inline by active()
}

namespace {
std::atomic<int64_t> g_next_level{1};
thread_local std::vector<int64_t> t_levels;  // open levels, innermost last

void sync() { detail::open_levels = static_cast<int>(t_levels.size()); }
}  // namespace

Level::Level() : id_(g_next_level.fetch_add(1)) {
  t_levels.push_back(id_);
  sync();
}
Level::~Level() {
  t_levels.erase(std::find(t_levels.begin(), t_levels.end(), id_));
  sync();
}

bool has_tangent(const Tensor& t) {
  if (t_levels.empty() || !t.defined()) return false;
  for (int64_t level : t_levels)
    if (tangent(t, level).defined()) return true;
  return false;
}

Tensor tangent(const Tensor& t, int64_t level) {
  if (!t.defined()) return Tensor();
  AutogradMeta* m = autograd::meta_if(t);
  if (!m) return Tensor();
  // A view whose memory was written since takes its tangents from its base's, as its history.
  if (autograd::view_is_stale(t, *m)) [[unlikely]]
    autograd::refresh_view(t, *m);
  for (const auto& [l, tan] : m->tangents)
    if (l == level) return tan;
  return Tensor();
}

void set_tangent(const Tensor& t, int64_t level, const Tensor& tan) {
  auto& list = autograd::meta(t).tangents;
  for (auto& [l, existing] : list)
    if (l == level) {
      existing = tan;
      return;
    }
  list.push_back({level, tan});
}

void propagate(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& outputs,
               const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& rule) {
  bool floating = false;
  for (const Tensor* out : outputs) floating |= is_inexact(out->dtype());
  if (t_levels.empty() || !floating) return;
  const std::vector<int64_t> levels = t_levels;
  for (int64_t level : levels) {
    std::vector<Tensor> tangents;
    bool any = false;
    for (const Tensor* in : inputs) {
      tangents.push_back(in ? tangent(*in, level) : Tensor());
      any |= tangents.back().defined();
    }
    if (!any) continue;
    // The rule's own ops must not give the tangent a tangent at this same level.
    t_levels.erase(std::find(t_levels.begin(), t_levels.end(), level));
    sync();
    struct Restore {
      int64_t level;
      ~Restore() {
        t_levels.insert(std::upper_bound(t_levels.begin(), t_levels.end(), level), level);
        sync();
      }
    } restore{level};
    std::vector<Tensor> result = rule(tangents);
    for (size_t i = 0; i < outputs.size() && i < result.size(); ++i)
      if (result[i].defined() && is_inexact(outputs[i]->dtype())) set_tangent(*outputs[i], level, result[i]);
  }
}

void copy_tangents(const Tensor& result, const Tensor& t) {
  AutogradMeta* rm = autograd::meta_if(result);
  if (rm && !rm->tangents.empty()) autograd::meta(t).tangents = rm->tangents;
  else if (AutogradMeta* tm = autograd::meta_if(t)) tm->tangents.clear();
}

}  // namespace ug::forward
