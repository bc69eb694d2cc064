// Internal to depl_common: the scalar rules both directions of the YAML <-> JSON bridge share,
// so that what the writer leaves unquoted is exactly what the reader types as a string.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace depl::yaml_detail {

// Returned by next_code_point for a byte that does not start a valid UTF-8 sequence.
constexpr std::int32_t kInvalidCodePoint = -1;

// Decodes one code point at s[i] and advances i; an invalid sequence consumes one byte and
// yields kInvalidCodePoint (overlong forms, surrogates and values past U+10FFFF are invalid).
std::int32_t next_code_point(std::string_view s, std::size_t& i);

// Where the first invalid UTF-8 byte is, as 0-based (line, column); nullopt when valid.
std::optional<std::pair<int, int>> first_invalid_utf8(std::string_view s);

// The typed value of a plain scalar under the YAML 1.2 core schema (null, bool, int, float,
// .inf, .nan), or nullopt when it reads as a string.
std::optional<nlohmann::json> resolve_plain(std::string_view s);

}  // namespace depl::yaml_detail
