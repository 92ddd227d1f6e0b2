// The programs of one jitted function, one per call signature: every tensor argument's dtype,
// shape and device, the arguments' tree structure and every static argument's value. A call
// whose signature is cached runs its program; any other traces a new one. The cache is
// bounded (least recently used first out), and retracing is visible: past the second trace
// each new one comes with a warning naming the argument that changed, from what to what
// (TensorFlow's retracing pitfall, made loud). The Python and C++ front ends share it.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "ug/compiler/program.h"

namespace ug::compiler {

/** One call's signature: for each argument part, its label ("x", "params['w']", "treedef")
 *  and its description ("float32[32, 784] cpu", "static 3"). */
struct Signature {
  std::vector<std::pair<std::string, std::string>> parts;
  bool operator==(const Signature&) const = default;
};

/** The description of a tensor argument in a signature. */
std::string describe(const Tensor& t);
/** Which of a call's tensor arguments share memory, and how, by their order: "1=0+2 [1]/[1]",
 *  the second shares the first's memory, starting 2 elements past it, strides [1] and [1];
 *  "none" when none do. A trace follows the arguments' memory (a write into one is a write into
 *  the other, the same tensor passed twice is one input), so a program holds only for calls
 *  whose arguments overlap alike. */
std::string aliasing(const std::vector<Tensor>& tensors);
/** aliasing's pairs from the tensors' storages (null: none): (i, j) for each i whose storage an
 *  earlier j has, the first such j. */
std::vector<std::pair<size_t, size_t>> sharing(const std::vector<const void*>& storages);

struct CacheInfo {
  int64_t hits = 0, misses = 0, traces = 0;
  size_t size = 0, capacity = 0;
};

class ProgramCache {
 public:
  /** `name` names the function in messages; capacity is the most programs kept. With
   *  `reduce_retracing` (tf.function's), a trace at a shape that differs from a cached one only
   *  in sizes replaces it by one program for any size in those dims when Program::generalize
   *  allows (its signature shows them as "?": "float32[?, 784]"), and a refusal says why in
   *  the retrace warning. */
  explicit ProgramCache(std::string name, size_t capacity = 8, bool reduce_retracing = false);

  /** The program of this signature, counting a hit (or a miss: nullptr). */
  const Program* find(const Signature& sig);
  /** The signature the program a call of sig runs was traced for: sig itself, or under
   *  reduce_retracing that of a program for any size (nullptr when none is cached). */
  const Signature* traced_for(const Signature& sig) const;
  /** Why a call of this signature would trace ("" when it would hit). */
  std::string why_not(const Signature& sig) const;
  /** Keeps a program traced for sig; returns the retrace warning to give ("" for none). */
  std::string insert(const Signature& sig, Program program);

  /** The tensors the function closes over that a trace held as constants and that were then
   *  written in place (find() dropped the program for it): later traces read them as live
   *  state, as torch.compile lifts such a tensor to an input, so that a tensor written at
   *  every step retraces once rather than at every call. Pass them with the trace's state. */
  const NamedTensors& lifted() const { return lifted_; }

  CacheInfo info() const;
  void clear();
  const std::string& name() const { return name_; }

 private:
  struct Entry {
    Signature traced;   // the signature of the last trace the program came from
    Signature accepts;  // what it runs: traced, with "?" for the sizes it takes any of
    Program program;
    // For each "?" of accepts (by argument, then dim): its sizes in the traces folded in. The
    // graph may read a size from any input dim of that size, so "?"s of equal histories (a
    // batch of features and labels) must be equal in a call: it runs only where they are.
    std::vector<std::string> history;
    std::vector<bool> read;  // for each "?": whether the graph reads its size (Program::read_dims)
    int folds = 1;           // the traces folded in
  };
  /** Whether sig keeps e's "?"s of equal histories equal where the graph reads one of them ("" if
   *  so, else which differ). */
  static std::string ties_broken(const Entry& e, const Signature& sig);
  const Entry* match(const Signature& sig) const;
  /** Under reduce_retracing: folds a program traced for sig into a cached one of another
   *  size; false (and *why) if none can take it. */
  bool generalize(const Signature& sig, const Program& program, std::string* why);

  std::string name_;
  size_t capacity_;
  bool reduce_retracing_;
  std::list<Entry> entries_;  // most recently used first
  std::string stale_;         // why find() last dropped a stale program, until insert() says it
  NamedTensors lifted_;       // see lifted()
  CacheInfo counts_;
};

}  // namespace ug::compiler
