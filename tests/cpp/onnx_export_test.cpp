// ug::onnx: the tracer records each op once (composites hide their parts), the export table
// covers every traceable op, and export_model writes a graph with the parameters' names.
// Numerical checks against onnxruntime are in tests/python/test_onnx_export.py.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "test_util.h"
#include "ug/onnx/export.h"
#include "ug/graph/capture.h"
#include "ug/graph/op_def.h"

namespace ug {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".onnx")).string();
}

std::vector<std::string> traced_ops(const std::function<void()>& fn) {
  NoGradGuard no_grad;
  graph::Capture capture("test");
  fn();
  capture.check();
  std::vector<std::string> ops;
  for (const graph::CapturedCall& c : capture.calls()) ops.push_back(c.op);
  return ops;
}

::onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ::onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromIstream(&in)) << path;
  return model;
}

TEST(OnnxExport, EveryTraceableOpIsExportedOrRejected) {
  const std::vector<std::string> mapped = onnx::exportable_ops(), rejected = onnx::unsupported_ops();
  const std::set<std::string> known = [&] {
    std::set<std::string> s(mapped.begin(), mapped.end());
    s.insert(rejected.begin(), rejected.end());
    return s;
  }();
  EXPECT_EQ(known.size(), mapped.size() + rejected.size()) << "an op is both mapped and rejected";
  const std::vector<std::string> traceable = graph::registered_ops();
  EXPECT_GT(traceable.size(), 80u);
  for (const std::string& op : traceable) EXPECT_TRUE(known.contains(op)) << "no export rule for traced op " << op;
  for (const std::string& op : known)
    EXPECT_TRUE(std::binary_search(traceable.begin(), traceable.end(), op)) << "stale export rule " << op;
}

TEST(OnnxExport, CompositesRecordThemselvesOnce) {
  manual_seed(0);
  nn::Linear fc(4, 3);
  nn::LayerNorm norm(Dims{3});
  nn::LSTM lstm(3, 5, nn::RNNOptions{.num_layers = 2});
  Tensor x = randn({2, 4}), seq = randn({6, 2, 3});
  EXPECT_EQ(traced_ops([&] { fc(x); }), (std::vector<std::string>{"linear"}));
  EXPECT_EQ(traced_ops([&] { norm(fc(x).relu()); }), (std::vector<std::string>{"linear", "relu", "layer_norm"}));
  EXPECT_EQ(traced_ops([&] { lstm(seq); }), (std::vector<std::string>{"lstm"}));
  EXPECT_EQ(traced_ops([] { randn({2}); }), (std::vector<std::string>{"random"}));
  // One capture per thread.
  graph::Capture outer("outer");
  EXPECT_THROW(graph::Capture inner("inner"), RuntimeError);
}

TEST(OnnxExport, ExportModelWritesNamedInitializersAndDynamicBatch) {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
  mlp->train();
  const std::string path = temp_path("mlp");
  onnx::export_model(*mlp, {randn({4, 784})}, path,
                     {.input_names = {"x"},
                      .output_names = {"y"},
                      .dynamic_axes = {{"x", {{0, "batch"}}}, {"y", {{0, "batch"}}}},
                      .opset_version = 17});
  EXPECT_TRUE(mlp->is_training());  // the mode is restored
  ::onnx::ModelProto model = read_model(path);
  std::filesystem::remove(path);
  EXPECT_EQ(model.ir_version(), 8);
  EXPECT_EQ(model.opset_import(0).version(), 17);
  EXPECT_EQ(model.producer_name(), "unigrad");
  std::vector<std::string> ops, inits;
  for (const auto& n : model.graph().node()) ops.push_back(n.op_type());
  for (const auto& i : model.graph().initializer()) inits.push_back(i.name());
  EXPECT_EQ(ops, (std::vector<std::string>{"Gemm", "Relu", "Gemm", "Identity"}));
  std::sort(inits.begin(), inits.end());
  EXPECT_EQ(inits, (std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"}));
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(model.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(model.graph().initializer(0).raw_data().size(), 128u * 784u * 4u);
}

TEST(OnnxExport, UnsupportedOpsAndBadOptionsRaiseValueError) {
  const std::string path = temp_path("bad");
  auto nonzero_fn = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0].nonzero()}; };
  try {
    onnx::export_function(nonzero_fn, {randn({2, 3})}, {}, path);
    FAIL() << "nonzero was exported";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'nonzero' is not supported"), std::string::npos) << e.what();
  }
  auto identity = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0].relu()}; };
  EXPECT_THROW(onnx::export_function(identity, {randn({2})}, {}, path, {.opset_version = 21}), ValueError);
  EXPECT_THROW(onnx::export_function(identity, {randn({2})}, {}, path, {.dynamic_axes = {{"nope", {{0, "n"}}}}}),
               ValueError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace ug
