#include "depl/controller/disruption.hpp"

#include <fmt/format.h>

#include <array>

#include "depl/common/time.hpp"
#include "depl/controller/pool_discovery.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

// The first disruption condition of the pod that is True, or nullptr.
const json* disruption_condition(const json& pod) {
  const json* status = member(pod, "status");
  const json* conditions = status != nullptr ? member(*status, "conditions") : nullptr;
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const char* type : kDisruptionConditions) {
    for (const json& c : *conditions) {
      if (string_member(c, "type") == type && string_member(c, "status") == "True") return &c;
    }
  }
  return nullptr;
}

// status.reason values of kubelets that end a pod for its node's sake without a condition.
constexpr std::array<const char*, 6> kDisruptedReasons = {"Evicted",      "Preempting", "Shutdown",
                                                          "NodeShutdown", "Terminated", "NodeLost"};

}  // namespace

std::string pod_disruption(const json& pod, const SharedObjects& nodes) {
  if (const json* c = disruption_condition(pod)) {
    const std::string type = string_member(*c, "type");
    const std::string reason = string_member(*c, "reason");
    return reason.empty() ? type : type + ": " + reason;
  }
  const json* status = member(pod, "status");
  if (status != nullptr) {
    const std::string reason = string_member(*status, "reason");
    for (const char* disrupted : kDisruptedReasons) {
      if (reason == disrupted) return "status.reason " + reason;
    }
  }
  // The node explains a pod that has ended or is ending.
  const std::string phase = status != nullptr ? string_member(*status, "phase") : "";
  const json* metadata = member(pod, "metadata");
  const bool terminating = metadata != nullptr && member(*metadata, "deletionTimestamp") != nullptr;
  if (phase != "Failed" && !terminating) return "";
  const json* spec = member(pod, "spec");
  const std::string node_name = spec != nullptr ? string_member(*spec, "nodeName") : "";
  // Without any node known (caches not synced) nothing can be said of one.
  if (node_name.empty() || nodes.empty()) return "";
  for (const auto& node : nodes) {
    if (!node) continue;
    const json* node_metadata = member(*node, "metadata");
    if (node_metadata == nullptr || string_member(*node_metadata, "name") != node_name) continue;
    if (const std::string taint = node_reclaim_taint(*node); !taint.empty()) {
      return fmt::format("node {}: {} taint", node_name, taint);
    }
    if (!node_ready(*node)) return fmt::format("node {}: not Ready", node_name);
    return "";
  }
  return fmt::format("node {}: gone", node_name);
}

std::optional<std::chrono::system_clock::time_point> pod_disrupted_at(const json& pod) {
  const json* c = disruption_condition(pod);
  if (c == nullptr) return std::nullopt;
  return parse_rfc3339(string_member(*c, "lastTransitionTime"));
}

}  // namespace depl::controller
