#include "server/authentication.hpp"

#include <algorithm>
#include <random>

namespace depl::devcluster {

namespace {

ApiResult unauthorized() {
  return status_error(401, "Unauthorized", "Unauthorized");
}

void add_group(UserInfo& user, const std::string& group) {
  if (std::find(user.groups.begin(), user.groups.end(), group) == user.groups.end()) {
    user.groups.push_back(group);
  }
}

}  // namespace

std::string random_hex_token(std::size_t bytes) {
  std::random_device device;
  static const char* hex = "0123456789abcdef";
  std::string token;
  token.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned value = device() & 0xFF;
    token.push_back(hex[value >> 4]);
    token.push_back(hex[value & 15]);
  }
  return token;
}

Authenticator::Authenticator(ApiStore& store, std::string admin_token, bool anonymous_is_admin,
                             Clock now)
    : store_(store),
      admin_token_(std::move(admin_token)),
      anonymous_is_admin_(anonymous_is_admin),
      now_(std::move(now)) {}

UserInfo Authenticator::admin_user() {
  UserInfo user;
  user.username = "kubernetes-admin";
  user.groups = {RbacAuthorizer::kSuperuserGroup, "system:authenticated"};
  return user;
}

UserInfo Authenticator::anonymous_user() {
  UserInfo user;
  user.username = "system:anonymous";
  user.groups = {"system:unauthenticated"};
  return user;
}

Expected<UserInfo, ApiResult> Authenticator::authenticate(const HttpRequest& request) {
  const std::string header = request.header("authorization");
  if (header.empty()) return anonymous_is_admin_ ? admin_user() : anonymous_user();
  static const std::string kBearer = "Bearer ";
  if (header.size() <= kBearer.size() || header.compare(0, kBearer.size(), kBearer) != 0) {
    return unexpected(unauthorized());
  }
  auto user = user_of_token(header.substr(kBearer.size()));
  if (!user) return unexpected(unauthorized());
  return *user;
}

std::optional<UserInfo> Authenticator::user_of_token(const std::string& token) {
  if (token == admin_token_) return admin_user();
  Grant grant;
  {
    std::lock_guard lock(mutex_);
    auto it = grants_.find(token);
    if (it == grants_.end()) return std::nullopt;
    if (now_() >= it->second.expires) {
      grants_.erase(it);
      return std::nullopt;
    }
    grant = it->second;
  }
  // A bound token dies with its service account, and with a recreated one of the same name.
  auto account = store_.get(ResourceRef{"", "v1", "serviceaccounts", grant.ns, grant.name, ""});
  if (!account.ok() ||
      account.answer().value("/metadata/uid"_json_pointer, std::string()) != grant.uid) {
    return std::nullopt;
  }
  return service_account_user(grant.ns, grant.name, grant.uid);
}

std::pair<std::string, std::chrono::system_clock::time_point> Authenticator::issue_token(
    const std::string& ns, const std::string& name, const std::string& uid,
    std::chrono::seconds lifetime) {
  std::string token = random_hex_token(32);
  const auto expires = now_() + lifetime;
  std::lock_guard lock(mutex_);
  // Expired grants go as new ones come: the map stays as small as the live tokens.
  std::erase_if(grants_, [&](const auto& entry) { return now_() >= entry.second.expires; });
  grants_[token] = Grant{ns, name, uid, expires};
  return {token, expires};
}

Expected<UserInfo, ApiResult> impersonate(const HttpRequest& request, const UserInfo& user,
                                          RbacAuthorizer& authorizer) {
  const std::string as_user = request.header("impersonate-user");
  const std::string as_group = request.header("impersonate-group");
  const std::string as_uid = request.header("impersonate-uid");
  if (as_user.empty() && as_group.empty() && as_uid.empty()) return user;
  if (as_user.empty()) {
    return unexpected(status_error(
        500, "InternalError",
        "Internal error occurred: requested impersonation of groups or uid without a user"));
  }
  auto check = [&](const std::string& resource, const std::string& ns,
                   const std::string& name) -> std::optional<ApiResult> {
    RequestAttributes attributes;
    attributes.user = user;
    attributes.verb = "impersonate";
    attributes.api_group = resource == "uids" ? "authentication.k8s.io" : "";
    attributes.resource = resource;
    attributes.ns = ns;
    attributes.name = name;
    if (authorizer.authorize(attributes).allowed) return std::nullopt;
    return forbidden(attributes);
  };
  UserInfo acting;
  acting.username = as_user;
  if (auto account = parse_service_account_username(as_user)) {
    if (auto refused = check("serviceaccounts", account->first, account->second)) {
      return unexpected(*refused);
    }
    acting.groups = {"system:serviceaccounts", "system:serviceaccounts:" + account->first};
  } else if (auto refused = check("users", "", as_user)) {
    return unexpected(*refused);
  }
  if (!as_group.empty()) {
    if (auto refused = check("groups", "", as_group)) return unexpected(*refused);
    add_group(acting, as_group);
  }
  if (!as_uid.empty()) {
    if (auto refused = check("uids", "", as_uid)) return unexpected(*refused);
    acting.uid = as_uid;
  }
  if (as_user != "system:anonymous") add_group(acting, "system:authenticated");
  return acting;
}

}  // namespace depl::devcluster
