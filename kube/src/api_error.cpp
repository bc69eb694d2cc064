#include "depl/kube/api_error.hpp"

#include <charconv>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace depl::kube {

std::string reason_for_code(int http_code) {
  switch (http_code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return http_code >= 500 ? "InternalError" : "Unknown";
  }
}

std::string ApiError::to_string() const {
  if (code == 0) return fmt::format("{}: {}", reason, message);
  return fmt::format("{} {}: {}", code, reason, message);
}

static std::optional<std::chrono::seconds> parse_seconds(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return std::chrono::seconds(value);
}

ApiError ApiError::from_status(const nlohmann::json& status) {
  ApiError error;
  if (!status.is_object()) {
    error.code = 500;
    error.reason = "InternalError";
    error.message = "watch ERROR event without a Status object";
    return error;
  }
  // Only an HTTP status is taken as the code. Anything else becomes 500 rather than wrapping
  // into a status (2^32 + 410 read as an int is 410, which would make a watcher relist).
  auto code = status.find("code");
  error.code = 500;
  if (code != status.end() && code->is_number_integer()) {
    const auto value = code->get<std::int64_t>();
    if (value >= 100 && value <= 599) error.code = static_cast<int>(value);
  }
  auto reason = status.find("reason");
  error.reason = (reason != status.end() && reason->is_string()) ? reason->get<std::string>()
                                                                 : reason_for_code(error.code);
  auto message = status.find("message");
  if (message != status.end() && message->is_string()) error.message = message->get<std::string>();
  auto details = status.find("details");
  if (details != status.end() && details->is_object()) {
    error.details = *details;
    auto retry = details->find("retryAfterSeconds");
    if (retry != details->end() && retry->is_number_integer() && retry->get<long long>() >= 0) {
      error.retry_after = std::chrono::seconds(retry->get<long long>());
    }
  }
  return error;
}

ApiError ApiError::from_response(int http_code, std::string_view body,
                                 std::string_view retry_after_header) {
  ApiError error;
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    error = from_status(parsed);
  } else {
    constexpr std::size_t kMaxBody = 512;
    error.message = std::string(body.substr(0, kMaxBody));
    if (body.size() > kMaxBody) error.message += "...";
    while (!error.message.empty() &&
           (error.message.back() == '\n' || error.message.back() == '\r')) {
      error.message.pop_back();
    }
    if (error.message.empty())
      error.message = "the server returned HTTP " + std::to_string(http_code) + " with no body";
  }
  // The HTTP code is authoritative; a Status body only adds detail.
  error.code = http_code;
  if (error.reason.empty()) error.reason = reason_for_code(http_code);
  if (auto header = parse_seconds(retry_after_header)) error.retry_after = header;
  return error;
}

ApiError ApiError::transport(std::string_view reason, std::string message) {
  ApiError error;
  error.code = 0;
  error.reason = std::string(reason);
  error.message = std::move(message);
  return error;
}

}  // namespace depl::kube
