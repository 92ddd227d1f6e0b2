#include "ug/log/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "ug/core/error.h"
#include "ug/log/axis_ticks.h"

namespace ug::logging {

namespace {

// matplotlib's default colours, so that charts look like the plots people know.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr double kTitleHeight = 36;
// The plot area's margins inside a panel: room for the panel title and legend above, tick
// labels and axis labels left and below.
constexpr double kTop = 58, kBottom = 46, kRight = 18, kYLabelWidth = 26;
constexpr double kCharWidth = 7;  // about the width of a 12px sans-serif glyph

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      // XML 1.0 allows no other control characters, not even escaped.
      default: out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ? '?' : c;
    }
  }
  return out;
}

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

/** The plot area of one panel and its mapping from data to SVG coordinates. */
struct Frame {
  double panel_left = 0;  // the panel's left edge, where the y label goes
  double left = 0, top = 0, width = 0, height = 0;
  AxisTicks x, y;
  double px(double epoch) const { return left + (epoch - x.lo) / (x.hi - x.lo) * width; }
  double py(double value) const { return top + height - (value - y.lo) / (y.hi - y.lo) * height; }
};

Frame frame_for(const Panel& panel, double ox, double oy, const ChartSpec& spec) {
  size_t epochs = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Series& s : panel.series) {
    epochs = std::max(epochs, s.values.size());
    for (double v : s.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (lo > hi) lo = 0, hi = 1;  // no finite value: an empty unit axis
  Frame f;
  f.y = nice_ticks(lo, hi, 6);
  // Epochs 1..n with a small margin, so that the first and last points clear the frame.
  double n = static_cast<double>(std::max<size_t>(epochs, 1));
  double pad = epochs > 1 ? 0.03 * (n - 1) : 0.5;
  f.x = ticks_within(1 - pad, n + pad, 6, true);
  size_t label_chars = 0;
  for (double v : f.y.values) label_chars = std::max(label_chars, tick_label(v, f.y).size());
  double left = kYLabelWidth + kCharWidth * static_cast<double>(label_chars) + 8;
  f.panel_left = ox;
  f.left = ox + left;
  f.top = oy + kTop;
  f.width = spec.panel_width - left - kRight;
  f.height = spec.panel_height - kTop - kBottom;
  return f;
}

void draw_axes(std::string& out, const Panel& panel, const Frame& f) {
  double bottom = f.top + f.height;
  for (double v : f.y.values) {
    double y = f.py(v);
    out += "<line class=\"grid\" x1=\"" + num(f.left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(f.left + f.width) +
           "\" y2=\"" + num(y) + "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + num(f.left - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
           escape(tick_label(v, f.y)) + "</text>\n";
  }
  for (double v : f.x.values) {
    double x = f.px(v);
    out += "<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(bottom) + "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(bottom + 16) + "\" text-anchor=\"middle\">" +
           escape(tick_label(v, f.x)) + "</text>\n";
  }
  out += "<rect x=\"" + num(f.left) + "\" y=\"" + num(f.top) + "\" width=\"" + num(f.width) + "\" height=\"" +
         num(f.height) + "\" fill=\"none\" stroke=\"#333333\"/>\n";
  out += "<text x=\"" + num(f.left + f.width / 2) + "\" y=\"" + num(bottom + 36) + "\" text-anchor=\"middle\">" +
         escape(panel.x_label) + "</text>\n";
  double cy = f.top + f.height / 2, cx = f.panel_left + 16;
  out += "<text x=\"" + num(cx) + "\" y=\"" + num(cy) + "\" text-anchor=\"middle\" transform=\"rotate(-90 " + num(cx) +
         " " + num(cy) + ")\">" + escape(panel.y_label) + "</text>\n";
}

void draw_series(std::string& out, const Series& s, const char* color, const Frame& f) {
  out +=
      "<g class=\"series\" data-series=\"" + escape(s.name) + "\" stroke=\"" + color + "\" fill=\"" + color + "\">\n";
  size_t n = s.values.size();
  for (size_t i = 0; i < n;) {
    if (!std::isfinite(s.values[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < n && std::isfinite(s.values[end])) ++end;
    if (end - i == 1) {
      out += "<circle cx=\"" + num(f.px(i + 1.0)) + "\" cy=\"" + num(f.py(s.values[i])) + "\" r=\"3\"/>\n";
    } else {
      out += "<polyline fill=\"none\" stroke-width=\"2\" points=\"";
      for (size_t k = i; k < end; ++k) {
        if (k > i) out += ' ';
        out += num(f.px(k + 1.0)) + "," + num(f.py(s.values[k]));
      }
      out += "\"/>\n";
    }
    i = end;
  }
  out += "</g>\n";
}

/** One row above the plot area: a colour swatch and the name of each series. */
void draw_legend(std::string& out, const Panel& panel, const Frame& f) {
  double x = f.left, y = f.top - 14;
  out += "<g class=\"legend\">\n";
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const char* color = kPalette[i % std::size(kPalette)];
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(y - 4) + "\" x2=\"" + num(x + 18) + "\" y2=\"" + num(y - 4) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    out += "<text x=\"" + num(x + 22) + "\" y=\"" + num(y) + "\">" + escape(panel.series[i].name) + "</text>\n";
    x += 40 + kCharWidth * static_cast<double>(panel.series[i].name.size());
  }
  out += "</g>\n";
}

}  // namespace

std::string chart_svg(const ChartSpec& spec) {
  if (spec.panels.empty()) fail("[write_chart_svg] the chart has no panels");
  if (!(spec.panel_width >= 200 && spec.panel_height >= 150))
    fail("[write_chart_svg] panels must be at least 200 x 150, got ", spec.panel_width, " x ", spec.panel_height);
  double width = spec.panel_width * static_cast<double>(spec.panels.size());
  double height = kTitleHeight + spec.panel_height;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text class=\"title\" x=\"" + num(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
         escape(spec.title) + "</text>\n";
  for (size_t p = 0; p < spec.panels.size(); ++p) {
    const Panel& panel = spec.panels[p];
    double ox = spec.panel_width * static_cast<double>(p), oy = kTitleHeight;
    Frame f = frame_for(panel, ox, oy, spec);
    out += "<g class=\"panel\">\n";
    out += "<text class=\"panel-title\" x=\"" + num(f.left + f.width / 2) + "\" y=\"" + num(oy + 16) +
           "\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" + escape(panel.title) + "</text>\n";
    draw_legend(out, panel, f);
    draw_axes(out, panel, f);
    for (size_t i = 0; i < panel.series.size(); ++i)
      draw_series(out, panel.series[i], kPalette[i % std::size(kPalette)], f);
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

void write_chart_svg(const std::string& path, const ChartSpec& spec) {
  std::string svg = chart_svg(spec);
  std::ofstream file(path, std::ios::binary);
  if (!file) fail<RuntimeError>("[write_chart_svg] cannot create ", path);
  file << svg;
  file.close();
  if (!file) fail<RuntimeError>("[write_chart_svg] cannot write ", path);
}

}  // namespace ug::logging
