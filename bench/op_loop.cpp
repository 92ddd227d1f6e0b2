// The 1-element loops of op_overhead, N times, for bench/instructions.py: under callgrind,
// the difference of two runs with different N is the instruction count of one iteration,
// a figure that, unlike time, does not move with the load of the machine.
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ug/ug.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: ug_op_loop add|autograd N\n";
    return 2;
  }
  const long n = std::atol(argv[2]);
  if (!std::strcmp(argv[1], "add")) {
    ug::Tensor a = ug::ones({1}), b = ug::ones({1});
    for (long i = 0; i < n; ++i) ug::Tensor c = a + b;
  } else {
    ug::Tensor a = ug::ones({1}).requires_grad_(), b = ug::ones({1}).requires_grad_(),
               c = ug::ones({1}).requires_grad_();
    for (long i = 0; i < n; ++i) (a * b + c).sum().backward();
  }
  return 0;
}
