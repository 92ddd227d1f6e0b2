#pragma once

#include <httplib.h>

namespace ug::serve {

/** cpp-httplib's server with its own keep-alive loop over a buffered connection stream.
 *
 *  httplib 0.11 (Debian 12's) sends an answer's status line and headers in one `send` and its
 *  body in another, each after two `poll`s: two TCP segments and two wake-ups of the client per
 *  answer, which bounds one connection's requests per second. Here each answer leaves in one
 *  `send`, reads go through a buffer that lasts the whole connection, and the peer's address is
 *  looked up once per connection. Parsing, routing and answering stay httplib's: the loop calls
 *  its `process_request`, the hook its own TLS server uses. */
class HttpServer : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override;
};

}  // namespace ug::serve
