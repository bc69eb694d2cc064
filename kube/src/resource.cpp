#include "depl/kube/resource.hpp"

#include <string>

namespace depl::kube {

std::string ResourceType::api_version() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::group_version_path() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string collection_path(const ResourceType& type, std::string_view ns) {
  std::string path = type.group_version_path();
  if (type.namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += percent_encode(ns);
  }
  path += "/";
  path += type.resource;
  return path;
}

std::string object_path(const ResourceType& type, std::string_view ns, std::string_view name,
                        std::string_view subresource) {
  std::string path = collection_path(type, ns);
  path += "/";
  path += percent_encode(name);
  if (!subresource.empty()) {
    path += "/";
    path += subresource;
  }
  return path;
}

namespace resources {
ResourceType pods() {
  return {"", "v1", "pods", "Pod", true};
}
ResourceType nodes() {
  return {"", "v1", "nodes", "Node", false};
}
ResourceType namespaces() {
  return {"", "v1", "namespaces", "Namespace", false};
}
ResourceType services() {
  return {"", "v1", "services", "Service", true};
}
ResourceType config_maps() {
  return {"", "v1", "configmaps", "ConfigMap", true};
}
ResourceType secrets() {
  return {"", "v1", "secrets", "Secret", true};
}
ResourceType events() {
  return {"", "v1", "events", "Event", true};
}
ResourceType leases() {
  return {"coordination.k8s.io", "v1", "leases", "Lease", true};
}
ResourceType custom_resource_definitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
          false};
}
}  // namespace resources

}  // namespace depl::kube
