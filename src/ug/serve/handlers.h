// The HTTP endpoints: POST /predict, GET /healthz, GET /metrics, GET /v1/model.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

#include "ug/serve/batcher.h"
#include "ug/serve/metrics.h"
#include "ug/serve/options.h"
#include "ug/serve/served_model.h"

namespace ug::serve {

/** What the access log and the metrics need of the request this thread is serving: httplib
 *  serves a request on one thread, from its headers to the log line. */
struct RequestContext {
  std::chrono::steady_clock::time_point start;
  int64_t batch_size = 0;
};
RequestContext& current_request();

/** A JSON {"error": message} answer. */
void send_error(httplib::Response& res, int status, const std::string& message);

class Handlers {
 public:
  Handlers(ServedModel& model, Batcher& batcher, Metrics& metrics, const ServeOptions& options);

  void predict(const httplib::Request& req, httplib::Response& res);
  void healthz(const httplib::Request& req, httplib::Response& res);
  void metrics(const httplib::Request& req, httplib::Response& res);
  void model_info(const httplib::Request& req, httplib::Response& res);

 private:
  /** Runs the job, at once or through the queue; false when it was refused or timed out, with
   *  the error answer in `res`. */
  bool run(const std::shared_ptr<Job>& job, Batcher::Arrival& arrival, httplib::Response& res);

  ServedModel& model_;
  Batcher& batcher_;
  Metrics& metrics_;
  const ServeOptions& options_;
  const std::vector<int64_t> sample_shape_, output_shape_;
  const std::string model_json_, health_json_;
};

}  // namespace ug::serve
