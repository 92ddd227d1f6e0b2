// JAX's collectives over a named vmap axis: inside vmap(f, ..., axis_name = "i"), psum(x, "i")
// sums x over the examples of that vmap (jax.lax.psum inside jax.vmap(f, axis_name="i")). vmap
// binds the name to its level for the call; each collective is an op whose batching rule
// reaches that level's batch dim through any vmaps opened inside it. The reductions and
// all_gather give the same value to every example (unbatched at that level), as JAX does.
//
// Derivatives: differentiated from outside the vmap (grad of vmap), each collective is the
// ops its rule ran on the physical tensors (psum is a sum over the batch dim, whose gradient
// goes back to every example). Differentiated per example inside it (vmap of grad), a
// collective transposes as in JAX: psum and pmean to themselves, all_gather and psum_scatter
// to each other, ppermute to the inverse permutation; pmax and pmin have no derivative there.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ug/core/tensor.h"

namespace ug::lax {

/** A name bound to a vmap: its level, its size, and an id no other binding shares. A vmap that
 *  runs f once per example (an op without a batching rule) binds the name with the reason, and
 *  its collectives, which need every example at once, raise it. */
struct Axis {
  std::string name;
  int level = 0;
  int64_t size = 0;
  uint64_t id = 0;
  std::string per_example_reason;
};

/** Binds `name` to a vmap for its lifetime (ug::vmap holds one); the innermost binding of a
 *  name is the one its collectives use. */
class AxisBinding {
 public:
  AxisBinding(const std::string& name, int level, int64_t size, std::string per_example_reason = {});
  ~AxisBinding();
  AxisBinding(const AxisBinding&) = delete;
  AxisBinding& operator=(const AxisBinding&) = delete;
};

/** The innermost binding of `name`; ValueError naming `op` when no vmap binds it. */
Axis bound_axis(const std::string& name, const char* op);
/** How many bindings are open up to and including the innermost one of `name` (0: unbound),
 *  and how many are open in all: pmap's bindings (Python) are ordered against these. */
int64_t axis_depth(const std::string& name);
int64_t open_axes();

/** The sum, mean, maximum or minimum of x over the examples of the vmap bound to axis_name. */
Tensor psum(const Tensor& x, const std::string& axis_name);
Tensor pmean(const Tensor& x, const std::string& axis_name);
Tensor pmax(const Tensor& x, const std::string& axis_name);
Tensor pmin(const Tensor& x, const std::string& axis_name);
/** Every example's x, stacked along a new dim `axis` (tiled: concatenated along dim `axis`). */
Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/** psum, then example i keeps the i-th slice of the sum along scatter_dimension (whose size is
 *  the axis size; tiled: a multiple of it, example i keeping the i-th block). */
Tensor psum_scatter(const Tensor& x, const std::string& axis_name, int64_t scatter_dimension = 0, bool tiled = false);
/** Example dst gets example src's x for each (src, dst) in perm; an example no pair sends to
 *  gets zeros. */
Tensor ppermute(const Tensor& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm);
/** Each example's position along the axis (int32). */
Tensor axis_index(const std::string& axis_name);
/** The number of examples along the axis: psum(1, axis_name). */
int64_t axis_size(const std::string& axis_name);

}  // namespace ug::lax
