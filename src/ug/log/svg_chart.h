// Line charts of per-epoch series as standalone SVG files: panels side by side (say loss
// and accuracy, each with its train and validation series), with axes, round-numbered ticks,
// labels, a legend and a title. Needs nothing to view but a browser.
#pragma once

#include <string>
#include <vector>

namespace ug::logging {

struct Series {
  std::string name;
  /** values[i] is epoch i + 1's; a NaN or infinite value leaves a gap in the line. */
  std::vector<double> values;
};

struct Panel {
  std::string title;
  std::string y_label;
  std::string x_label = "epoch";
  std::vector<Series> series;
};

struct ChartSpec {
  std::string title;
  std::vector<Panel> panels;  // left to right
  double panel_width = 440;
  double panel_height = 320;
};

/** The SVG document. Each series is a <g class="series" data-series="name"> holding one
 *  <polyline> per run of consecutive finite values, or a <circle> for a run of one. */
std::string chart_svg(const ChartSpec& spec);

/** Writes chart_svg(spec) to path; raises RuntimeError when it cannot. */
void write_chart_svg(const std::string& path, const ChartSpec& spec);

}  // namespace ug::logging
