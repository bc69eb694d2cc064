// The pods/binding subresource: the one request with which kube-scheduler assigns a pending pod
// to a node. Like kube-apiserver's pod registry (BindingREST), it sets spec.nodeName, merges the
// Binding's annotations and sets PodScheduled=True in one write made straight to storage, past
// the pod strategy and the field manager: one resourceVersion and one MODIFIED event, but no
// managedFields entry and no new generation.
#include <fmt/format.h>

#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

// A string member of the Binding: "" when absent, nullopt when it has another type (a body
// kube-apiserver cannot decode).
std::optional<std::string> string_member(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

ApiResult undecodable(const std::string& field, const std::string& expected) {
  return bad_request(fmt::format(
      "Binding in version \"v1\" cannot be handled as a Binding: {} must be {}", field, expected));
}

// kube-apiserver's ValidatePodBinding. It answers these with 500 (its validation errors are not
// wrapped in a Status, kubernetes/kubernetes#139488); this answers 422 Invalid, as the fix under
// review there does, so clients see a caller's error.
std::vector<FieldError> target_problems(const std::string& kind, const std::string& node) {
  std::vector<FieldError> errors;
  if (!kind.empty() && kind != "Node") {
    errors.push_back(
        {"FieldValueNotSupported", "target.kind",
         fmt::format("Unsupported value: \"{}\": supported values: \"Node\", \"<empty>\"", kind)});
  }
  if (node.empty()) errors.push_back({"FieldValueRequired", "target.name", "Required value"});
  return errors;
}

// The pod's conditions with PodScheduled=True in the place of an earlier PodScheduled condition
// (or appended): reason and message go, and lastTransitionTime is `now` unless it was True
// already (podutil.UpdatePodCondition).
json with_pod_scheduled(const json& pod, const std::string& now) {
  static const json::json_pointer kConditions("/status/conditions");
  json scheduled = {{"type", "PodScheduled"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", now}};
  json conditions = pod.value(kConditions, json::array());
  if (!conditions.is_array()) conditions = json::array();
  for (auto& c : conditions) {
    if (!c.is_object() || c.value("type", json()) != "PodScheduled") continue;
    if (c.value("status", json()) == "True" && c.contains("lastTransitionTime")) {
      scheduled["lastTransitionTime"] = c["lastTransitionTime"];
    }
    c = std::move(scheduled);
    return conditions;
  }
  conditions.push_back(std::move(scheduled));
  return conditions;
}

}  // namespace

PreparedWrite ApiStore::Impl::prepare_bind(const ResourceType& pods, const ResourceRef& ref,
                                           const ObjectPtr& current, json binding,
                                           const WriteOptions& options,
                                           const std::string& now) const {
  PreparedWrite out;
  auto refuse = [&](ApiResult result) {
    out.answer = std::move(result);
    return std::move(out);
  };
  if (auto problem = check_kind("v1", "Binding", binding)) return refuse(std::move(*problem));
  const json& meta = binding["metadata"];
  const auto name = string_member(meta, "name");
  const auto ns = string_member(meta, "namespace");
  const auto uid = string_member(meta, "uid");
  const auto resource_version = string_member(meta, "resourceVersion");
  for (const auto& [field, value] : {std::pair{"metadata.name", name},
                                     {"metadata.namespace", ns},
                                     {"metadata.uid", uid},
                                     {"metadata.resourceVersion", resource_version}}) {
    if (!value) return refuse(undecodable(field, "a string"));
  }
  json annotations = meta.value("annotations", json::object());
  if (annotations.is_null()) annotations = json::object();
  if (!annotations.is_object()) return refuse(undecodable("metadata.annotations", "an object"));
  for (const auto& [key, value] : annotations.items()) {
    if (!value.is_string()) return refuse(undecodable("metadata.annotations." + key, "a string"));
  }
  if (!ns->empty() && *ns != ref.ns) {
    return refuse(bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"));
  }
  if (*name != ref.name) {
    return refuse(bad_request("name in URL does not match name in Binding object"));
  }
  const json target = binding.value("target", json::object());
  if (!target.is_object()) return refuse(undecodable("target", "an object"));
  const auto target_kind = string_member(target, "kind");
  const auto node = string_member(target, "name");
  if (!target_kind) return refuse(undecodable("target.kind", "a string"));
  if (!node) return refuse(undecodable("target.name", "a string"));
  if (auto errors = target_problems(*target_kind, *node); !errors.empty()) {
    return refuse(invalid("Binding", ref.name, "Binding", "", errors));
  }

  if (!current) return refuse(not_found(pods.qualified_resource(), ref.name));
  // An empty uid or resourceVersion in the Binding is no precondition.
  auto precondition = [](const std::string& value) {
    return value.empty() ? std::nullopt : std::optional<std::string>(value);
  };
  if (auto failed = check_preconditions(pods, ref, *current, precondition(*uid),
                                        precondition(*resource_version))) {
    return refuse(std::move(*failed));
  }
  // Read only: the stored object itself (pods need no conversion).
  const ObjectPtr shown = present(pods, current);
  const json& pod = *shown;
  static const json::json_pointer kDeletionTimestamp("/metadata/deletionTimestamp");
  static const json::json_pointer kNodeName("/spec/nodeName");
  static const json::json_pointer kSchedulingGates("/spec/schedulingGates");
  // The registry's own refusals are conflicts on pods/binding, worded as it words them.
  if (pod.contains(kDeletionTimestamp)) {
    return refuse(
        conflict("pods/binding", ref.name,
                 fmt::format("pod {} is being deleted, cannot be assigned to a host", ref.name)));
  }
  const json assigned = pod.value(kNodeName, json());
  if (assigned.is_string() && !assigned.get<std::string>().empty()) {
    return refuse(conflict("pods/binding", ref.name,
                           fmt::format("pod {} is already assigned to node \"{}\"", ref.name,
                                       assigned.get<std::string>())));
  }
  if (pod.contains(kSchedulingGates) && pod[kSchedulingGates].is_array() &&
      !pod[kSchedulingGates].empty()) {
    return refuse(conflict("pods/binding", ref.name,
                           fmt::format("pod {} has non-empty .spec.schedulingGates", ref.name)));
  }

  out.answer = ApiResult{201,
                         {{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"metadata", json::object()},
                          {"status", "Success"},
                          {"code", 201}},
                         {}};
  if (options.dry_run) return out;
  json next = pod;
  next["spec"]["nodeName"] = *node;
  for (const auto& [k, v] : annotations.items()) next["metadata"]["annotations"][k] = v;
  next["status"]["conditions"] = with_pod_scheduled(pod, now);
  out.kind = PreparedWrite::Kind::Replace;
  out.object = std::move(next);
  return out;
}

void ApiStore::Impl::commit_bind(const ResourceType& pods, const ResourceRef& ref,
                                 const ObjectPtr& current, PreparedWrite& prepared,
                                 const WriteOptions& options) {
  json stored = to_storage(pods, std::move(prepared.object));
  set_rv(stored, next_rv());
  put(pods.storage_key, object_key(ref.ns, ref.name),
      std::make_shared<const json>(std::move(stored)), current);
  record_write("create", pods, ref, default_manager(options), options.user_agent, 201);
}

}  // namespace depl::devcluster
