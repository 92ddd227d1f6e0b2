// An insertion-ordered map with string keys: a module's parameters, buffers and children,
// and state dicts. Modules hold a handful of entries, so lookup is a linear scan; a list
// keeps references to values valid while others are added or removed.
#pragma once

#include <list>
#include <string>
#include <utility>
#include <vector>

#include "ug/core/error.h"

namespace ug {

template <class V> class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& it : items) insert(it.first, it.second);
  }

  /** Adds key, or replaces its value in place (keeping its position). */
  V& insert(const std::string& key, V value) {
    if (V* v = find(key)) return *v = std::move(value);
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }
  V* find(const std::string& key) {
    for (Item& it : items_)
      if (it.first == key) return &it.second;
    return nullptr;
  }
  const V* find(const std::string& key) const { return const_cast<OrderedDict*>(this)->find(key); }
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  V& at(const std::string& key) {
    if (V* v = find(key)) return *v;
    fail<IndexError>("[OrderedDict] no key '", key, "'");
  }
  const V& at(const std::string& key) const { return const_cast<OrderedDict*>(this)->at(key); }
  V& operator[](const std::string& key) { return at(key); }
  const V& operator[](const std::string& key) const { return at(key); }
  bool erase(const std::string& key) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) {
        items_.erase(it);
        return true;
      }
    return false;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const Item& it : items_) out.push_back(it.first);
    return out;
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::list<Item> items_;
};

}  // namespace ug
