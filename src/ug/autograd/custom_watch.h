// Which custom derivatives (custom_function.h) a compiled program would drop: a program holds
// the ops its trace captured, not a custom node's rule, so a trace whose results still reach
// a custom node that has not run (grad(jit(f)) would run it later) must be refused rather than
// compiled without it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ug/graph/node.h"

namespace ug::autograd {

/** While one lives on a thread, custom_function notes each node it records there. */
class CustomRuleWatch {
 public:
  CustomRuleWatch();
  ~CustomRuleWatch();
  CustomRuleWatch(const CustomRuleWatch&) = delete;
  CustomRuleWatch& operator=(const CustomRuleWatch&) = delete;
  /** The names (each once) of the noted nodes whose backward has not run and that `outputs`
   *  reach through their history. */
  std::vector<std::string> unapplied_reached_from(const std::vector<Tensor>& outputs) const;
  /** For custom_function: notes `node` (named `name`), whose backward sets *applied. */
  static void note(const char* name, Ref<Node> node, std::shared_ptr<const bool> applied);

 private:
  struct Noted {
    std::string name;
    Ref<Node> node;  // held: an address freed and reused during the trace must not match
    std::shared_ptr<const bool> applied;
  };
  std::vector<Noted> nodes_;
  CustomRuleWatch* previous_;
};

}  // namespace ug::autograd
