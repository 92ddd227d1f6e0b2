// The parts of `ug serve` below HTTP: body decoding, answer encoding, batching, rate limits,
// authentication, options and metrics. tests/python/test_serve.py tests the server whole.
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

#include "ug/serve/auth.h"
#include "ug/serve/batcher.h"
#include "ug/serve/decode.h"
#include "ug/serve/encode.h"
#include "ug/serve/metrics.h"
#include "ug/serve/options.h"
#include "ug/serve/rate_limiter.h"
#include "ug/ug.h"

namespace ug::serve {
namespace {

std::string error_of(const std::string& body, const std::vector<int64_t>& sample) {
  try {
    decode_json(body, sample);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(ServeDecode, BothReadersGiveTheSameCorrectlyRoundedFloats) {
  std::mt19937 gen(0);
  std::uniform_real_distribution<double> dist(-1e6, 1e6);
  std::string values;
  std::vector<float> want;
  for (int i = 0; i < 300; ++i) {
    const double v = dist(gen) * std::pow(10.0, static_cast<int>(gen() % 40) - 25);
    char text[40];
    std::snprintf(text, sizeof text, i % 3 == 0 ? "%.17g" : i % 3 == 1 ? "%.6e" : "%.3f", v);
    values += (i ? ", " : "") + std::string(text);
    float f = 0;
    std::from_chars(text, text + std::strlen(text), f);
    want.push_back(f);
  }
  // Short decimals, the fast path's domain and its edges: mantissas around 2^24, 0 to 12
  // decimals, leading zeros after the point.
  for (int i = 0; i < 3000; ++i) {
    const uint64_t mantissa =
        i % 5 == 0 ? (uint64_t(1) << 24) + (gen() % 5) - 2 : gen() % (uint64_t(1) << (gen() % 27));
    const int decimals = static_cast<int>(gen() % 13);
    std::string digits = std::to_string(mantissa);
    if (static_cast<int>(digits.size()) <= decimals)
      digits.insert(0, static_cast<size_t>(decimals) + 1 - digits.size(), '0');
    if (decimals) digits.insert(digits.size() - static_cast<size_t>(decimals), ".");
    // (nlohmann reads the integer -0 as int64 0, so its reader gives +0 there: no "-0" here.)
    const bool negative = gen() % 2 && (mantissa || decimals);
    const std::string text = (negative ? "-" : "") + digits;
    values += ", " + text;
    float f = 0;
    std::from_chars(text.data(), text.data() + text.size(), f);
    want.push_back(f);
  }
  values += ", 7, -0.0, 1E+2";
  want.insert(want.end(), {7.f, -0.f, 100.f});
  // The escaped key is valid JSON that only nlohmann's reader takes.
  for (const char* key : {"\"inputs\"", "\"\\u0069nputs\""}) {
    const std::string body = std::string("{ ") + key + " :\n\t[[" + values + "]] }\r\n";
    Inputs in = decode_json(body, {static_cast<int64_t>(want.size())});
    EXPECT_EQ(in.rows, 1);
    ASSERT_EQ(in.values.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(std::bit_cast<uint32_t>(in.values[i]), std::bit_cast<uint32_t>(want[i])) << key << " " << i;
  }
}

TEST(ServeDecode, DigitsOfEveryLengthAtEveryDistanceFromTheEnd) {
  // The reader takes digits eight bytes at a time while eight bytes remain, one at a time after.
  std::mt19937 gen(1);
  for (int length = 1; length <= 24; ++length) {
    for (int point = 0; point < length; ++point) {
      std::string text;
      for (int i = 0; i < length; ++i)
        text += static_cast<char>('0' + (i == 0 && length > 1 ? 1 + gen() % 9 : gen() % 10));
      if (point > 0) text.insert(static_cast<size_t>(point), ".");
      float want = 0;
      std::from_chars(text.data(), text.data() + text.size(), want);
      // The number alone, first and last in its list.
      for (const auto& [list, at] :
           {std::pair{"[" + text + "]", 0}, {"[" + text + ",1]", 0}, {"[2," + text + "]", 1}}) {
        const std::vector<float> values =
            decode_json("{\"inputs\": [" + list + "]}", {list.size() - text.size() > 2 ? 2 : 1}).values;
        EXPECT_EQ(std::bit_cast<uint32_t>(values[at]), std::bit_cast<uint32_t>(want)) << list;
      }
    }
  }
  EXPECT_EQ(error_of(R"({"inputs": [[1, 2, [3]]]})", {3}), "'inputs' mixes numbers and lists at depth 2");
  EXPECT_EQ(error_of(R"({"inputs": [[[1], 2]]})", {2, 1}), "'inputs' mixes numbers and lists at depth 2");
}

TEST(ServeDecode, NestedAndFlattenedRows) {
  Inputs nested = decode_json(R"({"inputs": [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]})", {3, 2});
  Inputs flat = decode_json(R"({"inputs": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]})", {3, 2});
  EXPECT_EQ(nested.rows, 2);
  EXPECT_EQ(nested.values, flat.values);
  EXPECT_EQ(flat.values.back(), 12.f);
  EXPECT_EQ(error_of(R"({"inputs": [[[1, 2, 3], [4, 5, 6]]]})", {3, 2}),
            "expected 'inputs' of shape (N, 3, 2) or (N, 6), got (1, 2, 3)");
}

TEST(ServeDecode, NumbersOutsideJsonGrammarAreMalformed) {
  for (const char* number : {"1.", ".5", "+1", "inf", "NaN", "01", "1e", "0x10", "1.5.2", "--1"}) {
    const std::string error = error_of(std::string(R"({"inputs": [[)") + number + "]]}", {1});
    EXPECT_TRUE(error.starts_with("malformed JSON: parse error")) << number << ": " << error;
  }
  EXPECT_TRUE(std::isinf(decode_json(R"({"inputs": [[1e39]]})", {1}).values[0]));
  EXPECT_TRUE(error_of(R"({"inputs": [[1]]} x)", {1}).starts_with("malformed JSON"));
  EXPECT_EQ(error_of(R"({"inputs": [[1]], "inputs": [[2]]})", {1}), "'inputs' given twice");
  EXPECT_EQ(error_of(R"({"inputs": [{}]})", {1}), "expected float32 numbers in 'inputs', got an object");
  EXPECT_EQ(error_of("", {1}),
            "malformed JSON: parse error at line 1, column 1: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
}

TEST(ServeDecode, RawFloat32Rows) {
  const std::vector<float> values = {1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f};
  Inputs in = decode_float32({reinterpret_cast<const char*>(values.data()), values.size() * 4}, {3});
  EXPECT_EQ(in.rows, 2);
  EXPECT_EQ(in.values, values);
  EXPECT_THROW(decode_float32({reinterpret_cast<const char*>(values.data()), 8}, {3}), ValueError);
  EXPECT_THROW(decode_float32({}, {3}), ValueError);
}

TEST(ServeEncode, NestedOutputsArgmaxAndNonFinite) {
  const std::vector<float> out = {0.1f, 3.f, -1.f, 2.f, 1e-8f, 2.5f};
  EXPECT_EQ(encode_json(out.data(), 2, {3}), R"({"outputs":[[0.1,3,-1],[2,1e-08,2.5]],"predictions":[1,2]})");
  EXPECT_EQ(encode_json(out.data(), 1, {3, 2}), R"({"outputs":[[[0.1,3],[-1,2],[1e-08,2.5]]]})");
  const std::vector<float> odd = {1, NAN, INFINITY};  // NaN is the largest, as in torch.argmax
  EXPECT_EQ(encode_json(odd.data(), 1, {3}), R"({"outputs":[[1,null,null]],"predictions":[1]})");
  EXPECT_EQ(encode_error("bad \"x\"\n"), R"({"error":"bad \"x\"\n"})");
}

TEST(ServeEncode, FloatsReadBackExactly) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-10, 10);
  std::vector<float> values(1000);
  for (float& v : values) v = dist(gen) * std::pow(10.f, static_cast<float>(static_cast<int>(gen() % 20) - 10));
  const std::string text = encode_json(values.data(), 1, {1000});
  const std::string inputs = "{\"inputs\": " + text.substr(11, text.find(",\"predictions\"") - 11) + "}";
  EXPECT_EQ(decode_json(inputs, {1000}).values, values);
}

TEST(ServeRateLimiter, BucketsRefillAtTheRate) {
  RateLimiter limiter(/*rate=*/2, /*burst=*/3);
  const auto t0 = RateLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.acquire("a", t0), 0);
  EXPECT_DOUBLE_EQ(limiter.acquire("a", t0), 0.5);
  EXPECT_EQ(limiter.acquire("b", t0), 0);  // per client
  EXPECT_DOUBLE_EQ(limiter.acquire("a", t0 + std::chrono::milliseconds(250)), 0.25);
  EXPECT_EQ(limiter.acquire("a", t0 + std::chrono::milliseconds(500)), 0);
  EXPECT_EQ(limiter.acquire("a", t0 + std::chrono::seconds(100)), 0);  // refilled to the burst, no more
  EXPECT_EQ(limiter.acquire("a", t0 + std::chrono::seconds(100)), 0);
  EXPECT_EQ(limiter.acquire("a", t0 + std::chrono::seconds(100)), 0);
  EXPECT_GT(limiter.acquire("a", t0 + std::chrono::seconds(100)), 0);
}

TEST(ServeRateLimiter, TheTableOfClientsIsBounded) {
  RateLimiter limiter(1, 1, /*max_clients=*/3);
  const auto t0 = RateLimiter::Clock::now();
  for (int i = 0; i < 10; ++i) limiter.acquire("client" + std::to_string(i), t0 + std::chrono::milliseconds(i));
  EXPECT_EQ(limiter.clients(), 3u);
  EXPECT_GT(limiter.acquire("client9", t0 + std::chrono::milliseconds(10)), 0);  // the newest are kept
  limiter.acquire("late", t0 + std::chrono::seconds(60));  // every other bucket has refilled: all forgotten
  EXPECT_EQ(limiter.clients(), 1u);
}

TEST(ServeAuth, BearerTokens) {
  EXPECT_TRUE(bearer_matches("Bearer abc", "abc"));
  for (const char* wrong : {"Bearer abd", "Bearer ab", "Bearer abcd", "bearer abc", "abc", "", "Bearer  abc"})
    EXPECT_FALSE(bearer_matches(wrong, "abc")) << wrong;

  const auto path = std::filesystem::temp_directory_path() / "ug_serve_test_token";
  std::ofstream(path) << "tok en\r\n";
  EXPECT_EQ(read_token_file(path.string()), "tok en");
  std::ofstream(path) << "\n";
  EXPECT_THROW(read_token_file(path.string()), ValueError);
  std::filesystem::remove(path);
  EXPECT_THROW(read_token_file(path.string()), FileNotFoundError);
}

TEST(ServeOptions, OnlyLoopbackWithoutAToken) {
  for (const char* host : {"127.0.0.1", "127.4.5.6", "::1", "localhost"}) EXPECT_TRUE(is_loopback(host)) << host;
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "example.com", ""})
    EXPECT_FALSE(is_loopback(host)) << host;
  ServeOptions options;
  EXPECT_NO_THROW(validate(options));
  options.host = "0.0.0.0";
  EXPECT_THROW(validate(options), ValueError);
  options.token_file = "token";
  EXPECT_NO_THROW(validate(options));
  options.max_batch = 0;
  EXPECT_THROW(validate(options), ValueError);
}

TEST(ServeMetrics, PrometheusText) {
  Metrics metrics;
  metrics.observe_request(200, std::chrono::microseconds(300));
  metrics.observe_request(200, std::chrono::milliseconds(3));
  metrics.observe_request(429, std::chrono::microseconds(20));
  metrics.observe_batch(3);
  Metrics::Prediction running(metrics);
  const std::string text = metrics.render(7);
  for (const char* line :
       {"ug_requests_total{code=\"200\"} 2\n", "ug_requests_total{code=\"429\"} 1\n",
        "ug_request_duration_seconds_bucket{le=\"0.0001\"} 1\n",
        "ug_request_duration_seconds_bucket{le=\"0.0005\"} 2\n",
        "ug_request_duration_seconds_bucket{le=\"0.0025\"} 2\n", "ug_request_duration_seconds_bucket{le=\"0.005\"} 3\n",
        "ug_request_duration_seconds_bucket{le=\"+Inf\"} 3\n", "ug_request_duration_seconds_count 3\n",
        "ug_request_duration_seconds_sum 0.00332\n", "ug_batch_size_bucket{le=\"2\"} 0\n",
        "ug_batch_size_bucket{le=\"4\"} 1\n", "ug_batch_size_sum 3\n", "ug_queue_depth 7\n",
        "ug_predictions_in_progress 1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
}

/** Doubles its input; each forward waits until the test opens the gate, and records its size. */
class GatedDoubler final : public ServedModel {
 public:
  std::string format() const override { return "test"; }
  std::string architecture() const override { return "doubler"; }
  std::map<std::string, std::variant<int64_t, std::string>> settings() const override { return {}; }
  const TensorSpec& input() const override { return spec_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Tensor predict(const Tensor& batch) override {
    std::unique_lock lock(mu_);
    batches_.push_back(batch.size(0));
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    return batch * 2.0;
  }

  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait_for_forwards(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return batches_.size() >= n; });
  }
  std::vector<int64_t> batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  TensorSpec spec_{.name = "x", .shape = {-1, 2}, .dtype = DType::Float32};
  std::vector<TensorSpec> outputs_{spec_};
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<int64_t> batches_;
};

std::shared_ptr<Job> job(float first, int64_t rows) {
  Inputs in{.values = {}, .rows = rows};
  for (int64_t i = 0; i < 2 * rows; ++i) in.values.push_back(first + static_cast<float>(i));
  return std::make_shared<Job>(std::move(in));
}

TEST(ServeBatcher, QueuedRequestsShareOneForwardAndGetTheirOwnRows) {
  GatedDoubler model;
  Metrics metrics;
  Batcher batcher(model, {.max_batch = 5, .batch_wait = std::chrono::microseconds(0), .max_queue = 10, .workers = 1},
                  metrics);
  std::vector<std::shared_ptr<Job>> jobs = {job(0, 1), job(100, 2), job(200, 1), job(300, 2), job(400, 1)};
  {
    Batcher::Arrival arrival(batcher);
    ASSERT_TRUE(batcher.submit(jobs[0], arrival));
  }
  model.wait_for_forwards(1);  // the first forward holds the worker; the rest queue up
  for (size_t i = 1; i < jobs.size(); ++i) {
    Batcher::Arrival arrival(batcher);
    ASSERT_TRUE(batcher.submit(jobs[i], arrival));
  }
  EXPECT_EQ(batcher.queue_depth(), 4);
  model.open();
  const auto deadline = Job::Clock::now() + std::chrono::seconds(10);
  for (const auto& j : jobs) ASSERT_EQ(batcher.wait(j, deadline), Batcher::Wait::Done);
  EXPECT_EQ(model.batches(), (std::vector<int64_t>{1, 5, 1}));  // 2+1+2 fill the batch of 5; the last waits
  for (const auto& j : jobs) {
    ASSERT_EQ(j->outputs.size(), j->inputs.values.size());
    for (size_t i = 0; i < j->outputs.size(); ++i) EXPECT_EQ(j->outputs[i], 2 * j->inputs.values[i]);
  }
  EXPECT_EQ(jobs[1]->batch_size, 5);
}

TEST(ServeBatcher, BoundedQueueAndTimeouts) {
  GatedDoubler model;
  Metrics metrics;
  Batcher batcher(model, {.max_batch = 4, .batch_wait = std::chrono::microseconds(0), .max_queue = 2, .workers = 1},
                  metrics);
  auto running = job(0, 1), queued = job(1, 1), second = job(2, 1), refused = job(3, 1);
  for (const auto& j : {running, queued, second}) {
    Batcher::Arrival arrival(batcher);
    ASSERT_TRUE(batcher.submit(j, arrival));
    if (j == running) model.wait_for_forwards(1);
  }
  Batcher::Arrival arrival(batcher);
  EXPECT_FALSE(batcher.submit(refused, arrival));
  const auto past = Job::Clock::now();
  EXPECT_EQ(batcher.wait(queued, past), Batcher::Wait::TimedOutQueued);
  EXPECT_EQ(batcher.queue_depth(), 1);
  EXPECT_EQ(batcher.wait(running, past), Batcher::Wait::TimedOutRunning);
  model.open();
  EXPECT_EQ(batcher.wait(second, Job::Clock::now() + std::chrono::seconds(10)), Batcher::Wait::Done);
  EXPECT_EQ(model.batches(), (std::vector<int64_t>{1, 1}));
}

TEST(ServeBatcher, AnIdleBatcherRunsARequestOnItsOwnThread) {
  GatedDoubler model;
  model.open();
  Metrics metrics;
  Batcher batcher(model, {.max_batch = 4, .batch_wait = std::chrono::microseconds(0), .max_queue = 2, .workers = 1},
                  metrics);
  auto alone = job(1, 2);
  {
    Batcher::Arrival arrival(batcher);
    ASSERT_TRUE(batcher.run_now(alone, arrival));
  }
  EXPECT_TRUE(alone->done);
  EXPECT_EQ(alone->outputs, (std::vector<float>{2, 4, 6, 8}));
  auto second = job(5, 1);
  Batcher::Arrival first_on_its_way(batcher), second_on_its_way(batcher);
  EXPECT_FALSE(batcher.run_now(second, second_on_its_way));  // another request is being decoded: batch them
  ASSERT_TRUE(batcher.submit(second, second_on_its_way));
  EXPECT_EQ(batcher.wait(second, Job::Clock::now() + std::chrono::seconds(10)), Batcher::Wait::Done);
  EXPECT_EQ(model.batches(), (std::vector<int64_t>{2, 1}));
}

}  // namespace
}  // namespace ug::serve
