// ug::onnx::load / load_bytes: a small model written field by field in protobuf's wire format
// (so the tests need no ONNX library), run and trained; corrupt bytes and unsupported ops raise.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "ug/onnx/import.h"

namespace ug {
namespace {

namespace F = nn::functional;

// ---- protobuf wire format: just what a ModelProto needs ----------------------------------------

std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string field_int(int field, uint64_t v) { return varint(static_cast<uint64_t>(field) << 3) + varint(v); }
std::string field_bytes(int field, const std::string& bytes) {
  return varint((static_cast<uint64_t>(field) << 3) | 2) + varint(bytes.size()) + bytes;
}

std::string float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
  std::string t;
  for (int64_t d : dims) t += field_int(1, static_cast<uint64_t>(d));
  t += field_int(2, 1);  // FLOAT
  t += field_bytes(8, name);
  t += field_bytes(9, std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

/** A float tensor ValueInfoProto; dims < 0 are symbolic ("batch"). */
std::string value_info(const std::string& name, const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t d : dims)
    shape += field_bytes(1, d < 0 ? field_bytes(2, "batch") : field_int(1, static_cast<uint64_t>(d)));
  const std::string tensor_type = field_int(1, 1) + field_bytes(2, shape);
  return field_bytes(1, name) + field_bytes(2, field_bytes(1, tensor_type));
}

std::string node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                 const std::string& attributes = "") {
  std::string n;
  for (const auto& i : inputs) n += field_bytes(1, i);
  return n + field_bytes(2, output) + field_bytes(3, op + "_0") + field_bytes(4, op) + attributes;
}

std::string int_attribute(const std::string& name, int64_t v) {
  return field_bytes(5, field_bytes(1, name) + field_int(3, static_cast<uint64_t>(v)) + field_int(20, 2));
}

std::string model(const std::string& graph, int64_t opset = 20) {
  return field_int(1, 9) + field_bytes(7, graph) + field_bytes(8, field_int(2, static_cast<uint64_t>(opset)));
}

/** y = relu(x @ fc.weight^T + fc.bias), x [batch, 3], as torch exports a Linear and ReLU. */
std::string linear_relu(const std::string& op = "Relu") {
  std::string g = field_bytes(1, node("Gemm", {"x", "fc.weight", "fc.bias"}, "h", int_attribute("transB", 1)));
  g += field_bytes(1, node(op, {"h"}, "y"));
  g += field_bytes(2, "linear_relu");
  g += field_bytes(5, float_tensor("fc.weight", {2, 3}, {0.5f, -1, 2, 1, 1, -0.25f}));
  g += field_bytes(5, float_tensor("fc.bias", {2}, {0.1f, -3}));
  g += field_bytes(11, value_info("x", {-1, 3}));
  g += field_bytes(12, value_info("y", {-1, 2}));
  return model(g);
}

TEST(OnnxImport, RunsAModelAndNamesItsParameters) {
  auto m = onnx::load_bytes(linear_relu());
  ASSERT_EQ(m->inputs().size(), 1u);
  EXPECT_EQ(m->inputs()[0].name, "x");
  EXPECT_EQ(m->inputs()[0].shape, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(m->inputs()[0].dtype, float32);
  EXPECT_EQ(m->opset(), 20);
  std::vector<std::string> keys;
  for (const auto& [name, value] : m->named_parameters()) keys.push_back(name);
  EXPECT_EQ(keys, (std::vector<std::string>{"fc.weight", "fc.bias"}));

  Tensor x = tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 4.0}});
  Tensor w = tensor({{0.5, -1, 2}, {1, 1, -0.25}});
  Tensor want = relu(add(matmul(x, w.t()), tensor({0.1, -3})));
  test::expect_values((*m)(x), test::values(want), 1e-6);
}

TEST(OnnxImport, BackwardReachesTheInitializers) {
  auto m = onnx::load_bytes(linear_relu("Tanh"));
  Tensor x = tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 4.0}});
  m->forward(x).sum().backward();
  Tensor w = m->state_dict().at("fc.weight").detach().clone().requires_grad_();
  Tensor b = m->state_dict().at("fc.bias").detach().clone().requires_grad_();
  tanh(F::linear(x, w, b)).sum().backward();
  const auto params = m->named_parameters();
  test::expect_values(params[0].second.grad(), test::values(w.grad()), 1e-6);
  test::expect_values(params[1].second.grad(), test::values(b.grad()), 1e-6);
}

TEST(OnnxImport, LoadsFromAPath) {
  const auto path = std::filesystem::temp_directory_path() / ("ug_onnx_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(path, std::ios::binary) << linear_relu();
  auto m = onnx::load(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(m->outputs()[0].name, "y");
  EXPECT_THROW(onnx::load(path.string()), FileNotFoundError);
}

TEST(OnnxImport, RefusesCorruptBytesAndUnsupportedOps) {
  EXPECT_THROW(onnx::load_bytes("\xff\xff\xff\xff garbage"), ValueError);
  const std::string good = linear_relu();
  for (size_t cut = 1; cut < good.size(); cut += 5) {
    try {
      onnx::load_bytes(good.substr(0, cut));
    } catch (const ValueError&) {
    } catch (const TypeError&) {}
  }
  try {
    onnx::load_bytes(linear_relu("Frobnicate"));
    FAIL() << "an unsupported op loaded";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported op type 'Frobnicate' (node 'Frobnicate_0', opset 20)"),
              std::string::npos)
        << e.what();
  }
}

TEST(OnnxImport, ChecksInputs) {
  auto m = onnx::load_bytes(linear_relu());
  EXPECT_THROW(m->forward(zeros({2, 4})), ValueError);
  EXPECT_THROW(m->forward(zeros({2, 3}, {.dtype = float64})), TypeError);
  EXPECT_THROW(m->forward(std::vector<Tensor>{}), ValueError);
}

}  // namespace
}  // namespace ug
