// onnx::to_text (graph.h): a graph printed for reading, as a compiled program's as_text().
#include <sstream>

#include "ug/onnx/graph.h"
#include "ug/onnx/op_table.h"

namespace ug::onnx {

namespace {

template <class T> void list(std::ostream& os, const std::vector<T>& items) {
  os << '[';
  for (size_t i = 0; i < items.size(); ++i) os << (i ? ", " : "") << items[i];
  os << ']';
}

void type(std::ostream& os, DType dtype, const std::vector<int64_t>& shape) {
  os << dtype_name(dtype);
  list(os, shape);
}

/** A small constant's values (at most 8), after its type. */
void values(std::ostream& os, const Tensor& t) {
  if (t.numel() > 8 || t.numel() == 0) return;
  const Tensor flat = t.to(DType::Float64).contiguous();
  const auto* v = static_cast<const double*>(flat.raw_data());
  os << ' ';
  list(os, std::vector<double>(v, v + flat.numel()));
}

struct AttributeText {
  std::ostream& os;
  void operator()(double v) const { os << v; }
  void operator()(int64_t v) const { os << v; }
  void operator()(const std::string& v) const { os << '"' << v << '"'; }
  void operator()(const Tensor& v) const {
    os << "tensor ";
    type(os, v.dtype(), std::vector<int64_t>(v.shape().begin(), v.shape().end()));
  }
  void operator()(const std::vector<double>& v) const { list(os, v); }
  void operator()(const std::vector<int64_t>& v) const { list(os, v); }
  void operator()(const std::vector<std::string>& v) const { list(os, v); }
  void operator()(const std::shared_ptr<const Graph>& g) const { os << "graph(" << g->nodes.size() << " nodes)"; }
  void operator()(const Unsupported& v) const { os << '<' << v.type << '>'; }
};

}  // namespace

std::string doc_line(const std::string& doc) {
  std::istringstream lines(doc);
  std::string line, out;
  while (std::getline(lines, line)) {
    const size_t begin = line.find_first_not_of(' ');
    if (begin == std::string::npos) continue;
    line = line.substr(begin);
    const size_t file = line.rfind("File \"", 0), quote = line.find("\", line ");
    if (file == 0 && quote != std::string::npos) {
      const size_t in = line.find(", in ", quote);
      line = line.substr(6, quote - 6) + ":" +
             line.substr(quote + 8, in == std::string::npos ? line.npos : in - quote - 8) +
             (in == std::string::npos ? "" : " in " + line.substr(in + 5));
    }
    out += (out.empty() ? "" : ": ") + line;
  }
  return out;
}

std::string to_text(const Graph& graph) {
  std::ostringstream os;
  auto value = [&](int64_t id) -> std::string {
    return id < 0 ? "_" : "%" + graph.value_names[static_cast<size_t>(id)];
  };
  os << "graph(";
  for (size_t i = 0; i < graph.input_ids.size(); ++i) {
    os << (i ? ", " : "") << value(graph.input_ids[i]) << ": ";
    type(os, graph.inputs[i].dtype, graph.inputs[i].shape);
  }
  os << ") {\n";
  for (size_t i = 0; i < graph.initializer_ids.size(); ++i) {
    const Tensor& t = graph.initializers[i].second;
    os << "  " << value(graph.initializer_ids[i]) << " = constant ";
    type(os, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    values(os, t);
    os << '\n';
  }
  for (const Node& node : graph.nodes) {
    os << "  ";
    for (size_t o = 0; o < node.outputs.size(); ++o) os << (o ? ", " : "") << value(node.outputs[o]);
    os << (node.outputs.empty() ? "" : " = ") << node.op_type;
    if (!node.attributes.empty()) {
      os << '[';
      bool first = true;
      for (const auto& [name, attr] : node.attributes) {
        os << (first ? "" : ", ") << name << '=';
        std::visit(AttributeText{os}, attr);
        first = false;
      }
      os << ']';
    }
    os << '(';
    for (size_t k = 0; k < node.inputs.size(); ++k) os << (k ? ", " : "") << value(node.inputs[k]);
    os << ')';
    if (const std::string at = doc_line(node.doc); !at.empty()) os << "  # " << at;
    os << '\n';
  }
  os << "  return ";
  for (size_t i = 0; i < graph.output_ids.size(); ++i) os << (i ? ", " : "") << value(graph.output_ids[i]);
  os << "\n}\n";
  return os.str();
}

}  // namespace ug::onnx
