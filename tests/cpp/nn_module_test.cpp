// ug::nn::Module in C++: registration, the tree walks, state dicts, holders, containers,
// functional init/apply and the Keras-style summary.
#include <gmock/gmock.h>

#include <cmath>
#include <limits>

#include "test_util.h"
#include "ug/nn/nn.h"

namespace ug {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

struct MLPImpl : nn::Module {
  UG_CLONEABLE(MLPImpl)
  MLPImpl() : Module("MLP") {
    fc1 = register_module("fc1", nn::Linear(784, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
  }
  Tensor forward(const Tensor& x) override { return fc2(fc1(x).relu()); }
  void rebind(const nn::CloneMemo& memo) override {
    memo.remap(fc1);
    memo.remap(fc2);
  }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
UG_MODULE(MLP);

TEST(NnModule, ArticlesMlpHas101770Parameters) {
  MLP model;
  EXPECT_EQ(model->num_parameters(), 101770);
  std::vector<std::string> names;
  for (auto& [name, p] : model->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  Tensor y = model(randn({4, 784}));
  EXPECT_EQ(y.shape(), test::shape({4, 10}));
  EXPECT_EQ(model->fc1->weight().shape(), test::shape({128, 784}));
}

TEST(NnModule, BackwardFillsParameterGradsAndZeroGradClears) {
  MLP model;
  model(randn({2, 784})).sum().backward();
  for (const Tensor& p : model->parameters()) EXPECT_TRUE(p.grad().defined());
  model->zero_grad();
  for (const Tensor& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(NnModule, StateDictRoundTripCopiesInPlaceAndReportsBadKeys) {
  MLP a, b;
  Tensor w = b->fc1->weight();
  b->load_state_dict(a->state_dict());
  EXPECT_EQ(test::values(w), test::values(a->fc1->weight()));
  nn::TensorDict sd = a->state_dict();
  sd.erase("fc2.bias");
  EXPECT_THROW(b->load_state_dict(sd), ValueError);
  auto [missing, unexpected] = b->load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(missing, std::vector<std::string>{"fc2.bias"});
  EXPECT_TRUE(unexpected.empty());
  sd.insert("fc2.bias", zeros({3}));
  EXPECT_THROW(b->load_state_dict(sd, false), ValueError);
}

TEST(NnModule, TrainEvalToAndApply) {
  MLP model;
  model->eval();
  EXPECT_FALSE(model->fc1->is_training());
  model->train();
  EXPECT_TRUE(model->fc2->is_training());
  Tensor w = model->fc1->weight();
  model->to(float64);
  EXPECT_EQ(w.dtype(), float64);  // the same parameter, converted in place
  EXPECT_TRUE(w.requires_grad());
  int visited = 0;
  model->apply([&](nn::Module&) { ++visited; });
  EXPECT_EQ(visited, 3);
  EXPECT_EQ(model->named_modules().size(), 3u);
  EXPECT_EQ(model->get_submodule("fc2").get(), model->fc2.ptr().get());
}

TEST(NnModule, SequentialRunsInOrderAndPrintsLikeTorch) {
  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq(randn({5, 4})).shape(), test::shape({5, 2}));
  EXPECT_EQ(seq->to_string(),
            "Sequential(\n  (0): Linear(in_features=4, out_features=8, bias=True)\n  (1): ReLU()\n"
            "  (2): Linear(in_features=8, out_features=2, bias=True)\n)");
  EXPECT_THROW((*seq)[3], IndexError);
}

TEST(NnModule, AReplacedChildIsTheOneForwardCalls) {
  nn::Sequential seq(nn::Linear(2, 2), nn::ReLU());
  seq->register_module("0", std::make_shared<nn::IdentityImpl>());
  EXPECT_EQ(test::values(seq(-ones({1, 2}))), std::vector<double>({0, 0}));
  EXPECT_EQ(seq->to_string(), "Sequential(\n  (0): Identity()\n  (1): ReLU()\n)");
  nn::TransformerEncoderLayer layer(8, 2);
  EXPECT_THAT([&] { layer->register_module("linear1", std::make_shared<nn::ReLUImpl>()); },
              ThrowsMessage<TypeError>(HasSubstr("a ReLU cannot take the place of a Linear")));
}

TEST(NnModule, FunctionalInitAndApplyLeaveTheModuleUntouched) {
  MLP model;
  Tensor before = model->fc1->weight().clone();
  nn::TensorDict params = model->init(random::key(0));
  EXPECT_EQ(test::values(model->fc1->weight()), test::values(before));
  EXPECT_EQ(test::values(model->init(random::key(0))["fc2.bias"]), test::values(params["fc2.bias"]));
  Tensor x = randn({3, 784});
  Tensor functional = model->apply(params, x);
  model->load_state_dict(params);
  EXPECT_EQ(test::values(functional), test::values(model(x)));
}

TEST(NnModule, SummaryListsLayersShapesAndCounts) {
  MLP model;
  std::string s = model->summary({1, 784});
  EXPECT_NE(s.find("fc1 (Linear)"), std::string::npos) << s;
  EXPECT_NE(s.find("(None, 128)"), std::string::npos) << s;
  EXPECT_NE(s.find("Total params: 101770"), std::string::npos) << s;
}

TEST(NnModule, ForwardHooksRunInOrderOnBothCallFormsAndRemove) {
  nn::Linear fc(2, 2);
  std::vector<std::string> log;
  const size_t pre = fc->register_forward_pre_hook(
      [&](nn::Module&, const Tensor& x) -> std::optional<Tensor> {
        log.push_back("pre");
        return x * 0;
      },
      [&](nn::Module&, const std::any& inputs) -> std::optional<std::any> {
        log.push_back("pre " + std::any_cast<std::string>(inputs));
        return std::any(std::string("b"));
      });
  fc->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) -> std::optional<Tensor> {
    log.push_back("tensor only");
    return std::nullopt;
  });
  fc->register_forward_hook(
      nullptr, [&](nn::Module&, const std::any& inputs, const std::any& out) -> std::optional<std::any> {
        log.push_back("post " + std::any_cast<std::string>(inputs) + std::any_cast<std::string>(out));
        return std::any(std::string("out"));
      });

  // The pre-hook zeroes the input: the output is the bias.
  test::expect_values(fc(ones({1, 2})), test::values(fc->bias()), 0);
  std::any out = fc->call(std::string("a"), [&](const std::any& in) {
    log.push_back("run " + std::any_cast<std::string>(in));
    return std::any(std::string("c"));
  });
  EXPECT_EQ(std::any_cast<std::string>(out), "out");
  EXPECT_EQ(log, (std::vector<std::string>{"pre", "tensor only", "pre a", "run b", "post bc"}));

  fc->remove_hook(pre);
  log.clear();
  fc->call(std::string("a"), [](const std::any& in) { return in; });
  EXPECT_EQ(log, (std::vector<std::string>{"post aa"}));
}

TEST(NnModule, AChildCalledWithSeveralTensorsRunsItsHooks) {
  // TransformerEncoderLayer calls self_attn with (x, x, x): its general hooks see the tensors
  // and may replace the output, which the layer then uses.
  manual_seed(0);
  nn::TransformerEncoderLayer layer(8, 2, 16, 0.0, "relu", 1e-5, true);
  const Tensor x = randn({2, 3, 8});
  const Tensor plain = layer(x);
  size_t seen_inputs = 0;
  layer->self_attn->register_forward_hook(
      nullptr, [&](nn::Module&, const std::any& inputs, const std::any& out) -> std::optional<std::any> {
        seen_inputs = std::any_cast<const std::vector<Tensor>&>(inputs).size();
        std::vector<Tensor> zeroed = std::any_cast<std::vector<Tensor>>(out);
        zeroed[0] = zeroed[0] * 0;
        return std::any(zeroed);
      });
  const Tensor hooked = layer(x);
  EXPECT_EQ(seen_inputs, 3u);
  // With the attention's output zeroed the first block is norm1(x) alone.
  Tensor h = layer->norm1(x);
  test::expect_values(hooked, test::values(layer->norm2(h + layer->linear2(layer->linear1(h).relu()))), 1e-6);
  EXPECT_FALSE(test::values(hooked) == test::values(plain));
}

TEST(NnModule, TransformerEncoderRunsCopiesOfItsLayer) {
  manual_seed(0);
  nn::TransformerEncoderLayer layer(8, 2, 16, 0.0);
  nn::LayerNorm norm(Dims{8});
  nn::TransformerEncoder enc(layer, 2, norm.ptr());
  EXPECT_EQ(enc->layers->size(), 2u);
  EXPECT_EQ(enc->parameters().size(), 2 * layer->parameters().size() + 2);
  auto first = std::static_pointer_cast<nn::TransformerEncoderLayerImpl>((*enc->layers)[0]);
  test::expect_values(first->linear1->weight(), test::values(layer->linear1->weight()), 0);
  {
    NoGradGuard no_grad;
    first->linear1->weight().mul_(2);  // the copies are the encoder's own
  }
  EXPECT_FALSE(test::values(first->linear1->weight()) == test::values(layer->linear1->weight()));
  const Tensor x = randn({5, 3, 8});
  auto second = std::static_pointer_cast<nn::TransformerEncoderLayerImpl>((*enc->layers)[1]);
  test::expect_values(enc(x), test::values(norm(second->forward(first->forward(x)))), 0);
  EXPECT_THROW(nn::TransformerEncoder(layer, -1), ValueError);
}

TEST(NnModule, CloneCopiesTheTreeKeepingTiedParametersTiedAndHooks) {
  manual_seed(0);
  MLP model;
  model->fc2->register_parameter("bias", model->fc1->bias().narrow(0, 0, 10));  // tied into a view
  int calls = 0;
  model->fc1->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) -> std::optional<Tensor> {
    ++calls;
    return std::nullopt;
  });
  model->eval();
  auto copy = std::dynamic_pointer_cast<MLPImpl>(model->clone());
  ASSERT_TRUE(copy);
  const Tensor x = randn({3, 784});
  test::expect_values(copy->forward(x), test::values(model->forward(x)), 0);
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(copy->is_training());
  // The copy's members are its own children, holding their own storage: changing it leaves
  // the original as it was, and the tie into fc1's bias survives in the copy.
  EXPECT_EQ(copy->fc1.ptr(), copy->child("fc1"));
  EXPECT_FALSE(copy->fc1->weight().shares_storage(model->fc1->weight()));
  EXPECT_TRUE(copy->fc2->bias().shares_storage(copy->fc1->bias()));
  EXPECT_TRUE(copy->fc1->weight().requires_grad() && copy->fc1->weight().is_leaf());
  const Tensor before = model->forward(x).detach().clone();
  {
    NoGradGuard no_grad;
    copy->fc1->bias().fill_(1.0);
  }
  test::expect_values(copy->fc2->bias(), std::vector<double>(10, 1.0), 0);
  test::expect_values(model->forward(x), test::values(before), 0);
  copy->forward(x).sum().backward();
  EXPECT_FALSE(model->fc1->weight().grad().defined());
  EXPECT_TRUE(copy->fc1->weight().grad().defined());

  nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), nn::Dropout(0.5));
  auto seq_copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  EXPECT_EQ((*seq_copy)[0], seq_copy->child("0"));
  EXPECT_NE((*seq_copy)[0], (*seq)[0]);
}

TEST(NnModule, CloneRefusesALayerThatDoesNotSayHowToCopyItself) {
  struct Plain : nn::Module {
    Plain() : Module("Plain") { register_parameter("w", zeros({2})); }
  };
  auto m = std::make_shared<Plain>();
  EXPECT_THROW(m->clone(), TypeError);
  nn::Sequential holder(m);
  EXPECT_THROW(holder->clone(), TypeError);
}

TEST(NnModule, TransformerRunsItsEncoderIntoItsDecoder) {
  manual_seed(0);
  nn::Transformer model(16, 4, 2, 2, 32, 0.0, "gelu", nullptr, nullptr, 1e-5, true);
  EXPECT_EQ(model->encoder->layers->size(), 2u);
  const Tensor src = randn({2, 7, 16}), tgt = randn({2, 5, 16});
  const Tensor mask = nn::TransformerImpl::generate_square_subsequent_mask(5);
  const Tensor memory = model->encoder->forward(src);
  Tensor expected = model->decoder->forward(tgt, memory, mask);
  test::expect_values(model->forward(src, tgt, {}, mask), test::values(expected), 0);
  EXPECT_EQ(expected.shape(), (Shape{2, 5, 16}));
  EXPECT_EQ(mask[1][2].item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(mask[2][1].item<double>(), 0.0);
  // The target attends causally: changing its last position leaves the earlier outputs alone.
  Tensor changed = tgt.clone();
  {
    NoGradGuard no_grad;
    changed.select(1, 4).fill_(3.0);
  }
  Tensor out = model->forward(src, changed, {}, mask);
  test::expect_values(out.narrow(1, 0, 4), test::values(expected.narrow(1, 0, 4)), 1e-6);
  EXPECT_THROW(model->forward(src, randn({3, 5, 16})), ValueError);
  auto copy = std::dynamic_pointer_cast<nn::TransformerImpl>(model->clone());
  test::expect_values(copy->forward(src, tgt, {}, mask), test::values(expected), 0);
  EXPECT_EQ(copy->decoder.ptr(), copy->child("decoder"));
}

TEST(NnModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  EXPECT_THROW(m.register_buffer("w", zeros({2})), ValueError);
  EXPECT_THROW(m.register_parameter("a.b", zeros({2})), ValueError);
  EXPECT_THROW(m.register_parameter("i", zeros({2}, {.dtype = int64})), TypeError);
  EXPECT_THROW(m.forward(zeros({1})), RuntimeError);
}

TEST(NnModule, InitialisersFollowTheirFormulas) {
  manual_seed(0);
  Tensor w = empty({64, 32});
  nn::init::orthogonal_(w);
  Tensor gram = w.t().matmul(w);
  test::expect_values(gram, test::values(eye(32)), 1e-5);
  nn::init::kaiming_uniform_(w, std::sqrt(5.0));
  EXPECT_LE(w.abs().max().item<double>(), 1 / std::sqrt(32.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3);
}

TEST(NnModule, DenseFlattenIsGluonsDense) {
  manual_seed(0);
  Tensor images = randn({2, 1, 28, 28});
  nn::Dense keras(10), gluon(10, "", -1, true, "float32", /*flatten=*/true);
  EXPECT_EQ(keras(images).shape(), (Shape{2, 1, 28, 10}));  // Keras maps the last dim
  Tensor y = gluon(images);
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
  EXPECT_EQ(gluon->weight().shape(), (Shape{10, 784}));
  EXPECT_TRUE(allclose(y, images.reshape({2, 784}).matmul(gluon->weight().t()) + gluon->bias()));
  nn::Dense column(10, "", -1, true, "float32", /*flatten=*/true);
  EXPECT_EQ(column(ones({3})).shape(), (Shape{3, 10}));  // a 1-D batch: 3 inputs of size 1, as Gluon
  EXPECT_THROW(column(ones({})), ValueError);
}

TEST(NnModule, TorchActivationLayersFromCpp) {
  Tensor x = ug::tensor({-3.0, -0.25, 0.5, 2.0});
  test::expect_values(nn::ELU(2.0)(x), {2 * std::expm1(-3.0), 2 * std::expm1(-0.25), 0.5, 2.0}, 1e-6);
  test::expect_values(nn::Hardshrink()(x), {-3.0, 0.0, 0.0, 2.0}, 0);
  test::expect_values(nn::Softshrink(0.5)(x), {-2.5, 0.0, 0.0, 1.5}, 0);
  test::expect_values(nn::Threshold(0.0, -1.0)(x), {-1.0, -1.0, 0.5, 2.0}, 0);
  test::expect_values(nn::ReLU6()(x * 4), {0.0, 0.0, 2.0, 6.0}, 0);
  nn::PReLU prelu(1, 0.1);
  Tensor y = prelu(x);
  test::expect_values(y, {-0.3, -0.025, 0.5, 2.0}, 1e-7);
  y.sum().backward();
  test::expect_values(prelu->weight().grad(), {-3.25}, 1e-7);  // the sum of the negative inputs
  nn::CosineSimilarity cosine(0);
  test::expect_values(cosine(x, x * 3), {1.0}, 1e-6);
  EXPECT_EQ(nn::Softplus()->to_string(), "Softplus(beta=1.0, threshold=20.0)");
  EXPECT_EQ(nn::Hardtanh(-2.0, 2.0, true)->to_string(), "Hardtanh(min_val=-2.0, max_val=2.0, inplace=True)");
  EXPECT_EQ(nn::Softmin()->to_string(), "Softmin(dim=None)");
  EXPECT_EQ(nn::PReLU(3)->to_string(), "PReLU(num_parameters=3)");
  EXPECT_THROW(nn::CELU(0.0), ValueError);
  EXPECT_THROW(nn::Hardtanh(1.0, 1.0), ValueError);
  EXPECT_THROW(nn::PReLU(0), ValueError);
}

TEST(NnModule, ParameterContainersAndUnflattenFromCpp) {
  nn::ParameterList list(std::vector<Tensor>{ones({2, 3}), zeros({4})});
  EXPECT_EQ(list->size(), 2u);
  EXPECT_TRUE((*list)[-1].requires_grad());
  EXPECT_EQ(list->to_string(),
            "ParameterList(\n    (0): Parameter containing: [float32 of size 2x3]\n"
            "    (1): Parameter containing: [float32 of size 4]\n)");
  EXPECT_THROW((*list)[2], IndexError);
  nn::ParameterDict dict;
  dict->insert("scale", ones({2}));
  dict->insert("shift", zeros({2}, {.dtype = float64}));
  nn::Sequential seq(list, dict);
  std::vector<std::string> keys;
  for (const auto& [k, v] : seq->state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.0", "0.1", "1.scale", "1.shift"}));
  EXPECT_EQ(dict->to_string(),
            "ParameterDict(\n    (scale): Parameter containing: [FloatTensor of size 2]\n"
            "    (shift): Parameter containing: [DoubleTensor of size 2]\n)");
  dict->erase("scale");
  EXPECT_EQ(dict->keys(), std::vector<std::string>{"shift"});
  nn::Unflatten unflatten(1, Dims{2, -1});
  EXPECT_EQ(unflatten(zeros({4, 6})).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(unflatten->to_string(), "Unflatten(dim=1, unflattened_size=(2, -1))");
  EXPECT_THROW(unflatten(zeros({4, 5})), ValueError);
}

TEST(NnModule, PoolingAndPaddingLayersFromCpp) {
  Tensor x = arange(10.0).reshape({1, 1, 10});
  nn::MaxPool1d pool(Dims{3});
  test::expect_values(pool(x), {2.0, 5.0, 8.0}, 0);
  EXPECT_EQ(pool->to_string(), "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
  test::expect_values(nn::AdaptiveAvgPool1d(Dims{2})(x), {2.0, 7.0}, 1e-6);
  EXPECT_EQ(nn::AdaptiveMaxPool2d(Dims{2, 3})(zeros({2, 5, 7})).shape(), (Shape{2, 2, 3}));
  nn::ReflectionPad1d pad(Dims{2});
  test::expect_values(pad(x.narrow(2, 0, 3)), {2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0}, 0);
  EXPECT_EQ(nn::ConstantPad2d(Dims{1, 0, 2, 0}, 1.5)->to_string(), "ConstantPad2d(padding=(1, 0, 2, 0), value=1.5)");
  EXPECT_THROW(nn::ZeroPad2d(Dims{1, 2}), ValueError);
}

TEST(NnModule, PixelShuffleAndInstanceNormFromCpp) {
  Tensor x = arange(8.0).reshape({1, 4, 1, 2});
  nn::PixelShuffle shuffle(2);
  Tensor y = shuffle(x);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 4}));
  test::expect_values(y, {0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0}, 0);  // out[2h+i, 2w+j] = in[2i+j, h, w]
  test::expect_values(nn::PixelUnshuffle(2)(y), {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}, 0);
  EXPECT_EQ(shuffle->to_string(), "PixelShuffle(upscale_factor=2)");

  nn::InstanceNorm1d norm(2);
  const double s = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);  // each row's biased variance is 2/3 (times 1, 4)
  test::expect_values(norm(tensor({1.0, 2.0, 3.0, 2.0, 4.0, 6.0}).reshape({1, 2, 3})), {-s, 0.0, s, -s, 0.0, s}, 1e-4);
  EXPECT_EQ(norm->to_string(),
            "InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)");
  EXPECT_EQ(nn::InstanceNorm2d(3, 1e-5, 0.1, true, true, false)->named_parameters().size(), 1u);
  EXPECT_THROW(nn::InstanceNorm2d(3)(zeros({2, 3})), ValueError);
}

TEST(NnModule, UpsampleAndInterpolateFromCpp) {
  namespace F = nn::functional;
  Tensor x = arange(3.0).reshape({1, 1, 3}).requires_grad_();
  nn::Upsample up(std::nullopt, std::vector<double>{2.0});
  Tensor y = up(x);
  test::expect_values(y, {0.0, 0.0, 1.0, 1.0, 2.0, 2.0}, 0);
  y.sum().backward();
  test::expect_values(x.grad(), {2.0, 2.0, 2.0}, 0);  // each input reaches two outputs
  EXPECT_EQ(up->to_string(), "Upsample(scale_factor=2.0, mode='nearest')");
  // Source index 0.5 (i + 0.5) - 0.5, clamped to [0, 2]: -0.25 -> 0, 0.25, ..., 2.25 -> 2.
  test::expect_values(F::interpolate(x, {.size = Dims{6}, .mode = "linear"}), {0.0, 0.25, 0.75, 1.25, 1.75, 2.0}, 1e-6);
  test::expect_values(F::interpolate(x, {.size = Dims{5}, .mode = "linear", .align_corners = true}),
                      {0.0, 0.5, 1.0, 1.5, 2.0}, 1e-6);

  nn::UpsamplingBilinear2d bilinear(Dims{3});
  test::expect_values(bilinear(arange(4.0).reshape({1, 1, 2, 2})), {0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0}, 1e-6);
  EXPECT_EQ(bilinear->to_string(), "UpsamplingBilinear2d(size=3, mode='bilinear')");
  EXPECT_EQ(nn::UpsamplingNearest2d(Dims{4, 6})->to_string(), "UpsamplingNearest2d(size=(4, 6), mode='nearest')");
  EXPECT_THROW(F::interpolate(x, {.size = Dims{4}, .mode = "bilinear"}), ValueError);
  EXPECT_THROW(F::interpolate(x, {.size = Dims{0}}), ValueError);
  EXPECT_THROW(nn::Upsample()(x), ValueError);
}

TEST(NnModule, MarginLossesFromCpp) {
  // -t (x1 - x2) + margin: 1 + 0.5 and 2 + 0.5.
  test::expect_values(nn::MarginRankingLoss(0.5)(tensor({1.0, 2.0}), tensor({2.0, 0.0}), tensor({1.0, -1.0})), {2.0},
                      1e-6);
  test::expect_values(nn::HingeEmbeddingLoss()(tensor({0.3, 2.0}), tensor({1.0, -1.0})), {0.15}, 1e-6);
  test::expect_values(nn::SoftMarginLoss()(tensor({0.0}), tensor({1.0})), {std::log(2.0)}, 1e-6);
  test::expect_values(nn::MultiLabelSoftMarginLoss()(tensor({{0.0, 0.0}}), tensor({{1.0, 0.0}})), {std::log(2.0)},
                      1e-6);
  // d(a, p) = 5 and d(a, n) = 1, each off by at most sqrt(2) eps.
  test::expect_values(nn::TripletMarginLoss()(tensor({{0.0, 0.0}}), tensor({{3.0, 4.0}}), tensor({{0.0, 1.0}})), {5.0},
                      1e-5);
  nn::MultiMarginLoss multi;
  // torch's documented example: (0.3 + 0.4 + 0.6) / 4.
  test::expect_values(multi(tensor({{0.1, 0.2, 0.4, 0.8}}), tensor({int64_t{3}})), {0.325}, 1e-6);
  EXPECT_EQ(multi->to_string(), "MultiMarginLoss()");
  EXPECT_EQ(nn::MultiMarginLoss(2, 1.0, ones({4}))->named_buffers().size(), 1u);
  EXPECT_THROW(nn::MultiMarginLoss(3), ValueError);
  EXPECT_THROW(nn::TripletMarginLoss(0.0), ValueError);
  EXPECT_THROW(multi(tensor({{0.1, 0.2}}), tensor({int64_t{2}})), IndexError);
}

TEST(NnModule, InplaceActivationsFromCpp) {
  Tensor x = tensor({-1.0, 0.0, 2.0}).requires_grad_();
  Tensor h = x * 2;
  const uint32_t version = h.version();
  nn::SiLU silu(true);
  Tensor y = silu(h);
  EXPECT_EQ(h.version(), version + 1);
  test::expect_values(h, test::values(y), 0);  // written into its input
  y.sum().backward();
  // 2 silu'(2x), silu'(z) = s(z) (1 + z (1 - s(z))): silu'(0) = 0.5.
  auto d = [](double z) {
    double s = 1 / (1 + std::exp(-z));
    return 2 * s * (1 + z * (1 - s));
  };
  test::expect_values(x.grad(), {d(-2.0), d(0.0), d(4.0)}, 1e-6);
  EXPECT_EQ(silu->to_string(), "SiLU(inplace=True)");

  Tensor z = tensor({-1.0, 3.0});
  nn::ReLU(true)(z);
  test::expect_values(z, {0.0, 3.0}, 0);
  EXPECT_EQ(nn::ReLU(true)->to_string(), "ReLU(inplace=True)");
  EXPECT_EQ(nn::LeakyReLU(0.2, true)->to_string(), "LeakyReLU(negative_slope=0.2, inplace=True)");
  EXPECT_EQ(nn::LeakyReLU()->to_string(), "LeakyReLU(negative_slope=0.01)");
  Tensor w = tensor({-2.0, 4.0});
  nn::LeakyReLU(0.5, true)(w);
  test::expect_values(w, {-1.0, 4.0}, 0);
}

}  // namespace
}  // namespace ug
