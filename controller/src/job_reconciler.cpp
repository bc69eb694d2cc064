#include "depl/controller/job_reconciler.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include "depl/controller/job_resource.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/kube/resource.hpp"

namespace depl::controller {

using nlohmann::json;
namespace resources = kube::resources;

namespace {

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool controlled_by(const json& object, const std::string& uid) {
  const json& meta = object["metadata"];
  auto owners = meta.find("ownerReferences");
  if (owners == meta.end() || !owners->is_array()) return false;
  for (const auto& o : *owners) {
    if (o.is_object() && o.value("uid", "") == uid && o.value("controller", false)) return true;
  }
  return false;
}

std::vector<json> owned(const kube::Store& store, const std::string& uid) {
  std::vector<json> out;
  for (const auto& object : store.by_index(kube::indexes::kByOwnerUid, uid)) {
    if (controlled_by(*object, uid)) out.push_back(*object);
  }
  return out;
}

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return "";
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

int gpus_per_worker(const json& job, const std::string& model) {
  const json& spec = job.value("spec", json::object());
  for (const auto& m : spec.value("models", json::array())) {
    if (m.is_object() && m.value("name", "") == model)
      return std::max(1, m.value("gpusPerWorker", 1));
  }
  return 1;
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
  r.describe("depl_progress_reports_total", T::Counter, "Progress reports answered, by HTTP code.");
  r.describe("depl_workqueue_depth", T::Gauge, "Keys waiting in the work queue.");
  r.describe("depl_workqueue_adds_total", T::Counter, "Keys added to the work queue.");
  r.describe("depl_workqueue_retries_total", T::Counter, "Rate-limited re-adds to the work queue.");
  r.describe("depl_api_requests_total", T::Counter,
             "Requests to the Kubernetes API by verb and code.");
  r.describe("depl_api_request_duration_seconds", T::Histogram,
             "Kubernetes API request latency by verb.");
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

std::vector<Reservation> JobReconciler::reservations_for(const json& job) const {
  // GPUs promised to jobs created earlier (ties broken by name) whose pods are not all there
  // yet: placement across jobs follows creation order.
  std::vector<Reservation> out;
  const std::string created = str(job["metadata"], "creationTimestamp");
  const std::string key = str(job["metadata"], "namespace") + "/" + str(job["metadata"], "name");
  for (const auto& other : caches_.jobs.list()) {
    const json& meta = (*other)["metadata"];
    const std::string other_key = str(meta, "namespace") + "/" + str(meta, "name");
    if (other_key == key) continue;
    const std::string other_created = str(meta, "creationTimestamp");
    if (std::tie(other_created, other_key) > std::tie(created, key)) continue;
    const json& status = other->value("status", json::object());
    const std::string phase = status.value("phase", "");
    if (phase != "Running" && phase != "Pending") continue;
    if (meta.contains("deletionTimestamp")) continue;
    auto plan = plan_from_json(status);
    if (!plan) continue;
    const ProgressRecord progress = progress_from_json(status);
    const auto& phase_record = plan->phases[std::min<std::size_t>(
        static_cast<std::size_t>(progress.phase), plan->phases.size() - 1)];
    int need = phase_record.workers * gpus_per_worker(*other, phase_record.model);
    for (const auto& pod : owned(caches_.pods, str(meta, "uid"))) {
      if (!pod_is_terminal(pod) && !str(pod["spec"], "nodeName").empty())
        need -= pod_gpu_request(pod);
    }
    if (need > 0) out.push_back({phase_record.pool, need});
  }
  return out;
}

std::string JobReconciler::unplanned_earlier_job(const json& job) const {
  const std::string created = str(job["metadata"], "creationTimestamp");
  const std::string key = str(job["metadata"], "namespace") + "/" + str(job["metadata"], "name");
  std::string earliest;
  for (const auto& other : caches_.jobs.list()) {
    const json& meta = (*other)["metadata"];
    const std::string other_key = str(meta, "namespace") + "/" + str(meta, "name");
    const std::string other_created = str(meta, "creationTimestamp");
    if (std::tie(other_created, other_key) >= std::tie(created, key)) continue;
    if (meta.contains("deletionTimestamp")) continue;
    const json& spec = other->value("spec", json::object());
    if (spec.is_object() && spec.value("suspend", false)) continue;
    const json& status = other->value("status", json::object());
    const std::string phase = status.value("phase", "");
    if (phase == "Succeeded" || phase == "Failed" || phase == "Suspended") continue;
    // Planned (either way) or invalid: it has had its turn and claims what its plan says.
    if (condition_status(status, "Planned").has_value()) continue;
    if (condition_status(status, "Valid") == false) continue;
    if (status.contains("plan")) continue;
    if (earliest.empty() || other_key < earliest) earliest = other_key;
  }
  return earliest;
}

JobView JobReconciler::view_of(const json& job) const {
  JobView view;
  view.job = job;
  const std::string uid = str(job["metadata"], "uid");
  const std::string ns = str(job["metadata"], "namespace");
  view.owned_pods = owned(caches_.pods, uid);
  view.owned_services = owned(caches_.services, uid);
  view.token_secret_exists =
      caches_.secrets.get({ns, token_secret_name(str(job["metadata"], "name"))}) != nullptr;
  for (const auto& n : caches_.nodes.list()) view.nodes.push_back(*n);
  for (const auto& p : caches_.pods.list()) view.all_pods.push_back(*p);
  if (auto cm = caches_.config_maps.get({options_.catalog_namespace, options_.catalog_name})) {
    std::vector<std::string> problems;
    view.catalog = parse_gpu_catalog(*cm, problems);
    for (const auto& p : problems)
      spdlog::warn("msg=\"gpu catalog entry ignored\" problem=\"{}\"", p);
  }
  view.reservations = reservations_for(job);
  view.unplanned_earlier_job = unplanned_earlier_job(job);
  view.now = clock_.wall_now();
  return view;
}

Expected<void, kube::ReconcileError> JobReconciler::ensure_token_secret(const json& job) {
  const std::string token = random_token();
  if (token.empty()) return unexpected(kube::ReconcileError{"could not generate a progress token"});
  json secret = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       {{"name", token_secret_name(str(job["metadata"], "name"))},
        {"namespace", str(job["metadata"], "namespace")},
        {"labels", {{kJobLabel, str(job["metadata"], "name")}, {kManagedByLabel, kManagedByValue}}},
        {"ownerReferences", json::array({owner_reference(job)})}}},
      {"type", "Opaque"},
      {"stringData", {{kTokenKey, token}}}};
  auto created = client_.create(resources::secrets(), str(job["metadata"], "namespace"), secret,
                                {options_.field_manager});
  if (!created && !created.error().is_already_exists()) {
    return unexpected(api_failure("creating the progress-token Secret", created.error()));
  }
  return {};
}

Expected<kube::Action, kube::ReconcileError> JobReconciler::reconcile(const kube::ObjectKey& key,
                                                                      std::stop_token stop) {
  const auto started = clock_.now();
  auto finish = [&](Expected<kube::Action, kube::ReconcileError> result) {
    metrics_.observe("depl_reconcile_duration_seconds", {},
                     std::chrono::duration<double>(clock_.now() - started).count());
    return result;
  };
  auto cached = caches_.jobs.get(key);
  if (!cached) return finish(kube::Action::await_change());  // deleted; GC removes children
  const json& job = *cached;
  const std::string who = fmt::format("job={}/{}", key.namespace_, key.name);

  Decision d = decide(view_of(job), options_.decide);
  if (d.solve_seconds >= 0) metrics_.observe("depl_solver_duration_seconds", {}, d.solve_seconds);

  if (d.delete_job) {
    kube::DeleteOptions del;
    del.propagation_policy = kube::PropagationPolicy::Background;
    del.precondition_uid = str(job["metadata"], "uid");
    auto removed =
        client_.remove(job_resource(), key.namespace_, key.name, del);
    if (!removed && !removed.error().is_not_found()) {
      return finish(unexpected(
          api_failure("deleting the finished job (ttlSecondsAfterFinished)", removed.error())));
    }
    spdlog::info("msg=\"deleted finished job\" {} reason=ttlSecondsAfterFinished", who);
    return finish(kube::Action::await_change());
  }
  if (d.ensure_token_secret) {
    if (auto ok = ensure_token_secret(job); !ok) return finish(unexpected(ok.error()));
  }
  if (d.status) {
    json updated = job;
    updated["status"] = *d.status;
    auto written = client_.replace_status(job_resource(), updated,
                                          {options_.field_manager});
    if (!written) {
      // A conflict means our cache is behind; the watch brings the newer job and we decide again.
      return finish(unexpected(api_failure("writing status", written.error())));
    }
    if (d.replanned) metrics_.add("depl_replans_total", {});
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
  for (const auto& object : d.create) {
    if (stop.stop_requested()) break;
    const std::string kind = object.value("kind", "");
    const auto type = kind == "Pod" ? resources::pods() : resources::services();
    auto created = client_.create(type, key.namespace_, object, {options_.field_manager});
    if (!created && !created.error().is_already_exists()) {
      return finish(unexpected(api_failure(
          fmt::format("creating {} {}", kind, str(object["metadata"], "name")), created.error())));
    }
    if (created)
      spdlog::info("msg=\"created {}\" {} name={}", kind, who, str(object["metadata"], "name"));
  }
  for (const auto& e : d.events) {
    if (events_) events_(job, e);
    spdlog::log(e.type == "Warning" ? spdlog::level::warn : spdlog::level::info,
                "msg=\"{}\" {} reason={}", e.message, who, e.reason);
  }
  if (d.requeue_after) return finish(kube::Action::requeue_after(*d.requeue_after));
  return finish(kube::Action::await_change());
}

}  // namespace depl::controller
