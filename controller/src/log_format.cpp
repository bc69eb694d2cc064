#include "depl/controller/log_format.hpp"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>

#include <nlohmann/json.hpp>

namespace depl::controller {

namespace {

// %j: the message as JSON string contents.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string escaped =
        json_string_contents(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

std::string json_string_contents(std::string_view text) {
  const std::string quoted = nlohmann::json(std::string(text))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

Expected<std::unique_ptr<spdlog::formatter>> log_formatter(const std::string& format) {
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","line":"%j"})");
    return std::unique_ptr<spdlog::formatter>(std::move(formatter));
  }
  if (format == "text") {
    return std::unique_ptr<spdlog::formatter>(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc));
  }
  return error(fmt::format("--log-format: want text or json, got \"{}\"", format));
}

}  // namespace depl::controller
