// Running the plan in force: the phase the progress points at runs in rounds (its workers started
// together from the last checkpoint); a round ends when its workers exit, fail, or reach the
// phase's last epoch, and the phase ends when its epochs are done.
#include <fmt/format.h>

#include <cmath>

#include "decision_state.hpp"
#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/disruption.hpp"
#include "depl/controller/gang_scheduling.hpp"
#include "depl/controller/interruption_rate.hpp"
#include "depl/controller/queue_admission.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

// The exit code of a worker that gave up because the progress endpoint did not take its report
// within its retry deadline (docs/worker-contract.md, section 3): the controller was away or out
// of reach, which is not a failure of the phase.
constexpr int kExitProgressUnreachable = 75;
// Rounds that end that way one after the other, without an epoch recorded between them, before
// the job fails: the controller was running all along (it saw the pods exit), so its workers
// cannot reach it (a wrong --progress-advertise-url, a NetworkPolicy).
constexpr int kMaxUnreachableRounds = 5;

// Whether a pod was made for `phase` of the plan in force: same pool (annotation) and variant
// (DEPL_MODEL). Pods without these marks are taken as matching.
bool made_for(const json& pod, const PhaseRecord& phase) {
  const std::string pool = json_string(json_at(pod, {"metadata", "annotations"}), "depl.dev/pool");
  if (!pool.empty() && pool != phase.pool) return false;
  const json& containers = json_at(pod, {"spec", "containers"});
  if (!containers.is_array() || containers.empty() || !containers[0].is_object()) return true;
  const json& env = json_member(containers[0], "env");
  if (!env.is_array()) return true;
  for (const auto& e : env) {
    if (json_string(e, "name") == "DEPL_MODEL" && e.contains("value")) {
      return e["value"] == phase.model;
    }
  }
  return true;
}

std::string running_message(const PlanRecord& plan, const ProgressRecord& progress,
                            const Position& pos) {
  const auto& rec = plan.phases[pos.phase];
  return fmt::format("phase {}/{}: {} on {} ({} workers), epoch {}{}", pos.phase + 1,
                     plan.phases.size(), rec.model, rec.pool, rec.workers, progress.epoch,
                     progress.loss ? fmt::format(", loss {:.4g}", *progress.loss) : "");
}

// The running phase as the plan and progress place it.
struct RunningPhase {
  PlanRecord plan;      // the plan in force
  solver::Plan mapped;  // the same against the problem with the cluster's pools
  Position pos;
  int stop_after = 0;  // the global epoch the phase ends at
  const PhaseRecord& record() const { return plan.phases[pos.phase]; }
  int workers() const { return record().workers; }
};

PhaseLaunch launch_of(DecisionState& state, const RunningPhase& running) {
  const ProgressRecord& progress = state.status.progress;
  state.launch_plan = running.mapped;
  PhaseLaunch l;
  l.job = &state.job;
  l.problem = &state.full;
  l.plan = &state.launch_plan;
  l.phase = running.pos.phase;
  l.start_epoch = progress.epoch;
  l.epochs = std::max(1, running.stop_after - progress.epoch);
  auto label = state.pool_labels.find(running.record().pool);
  l.pool_label = label != state.pool_labels.end() ? label->second : "depl.dev/pool";
  if (auto t = state.pool_tolerations.find(running.record().pool);
      t != state.pool_tolerations.end()) {
    l.pool_tolerations = t->second;
  }
  l.progress_url = state.options.progress_url;
  l.checkpoint_root = state.options.checkpoint_root;
  const auto& token = state.status.progress_token;
  l.token_secret = token ? token->secret : state.view.new_token_secret;
  l.rendezvous = state.options.rendezvous;
  return l;
}

// Pods of other phases that still run are leftovers (a re-plan moved on): they are stopped
// first. So are pods with this phase's number made for another plan (another pool or variant):
// they hold the names this phase's pods need, and may wait for a pool that is gone. Returns
// whether there were any; `current` gets this phase's pods.
bool stop_leftovers(DecisionState& state, const RunningPhase& running,
                    std::vector<const json*>& current) {
  const int phase = static_cast<int>(running.pos.phase);
  bool leftovers = false;
  for (const auto& pod : state.view.owned_pods) {
    const int pod_phase_index = label_int(pod, kPhaseLabel);
    if (pod_phase_index == phase && made_for(pod, running.record())) {
      current.push_back(&pod);
      continue;
    }
    if (pod_phase_index != phase && has_ended(pod)) continue;
    leftovers = true;
    state.remove("Pod", pod);
  }
  for (const auto& svc : state.view.owned_services) {
    if (label_int(svc, kPhaseLabel) != phase) state.remove("Service", svc);
  }
  return leftovers;
}

// ---- admission through a queue (queue_admission.hpp) ------------------------------------------

// Puts the worker pods the decision creates from `first` on in the Kueue pod group of `round`.
void join_group(DecisionState& state, std::size_t first, const RunningPhase& running, int round) {
  if (state.queue_name.empty()) return;
  const std::string group = pod_group_name(json_string(json_member(state.job, "metadata"), "name"),
                                           running.plan.revision, running.pos.phase, round);
  auto& create = state.decision.create;
  for (std::size_t i = first; i < create.size(); ++i) {
    if (json_string(create[i], "kind") == "Pod") {
      join_pod_group(create[i], state.queue_name, group, running.workers());
    }
  }
}

// A round of several workers, when the job asks for gang scheduling, is one PodGroup (named as
// its Kueue pod group) of Kubernetes' API where served, else of the coscheduling plugin, created
// before the workers (a pod whose group does not exist is held back), which name it. Without
// either API the workers are made as without it, and a Warning says so.
void make_gang(DecisionState& state, std::size_t first, const RunningPhase& running, int round,
               bool round_starts) {
  if (running.workers() < 2 || !gang_scheduling_asked(state.job, state.options.gang_scheduling)) {
    return;
  }
  const GangApi api = state.view.gang_api;
  if (api == GangApi::None) {
    if (round_starts) {
      state.event("Warning", "GangSchedulingUnavailable",
                  fmt::format("the API server serves no PodGroup API (neither "
                              "scheduling.k8s.io/v1beta1 nor scheduling.x-k8s.io/v1alpha1 "
                              "podgroups): the {} workers of phase {} are scheduled one by one",
                              running.workers(), running.pos.phase));
    }
    return;
  }
  const std::string group = pod_group_name(json_string(json_member(state.job, "metadata"), "name"),
                                           running.plan.revision, running.pos.phase, round);
  auto& create = state.decision.create;
  for (std::size_t i = first; i < create.size(); ++i) {
    if (json_string(create[i], "kind") == "Pod") join_gang(create[i], group, api);
  }
  create.insert(create.begin() + static_cast<std::ptrdiff_t>(first),
                build_pod_group(state.job, group, running.workers(), api));
}

// The round's workers are held by `gates` (those of the earliest held pod, made at `created`):
// the job is Queued and the wait is recorded in status.queue. The wait counts against the
// deadline: once the time waited and the plan's predicted duration no longer fit in it, the plan
// is made again (once per wait) with the time left.
void wait_for_admission(DecisionState& state, const RunningPhase& running, const std::string& gates,
                        const std::string& created) {
  QueueRecord queue = state.status.queue.value_or(QueueRecord{});
  const std::string& name = state.queue_name;
  const std::string by =
      name.empty() ? std::string("its scheduling gates") : fmt::format("queue {}", name);
  const Position& pos = running.pos;
  if (queue.since.empty()) {
    const auto made = parse_rfc3339(created);
    queue.since = made && *made <= state.view.now ? created : state.now;
    state.event("Normal", "Queued",
                fmt::format("the workers of phase {} wait for admission by {} (held by {})",
                            pos.phase, by, gates));
  }
  const PhaseRecord& rec = running.record();
  state.set_phase(phases::kQueued,
                  fmt::format("phase {}/{}: {} on {} ({} workers), epoch {}: waiting for "
                              "admission by {} since {}",
                              pos.phase + 1, running.plan.phases.size(), rec.model, rec.pool,
                              rec.workers, state.status.progress.epoch, by, queue.since));
  const std::string held = fmt::format("held by {} since {}", gates, queue.since);
  state.condition(conditions::kQueued, true, "WaitingForAdmission", held);
  state.condition(conditions::kRunning, false, "Queued", held);
  const double waited = queued_seconds(queue, state.view.now);
  const double planned = running.plan.duration_seconds;
  const auto deadline = state.problem.target.deadline_seconds;
  const auto left = seconds_until_wait_threatens_deadline(deadline, planned, waited);
  auto& requeue = state.decision.requeue_after;
  if (left && *left <= 0 && !queue.replanned) {
    queue.replanned = true;
    state.status.replan_requested = true;
    state.event("Warning", "QueueDelay",
                fmt::format("phase {} has waited {:.0f}s for admission by {}; with the plan's "
                            "{:.0f}s it would miss the deadline of {:.0f}s: planning again for "
                            "the time left",
                            pos.phase, waited, by, planned, *deadline));
    requeue = std::chrono::seconds(0);
  } else if (left && *left > 0) {
    const auto until = std::chrono::seconds(static_cast<long>(std::ceil(*left)));
    if (!requeue || *requeue > until) requeue = until;
  }
  state.status.queue = queue;
}

// The round runs once no scheduling gate holds its workers; until then the job is Queued,
// neither failed nor stuck.
void note_admission(DecisionState& state, const RunningPhase& running,
                    const std::vector<const json*>& current) {
  std::string gates, created;  // of the earliest held pod: the wait started when it was made
  for (const json* pod : current) {
    std::string held = holding_gates(*pod);
    if (held.empty()) continue;
    const std::string made = json_string(json_member(*pod, "metadata"), "creationTimestamp");
    if (gates.empty() || (!made.empty() && made < created)) {
      gates = std::move(held);
      created = made;
    }
  }
  if (!gates.empty()) {
    wait_for_admission(state, running, gates, created);
    return;
  }
  if (auto& queue = state.status.queue; queue && !queue->since.empty()) {
    const double waited = queued_seconds(*queue, state.view.now) - queue->waited_seconds;
    queue->waited_seconds += waited;
    queue->since.clear();
    queue->replanned = false;
    // Held workers do not train: the round's work starts at its admission.
    state.status.progress.checkpointed_at = state.now;
    const std::string& name = state.queue_name;
    const std::string message =
        fmt::format("phase {} admitted after {:.0f}s waiting{}", running.pos.phase, waited,
                    name.empty() ? std::string() : " in queue " + name);
    state.condition(conditions::kQueued, false, "Admitted", message);
    state.condition(conditions::kRunning, true, "Admitted", message);
    state.event("Normal", "Admitted", message);
  }
  state.set_phase(phases::kRunning,
                  running_message(running.plan, state.status.progress, running.pos));
}

// Starts a round of the phase: its Service when missing, and every worker.
void start_round(DecisionState& state, const RunningPhase& running) {
  ProgressRecord& progress = state.status.progress;
  const PhaseLaunch launch = launch_of(state, running);
  const int phase = static_cast<int>(running.pos.phase);
  const bool has_service =
      std::any_of(state.view.owned_services.begin(), state.view.owned_services.end(),
                  [&](const json& svc) { return label_int(svc, kPhaseLabel) == phase; });
  if (!has_service) state.decision.create.push_back(build_rendezvous_service(launch));
  const std::size_t first_pod = state.decision.create.size();
  for (int rank = 0; rank < running.workers(); ++rank) {
    state.decision.create.push_back(build_worker_pod(launch, rank));
  }
  const PhaseRecord& rec = running.record();
  const auto& refused = state.view.round_without_pods;
  const bool started_already =
      refused && refused->phase == phase && refused->round == progress.round && progress.round > 0;
  const int round = started_already ? progress.round : progress.round + 1;
  join_group(state, first_pod, running, round);
  make_gang(state, first_pod, running, round, !started_already);
  // The round trains from the checkpoint it starts at.
  if (!started_already || progress.checkpointed_at.empty()) progress.checkpointed_at = state.now;
  if (!started_already) {
    progress.round += 1;
    state.event(
        "Normal", "PhaseStarted",
        fmt::format("phase {}: {} on {} with {} workers, epochs {} to {}", phase, rec.model,
                    rec.pool, rec.workers, progress.epoch + 1, progress.epoch + launch.epochs));
  }
  state.set_phase(phases::kRunning, running_message(running.plan, progress, running.pos));
  state.condition(conditions::kRunning, true, "PhaseStarted",
                  fmt::format("phase {} ({} on {})", phase, rec.model, rec.pool));
}

// The exit code of the pod's worker container, or -1 when it has none.
int exit_code(const json& pod) {
  const json& statuses = json_at(pod, {"status", "containerStatuses"});
  if (!statuses.is_array()) return -1;
  for (const auto& cs : statuses) {
    const json& code = json_at(cs, {"state", "terminated", "exitCode"});
    if (code.is_number_integer()) return code.get<int>();
  }
  return -1;
}

// Records the failed pod's uid once; false when it was counted before.
bool first_sight(JobStatus& status, const json& pod) {
  const std::string uid = json_string(json_member(pod, "metadata"), "uid");
  if (std::find(status.failed_pods.begin(), status.failed_pods.end(), uid) !=
      status.failed_pods.end()) {
    return false;
  }
  status.failed_pods.push_back(uid);
  while (status.failed_pods.size() > kMaxCountedFailures) {
    status.failed_pods.erase(status.failed_pods.begin());
  }
  return true;
}

// The rounds in a row, at the epoch recorded now, whose workers could not reach the controller.
int unreachable_rounds(const ProgressRecord& progress) {
  const auto& u = progress.unreachable;
  return u && u->epoch == progress.epoch ? u->rounds : 0;
}

// A worker that could not reach the progress endpoint restarts the phase like a failure, but is
// not counted against backoffLimit: once per round, in a row while no epoch is recorded.
bool count_unreachable(DecisionState& state, const json& pod) {
  if (!first_sight(state.status, pod)) return false;
  ProgressRecord& progress = state.status.progress;
  const auto& u = progress.unreachable;
  if (u && u->round == progress.round && u->epoch == progress.epoch) {
    return true;  // another rank of a round already counted
  }
  const int rounds = unreachable_rounds(progress) + 1;
  progress.unreachable = UnreachableRecord{rounds, progress.epoch, progress.round};
  state.event("Warning", "ProgressUnreachable",
              fmt::format("pod {} exited {}: it could not deliver a progress report within its "
                          "retry deadline; restarting the phase from its checkpoint, not counted "
                          "as a failure ({} of {} such rounds in a row)",
                          json_string(json_member(pod, "metadata"), "name"),
                          kExitProgressUnreachable, rounds, kMaxUnreachableRounds));
  return true;
}

// Counts a failed pod once (by uid) and tells of it; false when it was counted before.
bool count_failure(DecisionState& state, const json& pod) {
  JobStatus& status = state.status;
  if (!first_sight(status, pod)) return false;
  status.progress.failures += 1;
  std::string detail;
  const json& statuses = json_at(pod, {"status", "containerStatuses"});
  if (statuses.is_array()) {
    for (const auto& cs : statuses) {
      const json& exit_code = json_at(cs, {"state", "terminated", "exitCode"});
      if (!exit_code.is_null()) detail = fmt::format(" (exit code {})", exit_code.dump());
    }
  }
  state.event("Warning", "WorkerFailed",
              fmt::format("pod {} failed{}; restarting the phase from its checkpoint (failure {} "
                          "of backoffLimit {})",
                          json_string(json_member(pod, "metadata"), "name"), detail,
                          status.progress.failures, state.backoff_limit()));
  return true;
}

// What disrupted a pod that has failed or is terminating (pod_disruption); empty when nothing did.
// A running pod is not disrupted yet, whatever its node: it may still finish; nor is one that
// succeeded.
std::string disruption_of(const DecisionState& state, const json& pod) {
  const std::string phase = pod_phase(pod);
  if (phase == "Succeeded" || (phase != "Failed" && !is_terminating(pod))) return "";
  return pod_disruption(pod, state.view.nodes);
}

// The restart a preemption costs on `pool` (docs/depl-model.md section 2, R_i): the pool's
// startup and reading the running variant's checkpoint back from storage.
double restart_seconds(const DecisionState& state, const std::string& pool) {
  auto figures = state.status.pool_figures.find(pool);
  if (figures == state.status.pool_figures.end()) return 0;
  double seconds = figures->second.startup_seconds;
  const int model = state.problem.model_index(state.status.progress.model);
  if (model >= 0 && figures->second.storage_bandwidth > 0) {
    seconds += state.problem.models[static_cast<std::size_t>(model)].checkpoint_bytes /
               figures->second.storage_bandwidth;
  }
  return seconds;
}

// What the preemption of `pod` on `pool` cost the job (docs/depl-model.md section 7): the work
// since the running round's last checkpoint (to the pod's DisruptionTarget time, or now) plus
// the restart, once per round: a round's other disrupted workers lose nothing more, nor does a
// pod of a phase that no longer runs. The work counts as time trained there, for the pool's
// observed rate.
double lost_to_preemption(DecisionState& state, const json& pod, const std::string& pool) {
  ProgressRecord& progress = state.status.progress;
  if (progress.checkpointed_at.empty() || pool != progress.pool) return 0;
  const auto disrupted = pod_disrupted_at(pod);
  const auto at = disrupted && *disrupted <= state.view.now ? *disrupted : state.view.now;
  const double work = seconds_since(progress.checkpointed_at, at);
  progress.checkpointed_at.clear();
  int workers = 1;
  if (const auto& plan = state.status.plan;
      plan && static_cast<std::size_t>(progress.phase) < plan->phases.size()) {
    workers = plan->phases[static_cast<std::size_t>(progress.phase)].workers;
  }
  add_training_time(state.status, pool, workers * work);
  return work + restart_seconds(state, pool);
}

// A worker ended by a disruption (`why`, from pod_disruption): counted once per pod (by uid, with
// the failures) in status.progress.preemptions (the job's) and status.preemptions (per pool, the
// pod's: count, the last one's time and cause, the time lost), with an Event; never against
// backoffLimit.
void count_preemption(DecisionState& state, const json& pod, const std::string& why) {
  JobStatus& status = state.status;
  if (!first_sight(status, pod)) return;
  std::string pool = json_string(json_at(pod, {"metadata", "annotations"}), "depl.dev/pool");
  if (pool.empty()) pool = status.progress.pool;
  PreemptionRecord& record = status.preemptions[pool];
  const double lost = lost_to_preemption(state, pod, pool);
  const int total = ++status.progress.preemptions;
  status.progress.lost_seconds += lost;
  record.count += 1;
  record.last_time = state.now;
  record.last_cause = why;
  record.lost_seconds += lost;
  state.event("Warning", "WorkerPreempted",
              fmt::format("pod {} on pool {} was disrupted ({}): a preemption, not counted as "
                          "a failure; the job goes on from its checkpoint, {:.0f}s lost "
                          "(preemption {} on pool {}, {} in all, {:.0f}s lost in all)",
                          json_string(json_member(pod, "metadata"), "name"), pool, why, lost,
                          record.count, pool, total, status.progress.lost_seconds));
}

// A Failed pod: a failure, or a worker that could not reach the controller; false when it was
// counted before.
bool count_failed(DecisionState& state, const json& pod) {
  if (exit_code(pod) == kExitProgressUnreachable) return count_unreachable(state, pod);
  return count_failure(state, pod);
}

// The phase has done its epochs: the next phase, the end of the job at its target, more epochs
// planned from the observed loss, or the end of the plan short of the target.
void complete_phase(DecisionState& state, RunningPhase running) {
  ProgressRecord& progress = state.status.progress;
  const Position& pos = running.pos;
  // The phase ran what it ran: record reality, then move on.
  PlanRecord& plan = running.plan;
  plan.phases[pos.phase].epochs = progress.epoch - pos.phase_start_epoch;
  state.status.plan->phases = plan.phases;
  auto next_phase = [&] {
    progress.phase = static_cast<int>(pos.phase) + 1;
    progress.failures = 0;
    progress.round = 0;
    state.decision.requeue_after = std::chrono::seconds(0);
  };
  if (pos.phase + 1 < plan.phases.size()) {
    state.event("Normal", "PhaseCompleted",
                fmt::format("phase {} ({}) completed at epoch {}", pos.phase,
                            plan.phases[pos.phase].model, progress.epoch));
    next_phase();
    return;
  }
  const double target = state.full.target.loss;
  if (progress.loss && *progress.loss <= target) {
    end_job(state, true, "TargetReached",
            fmt::format("loss {:.4g} <= target {:.4g} after {} epochs", *progress.loss, target,
                        progress.epoch));
    return;
  }
  if (state.replans_on_deviation() && !state.past_limits.empty()) {
    // The plan is done but the target is not: the job waits, not fails, for a spec that can be
    // planned on.
    past_solver_limits(state, false);
    return;
  }
  Position end = position_of(plan, progress);
  end.done_in_phase = plan.phases[pos.phase].epochs;
  if (extend_plan(state, plan, end)) {
    next_phase();
    return;
  }
  const std::string observed = progress.loss ? fmt::format("{:.4g}", *progress.loss) : "unknown";
  end_job(state, false, "TargetMissed",
          fmt::format("the plan ran out with loss {} above target {:.4g}", observed, target));
}

// The phase's epochs are done: it completes once its workers are gone. Running workers are told
// to stop when they report; one that has not started (e.g. recreated just before its node went
// away) never reports, so it is removed.
void finish_phase(DecisionState& state, const RunningPhase& running,
                  const std::vector<const json*>& current) {
  bool busy = false;
  for (const json* pod : current) {
    if (has_ended(*pod) || is_terminating(*pod)) continue;
    busy = true;
    if (pod_phase(*pod) == "Pending") state.remove("Pod", *pod);
  }
  if (!busy) complete_phase(state, running);
}

// The job fails once its failures are past backoffLimit; true when it did.
bool ends_at_backoff_limit(DecisionState& state, const RunningPhase& running) {
  const int failures = state.status.progress.failures;
  const int limit = state.backoff_limit();
  if (failures <= limit) return false;
  end_job(state, false, "BackoffLimitExceeded",
          fmt::format("phase {} failed {} times (backoffLimit {})", running.pos.phase, failures,
                      limit));
  return true;
}

// The round's workers failed, were disrupted, or exited before the phase's last epoch: the phase
// restarts from its checkpoint in a round of its own, within the spec's limits. A worker ended by
// a disruption (its node reclaimed, drained or lost; evicted; preempted) is a preemption, not a
// failure: counted apart, never against backoffLimit, and its peers are stopped at once (SIGTERM:
// they checkpoint where the round is) with no backoff. False when the round goes on.
bool end_round(DecisionState& state, const RunningPhase& running,
               const std::vector<const json*>& current) {
  int succeeded = 0, failed = 0, preempted = 0;
  for (const json* pod : current) {
    const std::string phase = pod_phase(*pod);
    if (!disruption_of(state, *pod).empty()) {
      ++preempted;  // counted by count_preemptions
      continue;
    }
    if (is_terminating(*pod)) continue;
    if (phase == "Succeeded") ++succeeded;
    if (phase == "Failed") {
      ++failed;
      count_failed(state, *pod);
    }
  }
  const ProgressRecord& progress = state.status.progress;
  const int limit = state.backoff_limit();
  failed += state.departed_failures;
  if (failed > 0 || preempted > 0) {
    if (ends_at_backoff_limit(state, running)) return true;
    if (const int rounds = unreachable_rounds(progress); rounds >= kMaxUnreachableRounds) {
      end_job(state, false, "ProgressUnreachable",
              fmt::format("the workers of phase {} could not deliver a progress report to {} in "
                          "{} rounds in a row while the controller was running; check "
                          "--progress-advertise-url and the NetworkPolicies between the job's "
                          "namespace and the controller",
                          running.pos.phase, state.options.progress_url, rounds));
      return true;
    }
    // Synchronous data-parallel ranks cannot continue without a peer: restart the phase from the
    // last checkpoint, with no backoff.
    for (const json* pod : current) state.remove("Pod", *pod);
    return true;
  }
  if (succeeded == static_cast<int>(current.size()) && succeeded >= running.workers()) {
    // All workers exited 0 before the planned epochs: the plan grew after they started (or they
    // stopped early). Another round of the same phase starts from the checkpoint.
    if (progress.round > limit + running.record().epochs) {
      end_job(state, false, "NoProgress",
              fmt::format("workers of phase {} keep exiting without reporting progress",
                          running.pos.phase));
      return true;
    }
    for (const json* pod : current) state.remove("Pod", *pod);
    state.decision.needs_latest_job = true;
    return true;
  }
  return false;
}

// The round runs: every rank exists (a rank may have been deleted by hand).
void keep_ranks(DecisionState& state, const RunningPhase& running,
                const std::vector<const json*>& current) {
  std::vector<bool> present(static_cast<std::size_t>(running.workers()), false);
  for (const json* pod : current) {
    const int rank = label_int(*pod, kRankLabel);
    if (rank >= 0 && rank < running.workers()) present[static_cast<std::size_t>(rank)] = true;
  }
  const PhaseLaunch launch = launch_of(state, running);
  const std::size_t first_new = state.decision.create.size();
  for (int rank = 0; rank < running.workers(); ++rank) {
    if (!present[static_cast<std::size_t>(rank)]) {
      state.decision.create.push_back(build_worker_pod(launch, rank));
      state.decision.needs_latest_job = true;  // it starts from the cached progress
    }
  }
  join_group(state, first_new, running, state.status.progress.round);
  note_admission(state, running, current);
}

}  // namespace

void count_preemptions(DecisionState& state) {
  // The pods still cached, then those deleted since (departed_pods.hpp), whose last state may be
  // all that is left of a preemption.
  for (const auto* pods : {&state.view.owned_pods, &state.view.departed_pods}) {
    for (const auto& pod : *pods) {
      if (const std::string why = disruption_of(state, pod); !why.empty()) {
        count_preemption(state, pod, why);
      }
    }
  }
}

void count_departed_failures(DecisionState& state) {
  const JobStatus& status = state.status;
  if (!status.plan) return;
  const auto phase = static_cast<std::size_t>(status.progress.phase);
  if (status.progress.phase < 0 || phase >= status.plan->phases.size()) return;
  const PhaseRecord& record = status.plan->phases[phase];
  for (const auto& pod : state.view.departed_pods) {
    if (pod_phase(pod) != "Failed" || is_terminating(pod)) continue;
    if (label_int(pod, kPhaseLabel) != status.progress.phase || !made_for(pod, record)) continue;
    if (!disruption_of(state, pod).empty()) continue;  // a preemption (count_preemptions)
    if (count_failed(state, pod)) ++state.departed_failures;
  }
}

void run_phase(DecisionState& state) {
  JobStatus& status = state.status;
  RunningPhase running;
  running.plan = *status.plan;
  auto mapped = to_solver_plan(running.plan, state.full);
  if (!mapped) {
    status.replan_requested = true;
    state.decision.requeue_after = std::chrono::seconds(1);
    return;
  }
  running.mapped = std::move(*mapped);
  running.pos = position_of(running.plan, status.progress);
  running.stop_after = running.pos.phase_start_epoch + running.record().epochs;

  std::vector<const json*> current;
  const bool leftovers = stop_leftovers(state, running, current);
  record_spent(state, running.mapped, running.pos);
  if (leftovers) return;

  ProgressRecord& progress = status.progress;
  progress.stop_after_epoch = running.stop_after;
  progress.phase = static_cast<int>(running.pos.phase);
  progress.model = running.record().model;
  progress.pool = running.record().pool;

  if (progress.epoch >= running.stop_after) {
    finish_phase(state, running, current);
    return;
  }
  if (current.empty()) {
    // A departed worker's failure may be the round's only trace.
    if (state.departed_failures > 0 && ends_at_backoff_limit(state, running)) return;
    start_round(state, running);
    return;
  }
  const bool terminating = std::any_of(current.begin(), current.end(),
                                       [](const json* pod) { return is_terminating(*pod); });
  const bool disrupted = std::any_of(current.begin(), current.end(), [&](const json* pod) {
    return !disruption_of(state, *pod).empty();
  });
  if (terminating && !disrupted) {
    // Wait until the old incarnations are gone. Failures among the others are counted now.
    for (const json* pod : current) {
      if (!is_terminating(*pod) && pod_phase(*pod) == "Failed") count_failed(state, *pod);
    }
    return;
  }
  if (end_round(state, running, current)) return;
  keep_ranks(state, running, current);
}

}  // namespace depl::controller
