#include "ug/compiler/jit.h"

#include <atomic>
#include <iostream>
#include <utility>

namespace ug {

struct JitFunction::State {
  compiler::Function fn;
  JitOptions options;
  compiler::ProgramCache cache;
};

namespace {

thread_local int t_jit_disabled = -1;  // the innermost DisableJitGuard's setting; -1: none
std::atomic<bool> g_functions_eagerly{false};

compiler::Signature signature_of(const std::vector<Tensor>& inputs) {
  compiler::Signature sig;
  for (size_t i = 0; i < inputs.size(); ++i)
    sig.parts.emplace_back("input " + std::to_string(i), compiler::describe(inputs[i]));
  sig.parts.emplace_back("inputs sharing memory", compiler::aliasing(inputs));
  return sig;
}

}  // namespace

JitFunction::JitFunction(compiler::Function fn, JitOptions options)
    : state_(std::make_shared<State>(
          State{std::move(fn), options,
                compiler::ProgramCache(options.name, options.cache_size, options.reduce_retracing)})) {}

int detail::exchange_jit_disabled(int setting) { return std::exchange(t_jit_disabled, setting); }

DisableJitGuard::DisableJitGuard(bool disable) : previous_(detail::exchange_jit_disabled(disable ? 1 : 0)) {}
DisableJitGuard::~DisableJitGuard() { detail::exchange_jit_disabled(previous_); }

void run_functions_eagerly(bool run_eagerly) { g_functions_eagerly = run_eagerly; }
bool functions_run_eagerly() { return g_functions_eagerly; }
bool jit_disabled() { return t_jit_disabled >= 0 ? t_jit_disabled == 1 : g_functions_eagerly.load(); }

std::vector<Tensor> JitFunction::operator()(const std::vector<Tensor>& inputs) const {
  if (jit_disabled()) return state_->fn(inputs);
  const compiler::Signature sig = signature_of(inputs);
  if (const compiler::Program* program = state_->cache.find(sig)) return (*program)(inputs);
  compiler::NamedTensors state = state_->options.state;
  const compiler::NamedTensors& lifted = state_->cache.lifted();
  state.insert(state.end(), lifted.begin(), lifted.end());
  auto [program, traced] =
      compiler::Program::trace_with_outputs(state_->fn, inputs, state, state_->options.reduce_retracing);
  // A step that writes state took its first step while traced; a pure function's first call
  // runs the program like every later one.
  std::vector<Tensor> out = program.writes_state() ? std::move(traced) : program(inputs);
  if (std::string warning = state_->cache.insert(sig, std::move(program)); !warning.empty()) {
    if (state_->options.on_retrace) state_->options.on_retrace(warning);
    else std::cerr << warning << '\n';
  }
  return out;
}

std::string JitFunction::explain(const std::vector<Tensor>& inputs) const {
  std::string why = state_->cache.why_not(signature_of(inputs));
  return why.empty() ? "hit: a cached program runs" : "miss: " + why;
}

compiler::CacheInfo JitFunction::cache_info() const { return state_->cache.info(); }

JitFunction jit(compiler::Function fn, JitOptions options) { return JitFunction(std::move(fn), std::move(options)); }

train::StepCompiler jit_step_compiler(JitOptions options) {
  return [options](train::StepFunction step, const compiler::NamedTensors& live) {
    JitOptions with_live = options;
    with_live.state.insert(with_live.state.end(), live.begin(), live.end());
    return train::StepFunction(jit(std::move(step), std::move(with_live)));
  };
}

}  // namespace ug
