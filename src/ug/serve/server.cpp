#include "ug/serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "ug/core/error.h"
#include "ug/serve/auth.h"
#include "ug/serve/batcher.h"
#include "ug/serve/handlers.h"
#include "ug/serve/http_server.h"
#include "ug/serve/metrics.h"
#include "ug/serve/rate_limiter.h"

namespace ug::serve {

namespace {

using Clock = std::chrono::steady_clock;
using httplib::Request, httplib::Response;

/** `text` with control and non-ASCII bytes as '?': a decoded path must not forge log lines. */
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

/** The methods each path answers, for 405 and its Allow header. */
const char* allowed_methods(const std::string& path) {
  if (path == "/predict") return "POST";
  if (path == "/healthz" || path == "/metrics" || path == "/v1/model") return "GET";
  return nullptr;
}

}  // namespace

struct Server::Impl {
  Impl(std::unique_ptr<ServedModel> m, ServeOptions o)
      : options(std::move(o)),
        model(std::move(m)),
        token(options.token_file.empty() ? "" : read_token_file(options.token_file)),
        batcher(*model,
                {.max_batch = options.max_batch,
                 .batch_wait = std::chrono::microseconds(options.batch_wait_us),
                 .max_queue = options.max_queue,
                 .workers = options.workers},
                metrics),
        handlers(*model, batcher, metrics, options) {
    if (options.rate > 0) limiter.emplace(options.rate, options.burst > 0 ? options.burst : options.rate);
    configure();
  }

  void configure() {
    const int pool_size = options.http_threads;
    http.new_task_queue = [pool_size] { return new httplib::ThreadPool(static_cast<size_t>(pool_size)); };
    http.set_tcp_nodelay(true);  // otherwise Nagle and delayed ACKs hold each answer ~40 ms
    const auto timeout = std::chrono::milliseconds(options.timeout_ms);
    http.set_read_timeout(timeout);
    http.set_write_timeout(timeout);
    // An idle keep-alive connection holds a pool thread: let it go after 2 s.
    http.set_keep_alive_timeout(2);
    http.set_keep_alive_max_count(1000);
    http.set_payload_max_length(static_cast<size_t>(options.max_body));
    // httplib's default options add SO_REUSEPORT, with which a second server binds the same
    // port without an error and the kernel splits the connections between the two.
    http.set_socket_options([this](int fd) {
      const int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = fd;
    });

    http.set_pre_routing_handler([](const Request&, Response&) {
      current_request() = {.start = Clock::now(), .batch_size = 0};
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.Post("/predict", admitted(&Handlers::predict));
    http.Get("/healthz", admitted(&Handlers::healthz));
    http.Get("/metrics", admitted(&Handlers::metrics));
    http.Get("/v1/model", admitted(&Handlers::model_info));
    http.set_error_handler([this](const Request& req, Response& res) { explain_error(req, res); });
    http.set_exception_handler([](const Request&, Response& res, std::exception_ptr error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        send_error(res, 500, e.what());
      }
    });
    http.set_logger([this](const Request& req, const Response& res) { log(req, res); });
  }

  /** The endpoint behind the rate limit, then authentication. They run after httplib has read
   *  the body (at most --max-body bytes): answering before would leave the body unread on a
   *  keep-alive connection, to be taken for the next request. */
  httplib::Server::Handler admitted(void (Handlers::*endpoint)(const Request&, Response&)) {
    return [this, endpoint](const Request& req, Response& res) {
      if (admit(req, res)) (handlers.*endpoint)(req, res);
    };
  }

  bool admit(const Request& req, Response& res) {
    if (limiter) {
      if (const double wait_s = limiter->acquire(req.remote_addr); wait_s > 0) {
        res.set_header("Retry-After", std::to_string(static_cast<int64_t>(std::ceil(wait_s))));
        send_error(res, 429, "rate limit exceeded: at most " + format_rate() + " requests per second per client");
        return false;
      }
    }
    if (!token.empty() && req.path != "/healthz" && !bearer_matches(req.get_header_value("Authorization"), token)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"ug serve\"");
      send_error(res, 401,
                 req.has_header("Authorization") ? "wrong bearer token" : "missing Authorization: Bearer <token>");
      return false;
    }
    return true;
  }

  std::string format_rate() const {
    char text[32];
    std::snprintf(text, sizeof text, "%g", options.rate);
    return text;
  }

  /** Errors httplib answers itself (unknown path, body too large, bad request) get a JSON
   *  message; a known path with the wrong method gets 405. */
  void explain_error(const Request& req, Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      if (const char* allow = allowed_methods(req.path)) {
        res.status = 405;
        res.set_header("Allow", allow);
        send_error(res, 405, req.method + " is not allowed on " + req.path + "; use " + allow);
        return;
      }
      send_error(res, 404,
                 "no endpoint " + req.path +
                     "; the endpoints are POST /predict, GET /healthz, "
                     "GET /metrics and GET /v1/model");
      return;
    }
    if (res.status == 413) {
      send_error(res, 413, "the body is larger than " + std::to_string(options.max_body) + " bytes");
      return;
    }
    send_error(res, res.status,
               res.status == 400 ? "malformed HTTP request" : "HTTP status " + std::to_string(res.status));
  }

  void log(const Request& req, const Response& res) {
    RequestContext& context = current_request();
    const auto latency = context.start == Clock::time_point{} ? Clock::duration{} : Clock::now() - context.start;
    metrics.observe_request(res.status, latency);
    if (options.access_log)
      std::fprintf(stderr, "%s %s %s %d %zu %lldus batch=%lld\n", req.remote_addr.c_str(), req.method.c_str(),
                   printable(req.path).c_str(), res.status, res.body.size(),
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(latency).count()),
                   static_cast<long long>(context.batch_size));
    context = {};
  }

  ServeOptions options;
  std::unique_ptr<ServedModel> model;
  std::string token;
  Metrics metrics;
  std::optional<RateLimiter> limiter;
  Batcher batcher;
  Handlers handlers;
  int listen_fd = -1;
  // stop() may come before run() has started listening (or before it is called at all).
  std::mutex run_mutex;
  bool stop_requested = false, run_started = false;
  std::atomic<bool> run_finished = false;
  HttpServer http;  // last: destroyed first, before what its handlers use
};

Server::Server(std::unique_ptr<ServedModel> model, ServeOptions options) {
  validate(options);
  impl_ = std::make_unique<Impl>(std::move(model), std::move(options));
}

Server::~Server() = default;

int Server::bind() {
  const ServeOptions& o = impl_->options;
  errno = 0;
  const int port =
      o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    fail<RuntimeError>("cannot listen on ", o.host, ":", o.port, ": ",
                       errno ? std::strerror(errno) : "not an address of this machine");
  // httplib listens with a backlog of 5: a burst of new connections overflows it and the
  // dropped ones retry a second later. Listening again raises the backlog.
  ::listen(impl_->listen_fd, SOMAXCONN);
  return port;
}

void Server::run() {
  {
    std::lock_guard lock(impl_->run_mutex);
    if (impl_->stop_requested) return;
    impl_->run_started = true;
  }
  impl_->http.listen_after_bind();
  impl_->run_finished = true;
}

void Server::stop() {
  {
    std::lock_guard lock(impl_->run_mutex);
    impl_->stop_requested = true;
    if (!impl_->run_started) return;  // a later run() returns at once
  }
  // httplib's stop() does nothing until listen_after_bind() has started: wait for that.
  while (!impl_->http.is_running() && !impl_->run_finished) std::this_thread::yield();
  impl_->http.stop();
}

const ServedModel& Server::model() const { return *impl_->model; }

}  // namespace ug::serve
