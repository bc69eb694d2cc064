// Which Kubernetes resource a request is about (group/version/resource, its kind, and whether
// it lives in a namespace) and the REST paths built from it. Pure values, no I/O: the client and
// the runtime agree on paths through this one unit.
#pragma once

#include <string>
#include <string_view>

namespace depl::kube {

struct ResourceType {
  std::string group{};     // "" for the core group ("v1" objects live under /api)
  std::string version{};   // "v1", "v1alpha1", ...
  std::string resource{};  // lower-case plural as in the URL: "pods", "leases"
  std::string kind{};      // "Pod"
  bool namespaced = true;

  // "v1" for the core group, "<group>/<version>" otherwise: the objects' apiVersion field.
  std::string api_version() const;
  // "/api/v1" or "/apis/<group>/<version>".
  std::string group_version_path() const;

  bool operator==(const ResourceType&) const = default;
};

// Path of the collection. For a namespaced resource an empty `ns` means "all namespaces"
// (/api/v1/pods); for a cluster-scoped one `ns` is ignored.
std::string collection_path(const ResourceType& type, std::string_view ns);

// Path of one object, optionally of one of its subresources ("status", "scale", ...).
// Name and namespace are percent-encoded as path segments.
std::string object_path(const ResourceType& type, std::string_view ns, std::string_view name,
                        std::string_view subresource = "");

// Percent-encoding of one path segment or query value (RFC 3986 unreserved characters kept).
std::string percent_encode(std::string_view text);

// Well-known resource types used across the project.
namespace resources {
ResourceType pods();
ResourceType nodes();
ResourceType namespaces();
ResourceType services();
ResourceType config_maps();
ResourceType secrets();
ResourceType events();                       // core/v1 Events (the ones `kubectl describe` shows)
ResourceType leases();                       // coordination.k8s.io/v1
ResourceType custom_resource_definitions();  // apiextensions.k8s.io/v1, cluster-scoped
}  // namespace resources

}  // namespace depl::kube
