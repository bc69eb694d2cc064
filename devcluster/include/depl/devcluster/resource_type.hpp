// What the API server knows about one served resource (group/version/plural): its names for
// discovery, scope, verbs, subresources, printer columns and, for custom resources, the
// structural schema. Built-ins are registered by the store; CRDs add and remove entries.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::devcluster {

// One column of `kubectl get` output (meta.k8s.io/v1 TableColumnDefinition). `json_path` is a
// small JSONPath subset (.a.b, .a[0].b, .a[?(@.type=="X")].status); empty for built-in columns
// computed in code.
struct PrinterColumn {
  std::string name;
  std::string type = "string";  // integer, number, string, boolean, date
  std::string format;           // e.g. "name" for the first column
  std::string description;
  int priority = 0;  // > 0: only with -o wide
  std::string json_path;
};

struct ResourceType {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  std::string list_kind;  // defaults to kind + "List"
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get",
                                    "list",   "patch",  "update",           "watch"};
  bool has_status_subresource = false;
  // A PUT without metadata.resourceVersion is accepted (true for most built-ins; false for custom
  // resources and CRDs, which then answer 422 "must be specified for an update").
  bool allow_unconditional_update = true;
  // A PUT to a missing object creates it (endpoints, leases, events).
  bool allow_create_on_update = false;
  // True when served from a CustomResourceDefinition.
  bool custom = false;
  // False for the create-only resources the server computes an answer for and never stores
  // (SelfSubjectAccessReview, TokenReview, ...).
  bool persisted = true;
  // Custom resources: additionalPrinterColumns of this version (Name is implicit).
  std::vector<PrinterColumn> printer_columns;
  // Custom resources: openAPIV3Schema of this version (validation, defaults, pruning).
  std::optional<nlohmann::json> schema;
  // Where objects live: several versions (and events.k8s.io vs core events) share one storage.
  std::string storage_key;

  // "v1" for the core group, "<group>/<version>" otherwise.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "<plural>.<group>" or "<plural>" (the resource name used in messages).
  std::string qualified_resource() const { return group.empty() ? plural : plural + "." + group; }
  // "<Kind>.<group>" as used in "is invalid" messages ("DependableTrainingJob.depl.dev").
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
};

}  // namespace depl::devcluster
