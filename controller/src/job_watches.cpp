#include "depl/controller/job_watches.hpp"

#include "depl/common/json_fields.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/pool_discovery.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

bool has_ended(const std::string& phase) {
  return phase == phases::kSucceeded || phase == phases::kFailed;
}

bool is_deleted(const json& object) {
  return json_object(object, "metadata").contains("deletionTimestamp");
}

// Capacity changes (nodes, other pods, the GPU catalog) concern every job not finished yet.
std::vector<kube::ObjectKey> unfinished_jobs(const kube::Store& jobs) {
  std::vector<kube::ObjectKey> keys;
  for (const auto& job : jobs.list()) {
    if (!has_ended(phase_of(*job))) keys.push_back(kube::ObjectKey::of(*job));
  }
  return keys;
}

// Jobs waiting for capacity look again when it may have been freed.
std::vector<kube::ObjectKey> pending_jobs_except(const kube::Store& jobs,
                                                 const std::optional<kube::ObjectKey>& self) {
  std::vector<kube::ObjectKey> keys;
  for (const auto& job : jobs.list()) {
    if (phase_of(*job) != phases::kPending) continue;
    auto key = kube::ObjectKey::of(*job);
    if (!self || !(key.namespace_ == self->namespace_ && key.name == self->name)) {
      keys.push_back(std::move(key));
    }
  }
  return keys;
}

}  // namespace

std::string phase_of(const json& object) {
  return json_string(json_member(object, "status"), "phase");
}

void watch_jobs(kube::Controller& controller, ControllerCaches& caches) {
  const kube::Store& jobs = caches.jobs().store();
  PlacementLine& line = caches.line();
  controller.watch_primary(caches.jobs());
  controller.watch_owned(caches.pods(), kJobApiVersion, kJobKind);
  controller.watch_owned(caches.services(), kJobApiVersion, kJobKind);
  controller.watch_mapped(caches.nodes(), [&jobs](const json&) { return unfinished_jobs(jobs); });
  controller.watch_mapped(caches.config_maps(),
                          [&jobs](const json&) { return unfinished_jobs(jobs); });
  // A job refused by the policy runs once the administrator allows what it asks.
  controller.watch_mapped(caches.job_policy(),
                          [&jobs](const json&) { return unfinished_jobs(jobs); });
  controller.watch_mapped(caches.pods(), [&jobs](const json& pod) {
    auto owner = kube::controller_owner_key(pod, kJobApiVersion, kJobKind);
    // Another workload's pod matters only while it holds GPUs (the handler sees the pod before
    // and after each change, so the one that stops holding them counts): a busy cluster's
    // thousands of CPU pods must not wake every pending job at each of their changes.
    if (!owner) {
      return pod_holds_gpus(pod) ? pending_jobs_except(jobs, std::nullopt)
                                 : std::vector<kube::ObjectKey>{};
    }
    // A job's own pod frees its GPUs when it ends or goes away.
    const bool releasing = has_ended(phase_of(pod)) || is_deleted(pod);
    return releasing ? pending_jobs_except(jobs, owner) : std::vector<kube::ObjectKey>{};
  });
  // A job that finished or was suspended no longer holds its reservation. A job that has had its
  // turn at placement (planned, invalid, suspended, gone) lets the next one in creation order plan
  // now, from a cache that already shows this job's plan.
  controller.watch_mapped(caches.jobs(), [&jobs, &line](const json& job) {
    const std::string phase = phase_of(job);
    const bool settled = has_ended(phase) || phase == phases::kSuspended || is_deleted(job);
    auto keys = settled ? pending_jobs_except(jobs, kube::ObjectKey::of(job))
                        : std::vector<kube::ObjectKey>{};
    if (!awaits_first_plan(job) || !jobs.get(kube::ObjectKey::of(job))) {
      if (auto next = line.next()) keys.push_back(std::move(*next));
    }
    return keys;
  });
}

}  // namespace depl::controller
