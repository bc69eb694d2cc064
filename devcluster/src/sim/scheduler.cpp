#include "sim/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "sim/object_cache.hpp"
#include "sim/scheduling.hpp"
#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

struct Scheduler::Loop {
  ApiStore& store;
  LoopSignal signal;
  ObjectCache pods{store, ResourceRef{"", "v1", "pods", "", "", ""}, signal};
  ObjectCache nodes{store, ResourceRef{"", "v1", "nodes", "", "", ""}, signal};

  explicit Loop(ApiStore& s) : store(s) {}

  static bool pending(const json& pod) {
    const auto& spec = pod.value("spec", json::object());
    return spec.value("nodeName", "").empty() && !pod["metadata"].contains("deletionTimestamp") &&
           !pod_is_terminal(pod);
  }

  static json with_condition(const json& pod, json condition) {
    json conditions = json::array();
    const json status = pod.value("status", json::object());
    if (status.contains("conditions") && status["conditions"].is_array()) {
      for (const auto& c : status["conditions"]) {
        if (c.value("type", "") == condition.value("type", "")) {
          // Keep the transition time when the status does not change.
          if (c.value("status", "") == condition.value("status", "") &&
              c.contains("lastTransitionTime")) {
            condition["lastTransitionTime"] = c["lastTransitionTime"];
          }
          continue;
        }
        conditions.push_back(c);
      }
    }
    conditions.push_back(std::move(condition));
    return conditions;
  }

  static const json* find_condition(const json& pod, const std::string& type) {
    if (!pod.contains("status") || !pod["status"].contains("conditions") ||
        !pod["status"]["conditions"].is_array()) {
      return nullptr;
    }
    for (const auto& c : pod["status"]["conditions"]) {
      if (c.value("type", "") == type) return &c;
    }
    return nullptr;
  }

  void schedule_pending() {
    std::vector<json> node_list;
    for (const auto& [key, node] : nodes.objects()) node_list.push_back(node);
    std::map<std::string, PodResources> used;
    std::vector<const json*> waiting;
    for (const auto& [key, pod] : pods.objects()) {
      const std::string node = pod.value("spec", json::object()).value("nodeName", "");
      if (!node.empty()) {
        if (pod_is_terminal(pod)) continue;
        const auto r = pod_requests(pod);
        auto& u = used[node];
        u.cpu += r.cpu;
        u.memory += r.memory;
        u.gpu += r.gpu;
        u.pods += 1;
      } else if (pending(pod)) {
        waiting.push_back(&pod);
      }
    }
    // Oldest first, as the real scheduler's queue roughly does.
    std::sort(waiting.begin(), waiting.end(), [](const json* a, const json* b) {
      const std::string ta = (*a)["metadata"].value("creationTimestamp", "");
      const std::string tb = (*b)["metadata"].value("creationTimestamp", "");
      if (ta != tb) return ta < tb;
      return ObjectCache::key_of(*a) < ObjectCache::key_of(*b);
    });
    std::vector<json> updated;
    for (const json* pod_ptr : waiting) {
      const json& pod = *pod_ptr;
      const std::string ns = pod["metadata"].value("namespace", "");
      const std::string name = pod["metadata"].value("name", "");
      const ResourceRef ref{"", "v1", "pods", ns, name, ""};
      const ResourceRef status_ref{"", "v1", "pods", ns, name, "status"};
      WriteOptions options;
      options.field_manager = "depl-scheduler";
      options.user_agent = "depl-devcluster/scheduler";
      const auto decision = choose_node(pod, node_list, used);
      if (decision.node) {
        // Status first: once nodeName is set the kubelet owns the pod's status.
        json status = {
            {"status",
             {{"conditions", with_condition(pod, {{"type", "PodScheduled"},
                                                  {"status", "True"},
                                                  {"lastProbeTime", nullptr},
                                                  {"lastTransitionTime", rfc3339_now()}})}}}};
        store.patch(status_ref, PatchType::Merge, status.dump(), options);
        json bind = {{"spec", {{"nodeName", *decision.node}}}};
        auto result = store.patch(ref, PatchType::Merge, bind.dump(), options);
        if (!result.ok()) {
          spdlog::warn("event=bind_failed pod={}/{} node={} code={} message=\"{}\"", ns, name,
                       *decision.node, result.code,
                       result.body.is_object() ? result.body.value("message", "") : "");
          continue;
        }
        spdlog::debug("event=pod_scheduled pod={}/{} node={}", ns, name, *decision.node);
        const auto r = pod_requests(pod);
        auto& u = used[*decision.node];
        u.cpu += r.cpu;
        u.memory += r.memory;
        u.gpu += r.gpu;
        u.pods += 1;
        updated.push_back(result.body);
      } else {
        const json* current = find_condition(pod, "PodScheduled");
        if (current && current->value("status", "") == "False" &&
            current->value("reason", "") == "Unschedulable" &&
            current->value("message", "") == decision.message) {
          continue;
        }
        json status = {{"status",
                        {{"phase", "Pending"},
                         {"conditions", with_condition(pod, {{"type", "PodScheduled"},
                                                             {"status", "False"},
                                                             {"lastProbeTime", nullptr},
                                                             {"lastTransitionTime", rfc3339_now()},
                                                             {"reason", "Unschedulable"},
                                                             {"message", decision.message}})}}}};
        auto result = store.patch(status_ref, PatchType::Merge, status.dump(), options);
        if (result.ok()) updated.push_back(result.body);
        spdlog::debug("event=pod_unschedulable pod={}/{} message=\"{}\"", ns, name,
                      decision.message);
      }
    }
    for (const auto& pod : updated) pods.put(pod);
  }

  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      const bool pods_changed = pods.sync();
      const bool nodes_changed = nodes.sync();
      if (pods_changed || nodes_changed) schedule_pending();
      signal.wait(std::chrono::milliseconds(500));
    }
  }
};

Scheduler::Scheduler(ApiStore& store) : loop_(std::make_unique<Loop>(store)) {
  thread_ = std::jthread([loop = loop_.get()](std::stop_token stop) { loop->run(stop); });
}

Scheduler::~Scheduler() {
  thread_.request_stop();
  loop_->signal.notify();
  thread_.join();
}

}  // namespace depl::devcluster
