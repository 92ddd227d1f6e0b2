// torch.linalg.multi_dot: a chain of matrix products in its cheapest order (the textbook
// matrix-chain dynamic program over the n+1 boundary sizes, O(n^3) for n matrices), each step
// one mm, so gradients, vmap and capture come from mm's rules.
#include <cstdint>
#include <vector>

#include "ug/core/error.h"
#include "ug/ops/linalg.h"

namespace ug::linalg {

namespace {

/** The product of chain[i..j] split where `split` says. */
Tensor product(const std::vector<Tensor>& chain, const std::vector<std::vector<size_t>>& split, size_t i, size_t j) {
  if (i == j) return chain[i];
  const size_t k = split[i][j];
  return product(chain, split, i, k).mm(product(chain, split, k + 1, j));
}

}  // namespace

Tensor multi_dot(const std::vector<Tensor>& tensors) {
  const char* op = "[linalg.multi_dot]";
  const size_t n = tensors.size();
  if (n < 2) fail(op, " expected at least 2 tensors but got ", n);
  std::vector<Tensor> chain(tensors);
  for (size_t i = 0; i < n; ++i) {
    const int64_t dim = chain[i].dim();
    const bool end = i == 0 || i == n - 1;
    if (dim != 2 && !(end && dim == 1))
      fail(op, " tensor ", i, " must be 2-d", end ? " or 1-d" : "", ", got shape ", chain[i].shape());
    if (chain[i].dtype() != chain[0].dtype())
      fail(op, " all tensors must have one dtype, but tensor 0 is ", chain[0].dtype(), " and tensor ", i, " is ",
           chain[i].dtype());
  }
  const bool row = chain.front().dim() == 1, column = chain.back().dim() == 1;
  if (row) chain.front() = chain.front().unsqueeze(0);
  if (column) chain.back() = chain.back().unsqueeze(1);
  std::vector<int64_t> sizes{chain[0].size(0)};  // matrix i is sizes[i] x sizes[i + 1]
  for (size_t i = 0; i < n; ++i) {
    if (chain[i].size(0) != sizes.back())
      fail(op, " tensors ", i - 1, " and ", i, " cannot be multiplied: shapes ", tensors[i - 1].shape(), " and ",
           tensors[i].shape());
    sizes.push_back(chain[i].size(1));
  }
  // cost[i][j]: the fewest multiply-adds for chain[i..j]; split[i][j]: where that product splits.
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = -1;
      for (size_t k = i; k < j; ++k) {
        const double last = static_cast<double>(sizes[i]) * static_cast<double>(sizes[k + 1]) *
                            static_cast<double>(sizes[j + 1]);  // [i..k] @ [k+1..j]
        const double c = cost[i][k] + cost[k + 1][j] + last;
        if (cost[i][j] < 0 || c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = k;
        }
      }
    }
  Tensor out = product(chain, split, 0, n - 1);
  if (row) out = out.squeeze(Dims{0});
  if (column) out = out.squeeze(Dims{-1});
  return out;
}

}  // namespace ug::linalg
