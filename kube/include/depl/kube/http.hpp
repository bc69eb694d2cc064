// HTTP as plain values, and the abstract transport the client talks to. Requests are built and
// asserted as values (tests use a scripted transport); the real one (Beast over TLS) lives
// behind `Transport` so no Beast header leaks into the rest of the code.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"

namespace depl::kube {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive header lookup; empty when absent.
std::string_view find_header(const Headers& headers, std::string_view name);

// PEM client certificate and key presented in the TLS handshake. Carried per request so a
// credential refresh (an exec plugin returning a new certificate) reaches the transport,
// which then drops connections made with the old identity.
struct TlsClientIdentity {
  std::string certificate_pem{};
  std::string key_pem{};
  bool operator==(const TlsClientIdentity&) const = default;
};

struct HttpRequest {
  std::string method{};  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path{};    // absolute path without query, already percent-encoded per segment
  std::vector<std::pair<std::string, std::string>> query{};  // unencoded, in order
  Headers headers{};
  std::string body{};
  std::shared_ptr<const TlsClientIdentity> tls_identity{};  // null: no client certificate

  // path + "?" + percent-encoded query (the HTTP request target).
  std::string target() const;
  // Value of the first query parameter `name`, if present.
  std::optional<std::string> query_param(std::string_view name) const;
  std::string_view header(std::string_view name) const { return find_header(headers, name); }
  void set_header(std::string name, std::string value);  // replaces an existing one
};

struct HttpResponse {
  int status = 0;
  Headers headers{};
  std::string body{};
  std::string_view header(std::string_view name) const { return find_header(headers, name); }
};

// A response whose body is read incrementally (a watch). Status and headers are known when the
// stream is returned. read() returns the next bytes as they arrive (chunk boundaries carry no
// meaning), an empty string at the end of the body, or an error (idle timeout, connection
// lost, cancelled). cancel() may be called from any thread and makes a blocked read() return
// an ApiError with reason Cancelled promptly; every other member is for one reader thread.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual int status() const = 0;
  virtual const Headers& headers() const = 0;
  virtual Expected<std::string, ApiError> read() = 0;
  virtual void cancel() = 0;
};

// Sends requests to one API server. Implementations are thread-safe: many threads may send
// and hold streams at once.
class Transport {
 public:
  virtual ~Transport() = default;
  // The whole exchange must finish within `timeout`, else ApiError{0, Timeout}.
  virtual Expected<HttpResponse, ApiError> send(const HttpRequest& request,
                                                std::chrono::milliseconds timeout) = 0;
  // Returns once the response head has arrived (bounded by `idle_timeout`); the stream fails
  // with Timeout when no byte arrives for `idle_timeout`.
  virtual Expected<std::unique_ptr<ResponseStream>, ApiError> open_stream(
      const HttpRequest& request, std::chrono::milliseconds idle_timeout) = 0;
};

}  // namespace depl::kube
