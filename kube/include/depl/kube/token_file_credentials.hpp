// Bearer token read from a file and re-read periodically, for bound service-account tokens that
// the kubelet rotates (client-go's cached file token source: re-read every minute, and at once
// after a 401).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "depl/common/clock.hpp"
#include "depl/kube/credentials.hpp"

namespace depl::kube {

class TokenFileCredentials : public CredentialProvider {
 public:
  static constexpr std::chrono::minutes kRereadPeriod{1};

  // `tls_identity` (may be null) is presented alongside the token.
  TokenFileCredentials(std::string path, std::shared_ptr<Clock> clock,
                       std::shared_ptr<const TlsClientIdentity> tls_identity = nullptr);

  // Errors (unreadable or empty file) name the path. A failed re-read keeps serving the last
  // good token until it is reset by a 401.
  Expected<Credentials, ApiError> credentials() override;
  void on_unauthorized() override;

 private:
  std::string path_{};
  std::shared_ptr<Clock> clock_{};
  std::shared_ptr<const TlsClientIdentity> tls_identity_{};
  std::mutex mutex_{};
  std::string token_{};
  Clock::TimePoint read_at_{};
};

}  // namespace depl::kube
