// The one error type every Kubernetes call returns: the HTTP code with the Status `reason` and
// `message` the API server sent, or code 0 for failures below HTTP (connect, TLS, timeout,
// malformed response). Callers branch on the predicates, never on message text.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace depl::kube {

struct ApiError {
  int code = 0;           // HTTP status code; 0 when no HTTP response was received
  std::string reason{};   // Status.reason ("NotFound", "Conflict", "Expired", ...) or, for
                          // code 0, one of the transport reasons below
  std::string message{};  // human-readable, from Status.message or the transport
  std::optional<std::chrono::seconds> retry_after{};  // Retry-After header or details
  nlohmann::json details{};  // Status.details when present (name, kind, uid, causes)

  // Reasons used when code == 0.
  static constexpr std::string_view kConnectFailed = "ConnectFailed";    // request never sent
  static constexpr std::string_view kTransportError = "TransportError";  // may have been sent
  static constexpr std::string_view kTimeout = "Timeout";
  static constexpr std::string_view kCancelled = "Cancelled";
  static constexpr std::string_view kDecodeError = "DecodeError";        // response not understood
  static constexpr std::string_view kConfigError = "ConfigError";        // credentials unavailable
  static constexpr std::string_view kInvalidRequest = "InvalidRequest";  // caught before sending
  static constexpr std::string_view kFenced = "Fenced";  // a write held back by the write fence

  bool is_transport() const { return code == 0; }
  bool is_not_found() const { return code == 404; }
  bool is_conflict() const { return code == 409; }  // includes AlreadyExists
  bool is_already_exists() const { return code == 409 && reason == "AlreadyExists"; }
  // 410: too-old resourceVersion or expired continue token. Test the code, not the reason:
  // servers said "Gone" before and "Expired" now.
  bool is_gone() const { return code == 410; }
  bool is_invalid() const { return code == 422; }
  bool is_unauthorized() const { return code == 401; }
  bool is_forbidden() const { return code == 403; }
  bool is_too_many_requests() const { return code == 429; }
  bool is_server_error() const { return code >= 500; }
  bool is_timeout() const { return (code == 0 && reason == kTimeout) || code == 504; }
  bool is_cancelled() const { return code == 0 && reason == kCancelled; }
  bool is_fenced() const { return code == 0 && reason == kFenced; }

  // "404 NotFound: pods \"x\" not found" or "ConnectFailed: connection refused".
  std::string to_string() const;

  // From an HTTP error response. A Status body gives reason/message/details; any other body
  // becomes the message (truncated), with the reason derived from the code.
  static ApiError from_response(int http_code, std::string_view body,
                                std::string_view retry_after_header = "");
  // From a Status object (the object of a watch ERROR event). Code 0 in the Status becomes 500.
  static ApiError from_status(const nlohmann::json& status);
  static ApiError transport(std::string_view reason, std::string message);
};

// The canonical reason phrase for a code without a Status body ("NotFound" for 404, ...).
std::string reason_for_code(int http_code);

}  // namespace depl::kube
