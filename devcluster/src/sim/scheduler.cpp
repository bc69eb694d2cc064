#include "sim/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "sim/gang_scheduling.hpp"
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
  // The PodGroups of the coscheduling plugin, when it is on (SchedulerOptions::coscheduling).
  std::optional<ObjectCache> pod_groups;
  // Kubernetes' PodGroups, when served (SchedulerOptions::workload_scheduling).
  std::optional<ObjectCache> native_groups;

  Loop(ApiStore& s, const SchedulerOptions& options) : store(s) {
    if (options.coscheduling) {
      pod_groups.emplace(
          store, ResourceRef{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "", "", ""}, signal);
    }
    if (options.workload_scheduling) {
      native_groups.emplace(
          store, ResourceRef{"scheduling.k8s.io", "v1beta1", "podgroups", "", "", ""}, signal);
    }
  }

  static std::string_view meta_string(const json& object, const char* key) {
    auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return {};
    auto it = meta->find(key);
    return it != meta->end() && it->is_string()
               ? std::string_view(it->get_ref<const std::string&>())
               : std::string_view();
  }

  // Gated pods wait for their gates to go, as with kube-scheduler (pods/binding refuses them).
  static bool pending(const json& pod) {
    auto meta = pod.find("metadata");
    const bool deleting =
        meta != pod.end() && meta->is_object() && meta->contains("deletionTimestamp");
    bool gated = false;
    if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
      auto gates = spec->find("schedulingGates");
      gated = gates != spec->end() && gates->is_array() && !gates->empty();
    }
    return pod_node_name(pod).empty() && !deleting && !gated && !pod_is_terminal(pod);
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

  // The nodes as choose_among takes them, worked out again only when a node changed; `node_objects`
  // keeps the objects the facts point into.
  std::vector<std::shared_ptr<const json>> node_objects;
  std::vector<NodeFacts> node_list;

  // What scheduling reads of a pod, worked out once per version of it, from the cache's events:
  // working it out at each round for every pod (GPUs in use are GPUs in use) would be, with a
  // burst's thousands of rounds over thousands of pods, most of the scheduler's work. `used`
  // (what bound pods hold on each node) and `waiting` (the pods to schedule) follow the facts.
  // The views point into `object`, which the entry keeps.
  struct PodFacts {
    std::shared_ptr<const json> object;
    std::string_view node;  // spec.nodeName, or the node it was just bound to
    bool counted = false;   // bound and not terminal: its requests are in use
    bool waiting = false;   // to be scheduled
    PodResources requests;
    std::string_view created;
    // The pod group it belongs to, "" when none: its spec.schedulingGroup where Kubernetes'
    // PodGroups are served (`native`), else its kPodGroupLabel where coscheduling is on.
    std::string_view group;
    bool native = false;
    // Bound by us, its event not in yet: counted on this node until the event brings the pod
    // as the store has it (a new object, so the facts are worked out again).
    std::string assumed_node;
  };
  std::map<ObjectCache::Key, PodFacts, std::less<>> facts;  // by the pod cache's key
  NodeUsage used;
  std::set<ObjectCache::Key, std::less<>> waiting;

  PodFacts facts_of(const std::shared_ptr<const json>& object) const {
    PodFacts f;
    f.object = object;
    const json& pod = *object;
    f.node = pod_node_name(pod);
    if (native_groups) {
      f.group = scheduling_group_of(pod);
      f.native = !f.group.empty();
    }
    if (f.group.empty() && pod_groups) f.group = pod_group_of(pod);
    if (!f.node.empty()) {
      f.counted = !pod_is_terminal(pod);
      if (f.counted) f.requests = pod_requests(pod);
    } else {
      f.waiting = pending(pod);
      f.created = meta_string(pod, "creationTimestamp");
    }
    return f;
  }

  // Adds (sign +1) or takes back (-1) what a bound pod holds on its node.
  void count(const PodFacts& f, int sign) {
    if (!f.counted) return;
    auto at = used.find(f.node);
    if (at == used.end()) at = used.emplace(std::string(f.node), PodResources{}).first;
    PodResources& u = at->second;
    u.cpu += sign * f.requests.cpu;
    u.memory += sign * f.requests.memory;
    u.gpu += sign * f.requests.gpu;
    u.pods += sign;
    if (u.pods <= 0) used.erase(at);
  }

  // The pod cache changed `key` (the object it holds now, or none): its facts follow.
  void pod_changed(const ObjectCache::Key& key) {
    if (auto old = facts.find(key); old != facts.end()) {
      count(old->second, -1);
      facts.erase(old);
      waiting.erase(key);
    }
    auto now = pods.objects().find(key);
    if (now == pods.objects().end()) return;
    PodFacts f = facts_of(now->second);
    count(f, +1);
    if (f.waiting) waiting.insert(key);
    facts.emplace(key, std::move(f));
  }

  // "<namespace>/<group>" (the group caches' key), after "k/" for Kubernetes' PodGroups and
  // "c/" for the coscheduling plugin's.
  static std::string gang_key(const PodFacts& f) {
    std::string key(f.native ? "k/" : "c/");
    key += meta_string(*f.object, "namespace");
    key += "/";
    key += f.group;
    return key;
  }

  // How many pods of pod group `key` (gang_key) are bound and not terminal.
  int bound_in_group(std::string_view key) const {
    int n = 0;
    for (const auto& [pod_key, f] : facts) {
      if (f.counted && !f.group.empty() && gang_key(f) == key) ++n;
    }
    return n;
  }

  static WriteOptions write_options() {
    WriteOptions options;
    options.field_manager = "depl-scheduler";
    options.user_agent = "depl-devcluster/scheduler";
    // A binding's answer is a Status; a status patch's, the pod, read through answer().
    options.shared_answer = true;
    return options;
  }

  // Binds the pod of `f` to `node` with one pods/binding create, as kube-scheduler binds: the
  // API server sets spec.nodeName and PodScheduled=True together. The uid binds this pod, not a
  // namesake created since.
  void bind(const std::string* key, PodFacts& f, const std::string& node) {
    const json& pod = *f.object;
    const std::string ns = pod["metadata"].value("namespace", "");
    const std::string name = pod["metadata"].value("name", "");
    const json binding = {
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata",
         {{"name", name}, {"namespace", ns}, {"uid", pod["metadata"].value("uid", "")}}},
        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    auto result =
        store.create(ResourceRef{"", "v1", "pods", ns, name, "binding"}, binding, write_options());
    if (!result.ok()) {
      spdlog::warn("event=bind_failed pod={}/{} node={} code={} message=\"{}\"", ns, name, node,
                   result.code, result.body.is_object() ? result.body.value("message", "") : "");
      return;
    }
    spdlog::debug("event=pod_scheduled pod={}/{} node={}", ns, name, node);
    // The answer is a Status, not the pod: assume it bound until its event arrives.
    f.assumed_node = node;
    f.node = f.assumed_node;
    f.waiting = false;
    f.counted = true;
    f.requests = pod_requests(pod);
    count(f, +1);
    waiting.erase(*key);
  }

  // Marks `pod` PodScheduled=False/Unschedulable with `message` (once per message); the pod as
  // written goes to `updated`.
  void mark_unschedulable(const json& pod, const std::string& message, std::vector<json>& updated) {
    const json* current = find_condition(pod, "PodScheduled");
    if (current && current->value("status", "") == "False" &&
        current->value("reason", "") == "Unschedulable" &&
        current->value("message", "") == message) {
      return;
    }
    const std::string ns = pod["metadata"].value("namespace", "");
    const std::string name = pod["metadata"].value("name", "");
    json status = {{"status",
                    {{"phase", "Pending"},
                     {"conditions", with_condition(pod, {{"type", "PodScheduled"},
                                                         {"status", "False"},
                                                         {"lastProbeTime", nullptr},
                                                         {"lastTransitionTime", rfc3339_now()},
                                                         {"reason", "Unschedulable"},
                                                         {"message", message}})}}}};
    auto result = store.patch(ResourceRef{"", "v1", "pods", ns, name, "status"}, PatchType::Merge,
                              status.dump(), write_options());
    if (result.ok()) updated.push_back(result.answer());
    spdlog::debug("event=pod_unschedulable pod={}/{} message=\"{}\"", ns, name, message);
  }

  void schedule_pending(bool nodes_changed) {
    if (nodes_changed) {
      node_list.clear();
      node_objects.clear();
      for (const auto& [key, node] : nodes.objects()) {
        node_objects.push_back(node);
        node_list.push_back(node_facts(*node));
      }
    }
    struct Waiting {
      std::string_view created;
      const std::string* key;
      PodFacts* facts;
    };
    std::vector<Waiting> queue;
    for (const auto& key : waiting) {
      auto f = facts.find(key);
      if (f != facts.end()) queue.push_back({f->second.created, &f->first, &f->second});
    }
    // Oldest first, as the real scheduler's queue roughly does (then by namespace/name: the
    // cache's key).
    std::sort(queue.begin(), queue.end(), [](const Waiting& a, const Waiting& b) {
      if (a.created != b.created) return a.created < b.created;
      return *a.key < *b.key;
    });
    std::vector<json> updated;
    // A pod group's waiting pods are placed together, at the turn of its oldest one.
    std::map<std::string, std::vector<const Waiting*>, std::less<>> gangs;
    for (const Waiting& w : queue) {
      if (!w.facts->group.empty()) gangs[gang_key(*w.facts)].push_back(&w);
    }
    for (const Waiting& w : queue) {
      if (w.facts->group.empty()) {
        const auto decision = choose_among(*w.facts->object, node_list, used);
        if (decision.node) {
          bind(w.key, *w.facts, *decision.node);
        } else {
          mark_unschedulable(*w.facts->object, decision.message, updated);
        }
        continue;
      }
      auto gang = gangs.find(gang_key(*w.facts));
      if (gang == gangs.end()) continue;  // placed with an older member of its group
      std::vector<const json*> members;
      for (const Waiting* m : gang->second) members.push_back(m->facts->object.get());
      const ObjectCache& groups = w.facts->native ? *native_groups : *pod_groups;
      const auto group = groups.objects().find(gang->first.substr(2));
      const json* group_object = group == groups.objects().end() ? nullptr : group->second.get();
      const int bound = bound_in_group(gang->first);
      const GangDecision decision =
          w.facts->native ? place_native_gang(members, bound, group_object, node_list, used)
                          : place_gang(members, bound, group_object, node_list, used);
      for (std::size_t i = 0; i < members.size(); ++i) {
        const Waiting& m = *gang->second[i];
        if (decision.nodes[i]) {
          bind(m.key, *m.facts, *decision.nodes[i]);
        } else {
          mark_unschedulable(*m.facts->object, decision.messages[i], updated);
        }
      }
      gangs.erase(gang);
    }
    for (auto& pod : updated) {
      const ObjectCache::Key key = ObjectCache::key_of(pod);
      pods.put(std::move(pod));
      pod_changed(key);
    }
  }

  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      const bool pods_changed =
          pods.sync([this](const std::string&, const ObjectCache::ObjectPtr& pod) {
            pod_changed(ObjectCache::key_of(*pod));
          });
      const bool nodes_changed = nodes.sync();
      bool groups_changed = pod_groups && pod_groups->sync();
      groups_changed = (native_groups && native_groups->sync()) || groups_changed;
      if (pods_changed || nodes_changed || groups_changed) schedule_pending(nodes_changed);
      signal.wait(std::chrono::milliseconds(500));
    }
  }
};

Scheduler::Scheduler(ApiStore& store, SchedulerOptions options)
    : loop_(std::make_unique<Loop>(store, options)) {
  thread_ = std::jthread([loop = loop_.get()](std::stop_token stop) { loop->run(stop); });
}

Scheduler::~Scheduler() {
  thread_.request_stop();
  loop_->signal.notify();
  thread_.join();
}

}  // namespace depl::devcluster
