// ug.logging: TensorBoard event files (SummaryWriter, with torch.utils.tensorboard's names)
// and SVG charts of training metrics (plot_history, write_chart_svg).
#include <cmath>
#include <filesystem>
#include <limits>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "ug/log/logging.h"

namespace ugpy {

using namespace nb::literals;
using ug::logging::ChartSpec;
using ug::logging::MetricHistory;
using ug::logging::Panel;
using ug::logging::Series;
using ug::logging::SummaryWriter;

namespace {

std::string python_type_name(nb::handle obj) { return nb::cast<std::string>(nb::str(obj.type().attr("__name__"))); }

/** float(value), or NaN for None (an epoch without that metric). */
double metric_value(nb::handle value, const char* op, const std::string& name) {
  if (value.is_none()) return std::numeric_limits<double>::quiet_NaN();
  double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error(
        (std::string("[") + op + "] '" + name + "' holds a " + python_type_name(value) + ", not a number").c_str());
  }
  return v;
}

/** The (key, value) pairs of a dict or any object with .items(), in its order. */
nb::iterator dict_items(nb::handle obj, const char* op, const char* expected) {
  if (!nb::hasattr(obj, "items"))
    throw nb::type_error((std::string("[") + op + "] expected " + expected + ", got " + python_type_name(obj)).c_str());
  return nb::iter(obj.attr("items")());
}

std::vector<std::pair<std::string, double>> scalars_from_python(nb::handle dict) {
  std::vector<std::pair<std::string, double>> out;
  for (nb::handle item : dict_items(dict, "add_scalars", "a dict of tag -> number")) {
    std::string tag = nb::cast<std::string>(nb::str(item[0]));
    out.emplace_back(tag, metric_value(item[1], "add_scalars", tag));
  }
  return out;
}

/** A Keras History (its .history) or any dict of metric name -> per-epoch values. */
MetricHistory history_from_python(nb::handle history) {
  nb::object dict =
      !nb::hasattr(history, "items") && nb::hasattr(history, "history") ? history.attr("history") : nb::borrow(history);
  MetricHistory out;
  for (nb::handle item : dict_items(dict, "plot_history", "a dict of metric -> per-epoch values (or a History)")) {
    std::string name = nb::cast<std::string>(nb::str(item[0]));
    nb::object series = item[1];
    if (!nb::hasattr(series, "__iter__"))
      throw nb::type_error(
          ("[plot_history] '" + name + "' must be a sequence of per-epoch values, got " + python_type_name(series))
              .c_str());
    std::vector<double> values;
    for (nb::handle v : nb::iter(series)) values.push_back(metric_value(v, "plot_history", name));
    out.emplace_back(name, std::move(values));
  }
  return out;
}

ug::logging::HistogramBins bins_from_python(nb::handle bins) {
  if (nb::isinstance<nb::str>(bins)) return nb::cast<std::string>(bins);
  if (PyLong_Check(bins.ptr()) && !PyBool_Check(bins.ptr())) return nb::cast<int64_t>(bins);
  std::vector<double> edges;
  try {
    for (nb::handle e : nb::iter(bins)) edges.push_back(metric_value(e, "add_histogram", "bins"));
  } catch (const nb::python_error&) {
    throw nb::type_error(
        ("[add_histogram] bins must be \"tensorflow\", an int or a sequence of edges, got " + python_type_name(bins))
            .c_str());
  }
  return edges;
}

ug::Tensor tensor_from_python(nb::handle values) {
  if (nb::isinstance<ug::Tensor>(values)) return nb::cast<ug::Tensor>(values);
  return tensor_from_data(values, std::nullopt, std::nullopt);
}

std::string path_string(const std::optional<std::filesystem::path>& path) { return path ? path->string() : ""; }

}  // namespace

void bind_logging(nb::module_& m) {
  nb::class_<SummaryWriter>(m, "SummaryWriter",
                            "torch.utils.tensorboard.SummaryWriter: TensorBoard event files in log_dir, written on a "
                            "background thread.")
      .def(
          "__init__",
          [](SummaryWriter* self, const std::optional<std::filesystem::path>& log_dir, const std::string& comment,
             std::optional<int64_t> purge_step, int max_queue, double flush_secs, const std::string& filename_suffix) {
            new (self) SummaryWriter(path_string(log_dir), {.comment = comment,
                                                            .purge_step = purge_step,
                                                            .max_queue = max_queue,
                                                            .flush_secs = flush_secs,
                                                            .filename_suffix = filename_suffix});
          },
          "log_dir"_a = nb::none(), "comment"_a = "", "purge_step"_a = nb::none(), "max_queue"_a = 10,
          "flush_secs"_a = 120, "filename_suffix"_a = "")
      .def_prop_ro("log_dir", &SummaryWriter::log_dir)
      .def("get_logdir", &SummaryWriter::log_dir, "The directory the event files are written to.")
      .def(
          "add_scalar",
          [](SummaryWriter& w, const std::string& tag, nb::handle value, std::optional<int64_t> global_step,
             std::optional<double> walltime) {
            w.add_scalar(tag, metric_value(value, "add_scalar", tag), global_step, walltime);
          },
          "tag"_a, "scalar_value"_a, "global_step"_a = nb::none(), "walltime"_a = nb::none(),
          "A scalar (stored as float32) at global_step; walltime defaults to now.")
      .def(
          "add_scalars",
          [](SummaryWriter& w, const std::string& main_tag, nb::handle tag_scalar_dict,
             std::optional<int64_t> global_step, std::optional<double> walltime) {
            w.add_scalars(main_tag, scalars_from_python(tag_scalar_dict), global_step, walltime);
          },
          "main_tag"_a, "tag_scalar_dict"_a, "global_step"_a = nb::none(), "walltime"_a = nb::none(),
          "Scalars on one chart; each tag is written to the run <log_dir>/<main_tag>_<tag>, as torch does.")
      .def("add_text", &SummaryWriter::add_text, "tag"_a, "text_string"_a, "global_step"_a = nb::none(),
           "walltime"_a = nb::none(), "Text for TensorBoard's text tab (tag <tag>/text_summary).")
      .def(
          "add_histogram",
          [](SummaryWriter& w, const std::string& tag, nb::handle values, std::optional<int64_t> global_step,
             nb::handle bins, std::optional<double> walltime, std::optional<int64_t> max_bins) {
            w.add_histogram(tag, tensor_from_python(values), global_step, bins_from_python(bins), walltime, max_bins);
          },
          "tag"_a, "values"_a, "global_step"_a = nb::none(), "bins"_a = "tensorflow", "walltime"_a = nb::none(),
          "max_bins"_a = nb::none(),
          "A histogram of the values' elements; bins: \"tensorflow\" (TensorBoard's default edges), a number of "
          "equal bins, or the edges.")
      .def("flush", &SummaryWriter::flush, nb::call_guard<nb::gil_scoped_release>(),
           "Writes every event added so far to disk.")
      .def("close", &SummaryWriter::close, nb::call_guard<nb::gil_scoped_release>(),
           "Flushes and closes the files; adding afterwards opens new ones.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](SummaryWriter& w, nb::handle, nb::handle, nb::handle) {
            nb::gil_scoped_release release;
            w.close();
          },
          "exc_type"_a.none(), "exc_value"_a.none(), "traceback"_a.none());

  nb::class_<Series>(m, "Series", "One line of a chart: values[i] is epoch i + 1's; NaN leaves a gap.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](Series* s, std::string name, std::vector<double> values) {
            new (s) Series{std::move(name), std::move(values)};
          },
          "name"_a, "values"_a)
      .def_rw("name", &Series::name)
      .def_rw("values", &Series::values);
  nb::class_<Panel>(m, "Panel", "One chart of a ChartSpec: its title, axis labels and series.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](Panel* p, std::string title, std::vector<Series> series, std::string y_label, std::string x_label) {
            new (p) Panel{std::move(title), std::move(y_label), std::move(x_label), std::move(series)};
          },
          "title"_a, "series"_a, "y_label"_a = "", "x_label"_a = "epoch")
      .def_rw("title", &Panel::title)
      .def_rw("y_label", &Panel::y_label)
      .def_rw("x_label", &Panel::x_label)
      .def_rw("series", &Panel::series);
  nb::class_<ChartSpec>(m, "ChartSpec", "Panels drawn side by side under a title.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](ChartSpec* c, std::vector<Panel> panels, std::string title, double panel_width, double panel_height) {
            new (c) ChartSpec{std::move(title), std::move(panels), panel_width, panel_height};
          },
          "panels"_a, "title"_a = "", "panel_width"_a = 440, "panel_height"_a = 320)
      .def_rw("title", &ChartSpec::title)
      .def_rw("panels", &ChartSpec::panels)
      .def_rw("panel_width", &ChartSpec::panel_width)
      .def_rw("panel_height", &ChartSpec::panel_height);
  m.def("chart_svg", &ug::logging::chart_svg, "spec"_a, "The chart as an SVG document.");
  m.def(
      "write_chart_svg",
      [](const std::filesystem::path& path, const ChartSpec& spec) {
        ug::logging::write_chart_svg(path.string(), spec);
      },
      "path"_a, "spec"_a, "Writes the chart to path as a standalone SVG file.");
  m.def(
      "history_chart",
      [](nb::handle history, const std::string& title) {
        return ug::logging::history_chart(history_from_python(history), title);
      },
      "history"_a, "title"_a = "training history",
      "The ChartSpec of a Keras-style history: a panel per metric x, with val_x beside it.");
  m.def(
      "plot_history",
      [](nb::handle history, const std::filesystem::path& path, const std::string& title) {
        ug::logging::plot_history(history_from_python(history), path.string(), title);
      },
      "history"_a, "path"_a, "title"_a = "training history",
      "Draws a Keras-style history ({'loss': [...], 'val_loss': [...], ...} or a History) as an SVG file: a "
      "panel per metric, its validation series beside it.");
}

}  // namespace ugpy
