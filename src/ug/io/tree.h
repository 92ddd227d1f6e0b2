// ug::io::Tree: a nested value as Python programs save them (torch.save's habit): None, bools,
// ints, floats, strings, tensors, lists, tuples and dicts keyed by strings or ints, nested to
// any depth. Checkpoints ({"model": ..., "optimizer": ..., "epoch": 3}) are trees; io::save
// writes one to a safetensors file (tree_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ug/core/tensor.h"
#include "ug/core/ordered_dict.h"

namespace ug::io {

class Tree {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Tensor, List, Tuple, Dict };
  /** A dict key: torch's optimizer state is keyed by parameter index, everything else by name. */
  using Key = std::variant<int64_t, std::string>;
  using List = std::vector<Tree>;
  /** Insertion-ordered; keys are unique (set() replaces, the loaders reject duplicates). */
  using Dict = std::vector<std::pair<Key, Tree>>;

  Tree() = default;
  Tree(std::nullptr_t) {}
  Tree(bool v) : kind_(Kind::Bool), value_(v) {}
  Tree(int v) : Tree(int64_t{v}) {}
  Tree(int64_t v) : kind_(Kind::Int), value_(v) {}
  Tree(double v) : kind_(Kind::Float), value_(v) {}
  Tree(std::string v) : kind_(Kind::String), value_(std::move(v)) {}
  Tree(const char* v) : Tree(std::string(v)) {}
  /** Throws ValueError for an undefined tensor. */
  Tree(Tensor v);
  /** A dict of name -> tensor (a state_dict). */
  Tree(const OrderedDict<Tensor>& tensors);
  static Tree list(List items = {});
  static Tree tuple(List items = {});
  static Tree dict(Dict items = {});

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }

  // The accessors throw TypeError naming the kind found when it is another.
  bool as_bool() const;
  int64_t as_int() const;
  /** A float, or an int converted. */
  double as_double() const;
  const std::string& as_string() const;
  const Tensor& as_tensor() const;
  /** The items of a list or tuple. */
  const List& items() const;
  List& items();
  const Dict& entries() const;
  Dict& entries();
  /** A dict of name -> tensor back as one (TypeError on other keys or values). */
  OrderedDict<Tensor> as_tensor_dict() const;

  /** Dict lookup: nullptr when absent. */
  const Tree* find(const Key& key) const;
  Tree* find(const Key& key);
  /** Dict lookup: ValueError naming the key when absent. */
  const Tree& at(const Key& key) const;
  /** Adds or replaces a dict entry (keeping its position); returns the stored value. */
  Tree& set(Key key, Tree value);
  /** Appends to a list or tuple. */
  void push_back(Tree value);
  /** Entries of a dict, items of a list or tuple, 0 otherwise. */
  size_t size() const;

 private:
  Kind kind_ = Kind::None;
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, List, Dict> value_;
};

/** "None", "int", "dict", ...: Python's names, for error messages. */
std::string_view kind_name(Tree::Kind kind);
/** A key as it prints in messages and tensor names: the string, or the decimal int. */
std::string key_to_string(const Tree::Key& key);

}  // namespace ug::io
