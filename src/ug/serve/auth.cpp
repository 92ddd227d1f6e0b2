#include "ug/serve/auth.h"

#include <fstream>
#include <sstream>

#include "ug/core/error.h"

namespace ug::serve {

std::string read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<FileNotFoundError>("[serve] cannot read the token file ", path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) fail<ValueError>("[serve] the token file ", path, " is empty");
  return token;
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view scheme = "Bearer ";
  // Every byte of the header is compared, against the expected header cycled when lengths
  // differ; the length mismatch is folded into the result instead of returning early.
  const std::string expected = std::string(scheme) + std::string(token);
  unsigned char diff = authorization.size() != expected.size();
  for (size_t i = 0; i < authorization.size(); ++i)
    diff |= static_cast<unsigned char>(authorization[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

}  // namespace ug::serve
