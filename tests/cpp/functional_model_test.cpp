// ug::nn::Functional (Keras's functional Model in C++): a graph of layers with several inputs
// and outputs, a layer shared by two nodes, merge layers, its summary, copy and errors.
#include "test_util.h"
#include "ug/nn/functional_model.h"
#include "ug/nn/nn.h"
#include "ug/optim/optim.h"
#include "ug/train/trainer.h"

namespace ug {
namespace {

namespace F = nn::functional;

/** inputs a, b (4 features each) -> shared Dense(3) on both -> Add, Concatenate -> two outputs. */
struct Graph {
  nn::Functional model{2, "siamese", std::vector<Shape>{{1, 4}, {1, 4}}, std::vector<std::string>{"a", "b"}};
  nn::Dense shared{3, "relu", 4};
  Graph() {
    const int64_t dense = model->add_layer("shared", shared.ptr());
    const int64_t add = model->add_layer("add", nn::Add().ptr());
    const int64_t cat = model->add_layer("concat", nn::Concatenate(-1).ptr());
    const int64_t ha = model->add_node(dense, {0}, {1, 3});
    const int64_t hb = model->add_node(model->add_layer("shared", shared.ptr()), {1}, {1, 3});  // the same layer
    model->set_outputs({model->add_node(add, {ha, hb}, {1, 3}), model->add_node(cat, {ha, hb}, {1, 6})});
  }
};

TEST(Functional, SharedLayerAndMergeNodes) {
  Graph g;
  EXPECT_EQ(g.model->layers().size(), 3u);  // the shared Dense once: one set of weights
  EXPECT_EQ(g.model->num_parameters(), 4 * 3 + 3);
  Tensor a = randn({5, 4}), b = randn({5, 4});
  std::vector<Tensor> out = g.model->forward_all({a, b});
  ASSERT_EQ(out.size(), 2u);
  Tensor ha = g.shared(a), hb = g.shared(b);
  test::expect_values(out[0], test::values(ha + hb), 1e-6);
  test::expect_values(out[1], test::values(cat({ha, hb}, 1)), 0);
  EXPECT_EQ(out[1].shape(), test::shape({5, 6}));
  (out[0].sum() + out[1].sum()).backward();  // both nodes' gradients reach the one weight
  EXPECT_TRUE(g.shared->weight().grad().defined());
}

TEST(Functional, OneInputOneOutputIsAModule) {
  nn::Functional model(1, "mlp", std::vector<Shape>{{1, 6}});
  nn::Dense hidden(8, "relu", 6), out(2, "", 8);
  const int64_t h = model->add_node(model->add_layer("hidden", hidden.ptr()), {0}, {1, 8});
  model->set_outputs({model->add_node(model->add_layer("act", nn::KerasActivation("tanh").ptr()), {h}, {1, 8})});
  Tensor x = randn({3, 6});
  test::expect_values(model(x), test::values(tanh(hidden(x))), 1e-6);
  // A Sequential runs it as any layer; a copy computes the same with weights of its own.
  nn::Sequential seq(model, out);
  EXPECT_EQ(seq(x).shape(), test::shape({3, 2}));
  auto copy = std::dynamic_pointer_cast<nn::FunctionalImpl>(model->clone());
  ASSERT_TRUE(copy);
  test::expect_values(copy->forward(x), test::values(model(x)), 0);
  EXPECT_NE(copy->layers()[0].get(), hidden.ptr().get());
  EXPECT_EQ(copy->layers()[0].get(), copy->child("hidden").get());
}

TEST(Functional, SummaryListsInputsAndNodes) {
  Graph g;
  const std::string text = g.model->summary();
  EXPECT_NE(text.find("Model: \"siamese\""), std::string::npos) << text;
  EXPECT_NE(text.find("a (InputLayer)"), std::string::npos) << text;
  EXPECT_NE(text.find("concat (Concatenate)   (None, 6)"), std::string::npos) << text;
  EXPECT_NE(text.find("Total params: 15"), std::string::npos) << text;
}

TEST(Functional, BadGraphsAreRefused) {
  nn::Functional model(1);
  const int64_t dense = model->add_layer("dense", nn::Dense(2, "", 3).ptr());
  EXPECT_THROW(model->add_node(dense, {1}), ValueError);                 // no value 1 yet
  EXPECT_THROW(model->add_node(dense, {0, 0}), ValueError);              // Dense takes one input
  EXPECT_THROW(model->add_layer("dense", nn::Add().ptr()), ValueError);  // names are unique
  EXPECT_THROW(model->forward(ones({2, 3})), ValueError);                // no outputs yet
  model->set_outputs({model->add_node(dense, {0})});
  EXPECT_THROW(model->forward_all({ones({2, 3}), ones({2, 3})}), ValueError);
  EXPECT_THROW(nn::Add()->merge({ones({2})}), ValueError);
}

TEST(Functional, TrainerFitsTwoInputsAndTwoOutputs) {
  // One full batch of plain SGD: the step of the hand-written loss mse(out0) + 0.5 * mse(out1).
  Graph g, ref;
  {
    NoGradGuard no_grad;
    ref.shared->weight().copy_(g.shared->weight());
    ref.shared->bias().copy_(g.shared->bias());
  }
  const Tensor a = randn({6, 4}), b = randn({6, 4}), y0 = randn({6, 3}), y1 = randn({6, 6});
  train::Trainer trainer(g.model);
  EXPECT_EQ(trainer.num_inputs(), 2);
  EXPECT_EQ(trainer.output_names(), (std::vector<std::string>{"add", "concat"}));
  trainer.compile({.optimizer = std::make_shared<optim::SGD>(g.model->parameters(), optim::SGDOptions(0.1)),
                   .loss = "mse",
                   .loss_weights = {1.0, 0.5},
                   .output_metrics = {{}, {"mae"}}});
  auto history = trainer.fit({a, b}, {y0, y1}, {.verbose = 0, .batch_size = 6, .shuffle = false});
  std::vector<std::string> keys;
  for (const auto& [k, v] : history->history) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"loss", "add_loss", "concat_loss", "concat_mae"}));

  std::vector<Tensor> out = ref.model->forward_all({a, b});
  const Tensor l0 = F::mse_loss(out[0], y0), l1 = F::mse_loss(out[1], y1);
  (l0 + l1 * 0.5).backward();
  EXPECT_NEAR(history->history.at("loss")[0], (l0 + l1 * 0.5).item<double>(), 1e-6);
  EXPECT_NEAR(history->history.at("concat_loss")[0], l1.item<double>(), 1e-6);
  const Tensor w = ref.shared->weight().detach() - ref.shared->weight().grad() * 0.1;
  test::expect_values(g.shared->weight().detach(), test::values(w), 1e-6);

  const std::vector<Tensor> predicted = trainer.predict_all({a, b}, 4);
  ASSERT_EQ(predicted.size(), 2u);
  test::expect_values(predicted[1], test::values(g.model->forward_all({a, b})[1].detach()), 1e-6);
  EXPECT_NEAR(trainer.evaluate({a, b}, {y0, y1}, 6, 0).at("add_loss"), F::mse_loss(predicted[0], y0).item<double>(),
              1e-6);
  EXPECT_THROW(trainer.fit({a}, {y0, y1}, {.verbose = 0}), ValueError);           // one input short
  EXPECT_THROW(trainer.compile({.loss = "mse", .losses = {"mse"}}), ValueError);  // a loss per output
}

}  // namespace
}  // namespace ug
