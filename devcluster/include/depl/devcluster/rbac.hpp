// Who makes a request and what it asks, and kube-apiserver's RBAC authorizer over the Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings the store holds: verbs, API groups,
// resources and subresources, resourceNames and non-resource URLs, bindings to users, groups and
// service accounts. Members of system:masters may do anything, as kube-apiserver's privileged
// group. Aggregated ClusterRoles (aggregationRule) are not aggregated: only their own rules count.
//
// Thread-safety: every member may be called from any thread. The authorizer watches the four RBAC
// resources and reads them again when one changed, so a decision made after a write to them
// returned sees that write.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_result.hpp"

namespace depl::devcluster {

class ApiStore;
class WatchSubscription;

// An authenticated identity (authentication.k8s.io/v1 UserInfo).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  nlohmann::json to_json() const;  // {"username", "uid", "groups", "extra"}, empty ones left out
};

// The identity of a service account's token: system:serviceaccount:<ns>:<name>, with the groups
// system:serviceaccounts, system:serviceaccounts:<ns> and system:authenticated.
UserInfo service_account_user(const std::string& ns, const std::string& name,
                              const std::string& uid);
// "system:serviceaccount:<ns>:<name>" -> {ns, name}; nullopt for another username.
std::optional<std::pair<std::string, std::string>> parse_service_account_username(
    const std::string& username);

// What kube-apiserver's authorizers are asked (authorizer.Attributes).
struct RequestAttributes {
  UserInfo user;
  // Resource requests: get, list, watch, create, update, patch, delete, deletecollection (and
  // RBAC's own: bind, escalate, impersonate, ...). Non-resource requests: the lower-case HTTP
  // method (get, post, put, patch, delete, head).
  std::string verb;
  bool resource_request = true;
  std::string path;  // non-resource requests: the URL path
  std::string api_group;
  std::string api_version;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
};

// One RBAC PolicyRule.
struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;

  static PolicyRule from_json(const nlohmann::json& rule);
  bool allows(const RequestAttributes& request) const;
};

struct AuthorizationDecision {
  bool allowed = false;
  // Allowed: which binding and role allowed it, worded as kube-apiserver's RBAC authorizer
  // ("RBAC: allowed by ClusterRoleBinding \"x\" of ClusterRole \"y\" to User \"z\"").
  std::string reason;
};

// The 403 kube-apiserver answers for a request its authorizers did not allow:
// `pods is forbidden: User "u" cannot list resource "pods" in API group "" in the namespace "ns"`.
ApiResult forbidden(const RequestAttributes& request, const std::string& reason = "");

class RbacAuthorizer {
 public:
  explicit RbacAuthorizer(ApiStore& store);
  ~RbacAuthorizer();
  RbacAuthorizer(const RbacAuthorizer&) = delete;
  RbacAuthorizer& operator=(const RbacAuthorizer&) = delete;

  AuthorizationDecision authorize(const RequestAttributes& request);
  // Every rule that applies to `user` in namespace `ns` (cluster-wide rules included; "" for the
  // cluster scope only): what a SelfSubjectRulesReview answers.
  std::vector<PolicyRule> rules_for(const UserInfo& user, const std::string& ns);

  // The group whose members may do anything.
  static constexpr const char* kSuperuserGroup = "system:masters";

 private:
  struct Snapshot;
  struct DirtyFlag;  // shared with the watches' notifiers, which may outlive the authorizer
  std::shared_ptr<const Snapshot> snapshot();

  ApiStore& store_;
  std::vector<std::shared_ptr<WatchSubscription>> watches_;
  std::shared_ptr<DirtyFlag> dirty_flag_;
  std::mutex mutex_;  // guards snapshot_
  std::shared_ptr<const Snapshot> snapshot_;
};

// The ClusterRoles and ClusterRoleBindings kube-apiserver bootstraps that a dev cluster's clients
// rely on: cluster-admin (bound to system:masters), system:discovery and system:basic-user (to
// system:authenticated: discovery, OpenAPI, the self reviews) and system:public-info-viewer (to
// everyone: /version and the health checks).
std::vector<nlohmann::json> bootstrap_rbac_objects();

}  // namespace depl::devcluster
