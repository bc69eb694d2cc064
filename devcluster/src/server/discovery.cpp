#include "server/discovery.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <tuple>

#include "depl/common/base64.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

// (kind rank, major, minor): v1 > v1beta2 > v1beta1 > v1alpha1; non-matching names last.
std::tuple<int, long, long> version_key(const std::string& v) {
  size_t i = 0;
  if (v.size() < 2 || v[0] != 'v' || !std::isdigit(static_cast<unsigned char>(v[1]))) {
    return {0, 0, 0};
  }
  i = 1;
  long major = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    major = major * 10 + (v[i++] - '0');
  }
  if (i == v.size()) return {3, major, 0};
  int rank = 0;
  if (v.compare(i, 4, "beta") == 0) {
    rank = 2;
    i += 4;
  } else if (v.compare(i, 5, "alpha") == 0) {
    rank = 1;
    i += 5;
  } else {
    return {0, 0, 0};
  }
  if (i == v.size()) return {0, 0, 0};
  long minor = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    minor = minor * 10 + (v[i++] - '0');
  }
  if (i != v.size()) return {0, 0, 0};
  return {rank, major, minor};
}

// Versions of `group` in preference order.
std::vector<std::string> group_versions(const std::vector<ResourceType>& types,
                                        const std::string& group) {
  std::vector<std::string> versions;
  for (const auto& t : types) {
    if (t.group == group &&
        std::find(versions.begin(), versions.end(), t.version) == versions.end()) {
      versions.push_back(t.version);
    }
  }
  std::stable_sort(versions.begin(), versions.end(), version_preferred);
  return versions;
}

json group_json(const std::string& group, const std::vector<std::string>& versions) {
  json g = {{"name", group}, {"versions", json::array()}};
  for (const auto& v : versions) {
    g["versions"].push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  }
  if (!versions.empty()) {
    g["preferredVersion"] = {{"groupVersion", group + "/" + versions.front()},
                             {"version", versions.front()}};
  }
  return g;
}

}  // namespace

bool version_preferred(const std::string& a, const std::string& b) {
  const auto ka = version_key(a);
  const auto kb = version_key(b);
  if (std::get<0>(ka) != std::get<0>(kb)) return std::get<0>(ka) > std::get<0>(kb);
  if (std::get<0>(ka) == 0) return a < b;
  if (std::get<1>(ka) != std::get<1>(kb)) return std::get<1>(ka) > std::get<1>(kb);
  return std::get<2>(ka) > std::get<2>(kb);
}

std::string storage_version_hash(const ResourceType& type) {
  // FNV-1a over group/version/kind; kube uses the first 8 bytes of a SHA-256, clients only
  // compare the values for equality.
  std::uint64_t h = 1469598103934665603ull;
  for (char c : type.group + "/" + type.version + "/" + type.kind) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(h >> (8 * i));
  return base64_encode(bytes);
}

json core_versions_document(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

json group_list_document(const std::vector<ResourceType>& types) {
  json doc = {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array()}};
  std::vector<std::string> groups;
  for (const auto& t : types) {
    if (!t.group.empty() && std::find(groups.begin(), groups.end(), t.group) == groups.end()) {
      groups.push_back(t.group);
    }
  }
  for (const auto& g : groups) doc["groups"].push_back(group_json(g, group_versions(types, g)));
  return doc;
}

std::optional<json> group_document(const std::vector<ResourceType>& types,
                                   const std::string& group) {
  auto versions = group_versions(types, group);
  if (versions.empty() || group.empty()) return std::nullopt;
  json doc = group_json(group, versions);
  doc["kind"] = "APIGroup";
  doc["apiVersion"] = "v1";
  return doc;
}

std::optional<json> resource_list_document(const std::vector<ResourceType>& types,
                                           const std::string& group, const std::string& version) {
  json resources = json::array();
  bool found = false;
  for (const auto& t : types) {
    if (t.group != group || t.version != version) continue;
    found = true;
    json r = {{"name", t.plural},           {"singularName", t.singular},
              {"namespaced", t.namespaced}, {"kind", t.kind},
              {"verbs", t.verbs},           {"storageVersionHash", storage_version_hash(t)}};
    if (!t.short_names.empty()) r["shortNames"] = t.short_names;
    if (!t.categories.empty()) r["categories"] = t.categories;
    resources.push_back(std::move(r));
    if (t.has_status_subresource) {
      resources.push_back({{"name", t.plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", t.namespaced},
                           {"kind", t.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (group.empty() && t.plural == "serviceaccounts") {
      resources.push_back({{"name", "serviceaccounts/token"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"group", "authentication.k8s.io"},
                           {"version", "v1"},
                           {"kind", "TokenRequest"},
                           {"verbs", {"create"}}});
    }
    if (group.empty() && t.plural == "pods") {
      resources.push_back({{"name", "pods/binding"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"kind", "Binding"},
                           {"verbs", {"create"}}});
      resources.push_back({{"name", "pods/log"},
                           {"singularName", ""},
                           {"namespaced", true},
                           {"kind", "Pod"},
                           {"verbs", {"get"}}});
    }
  }
  if (!found) return std::nullopt;
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", group.empty() ? version : group + "/" + version},
              {"resources", std::move(resources)}};
}

}  // namespace depl::devcluster
