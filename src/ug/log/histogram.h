// The histograms of SummaryWriter.add_histogram, binned as torch.utils.tensorboard bins them:
// numpy.histogram's rules, then trimmed to the buckets from the first to the last non-empty
// one. TensorBoard keeps only each bucket's right edge, so an empty bucket leads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace ug::logging {

/** "tensorflow" (TensorBoard's default edges), a number of equal-width bins over
 *  [min, max], or the bin edges themselves (increasing). */
using HistogramBins = std::variant<std::string, int64_t, std::vector<double>>;

/** The fields of tensorboard.HistogramProto. */
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // right edges
  std::vector<double> bucket;        // counts
};

/** TensorBoard's default edges: 0 and ±1e-12 * 1.1^k below 1e20, increasing. */
const std::vector<double>& tensorflow_bins();

/** Values must be finite and not empty (ValueError otherwise). max_bins merges neighbouring
 *  bins until at most that many remain, as torch does. */
Histogram make_histogram(std::span<const double> values, const HistogramBins& bins = std::string("tensorflow"),
                         std::optional<int64_t> max_bins = std::nullopt);

}  // namespace ug::logging
