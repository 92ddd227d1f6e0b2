#include "ug/serve/options.h"

#include <arpa/inet.h>

#include <cstring>

#include "ug/core/error.h"

namespace ug::serve {

void validate(const ServeOptions& o) {
  if (!is_loopback(o.host) && o.token_file.empty())
    fail<ValueError>("refusing to serve on ", o.host,
                     " without authentication: give --token-file, or serve on 127.0.0.1");
  if (o.port < 0 || o.port > 65535) fail<ValueError>("port must be from 0 to 65535, got ", o.port);
  if (!(o.rate >= 0) || !(o.burst >= 0))
    fail<ValueError>("rate and burst must be >= 0, got ", o.rate, " and ", o.burst);
  if (o.max_batch < 1 || o.max_queue < 1 || o.max_body < 1 || o.timeout_ms < 1 || o.batch_wait_us < 0)
    fail<ValueError>("max batch, max queue, max body and timeout must be positive and batch wait >= 0");
  if (o.threads < 1 || o.workers < 1 || o.http_threads < 1) fail<ValueError>("thread counts must be positive");
}

bool is_loopback(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
}

}  // namespace ug::serve
