// What a loader may answer a hostile input with: one of unigrad's errors. Anything else
// (another exception, a crash, a sanitizer report, an allocation past the limit) is a bug.
#pragma once

#include "ug/core/error.h"

template <class F> void expect_clean_failure(F&& load) {
  try {
    load();
  } catch (const ug::ValueError&) {
  } catch (const ug::TypeError&) {
  } catch (const ug::IndexError&) {
  } catch (const ug::RuntimeError&) {}
}
