#include "depl/controller/decision_executor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/gang_scheduling.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/kube/resource.hpp"

namespace depl::controller {

using nlohmann::json;
namespace resources = kube::resources;

namespace {

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

const json& metadata(const json& object) {
  return json_object(object, "metadata");
}

std::string who(const json& job) {
  return fmt::format("job={}/{}", json_string(metadata(job), "namespace"),
                     json_string(metadata(job), "name"));
}

kube::ResourceType type_of(const std::string& kind) {
  if (kind == "PodGroup") return pod_group_resource();
  return kind == "Pod" ? resources::pods() : resources::services();
}

}  // namespace

DecisionExecutor::DecisionExecutor(kube::Client& client, PlacementLine& line,
                                   CreateExpectations& expectations, Clock& clock, EventSink events,
                                   MetricsRegistry& metrics, ExecutorOptions options)
    : client_(client),
      line_(line),
      expectations_(expectations),
      clock_(clock),
      events_(std::move(events)),
      metrics_(metrics),
      options_(std::move(options)) {}

Expected<kube::Action, kube::ReconcileError> DecisionExecutor::execute(const json& job,
                                                                       const Decision& d,
                                                                       bool round_was_without_pods,
                                                                       std::stop_token stop) {
  if (d.delete_job) {
    if (auto deleted = delete_job(job); !deleted) return unexpected(deleted.error());
    return kube::Action::await_change();
  }
  if (d.needs_latest_job && !d.status) {
    // No status write will fence what follows: check that the cache is not behind first.
    auto latest = cache_is_latest(job);
    if (!latest) return unexpected(latest.error());
    if (!*latest) return kube::Action::await_change();  // gone
    if (!**latest) return kube::Action::requeue_after(std::chrono::seconds(1));
  }
  if (auto written = write_status(job, d); !written) return unexpected(written.error());
  // The Events tell of the status change just written (Planned, PhaseStarted, ...): posted now,
  // so that a failed create or delete below, which ends this reconcile in an error, does not lose
  // them; the next reconcile finds the status written and has nothing to tell again.
  post_events(job, d);
  if (auto removed = remove_objects(job, d, stop); !removed) return unexpected(removed.error());
  const std::string uid = json_string(metadata(job), "uid");
  if (auto created = create_objects(job, d, stop); !created) {
    // The round this status starts (or started) lacks its pods or Service: the next try creates
    // them without starting another round.
    expectations_.set_round_without_pods(uid, d.round);
    return unexpected(created.error());
  }
  // The round's pods are created now, or no longer wanted.
  if (round_was_without_pods) expectations_.set_round_without_pods(uid, std::nullopt);
  if (d.requeue_after) return kube::Action::requeue_after(*d.requeue_after);
  return kube::Action::await_change();
}

DecisionExecutor::Result DecisionExecutor::delete_job(const json& job) {
  kube::DeleteOptions del;
  del.propagation_policy = kube::PropagationPolicy::Background;
  del.precondition_uid = json_string(metadata(job), "uid");
  auto removed = client_.remove(job_resource(), json_string(metadata(job), "namespace"),
                                json_string(metadata(job), "name"), del);
  if (!removed && !removed.error().is_not_found()) {
    return unexpected(
        api_failure("deleting the finished job (ttlSecondsAfterFinished)", removed.error()));
  }
  spdlog::info("msg=\"deleted finished job\" {} reason=ttlSecondsAfterFinished", who(job));
  return {};
}

Expected<std::optional<bool>, kube::ReconcileError> DecisionExecutor::cache_is_latest(
    const json& job) {
  auto latest = client_.get(job_resource(), json_string(metadata(job), "namespace"),
                            json_string(metadata(job), "name"));
  if (!latest) {
    if (latest.error().is_not_found()) return std::optional<bool>();
    return unexpected(api_failure("reading the job", latest.error()));
  }
  const std::string cached_version = json_string(metadata(job), "resourceVersion");
  const std::string latest_version = json_string(metadata(*latest), "resourceVersion");
  if (latest_version == cached_version) return std::optional<bool>(true);
  spdlog::info(
      "msg=\"the cached job is behind the API server; waiting for the watch before restarting "
      "workers\" {} cached={} latest={}",
      who(job), cached_version, latest_version);
  return std::optional<bool>(false);
}

DecisionExecutor::Result DecisionExecutor::write_status(const json& job, const Decision& d) {
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
      line_.assume(updated);
      if (options_.turn_taken) options_.turn_taken();
    }
  }
  if (d.ensure_token_secret) {
    // Before any pod that reads it, and recorded in the status write below, which every pod
    // create waits for.
    auto token = create_token_secret(job, d.token_secret);
    if (!token) {
      if (takes_turn) line_.forget(job);
      return unexpected(token.error());
    }
    if (!d.status) {
      updated = job;
      if (!updated["status"].is_object()) updated["status"] = json::object();
    }
    updated["status"]["progressToken"] = to_json(*token);
  }
  if (!d.status && !d.ensure_token_secret) return {};
  auto written = client_.replace_status(job_resource(), updated, quiet_write());
  if (!written) {
    if (takes_turn) line_.forget(job);
    // A conflict means our cache is behind; the watch brings the newer job and we decide again.
    return unexpected(api_failure("writing status", written.error()));
  }
  if (d.replanned) metrics_.add("depl_replans_total", {});
  return {};
}

Expected<ProgressTokenRecord, kube::ReconcileError> DecisionExecutor::create_token_secret(
    const json& job, const std::string& name) {
  const std::string token = random_token();
  if (token.empty() || name.empty())
    return unexpected(kube::ReconcileError{"could not generate a progress token"});
  const std::string job_name = json_string(metadata(job), "name");
  const std::string ns = json_string(metadata(job), "namespace");
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata",
                  {{"name", name},
                   {"namespace", ns},
                   {"labels", {{kJobLabel, job_name}, {kManagedByLabel, kManagedByValue}}},
                   {"ownerReferences", json::array({owner_reference(job)})}}},
                 {"type", "Opaque"},
                 {"stringData", {{kTokenKey, token}}}};
  // A Secret of that name that exists already is not ours (the name has a random part): its
  // token is unknown, and one that someone else chose must never pass for the job's. The next
  // reconcile draws another name.
  auto created = client_.create(resources::secrets(), ns, secret, quiet_write());
  if (!created) {
    return unexpected(api_failure("creating the progress-token Secret " + name, created.error()));
  }
  return ProgressTokenRecord{name, sha256_hex(token)};
}

void DecisionExecutor::post_events(const json& job, const Decision& d) {
  for (const auto& e : d.events) {
    event(job, e);
    spdlog::log(e.type == "Warning" ? spdlog::level::warn : spdlog::level::info,
                "msg=\"{}\" {} reason={}", e.message, who(job), e.reason);
  }
}

DecisionExecutor::Result DecisionExecutor::remove_objects(const json& job, const Decision& d,
                                                          std::stop_token stop) {
  const std::string ns = json_string(metadata(job), "namespace");
  for (const auto& r : d.remove) {
    if (stop.stop_requested()) break;
    kube::DeleteOptions del;
    del.precondition_uid = r.uid;
    auto removed = client_.remove(type_of(r.kind), ns, r.name, del);
    if (!removed && !removed.error().is_not_found() && !removed.error().is_conflict()) {
      return unexpected(
          api_failure(fmt::format("deleting {} {}", r.kind, r.name), removed.error()));
    }
    spdlog::info("msg=\"deleted {}\" {} name={}", r.kind, who(job), r.name);
  }
  return {};
}

DecisionExecutor::Result DecisionExecutor::create_objects(const json& job, const Decision& d,
                                                          std::stop_token stop) {
  for (const auto& object : d.create) {
    if (stop.stop_requested()) break;
    if (auto created = create_one(job, object); !created) return created;
  }
  return {};
}

DecisionExecutor::Result DecisionExecutor::create_one(const json& job, const json& object) {
  const std::string uid = json_string(metadata(job), "uid");
  const std::string ns = json_string(metadata(job), "namespace");
  const std::string kind = json_string(object, "kind");
  const std::string name = json_string(metadata(object), "name");
  const kube::ResourceType type =
      kind == "PodGroup" ? pod_group_resource_of(object) : type_of(kind);
  // No cache follows PodGroups: nothing waits to see them (the scheduler does).
  const bool expected = kind != "PodGroup";
  if (expected) expectations_.expect(uid, kind, ns, name);
  auto created = client_.create(type, ns, object, quiet_write());
  if (created) {
    spdlog::info("msg=\"created {}\" {} name={}", kind, who(job), name);
    return {};
  }
  if (created.error().is_already_exists()) {
    const Holder holder = holder_of(type, ns, name, uid);
    if (holder == Holder::ThisJob) return {};  // ours, from an earlier try
    if (expected) expectations_.forget(uid, kind, ns, name);
    if (holder == Holder::Unknown) {
      // Deleted between the create and the read (or unreadable): nothing of the job's will show
      // up, and no event of an object it does not own wakes it, so it tries again with backoff.
      return unexpected(kube::ReconcileError{fmt::format(
          "creating {} {}: an object of that name existed and could not be read back; trying "
          "again",
          kind, name)});
    }
    // Not ours (a user's pod of the same name): it will never show up as this job's, and the job
    // cannot run that rank until it is gone. Told, and tried again with backoff.
    const std::string message = fmt::format(
        "Error creating {} {}: a {} of that name already exists and is not controlled by this "
        "job; delete or rename it",
        kind, name, kind);
    event(job, {"Warning", "FailedCreate", message});
    return unexpected(kube::ReconcileError{message});
  }
  if (expected) expectations_.forget(uid, kind, ns, name);
  if (is_rejection(created.error())) {
    report_rejection(job, object, created.error());
  } else if (tells_the_user(created.error())) {
    // A refusal that a later try may overcome (a ResourceQuota, RBAC, an admission webhook, a
    // failing API server): retried with backoff, and told, as the Job controller does, by a
    // Warning Event (identical ones are aggregated into one with a count).
    event(job, {"Warning", "FailedCreate", failed_create_message(object, created.error())});
  }
  return unexpected(api_failure(fmt::format("creating {} {}", kind, name), created.error()));
}

kube::WriteOptions DecisionExecutor::quiet_write() const {
  kube::WriteOptions w;
  w.field_manager = options_.field_manager;
  // What the API server answers comes back through the informers; nothing here reads it.
  w.return_object = false;
  return w;
}

DecisionExecutor::Holder DecisionExecutor::holder_of(const kube::ResourceType& type,
                                                     const std::string& ns, const std::string& name,
                                                     const std::string& uid) {
  auto existing = client_.get(type, ns, name);
  if (!existing) return Holder::Unknown;
  return kube::controller_uid(*existing) == uid ? Holder::ThisJob : Holder::Another;
}

void DecisionExecutor::report_rejection(const json& job, const json& object,
                                        const kube::ApiError& error) {
  const std::string ns = json_string(metadata(job), "namespace");
  const std::string name = json_string(metadata(job), "name");
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
  event(*latest, {"Warning", kRejectedByApiServer, message});
  spdlog::warn("msg=\"{}\" job={}/{} reason={}", message, ns, name, kRejectedByApiServer);
}

void DecisionExecutor::event(const json& object, const EventSpec& spec) {
  if (events_) events_(object, spec);
}

}  // namespace depl::controller
