// An op's static description, defined once at namespace scope beside the op's code:
//
//   const graph::OpDef kMatmul("matmul");
//
// Defining it registers the name, so registered_ops() lists every op there is: the ONNX
// export table, the Python op tables of the tests and the compiler are checked against it.
#pragma once

#include <string>
#include <vector>

namespace ug::graph {

class OpDef {
 public:
  explicit OpDef(const char* name);
  const char* name() const { return name_; }

 private:
  const char* name_;
};

/** Every name an OpDef registered, sorted, without repeats. */
std::vector<std::string> registered_ops();

}  // namespace ug::graph
