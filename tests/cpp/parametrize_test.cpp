// ug::nn::parametrize in C++: a C++ layer's forward sees the parametrized weight, the state
// dict holds the originals, gradients reach them, removal restores a plain parameter.
#include "test_util.h"
#include "ug/nn/nn.h"
#include "ug/nn/parametrizations.h"

namespace ug {
namespace {

std::vector<std::string> keys(const nn::TensorDict& d) {
  std::vector<std::string> out;
  for (const auto& [k, v] : d) out.push_back(k);
  return out;
}

TEST(Parametrize, WeightNormLinearForwardStateAndGradients) {
  nn::Linear fc(3, 2, true, DType::Float64);
  const Tensor w = fc->weight().detach().clone();
  nn::parametrizations::weight_norm(*fc.ptr());
  EXPECT_TRUE(nn::parametrize::is_parametrized(*fc, "weight"));
  EXPECT_EQ(fc->type_name(), "ParametrizedLinear");
  EXPECT_EQ(keys(fc->state_dict()), (std::vector<std::string>{"bias", "parametrizations.weight.original0",
                                                              "parametrizations.weight.original1"}));
  const Tensor x = randn({4, 3}, {.dtype = DType::Float64});
  // g = ||w_i|| and v = w: the layer computes with w itself, and its slot is empty after.
  test::expect_values(fc(x), test::values(x.matmul(w.t()) + fc->bias().detach()), 1e-12);
  EXPECT_FALSE(fc->parameter("weight").defined());
  fc(x).sum().backward();
  const Tensor g = fc->get_submodule("parametrizations.weight")->parameter("original0");
  ASSERT_TRUE(g.grad().defined());
  EXPECT_EQ(g.grad().shape(), test::shape({2, 1}));
  nn::parametrize::remove_parametrizations(*fc.ptr(), "weight");
  EXPECT_EQ(fc->type_name(), "Linear");
  EXPECT_EQ(keys(fc->state_dict()), (std::vector<std::string>{"bias", "weight"}));
  test::expect_values(fc->weight(), test::values(w), 1e-12);
}

TEST(Parametrize, SpectralNormDividesBySigmaAndIteratesOnlyInTraining) {
  nn::Linear fc(6, 4, false, DType::Float64);
  nn::parametrizations::spectral_norm(*fc.ptr());
  auto sn = fc->get_submodule("parametrizations.weight.0");
  const Tensor u = sn->buffer("_u").clone();
  fc(zeros({1, 6}, {.dtype = DType::Float64}));
  EXPECT_GT((sn->buffer("_u") - u).abs().max().item<double>(), 0.0);
  fc->eval();
  const Tensor u_eval = sn->buffer("_u").clone();
  fc(zeros({1, 6}, {.dtype = DType::Float64}));
  test::expect_values(sn->buffer("_u"), test::values(u_eval), 0.0);
  const Tensor w = nn::parametrize::value(*fc, "weight");
  const Tensor sigma = sn->buffer("_u").dot(
      fc->get_submodule("parametrizations.weight")->parameter("original").matmul(sn->buffer("_v")));
  test::expect_values(w * sigma, test::values(fc->get_submodule("parametrizations.weight")->parameter("original")),
                      1e-12);
}

TEST(Parametrize, MissingTensorIsAClearError) {
  nn::Linear fc(3, 2);
  EXPECT_THROW(nn::parametrizations::weight_norm(*fc.ptr(), "kernel"), ValueError);
  EXPECT_THROW(nn::parametrize::remove_parametrizations(*fc.ptr(), "weight"), ValueError);
}

}  // namespace
}  // namespace ug
