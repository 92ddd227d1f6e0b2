#include "trace_provider.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <functional>
#include <string>

#include "ug/graph/debugging.h"
#include "ug/graph/grad_mode.h"

namespace nb = nanobind;

namespace ugpy {

namespace {

bool profiler_wants_stack = false;

std::function<std::string()> python_trace_provider() {
  return [] {
    nb::gil_scoped_acquire gil;
    nb::object stack = nb::module_::import_("unigrad.autograd").attr("_user_stack")();
    return nb::cast<std::string>(stack);
  };
}

}  // namespace

void install_source_provider() {
  ug::debugging::set_source_provider([] {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::module_::import_("unigrad.autograd").attr("_user_frame")());
  });
}

void update_trace_provider() {
  const bool wanted = ug::AnomalyMode::is_enabled() || profiler_wants_stack;
  ug::debugging::set_trace_provider(wanted ? python_trace_provider() : std::function<std::string()>());
}

void set_profiler_wants_stack(bool on) {
  profiler_wants_stack = on;
  update_trace_provider();
}

}  // namespace ugpy
