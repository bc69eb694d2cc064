#include "sim/pod_gc.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <string>

#include "sim/object_cache.hpp"
#include "sim/scheduling.hpp"
#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

struct PodGarbageCollector::Loop {
  ApiStore& store;
  PodGcOptions options;
  LoopSignal signal;
  ObjectCache pods{store, ResourceRef{"", "v1", "pods", "", "", ""}, signal};
  ObjectCache nodes{store, ResourceRef{"", "v1", "nodes", "", "", ""}, signal};
  std::set<std::string> deleted_nodes;  // seen deleted and not created again
  // Pods (cache keys) bound to a node missing from the node cache: the only ones looked at, so
  // a pod event costs one lookup however many pods there are.
  std::set<ObjectCache::Key> suspects;
  std::map<std::string, std::chrono::steady_clock::time_point> missing_since;  // by node name

  Loop(ApiStore& s, PodGcOptions o) : store(s), options(o) {}

  void on_node_event(const std::string& type, const json& node) {
    const std::string name = node["metadata"].value("name", "");
    if (type != "DELETED") {
      deleted_nodes.erase(name);
      missing_since.erase(name);
      return;
    }
    deleted_nodes.insert(name);
    for (const auto& [key, pod] : pods.objects()) {
      if (pod_node_name(*pod) == name) suspects.insert(key);
    }
  }

  void on_pod_event(const std::string& type, const json& pod) {
    const ObjectCache::Key key = ObjectCache::key_of(pod);
    const std::string_view node = pod_node_name(pod);
    if (type == "DELETED" || node.empty() || nodes.objects().count(std::string(node))) {
      suspects.erase(key);
    } else {
      suspects.insert(key);
    }
  }

  // Whether `node` is gone for good: seen deleted, or unknown for the whole quarantine; and the
  // store agrees (the node cache may not have seen it created again yet).
  bool node_gone(const std::string& node, std::chrono::steady_clock::time_point now) {
    if (!deleted_nodes.count(node)) {
      auto [since, fresh] = missing_since.emplace(node, now);
      if (now - since->second < options.quarantine) return false;
    }
    return store.get(ResourceRef{"", "v1", "nodes", "", node, ""}).code == 404;
  }

  void collect() {
    const auto now = std::chrono::steady_clock::now();
    std::set<std::string> missing;
    for (auto it = suspects.begin(); it != suspects.end();) {
      auto found = pods.objects().find(*it);
      const std::string node = found == pods.objects().end()
                                   ? std::string()
                                   : std::string(pod_node_name(*found->second));
      if (node.empty() || nodes.objects().count(node)) {
        it = suspects.erase(it);
        continue;
      }
      missing.insert(node);
      // Stays a suspect until its deletion event arrives (or it is found bound to a live node).
      if (node_gone(node, now)) remove_orphan(*found->second, node);
      ++it;
    }
    std::erase_if(missing_since, [&](const auto& entry) { return !missing.count(entry.first); });
  }

  void remove_orphan(const json& pod, const std::string& node) {
    const json& meta = pod["metadata"];
    const std::string ns = meta.value("namespace", "");
    const std::string name = meta.value("name", "");
    WriteOptions write;
    write.field_manager = "depl-pod-gc";
    write.user_agent = "depl-devcluster/pod-gc";
    // Terminating or not: no kubelet is left to end it (a pod in its grace period keeps its
    // object through status writes).
    if (!pod_is_terminal(pod)) {
      json conditions = json::array();
      const json& status = pod.contains("status") ? pod["status"] : json();
      if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
        for (const auto& c : status["conditions"]) {
          if (c.value("type", "") != "DisruptionTarget") conditions.push_back(c);
        }
      }
      conditions.push_back({{"type", "DisruptionTarget"},
                            {"status", "True"},
                            {"reason", "DeletionByPodGC"},
                            {"message", "PodGC: node no longer exists"},
                            {"lastProbeTime", nullptr},
                            {"lastTransitionTime", rfc3339_now()}});
      // The version read is the precondition: the status of this incarnation, as last seen.
      const json patch = {{"metadata", {{"resourceVersion", meta.value("resourceVersion", "")}}},
                          {"status", {{"phase", "Failed"}, {"conditions", conditions}}}};
      auto failed = store.patch(ResourceRef{"", "v1", "pods", ns, name, "status"}, PatchType::Merge,
                                patch.dump(), write);
      if (!failed.ok()) {
        // 409: it changed meanwhile; the next round looks at its new version.
        if (failed.code != 404 && failed.code != 409) {
          spdlog::warn("event=pod_gc_failed pod={}/{} code={}", ns, name, failed.code);
        }
        return;
      }
    }
    DeleteOptions remove;
    remove.grace_period_seconds = 0;
    remove.precondition_uid = meta.value("uid", "");
    remove.user_agent = write.user_agent;
    auto removed = store.remove(ResourceRef{"", "v1", "pods", ns, name, ""}, remove);
    if (!removed.ok() && removed.code != 404 && removed.code != 409) {
      spdlog::warn("event=pod_gc_failed pod={}/{} code={}", ns, name, removed.code);
      return;
    }
    spdlog::info("event=pod_garbage_collected pod={}/{} node={} reason=NodeGone", ns, name, node);
  }

  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      nodes.sync([&](const std::string& type, const ObjectCache::ObjectPtr& node) {
        on_node_event(type, *node);
      });
      pods.sync([&](const std::string& type, const ObjectCache::ObjectPtr& pod) {
        on_pod_event(type, *pod);
      });
      if (!suspects.empty()) collect();
      // Also wakes without events: quarantines end, and a round that met a conflict retries.
      signal.wait(std::chrono::milliseconds(500));
    }
  }
};

PodGarbageCollector::PodGarbageCollector(ApiStore& store, PodGcOptions options)
    : loop_(std::make_unique<Loop>(store, options)) {
  thread_ = std::jthread([loop = loop_.get()](std::stop_token stop) { loop->run(stop); });
}

PodGarbageCollector::~PodGarbageCollector() {
  thread_.request_stop();
  loop_->signal.notify();
  thread_.join();
}

}  // namespace depl::devcluster
