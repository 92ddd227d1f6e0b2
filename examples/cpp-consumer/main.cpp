// A small program against an installed unigrad: trains an MLP with Adam on synthetic data,
// differentiates a function with ug::grad, and saves and reloads a training checkpoint. Each
// step checks its result; the exit status is 1 when one is wrong, so it doubles as a test of
// the installed package (scripts/test.sh).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "ug/ug.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%-6s %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

ug::nn::Sequential mlp() { return ug::nn::Sequential(ug::nn::Linear(2, 32), ug::nn::ReLU(), ug::nn::Linear(32, 1)); }

}  // namespace

int main() {
  try {
    ug::manual_seed(0);
    // y = sin(x0) + x1^2 / 2 on 256 points: a curve a linear model cannot fit.
    ug::Tensor x = ug::randn({256, 2});
    ug::Tensor y = (x.select(1, 0).sin() + x.select(1, 1).square() * 0.5).unsqueeze(1);

    ug::nn::Sequential model = mlp();
    ug::optim::Adam optimizer(model->parameters(), ug::optim::AdamOptions(1e-2));
    auto loss_now = [&] {
      ug::NoGradGuard no_grad;
      return ug::nn::functional::mse_loss(model(x), y).item<double>();
    };
    const double first = loss_now();
    for (int step = 0; step < 200; ++step) {
      optimizer.zero_grad();
      ug::nn::functional::mse_loss(model(x), y).backward();
      optimizer.step();
    }
    const double last = loss_now();
    check(last < first / 10, "Adam, 200 steps: MSE " + std::to_string(first) + " -> " + std::to_string(last));

    // d/dt (t^3 + sin t) = 3 t^2 + cos t, elementwise.
    auto f = [](const ug::Tensor& t) { return (t.pow(3) + t.sin()).sum(); };
    ug::Tensor t = ug::tensor({-1.5, 0.0, 0.5, 2.0});
    ug::Tensor df = ug::grad(f)(t);
    check(ug::allclose(df, t.square() * 3 + t.cos()), "ug::grad of t^3 + sin t is 3t^2 + cos t");

    // The model, Adam's moments and the random state in one safetensors file, loaded into a
    // fresh model and optimizer.
    std::string path =
        (std::filesystem::temp_directory_path() / ("ug_consumer_" + std::to_string(::getpid()) + ".safetensors"))
            .string();
    ug::train::Checkpoint{.model = model.ptr().get(), .optimizer = &optimizer, .scheduler = {}}.save(path,
                                                                                                     {.epoch = 1});
    ug::nn::Sequential restored = mlp();
    ug::optim::Adam restored_optimizer(restored->parameters(), ug::optim::AdamOptions(1e-2));
    ug::train::Progress progress =
        ug::train::Checkpoint{.model = restored.ptr().get(), .optimizer = &restored_optimizer, .scheduler = {}}.load(
            path);
    std::filesystem::remove(path);
    bool same = progress.epoch == 1;
    for (const auto& [name, tensor] : model->state_dict())
      same = same && ug::equal(tensor, restored->state_dict().at(name));
    ug::Tensor w = model->parameters()[0];
    same = same && ug::equal(optimizer.state(w).at("exp_avg"),
                             restored_optimizer.state(restored->parameters()[0]).at("exp_avg"));
    check(same, "checkpoint saved and loaded back: same weights, Adam state and epoch");

    std::printf("unigrad %s: %s\n", ug::version(), failures ? "some checks failed" : "all checks passed");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return failures ? 1 : 0;
}
