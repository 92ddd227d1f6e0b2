// Runs code that may crash on hostile input (libonnx 1.12's shape inference and version
// converter, which index past the end of their inputs' shapes) in a forked child process, so that
// a crash becomes an error of the caller's instead of the end of its process.
#pragma once

#include <functional>
#include <string>

namespace ug::onnx {

/** Runs `work` in a child process forked from this one and returns the bytes it returned.
 *  Throws std::runtime_error holding the child's exception message when `work` threw, and one
 *  naming the signal when the child died of one. The child sees this process's memory as it was
 *  at the fork and touches only what `work` touches; it never returns into the caller's code. */
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace ug::onnx
