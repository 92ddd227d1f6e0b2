#include "ug/models/classifiers.h"

#include "ug/core/error.h"
#include "ug/nn/functional/activation.h"
#include "ug/nn/init.h"
#include "ug/ops/binary.h"
#include "ug/ops/pool.h"
#include "ug/ops/reduce.h"

namespace ug::models {

LeNet::LeNet(int64_t in_channels, int64_t classes) : Module("LeNet") {
  conv1_ = register_module("conv1", nn::Conv2d(in_channels, 6, Dims{5}, Dims{1}, 2));
  conv2_ = register_module("conv2", nn::Conv2d(6, 16, Dims{5}));
  fc1_ = register_module("fc1", nn::Linear(400, 120));
  fc2_ = register_module("fc2", nn::Linear(120, 84));
  fc3_ = register_module("fc3", nn::Linear(84, classes));
}

void LeNet::rebind(const nn::CloneMemo& memo) {
  for (nn::Conv2d* c : {&conv1_, &conv2_}) memo.remap(*c);
  for (nn::Linear* l : {&fc1_, &fc2_, &fc3_}) memo.remap(*l);
}

Tensor LeNet::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(2) != 28 || x.size(3) != 28)
    fail("[LeNet] expects images of shape (N, C, 28, 28), got ", x.shape());
  Tensor h = max_pool2d(nn::functional::relu(conv1_(x)), {2});
  h = max_pool2d(nn::functional::relu(conv2_(h)), {2}).flatten(1);
  h = nn::functional::relu(fc1_(h));
  h = nn::functional::relu(fc2_(h));
  return fc3_(h);
}

TransformerClassifier::TransformerClassifier(Options options) : Module("TransformerClassifier"), options_(options) {
  if (options.d_model % options.heads != 0)
    fail("[TransformerClassifier] d_model ", options.d_model, " is not divisible by heads ", options.heads);
  embed_ = register_module("embed", nn::Linear(options.features, options.d_model));
  Tensor& position = register_parameter("position", empty({options.tokens, options.d_model}));
  nn::init::normal_(position, 0.0, 0.02);
  encoder_ = register_module("encoder", nn::ModuleList());
  for (int64_t i = 0; i < options.layers; ++i)
    encoder_->push_back(nn::TransformerEncoderLayer(options.d_model, options.heads, options.ff, /*dropout=*/0.0, "gelu",
                                                    1e-5, /*batch_first=*/true, /*norm_first=*/true)
                            .ptr());
  norm_ = register_module("norm", nn::LayerNorm(Dims{options.d_model}));
  head_ = register_module("head", nn::Linear(options.d_model, options.classes));
}

void TransformerClassifier::rebind(const nn::CloneMemo& memo) {
  memo.remap(embed_);
  memo.remap(head_);
  memo.remap(encoder_);
  memo.remap(norm_);
}

Tensor TransformerClassifier::forward(const Tensor& x) {
  const int64_t tokens = options_.tokens, features = options_.features;
  if (x.dim() < 2 || x.numel() % (tokens * features) != 0 || x.size(0) * tokens * features != x.numel())
    fail("[TransformerClassifier] expects (N, ", tokens, ", ", features, ") inputs, got ", x.shape());
  Tensor h = embed_(x.reshape({x.size(0), tokens, features})) + parameter("position");
  for (const auto& layer : *encoder_) h = (*layer)(h);
  return head_(norm_(mean(h, {1})));
}

}  // namespace ug::models
