// ug::onnx::run_isolated: the child's result, its exception and its crash, each as the caller
// sees it; the caller's process goes on after each.
#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>
#include <string>

#include "ug/onnx/isolated.h"

namespace {

std::string error_of(const std::function<std::string()>& work) {
  try {
    ug::onnx::run_isolated(work);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(OnnxIsolated, ReturnsTheChildsBytes) {
  std::string big(3 << 20, 'x');  // past a pipe's buffer: the parent reads while the child writes
  big[12345] = '\0';
  EXPECT_EQ(ug::onnx::run_isolated([&] { return big; }), big);
  EXPECT_EQ(ug::onnx::run_isolated([] { return std::string(); }), "");
}

TEST(OnnxIsolated, PassesOnTheChildsException) {
  EXPECT_EQ(error_of([]() -> std::string { throw std::invalid_argument("bad node 'conv'"); }), "bad node 'conv'");
}

TEST(OnnxIsolated, TurnsTheChildsCrashIntoAnError) {
  EXPECT_EQ(error_of([]() -> std::string {
              std::raise(SIGSEGV);
              return "unreachable";
            }),
            "it crashed (signal 11, Segmentation fault)");
  EXPECT_EQ(error_of([]() -> std::string { std::abort(); }), "it crashed (signal 6, Aborted)");
  EXPECT_EQ(ug::onnx::run_isolated([] { return std::string("still here"); }), "still here");
}

}  // namespace
