#include "ug/log/history_chart.h"

#include <algorithm>
#include <string_view>

#include "ug/core/error.h"

namespace ug::logging {

namespace {

constexpr std::string_view kValPrefix = "val_";

const std::vector<double>* find(const MetricHistory& history, const std::string& name) {
  auto it = std::find_if(history.begin(), history.end(), [&](const auto& item) { return item.first == name; });
  return it == history.end() ? nullptr : &it->second;
}

}  // namespace

ChartSpec history_chart(const MetricHistory& history, const std::string& title) {
  if (history.empty()) fail("[plot_history] the history holds no metric");
  ChartSpec spec;
  spec.title = title;
  for (const auto& [name, values] : history) {
    bool is_val = name.starts_with(kValPrefix);
    if (is_val && find(history, name.substr(kValPrefix.size()))) continue;  // drawn in its metric's panel
    Panel panel;
    panel.title = panel.y_label = name;
    panel.series.push_back({name, values});
    if (const auto* val = is_val ? nullptr : find(history, std::string(kValPrefix) + name))
      panel.series.push_back({std::string(kValPrefix) + name, *val});
    spec.panels.push_back(std::move(panel));
  }
  return spec;
}

void plot_history(const MetricHistory& history, const std::string& path, const std::string& title) {
  write_chart_svg(path, history_chart(history, title));
}

}  // namespace ug::logging
