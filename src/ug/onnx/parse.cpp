// ONNX protobuf bytes -> onnx::Graph, with every check a hostile file needs before anything is
// allocated or run: sizes against the bytes actually present, external data confined to the
// model's folder, values produced once and before use, supported ops and opsets.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "ug/core/file_bytes.h"
#include "ug/onnx/graph.h"
#include "ug/onnx/isolated.h"
#include "ug/onnx/op_table.h"

namespace ug::onnx {
namespace {

namespace fs = std::filesystem;

// Up to the newest opset (onnx 1.23's): since 21 the ops of the table only gained element types,
// except those check_node refuses from the opset that changed them.
constexpr int64_t kMinOpset = 13, kMaxOpset = 28;
constexpr int kMaxRank = 64;
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int kMaxGraphDepth = 16;

constexpr std::array<std::string_view, 24> kTypeNames = {
    "UNDEFINED", "FLOAT",        "UINT8",          "INT8",       "UINT16",         "INT16",  "INT32",     "INT64",
    "STRING",    "BOOL",         "FLOAT16",        "DOUBLE",     "UINT32",         "UINT64", "COMPLEX64", "COMPLEX128",
    "BFLOAT16",  "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",  "INT4",      "FLOAT4E2M1"};

std::string type_name(int64_t t) {
  if (t >= 0 && t < static_cast<int64_t>(kTypeNames.size())) return std::string(kTypeNames[static_cast<size_t>(t)]);
  return "type " + std::to_string(t);
}

/** Element count and byte size of `dims`, refusing negative, huge or overflowing sizes. */
std::pair<int64_t, size_t> checked_size(const google::protobuf::RepeatedField<int64_t>& dims, DType dtype,
                                        std::string_view what) {
  if (dims.size() > kMaxRank) fail("[onnx] ", what, " has ", dims.size(), " dims (at most ", kMaxRank, ")");
  // The nonzero dims are bounded too: a tensor's strides multiply them even when a 0 dim
  // leaves it empty.
  int64_t numel = 1, span = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxDim) fail("[onnx] ", what, " has a dim of ", d, " (dims must be in [0, 2^40])");
    numel *= d;
    if (__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span) || span > kMaxDim)
      fail("[onnx] ", what, ": its dims multiply past 2^40 elements");
  }
  return {numel, static_cast<size_t>(numel) * itemsize(dtype)};
}

int64_t parse_count(const std::string& text, std::string_view key, std::string_view what) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    fail("[onnx] ", what, ": external data ", key, " \"", text, "\" is not a byte count");
  return v;
}

/** The file an external-data `location` names, inside base_dir (symlinks resolved). */
fs::path external_file(const std::string& location, const std::string& base_dir, std::string_view what) {
  if (base_dir.empty())
    fail("[onnx] ", what, " keeps its data in an external file (\"", location,
         "\"); load the model from its path so that the file can be found");
  if (location.empty() || location.find('\0') != std::string::npos)
    fail("[onnx] ", what, ": external data has no valid location");
  const fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    fail("[onnx] ", what, ": external data location \"", location,
         "\" is absolute; it must be relative to the model's folder");
  for (const auto& part : loc)
    if (part == "..") fail("[onnx] ", what, ": external data location \"", location, "\" leaves the model's folder");
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) fail<FileNotFoundError>("[onnx] the model's folder ", base_dir, " cannot be opened: ", ec.message());
  const fs::path file = fs::canonical(base / loc, ec);
  if (ec) fail<FileNotFoundError>("[onnx] ", what, ": external data file ", (base / loc).string(), ": ", ec.message());
  auto [b, f] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (b != base.end())
    fail("[onnx] ", what, ": external data location \"", location, "\" resolves to ", file.string(),
         ", outside the model's folder");
  if (!fs::is_regular_file(file, ec))
    fail("[onnx] ", what, ": external data ", file.string(), " is not a regular file");
  return file;
}

void read_external(const ::onnx::TensorProto& t, const std::string& base_dir, size_t nbytes, void* out,
                   std::string_view what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_count(kv.value(), "offset", what);
    else if (kv.key() == "length") length = parse_count(kv.value(), "length", what);
  }
  const fs::path file = external_file(location, base_dir, what);
  std::error_code ec;
  const auto file_size = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec) fail("[onnx] ", what, ": cannot size external data ", file.string(), ": ", ec.message());
  if (length >= 0 && static_cast<size_t>(length) != nbytes)
    fail("[onnx] ", what, ": external data length ", length, " does not match its dims and dtype (", nbytes, " bytes)");
  if (offset > file_size || static_cast<int64_t>(nbytes) > file_size - offset)
    fail("[onnx] ", what, ": external data [", offset, ", ", offset + static_cast<int64_t>(nbytes),
         ") runs past the end of ", file.string(), " (", file_size, " bytes)");
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(nbytes));
  if (!in) fail("[onnx] ", what, ": reading external data from ", file.string(), " failed");
}

/** Copies a typed repeated field into the tensor's elements, converting each. */
template <class Dst, class Field>
void copy_field(const Field& field, int64_t numel, const Tensor& out, std::string_view field_name,
                std::string_view what) {
  if (field.size() != numel)
    fail("[onnx] ", what, " has ", field.size(), " values in ", field_name, ", its dims say ", numel);
  Dst* dst = static_cast<Dst*>(out.raw_data());
  for (int64_t i = 0; i < numel; ++i) {
    if constexpr (std::is_same_v<Dst, Half> || std::is_same_v<Dst, BFloat16>) {
      dst[i].bits = static_cast<uint16_t>(field.Get(static_cast<int>(i)));  // int32_data holds the bits
    } else {
      dst[i] = static_cast<Dst>(field.Get(static_cast<int>(i)));
    }
  }
}

Tensor read_tensor(const ::onnx::TensorProto& t, const std::string& base_dir, std::string_view what) {
  const DType dtype = dtype_from_onnx(t.data_type(), what);
  if (t.has_segment()) fail("[onnx] ", what, " is segmented, which is not supported");
  auto [numel, nbytes] = checked_size(t.dims(), dtype, what);
  Dims dims(t.dims().begin(), t.dims().end());
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    Tensor out = empty(dims, {.dtype = dtype});
    read_external(t, base_dir, nbytes, out.raw_data(), what);
    canonicalize_read_bytes(out);
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      fail("[onnx] ", what, " has ", t.raw_data().size(), " bytes of raw data, its dims and dtype say ", nbytes);
    Tensor out = empty(dims, {.dtype = dtype});
    if (nbytes) std::memcpy(out.raw_data(), t.raw_data().data(), nbytes);
    canonicalize_read_bytes(out);
    return out;
  }
  // The typed fields hold at most as many values as the file has bytes: checking the count
  // against them before allocating bounds the allocation by the file's size.
  const int64_t present =
      t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size() + t.uint64_data_size();
  if (present != numel) fail("[onnx] ", what, " has ", present, " values, its dims say ", numel);
  Tensor out = empty(dims, {.dtype = dtype});
  switch (dtype) {
    case DType::Float32: copy_field<float>(t.float_data(), numel, out, "float_data", what); break;
    case DType::Float64: copy_field<double>(t.double_data(), numel, out, "double_data", what); break;
    case DType::Int64: copy_field<int64_t>(t.int64_data(), numel, out, "int64_data", what); break;
    case DType::Int32: copy_field<int32_t>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::UInt8: copy_field<uint8_t>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::Int8: copy_field<int8_t>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::Int16: copy_field<int16_t>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::UInt16: copy_field<uint16_t>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::UInt32: copy_field<uint32_t>(t.uint64_data(), numel, out, "uint64_data", what); break;
    case DType::UInt64: copy_field<uint64_t>(t.uint64_data(), numel, out, "uint64_data", what); break;
    case DType::Bool: copy_field<bool>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::Float16: copy_field<Half>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::BFloat16: copy_field<BFloat16>(t.int32_data(), numel, out, "int32_data", what); break;
    case DType::Complex64:
    case DType::Complex128: fail<TypeError>("[onnx] ", what, ": complex tensors are read from raw_data only");
  }
  return out;
}

ValueInfo read_value_info(const ::onnx::ValueInfoProto& v, std::string_view kind, bool& has_shape) {
  const std::string what = std::string(kind) + " '" + v.name() + "'";
  if (!v.type().has_tensor_type())
    fail<TypeError>("[onnx] ", what, " is not a tensor (sequences, maps and optionals are not supported)");
  const auto& tt = v.type().tensor_type();
  ValueInfo info{v.name(), {}, dtype_from_onnx(tt.elem_type(), what)};
  has_shape = tt.has_shape();
  if (tt.shape().dim_size() > kMaxRank)
    fail("[onnx] ", what, " has ", tt.shape().dim_size(), " dims (at most ", kMaxRank, ")");
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) fail("[onnx] ", what, " has a negative dim ", d.dim_value());
    info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return info;
}

/** A subgraph's input or output: ONNX lets it leave its type out (it is then the op's to check),
 *  but not be a sequence, map or optional. */
ValueInfo read_subgraph_value_info(const ::onnx::ValueInfoProto& v, std::string_view kind) {
  if (!v.has_type() || (v.type().has_tensor_type() && !v.type().tensor_type().has_elem_type()))
    return {v.name(), {}, DType::Float32};
  bool has_shape = false;
  return read_value_info(v, kind, has_shape);
}

int64_t default_opset(const ::onnx::ModelProto& model) {
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) fail("[onnx] the model imports no opset of the default ONNX domain");
  if (opset > kMaxOpset)
    fail("[onnx] opset ", opset, " is not supported (ug.onnx reads opsets ", kMinOpset, " to ", kMaxOpset, ")");
  return opset;
}

/** What libonnx's checker lets through but its shape inference and version converter crash on
 *  (a SIGFPE or a null dereference, not an error), refused by name before they run: a stride,
 *  dilation or kernel size under 1 in the older convolutions and poolings, and a graph output that
 *  nothing in its graph or the graphs around it defines. `outer` holds the names the enclosing
 *  graphs define. The crashes no check here foresees end only the child process of run_isolated. */
template <class Nodes> void check_window_attributes(const Nodes& nodes) {
  for (const auto& node : nodes)
    for (const auto& a : node.attribute())
      if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape")
        for (int64_t v : a.ints())
          if (v < 1)
            fail("[onnx] node '", node.name(), "' (", node.op_type(), ") has ", a.name(), " holding ", v,
                 "; each must be at least 1");
}

void check_for_libonnx(const ::onnx::GraphProto& g, std::unordered_set<std::string> outer) {
  check_window_attributes(g.node());
  for (const auto& v : g.input()) outer.insert(v.name());
  for (const auto& t : g.initializer()) outer.insert(t.name());
  for (const auto& node : g.node()) outer.insert(node.output().begin(), node.output().end());
  for (const auto& v : g.output())
    if (!outer.count(v.name()))
      fail("[onnx] graph '", g.name(), "' has output '", v.name(), "', which no node, input or initializer defines");
  for (const auto& node : g.node())
    for (const auto& a : node.attribute()) {
      if (a.has_g()) check_for_libonnx(a.g(), outer);
      for (const auto& sub : a.graphs()) check_for_libonnx(sub, outer);
    }
}

/** A model of an opset before kMinOpset rewritten to kMinOpset by ONNX's own version converter,
 *  whose adapters rewrite each node whose op changed in between. The converter trusts its input,
 *  so ONNX's checker sees the model first; and neither it nor the shape inference is safe on every
 *  model the checker passes, so the three run in a child process. */
::onnx::ModelProto convert_to_min_opset(::onnx::ModelProto model, int64_t opset) {
  // Tools write old opsets under new IR versions, which libonnx's checker refuses as newer than
  // itself; no op of these opsets takes what the newer IR versions added (new element types).
  model.set_ir_version(std::min<int64_t>(model.ir_version(), ::onnx::IR_VERSION));
  check_for_libonnx(model.graph(), {});
  for (const auto& f : model.functions()) check_window_attributes(f.node());
  // libonnx builds its op schemas on first use; built here, in the parent, each child inherits
  // them instead of building them again (a small opset-9 model loads in 6 ms instead of 17).
  ::onnx::OpSchemaRegistry::Schema("Conv");
  try {
    std::string converted = run_isolated([&model] {
      ::onnx::checker::check_model(model);
      // Some adapters read their input's shape (Softmax 12 -> 13 its rank), which libonnx's
      // converter, unlike onnx's newer ones, does not infer first.
      ::onnx::shape_inference::InferShapes(model);
      return ::onnx::version_conversion::ConvertVersion(model, static_cast<int>(kMinOpset)).SerializeAsString();
    });
    ::onnx::ModelProto result;
    if (!result.ParseFromString(converted)) throw std::runtime_error("the converted model does not parse");
    return result;
  } catch (const std::exception& e) {
    fail("[onnx] opset ", opset, " is not supported (ug.onnx reads opsets ", kMinOpset, " to ", kMaxOpset,
         "), and ONNX's checker and version converter could not bring the model to opset ", kMinOpset, ": ",
         std::string_view(e.what()).substr(0, 500));
  }
}

/** Reads one graph: the model's, or a subgraph (the body of an If, Loop or Scan), which may read
 *  the values of the graphs around it by name. */
class GraphParser {
 public:
  /** `outer` parses the graph around this one, whose node `outer_node` has it as an attribute. */
  GraphParser(Graph& graph, const std::string& base_dir, GraphParser* outer, Node* outer_node,
              const std::unordered_map<std::string, const Tensor*>& held)
      : graph_(graph),
        base_dir_(base_dir),
        held_(held),
        outer_(outer),
        outer_node_(outer_node),
        depth_(outer ? outer->depth_ + 1 : 0) {
    if (depth_ > kMaxGraphDepth) fail("[onnx] subgraphs are nested over ", kMaxGraphDepth, " deep");
  }

  void parse(const ::onnx::GraphProto& g);

 private:
  int64_t produce(const std::string& name, const std::string& by);
  /** The id of value `name` in this graph, taking it from the enclosing graphs when it is theirs
   *  (each graph in between then reads it as an implicit input of its node); -1 when none has it. */
  int64_t resolve(const std::string& name);
  Attribute read_attribute(const ::onnx::AttributeProto& a, Node& node, const std::string& what);
  /** The tensor of held_ an initializer located at kHeldLocation names, checked against its
   *  dtype and dims; nullopt for an initializer with data of its own. */
  std::optional<Tensor> held_initializer(const ::onnx::TensorProto& t, const std::string& what) const;

  Graph& graph_;
  const std::string& base_dir_;
  const std::unordered_map<std::string, const Tensor*>& held_;  // the root graph's (parse_model's `held`)
  GraphParser* outer_;
  Node* outer_node_;
  int depth_;
  std::unordered_map<std::string, int64_t> ids_;
};

int64_t GraphParser::produce(const std::string& name, const std::string& by) {
  if (name.empty()) fail("[onnx] ", by, " has an empty name");
  if (!ids_.emplace(name, static_cast<int64_t>(graph_.value_names.size())).second)
    fail("[onnx] value '", name, "' is produced twice (again by ", by, ")");
  graph_.value_names.push_back(name);
  return ids_.at(name);
}

std::optional<Tensor> GraphParser::held_initializer(const ::onnx::TensorProto& t, const std::string& what) const {
  if (t.data_location() != ::onnx::TensorProto::EXTERNAL || t.external_data_size() != 1 ||
      t.external_data(0).value() != kHeldLocation)
    return std::nullopt;
  auto it = held_.find(t.name());
  if (it == held_.end()) fail("[onnx] ", what, " names a tensor held by a compiled program, and none was given");
  const Tensor& held = *it->second;
  const Shape dims(t.dims().begin(), t.dims().end());
  const DType dtype = dtype_from_onnx(t.data_type(), what);
  if (held.dtype() != dtype || held.shape() != dims)
    fail("[onnx] ", what, " is ", dtype, " ", dims, ", its held tensor ", held.dtype(), " ", held.shape());
  return held;
}

int64_t GraphParser::resolve(const std::string& name) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  if (!outer_) return -1;
  const int64_t outer_id = outer_->resolve(name);
  if (outer_id < 0) return -1;
  auto& implicit = outer_node_->implicit_inputs;
  auto slot = std::find(implicit.begin(), implicit.end(), outer_id);
  if (slot == implicit.end()) slot = implicit.insert(implicit.end(), outer_id);
  const int64_t id = produce(name, "the enclosing graph");
  graph_.capture_ids.push_back(id);
  graph_.capture_slots.push_back(static_cast<size_t>(slot - implicit.begin()));
  return id;
}

/** A FLOAT attribute's value: the float, or the double in its doc string (the exporter's, see
 *  graph_builder.cpp set_attr) where that is exactly a value the float rounds. */
double float_attribute(const ::onnx::AttributeProto& a) {
  const std::string& text = a.doc_string();
  if (!text.empty() && text.size() < 32) {
    char* end = nullptr;
    const double exact = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && static_cast<float>(exact) == a.f()) return exact;
  }
  return static_cast<double>(a.f());
}

Attribute GraphParser::read_attribute(const ::onnx::AttributeProto& a, Node& node, const std::string& what) {
  using A = ::onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT: return float_attribute(a);
    case A::INT: return static_cast<int64_t>(a.i());
    case A::STRING: return a.s();
    case A::TENSOR: return read_tensor(a.t(), base_dir_, what);
    case A::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
    case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::GRAPH: {
      auto sub = std::make_shared<Graph>();
      sub->opset = graph_.opset;
      sub->limits = graph_.limits;
      GraphParser(*sub, base_dir_, this, &node, held_).parse(a.g());
      return std::shared_ptr<const Graph>(std::move(sub));
    }
    case A::UNDEFINED: fail("[onnx] ", what, " has no type");
    default: return Unsupported{A::AttributeType_Name(a.type())};
  }
}

void GraphParser::parse(const ::onnx::GraphProto& g) {
  Graph& graph = graph_;
  const bool sub = outer_ != nullptr;
  if (g.sparse_initializer_size() > 0) fail("[onnx] sparse initializers are not supported");

  for (const auto& init : g.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    graph.initializer_ids.push_back(produce(init.name(), what));
    std::optional<Tensor> held = held_initializer(init, what);
    graph.initializers.emplace_back(init.name(), held ? *std::move(held) : read_tensor(init, base_dir_, what));
  }
  std::unordered_set<std::string> initializer_names;
  for (const auto& [name, value] : graph.initializers) initializer_names.insert(name);
  for (const auto& in : g.input()) {
    if (initializer_names.contains(in.name())) continue;  // an initializer's declaration, not an input
    bool has_shape = false;
    graph.inputs.push_back(sub ? read_subgraph_value_info(in, "subgraph input")
                               : read_value_info(in, "input", has_shape));
    graph.input_has_shape.push_back(has_shape);
    graph.input_ids.push_back(produce(in.name(), "input '" + in.name() + "'"));
  }

  std::unordered_set<std::string> node_outputs;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) node_outputs.insert(o);
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    Node node{n.op_type(),   n.name().empty() ? std::string("#").append(std::to_string(i)) : n.name(), {}, {}, {}, {},
              n.doc_string()};
    const std::string what = n.op_type() + " node '" + node.name + "'";
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail("[onnx] unsupported op type '", n.domain(), "::", n.op_type(), "' (node '", node.name, "', opset ",
           graph.opset, "): only the default ONNX domain is supported");
    for (const auto& name : n.input()) {
      if (name.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      const int64_t id = resolve(name);
      if (id < 0) {
        if (node_outputs.contains(name))
          fail("[onnx] ", what, " reads '", name, "' before it is produced: the nodes are not in topological order",
               " (or form a cycle)");
        fail("[onnx] ", what, " reads '", name, "', which no node, input or initializer produces");
      }
      node.inputs.push_back(id);
    }
    if (!find_op(node.op_type)) check_node(node, graph.opset);  // refused before its subgraphs are read
    // Attributes first: a subgraph sees the values before its node, not the node's outputs.
    for (const auto& a : n.attribute()) {
      const std::string attr_what = what + " attribute '" + a.name() + "'";
      if (!a.ref_attr_name().empty()) fail("[onnx] ", attr_what, " refers to a function attribute");
      if (!node.attributes.emplace(a.name(), read_attribute(a, node, attr_what)).second)
        fail("[onnx] ", what, " has attribute '", a.name(), "' twice");
    }
    for (const auto& name : n.output()) node.outputs.push_back(name.empty() ? -1 : produce(name, what));
    check_node(node, graph.opset);
    graph.nodes.push_back(std::move(node));
  }
  for (const auto& out : g.output()) {
    const int64_t id = resolve(out.name());
    if (id < 0) fail("[onnx] graph output '", out.name(), "' is never produced");
    bool has_shape = false;
    graph.outputs.push_back(sub ? read_subgraph_value_info(out, "subgraph output")
                                : read_value_info(out, "output", has_shape));
    graph.output_ids.push_back(id);
  }
  if (graph.outputs.empty()) fail("[onnx] the graph has no outputs");
  graph.num_values = graph.value_names.size();
  plan_run(graph);
}

}  // namespace

DType dtype_from_onnx(int64_t t, std::string_view what) {
  using T = ::onnx::TensorProto;
  switch (t) {
    case T::FLOAT: return DType::Float32;
    case T::DOUBLE: return DType::Float64;
    case T::FLOAT16: return DType::Float16;
    case T::BFLOAT16: return DType::BFloat16;
    case T::INT64: return DType::Int64;
    case T::INT32: return DType::Int32;
    case T::UINT8: return DType::UInt8;
    case T::INT8: return DType::Int8;
    case T::INT16: return DType::Int16;
    case T::UINT16: return DType::UInt16;
    case T::UINT32: return DType::UInt32;
    case T::UINT64: return DType::UInt64;
    case T::BOOL: return DType::Bool;
    case T::COMPLEX64: return DType::Complex64;
    case T::COMPLEX128: return DType::Complex128;
    default:
      fail<TypeError>("[onnx] ", what, " has element type ", type_name(t),
                      ", which ug does not have (bool, uint8, uint16, uint32, uint64, int8, int16, int32, int64, "
                      "float16, bfloat16, float32, float64, complex64, complex128)");
  }
}

Graph parse_model(std::string_view bytes, const std::string& base_dir, const LoadLimits& limits,
                  const std::vector<std::pair<std::string, Tensor>>& held) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) fail("[onnx] the model is over 2 GiB, protobuf's limit");
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail("[onnx] not an ONNX model: the ", bytes.size(), " bytes do not parse as a ModelProto");
  if (!model.has_graph()) fail("[onnx] the model has no graph");
  Graph graph;
  graph.limits = limits;
  graph.opset = default_opset(model);
  if (graph.opset < kMinOpset) {
    model = convert_to_min_opset(model, graph.opset);
    graph.opset = kMinOpset;
  }
  std::unordered_map<std::string, const Tensor*> held_by_name;
  for (const auto& [name, tensor] : held) held_by_name.emplace(name, &tensor);
  GraphParser(graph, base_dir, nullptr, nullptr, held_by_name).parse(model.graph());
  return graph;
}

}  // namespace ug::onnx
