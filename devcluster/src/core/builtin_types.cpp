// Registry entries for the built-in kinds and for CRD-defined kinds.
#include "builtin_types.hpp"

#include <set>

#include <fmt/format.h>

namespace depl::devcluster {

using nlohmann::json;

namespace {

ResourceType make(std::string group, std::string version, std::string plural, std::string singular,
                  std::string kind, bool namespaced, std::vector<std::string> short_names = {},
                  bool status = false) {
  ResourceType t;
  t.group = std::move(group);
  t.version = std::move(version);
  t.plural = std::move(plural);
  t.singular = std::move(singular);
  t.kind = std::move(kind);
  t.list_kind = t.kind + "List";
  t.namespaced = namespaced;
  t.short_names = std::move(short_names);
  t.has_status_subresource = status;
  t.storage_key = t.group + "/" + t.plural;
  return t;
}

}  // namespace

std::vector<ResourceType> builtin_resource_types(bool workload_scheduling) {
  std::vector<ResourceType> types;
  auto ns = make("", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true);
  ns.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  types.push_back(ns);
  types.push_back(make("", "v1", "nodes", "node", "Node", false, {"no"}, true));
  auto pods = make("", "v1", "pods", "pod", "Pod", true, {"po"}, true);
  pods.categories = {"all"};
  types.push_back(pods);
  auto services = make("", "v1", "services", "service", "Service", true, {"svc"}, true);
  services.categories = {"all"};
  services.verbs = {"create", "delete", "deletecollection", "get",
                    "list",   "patch",  "update",           "watch"};
  types.push_back(services);
  auto endpoints = make("", "v1", "endpoints", "endpoints", "Endpoints", true, {"ep"});
  endpoints.allow_create_on_update = true;
  types.push_back(endpoints);
  types.push_back(make("", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}));
  types.push_back(make("", "v1", "secrets", "secret", "Secret", true));
  types.push_back(
      make("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}));
  auto events = make("", "v1", "events", "event", "Event", true, {"ev"});
  events.allow_create_on_update = true;
  events.storage_key = "/events";
  types.push_back(events);
  auto new_events = make("events.k8s.io", "v1", "events", "event", "Event", true, {"ev"});
  new_events.allow_create_on_update = true;
  new_events.storage_key = "/events";  // the same objects as core/v1 events
  types.push_back(new_events);
  auto leases = make("coordination.k8s.io", "v1", "leases", "lease", "Lease", true);
  leases.allow_create_on_update = true;
  types.push_back(leases);
  auto deployments =
      make("apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"}, true);
  deployments.categories = {"all"};
  types.push_back(deployments);
  // Stored and served only: the dev cluster's pods are local processes, not isolated by policy.
  types.push_back(make("networking.k8s.io", "v1", "networkpolicies", "networkpolicy",
                       "NetworkPolicy", true, {"netpol"}));
  const std::string rbac = "rbac.authorization.k8s.io";
  types.push_back(make(rbac, "v1", "roles", "role", "Role", true));
  types.push_back(make(rbac, "v1", "rolebindings", "rolebinding", "RoleBinding", true));
  types.push_back(make(rbac, "v1", "clusterroles", "clusterrole", "ClusterRole", false));
  types.push_back(
      make(rbac, "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false));
  // Reviews: created, answered, never stored.
  auto review = [&](const std::string& group, const std::string& plural,
                    const std::string& singular, const std::string& kind, bool namespaced) {
    auto t = make(group, "v1", plural, singular, kind, namespaced);
    t.verbs = {"create"};
    t.persisted = false;
    types.push_back(std::move(t));
  };
  review("authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview",
         false);
  review("authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview", false);
  review("authorization.k8s.io", "localsubjectaccessreviews", "localsubjectaccessreview",
         "LocalSubjectAccessReview", true);
  review("authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview",
         "SelfSubjectAccessReview", false);
  review("authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview",
         "SelfSubjectRulesReview", false);
  review("authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview",
         "SubjectAccessReview", false);
  auto crds =
      make("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
           "CustomResourceDefinition", false, {"crd", "crds"}, true);
  crds.allow_unconditional_update = false;
  types.push_back(crds);
  if (workload_scheduling) {
    // Kubernetes 1.37's GenericWorkload API (KEP-4671): no short names, none are defined.
    types.push_back(
        make("scheduling.k8s.io", "v1beta1", "workloads", "workload", "Workload", true));
    types.push_back(
        make("scheduling.k8s.io", "v1beta1", "podgroups", "podgroup", "PodGroup", true, {}, true));
  }
  return types;
}

bool field_selector_supported(const ResourceType& type, const std::string& field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (type.custom) return false;
  static const std::set<std::string> pods = {
      "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
      "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  static const std::set<std::string> events = {"involvedObject.kind",
                                               "involvedObject.namespace",
                                               "involvedObject.name",
                                               "involvedObject.uid",
                                               "involvedObject.apiVersion",
                                               "involvedObject.resourceVersion",
                                               "involvedObject.fieldPath",
                                               "reason",
                                               "reportingComponent",
                                               "source",
                                               "type"};
  if (type.plural == "pods") return pods.count(field) > 0;
  if (type.plural == "events") return events.count(field) > 0;
  if (type.plural == "nodes") return field == "spec.unschedulable";
  if (type.plural == "namespaces") return field == "status.phase";
  if (type.plural == "secrets") return field == "type";
  return false;
}

Expected<std::vector<ResourceType>, std::vector<FieldError>> resource_types_from_crd(
    const json& crd) {
  std::vector<FieldError> errors;
  const json spec = crd.value("spec", json::object());
  const json names = spec.value("names", json::object());
  auto required = [&](const json& parent, const std::string& key, const std::string& path) {
    if (!parent.contains(key) || !parent[key].is_string() ||
        parent[key].get<std::string>().empty()) {
      errors.push_back({"FieldValueRequired", path, "Required value"});
      return std::string();
    }
    return parent[key].get<std::string>();
  };
  std::string group = required(spec, "group", "spec.group");
  std::string plural = required(names, "plural", "spec.names.plural");
  std::string kind = required(names, "kind", "spec.names.kind");
  std::string scope = required(spec, "scope", "spec.scope");
  if (!scope.empty() && scope != "Namespaced" && scope != "Cluster") {
    errors.push_back({"FieldValueNotSupported", "spec.scope",
                      fmt::format("Unsupported value: \"{}\": supported values: \"Cluster\", "
                                  "\"Namespaced\"",
                                  scope)});
  }
  std::string name = crd.value("/metadata/name"_json_pointer, std::string());
  if (!plural.empty() && !group.empty() && name != plural + "." + group) {
    errors.push_back(
        {"FieldValueInvalid", "metadata.name",
         fmt::format("Invalid value: \"{}\": must be spec.names.plural+\".\"+spec.group", name)});
  }
  const json versions = spec.value("versions", json::array());
  if (!versions.is_array() || versions.empty()) {
    errors.push_back({"FieldValueRequired", "spec.versions",
                      "Required value: must have exactly one version marked as storage version"});
  }
  int storage_count = 0;
  for (std::size_t i = 0; i < versions.size(); ++i) {
    if (!versions[i].is_object() || !versions[i].contains("name")) {
      errors.push_back(
          {"FieldValueRequired", fmt::format("spec.versions[{}].name", i), "Required value"});
      continue;
    }
    if (versions[i].value("storage", false)) ++storage_count;
    if (versions[i].contains("/schema/openAPIV3Schema"_json_pointer)) {
      const json& s = versions[i]["/schema/openAPIV3Schema"_json_pointer];
      if (!s.is_object() || s.value("type", "") != "object") {
        errors.push_back({"FieldValueRequired",
                          fmt::format("spec.versions[{}].schema.openAPIV3Schema.type", i),
                          "Required value: must be object at the root"});
      }
    }
  }
  if (!versions.empty() && storage_count != 1) {
    errors.push_back({"FieldValueInvalid", "spec.versions",
                      fmt::format("Invalid value: {}: must have exactly one version marked as "
                                  "storage version",
                                  versions.dump())});
  }
  if (!errors.empty()) return unexpected(errors);

  std::vector<ResourceType> types;
  for (const auto& v : versions) {
    if (!v.value("served", true)) continue;
    ResourceType t;
    t.group = group;
    t.version = v["name"].get<std::string>();
    t.plural = plural;
    t.singular = names.value("singular", kind.empty() ? plural : std::string());
    if (t.singular.empty()) {
      t.singular = kind;
      for (auto& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    t.kind = kind;
    t.list_kind = names.value("listKind", kind + "List");
    t.namespaced = scope == "Namespaced";
    for (const auto& s : names.value("shortNames", json::array())) t.short_names.push_back(s);
    for (const auto& c : names.value("categories", json::array())) t.categories.push_back(c);
    t.has_status_subresource = v.contains("/subresources/status"_json_pointer);
    t.allow_unconditional_update = false;
    t.custom = true;
    for (const auto& c : v.value("additionalPrinterColumns", json::array())) {
      PrinterColumn pc;
      pc.name = c.value("name", "");
      pc.type = c.value("type", "string");
      pc.format = c.value("format", "");
      pc.description = c.value("description", "");
      pc.priority = c.value("priority", 0);
      pc.json_path = c.value("jsonPath", "");
      t.printer_columns.push_back(pc);
    }
    if (v.contains("/schema/openAPIV3Schema"_json_pointer)) {
      t.schema = v["/schema/openAPIV3Schema"_json_pointer];
    }
    t.storage_key = group + "/" + plural;
    types.push_back(std::move(t));
  }
  return types;
}

}  // namespace depl::devcluster
