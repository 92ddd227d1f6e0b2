// ug::jit: a function compiled on first call for each signature (the tensors' dtypes, shapes and
// devices), as jax.jit, with the bounded, visible retracing of ug/compiler/cache.h.
//
//   auto step = ug::jit([&](const std::vector<ug::Tensor>& xs) { return std::vector{loss(xs[0], xs[1])}; });
//   auto out = step({x, y});   // traces, then runs the program; later calls only run it
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ug/compiler/cache.h"
#include "ug/compiler/program.h"
#include "ug/train/trainer.h"

namespace ug {

struct JitOptions {
  /** Names the function in retrace warnings. */
  std::string name = "function";
  /** The most programs kept for the function. */
  size_t cache_size = 8;
  /** Tensors read live at every run (a module's named parameters and buffers). */
  compiler::NamedTensors state;
  /** tf.function's reduce_retracing: one program for any size in dims that change between
   *  calls, where two traces show nothing depends on them (ProgramCache). */
  bool reduce_retracing = false;
  /** Receives each retrace warning; by default it is written to standard error. */
  std::function<void(const std::string&)> on_retrace;
};

class JitFunction {
 public:
  JitFunction(compiler::Function fn, JitOptions options);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  /** Whether a call on these inputs runs a cached program, and if not, why. */
  std::string explain(const std::vector<Tensor>& inputs) const;
  compiler::CacheInfo cache_info() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // copies share one cache
};

JitFunction jit(compiler::Function fn, JitOptions options = {});

/** jax.disable_jit: while one is alive on this thread, jitted functions (ug::jit, and Python's
 *  ug.jit, ug.function and ug.compile) call their function op by op instead of a program, for
 *  debugging; nothing is traced or cached. DisableJitGuard(false) compiles again inside an outer
 *  one. */
class DisableJitGuard {
 public:
  explicit DisableJitGuard(bool disable = true);
  ~DisableJitGuard();
  DisableJitGuard(const DisableJitGuard&) = delete;
  DisableJitGuard& operator=(const DisableJitGuard&) = delete;

 private:
  int previous_;
};

/** tf.config.run_functions_eagerly: the same as a DisableJitGuard on every thread, where none is
 *  alive. */
void run_functions_eagerly(bool run_eagerly);
bool functions_run_eagerly();
/** Whether jitted functions run eagerly on this thread now (the guards, else the global setting). */
bool jit_disabled();

namespace detail {
/** This thread's innermost DisableJitGuard setting (-1: none), replaced; returns the previous
 *  one. (Python's disable_jit, a context manager, holds no C++ guard.) */
int exchange_jit_disabled(int setting);
}  // namespace detail

/** Compiles Keras's training step (train::CompileOptions::jit_compile) with ug::jit:
 *  trainer.compile({..., .jit_compile = ug::jit_step_compiler()}). */
train::StepCompiler jit_step_compiler(JitOptions options = {.name = "train_step"});

}  // namespace ug
