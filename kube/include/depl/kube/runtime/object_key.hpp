// The identity of a Kubernetes object inside the runtime: namespace and name, nothing else.
// Work-queue items, store keys and reconcile requests are all ObjectKeys (controller-runtime's
// reconcile.Request), so a reconciler always re-reads current state instead of acting on a
// possibly stale event payload.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace depl::kube {

struct ObjectKey {
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;

  // "namespace/name", or "name" for cluster-scoped objects (client-go's MetaNamespaceKey).
  std::string to_string() const;
  // metadata.namespace / metadata.name of an object ("" when absent).
  static ObjectKey of(const nlohmann::json& object);

  auto operator<=>(const ObjectKey&) const = default;
  bool operator==(const ObjectKey&) const = default;
};

struct ObjectKeyHash {
  std::size_t operator()(const ObjectKey& key) const noexcept {
    const std::size_t a = std::hash<std::string_view>{}(key.namespace_);
    const std::size_t b = std::hash<std::string_view>{}(key.name);
    return a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  }
};

}  // namespace depl::kube
