// What a float32 convolution kernel does to each output after the bias (Conv2dParams'
// accumulate and relu), in the composed ops' order: + the output's old value, then relu.
#pragma once

namespace ug::cpu {

struct Epilogue {
  bool accumulate = false, relu = false;
};

}  // namespace ug::cpu
