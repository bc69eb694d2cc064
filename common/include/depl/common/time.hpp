// RFC 3339 timestamps as Kubernetes writes them: Time ("2026-11-22T05:00:00Z", whole seconds;
// creationTimestamp, conditions, Events) and MicroTime ("2026-11-22T05:00:00.000000Z"; Lease
// times), always in UTC and independent of the process time zone, and a parser for what other
// writers send (fractional seconds, numeric offsets).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace depl {

// "2026-11-22T05:00:00Z": UTC, whole seconds (the fraction is dropped, not rounded).
std::string format_rfc3339(std::chrono::system_clock::time_point time);
// "2026-11-22T05:00:00.000000Z": UTC, microseconds.
std::string format_rfc3339_micro(std::chrono::system_clock::time_point time);
// The same for a Unix time given as seconds and nanoseconds (protobuf's Timestamp, which
// Kubernetes' Time and MicroTime are on the wire), whole seconds or `micro`seconds. nullopt when
// it falls outside the years 0000-9999, which RFC 3339 cannot write (Go's encoder refuses them
// too), or when `nanos` is outside [0, 1e9). Years that far out do not fit a system_clock
// time_point, hence seconds.
std::optional<std::string> format_rfc3339_unix(std::int64_t seconds, std::int64_t nanos,
                                               bool micro);
// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" ('t' and 'z' allowed in lower case);
// nullopt for anything else, an impossible date included.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace depl
