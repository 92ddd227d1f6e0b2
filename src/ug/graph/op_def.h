// An op's static description, defined once at namespace scope beside the op's code:
//
//   const graph::OpDef kMatmul("matmul", graph::Autocast::Lower);
//
// Defining it registers the name, so registered_ops() lists every op there is: the ONNX
// export table, the Python op tables of the tests and the compiler are checked against it.
// The autocast policy says what the op does to floating inputs inside an autocast region
// (graph/autocast.h); it is listed beside the name so that the op table holds it.
#pragma once

#include <string>
#include <vector>

namespace ug::graph {

/** What an op does with its floating inputs (not float64) inside an autocast region. */
enum class Autocast : unsigned char {
  None,     // runs on its inputs' dtypes (views, elementwise math, indexing)
  Lower,    // products and convolutions: inputs cast to the region's low dtype
  Float32,  // numerically sensitive (softmax, norms, losses, exp/log, sums): inputs cast up
};
// No Promote list as PyTorch's: ops of several inputs (binary ops, cat, where) promote mixed
// floating dtypes themselves.

class OpDef {
 public:
  explicit OpDef(const char* name, Autocast autocast = Autocast::None);
  const char* name() const { return name_; }
  Autocast autocast() const { return autocast_; }

 private:
  const char* name_;
  Autocast autocast_;
};

/** Every name an OpDef registered, sorted, without repeats. */
std::vector<std::string> registered_ops();
/** The autocast policy of a registered op (None for a name no OpDef registered). */
Autocast autocast_policy(const std::string& name);

}  // namespace ug::graph
