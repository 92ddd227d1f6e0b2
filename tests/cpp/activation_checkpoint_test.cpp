// ug::checkpoint (ug/autograd/checkpoint.h): the gradients of a checkpointed region equal the
// plain run's, its function runs again once in backward (not at all when the policy keeps
// everything), and dropout inside gives the same gradients (the random state is replayed).
#include "test_util.h"
#include "ug/autograd/checkpoint.h"
#include "ug/autograd/engine.h"
#include "ug/nn/nn.h"

namespace ug {
namespace {

TEST(ActivationCheckpoint, GradientsEqualThePlainRunAndTheRegionRunsAgainOnce) {
  manual_seed(0);
  nn::Linear a(6, 8), b(8, 6);
  Tensor x = randn({4, 6}).requires_grad_(true);
  int calls = 0;
  auto region = [&](const Tensors& in) {
    ++calls;
    return Tensors{b->forward(nn::functional::dropout(gelu(a->forward(in[0])), 0.5, true))};
  };
  std::vector<Tensor> wrt{x, a->weight(), a->bias(), b->weight(), b->bias()};
  manual_seed(7);
  Tensors plain = autograd::grad({region({x})[0].pow(2.0).sum()}, wrt);
  manual_seed(7);
  calls = 0;
  Tensors ck = autograd::grad({checkpoint(region, {x})[0].pow(2.0).sum()}, wrt);
  EXPECT_EQ(calls, 2);
  for (size_t i = 0; i < wrt.size(); ++i) EXPECT_TRUE(equal(ck[i], plain[i])) << i;
  calls = 0;
  checkpoint(region, {x}, [](const char*) { return true; })[0].sum().backward();
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace ug
