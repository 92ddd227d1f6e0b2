// The recurrent layers from C++: shapes, the holder API, Sequential, gradients, errors.
// Values against PyTorch are checked in tests/python/test_recurrent.py.
#include <gtest/gtest.h>

#include "test_util.h"
#include "ug/nn/nn.h"

namespace ug::nn {
namespace {

using test::shape;
using test::values;

TEST(Recurrent, LSTMShapesAndState) {
  manual_seed(0);
  LSTM lstm(4, 8, RNNOptions{.num_layers = 2, .batch_first = true, .bidirectional = true});
  EXPECT_EQ(lstm->named_parameters().size(), 16u);
  EXPECT_EQ(lstm->parameter("weight_ih_l1_reverse").shape(), shape({32, 16}));
  Tensor x = randn({3, 5, 4});
  auto [out, state] = lstm->forward(x, std::nullopt);
  EXPECT_EQ(out.shape(), shape({3, 5, 16}));
  EXPECT_EQ(state.first.shape(), shape({4, 3, 8}));
  EXPECT_EQ(state.second.shape(), shape({4, 3, 8}));
  // The forward direction's last output is its final state; the reverse one's is at t = 0.
  EXPECT_EQ(values(out.select(1, 4).narrow(1, 0, 8)), values(state.first[2]));
  EXPECT_EQ(values(out.select(1, 0).narrow(1, 8, 8)), values(state.first[3]));
  // The one-tensor call returns the output alone, and continuing from a state works.
  EXPECT_EQ(values(lstm(x)), values(out));
  auto [out2, state2] = lstm->forward(x, state);
  EXPECT_EQ(out2.shape(), out.shape());
  EXPECT_NE(values(out2), values(out));
}

TEST(Recurrent, UnbatchedInputDropsTheBatchDim) {
  GRU gru(3, 5, RNNOptions{.num_layers = 2});
  auto [out, h] = gru->forward(randn({7, 3}), std::nullopt);
  EXPECT_EQ(out.shape(), shape({7, 5}));
  EXPECT_EQ(h.shape(), shape({2, 5}));
  RNN rnn(3, 5, RNNOptions{}, "relu");
  auto [out_r, h_r] = rnn->forward(randn({7, 3}), zeros({1, 5}));
  EXPECT_EQ(out_r.shape(), shape({7, 5}));
  for (double v : values(out_r)) EXPECT_GE(v, 0);
}

TEST(Recurrent, GradientsReachEveryParameterAndTheInput) {
  manual_seed(1);
  LSTM lstm(3, 4, RNNOptions{.num_layers = 2, .bidirectional = true});
  Tensor x = randn({6, 2, 3}).requires_grad_();
  auto [out, state] = lstm->forward(x, std::nullopt);
  (out.sum() + state.second.sum()).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().shape(), x.shape());
  for (const auto& [name, p] : lstm->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().shape(), p.shape()) << name;
  }
}

TEST(Recurrent, CellsMatchTheirFormulas) {
  // With zero weights and biases the LSTM gates are all 0.5 and g = 0: c' = 0.5 c, h' = 0.5 tanh(c').
  LSTMCell cell(2, 3);
  {
    NoGradGuard no_grad;
    for (Tensor& p : cell->parameters()) p.zero_();
  }
  Tensor c = full({1, 3}, 2.0);
  auto [h2, c2] = cell->forward(ones({1, 2}), LSTMState{zeros({1, 3}), c});
  test::expect_values(c2, {1, 1, 1}, 1e-7);
  test::expect_values(h2, std::vector<double>(3, 0.5 * std::tanh(1.0)), 1e-7);
  // GRU with zero weights: r = z = 0.5, n = 0, h' = 0.5 h.
  GRUCell gru(2, 3);
  {
    NoGradGuard no_grad;
    for (Tensor& p : gru->parameters()) p.zero_();
  }
  test::expect_values(gru->forward(ones({2}), full({3}, 4.0)), {2, 2, 2}, 1e-7);
}

TEST(Recurrent, SitsInASequential) {
  Sequential model(LSTM(4, 6), Linear(6, 2));
  EXPECT_EQ(model(randn({5, 3, 4})).shape(), shape({5, 3, 2}));
}

TEST(Recurrent, DropoutOnlyInTraining) {
  LSTM lstm(3, 4, RNNOptions{.num_layers = 2, .dropout = 1.0});
  Tensor x = randn({4, 2, 3});
  Tensor trained = lstm(x);
  lstm->eval();
  Tensor evaluated = lstm(x);
  EXPECT_NE(values(trained), values(evaluated));
  EXPECT_EQ(values(lstm(x)), values(evaluated));
}

TEST(Recurrent, DefaultInitWithinBounds) {
  GRU gru(10, 25, RNNOptions{.num_layers = 2});
  for (const Tensor& p : gru->parameters())
    for (double v : values(p)) {
      EXPECT_GE(v, -0.2);
      EXPECT_LE(v, 0.2);
    }
}

TEST(Recurrent, BadInputsRaise) {
  LSTM lstm(4, 6);
  EXPECT_THROW(lstm(randn({2, 3, 4, 4})), ValueError);
  EXPECT_THROW(lstm(randn({5, 3, 5})), ValueError);
  EXPECT_THROW(lstm(randn({0, 3, 4})), ValueError);
  EXPECT_THROW(lstm(randn({5, 3, 4}, {.dtype = float64})), TypeError);
  EXPECT_THROW(lstm->forward(randn({5, 3, 4}), LSTMState{zeros({1, 2, 6}), zeros({1, 3, 6})}), ValueError);
  EXPECT_THROW(LSTM(4, 0), ValueError);
  EXPECT_THROW(GRU(4, 6, RNNOptions{.dropout = -0.1}), ValueError);
  EXPECT_THROW(RNN(4, 6, RNNOptions{}, "sigmoid"), ValueError);
  EXPECT_THROW(GRUCell(4, 6)(randn({2, 2, 4})), ValueError);
}

TEST(Recurrent, PackedBatchFromCpp) {
  // A packed batch's outputs and final states are each sequence's run alone; the packing
  // keeps the caller's order through sorted/unsorted_indices.
  manual_seed(0);
  LSTM lstm(3, 5, RNNOptions{.num_layers = 2, .bidirectional = true, .proj_size = 2, .dtype = float64});
  const std::vector<int64_t> lengths{2, 4, 1};
  Tensor x = randn({4, 3, 3}, {.dtype = float64});
  PackedSequence packed = utils::rnn::pack_padded_sequence(x, lengths, false, false);
  EXPECT_EQ(values(packed.batch_sizes), (std::vector<double>{3, 2, 1, 1}));
  EXPECT_EQ(values(packed.sorted_indices), (std::vector<double>{1, 0, 2}));
  auto [out, state] = lstm->forward(packed, std::nullopt);
  EXPECT_EQ(out.data.shape(), shape({7, 4}));
  EXPECT_EQ(state.first.shape(), shape({4, 3, 2}));
  EXPECT_EQ(state.second.shape(), shape({4, 3, 5}));
  auto [padded, out_lengths] = utils::rnn::pad_packed_sequence(out, true, -1.0);
  EXPECT_EQ(values(out_lengths), (std::vector<double>{2, 4, 1}));
  for (int64_t b = 0; b < 3; ++b) {
    auto [alone, alone_state] = lstm->forward(x.select(1, b).narrow(0, 0, lengths[b]), std::nullopt);
    test::expect_values(padded.select(0, b).narrow(0, 0, lengths[b]), values(alone), 1e-12);
    test::expect_values(state.first.select(1, b), values(alone_state.first), 1e-12);
    test::expect_values(state.second.select(1, b), values(alone_state.second), 1e-12);
  }
  EXPECT_THROW(utils::rnn::pack_padded_sequence(x, std::vector<int64_t>{2, 4, 1}), RuntimeError);
  EXPECT_THROW(utils::rnn::pack_padded_sequence(x, std::vector<int64_t>{5, 4, 1}), RuntimeError);
  EXPECT_THROW(GRU(3, 5, RNNOptions{.proj_size = 2}), ValueError);
}

}  // namespace
}  // namespace ug::nn
