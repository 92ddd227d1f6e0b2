#include "ug/serve/http_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace ug::serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/** poll(2) on one socket: > 0 ready (or failed: the next call says how), 0 timed out, < 0 error. */
int poll_socket(int sock, short events, milliseconds timeout) {
  pollfd fd{.fd = sock, .events = events, .revents = 0};
  int ready;
  do ready = ::poll(&fd, 1, static_cast<int>(timeout.count()));
  while (ready < 0 && errno == EINTR);
  return ready;
}

struct Endpoint {
  std::string ip;
  int port = 0;
};

/** The numeric address and port of the socket's peer (or its own, when `peer` is false). */
Endpoint endpoint_of(int sock, bool peer) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? ::getpeername(sock, generic, &length) : ::getsockname(sock, generic, &length)) != 0) return {};
  Endpoint endpoint;
  if (address.ss_family == AF_INET) endpoint.port = ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) endpoint.port = ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  char host[NI_MAXHOST];
  if (::getnameinfo(generic, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) endpoint.ip = host;
  return endpoint;
}

/** One accepted connection as an httplib::Stream: reads through a buffer kept for the whole
 *  connection, and gathers what is written until flush(), so an answer leaves in one `send`.
 *  A request must arrive whole within the read timeout of its first byte (httplib's own
 *  stream allows that much per `recv`, so a client sending a byte at a time held a thread for
 *  ever); after a timeout or an error the connection takes no more requests. */
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int sock, milliseconds read_timeout, milliseconds write_timeout)
      : sock_(sock),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout),
        remote_(endpoint_of(sock, true)),
        local_(endpoint_of(sock, false)),
        input_(kInputCapacity) {}

  bool is_readable() const override { return begin_ < end_ || poll_socket(sock_, POLLIN, time_left()) > 0; }
  bool is_writable() const override { return poll_socket(sock_, POLLOUT, write_timeout_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    // What was written before reading on (an "HTTP/1.1 100 Continue") must reach the client first.
    if (!flush()) return -1;
    if (begin_ == end_) {
      if (size >= input_.size()) return receive(ptr, size);
      const ssize_t received = receive(input_.data(), input_.size());
      if (received <= 0) return received;
      begin_ = 0;
      end_ = static_cast<size_t>(received);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, input_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    output_.append(ptr, size);
    if (output_.size() >= kFlushThreshold && !flush()) return -1;
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_.ip;
    port = remote_.port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_.ip;
    port = local_.port;
  }
  socket_t socket() const override { return sock_; }

  /** Sends what was written since the last flush; false when the peer is gone or too slow. */
  bool flush() {
    size_t sent = 0;
    bool ok = true;
    while (ok && sent < output_.size()) {
      const ssize_t n = ::send(sock_, output_.data() + sent, output_.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) sent += static_cast<size_t>(n);
      else if (errno != EINTR)
        ok = (errno == EAGAIN || errno == EWOULDBLOCK) && poll_socket(sock_, POLLOUT, write_timeout_) > 0;
    }
    output_.clear();
    return ok;
  }

  /** Waits for the next request and starts its read deadline: false once the connection has
   *  been idle for `idle`, or failed, or the server stops listening (looked at every 10 ms, as
   *  httplib's own loop does). */
  bool await_request(milliseconds idle, const std::atomic<socket_t>& listener) {
    const auto idle_until = Clock::now() + idle;
    bool ready = begin_ < end_;
    while (!ready && !failed_ && listener != INVALID_SOCKET && Clock::now() < idle_until) {
      const int polled = poll_socket(sock_, POLLIN, milliseconds(10));
      failed_ = polled < 0;
      ready = polled > 0;
    }
    read_deadline_ = Clock::now() + read_timeout_;
    return ready && !failed_;
  }

 private:
  // A whole request of the served MLP (784 numbers as JSON) in one `recv`.
  static constexpr size_t kInputCapacity = 16 * 1024;
  // Large answers go out in pieces rather than growing the buffer without bound.
  static constexpr size_t kFlushThreshold = 256 * 1024;

  /** recv(2), waiting only when nothing has arrived yet, and not past the request's deadline. */
  ssize_t receive(char* ptr, size_t size) {
    while (!failed_) {
      const ssize_t n = ::recv(sock_, ptr, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      failed_ = (errno != EAGAIN && errno != EWOULDBLOCK) || poll_socket(sock_, POLLIN, time_left()) <= 0;
    }
    return -1;
  }
  milliseconds time_left() const {
    return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(read_deadline_ - Clock::now()));
  }

  int sock_;
  milliseconds read_timeout_, write_timeout_;
  Clock::time_point read_deadline_;
  bool failed_ = false;
  Endpoint remote_, local_;
  std::vector<char> input_;
  size_t begin_ = 0, end_ = 0;
  std::string output_;
};

milliseconds to_milliseconds(time_t sec, time_t usec) { return milliseconds(sec * 1000 + usec / 1000); }

}  // namespace

bool HttpServer::process_and_close_socket(socket_t sock) {
  ConnectionStream stream(sock, to_milliseconds(read_timeout_sec_, read_timeout_usec_),
                          to_milliseconds(write_timeout_sec_, write_timeout_usec_));
  const milliseconds idle = to_milliseconds(keep_alive_timeout_sec_, 0);
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0 && stream.await_request(idle, svr_sock_); --left) {
    bool closed = false;
    ok = process_request(stream, left == 1, closed, nullptr);
    ok = stream.flush() && ok;
    if (!ok || closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace ug::serve
