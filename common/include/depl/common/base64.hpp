// Base64 (RFC 4648, standard alphabet): kubeconfig *-data fields, basic auth, Secret data.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace depl {

std::string base64_encode(std::string_view bytes);
// Ignores ASCII whitespace; nullopt on any other invalid character or bad padding.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace depl
