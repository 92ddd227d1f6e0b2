// Everything in ug::logging (the files of src/ug/log): TensorBoard event files and SVG charts
// of training metrics. The namespace is not ug::log, which is the natural logarithm.
#pragma once

#include "ug/log/history_chart.h"
#include "ug/log/summary_writer.h"
#include "ug/log/svg_chart.h"
