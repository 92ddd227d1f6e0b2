#include "ug/log/histogram.h"

#include <algorithm>
#include <cmath>

#include "ug/core/error.h"

namespace ug::logging {

namespace {

/** numpy.histogram's edges for an int `bins`: linspace over [min, max], widened by 0.5 on
 *  either side when all values are equal. */
std::vector<double> equal_width_edges(double lo, double hi, int64_t n) {
  if (n < 1) fail("[add_histogram] bins must be at least 1, got ", n);
  if (lo == hi) lo -= 0.5, hi += 0.5;
  std::vector<double> edges(static_cast<size_t>(n) + 1);
  double step = (hi - lo) / static_cast<double>(n);
  for (int64_t i = 0; i <= n; ++i) edges[i] = static_cast<double>(i) * step + lo;
  edges.back() = hi;
  return edges;
}

std::vector<double> edges_for(const HistogramBins& bins, double lo, double hi) {
  if (const auto* name = std::get_if<std::string>(&bins)) {
    if (*name != "tensorflow")
      fail("[add_histogram] bins must be \"tensorflow\", a number of bins or a list of edges, got \"", *name, "\"");
    return tensorflow_bins();
  }
  if (const auto* n = std::get_if<int64_t>(&bins)) return equal_width_edges(lo, hi, *n);
  const auto& edges = std::get<std::vector<double>>(bins);
  if (edges.size() < 2) fail("[add_histogram] bin edges need at least 2 values, got ", edges.size());
  for (size_t i = 1; i < edges.size(); ++i)
    if (!(edges[i - 1] <= edges[i])) fail("[add_histogram] bin edges must increase monotonically");
  return edges;
}

/** Bin i holds [edges[i], edges[i+1]), the last bin also its right edge; values outside the
 *  edges are not counted (numpy.histogram). */
std::vector<double> count(std::vector<double> sorted, const std::vector<double>& edges) {
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> counts(edges.size() - 1);
  auto below = [&](double edge) { return std::lower_bound(sorted.begin(), sorted.end(), edge) - sorted.begin(); };
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    auto right = i + 2 == edges.size() ? std::upper_bound(sorted.begin(), sorted.end(), edges[i + 1]) - sorted.begin()
                                       : below(edges[i + 1]);
    counts[i] = static_cast<double>(right - below(edges[i]));
  }
  return counts;
}

/** Merges groups of num_bins / max_bins neighbouring bins, as torch's make_histogram. */
void subsample(std::vector<double>& counts, std::vector<double>& edges, int64_t max_bins) {
  if (max_bins < 1) fail("[add_histogram] max_bins must be at least 1, got ", max_bins);
  size_t n = counts.size();
  if (n <= static_cast<size_t>(max_bins)) return;
  size_t group = n / static_cast<size_t>(max_bins);
  std::vector<double> merged_counts, merged_edges;
  for (size_t i = 0; i < n; i += group) {
    double total = 0;
    for (size_t j = i; j < std::min(i + group, n); ++j) total += counts[j];
    merged_counts.push_back(total);
    merged_edges.push_back(edges[i]);
  }
  merged_edges.push_back(edges.back());
  counts = std::move(merged_counts);
  edges = std::move(merged_edges);
}

}  // namespace

const std::vector<double>& tensorflow_bins() {
  static const std::vector<double> edges = [] {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);
    std::vector<double> all;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all.push_back(-*it);
    all.push_back(0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return edges;
}

Histogram make_histogram(std::span<const double> values, const HistogramBins& bins, std::optional<int64_t> max_bins) {
  if (values.empty()) fail("[add_histogram] the input has no element");
  Histogram h;
  h.min = h.max = values[0];
  for (double v : values) {
    if (!std::isfinite(v)) fail("[add_histogram] values must be finite, got ", v);
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
  }
  h.num = static_cast<double>(values.size());

  std::vector<double> edges = edges_for(bins, h.min, h.max);
  std::vector<double> counts = count(std::vector<double>(values.begin(), values.end()), edges);
  if (max_bins) subsample(counts, edges, *max_bins);

  auto first = std::find_if(counts.begin(), counts.end(), [](double c) { return c > 0; });
  if (first == counts.end()) fail("[add_histogram] no value lies within the bin edges");
  size_t start = first - counts.begin();
  size_t end = counts.rend() - std::find_if(counts.rbegin(), counts.rend(), [](double c) { return c > 0; });
  // The bucket before the first non-empty one, or an added empty one, records the left edge.
  if (start > 0) {
    h.bucket.assign(counts.begin() + static_cast<ptrdiff_t>(start) - 1, counts.begin() + static_cast<ptrdiff_t>(end));
  } else {
    h.bucket.push_back(0);
    h.bucket.insert(h.bucket.end(), counts.begin(), counts.begin() + static_cast<ptrdiff_t>(end));
  }
  h.bucket_limit.assign(edges.begin() + static_cast<ptrdiff_t>(start), edges.begin() + static_cast<ptrdiff_t>(end) + 1);
  return h;
}

}  // namespace ug::logging
