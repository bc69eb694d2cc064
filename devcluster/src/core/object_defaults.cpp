// Creation-time defaults of the built-in kinds (what their registry strategies fill in), the
// events.k8s.io <-> core/v1 Event mapping.
#include <fmt/format.h>

#include "builtin_validation.hpp"
#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

void default_if_absent(json& object, const json::json_pointer& pointer, const json& value) {
  if (!object.contains(pointer) || object[pointer].is_null()) object[pointer] = value;
}

}  // namespace

void apply_builtin_defaults(const ResourceType& type, json& object, std::uint32_t& next_ip,
                            const std::string& now) {
  if (type.custom) {
    // With a status subresource, create ignores status (it is written through /status).
    if (type.has_status_subresource) object.erase("status");
    return;
  }
  const std::string& r = type.plural;
  if (type.group.empty() && r == "pods") {
    apply_pod_spec_defaults(object);
    object["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
    // As the pod registry's PrepareForCreate: a gated pod says why it waits until a scheduler
    // binds it (PodScheduled=True) or finds no room for it (reason Unschedulable).
    static const json::json_pointer kGates("/spec/schedulingGates");
    if (object.contains(kGates) && object[kGates].is_array() && !object[kGates].empty()) {
      object["status"]["conditions"] =
          json::array({{{"type", "PodScheduled"},
                        {"status", "False"},
                        {"lastProbeTime", nullptr},
                        {"lastTransitionTime", now},
                        {"reason", "SchedulingGated"},
                        {"message", "Scheduling is blocked due to non-empty scheduling gates"}}});
    }
  } else if (type.group.empty() && r == "services") {
    default_if_absent(object, "/spec/type"_json_pointer, "ClusterIP");
    default_if_absent(object, "/spec/sessionAffinity"_json_pointer, "None");
    if (!object.contains("/spec/clusterIP"_json_pointer)) {
      std::uint32_t n = next_ip++;
      std::string ip = fmt::format("10.96.{}.{}", (n >> 8) & 0xFF, n & 0xFF);
      object["spec"]["clusterIP"] = ip;
      object["spec"]["clusterIPs"] = json::array({ip});
    }
    if (object.contains("/spec/ports"_json_pointer) &&
        object["/spec/ports"_json_pointer].is_array()) {
      for (auto& p : object["/spec/ports"_json_pointer]) {
        if (!p.is_object()) continue;
        if (!p.contains("protocol")) p["protocol"] = "TCP";
        if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
      }
    }
    object["status"] = {{"loadBalancer", json::object()}};
  } else if (type.group.empty() && r == "namespaces") {
    object["metadata"]["labels"]["kubernetes.io/metadata.name"] = object["metadata"]["name"];
    object["spec"] = {{"finalizers", json::array({"kubernetes"})}};
    object["status"] = {{"phase", "Active"}};
  } else if (type.group.empty() && r == "secrets") {
    default_if_absent(object, "/type"_json_pointer, "Opaque");
  } else if (type.group == "apps" && r == "deployments") {
    default_if_absent(object, "/spec/replicas"_json_pointer, 1);
    default_if_absent(object, "/spec/revisionHistoryLimit"_json_pointer, 10);
    default_if_absent(object, "/spec/progressDeadlineSeconds"_json_pointer, 600);
    default_if_absent(object, "/spec/strategy"_json_pointer,
                      {{"type", "RollingUpdate"},
                       {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}});
    object.erase("status");
  } else if (type.group.empty() && r == "nodes") {
    // Nodes keep the status their creator (the simulated node pool) gives them.
  } else if (type.has_status_subresource && type.plural != "customresourcedefinitions") {
    object.erase("status");
  }
}

void apply_kueue_pod_webhook(const ResourceType& type, json& object) {
  if (type.custom || !type.group.empty() || type.plural != "pods") return;
  static const json::json_pointer kQueue("/metadata/labels/kueue.x-k8s.io~1queue-name");
  if (!object.contains(kQueue) || !object[kQueue].is_string()) return;
  object["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true";
  json& gates = object["spec"]["schedulingGates"];
  if (!gates.is_array()) gates = json::array();
  for (const auto& gate : gates) {
    if (gate.is_object() && gate.value("name", "") == "kueue.x-k8s.io/admission") return;
  }
  gates.push_back({{"name", "kueue.x-k8s.io/admission"}});
}

json event_to_events_v1(const json& core) {
  json out = json::object();
  out["apiVersion"] = "events.k8s.io/v1";
  out["kind"] = "Event";
  out["metadata"] = core.value("metadata", json::object());
  auto move = [&](const char* from, const char* to) {
    if (core.contains(from) && !core[from].is_null()) out[to] = core[from];
  };
  move("eventTime", "eventTime");
  move("series", "series");
  move("reportingComponent", "reportingController");
  move("reportingInstance", "reportingInstance");
  move("action", "action");
  move("reason", "reason");
  move("involvedObject", "regarding");
  move("related", "related");
  move("message", "note");
  move("type", "type");
  move("source", "deprecatedSource");
  move("firstTimestamp", "deprecatedFirstTimestamp");
  move("lastTimestamp", "deprecatedLastTimestamp");
  move("count", "deprecatedCount");
  if (!out.contains("eventTime")) out["eventTime"] = nullptr;
  return out;
}

json events_v1_to_event(const json& v1) {
  json out = json::object();
  out["apiVersion"] = "v1";
  out["kind"] = "Event";
  out["metadata"] = v1.value("metadata", json::object());
  auto move = [&](const char* from, const char* to) {
    if (v1.contains(from) && !v1[from].is_null()) out[to] = v1[from];
  };
  move("eventTime", "eventTime");
  move("series", "series");
  move("reportingController", "reportingComponent");
  move("reportingInstance", "reportingInstance");
  move("action", "action");
  move("reason", "reason");
  move("regarding", "involvedObject");
  move("related", "related");
  move("note", "message");
  move("type", "type");
  move("deprecatedSource", "source");
  move("deprecatedFirstTimestamp", "firstTimestamp");
  move("deprecatedLastTimestamp", "lastTimestamp");
  move("deprecatedCount", "count");
  if (!out.contains("involvedObject")) out["involvedObject"] = json::object();
  return out;
}

}  // namespace depl::devcluster
