// Where the client's identity comes from on each request: a bearer token, basic auth, and/or a
// TLS client certificate. Providers may refresh (token files, exec plugins); the client asks
// before every request and reports a 401 so the provider drops what it cached.
#pragma once

#include <memory>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/http.hpp"

namespace depl::kube {

struct Credentials {
  std::string authorization{};  // full Authorization header value ("Bearer ..."), or empty
  std::shared_ptr<const TlsClientIdentity> tls_identity{};  // null: no client certificate
};

// Thread-safe: called concurrently by every request.
class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  // Current credentials; may run a plugin or read a file. Failure is ApiError{0, ConfigError}.
  virtual Expected<Credentials, ApiError> credentials() = 0;
  // The server answered 401 to a request made with credentials(); drop cached credentials so
  // the next call obtains fresh ones. The 401 itself is still returned to the caller.
  virtual void on_unauthorized() {}
};

// Fixed credentials: a token, basic auth (username/password) or a client certificate from the
// kubeconfig. Never refreshes.
class StaticCredentials : public CredentialProvider {
 public:
  explicit StaticCredentials(Credentials credentials) : credentials_(std::move(credentials)) {}
  static std::shared_ptr<StaticCredentials> bearer(std::string token);
  static std::shared_ptr<StaticCredentials> basic(std::string_view username,
                                                  std::string_view password);
  Expected<Credentials, ApiError> credentials() override { return credentials_; }

 private:
  Credentials credentials_{};
};

// "Basic base64(user:password)".
std::string basic_authorization(std::string_view username, std::string_view password);

}  // namespace depl::kube
