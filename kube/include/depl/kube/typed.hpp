// Thin read-only views over the JSON of common objects: named accessors with safe defaults
// ("" / 0 / empty) when a field is absent, so callers do not sprinkle JSON lookups. Views hold
// a reference: the viewed json must outlive them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::kube {

struct OwnerReference {
  std::string api_version{};
  std::string kind{};
  std::string name{};
  std::string uid{};
  bool controller = false;
  bool block_owner_deletion = false;
  nlohmann::json to_json() const;
};

class ObjectView {
 public:
  explicit ObjectView(const nlohmann::json& object) : object_(object) {}
  const nlohmann::json& json() const { return object_; }

  std::string api_version() const;
  std::string kind() const;
  std::string name() const;
  std::string namespace_() const;
  std::string uid() const;
  std::string resource_version() const;
  std::int64_t generation() const;
  std::string creation_timestamp() const;
  std::optional<std::string> deletion_timestamp() const;
  std::map<std::string, std::string> labels() const;
  std::map<std::string, std::string> annotations() const;
  std::string label(std::string_view key) const;  // "" when absent
  std::vector<std::string> finalizers() const;
  std::vector<OwnerReference> owner_references() const;
  std::optional<OwnerReference> controller_reference() const;  // the one with controller: true
  // "namespace/name", or "name" for cluster-scoped objects (the work-queue key).
  std::string key() const;

 protected:
  // Value at a JSON pointer ("/spec/nodeName"), or nullptr-json when absent.
  const nlohmann::json& at(const char* pointer) const;
  std::string string_at(const char* pointer) const;

 private:
  const nlohmann::json& object_;
};

struct Condition {
  std::string type{};
  std::string status{};  // "True", "False", "Unknown"
  std::string reason{};
  std::string message{};
  std::string last_transition_time{};
};

std::vector<Condition> conditions_of(const nlohmann::json& status);

class PodView : public ObjectView {
 public:
  using ObjectView::ObjectView;
  std::string phase() const;      // status.phase
  std::string node_name() const;  // spec.nodeName
  std::string pod_ip() const;
  bool is_ready() const;  // Ready condition True
  std::vector<Condition> conditions() const;
  // Sum of restartCount over container statuses.
  std::int64_t restart_count() const;
};

class NodeView : public ObjectView {
 public:
  using ObjectView::ObjectView;
  bool is_ready() const;
  bool is_unschedulable() const;                             // spec.unschedulable
  std::string allocatable(std::string_view resource) const;  // "" when absent
  std::string capacity(std::string_view resource) const;
  std::vector<Condition> conditions() const;
};

class LeaseView : public ObjectView {
 public:
  using ObjectView::ObjectView;
  std::string holder_identity() const;
  std::int64_t lease_duration_seconds() const;
  std::string acquire_time() const;  // MicroTime text, "" when absent
  std::string renew_time() const;
  std::int64_t lease_transitions() const;
};

class EventView : public ObjectView {
 public:
  using ObjectView::ObjectView;
  std::string reason() const;
  std::string message() const;
  std::string type() const;  // "Normal" / "Warning"
  std::int64_t count() const;
  const nlohmann::json& involved_object() const;
};

}  // namespace depl::kube
