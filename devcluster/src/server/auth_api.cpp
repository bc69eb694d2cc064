#include "server/auth_api.hpp"

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

const std::string kAuthn = "authentication.k8s.io";
const std::string kAuthz = "authorization.k8s.io";

// apiVersion and kind as the URL serves them; a body naming others is a 400.
std::optional<ApiResult> check_type(json& body, const std::string& api_version,
                                    const std::string& kind) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  const std::string sent_version = json_string(body, "apiVersion");
  const std::string sent_kind = json_string(body, "kind");
  if (!sent_version.empty() && sent_version != api_version) {
    return bad_request(
        fmt::format("the API version in the data ({}) does not match the expected API version ({})",
                    sent_version, api_version));
  }
  if (!sent_kind.empty() && sent_kind != kind) {
    return bad_request(fmt::format(
        "the kind in the data ({}) does not match the expected kind ({})", sent_kind, kind));
  }
  body["apiVersion"] = api_version;
  body["kind"] = kind;
  if (!body.contains("metadata") || !body["metadata"].is_object()) {
    body["metadata"] = json::object();
  }
  body["metadata"]["creationTimestamp"] = nullptr;
  return std::nullopt;
}

ApiResult created(json body) {
  return ApiResult{201, std::move(body), {}};
}

// spec.resourceAttributes or spec.nonResourceAttributes as authorizer attributes.
Expected<RequestAttributes, ApiResult> review_attributes(const json& spec, const UserInfo& user,
                                                         const std::string& kind,
                                                         const std::string& forced_ns) {
  const bool resource =
      spec.contains("resourceAttributes") && spec["resourceAttributes"].is_object();
  const bool non_resource =
      spec.contains("nonResourceAttributes") && spec["nonResourceAttributes"].is_object();
  if (resource == non_resource) {
    return unexpected(invalid(kind + "." + kAuthz, "", kind, kAuthz,
                              {{"FieldValueInvalid", "spec.resourceAttributes",
                                "Invalid value: \"null\": exactly one of nonResourceAttributes "
                                "or resourceAttributes must be specified"}}));
  }
  RequestAttributes a;
  a.user = user;
  if (resource) {
    const json& r = spec["resourceAttributes"];
    a.verb = json_string(r, "verb");
    a.api_group = json_string(r, "group");
    a.api_version = json_string(r, "version");
    a.resource = json_string(r, "resource");
    a.subresource = json_string(r, "subresource");
    a.name = json_string(r, "name");
    a.ns = json_string(r, "namespace");
    if (!forced_ns.empty() && a.ns != forced_ns) {
      return unexpected(invalid(kind + "." + kAuthz, "", kind, kAuthz,
                                {{"FieldValueInvalid", "spec.resourceAttributes.namespace",
                                  fmt::format("Invalid value: \"{}\": must match "
                                              "metadata.namespace",
                                              a.ns)}}));
    }
  } else {
    const json& n = spec["nonResourceAttributes"];
    a.resource_request = false;
    a.verb = json_string(n, "verb");
    a.path = json_string(n, "path");
  }
  return a;
}

ApiResult access_review(const std::string& kind, json body, UserInfo subject,
                        RbacAuthorizer& authorizer, const std::string& forced_ns) {
  const json spec = body.value("spec", json::object());
  auto attributes = review_attributes(spec, subject, kind, forced_ns);
  if (!attributes) return attributes.error();
  const AuthorizationDecision decision = authorizer.authorize(*attributes);
  json status = {{"allowed", decision.allowed}};
  if (!decision.reason.empty()) status["reason"] = decision.reason;
  body["status"] = std::move(status);
  return created(std::move(body));
}

UserInfo subject_of(const json& spec) {
  UserInfo user;
  user.username = json_string(spec, "user");
  user.uid = json_string(spec, "uid");
  user.groups = json_strings(spec, "groups");
  if (spec.contains("extra") && spec["extra"].is_object()) {
    for (const auto& [k, v] : spec["extra"].items()) {
      if (!v.is_array()) continue;
      for (const auto& e : v) {
        if (e.is_string()) user.extra[k].push_back(e.get<std::string>());
      }
    }
  }
  return user;
}

json rule_json(const PolicyRule& rule) {
  if (!rule.non_resource_urls.empty()) {
    return {{"verbs", rule.verbs}, {"nonResourceURLs", rule.non_resource_urls}};
  }
  json out = {{"verbs", rule.verbs}, {"apiGroups", rule.api_groups}, {"resources", rule.resources}};
  if (!rule.resource_names.empty()) out["resourceNames"] = rule.resource_names;
  return out;
}

ApiResult token_request(const ResourceRef& ref, json body, ApiStore& store,
                        Authenticator& authenticator) {
  if (auto problem = check_type(body, kAuthn + "/v1", "TokenRequest")) return *problem;
  auto account = store.get(ResourceRef{"", "v1", "serviceaccounts", ref.ns, ref.name, ""});
  if (!account.ok()) return account;
  json& spec = body["spec"];
  if (!spec.is_object()) spec = json::object();
  std::int64_t seconds = 3600;
  if (spec.contains("expirationSeconds") && spec["expirationSeconds"].is_number_integer()) {
    seconds = spec["expirationSeconds"].get<std::int64_t>();
  }
  if (seconds < 600 || seconds > (std::int64_t{1} << 32)) {
    return invalid(
        "TokenRequest." + kAuthn, ref.name, "TokenRequest", kAuthn,
        {{"FieldValueInvalid", "spec.expirationSeconds",
          fmt::format("Invalid value: {}: may not specify a duration {}", seconds,
                      seconds < 600 ? "less than 10 minutes" : "larger than 2^32 seconds")}});
  }
  spec["expirationSeconds"] = seconds;
  if (!spec.contains("audiences") || !spec["audiences"].is_array() || spec["audiences"].empty()) {
    spec["audiences"] = json::array({"https://kubernetes.default.svc.cluster.local"});
  }
  if (!spec.contains("boundObjectRef")) spec["boundObjectRef"] = nullptr;
  const std::string uid = account.answer().value("/metadata/uid"_json_pointer, std::string());
  auto [token, expires] =
      authenticator.issue_token(ref.ns, ref.name, uid, std::chrono::seconds(seconds));
  body["metadata"]["name"] = ref.name;
  body["metadata"]["namespace"] = ref.ns;
  body["metadata"]["creationTimestamp"] = format_rfc3339(authenticator.now());
  body["status"] = {{"token", token}, {"expirationTimestamp", format_rfc3339(expires)}};
  return created(std::move(body));
}

}  // namespace

bool is_auth_resource(const ResourceRef& ref) {
  if (ref.group.empty()) {
    return ref.plural == "serviceaccounts" && ref.subresource == "token" && !ref.name.empty();
  }
  if (ref.version != "v1" || !ref.name.empty()) return false;
  if (ref.group == kAuthn)
    return ref.plural == "selfsubjectreviews" || ref.plural == "tokenreviews";
  if (ref.group == kAuthz) {
    return ref.plural == "selfsubjectaccessreviews" || ref.plural == "subjectaccessreviews" ||
           ref.plural == "localsubjectaccessreviews" || ref.plural == "selfsubjectrulesreviews";
  }
  return false;
}

ApiResult answer_auth_request(const ResourceRef& ref, json body, const UserInfo& user,
                              ApiStore& store, RbacAuthorizer& authorizer,
                              Authenticator& authenticator) {
  if (ref.group.empty()) return token_request(ref, std::move(body), store, authenticator);
  const std::string& plural = ref.plural;
  if (plural == "selfsubjectreviews") {
    if (auto problem = check_type(body, kAuthn + "/v1", "SelfSubjectReview")) return *problem;
    body["status"] = {{"userInfo", user.to_json()}};
    return created(std::move(body));
  }
  if (plural == "tokenreviews") {
    if (auto problem = check_type(body, kAuthn + "/v1", "TokenReview")) return *problem;
    const std::string token = json_string(body.value("spec", json::object()), "token");
    auto reviewed = token.empty() ? std::nullopt : authenticator.user_of_token(token);
    body["status"] = reviewed ? json{{"authenticated", true}, {"user", reviewed->to_json()}}
                              : json{{"authenticated", false}};
    return created(std::move(body));
  }
  if (plural == "selfsubjectaccessreviews") {
    if (auto problem = check_type(body, kAuthz + "/v1", "SelfSubjectAccessReview")) {
      return *problem;
    }
    return access_review("SelfSubjectAccessReview", std::move(body), user, authorizer, "");
  }
  if (plural == "subjectaccessreviews" || plural == "localsubjectaccessreviews") {
    const std::string kind =
        plural == "subjectaccessreviews" ? "SubjectAccessReview" : "LocalSubjectAccessReview";
    if (auto problem = check_type(body, kAuthz + "/v1", kind)) return *problem;
    UserInfo subject = subject_of(body.value("spec", json::object()));
    if (subject.username.empty() && subject.groups.empty()) {
      return invalid(kind + "." + kAuthz, "", kind, kAuthz,
                     {{"FieldValueInvalid", "spec.user",
                       "Invalid value: \"\": at least one of user or group must be specified"}});
    }
    if (!ref.ns.empty()) body["metadata"]["namespace"] = ref.ns;
    return access_review(kind, std::move(body), std::move(subject), authorizer, ref.ns);
  }
  if (plural == "selfsubjectrulesreviews") {
    if (auto problem = check_type(body, kAuthz + "/v1", "SelfSubjectRulesReview")) {
      return *problem;
    }
    const std::string ns = json_string(body.value("spec", json::object()), "namespace");
    json resource_rules = json::array();
    json non_resource_rules = json::array();
    for (const auto& rule : authorizer.rules_for(user, ns)) {
      (rule.non_resource_urls.empty() ? resource_rules : non_resource_rules)
          .push_back(rule_json(rule));
    }
    body["status"] = {{"resourceRules", std::move(resource_rules)},
                      {"nonResourceRules", std::move(non_resource_rules)},
                      {"incomplete", false}};
    return created(std::move(body));
  }
  return status_error(404, "NotFound", "the server could not find the requested resource");
}

}  // namespace depl::devcluster
