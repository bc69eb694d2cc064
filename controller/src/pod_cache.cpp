#include "depl/controller/pod_cache.hpp"

#include <algorithm>

#include "depl/controller/disruption.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/pool_discovery.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

void copy_member(json& from, json& to, const char* key) {
  auto it = from.find(key);
  if (it != from.end()) to[key] = std::move(*it);
}

// name, namespace, resourceVersion, deletionTimestamp; of a job's worker also what ties it to
// the job (uid, creation time, owners, labels, annotations).
void trim_metadata(json& meta, json& out, bool ours) {
  for (const char* key : {"name", "namespace", "resourceVersion", "deletionTimestamp"}) {
    copy_member(meta, out, key);
  }
  if (!ours) return;
  for (const char* key : {"uid", "creationTimestamp", "ownerReferences", "labels", "annotations"}) {
    copy_member(meta, out, key);
  }
}

// A container's name, GPU requests and limits, and for a job's worker its DEPL_MODEL.
json trim_container(json& c, bool ours) {
  json container = json::object();
  copy_member(c, container, "name");
  if (auto resources = c.find("resources"); resources != c.end() && resources->is_object()) {
    for (const char* kind : {"requests", "limits"}) {
      auto list = resources->find(kind);
      if (list == resources->end() || !list->is_object()) continue;
      auto gpus = list->find(kGpuResource);
      if (gpus != list->end()) container["resources"][kind][kGpuResource] = std::move(*gpus);
    }
  }
  if (auto env = c.find("env"); ours && env != c.end() && env->is_array()) {
    for (auto& e : *env) {
      if (e.is_object() && e.value("name", "") == "DEPL_MODEL") {
        container["env"] = json::array({std::move(e)});
        break;
      }
    }
  }
  return container;
}

// The node, the containers GPU accounting reads, and for a job's worker its scheduling gates.
void trim_spec(json& spec, json& out, bool ours) {
  copy_member(spec, out, "nodeName");
  // A job's worker held by a scheduling gate waits for admission (queue_admission.hpp).
  if (ours) copy_member(spec, out, "schedulingGates");
  auto containers = spec.find("containers");
  if (containers == spec.end() || !containers->is_array()) return;
  json& kept = out["containers"] = json::array();
  for (auto& c : *containers) {
    if (!c.is_object()) continue;
    json container = trim_container(c, ours);
    // Another workload's container without GPUs says nothing GPU accounting reads.
    if (ours || container.contains("resources")) kept.push_back(std::move(container));
  }
  if (kept.empty()) out.erase("containers");
}

// The disruption conditions (disruption.hpp), with their time.
json trim_conditions(json& conditions) {
  json kept = json::array();
  for (auto& c : conditions) {
    if (!c.is_object()) continue;
    const std::string type = c.value("type", "");
    if (std::none_of(kDisruptionConditions.begin(), kDisruptionConditions.end(),
                     [&](const char* t) { return type == t; }))
      continue;
    json condition = json::object();
    for (const char* key : {"type", "status", "reason", "lastTransitionTime"}) {
      copy_member(c, condition, key);
    }
    kept.push_back(std::move(condition));
  }
  return kept;
}

// Each container's name and, once it has terminated, its exit code and reason.
json trim_container_statuses(json& statuses) {
  json kept = json::array();
  for (auto& cs : statuses) {
    if (!cs.is_object()) continue;
    json entry = json::object();
    copy_member(cs, entry, "name");
    auto state = cs.find("state");
    if (state != cs.end() && state->is_object()) {
      auto terminated = state->find("terminated");
      if (terminated != state->end() && terminated->is_object()) {
        json& t = entry["state"]["terminated"] = json::object();
        copy_member(*terminated, t, "exitCode");
        copy_member(*terminated, t, "reason");
      }
    }
    kept.push_back(std::move(entry));
  }
  return kept;
}

// The phase; of a job's worker also what ended it for the cluster's sake (disruption.hpp): the
// status reason and the disruption conditions, and how its containers ended.
void trim_status(json& status, json& out, bool ours) {
  copy_member(status, out, "phase");
  if (!ours) return;
  copy_member(status, out, "reason");
  if (auto conditions = status.find("conditions");
      conditions != status.end() && conditions->is_array()) {
    json kept = trim_conditions(*conditions);
    if (!kept.empty()) out["conditions"] = std::move(kept);
  }
  if (auto statuses = status.find("containerStatuses");
      statuses != status.end() && statuses->is_array()) {
    out["containerStatuses"] = trim_container_statuses(*statuses);
  }
}

}  // namespace

void trim_cached_pod(json& pod) {
  if (!pod.is_object()) return;
  const kube::ResourceType job = job_resource();
  const bool ours = kube::controller_owner_key(pod, job.api_version(), job.kind).has_value();
  json out = json::object();
  if (ours) {
    copy_member(pod, out, "apiVersion");
    copy_member(pod, out, "kind");
  }
  if (auto meta = pod.find("metadata"); meta != pod.end() && meta->is_object()) {
    trim_metadata(*meta, out["metadata"] = json::object(), ours);
  }
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    trim_spec(*spec, out["spec"] = json::object(), ours);
  }
  if (auto status = pod.find("status"); status != pod.end() && status->is_object()) {
    trim_status(*status, out["status"] = json::object(), ours);
  }
  pod = std::move(out);
}

kube::FieldFilter cached_pod_fields() {
  kube::FieldFilter f;
  for (const char* key : {"apiVersion", "kind"}) f.keep({key});
  for (const char* key : {"name", "namespace", "resourceVersion", "deletionTimestamp", "uid",
                          "creationTimestamp", "ownerReferences", "labels", "annotations"}) {
    f.keep({"metadata", key});
  }
  f.keep({"spec", "nodeName"});
  f.keep({"spec", "schedulingGates"});
  f.keep({"spec", "containers", "name"});
  f.keep({"spec", "containers", "resources", "requests", kGpuResource});
  f.keep({"spec", "containers", "resources", "limits", kGpuResource});
  f.keep({"spec", "containers", "env"});
  f.keep({"status", "phase"});
  f.keep({"status", "reason"});
  for (const char* key : {"type", "status", "reason", "lastTransitionTime"}) {
    f.keep({"status", "conditions", key});
  }
  f.keep({"status", "containerStatuses", "name"});
  f.keep({"status", "containerStatuses", "state", "terminated", "exitCode"});
  f.keep({"status", "containerStatuses", "state", "terminated", "reason"});
  return f;
}

}  // namespace depl::controller
