#include "ug/io/tree.h"

namespace ug::io {
namespace {

[[noreturn]] void wrong_kind(Tree::Kind found, std::string_view expected) {
  fail<TypeError>("[io.Tree] expected ", expected, ", got ", kind_name(found));
}

}  // namespace

std::string_view kind_name(Tree::Kind kind) {
  switch (kind) {
    case Tree::Kind::None: return "None";
    case Tree::Kind::Bool: return "bool";
    case Tree::Kind::Int: return "int";
    case Tree::Kind::Float: return "float";
    case Tree::Kind::String: return "str";
    case Tree::Kind::Tensor: return "Tensor";
    case Tree::Kind::List: return "list";
    case Tree::Kind::Tuple: return "tuple";
    case Tree::Kind::Dict: return "dict";
  }
  return "?";
}

std::string key_to_string(const Tree::Key& key) {
  if (const int64_t* i = std::get_if<int64_t>(&key)) return std::to_string(*i);
  return std::get<std::string>(key);
}

Tree::Tree(Tensor v) : kind_(Kind::Tensor), value_(std::move(v)) {
  if (!std::get<Tensor>(value_).defined()) fail<ValueError>("[io.Tree] a tree cannot hold an undefined tensor");
}

Tree::Tree(const OrderedDict<Tensor>& tensors) : kind_(Kind::Dict), value_(Dict{}) {
  Dict& d = std::get<Dict>(value_);
  d.reserve(tensors.size());
  for (const auto& [name, t] : tensors) d.emplace_back(name, Tree(t));
}

Tree Tree::list(List items) {
  Tree t;
  t.kind_ = Kind::List;
  t.value_ = std::move(items);
  return t;
}

Tree Tree::tuple(List items) {
  Tree t = list(std::move(items));
  t.kind_ = Kind::Tuple;
  return t;
}

Tree Tree::dict(Dict items) {
  Tree t;
  t.kind_ = Kind::Dict;
  t.value_ = std::move(items);
  return t;
}

bool Tree::as_bool() const {
  if (kind_ != Kind::Bool) wrong_kind(kind_, "a bool");
  return std::get<bool>(value_);
}

int64_t Tree::as_int() const {
  if (kind_ != Kind::Int) wrong_kind(kind_, "an int");
  return std::get<int64_t>(value_);
}

double Tree::as_double() const {
  if (kind_ == Kind::Int) return static_cast<double>(std::get<int64_t>(value_));
  if (kind_ != Kind::Float) wrong_kind(kind_, "a number");
  return std::get<double>(value_);
}

const std::string& Tree::as_string() const {
  if (kind_ != Kind::String) wrong_kind(kind_, "a str");
  return std::get<std::string>(value_);
}

const Tensor& Tree::as_tensor() const {
  if (kind_ != Kind::Tensor) wrong_kind(kind_, "a Tensor");
  return std::get<Tensor>(value_);
}

const Tree::List& Tree::items() const {
  if (!is_sequence()) wrong_kind(kind_, "a list or tuple");
  return std::get<List>(value_);
}

Tree::List& Tree::items() { return const_cast<List&>(std::as_const(*this).items()); }

const Tree::Dict& Tree::entries() const {
  if (kind_ != Kind::Dict) wrong_kind(kind_, "a dict");
  return std::get<Dict>(value_);
}

Tree::Dict& Tree::entries() { return const_cast<Dict&>(std::as_const(*this).entries()); }

OrderedDict<Tensor> Tree::as_tensor_dict() const {
  OrderedDict<Tensor> out;
  for (const auto& [key, value] : entries()) {
    const std::string* name = std::get_if<std::string>(&key);
    if (!name)
      fail<TypeError>("[io.Tree] expected a dict of name -> Tensor, but key ", key_to_string(key), " is an int");
    if (value.kind() != Kind::Tensor)
      fail<TypeError>("[io.Tree] expected a dict of name -> Tensor, but '", *name, "' is a ", kind_name(value.kind()));
    out.insert(*name, value.as_tensor());
  }
  return out;
}

const Tree* Tree::find(const Key& key) const {
  for (const auto& [k, v] : entries())
    if (k == key) return &v;
  return nullptr;
}

Tree* Tree::find(const Key& key) { return const_cast<Tree*>(std::as_const(*this).find(key)); }

const Tree& Tree::at(const Key& key) const {
  if (const Tree* v = find(key)) return *v;
  fail<ValueError>("[io.Tree] no entry '", key_to_string(key), "'");
}

Tree& Tree::set(Key key, Tree value) {
  if (Tree* v = find(key)) return *v = std::move(value);
  return entries().emplace_back(std::move(key), std::move(value)).second;
}

void Tree::push_back(Tree value) { items().push_back(std::move(value)); }

size_t Tree::size() const {
  if (kind_ == Kind::Dict) return std::get<Dict>(value_).size();
  if (is_sequence()) return std::get<List>(value_).size();
  return 0;
}

}  // namespace ug::io
