#include "ug/io/tree_file.h"

#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ug::io {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int kFormatVersion = 1;

// ---- saving -------------------------------------------------------------------------------

bool is_flat(const Tree& tree) {
  if (!tree.is_dict()) return false;
  for (const auto& [key, value] : tree.entries())
    if (!std::holds_alternative<std::string>(key) || value.kind() != Tree::Kind::Tensor) return false;
  return true;
}

/** The tensors of a tree, in depth-first order, under their path names. */
void collect(const Tree& t, const std::string& path, int depth, std::vector<std::pair<std::string, Tensor>>& out) {
  auto child_path = [&](const std::string& part) { return depth == 0 ? part : path + "." + part; };
  switch (t.kind()) {
    case Tree::Kind::Tensor: out.emplace_back(path, t.as_tensor()); return;
    case Tree::Kind::List:
    case Tree::Kind::Tuple:
    case Tree::Kind::Dict:
      if (depth >= kMaxTreeDepth)
        fail<ValueError>("[save] the tree nests containers deeper than ", kMaxTreeDepth, " levels (at '", path, "')");
      if (t.is_dict()) {
        for (const auto& [key, value] : t.entries()) collect(value, child_path(key_to_string(key)), depth + 1, out);
      } else {
        for (size_t i = 0; i < t.items().size(); ++i)
          collect(t.items()[i], child_path(std::to_string(i)), depth + 1, out);
      }
      return;
    default: return;
  }
}

/** Path names made unique: a name shared by several tensors (or reserved) gets "#k" on each. */
void give_unique_names(std::vector<std::pair<std::string, Tensor>>& named) {
  std::map<std::string, int> count;
  for (const auto& [name, t] : named) ++count[name];
  std::map<std::string, int> taken = count;
  for (auto& [name, t] : named) {
    if (count[name] == 1 && name != "__metadata__") continue;
    std::string unique;
    for (int k = 1; taken.count(unique = name + "#" + std::to_string(k)); ++k) {}
    taken[unique] = 1;
    name = std::move(unique);
  }
}

ordered_json skeleton(const Tree& t, const std::vector<std::pair<std::string, Tensor>>& named, size_t& next) {
  switch (t.kind()) {
    case Tree::Kind::None: return nullptr;
    case Tree::Kind::Bool: return t.as_bool();
    case Tree::Kind::Int: return t.as_int();
    case Tree::Kind::Float: {
      double v = t.as_double();
      if (std::isnan(v)) return {{"float", "nan"}};
      if (std::isinf(v)) return {{"float", v > 0 ? "inf" : "-inf"}};
      return v;
    }
    case Tree::Kind::String: return t.as_string();
    case Tree::Kind::Tensor: return {{"tensor", named[next++].first}};
    case Tree::Kind::List:
    case Tree::Kind::Tuple: {
      ordered_json items = ordered_json::array();
      for (const Tree& item : t.items()) items.push_back(skeleton(item, named, next));
      if (t.kind() == Tree::Kind::List) return items;
      return {{"tuple", std::move(items)}};
    }
    case Tree::Kind::Dict: {
      ordered_json entries = ordered_json::array();
      for (const auto& [key, value] : t.entries()) {
        ordered_json k = std::holds_alternative<int64_t>(key) ? ordered_json(std::get<int64_t>(key))
                                                              : ordered_json(std::get<std::string>(key));
        entries.push_back(ordered_json::array({std::move(k), skeleton(value, named, next)}));
      }
      return {{"dict", std::move(entries)}};
    }
  }
  return nullptr;
}

/** The tensors and metadata that represent a tree in a safetensors file. */
std::pair<TensorDict, Metadata> flatten(const Tree& tree, const Metadata& metadata) {
  if (metadata.count(kTreeMetadataKey))
    fail<ValueError>("[save] the metadata key '", kTreeMetadataKey, "' is reserved for the tree's structure");
  if (is_flat(tree)) return {tree.as_tensor_dict(), metadata};
  std::vector<std::pair<std::string, Tensor>> named;
  collect(tree, "", 0, named);
  give_unique_names(named);
  size_t next = 0;
  Metadata meta = metadata;
  try {
    meta[kTreeMetadataKey] = ordered_json{{"version", kFormatVersion}, {"root", skeleton(tree, named, next)}}.dump();
  } catch (const json::exception& e) {
    fail<ValueError>("[save] a string or dict key in the tree is not valid UTF-8: ", e.what());
  }
  TensorDict tensors;
  for (auto& [name, t] : named) tensors.insert(name, std::move(t));
  return {std::move(tensors), std::move(meta)};
}

// ---- loading ------------------------------------------------------------------------------

/** Rebuilds the tree from its skeleton, taking each tensor from the table once. */
class Unflattener {
 public:
  Unflattener(std::string source, TensorDict& tensors) : source_(std::move(source)) {
    for (auto& [name, t] : tensors) table_.emplace(name, Slot{std::move(t), false});
  }

  Tree node(const json& j, int depth) {
    switch (j.type()) {
      case json::value_t::null: return Tree();
      case json::value_t::boolean: return j.get<bool>();
      case json::value_t::number_integer: return j.get<int64_t>();
      case json::value_t::number_unsigned: {
        uint64_t v = j.get<uint64_t>();
        if (v > uint64_t(std::numeric_limits<int64_t>::max())) bad("the integer ", v, " does not fit in 64 bits");
        return static_cast<int64_t>(v);
      }
      case json::value_t::number_float: return j.get<double>();
      case json::value_t::string: return j.get<std::string>();
      case json::value_t::array: return Tree::list(sequence(j, depth));
      case json::value_t::object: return tagged(j, depth);
      default: bad("unexpected JSON value ", brief(j));
    }
  }

  /** Every tensor of the file belongs somewhere in the tree. */
  void check_all_used() const {
    for (const auto& [name, slot] : table_)
      if (!slot.used) bad("tensor '", name, "' is in the file but not in the tree");
  }

 private:
  struct Slot {
    Tensor tensor;
    bool used;
  };

  template <class... Args> [[noreturn]] void bad(const Args&... args) const {
    fail<ValueError>("[load] '", source_, "': bad '", kTreeMetadataKey, "' metadata: ", args...);
  }

  static std::string brief(const json& j) {
    std::string s = j.dump();
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
  }

  void enter(int depth) const {
    if (depth >= kMaxTreeDepth) bad("containers nest deeper than ", kMaxTreeDepth, " levels");
  }

  Tree::List sequence(const json& j, int depth) {
    enter(depth);
    Tree::List items;
    items.reserve(j.size());
    for (const json& item : j) items.push_back(node(item, depth + 1));
    return items;
  }

  Tree tagged(const json& j, int depth) {
    if (j.size() != 1) bad("expected an object with one of \"float\", \"tuple\", \"dict\", \"tensor\", got ", brief(j));
    const auto only = j.begin();
    const std::string& tag = only.key();
    const json& body = only.value();
    if (tag == "float") {
      if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (body == "inf") return std::numeric_limits<double>::infinity();
      if (body == "-inf") return -std::numeric_limits<double>::infinity();
      bad("a \"float\" node holds ", brief(body), ", not \"nan\", \"inf\" or \"-inf\"");
    }
    if (tag == "tuple") {
      if (!body.is_array()) bad("a \"tuple\" node holds ", brief(body), ", not a list");
      return Tree::tuple(sequence(body, depth));
    }
    if (tag == "dict") return dict(body, depth);
    if (tag == "tensor") {
      if (!body.is_string()) bad("a \"tensor\" node holds ", brief(body), ", not a tensor name");
      auto it = table_.find(body.get<std::string>());
      if (it == table_.end()) bad("it refers to tensor ", body.dump(), ", which the file does not hold");
      if (it->second.used) bad("it refers to tensor ", body.dump(), " more than once");
      it->second.used = true;
      return std::move(it->second.tensor);
    }
    bad("unknown node kind \"", tag, "\" (a newer file format?)");
  }

  Tree dict(const json& body, int depth) {
    enter(depth);
    if (!body.is_array()) bad("a \"dict\" node holds ", brief(body), ", not a list of [key, value] pairs");
    Tree out = Tree::dict();
    out.entries().reserve(body.size());
    std::unordered_map<std::string, bool> seen_str;
    std::unordered_map<int64_t, bool> seen_int;
    for (const json& pair : body) {
      if (!pair.is_array() || pair.size() != 2) bad("a dict entry is ", brief(pair), ", not a [key, value] pair");
      const json& k = pair[0];
      Tree::Key key;
      if (k.is_string()) {
        key = k.get<std::string>();
        if (!seen_str.emplace(k.get<std::string>(), true).second) bad("dict key ", k.dump(), " appears twice");
      } else if (k.is_number_integer() && !(k.is_number_unsigned() && k.get<uint64_t>() > uint64_t(INT64_MAX))) {
        key = k.get<int64_t>();
        if (!seen_int.emplace(k.get<int64_t>(), true).second) bad("dict key ", k.dump(), " appears twice");
      } else {
        bad("dict key ", brief(k), " is neither a string nor a 64-bit integer");
      }
      out.entries().emplace_back(std::move(key), node(pair[1], depth + 1));
    }
    return out;
  }

  std::string source_;
  std::unordered_map<std::string, Slot> table_;
};

Tree unflatten(const std::string& source, TensorDict tensors, const Metadata& metadata) {
  auto entry = metadata.find(kTreeMetadataKey);
  if (entry == metadata.end()) return Tree(tensors);
  Unflattener u(source, tensors);
  auto bad = [&](const auto&... args) {
    fail<ValueError>("[load] '", source, "': bad '", kTreeMetadataKey, "' metadata: ", args...);
  };
  // JSON nesting is bounded while parsing, before a hostile file can build a deep document:
  // each tree level takes at most three JSON levels ({"dict": [[key, value]]}).
  const int max_json_depth = 3 * kMaxTreeDepth + 2;
  json doc;
  try {
    doc = json::parse(entry->second, [&](int depth, json::parse_event_t event, json&) {
      if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
          depth > max_json_depth)
        bad("containers nest deeper than ", kMaxTreeDepth, " levels");
      return true;
    });
  } catch (const json::exception& e) {
    bad("not valid JSON: ", e.what());
  }
  if (!doc.is_object() || !doc.contains("version") || !doc.contains("root"))
    bad("expected {\"version\": ", kFormatVersion, ", \"root\": ...}");
  if (doc["version"] != kFormatVersion)
    bad("format version ", doc["version"].dump(), " is not ", kFormatVersion, " (written by a newer unigrad?)");
  Tree root = u.node(doc["root"], 0);
  u.check_all_used();
  return root;
}

}  // namespace

void save(const Tree& tree, const std::string& path, const Metadata& metadata) {
  auto [tensors, meta] = flatten(tree, metadata);
  save_file(tensors, path, meta);
}

std::string save_tree_bytes(const Tree& tree, const Metadata& metadata) {
  auto [tensors, meta] = flatten(tree, metadata);
  return save_bytes(tensors, meta);
}

Tree load(const std::string& path) {
  Metadata metadata;
  TensorDict tensors = load_file(path, &metadata);
  return unflatten(path, std::move(tensors), metadata);
}

Tree load_tree_bytes(std::string_view data) {
  Metadata metadata;
  TensorDict tensors = load_bytes(data, &metadata);
  return unflatten("<bytes>", std::move(tensors), metadata);
}

}  // namespace ug::io
