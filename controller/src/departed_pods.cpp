#include "depl/controller/departed_pods.hpp"

#include <algorithm>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/job_watches.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

using nlohmann::json;

DepartedPods::DepartedPods(Clock& clock, Clock::Duration ttl) : clock_(clock), ttl_(ttl) {}

void DepartedPods::departed(const json& pod) {
  if (!kube::controller_owner_key(pod, kJobApiVersion, kJobKind)) return;
  const std::string owner = kube::controller_uid(pod);
  const json& meta = json_member(pod, "metadata");
  const std::string uid = json_string(meta, "uid");
  if (owner.empty() || uid.empty()) return;
  // A worker that finished its work has nothing to count.
  if (json_string(json_member(pod, "status"), "phase") == "Succeeded") return;
  Departed entry{uid, pod, clock_.now() + ttl_};
  if (!meta.contains("deletionTimestamp")) {
    entry.pod["metadata"]["deletionTimestamp"] = format_rfc3339(clock_.wall_now());
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
  h.on_delete = [this](const kube::ObjectPtr& pod) { departed(*pod); };
  return h;
}

}  // namespace depl::controller
