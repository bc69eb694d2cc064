// The controller's log line formats (--log-format): text, and JSON with one object per line
// ({"time","level","line"}) whose "line" is the key=value text, escaped, so that every line parses
// whatever a message quotes (a job name, an API server's answer, bytes that are not UTF-8).
#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

#include "depl/common/expected.hpp"

namespace depl::controller {

// "text" or "json"; the error names the flag.
Expected<std::unique_ptr<spdlog::formatter>> log_formatter(const std::string& format);

// `text` as the contents of a JSON string (without the quotes): quotes, backslashes and control
// characters escaped, bytes that are not UTF-8 replaced by U+FFFD.
std::string json_string_contents(std::string_view text);

}  // namespace depl::controller
