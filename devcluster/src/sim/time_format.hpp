// The time the simulated parts write into conditions and states: common's RFC 3339 Time (whole
// seconds, UTC) of now.
#pragma once

#include <chrono>
#include <string>

#include "depl/common/time.hpp"

namespace depl::devcluster {

inline std::string rfc3339_now() {
  return format_rfc3339(std::chrono::system_clock::now());
}

}  // namespace depl::devcluster
