// `ug serve`'s HTTP server: a model behind POST /predict with authentication, rate limits,
// body and queue bounds, timeouts, dynamic batching, metrics and an access log.
#pragma once

#include <memory>

#include "ug/serve/options.h"
#include "ug/serve/served_model.h"

namespace ug::serve {

class Server {
 public:
  /** Checks the options (ValueError, e.g. a non-loopback host without a token file) and
   *  reads the token file; starts the batching workers. */
  Server(std::unique_ptr<ServedModel> model, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /** Binds host:port (port 0: a free one) and returns the port; RuntimeError naming the
   *  address and the reason (e.g. "Address already in use") when it cannot. */
  int bind();
  /** Answers requests until stop(); returns once the requests in flight are answered. */
  void run();
  /** Stops accepting; safe from any thread. */
  void stop();

  const ServedModel& model() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ug::serve
