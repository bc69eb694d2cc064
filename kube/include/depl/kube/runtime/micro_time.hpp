// Kubernetes timestamp text: Time ("2026-01-01T00:00:00Z", whole seconds; Event timestamps) and
// MicroTime ("2026-01-01T00:00:00.000000Z"; Lease acquireTime/renewTime), always UTC.
#pragma once

#include <chrono>
#include <string>

namespace depl::kube {

std::string format_time(std::chrono::system_clock::time_point time);
std::string format_micro_time(std::chrono::system_clock::time_point time);

}  // namespace depl::kube
