#include "ug/serve/handlers.h"

#include <nlohmann/json.hpp>

#include "ug/core/error.h"
#include "ug/serve/decode.h"
#include "ug/serve/encode.h"

namespace ug::serve {

namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kFloat32 = "application/octet-stream";

nlohmann::json spec_json(const TensorSpec& spec) {
  return {{"name", spec.name}, {"shape", spec.shape}, {"dtype", std::string(dtype_name(spec.dtype))}};
}

std::string describe(const ServedModel& model, const ServeOptions& options) {
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [key, value] : model.settings())
    std::visit([&, &key = key](const auto& v) { settings[key] = v; }, value);
  nlohmann::json outputs = nlohmann::json::array();
  for (const TensorSpec& spec : model.outputs()) outputs.push_back(spec_json(spec));
  return nlohmann::json{{"format", model.format()}, {"architecture", model.architecture()},
                        {"settings", settings},     {"inputs", {spec_json(model.input())}},
                        {"outputs", outputs},       {"max_batch", options.max_batch}}
      .dump();
}

std::string shape_header(int64_t rows, const std::vector<int64_t>& row_shape) {
  std::string out = std::to_string(rows);
  for (int64_t d : row_shape) {
    out += ',';
    out += std::to_string(d);
  }
  return out;
}

}  // namespace

RequestContext& current_request() {
  thread_local RequestContext context;
  return context;
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(encode_error(message), kJson);
}

Handlers::Handlers(ServedModel& model, Batcher& batcher, Metrics& metrics, const ServeOptions& options)
    : model_(model),
      batcher_(batcher),
      metrics_(metrics),
      options_(options),
      sample_shape_(model.sample_shape()),
      output_shape_(model.output_sample_shape()),
      model_json_(describe(model, options)),
      health_json_(nlohmann::json{{"status", "ok"}, {"architecture", model.architecture()}}.dump()) {}

void Handlers::predict(const httplib::Request& req, httplib::Response& res) {
  Metrics::Prediction in_progress(metrics_);
  Batcher::Arrival arrival(batcher_);
  Inputs inputs;
  try {
    inputs = req.get_header_value("Content-Type").starts_with(kFloat32) ? decode_float32(req.body, sample_shape_)
                                                                        : decode_json(req.body, sample_shape_);
  } catch (const ValueError& e) {
    send_error(res, 400, e.what());
    return;
  }
  const int64_t rows = inputs.rows;
  auto job = std::make_shared<Job>(std::move(inputs));
  if (!run(job, arrival, res)) return;
  if (!job->error.empty()) {
    send_error(res, 500, job->error);
    return;
  }
  current_request().batch_size = job->batch_size;
  if (req.get_header_value("Accept").find(kFloat32) != std::string::npos) {
    res.set_header("X-Output-Shape", shape_header(rows, output_shape_));
    res.set_content(reinterpret_cast<const char*>(job->outputs.data()), job->outputs.size() * sizeof(float), kFloat32);
    return;
  }
  res.set_content(encode_json(job->outputs.data(), rows, output_shape_), kJson);
}

bool Handlers::run(const std::shared_ptr<Job>& job, Batcher::Arrival& arrival, httplib::Response& res) {
  if (batcher_.run_now(job, arrival)) return true;
  if (!batcher_.submit(job, arrival)) {
    res.set_header("Retry-After", "1");
    send_error(res, 503, "the queue is full (" + std::to_string(options_.max_queue) + " requests); retry later");
    return false;
  }
  const std::string limit = std::to_string(options_.timeout_ms) + " ms";
  switch (batcher_.wait(job, current_request().start + std::chrono::milliseconds(options_.timeout_ms))) {
    case Batcher::Wait::Done: return true;
    case Batcher::Wait::TimedOutQueued:
      res.set_header("Retry-After", "1");
      send_error(res, 503, "the model did not start on the request within " + limit);
      return false;
    case Batcher::Wait::TimedOutRunning: send_error(res, 504, "the model did not answer within " + limit); return false;
  }
  return false;
}

void Handlers::healthz(const httplib::Request&, httplib::Response& res) { res.set_content(health_json_, kJson); }

void Handlers::metrics(const httplib::Request&, httplib::Response& res) {
  res.set_content(metrics_.render(batcher_.queue_depth()), "text/plain; version=0.0.4");
}

void Handlers::model_info(const httplib::Request&, httplib::Response& res) { res.set_content(model_json_, kJson); }

}  // namespace ug::serve
