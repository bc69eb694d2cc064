#include "depl/controller/departed_pods.hpp"

#include <algorithm>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/job_watches.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

using nlohmann::json;

DepartedPods::DepartedPods(Clock& clock, Clock::Duration ttl) : clock_(clock), ttl_(ttl) {}

void DepartedPods::seen(const json& pod) {
  const json& meta = json_member(pod, "metadata");
  if (meta.contains("deletionTimestamp")) return;
  if (json_string(json_member(pod, "status"), "phase") != "Failed") return;
  if (!kube::controller_owner_key(pod, kJobApiVersion, kJobKind)) return;
  const std::string uid = json_string(meta, "uid");
  if (uid.empty()) return;
  std::lock_guard lock(mutex_);
  if (failed_seen_.contains(uid)) return;
  failed_seen_.emplace(uid, seen_count_++);
  if (failed_seen_.size() > kMaxFailedSeen) {
    auto oldest =
        std::min_element(failed_seen_.begin(), failed_seen_.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    failed_seen_.erase(oldest);
  }
}

void DepartedPods::departed(const json& pod) {
  const json& meta = json_member(pod, "metadata");
  const std::string uid = json_string(meta, "uid");
  bool failed_before_deletion = false;
  {
    std::lock_guard lock(mutex_);
    failed_before_deletion = failed_seen_.erase(uid) > 0;
  }
  if (!kube::controller_owner_key(pod, kJobApiVersion, kJobKind)) return;
  const std::string owner = kube::controller_uid(pod);
  if (owner.empty() || uid.empty()) return;
  const std::string phase = json_string(json_member(pod, "status"), "phase");
  // A worker that finished its work has nothing to count.
  if (phase == "Succeeded") return;
  Departed entry{uid, pod, clock_.now() + ttl_};
  json& entry_meta = entry.pod["metadata"];
  if (phase == "Failed" && (failed_before_deletion || !meta.contains("deletionTimestamp"))) {
    // As it was when it failed: no deletion had been asked for.
    entry_meta.erase("deletionTimestamp");
    entry_meta.erase("deletionGracePeriodSeconds");
  } else if (!meta.contains("deletionTimestamp")) {
    entry_meta["deletionTimestamp"] = format_rfc3339(clock_.wall_now());
  }
  std::lock_guard lock(mutex_);
  auto& pods = by_owner_[owner];
  std::erase_if(pods, [&](const Departed& d) { return d.uid == uid; });
  pods.push_back(std::move(entry));
  if (pods.size() > kMaxPerJob) pods.erase(pods.begin());
}

std::vector<json> DepartedPods::of(const std::string& owner,
                                   const std::vector<std::string>& recorded) {
  std::lock_guard lock(mutex_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return {};
  const auto now = clock_.now();
  std::erase_if(it->second, [&](const Departed& d) {
    return now >= d.expires || std::find(recorded.begin(), recorded.end(), d.uid) != recorded.end();
  });
  std::vector<json> out;
  out.reserve(it->second.size());
  for (const Departed& d : it->second) out.push_back(d.pod);
  if (it->second.empty()) by_owner_.erase(it);
  return out;
}

void DepartedPods::erase(const std::string& owner) {
  std::lock_guard lock(mutex_);
  by_owner_.erase(owner);
}

kube::ResourceEventHandlers DepartedPods::handlers() {
  kube::ResourceEventHandlers h;
  h.on_add = [this](const kube::ObjectPtr& pod) { seen(*pod); };
  h.on_update = [this](const kube::ObjectPtr&, const kube::ObjectPtr& pod) { seen(*pod); };
  h.on_delete = [this](const kube::ObjectPtr& pod) { departed(*pod); };
  return h;
}

}  // namespace depl::controller
