#include "ug/core/inference_mode.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

namespace ug {

namespace {
thread_local bool t_inference = false;
// Storages are freed on any thread; the count lets the common case (none alive) skip the lock.
std::mutex g_mutex;
std::unordered_set<const Storage*> g_inference;
std::atomic<size_t> g_count{0};
}  // namespace

bool InferenceMode::is_enabled() { return t_inference; }
void InferenceMode::set_enabled(bool enabled) { t_inference = enabled; }

bool is_inference(const Tensor& t) {
  if (g_count.load(std::memory_order_acquire) == 0) return false;
  const TensorImpl& impl = t.impl().batch() ? *t.impl().batch()->physical : t.impl();
  std::lock_guard lock(g_mutex);
  return g_inference.count(impl.storage().get()) > 0;
}

namespace detail {

void note_storage_made(const Storage* s) {
  if (!t_inference) return;
  std::lock_guard lock(g_mutex);
  g_inference.insert(s);
  g_count.store(g_inference.size(), std::memory_order_release);
}

void note_storage_gone(const Storage* s) {
  if (g_count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(g_mutex);
  g_inference.erase(s);
  g_count.store(g_inference.size(), std::memory_order_release);
}

}  // namespace detail

}  // namespace ug
