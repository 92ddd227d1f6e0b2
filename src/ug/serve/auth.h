// Bearer-token authentication: the token comes from a file; requests carry
// `Authorization: Bearer <token>`, compared in constant time.
#pragma once

#include <string>
#include <string_view>

namespace ug::serve {

/** The token in `path` without its trailing newline; fails when the file is missing or empty. */
std::string read_token_file(const std::string& path);

/** Whether an Authorization header value is "Bearer <token>". Takes the same time whatever
 *  the header holds (for a given header length), so timing reveals nothing of the token. */
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace ug::serve
