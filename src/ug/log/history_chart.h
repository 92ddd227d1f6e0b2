// Charts of a Keras-style training history: {"loss": [...], "val_loss": [...],
// "accuracy": [...], ...}, one value per epoch, drawn as one panel per metric with its
// validation series beside it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ug/log/svg_chart.h"

namespace ug::logging {

/** Metric name -> its value at each epoch, in the order the metrics were first logged. */
using MetricHistory = std::vector<std::pair<std::string, std::vector<double>>>;

/** One panel per metric x, in history order, holding x and val_x when both exist; a val_x
 *  without x gets a panel of its own. */
ChartSpec history_chart(const MetricHistory& history, const std::string& title = "training history");

/** Writes history_chart(history, title) to path as SVG. */
void plot_history(const MetricHistory& history, const std::string& path, const std::string& title = "training history");

}  // namespace ug::logging
