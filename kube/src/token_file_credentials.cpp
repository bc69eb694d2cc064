#include "depl/kube/token_file_credentials.hpp"

#include "file_util.hpp"

namespace depl::kube {

TokenFileCredentials::TokenFileCredentials(std::string path, std::shared_ptr<Clock> clock,
                                           std::shared_ptr<const TlsClientIdentity> tls_identity)
    : path_(std::move(path)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      tls_identity_(std::move(tls_identity)) {}

Expected<Credentials, ApiError> TokenFileCredentials::credentials() {
  std::lock_guard lock(mutex_);
  const auto now = clock_->now();
  if (token_.empty() || now - read_at_ >= kRereadPeriod) {
    auto text = read_file(path_);
    std::string token = text ? *text : std::string();
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    if (!token.empty()) {
      token_ = std::move(token);
      read_at_ = now;
    } else if (token_.empty()) {
      return unexpected(ApiError::transport(
          ApiError::kConfigError, text ? path_ + ": token file is empty" : text.error().message));
    }
    // else: keep the last good token; the next call retries the read.
  }
  return Credentials{"Bearer " + token_, tls_identity_};
}

void TokenFileCredentials::on_unauthorized() {
  std::lock_guard lock(mutex_);
  token_.clear();
}

}  // namespace depl::kube
