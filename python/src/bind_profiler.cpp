// ug._C._profiler: the C++ profiler (graph/profile.h) under torch.profiler's names; times in
// microseconds as torch reports them. python/unigrad/profiler.py wraps it as a context manager.
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "trace_provider.h"
#include "ug/graph/profile.h"

namespace ugpy {

namespace {

namespace prof = ug::profiler;

double us(double ns) { return ns / 1e3; }

nb::list shape_lists(const std::vector<ug::Shape>& shapes) {
  nb::list out;
  for (const ug::Shape& s : shapes) {
    nb::list dims;
    if (s.size() != 1 || s[0] != -1)  // an absent optional input: [] as in torch
      for (int64_t d : s) dims.append(d);
    out.append(dims);
  }
  return out;
}

/** A profile running from construction to stop(); the trace provider follows with_stack. */
struct PyProfile {
  explicit PyProfile(const prof::Options& o) : with_stack(o.with_stack) {
    if (with_stack) set_profiler_wants_stack(true);
    try {
      profile = std::make_unique<prof::Profile>(o);
    } catch (...) {
      if (with_stack) set_profiler_wants_stack(false);
      throw;
    }
  }
  void stop() {
    profile->stop();
    stopped = true;
    if (with_stack) set_profiler_wants_stack(false);
  }
  ~PyProfile() {
    if (with_stack && profile && !stopped) set_profiler_wants_stack(false);
  }
  bool with_stack, stopped = false;
  std::unique_ptr<prof::Profile> profile;
};

}  // namespace

void bind_profiler(nb::module_& m) {
  nb::module_ p = m.def_submodule("_profiler");
  nb::class_<prof::EventAverage>(p, "FunctionEventAvg", "One row of key_averages(): the calls of one op.")
      .def_ro("key", &prof::EventAverage::key)
      .def_ro("count", &prof::EventAverage::count)
      .def_prop_ro("cpu_time_total", [](const prof::EventAverage& e) { return us(e.cpu_time_total_ns); })
      .def_prop_ro("self_cpu_time_total", [](const prof::EventAverage& e) { return us(e.self_cpu_time_total_ns); })
      .def_prop_ro("cpu_time", [](const prof::EventAverage& e) { return us(e.cpu_time_avg_ns()); })
      .def_ro("cpu_memory_usage", &prof::EventAverage::cpu_memory_usage)
      .def_ro("self_cpu_memory_usage", &prof::EventAverage::self_cpu_memory_usage)
      .def_prop_ro("input_shapes", [](const prof::EventAverage& e) { return shape_lists(e.input_shapes); })
      .def("__repr__", [](const prof::EventAverage& e) {
        return "<FunctionEventAvg key=" + e.key + " count=" + std::to_string(e.count) + ">";
      });
  nb::class_<prof::KeyAverages>(p, "EventList", "key_averages(): one row per op, torch's table.")
      .def("__len__", [](const prof::KeyAverages& k) { return k.size(); })
      .def(
          "__getitem__",
          [](const prof::KeyAverages& k, int64_t i) -> const prof::EventAverage& {
            const auto n = static_cast<int64_t>(k.size());
            if (i < -n || i >= n) throw nb::index_error("[profiler] key_averages() index out of range");
            return k[static_cast<size_t>(i < 0 ? i + n : i)];
          },
          nb::rv_policy::reference_internal)
      .def_prop_ro("self_cpu_time_total", [](const prof::KeyAverages& k) { return us(k.self_cpu_time_total_ns); })
      .def("total_average", &prof::KeyAverages::total_average, "The rows summed into one, keyed \"Total\".")
      .def(
          "table",
          [](const prof::KeyAverages& k, const std::string& sort_by, int64_t row_limit) {
            return k.table({.sort_by = sort_by, .row_limit = row_limit});
          },
          nb::arg("sort_by") = "self_cpu_time_total", nb::arg("row_limit") = 100);
  nb::class_<PyProfile>(p, "Profile")
      .def(
          "__init__",
          [](PyProfile* self, bool record_shapes, bool profile_memory, bool with_stack) {
            new (self) PyProfile({record_shapes, profile_memory, with_stack});
          },
          nb::arg("record_shapes"), nb::arg("profile_memory"), nb::arg("with_stack"))
      .def("stop", &PyProfile::stop)
      .def("events",
           [](const PyProfile& self) {
             nb::list out;
             for (const prof::Event& e : self.profile->events()) {
               nb::dict d;
               d["name"] = e.name;
               d["user_range"] = e.user_range;
               d["start_us"] = us(static_cast<double>(e.start_ns));
               d["end_us"] = us(static_cast<double>(e.end_ns));
               d["thread"] = e.thread;
               d["depth"] = e.depth;
               d["input_shapes"] = shape_lists(e.input_shapes);
               nb::list dtypes;
               for (ug::DType t : e.input_dtypes) dtypes.append(std::string(ug::dtype_name(t)));
               d["input_dtypes"] = dtypes;
               d["bytes"] = e.bytes;
               d["stack"] = e.stack;
               out.append(d);
             }
             return out;
           })
      .def(
          "key_averages",
          [](const PyProfile& self, bool group_by_input_shape) {
            return self.profile->key_averages(group_by_input_shape);
          },
          nb::arg("group_by_input_shape") = false)
      .def("chrome_trace", [](const PyProfile& self) { return self.profile->chrome_trace(); })
      .def("export_chrome_trace",
           [](const PyProfile& self, const std::string& path) { self.profile->export_chrome_trace(path); });
  nb::class_<prof::RecordFunction>(p, "RecordFunction").def(nb::init<const std::string&>());
}

}  // namespace ugpy
