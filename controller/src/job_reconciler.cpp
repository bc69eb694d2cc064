#include "depl/controller/job_reconciler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "depl/common/json_fields.hpp"
#include "depl/controller/worker_pods.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

std::vector<json> owned(const kube::Store& store, const std::string& uid) {
  std::vector<json> out;
  for (const auto& object : store.by_index(kube::indexes::kByOwnerUid, uid)) {
    if (kube::controller_uid(*object) == uid) out.push_back(*object);
  }
  return out;
}

// The uids of the pods the job's status counted (status.failedPods).
std::vector<std::string> recorded_pods(const json& job) {
  std::vector<std::string> uids;
  const json& failed = json_member(json_member(job, "status"), "failedPods");
  if (!failed.is_array()) return uids;
  for (const auto& uid : failed) {
    if (uid.is_string()) uids.push_back(uid.get<std::string>());
  }
  return uids;
}

ExecutorOptions executor_options(const ReconcilerOptions& options) {
  return {options.field_manager, options.turn_taken};
}

}  // namespace

JobReconciler::JobReconciler(kube::Client& client, JobCaches caches, Clock& clock, EventSink events,
                             MetricsRegistry& metrics, ReconcilerOptions options)
    : caches_(caches),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      executor_(client, caches.line, caches.expectations, clock, std::move(events), metrics,
                executor_options(options_)),
      pod_groups_(client, clock) {}

JobView JobReconciler::view_of(const json& job) const {
  JobView view;
  view.job = job;
  const json& meta = json_object(job, "metadata");
  const std::string uid = json_string(meta, "uid");
  view.owned_pods = owned(caches_.pods, uid);
  view.owned_services = owned(caches_.services, uid);
  view.departed_pods = caches_.departed.of(uid, recorded_pods(job));
  if (!progress_token_of(job))
    view.new_token_secret = new_token_secret_name(json_string(meta, "name"));
  view.now = clock_.wall_now();
  if (auto cm = caches_.job_policy.get({options_.catalog_namespace, kJobPolicyConfigMap})) {
    if (auto policy = parse_job_policy(*cm)) {
      view.policy = std::move(*policy);
    } else {
      view.policy_problem = policy.error().message;
      view.policy = JobPolicy{{}, {}, {}};  // allows nothing
    }
  }
  // A job waiting for its first plan does not look at the cluster (decide() stops at the
  // wait), so neither do we: a thousand jobs applied at once would each read every node and
  // job on every look.
  if (!json_object(job, "status").contains("plan")) {
    view.unplanned_earlier_job = caches_.line.unplanned_before(job);
    if (!view.unplanned_earlier_job.empty()) return view;
  }
  view.nodes = caches_.nodes.list();
  view.gpus_in_use = caches_.gpus.by_node(uid);
  if (auto cm = caches_.config_maps.get({options_.catalog_namespace, options_.catalog_name})) {
    std::vector<std::string> problems;
    view.catalog = parse_gpu_catalog(*cm, problems);
    for (const auto& p : problems)
      spdlog::warn("msg=\"gpu catalog entry ignored\" problem=\"{}\"", p);
  }
  view.reservations = caches_.line.reservations_before(job);
  return view;
}

std::optional<kube::Action> JobReconciler::awaiting_creates(const json& job) {
  const json& meta = json_object(job, "metadata");
  const std::string uid = json_string(meta, "uid");
  auto in_cache = [&](const std::string& kind, const std::string& ns, const std::string& name) {
    const kube::Store& store = kind == "Pod" ? caches_.pods : caches_.services;
    return store.get({ns, name}) != nullptr;
  };
  auto awaited = caches_.expectations.pending(uid, in_cache);
  if (!awaited) return std::nullopt;
  // Deciding now would create them again. Their events enqueue the job; the requeue (the cache
  // is looked at again) is for the case an event never comes.
  metrics_.add("depl_reconcile_awaiting_creates_total", {});
  spdlog::debug("msg=\"waiting for the caches to show what was created\" job={}/{} objects={}",
                json_string(meta, "namespace"), json_string(meta, "name"), awaited->objects);
  return kube::Action::requeue_after(
      std::min<Clock::Duration>(awaited->expires_in, std::chrono::seconds(1)));
}

Expected<kube::Action, kube::ReconcileError> JobReconciler::reconcile(const kube::ObjectKey& key,
                                                                      std::stop_token stop) {
  const auto started = clock_.now();
  auto outcome = [&]() -> Expected<kube::Action, kube::ReconcileError> {
    // Before the cache is read: a deletion it does not show yet reaches the solve below.
    const auto solve_scope = solves_.begin(key, stop);
    auto cached = caches_.jobs.get(key);
    if (!cached) return kube::Action::await_change();  // deleted; GC removes children
    const json& job = *cached;
    if (auto wait = awaiting_creates(job)) return *wait;
    // Taken before the view: room that grows while this job decides has it look again.
    const std::uint64_t epoch = caches_.line.capacity_epoch();
    JobView view = view_of(job);
    view.round_without_pods =
        caches_.expectations.round_without_pods(json_string(json_object(job, "metadata"), "uid"));
    view.stop = solve_scope->token();
    if (gang_scheduling_asked(job, options_.decide.gang_scheduling)) {
      auto served = pod_groups_.served();
      if (!served) return unexpected(kube::ReconcileError{served.error().message});
      view.gang_api = *served;
    }
    const Decision decision = decide(view, options_.decide);
    // Stopping, or the job was deleted meanwhile: a solve may have been abandoned, and what was
    // decided without it is not carried out. The next reconcile finds the job gone, or decides
    // again.
    if (solve_scope->token().stop_requested()) {
      return kube::Action::requeue_after(std::chrono::seconds(1));
    }
    if (decision.solve_seconds >= 0) {
      metrics_.observe("depl_solver_duration_seconds", {}, decision.solve_seconds);
    }
    auto executed = executor_.execute(job, decision, view.round_without_pods.has_value(), stop);
    if (executed && view.unplanned_earlier_job.empty()) {
      // Looked at the room there was at `epoch`; if it waits for capacity, the next job waiting
      // for it (or for its first plan) may look now.
      caches_.line.looked_at(job, epoch);
      json after = job;
      if (decision.status) after["status"] = *decision.status;
      if ((waits_for_capacity(job) || waits_for_capacity(after)) && options_.turn_taken) {
        options_.turn_taken();
      }
    }
    return executed;
  }();
  metrics_.observe("depl_reconcile_duration_seconds", {},
                   std::chrono::duration<double>(clock_.now() - started).count());
  return outcome;
}

}  // namespace depl::controller
