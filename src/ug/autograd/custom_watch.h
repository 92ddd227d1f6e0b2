// Which custom derivatives (custom_function.h) recorded on a thread have not run: a compiled
// program holds the ops its trace captured, not a custom node's rule, so a trace that leaves
// one for later (grad(jit(f))) must be refused rather than compiled without it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ug::autograd {

/** While one lives on a thread, custom_function notes each node it records there. */
class CustomRuleWatch {
 public:
  CustomRuleWatch();
  ~CustomRuleWatch();
  CustomRuleWatch(const CustomRuleWatch&) = delete;
  CustomRuleWatch& operator=(const CustomRuleWatch&) = delete;
  /** The names of the noted nodes whose backward has not run, each once. */
  std::vector<std::string> unapplied() const;
  /** For custom_function: the flag a new node's backward sets when it runs (null when no
   *  watch is on). */
  static std::shared_ptr<bool> note(const char* name);

 private:
  std::vector<std::pair<std::string, std::shared_ptr<bool>>> nodes_;
  CustomRuleWatch* previous_;
};

}  // namespace ug::autograd
