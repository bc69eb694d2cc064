#include "depl/controller/job_reconciler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/kube/resource.hpp"

namespace depl::controller {

using nlohmann::json;
namespace resources = kube::resources;

namespace {

std::vector<json> owned(const kube::Store& store, const std::string& uid) {
  std::vector<json> out;
  for (const auto& object : store.by_index(kube::indexes::kByOwnerUid, uid)) {
    if (kube::controller_uid(*object) == uid) out.push_back(*object);
  }
  return out;
}

// Whether a failed create is worth a FailedCreate Event: an answer of the API server other than
// a throttling (429, retried after its Retry-After) or a namespace being deleted (the job goes with
// it). Transport failures reach nobody: the Event could not be written either.
bool tells_the_user(const kube::ApiError& e) {
  if (e.is_transport() || e.is_too_many_requests()) return false;
  if (e.is_forbidden() && e.message.find("because it is being terminated") != std::string::npos)
    return false;
  return true;
}

kube::ReconcileError api_failure(const std::string& what, const kube::ApiError& e) {
  return {fmt::format("{}: {} {}: {}", what, e.code, e.reason, e.message)};
}

}  // namespace

void describe_controller_metrics(MetricsRegistry& r) {
  using T = MetricsRegistry::Type;
  r.describe("depl_jobs", T::Gauge, "DependableTrainingJobs by phase.");
  r.describe("depl_reconcile_total", T::Counter,
             "Reconciles by outcome (success, requeue_after, requeue, error).");
  r.describe("depl_reconcile_duration_seconds", T::Histogram, "Time spent in one reconcile.");
  r.describe("depl_solver_duration_seconds", T::Histogram,
             "Time spent in the DepL solver per solve.");
  r.describe("depl_replans_total", T::Counter, "Changes of plan (first plans included).");
  r.describe("depl_reconcile_awaiting_creates_total", T::Counter,
             "Reconciles put off until the caches showed the pods and Services just created.");
  r.describe("depl_progress_reports_total", T::Counter, "Progress reports answered, by HTTP code.");
  r.describe("depl_workqueue_depth", T::Gauge, "Keys waiting in the work queue.");
  r.describe("depl_workqueue_adds_total", T::Counter, "Keys added to the work queue.");
  r.describe("depl_workqueue_retries_total", T::Counter, "Rate-limited re-adds to the work queue.");
  r.describe("depl_api_requests_total", T::Counter,
             "Requests to the Kubernetes API by verb (HTTP method, or WATCH) and code (0: no "
             "answer), retries included.");
  r.describe("depl_api_request_duration_seconds", T::Histogram,
             "Kubernetes API request latency by verb.");
  r.describe("depl_events_dropped_total", T::Counter,
             "Events not recorded because too many were waiting to be sent, or at shutdown.");
  r.describe("depl_endpoint_connections", T::Gauge,
             "Connections open now to the controller's endpoints, by endpoint (progress, "
             "metrics, health).");
  r.describe("depl_endpoint_connections_total", T::Counter,
             "Connections accepted by the controller's endpoints, by endpoint.");
  r.describe("depl_endpoint_refused_total", T::Counter,
             "Connections and requests answered 503 at once, by endpoint and reason "
             "(per_address: the address held its share; busy: every connection or handler busy).");
  r.describe("depl_endpoint_closed_total", T::Counter,
             "Connections the endpoints closed, by endpoint and reason (deadline: no whole "
             "request or answer in time; evicted: waiting longest when the cap was reached).");
  r.describe("depl_leader", T::Gauge,
             "1 while this replica leads (always 1 without --leader-elect).");
}

JobReconciler::JobReconciler(kube::Client& client, JobCaches caches, Clock& clock, EventSink events,
                             MetricsRegistry& metrics, ReconcilerOptions options)
    : client_(client),
      caches_(caches),
      clock_(clock),
      events_(std::move(events)),
      metrics_(metrics),
      options_(std::move(options)) {}

JobView JobReconciler::view_of(const json& job) const {
  JobView view;
  view.job = job;
  const std::string uid = json_string(job["metadata"], "uid");
  view.owned_pods = owned(caches_.pods, uid);
  view.owned_services = owned(caches_.services, uid);
  if (!progress_token_of(job))
    view.new_token_secret = new_token_secret_name(json_string(job["metadata"], "name"));
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

kube::WriteOptions JobReconciler::quiet_write() const {
  kube::WriteOptions w;
  w.field_manager = options_.field_manager;
  // What the API server answers comes back through the informers; nothing here reads it.
  w.return_object = false;
  return w;
}

Expected<ProgressTokenRecord, kube::ReconcileError> JobReconciler::create_token_secret(
    const json& job, const std::string& name) {
  const std::string token = random_token();
  if (token.empty() || name.empty())
    return unexpected(kube::ReconcileError{"could not generate a progress token"});
  json secret = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       {{"name", name},
        {"namespace", json_string(job["metadata"], "namespace")},
        {"labels",
         {{kJobLabel, json_string(job["metadata"], "name")}, {kManagedByLabel, kManagedByValue}}},
        {"ownerReferences", json::array({owner_reference(job)})}}},
      {"type", "Opaque"},
      {"stringData", {{kTokenKey, token}}}};
  // A Secret of that name that exists already is not ours (the name has a random part): its
  // token is unknown, and one that someone else chose must never pass for the job's. The next
  // reconcile draws another name.
  auto created = client_.create(resources::secrets(), json_string(job["metadata"], "namespace"),
                                secret, quiet_write());
  if (!created) {
    return unexpected(api_failure("creating the progress-token Secret " + name, created.error()));
  }
  return ProgressTokenRecord{name, sha256_hex(token)};
}

Expected<kube::Action, kube::ReconcileError> JobReconciler::reconcile(const kube::ObjectKey& key,
                                                                      std::stop_token stop) {
  const auto started = clock_.now();
  auto finish = [&](Expected<kube::Action, kube::ReconcileError> result) {
    metrics_.observe("depl_reconcile_duration_seconds", {},
                     std::chrono::duration<double>(clock_.now() - started).count());
    return result;
  };
  // Before the cache is read: a deletion it does not show yet reaches the solve below.
  const auto solve_scope = solves_.begin(key, stop);
  auto cached = caches_.jobs.get(key);
  if (!cached) return finish(kube::Action::await_change());  // deleted; GC removes children
  const json& job = *cached;
  const std::string who = fmt::format("job={}/{}", key.namespace_, key.name);
  const std::string uid = json_string(job["metadata"], "uid");
  auto in_cache = [&](const std::string& kind, const std::string& ns, const std::string& name) {
    const kube::Store& store = kind == "Pod" ? caches_.pods : caches_.services;
    return store.get({ns, name}) != nullptr;
  };
  if (auto awaited = caches_.expectations.pending(uid, in_cache)) {
    // The caches do not show all this job's creates yet: deciding now would create them again.
    // Their events enqueue the job; the requeue (the cache is looked at again) is for the case
    // an event never comes.
    metrics_.add("depl_reconcile_awaiting_creates_total", {});
    spdlog::debug("msg=\"waiting for the caches to show what was created\" {} objects={}", who,
                  awaited->objects);
    return finish(kube::Action::requeue_after(
        std::min<Clock::Duration>(awaited->expires_in, std::chrono::seconds(1))));
  }

  JobView view = view_of(job);
  view.round_without_pods = caches_.expectations.round_without_pods(uid);
  view.stop = solve_scope->token();
  Decision d = decide(view, options_.decide);
  // Stopping, or the job was deleted meanwhile: a solve may have been abandoned, and what was
  // decided without it is not carried out. The next reconcile finds the job gone, or decides
  // again.
  if (solve_scope->token().stop_requested())
    return finish(kube::Action::requeue_after(std::chrono::seconds(1)));
  if (d.solve_seconds >= 0) metrics_.observe("depl_solver_duration_seconds", {}, d.solve_seconds);

  if (d.delete_job) {
    kube::DeleteOptions del;
    del.propagation_policy = kube::PropagationPolicy::Background;
    del.precondition_uid = json_string(job["metadata"], "uid");
    auto removed = client_.remove(job_resource(), key.namespace_, key.name, del);
    if (!removed && !removed.error().is_not_found()) {
      return finish(unexpected(
          api_failure("deleting the finished job (ttlSecondsAfterFinished)", removed.error())));
    }
    spdlog::info("msg=\"deleted finished job\" {} reason=ttlSecondsAfterFinished", who);
    return finish(kube::Action::await_change());
  }
  if (d.needs_latest_job && !d.status) {
    // No status write will fence what follows: check that the cache is not behind first.
    auto latest = client_.get(job_resource(), key.namespace_, key.name);
    if (!latest) {
      if (latest.error().is_not_found()) return finish(kube::Action::await_change());
      return finish(unexpected(api_failure("reading the job", latest.error())));
    }
    const std::string cached_version = json_string(job["metadata"], "resourceVersion");
    const std::string latest_version = json_string((*latest)["metadata"], "resourceVersion");
    if (latest_version != cached_version) {
      spdlog::info(
          "msg=\"the cached job is behind the API server; waiting for the watch before "
          "restarting workers\" {} cached={} latest={}",
          who, cached_version, latest_version);
      return finish(kube::Action::requeue_after(std::chrono::seconds(1)));
    }
  }
  json updated;
  bool takes_turn = false;
  if (d.status) {
    updated = job;
    updated["status"] = *d.status;
    // A job that takes its turn at placement (a first plan, or "cannot run now") lets the next
    // job in line plan now, counting this plan's GPUs, while its writes (the progress-token
    // Secret, the status) are still on their way, as Kueue's scheduler assumes an admission
    // before writing it: a thousand jobs applied at once are placed back to back rather than one
    // per write and watch round trip. If a write fails the line forgets the plan; jobs placed
    // meanwhile counted GPUs that were not taken, which errs on the safe side.
    takes_turn = awaits_first_plan(job) && !awaits_first_plan(updated);
    if (takes_turn) {
      caches_.line.assume(updated);
      if (options_.turn_taken) options_.turn_taken();
    }
  }
  if (d.ensure_token_secret) {
    // Before any pod that reads it, and recorded in the status write below, which every pod
    // create waits for.
    auto token = create_token_secret(job, view.new_token_secret);
    if (!token) {
      if (takes_turn) caches_.line.forget(job);
      return finish(unexpected(token.error()));
    }
    if (!d.status) {
      updated = job;
      if (!updated.contains("status") || !updated["status"].is_object())
        updated["status"] = json::object();
    }
    updated["status"]["progressToken"] = to_json(*token);
  }
  if (d.status || d.ensure_token_secret) {
    auto written = client_.replace_status(job_resource(), updated, quiet_write());
    if (!written) {
      if (takes_turn) caches_.line.forget(job);
      // A conflict means our cache is behind; the watch brings the newer job and we decide again.
      return finish(unexpected(api_failure("writing status", written.error())));
    }
    if (d.replanned) metrics_.add("depl_replans_total", {});
  }
  // The Events tell of the status change just written (Planned, PhaseStarted, ...): posted now,
  // so that a failed create or delete below, which ends this reconcile in an error, does not lose
  // them; the next reconcile finds the status written and has nothing to tell again.
  for (const auto& e : d.events) {
    if (events_) events_(job, e);
    spdlog::log(e.type == "Warning" ? spdlog::level::warn : spdlog::level::info,
                "msg=\"{}\" {} reason={}", e.message, who, e.reason);
  }
  for (const auto& r : d.remove) {
    if (stop.stop_requested()) break;
    kube::DeleteOptions del;
    del.precondition_uid = r.uid;
    const auto type = r.kind == "Pod" ? resources::pods() : resources::services();
    auto removed = client_.remove(type, key.namespace_, r.name, del);
    if (!removed && !removed.error().is_not_found() && !removed.error().is_conflict()) {
      return finish(
          unexpected(api_failure(fmt::format("deleting {} {}", r.kind, r.name), removed.error())));
    }
    spdlog::info("msg=\"deleted {}\" {} name={}", r.kind, who, r.name);
  }
  // After a create that failed: the round this status starts (or started) lacks its pods or
  // Service, and the next try creates them without starting another round.
  auto note_round_without_pods = [&] { caches_.expectations.set_round_without_pods(uid, d.round); };
  for (const auto& object : d.create) {
    if (stop.stop_requested()) break;
    const std::string kind = object.value("kind", "");
    const auto type = kind == "Pod" ? resources::pods() : resources::services();
    const std::string name = json_string(object["metadata"], "name");
    caches_.expectations.expect(uid, kind, key.namespace_, name);
    auto created = client_.create(type, key.namespace_, object, quiet_write());
    if (!created && created.error().is_already_exists() &&
        held_by_another(type, key.namespace_, name, uid)) {
      // Not ours (a user's pod of the same name): it will never show up as this job's, and the
      // job cannot run that rank until it is gone. Told, and tried again with backoff.
      caches_.expectations.forget(uid, kind, key.namespace_, name);
      const std::string message = fmt::format(
          "Error creating {} {}: a {} of that name already exists and is not controlled by this "
          "job; delete or rename it",
          kind, name, kind);
      if (events_) events_(job, {"Warning", "FailedCreate", message});
      note_round_without_pods();
      return finish(unexpected(kube::ReconcileError{message}));
    }
    if (!created && !created.error().is_already_exists()) {
      caches_.expectations.forget(uid, kind, key.namespace_, name);
      if (is_rejection(created.error())) {
        report_rejection(job, object, created.error());
      } else if (tells_the_user(created.error())) {
        // A refusal that a later try may overcome (a ResourceQuota, RBAC, an admission webhook,
        // a failing API server): retried with backoff, and told, as the Job controller does, by a
        // Warning Event (identical ones are aggregated into one with a count).
        if (events_) {
          events_(job, {"Warning", "FailedCreate", failed_create_message(object, created.error())});
        }
      }
      note_round_without_pods();
      return finish(
          unexpected(api_failure(fmt::format("creating {} {}", kind, name), created.error())));
    }
    if (created) spdlog::info("msg=\"created {}\" {} name={}", kind, who, name);
  }
  // The round's pods are created now, or no longer wanted.
  if (view.round_without_pods) caches_.expectations.set_round_without_pods(uid, std::nullopt);
  if (d.requeue_after) return finish(kube::Action::requeue_after(*d.requeue_after));
  return finish(kube::Action::await_change());
}

bool JobReconciler::held_by_another(const kube::ResourceType& type, const std::string& ns,
                                    const std::string& name, const std::string& uid) {
  auto existing = client_.get(type, ns, name);
  // Gone meanwhile, or unreadable: the next reconcile looks again.
  if (!existing) return false;
  return kube::controller_uid(*existing) != uid;
}

void JobReconciler::report_rejection(const json& job, const json& object,
                                     const kube::ApiError& error) {
  const std::string ns = json_string(job["metadata"], "namespace");
  const std::string name = json_string(job["metadata"], "name");
  const std::string message = rejection_message(job, object, error);
  // The latest job, not the cached one: a status write earlier in this reconcile moved it on.
  auto latest = client_.get(job_resource(), ns, name);
  if (!latest) {
    spdlog::warn("msg=\"could not read the job to record a refused create\" job={}/{} error=\"{}\"",
                 ns, name, latest.error().to_string());
    return;
  }
  auto updated = job_recording_rejection(job, *latest, message, format_rfc3339(clock_.wall_now()));
  if (!updated) return;  // recorded already, or the spec changed since
  auto written = client_.replace_status(job_resource(), *updated, quiet_write());
  if (!written) {
    spdlog::warn("msg=\"could not record a refused create in status\" job={}/{} error=\"{}\"", ns,
                 name, written.error().to_string());
    return;
  }
  if (events_) events_(*latest, {"Warning", kRejectedByApiServer, message});
  spdlog::warn("msg=\"{}\" job={}/{} reason={}", message, ns, name, kRejectedByApiServer);
}

}  // namespace depl::controller
