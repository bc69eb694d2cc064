#include "sim/node_termination.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/object_cache.hpp"
#include "sim/scheduling.hpp"
#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const json& field(const json& object, const char* a, const char* b) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(a);
  if (it == object.end() || !it->is_object()) return kNull;
  auto jt = it->find(b);
  return jt == it->end() ? kNull : *jt;
}

bool has_termination_finalizer(const json& node) {
  const json& finalizers = field(node, "metadata", "finalizers");
  if (!finalizers.is_array()) return false;
  return std::find(finalizers.begin(), finalizers.end(), kTerminationFinalizer) != finalizers.end();
}

bool is_deleting(const json& object) {
  return field(object, "metadata", "deletionTimestamp").is_string();
}

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
}

}  // namespace

Expected<void> register_node(ApiStore& store, const json& node) {
  WriteOptions write;
  write.field_manager = "depl-kubelet";
  const std::string name = node["metadata"].value("name", "");
  auto created = store.create(ResourceRef{"", "v1", "nodes", "", "", ""}, node, write);
  if (!created.ok()) {
    return error("cannot create node " + name + ": " + created.answer().value("message", ""));
  }
  // Written again through /status in case creation drops the status (as for most kinds).
  auto patched = store.patch(ResourceRef{"", "v1", "nodes", "", name, "status"}, PatchType::Merge,
                             json{{"status", node["status"]}}.dump(), write);
  if (!patched.ok()) {
    return error("cannot set the status of node " + name + ": " +
                 patched.answer().value("message", ""));
  }
  return {};
}

struct NodeTerminator::Loop {
  struct Termination {
    Clock::time_point deadline;
    std::chrono::milliseconds replacement_after{-1};
    std::string pool;
    bool tainted = false;
    std::set<ObjectCache::Key> evicted;
  };
  struct Replacement {
    Clock::time_point at;
    std::string pool;
  };

  ApiStore& store;
  std::vector<NodePool> pools;
  LoopSignal signal;
  ObjectCache nodes{store, ResourceRef{"", "v1", "nodes", "", "", ""}, signal};
  ObjectCache pods{store, ResourceRef{"", "v1", "pods", "", "", ""}, signal};
  std::map<std::string, Termination> terminating;  // by node name
  std::vector<Replacement> replacements;
  std::map<std::string, int> next_index;  // per pool: the next replacement's number

  std::mutex mutex;  // guards `requested`
  std::map<std::string, ReclaimSettings> requested;

  Loop(ApiStore& s, std::vector<NodePool> p) : store(s), pools(std::move(p)) {}

  const NodePool* pool_of(const json& node) const {
    const json& labels = field(node, "metadata", "labels");
    if (!labels.is_object()) return nullptr;
    const std::string name = labels.value("depl.dev/pool", "");
    for (const auto& pool : pools) {
      if (pool.name == name) return &pool;
    }
    return nullptr;
  }

  void on_node_event(const std::string& type, const json& node) {
    const std::string name = node["metadata"].value("name", "");
    if (type == "DELETED") {
      terminating.erase(name);
      return;
    }
    if (!is_deleting(node) || !has_termination_finalizer(node) || terminating.count(name)) return;
    const NodePool* pool = pool_of(node);
    Termination t;
    std::chrono::milliseconds notice = seconds_to_ms(pool ? pool->reclaim_notice_seconds : 30);
    t.replacement_after =
        pool && pool->replacement_seconds >= 0 ? seconds_to_ms(pool->replacement_seconds)
                                               : std::chrono::milliseconds(-1);
    {
      std::lock_guard lock(mutex);
      if (auto it = requested.find(name); it != requested.end()) {
        if (it->second.notice) notice = *it->second.notice;
        if (it->second.replacement_after) t.replacement_after = *it->second.replacement_after;
        requested.erase(it);
      }
    }
    t.deadline = Clock::now() + notice;
    t.pool = pool ? pool->name : "";
    spdlog::info("event=node_terminating node={} notice_ms={}", name, notice.count());
    terminating.emplace(name, std::move(t));
  }

  WriteOptions writer() const {
    WriteOptions write;
    write.field_manager = "karpenter";
    write.user_agent = "depl-devcluster/node-termination";
    return write;
  }

  bool taint(const json& node) {
    json taints = json::array();
    const json& current = field(node, "spec", "taints");
    if (current.is_array()) {
      for (const auto& t : current) {
        if (t.value("key", "") == kDisruptedTaint) return true;
        taints.push_back(t);
      }
    }
    taints.push_back({{"key", kDisruptedTaint}, {"effect", "NoSchedule"}});
    const std::string name = node["metadata"].value("name", "");
    auto patched = store.patch(ResourceRef{"", "v1", "nodes", "", name, ""}, PatchType::Merge,
                               json{{"spec", {{"taints", taints}}}}.dump(), writer());
    return patched.ok();
  }

  // The Eviction API's part: DisruptionTarget on the pod, then a delete with its grace period
  // (no longer than what is left of the notice). True when the pod needs nothing more.
  bool evict(const json& pod, Clock::time_point deadline) {
    const json& meta = pod["metadata"];
    const std::string ns = meta.value("namespace", "");
    const std::string name = meta.value("name", "");
    json conditions = json::array();
    const json& current = field(pod, "status", "conditions");
    if (current.is_array()) {
      for (const auto& c : current) {
        if (c.value("type", "") != "DisruptionTarget") conditions.push_back(c);
      }
    }
    conditions.push_back({{"type", "DisruptionTarget"},
                          {"status", "True"},
                          {"reason", "EvictionByEvictionAPI"},
                          {"message", "Eviction API: evicting"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", rfc3339_now()}});
    const json patch = {{"metadata", {{"resourceVersion", meta.value("resourceVersion", "")}}},
                        {"status", {{"conditions", conditions}}}};
    auto marked = store.patch(ResourceRef{"", "v1", "pods", ns, name, "status"}, PatchType::Merge,
                              patch.dump(), writer());
    if (!marked.ok()) return marked.code == 404;  // 409: the next round reads it again
    std::int64_t grace = 30;
    const json& spec_grace = field(pod, "spec", "terminationGracePeriodSeconds");
    if (spec_grace.is_number_integer()) grace = spec_grace.get<std::int64_t>();
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
    grace = std::clamp<std::int64_t>(grace, 0, std::max<std::int64_t>(0, left.count()));
    DeleteOptions remove;
    remove.grace_period_seconds = grace;
    remove.precondition_uid = meta.value("uid", "");
    remove.user_agent = "depl-devcluster/node-termination";
    auto removed = store.remove(ResourceRef{"", "v1", "pods", ns, name, ""}, remove);
    if (!removed.ok() && removed.code != 404 && removed.code != 409) {
      spdlog::warn("event=eviction_failed pod={}/{} code={}", ns, name, removed.code);
      return false;
    }
    spdlog::info("event=pod_evicted pod={}/{} grace_seconds={} reason=NodeTerminating", ns, name,
                 grace);
    return true;
  }

  bool release(const json& node) {
    json finalizers = json::array();
    for (const auto& f : field(node, "metadata", "finalizers")) {
      if (f != kTerminationFinalizer) finalizers.push_back(f);
    }
    const std::string name = node["metadata"].value("name", "");
    auto patched =
        store.patch(ResourceRef{"", "v1", "nodes", "", name, ""}, PatchType::Merge,
                    json{{"metadata", {{"finalizers", finalizers}}}}.dump(), writer());
    return patched.ok() || patched.code == 404;
  }

  void terminate(const std::string& name, Termination& t, Clock::time_point now) {
    auto found = nodes.objects().find(name);
    if (found == nodes.objects().end()) return;
    const json& node = *found->second;
    if (!t.tainted) t.tainted = taint(node);
    bool remaining = false;
    for (const auto& [key, pod] : pods.objects()) {
      if (pod_node_name(*pod) != name || pod_is_terminal(*pod)) continue;
      remaining = true;  // until the kubelet has removed it
      if (t.evicted.count(key) || is_deleting(*pod)) continue;
      if (evict(*pod, t.deadline)) t.evicted.insert(key);
    }
    if (remaining && now < t.deadline) return;
    if (!release(node)) return;
    spdlog::info("event=node_terminated node={} drained={}", name, !remaining);
    if (t.replacement_after.count() >= 0 && !t.pool.empty()) {
      replacements.push_back({now + t.replacement_after, t.pool});
    }
    t.deadline = Clock::time_point::max();  // released: waits for the DELETED event
  }

  std::string replacement_name(const NodePool& pool) {
    int& next = next_index.try_emplace(pool.name, pool.nodes).first->second;
    for (;; ++next) {
      const std::string name = fmt::format("{}-{}", pool.name, next);
      if (!nodes.objects().count(name)) {
        ++next;
        return name;
      }
    }
  }

  void replace(Clock::time_point now) {
    for (auto it = replacements.begin(); it != replacements.end();) {
      if (it->at > now) {
        ++it;
        continue;
      }
      for (const auto& pool : pools) {
        if (pool.name != it->pool) continue;
        const std::string name = replacement_name(pool);
        if (auto ok = register_node(store, node_object(pool, name, rfc3339_now())); !ok) {
          spdlog::warn("event=replacement_failed pool={} error=\"{}\"", pool.name,
                       ok.error().message);
        } else {
          spdlog::info("event=node_replaced pool={} node={}", pool.name, name);
        }
      }
      it = replacements.erase(it);
    }
  }

  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      nodes.sync([&](const std::string& type, const ObjectCache::ObjectPtr& node) {
        on_node_event(type, *node);
      });
      pods.sync();
      const auto now = Clock::now();
      for (auto& [name, t] : terminating) {
        if (t.deadline != Clock::time_point::max()) terminate(name, t, now);
      }
      replace(now);
      // Deadlines and replacements are timed: wake often while one is pending.
      const bool pending = !terminating.empty() || !replacements.empty();
      signal.wait(std::chrono::milliseconds(pending ? 50 : 500));
    }
  }
};

NodeTerminator::NodeTerminator(ApiStore& store, std::vector<NodePool> pools)
    : loop_(std::make_unique<Loop>(store, std::move(pools))) {
  thread_ = std::jthread([loop = loop_.get()](std::stop_token stop) { loop->run(stop); });
}

NodeTerminator::~NodeTerminator() {
  thread_.request_stop();
  loop_->signal.notify();
  thread_.join();
}

void NodeTerminator::set_reclaim(const std::string& node, ReclaimSettings settings) {
  std::lock_guard lock(loop_->mutex);
  loop_->requested[node] = settings;
}

}  // namespace depl::devcluster
