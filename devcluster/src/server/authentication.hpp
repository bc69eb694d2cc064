// Who sends a request: the cluster's admin token (group system:masters), a service account token
// the cluster issued (TokenRequest), or nobody (system:anonymous; on a cluster served over plain
// HTTP, the admin, as kube-apiserver's old insecure port). Then impersonation (Impersonate-User,
// Impersonate-Group, Impersonate-Uid) when the authenticated user may impersonate.
// Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_store.hpp"
#include "depl/devcluster/rbac.hpp"
#include "server/http_types.hpp"

namespace depl::devcluster {

class Authenticator {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // `admin_token` must not be empty. `anonymous_is_admin`: a request without credentials is the
  // admin (plain-HTTP clusters), instead of system:anonymous.
  Authenticator(
      ApiStore& store, std::string admin_token, bool anonymous_is_admin,
      Clock now = [] { return std::chrono::system_clock::now(); });

  static UserInfo admin_user();
  static UserInfo anonymous_user();

  // The requester, or the 401 Unauthorized to answer (a token this cluster did not issue, one
  // that expired, or one whose service account is gone or was recreated).
  Expected<UserInfo, ApiResult> authenticate(const HttpRequest& request);
  // The user a bearer token stands for (TokenReview), nullopt when it is not valid.
  std::optional<UserInfo> user_of_token(const std::string& token);

  // A token for service account `ns`/`name` (whose uid is `uid`) valid for `lifetime`; returns the
  // token and when it expires.
  std::pair<std::string, std::chrono::system_clock::time_point> issue_token(
      const std::string& ns, const std::string& name, const std::string& uid,
      std::chrono::seconds lifetime);

  const std::string& admin_token() const { return admin_token_; }
  std::chrono::system_clock::time_point now() const { return now_(); }

 private:
  struct Grant {
    std::string ns, name, uid;
    std::chrono::system_clock::time_point expires;
  };

  ApiStore& store_;
  std::string admin_token_;
  bool anonymous_is_admin_;
  Clock now_;
  std::mutex mutex_;
  std::map<std::string, Grant> grants_;  // by token
};

// The user a request acts as after its Impersonate-* headers: `user` itself without them; the
// impersonated user when `authorizer` lets `user` impersonate it (and the groups asked for);
// otherwise the 403 to answer.
Expected<UserInfo, ApiResult> impersonate(const HttpRequest& request, const UserInfo& user,
                                          RbacAuthorizer& authorizer);

// A random token of `bytes` bytes, hex-encoded.
std::string random_hex_token(std::size_t bytes);

}  // namespace depl::devcluster
