// The RBAC authorizer of rbac.hpp: rules and subjects matched as kube-apiserver's
// plugin/pkg/auth/authorizer/rbac matches them, over a snapshot of the RBAC objects that is read
// again after any of them changed.
#include "depl/devcluster/rbac.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

const std::string kRbacGroup = "rbac.authorization.k8s.io";

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool matches_or_star(const std::vector<std::string>& list, const std::string& value) {
  return contains(list, "*") || contains(list, value);
}

struct Subject {
  std::string kind;  // User, Group, ServiceAccount
  std::string name;
  std::string ns;
};

struct Binding {
  std::string name;
  std::string ns;  // "" for a ClusterRoleBinding
  std::string role_kind;
  std::string role_name;
  std::vector<Subject> subjects;
};

Binding binding_from(const json& object) {
  Binding b;
  const json meta = object.value("metadata", json::object());
  b.name = json_string(meta, "name");
  b.ns = json_string(meta, "namespace");
  const json role_ref = object.value("roleRef", json::object());
  b.role_kind = json_string(role_ref, "kind");
  b.role_name = json_string(role_ref, "name");
  for (const auto& s : object.value("subjects", json::array())) {
    if (!s.is_object()) continue;
    b.subjects.push_back(
        {json_string(s, "kind"), json_string(s, "name"), json_string(s, "namespace")});
  }
  return b;
}

// kube-apiserver's appliesToUser: a service account subject without a namespace is in the
// binding's.
bool applies_to(const Subject& subject, const UserInfo& user, const std::string& binding_ns) {
  if (subject.kind == "User") return subject.name == user.username;
  if (subject.kind == "Group") return contains(user.groups, subject.name);
  if (subject.kind == "ServiceAccount") {
    const std::string ns = subject.ns.empty() ? binding_ns : subject.ns;
    return user.username == "system:serviceaccount:" + ns + ":" + subject.name;
  }
  return false;
}

std::string describe_subject(const Subject& subject, const std::string& binding_ns) {
  if (subject.kind == "ServiceAccount") {
    return fmt::format("{} \"{}/{}\"", subject.kind, subject.name,
                       subject.ns.empty() ? binding_ns : subject.ns);
  }
  return fmt::format("{} \"{}\"", subject.kind, subject.name);
}

std::string describe_binding(const Binding& b, const Subject& subject) {
  if (b.ns.empty()) {
    return fmt::format("ClusterRoleBinding \"{}\" of {} \"{}\" to {}", b.name, b.role_kind,
                       b.role_name, describe_subject(subject, b.ns));
  }
  return fmt::format("RoleBinding \"{}/{}\" of {} \"{}\" to {}", b.name, b.ns, b.role_kind,
                     b.role_name, describe_subject(subject, b.ns));
}

std::vector<PolicyRule> rules_of(const json& role) {
  std::vector<PolicyRule> out;
  for (const auto& r : role.value("rules", json::array())) {
    if (r.is_object()) out.push_back(PolicyRule::from_json(r));
  }
  return out;
}

std::vector<json> items_of(ApiStore& store, const std::string& plural) {
  auto listed = store.list(ResourceRef{kRbacGroup, "v1", plural, "", "", ""});
  std::vector<json> out;
  if (!listed.ok()) return out;
  const json& body = listed.answer();
  for (const auto& item : body.value("items", json::array())) out.push_back(item);
  return out;
}

}  // namespace

json UserInfo::to_json() const {
  json out = json::object();
  if (!username.empty()) out["username"] = username;
  if (!uid.empty()) out["uid"] = uid;
  if (!groups.empty()) out["groups"] = groups;
  if (!extra.empty()) out["extra"] = extra;
  return out;
}

UserInfo service_account_user(const std::string& ns, const std::string& name,
                              const std::string& uid) {
  UserInfo user;
  user.username = "system:serviceaccount:" + ns + ":" + name;
  user.uid = uid;
  user.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"};
  return user;
}

std::optional<std::pair<std::string, std::string>> parse_service_account_username(
    const std::string& username) {
  static const std::string kPrefix = "system:serviceaccount:";
  if (username.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string rest = username.substr(kPrefix.size());
  const auto colon = rest.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find(':', colon + 1) != std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(rest.substr(0, colon), rest.substr(colon + 1));
}

PolicyRule PolicyRule::from_json(const json& rule) {
  PolicyRule r;
  r.verbs = json_strings(rule, "verbs");
  r.api_groups = json_strings(rule, "apiGroups");
  r.resources = json_strings(rule, "resources");
  r.resource_names = json_strings(rule, "resourceNames");
  r.non_resource_urls = json_strings(rule, "nonResourceURLs");
  return r;
}

bool PolicyRule::allows(const RequestAttributes& request) const {
  if (!matches_or_star(verbs, request.verb)) return false;
  if (!request.resource_request) {
    for (const auto& url : non_resource_urls) {
      if (url == "*" || url == request.path) return true;
      if (!url.empty() && url.back() == '*' &&
          request.path.rfind(url.substr(0, url.size() - 1), 0) == 0) {
        return true;
      }
    }
    return false;
  }
  if (!matches_or_star(api_groups, request.api_group)) return false;
  const std::string combined =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  bool resource = false;
  for (const auto& r : resources) {
    if (r == "*" || r == combined ||
        (!request.subresource.empty() && r == "*/" + request.subresource)) {
      resource = true;
      break;
    }
  }
  if (!resource) return false;
  return resource_names.empty() || contains(resource_names, request.name);
}

ApiResult forbidden(const RequestAttributes& request, const std::string& reason) {
  std::string why;
  if (!request.resource_request) {
    why = fmt::format("User \"{}\" cannot {} path \"{}\"", request.user.username, request.verb,
                      request.path);
  } else {
    const std::string resource = request.subresource.empty()
                                     ? request.resource
                                     : request.resource + "/" + request.subresource;
    why = request.ns.empty()
              ? fmt::format(
                    "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" at the "
                    "cluster scope",
                    request.user.username, request.verb, resource, request.api_group)
              : fmt::format(
                    "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" in the "
                    "namespace \"{}\"",
                    request.user.username, request.verb, resource, request.api_group, request.ns);
  }
  if (!reason.empty()) why += ": " + reason;
  if (!request.resource_request || request.resource.empty()) {
    return status_error(403, "Forbidden", "forbidden: " + why, json::object());
  }
  const std::string qualified =
      request.api_group.empty() ? request.resource : request.resource + "." + request.api_group;
  json details = json::object();
  if (!request.name.empty()) details["name"] = request.name;
  if (!request.api_group.empty()) details["group"] = request.api_group;
  details["kind"] = request.resource;
  const std::string message =
      request.name.empty()
          ? fmt::format("{} is forbidden: {}", qualified, why)
          : fmt::format("{} \"{}\" is forbidden: {}", qualified, request.name, why);
  return status_error(403, "Forbidden", message, details);
}

struct RbacAuthorizer::Snapshot {
  std::vector<Binding> cluster_bindings;
  std::map<std::string, std::vector<Binding>> role_bindings;  // by namespace
  std::map<std::string, std::vector<PolicyRule>> cluster_roles;
  std::map<std::string, std::vector<PolicyRule>> roles;  // by "<ns>/<name>"

  const std::vector<PolicyRule>* role_rules(const Binding& b) const {
    if (b.role_kind == "ClusterRole") {
      auto it = cluster_roles.find(b.role_name);
      return it == cluster_roles.end() ? nullptr : &it->second;
    }
    if (b.role_kind == "Role" && !b.ns.empty()) {
      auto it = roles.find(b.ns + "/" + b.role_name);
      return it == roles.end() ? nullptr : &it->second;
    }
    return nullptr;
  }

  // Calls `visit(binding, subject, rules)` for each binding that applies to `user` in `ns`
  // (cluster bindings first); stops when it returns true.
  template <typename Visit>
  bool visit(const UserInfo& user, const std::string& ns, Visit&& visit_rules) const {
    auto each = [&](const std::vector<Binding>& bindings) {
      for (const auto& b : bindings) {
        for (const auto& subject : b.subjects) {
          if (!applies_to(subject, user, b.ns)) continue;
          const auto* rules = role_rules(b);
          if (rules && visit_rules(b, subject, *rules)) return true;
          break;  // one applicable subject is enough for a binding
        }
      }
      return false;
    };
    if (each(cluster_bindings)) return true;
    if (ns.empty()) return false;
    auto it = role_bindings.find(ns);
    return it != role_bindings.end() && each(it->second);
  }
};

struct RbacAuthorizer::DirtyFlag {
  std::mutex mutex;
  bool dirty = true;
};

RbacAuthorizer::RbacAuthorizer(ApiStore& store) : store_(store) {
  auto flag = std::make_shared<DirtyFlag>();
  dirty_flag_ = flag;
  for (const char* plural : {"roles", "rolebindings", "clusterroles", "clusterrolebindings"}) {
    auto watch =
        store_.watch(ResourceRef{kRbacGroup, "v1", plural, "", "", ""}, observer_watch_options());
    if (!watch) continue;
    std::weak_ptr<WatchSubscription> weak = *watch;
    (*watch)->set_notifier([flag, weak] {
      if (auto subscription = weak.lock()) subscription->drain();
      std::lock_guard lock(flag->mutex);
      flag->dirty = true;
    });
    watches_.push_back(std::move(*watch));
  }
  std::lock_guard lock(flag->mutex);
  flag->dirty = true;  // whatever the notifiers missed before they were set
}

RbacAuthorizer::~RbacAuthorizer() {
  for (auto& w : watches_) w->close();
}

std::shared_ptr<const RbacAuthorizer::Snapshot> RbacAuthorizer::snapshot() {
  {
    std::lock_guard lock(dirty_flag_->mutex);
    if (!dirty_flag_->dirty) {
      std::lock_guard snapshot_lock(mutex_);
      if (snapshot_) return snapshot_;
    }
    // Cleared before reading: a change made while reading marks it again.
    dirty_flag_->dirty = false;
  }
  auto next = std::make_shared<Snapshot>();
  for (const auto& role : items_of(store_, "clusterroles")) {
    next->cluster_roles[role.value("/metadata/name"_json_pointer, std::string())] = rules_of(role);
  }
  for (const auto& role : items_of(store_, "roles")) {
    next->roles[role.value("/metadata/namespace"_json_pointer, std::string()) + "/" +
                role.value("/metadata/name"_json_pointer, std::string())] = rules_of(role);
  }
  for (const auto& b : items_of(store_, "clusterrolebindings")) {
    next->cluster_bindings.push_back(binding_from(b));
    next->cluster_bindings.back().ns.clear();
  }
  for (const auto& b : items_of(store_, "rolebindings")) {
    Binding binding = binding_from(b);
    if (binding.ns.empty()) continue;
    next->role_bindings[binding.ns].push_back(std::move(binding));
  }
  std::lock_guard lock(mutex_);
  snapshot_ = next;
  return snapshot_;
}

AuthorizationDecision RbacAuthorizer::authorize(const RequestAttributes& request) {
  if (contains(request.user.groups, kSuperuserGroup)) return {true, ""};
  const auto state = snapshot();
  AuthorizationDecision decision;
  state->visit(request.user, request.resource_request ? request.ns : "",
               [&](const Binding& b, const Subject& subject, const std::vector<PolicyRule>& rules) {
                 for (const auto& rule : rules) {
                   if (!rule.allows(request)) continue;
                   decision.allowed = true;
                   decision.reason = "RBAC: allowed by " + describe_binding(b, subject);
                   return true;
                 }
                 return false;
               });
  return decision;
}

std::vector<PolicyRule> RbacAuthorizer::rules_for(const UserInfo& user, const std::string& ns) {
  std::vector<PolicyRule> out;
  if (contains(user.groups, kSuperuserGroup)) {
    out.push_back(PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}});
    out.push_back(PolicyRule{{"*"}, {}, {}, {}, {"*"}});
    return out;
  }
  snapshot()->visit(user, ns,
                    [&](const Binding&, const Subject&, const std::vector<PolicyRule>& rules) {
                      out.insert(out.end(), rules.begin(), rules.end());
                      return false;
                    });
  return out;
}

std::vector<json> bootstrap_rbac_objects() {
  const json labels = {{"kubernetes.io/bootstrapping", "rbac-defaults"}};
  const json annotations = {{"rbac.authorization.kubernetes.io/autoupdate", "true"}};
  auto cluster_role = [&](const std::string& name, json rules) {
    return json{{"apiVersion", kRbacGroup + "/v1"},
                {"kind", "ClusterRole"},
                {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                {"rules", std::move(rules)}};
  };
  auto binding = [&](const std::string& name, const std::vector<std::string>& groups) {
    json subjects = json::array();
    for (const auto& g : groups) {
      subjects.push_back({{"apiGroup", kRbacGroup}, {"kind", "Group"}, {"name", g}});
    }
    return json{{"apiVersion", kRbacGroup + "/v1"},
                {"kind", "ClusterRoleBinding"},
                {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "ClusterRole"}, {"name", name}}},
                {"subjects", std::move(subjects)}};
  };
  const json public_urls = {"/healthz", "/livez", "/readyz", "/version", "/version/"};
  json discovery_urls = {"/api",     "/api/*",     "/apis",   "/apis/*",  "/healthz", "/livez",
                         "/openapi", "/openapi/*", "/readyz", "/version", "/version/"};
  return {
      cluster_role("cluster-admin",
                   json::array({{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}},
                                {{"nonResourceURLs", {"*"}}, {"verbs", {"*"}}}})),
      binding("cluster-admin", {RbacAuthorizer::kSuperuserGroup}),
      cluster_role("system:discovery",
                   json::array({{{"nonResourceURLs", discovery_urls}, {"verbs", {"get"}}}})),
      binding("system:discovery", {"system:authenticated"}),
      cluster_role(
          "system:basic-user",
          json::array({{{"apiGroups", {"authorization.k8s.io"}},
                        {"resources", {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
                        {"verbs", {"create"}}},
                       {{"apiGroups", {"authentication.k8s.io"}},
                        {"resources", {"selfsubjectreviews"}},
                        {"verbs", {"create"}}}})),
      binding("system:basic-user", {"system:authenticated"}),
      cluster_role("system:public-info-viewer",
                   json::array({{{"nonResourceURLs", public_urls}, {"verbs", {"get"}}}})),
      binding("system:public-info-viewer", {"system:authenticated", "system:unauthenticated"}),
  };
}

}  // namespace depl::devcluster
