// RFC 3339 timestamps (second precision, UTC) as the API writes them in conditions and states.
#pragma once

#include <chrono>
#include <string>

namespace depl::devcluster {

std::string rfc3339(std::chrono::system_clock::time_point t);
inline std::string rfc3339_now() {
  return rfc3339(std::chrono::system_clock::now());
}

}  // namespace depl::devcluster
