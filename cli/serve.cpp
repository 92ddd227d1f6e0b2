// `ug serve MODEL`: serves a saved model over HTTP until SIGTERM or SIGINT, then finishes the
// requests in flight and exits 0.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli.h"
#include "ug/core/error.h"
#include "ug/core/thread_pool.h"
#include "ug/serve/server.h"

namespace ug::cli {

namespace {

serve::ServeOptions parse_serve_flags(const Args& args, std::string& path) {
  serve::ServeOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = option_name(args[i]);
    if (name == "--host") o.host = option_value(args, i);
    else if (name == "--port") o.port = static_cast<int>(parse_int(name, option_value(args, i), 0, 65535));
    else if (name == "--token-file") o.token_file = option_value(args, i);
    else if (name == "--rate") o.rate = parse_double(name, option_value(args, i), 0, 1e9);
    else if (name == "--burst") o.burst = parse_double(name, option_value(args, i), 1, 1e9);
    else if (name == "--max-batch") o.max_batch = parse_int(name, option_value(args, i), 1, 1 << 16);
    else if (name == "--batch-wait-us") o.batch_wait_us = parse_int(name, option_value(args, i), 0, 1000000);
    else if (name == "--max-body") o.max_body = parse_int(name, option_value(args, i), 1, int64_t{1} << 32);
    else if (name == "--max-queue") o.max_queue = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (name == "--timeout-ms") o.timeout_ms = parse_int(name, option_value(args, i), 1, 3600000);
    else if (name == "--threads") o.threads = static_cast<int>(parse_int(name, option_value(args, i), 1, 1024));
    else if (name == "--workers") o.workers = static_cast<int>(parse_int(name, option_value(args, i), 1, 64));
    else if (name == "--http-threads")
      o.http_threads = static_cast<int>(parse_int(name, option_value(args, i), 1, 4096));
    else if (name == "--no-access-log") o.access_log = false;
    else if (args[i].starts_with("-")) throw UsageError("unknown option '" + std::string(args[i]) + "'");
    else if (!path.empty())
      throw UsageError("expected one model file, got '" + path + "' and '" + std::string(args[i]) + "'");
    else path = args[i];
  }
  if (path.empty()) throw UsageError("expected a model file (model.safetensors from `ug train`)");
  try {
    serve::validate(o);
  } catch (const ValueError& e) {
    throw UsageError(e.what());
  }
  return o;
}

/** SIGTERM and SIGINT write their number into a pipe that a thread waits on. Blocking the
 *  signals and sigwait-ing would not do: OpenBLAS starts its threads before main, with the
 *  signals unblocked, and one of them would take the signal's default action. */
class ShutdownSignals {
 public:
  ShutdownSignals() {
    if (pipe(fds_) != 0) fail<RuntimeError>("[serve] cannot create the shutdown pipe");
    write_end_ = fds_[1];
    struct sigaction action {};
    action.sa_handler = [](int signal) {
      const char byte = static_cast<char>(signal);
      [[maybe_unused]] const ssize_t n = write(write_end_, &byte, 1);
    };
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
  }
  ~ShutdownSignals() {
    // The program is ending: a repeated signal changes nothing, and must not reach a closed pipe.
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    close(fds_[0]);
    close(fds_[1]);
  }
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  /** Blocks until a signal came or wake() was called; returns the signal, or 0 for wake(). */
  int wait() {
    char byte = 0;
    while (read(fds_[0], &byte, 1) < 0 && errno == EINTR) {}
    return byte;
  }
  void wake() {
    const char byte = 0;
    [[maybe_unused]] const ssize_t n = write(fds_[1], &byte, 1);
  }

 private:
  static inline int write_end_ = -1;
  int fds_[2] = {-1, -1};
};

}  // namespace

int run_serve(const Args& args) {
  std::string path;
  const serve::ServeOptions options = parse_serve_flags(args, path);
  ShutdownSignals signals;
  set_num_threads(options.threads);
  serve::Server server(serve::open_model(path), options);
  const int port = server.bind();
  const serve::ServedModel& model = server.model();
  const bool ipv6 = options.host.find(':') != std::string::npos;
  const std::string address = (ipv6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(port);
  char rate[48] = "unlimited";
  if (options.rate > 0) std::snprintf(rate, sizeof rate, "%g/s per client", options.rate);
  std::printf("ug serve: %s model %s on http://%s (threads %d, workers %d, max batch %lld, rate %s)\n",
              model.format().c_str(), model.architecture().c_str(), address.c_str(), options.threads, options.workers,
              static_cast<long long>(options.max_batch), rate);
  std::fflush(stdout);

  int received = 0;
  std::thread waiter([&] {
    received = signals.wait();
    server.stop();
  });
  server.run();
  signals.wake();  // when run() ended on its own
  waiter.join();
  if (received == 0) {
    std::fprintf(stderr, "ug serve: error: the server stopped unexpectedly\n");
    return 1;
  }
  std::printf("ug serve: stopped\n");
  return 0;
}

}  // namespace ug::cli
