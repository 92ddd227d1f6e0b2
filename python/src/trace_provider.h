// Where an op was called from in Python: the frames outside unigrad (unigrad.autograd._user_stack),
// for anomaly mode's forward traces and the profiler's with_stack.
#pragma once

namespace ugpy {

/** Installs the source provider (the innermost user frame) that a program's trace records. */
void install_source_provider();
/** Installs the provider while anomaly mode or a profiler with with_stack needs it. */
void update_trace_provider();
void set_profiler_wants_stack(bool on);

}  // namespace ugpy
