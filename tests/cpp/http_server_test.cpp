// ug::serve::HttpServer, httplib's server with unigrad's connection loop, seen from a raw TCP
// client: one segment per answer, pipelining, "100 Continue", large answers, keep-alive limits,
// the read deadline of a request, and stop() ending idle connections.
#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include "ug/serve/http_server.h"

namespace ug::serve {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/** The kernel's tcp_info (Linux 4.6+) as far as tcpi_data_segs_in: glibc's <netinet/tcp.h>,
 *  which httplib includes (and <linux/tcp.h> clashes with), stops at tcpi_total_retrans. */
struct TcpInfo {
  tcp_info glibc;
  uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
  uint32_t segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in, data_segs_out;
};
static_assert(offsetof(TcpInfo, data_segs_in) == 152, "the layout of <linux/tcp.h>");

/** An HttpServer on a free loopback port, listening on its own thread until destroyed. */
class Running {
 public:
  explicit Running(HttpServer& server) : server_(server) {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~Running() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  HttpServer& server_;
  int port_ = -1;
  std::thread thread_;
};

/** A blocking loopback client socket. */
class Client {
 public:
  explicit Client(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  }
  ~Client() { ::close(fd_); }
  int fd() const { return fd_; }

  void send(const std::string& bytes) const {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  /** Reads until `text` holds `count` whole answers (each with a Content-Length), or the
   *  connection closes, or 5 s pass. */
  std::string answers(int count) {
    const auto deadline = Clock::now() + 5s;
    while (complete_answers() < count && Clock::now() < deadline) {
      if (!readable(50ms)) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      text_.append(chunk, static_cast<size_t>(n));
    }
    return text_;
  }
  bool readable(std::chrono::milliseconds timeout) const {
    pollfd fd{.fd = fd_, .events = POLLIN, .revents = 0};
    return ::poll(&fd, 1, static_cast<int>(timeout.count())) > 0;
  }
  /** True once the server has closed the connection (a read gives end of file). */
  bool closed_within(std::chrono::milliseconds timeout) const {
    char byte;
    return readable(timeout) && ::recv(fd_, &byte, 1, MSG_DONTWAIT) == 0;
  }
  /** TCP segments with data this socket has received. */
  uint32_t data_segments_in() const {
    TcpInfo info{};
    socklen_t length = sizeof info;
    EXPECT_EQ(::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &length), 0);
    EXPECT_GE(length, offsetof(TcpInfo, data_segs_out));
    return info.data_segs_in;
  }
  int local_port() const {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    return ntohs(address.sin_port);
  }

 private:
  int complete_answers() const {
    int count = 0;
    for (size_t at = 0;;) {
      const size_t head_end = text_.find("\r\n\r\n", at);
      if (head_end == std::string::npos) return count;
      const std::string head = text_.substr(at, head_end - at);
      const size_t length_at = head.find("Content-Length: ");
      const size_t length = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 16));
      if (text_.size() < head_end + 4 + length) return count;
      at = head_end + 4 + length;
      ++count;
    }
  }

  int fd_;
  std::string text_;
};

std::string get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n";
}

/** A server answering GET /echo/<word> with the word and POST /echo with the body. */
void add_echo(HttpServer& server) {
  server.Get("/echo/(\\w+)", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.matches[1].str(), "text/plain");
  });
  server.Post("/echo",
              [](const httplib::Request& req, httplib::Response& res) { res.set_content(req.body, "text/plain"); });
}

TEST(HttpServer, AnAnswerLeavesInOneSegment) {
  HttpServer server;
  server.set_tcp_nodelay(true);
  add_echo(server);
  Running running(server);
  Client client(running.port());
  for (int i = 1; i <= 3; ++i) {
    const uint32_t before = client.data_segments_in();
    client.send(get("/echo/hello"));
    const std::string text = client.answers(i);
    ASSERT_EQ(text.substr(text.size() - 5), "hello");
    // httplib 0.11's own connection loop sends the head and the body apart: 2 segments.
    EXPECT_EQ(client.data_segments_in() - before, 1u) << "answer " << i;
  }
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  HttpServer server;
  add_echo(server);
  Running running(server);
  Client client(running.port());
  client.send(get("/echo/first") + get("/echo/second") + get("/echo/third"));
  const std::string text = client.answers(3);
  const size_t first = text.find("\r\n\r\nfirst"), second = text.find("\r\n\r\nsecond"),
               third = text.find("\r\n\r\nthird");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  ASSERT_NE(third, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
}

TEST(HttpServer, ContinueReachesTheClientBeforeItSendsTheBody) {
  HttpServer server;
  add_echo(server);
  Running running(server);
  Client client(running.port());
  client.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(client.readable(2s)) << "no interim answer while the server waits for the body";
  client.send("world");
  const std::string text = client.answers(2);  // "100 Continue" has no body: it counts as one
  EXPECT_EQ(text.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("HTTP/1.1 200 OK"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 5), "world");
}

TEST(HttpServer, LargeAnswersArriveWhole) {
  HttpServer server;
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7919) % 26);
  server.Get("/big", [&](const httplib::Request&, httplib::Response& res) { res.set_content(big, "text/plain"); });
  Running running(server);
  Client client(running.port());
  client.send(get("/big") + get("/big"));
  const std::string text = client.answers(2);
  const size_t first_body = text.find("\r\n\r\n") + 4;
  ASSERT_EQ(text.compare(first_body, big.size(), big), 0);
  EXPECT_EQ(text.substr(text.size() - big.size()), big);
}

TEST(HttpServer, TheRequestSeesThePeersAddress) {
  HttpServer server;
  server.Get("/who", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.remote_addr + " " + std::to_string(req.remote_port) + " " + req.local_addr, "text/plain");
  });
  Running running(server);
  Client client(running.port());
  client.send(get("/who"));
  const std::string text = client.answers(1);
  EXPECT_EQ(text.substr(text.find("\r\n\r\n") + 4), "127.0.0.1 " + std::to_string(client.local_port()) + " 127.0.0.1");
}

TEST(HttpServer, KeepAliveLimits) {
  HttpServer server;
  add_echo(server);
  server.set_keep_alive_max_count(2);
  server.set_keep_alive_timeout(1);
  Running running(server);
  {
    Client client(running.port());
    client.send(get("/echo/a") + get("/echo/b") + get("/echo/c"));
    const std::string text = client.answers(3);
    EXPECT_EQ(text.find("/echo/c"), std::string::npos);
    EXPECT_NE(text.find("Connection: close"), std::string::npos) << text;
    EXPECT_EQ(text.substr(text.size() - 1), "b") << "the third request is not answered";
    EXPECT_TRUE(client.closed_within(1s));
  }
  {
    Client client(running.port());
    client.send(get("/echo/a"));
    client.answers(1);
    const auto start = Clock::now();
    EXPECT_TRUE(client.closed_within(3s)) << "an idle connection outlived the keep-alive timeout";
    EXPECT_GE(Clock::now() - start, 900ms);
  }
}

TEST(HttpServer, ARequestMustArriveWithinTheReadTimeout) {
  HttpServer server;
  add_echo(server);
  server.set_read_timeout(std::chrono::milliseconds(500));
  Running running(server);
  Client client(running.port());
  // A byte every 100 ms: each arrives well within the timeout, the request does not.
  const std::string request = get("/echo/slow");
  const auto start = Clock::now();
  bool closed = false;
  for (size_t i = 0; i < request.size() && !closed; ++i) {
    if (::send(client.fd(), &request[i], 1, MSG_NOSIGNAL) != 1) break;
    closed = client.closed_within(100ms);
  }
  EXPECT_TRUE(closed || client.closed_within(1s));
  EXPECT_LT(Clock::now() - start, 1500ms) << "the server waited for a request dribbled a byte at a time";
  EXPECT_EQ(client.answers(1).find("slow"), std::string::npos);

  Client prompt(running.port());  // the server still answers others
  prompt.send(get("/echo/prompt"));
  const std::string text = prompt.answers(1);
  EXPECT_EQ(text.substr(text.size() - 6), "prompt");
}

TEST(HttpServer, StopEndsIdleConnectionsAtOnce) {
  HttpServer server;
  add_echo(server);
  server.set_keep_alive_timeout(30);
  Running running(server);
  Client client(running.port());
  client.send(get("/echo/a"));
  client.answers(1);
  const auto start = Clock::now();
  running.stop();
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_TRUE(client.closed_within(1s));
}

}  // namespace
}  // namespace ug::serve
