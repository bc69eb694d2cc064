// Pod status: phase, conditions, container states, IPs, written through pods/<name>/status.
#include "sim/kubelet_impl.hpp"

#include <spdlog/spdlog.h>

#include "depl/common/json_dump.hpp"
#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

json Kubelet::Impl::container_status(const PodRun& run, const ContainerRun& c) const {
  json state;
  if (c.state == ContainerRun::State::Running) {
    state = {{"running", {{"startedAt", c.started_at}}}};
  } else if (c.state == ContainerRun::State::Waiting) {
    state = {{"waiting", {{"reason", c.waiting_reason}}}};
    if (!c.waiting_message.empty()) state["waiting"]["message"] = c.waiting_message;
  } else {
    state = {{"terminated",
              {{"exitCode", c.exit_code},
               {"reason", c.terminated_reason},
               {"startedAt", c.started_at},
               {"finishedAt", c.finished_at},
               {"containerID", "depl://" + run.uid + "/" + c.name}}}};
    if (!c.terminated_message.empty()) state["terminated"]["message"] = c.terminated_message;
  }
  json s = {{"name", c.name},
            {"image", c.image},
            {"imageID", c.executable.empty() ? "simulated://" + c.image : "file://" + c.executable},
            {"ready", c.state == ContainerRun::State::Running && !run.terminating},
            {"started", c.state == ContainerRun::State::Running},
            {"restartCount", c.restart_count},
            {"state", state},
            {"lastState", c.last_state}};
  if (c.state != ContainerRun::State::Waiting || c.run_id > 0) {
    s["containerID"] = "depl://" + run.uid + "/" + c.name;
  }
  return s;
}

std::string Kubelet::Impl::phase(const PodRun& run) const {
  if (!run.failed_reason.empty()) return "Failed";
  bool any_started = false;
  bool all_terminated = true;
  bool all_succeeded = true;
  for (const auto& c : run.containers) {
    if (c.state != ContainerRun::State::Terminated) all_terminated = false;
    if (c.state == ContainerRun::State::Running || c.restart_count > 0 ||
        c.state == ContainerRun::State::Terminated) {
      any_started = true;
    }
    if (c.state == ContainerRun::State::Terminated && c.exit_code != 0) all_succeeded = false;
  }
  if (all_terminated && !run.containers.empty()) return all_succeeded ? "Succeeded" : "Failed";
  return any_started ? "Running" : "Pending";
}

void Kubelet::Impl::write_status(PodRun& run) {
  // No status writes while terminating: the pod's end is its deletion (grace period 0) once
  // its processes are gone, as a real kubelet does after the grace period.
  if (run.terminating) return;
  const std::string ph = phase(run);
  bool all_running = !run.containers.empty();
  json statuses = json::array();
  for (const auto& c : run.containers) {
    statuses.push_back(container_status(run, c));
    if (c.state != ContainerRun::State::Running) all_running = false;
  }
  const bool ready = all_running && !run.terminating && run.failed_reason.empty();
  const std::string now = rfc3339_now();
  json scheduled_time = now;
  json conditions = json::array();
  auto old_condition = [&](const std::string& type) -> json {
    // A reference to the pod's own status (`cond ? (*run.pod)["status"] : json()` would be a
    // copy of it, at every call).
    static const json kNone;
    auto found = run.pod->find("status");
    const json& status = found != run.pod->end() ? *found : kNone;
    if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
      for (const auto& c : status["conditions"]) {
        if (c.value("type", "") == type) return c;
      }
    }
    return nullptr;
  };
  auto condition = [&](const std::string& type, bool value, const std::string& reason) {
    json c = {{"type", type}, {"status", value ? "True" : "False"}, {"lastProbeTime", nullptr}};
    const json old = old_condition(type);
    c["lastTransitionTime"] = old.is_object() && old.value("status", "") == c["status"] &&
                                      old.contains("lastTransitionTime")
                                  ? old["lastTransitionTime"]
                                  : json(now);
    if (!reason.empty()) c["reason"] = reason;
    conditions.push_back(c);
  };
  const bool completed = ph == "Succeeded" || ph == "Failed";
  condition("PodScheduled", true, "");
  condition("Initialized", true, "");
  condition("ContainersReady", ready,
            ready ? "" : (completed ? "PodCompleted" : "ContainersNotReady"));
  condition("Ready", ready, ready ? "" : (completed ? "PodCompleted" : "ContainersNotReady"));
  json status = {{"phase", ph},
                 {"conditions", conditions},
                 {"hostIP", "127.0.0.1"},
                 {"hostIPs", json::array({{{"ip", "127.0.0.1"}}})},
                 {"podIP", run.ip},
                 {"podIPs", json::array({{{"ip", run.ip}}})},
                 {"startTime", run.start_time},
                 {"qosClass", "BestEffort"},
                 {"containerStatuses", statuses}};
  if (!run.failed_reason.empty()) {
    status["reason"] = run.failed_reason;
    status["message"] = run.failed_message;
  }
  // Timestamps of unchanged conditions are kept above, so equal means nothing happened.
  if (status == run.last_status) return;
  run.last_status = status;
  patch_status(run.ns, run.name, json{{"status", status}});
}

void Kubelet::Impl::patch_status(const std::string& ns, const std::string& name, const json& body) {
  WriteOptions options;
  options.field_manager = "depl-kubelet";
  options.user_agent = "depl-devcluster/kubelet";
  options.shared_answer = true;  // only the code is read
  auto r = store.patch(ResourceRef{"", "v1", "pods", ns, name, "status"}, PatchType::Merge,
                       dump_json(body), options);
  if (!r.ok() && r.code != 404) {
    spdlog::warn("event=pod_status_failed pod={}/{} code={} message=\"{}\"", ns, name, r.code,
                 r.body.is_object() ? r.body.value("message", "") : "");
  }
}

}  // namespace depl::devcluster
