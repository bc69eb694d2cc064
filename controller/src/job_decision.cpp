#include "depl/controller/job_decision.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <set>

#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/progress_token.hpp"
#include "depl/controller/queue_admission.hpp"
#include "depl/controller/replan.hpp"
#include "depl/controller/stoppable_solve.hpp"
#include "depl/controller/worker_spec_validation.hpp"
#include "depl/kube/exec_credentials.hpp"  // parse_rfc3339
#include "depl/solver/parse.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxCountedFailures = 50;
// The exit code of a worker that gave up because the progress endpoint did not take its report
// within its retry deadline (docs/worker-contract.md, section 3): the controller was away or out
// of reach, which is not a failure of the phase.
constexpr int kExitProgressUnreachable = 75;
// Rounds that end that way one after the other, without an epoch recorded between them, before
// the job fails: the controller was running all along (it saw the pods exit), so its workers
// cannot reach it (a wrong --progress-advertise-url, a NetworkPolicy).
constexpr int kMaxUnreachableRounds = 5;
constexpr const char* kWaitingForEarlierJobs =
    "waiting for jobs created earlier to be placed first (placement follows creation order)";

std::string str(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

long generation_of(const json& job) {
  const json& meta = job["metadata"];
  auto it = meta.find("generation");
  return it != meta.end() && it->is_number_integer() ? it->get<long>() : 1;
}

std::string pod_phase(const json& pod) {
  auto st = pod.find("status");
  return st != pod.end() && st->is_object() ? str(*st, "phase", "Pending") : "Pending";
}

bool is_terminating(const json& object) {
  return object["metadata"].contains("deletionTimestamp");
}

int label_int(const json& object, const char* key) {
  const json& labels = object["metadata"].value("labels", json::object());
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return -1;
  try {
    return std::stoi(it->get<std::string>());
  } catch (...) {
    return -1;
  }
}

std::string short_plan(const PlanRecord& plan) {
  std::string out;
  for (const auto& p : plan.phases) {
    if (!out.empty()) out += " -> ";
    out += fmt::format("{} x{} on {} ({} workers)", p.model, p.epochs, p.pool, p.workers);
  }
  return out;
}

// The first line of each validation message, capped, for a condition message.
std::string summarise(const std::vector<std::string>& messages) {
  std::string out;
  for (std::size_t i = 0; i < messages.size() && i < 5; ++i) {
    if (!out.empty()) out += "; ";
    out += messages[i];
  }
  if (messages.size() > 5) out += fmt::format("; and {} more", messages.size() - 5);
  return out;
}

// The message of the condition `type`, empty when it is not there.
std::string condition_message(const json& status, const std::string& type) {
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return "";
  for (const auto& c : *it) {
    if (c.is_object() && c.value("type", "") == type) return c.value("message", "");
  }
  return "";
}

// A pool's figures as the status remembers them (everything but its free GPUs), so a plan can
// still be evaluated after the pool's nodes are gone.
json pool_figures(const solver::Pool& pool) {
  return json{{"gpuType", pool.gpu_type},
              {"gpuGflops", pool.gpu_gflops},
              {"pricePerGpuHour", pool.price_per_gpu_hour},
              {"bandwidth", pool.bandwidth},
              {"storageBandwidth", pool.storage_bandwidth},
              {"startupSeconds", pool.startup_seconds},
              {"interPool", pool.inter_pool}};
}

// A pool the cluster no longer has, rebuilt from remembered figures, with no GPUs: the phases
// that ran there stay evaluable and nothing new is placed there.
std::optional<solver::Pool> vanished_pool(const std::string& name, const json& figures) {
  if (!figures.is_object()) return std::nullopt;
  auto number = [&](const char* key) {
    auto it = figures.find(key);
    return it != figures.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  solver::Pool pool;
  pool.name = name;
  pool.gpu_type = str(figures, "gpuType");
  pool.gpus = 0;
  pool.gpu_gflops = number("gpuGflops");
  pool.price_per_gpu_hour = number("pricePerGpuHour");
  pool.bandwidth = number("bandwidth");
  pool.storage_bandwidth = number("storageBandwidth");
  pool.startup_seconds = number("startupSeconds");
  if (auto links = figures.find("interPool"); links != figures.end() && links->is_object()) {
    for (const auto& [source, bw] : links->items()) {
      if (bw.is_number()) pool.inter_pool[source] = bw.get<double>();
    }
  }
  if (pool.gpu_gflops <= 0) return std::nullopt;
  return pool;
}

double default_seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Decider {
 public:
  Decider(const JobView& view, const DecideOptions& options)
      : view_(view), options_(options), job_(view.job) {
    status_ =
        job_.contains("status") && job_["status"].is_object() ? job_["status"] : json::object();
    original_status_ = status_;
    generation_ = generation_of(job_);
    now_ = rfc3339(view.now);
    name_ = str(job_["metadata"], "name");
  }

  Decision run() {
    if (job_["metadata"].contains("deletionTimestamp")) return std::move(decision_);
    // A job stored past the solver's limits is read all the same: the API server has it (its
    // schema does not enforce them), so it is kept, and only planning waits for a spec within
    // them (past_solver_limits).
    auto problem = solver::parse_job_json(job_, solver::JobLimits::Stored);
    std::vector<std::string> errors;
    if (!problem) errors = problem.error().messages;
    // The fields only the worker pods use: the API server would refuse the pods otherwise.
    for (auto& message : validate_worker_fields(job_)) errors.push_back(std::move(message));
    // What the administrator allows the job's pods (job_policy.hpp).
    if (!view_.policy_problem.empty()) {
      errors.push_back(
          "the operator's job policy cannot be read, so no job may run until an "
          "administrator fixes it: " +
          view_.policy_problem);
    }
    for (auto& message : check_job_policy(job_, view_.policy)) errors.push_back(std::move(message));
    if (auto problem = queue_name_problem(job_)) errors.push_back(std::move(*problem));
    if (!errors.empty()) {
      invalid(errors);
      return finish();
    }
    if (auto refused = recorded_rejection(status_, generation_)) {
      // The API server refused the workers this spec makes: retrying cannot help until the spec
      // changes (creation_rejection.hpp).
      record_rejection(status_, *refused, generation_, now_);
      delete_pods(/*only_running=*/true);
      return finish();
    }
    condition(conditions::kValid, true, "Valid", "the spec is valid");
    if (auto admitted = solver::parse_job_json(job_); !admitted) {
      past_limits_ = std::move(admitted).error().messages;
    }
    problem_ = std::move(*problem);
    spec_ = job_["spec"];
    queue_ = queue_name_of(job_);

    const std::string phase = str(status_, "phase");
    if (phase == phases::kSucceeded || phase == phases::kFailed) {
      finished();
      return finish();
    }
    if (spec_.value("suspend", false)) {
      suspend();
      return finish();
    }
    if (!status_.contains("startedAt")) status_["startedAt"] = now_;
    if (!plan_and_run()) return finish();
    return finish();
  }

 private:
  // ---- outcomes -------------------------------------------------------------------------

  Decision finish() {
    // The progress token is for workers: made with the first of them (the executor creates it
    // before any pod), not for a job that waits or cannot run, which in a burst of thousands
    // of jobs would be that many writes ahead of the first plan.
    if (!progress_token_of(job_)) {
      const bool creates_pods =
          std::any_of(decision_.create.begin(), decision_.create.end(),
                      [](const json& o) { return o.value("kind", "") == "Pod"; });
      if (creates_pods || !view_.owned_pods.empty()) decision_.ensure_token_secret = true;
    }
    if (hold_status_) return std::move(decision_);
    if (pools_known_) remember_pool_figures();
    status_["observedGeneration"] = generation_;
    if (status_ != original_status_) decision_.status = status_;
    return std::move(decision_);
  }

  void condition(const char* type, bool value, const std::string& reason,
                 const std::string& message) {
    set_condition(status_, type, value, reason, message, generation_, now_);
  }

  void event(const char* type, const std::string& reason, const std::string& message) {
    decision_.events.push_back({type, reason, message});
  }

  void set_phase(const char* phase, const std::string& message) {
    status_["phase"] = phase;
    status_["message"] = message;
  }

  void delete_pods(bool only_running) {
    for (const auto& pod : view_.owned_pods) {
      if (is_terminating(pod)) continue;
      if (only_running && (pod_phase(pod) == "Succeeded" || pod_phase(pod) == "Failed")) continue;
      decision_.remove.push_back(
          {"Pod", str(pod["metadata"], "name"), str(pod["metadata"], "uid")});
    }
  }

  void invalid(const std::vector<std::string>& messages) {
    const std::string text = summarise(messages);
    const bool was_invalid = condition_status(status_, conditions::kValid) == false &&
                             status_.value("message", "") == "spec is invalid: " + text;
    condition(conditions::kValid, false, "InvalidSpec", text);
    condition(conditions::kRunning, false, "InvalidSpec",
              "no workers run while the spec is invalid");
    if (str(status_, "phase") != phases::kSucceeded && str(status_, "phase") != phases::kFailed) {
      set_phase(phases::kPending, "spec is invalid: " + text);
    }
    if (!was_invalid) event("Warning", "InvalidSpec", text);
    delete_pods(/*only_running=*/true);
    status_["replanRequested"] = true;  // the spec will change; plan again once it is valid
  }

  // The spec is past the solver's limits (limits.hpp), so no solve runs for it. Nothing is
  // deleted: a plan in force keeps running (`keeps_plan`), and the job plans once the spec is
  // brought within them.
  void past_solver_limits(bool keeps_plan) {
    const std::string text = "past the solver's limits: " + summarise(past_limits_);
    const std::string message =
        keeps_plan ? text + "; the plan in force runs on, a new plan waits for a spec within them"
                   : "cannot be planned: " + text;
    const bool already = condition_status(status_, conditions::kPlanned) == false &&
                         condition_message(status_, conditions::kPlanned) == message;
    condition(conditions::kPlanned, false, "PastSolverLimits", message);
    if (!keeps_plan) {
      set_phase(phases::kPending, message);
      condition(conditions::kRunning, false, "PastSolverLimits", message);
    }
    if (!already) event("Warning", "PastSolverLimits", message);
  }

  void finished() {
    delete_pods(/*only_running=*/true);
    auto ttl = spec_.find("ttlSecondsAfterFinished");
    if (ttl == spec_.end() || !ttl->is_number_integer()) return;
    const std::string finished_at = str(status_, "finishedAt");
    std::tm tm{};
    if (finished_at.empty() ||
        strptime(finished_at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) {
      return;
    }
    const auto done = std::chrono::system_clock::from_time_t(timegm(&tm));
    const auto expiry = done + std::chrono::seconds(ttl->get<long>());
    if (view_.now >= expiry) {
      decision_.delete_job = true;
    } else {
      decision_.requeue_after =
          std::chrono::duration_cast<std::chrono::seconds>(expiry - view_.now) +
          std::chrono::seconds(1);
    }
  }

  void suspend() {
    delete_pods(/*only_running=*/true);
    if (str(status_, "phase") != phases::kSuspended) {
      event("Normal", "Suspended", "workers stopped; the job resumes from its last checkpoint");
    }
    set_phase(phases::kSuspended, "suspended: workers stopped, progress kept");
    condition(conditions::kRunning, false, "Suspended", "spec.suspend is true");
    status_["replanRequested"] = true;  // capacity may differ on resume
  }

  void terminal(bool success, const std::string& reason, const std::string& message) {
    set_phase(success ? phases::kSucceeded : phases::kFailed, message);
    condition(conditions::kRunning, false, reason, message);
    condition(success ? conditions::kSucceeded : conditions::kFailed, true, reason, message);
    status_["finishedAt"] = now_;
    event(success ? "Normal" : "Warning", reason, message);
    delete_pods(/*only_running=*/true);
  }

  // ---- pools the plan names -----------------------------------------------------------------

  // Pools the plan in force names that discovery no longer finds (their nodes were deleted or
  // are not ready) come back from status.poolFigures with no GPUs.
  void add_vanished_pools(std::vector<solver::Pool>& pools) {
    auto plan = plan_from_json(status_);
    if (!plan) return;
    const json remembered = status_.value("poolFigures", json::object());
    for (const auto& phase : plan->phases) {
      const bool present = std::any_of(pools.begin(), pools.end(),
                                       [&](const solver::Pool& p) { return p.name == phase.pool; });
      if (present || !remembered.contains(phase.pool)) continue;
      if (auto pool = vanished_pool(phase.pool, remembered[phase.pool])) {
        pools.push_back(*pool);
        vanished_.insert(phase.pool);
      }
    }
    std::sort(pools.begin(), pools.end(),
              [](const solver::Pool& a, const solver::Pool& b) { return a.name < b.name; });
  }

  // Keeps the figures of the pools the plan in force names (and only those).
  void remember_pool_figures() {
    auto plan = plan_from_json(status_);
    if (!plan) {
      status_.erase("poolFigures");
      return;
    }
    json remembered = status_.value("poolFigures", json::object());
    json next = json::object();
    for (const auto& phase : plan->phases) {
      const int k = full_.pool_index(phase.pool);
      if (k >= 0 && vanished_.count(phase.pool) == 0) {
        next[phase.pool] = pool_figures(full_.pools[static_cast<std::size_t>(k)]);
      } else if (remembered.contains(phase.pool)) {
        next[phase.pool] = remembered[phase.pool];
      }
    }
    status_["poolFigures"] = next;
  }

  // ---- planning ---------------------------------------------------------------------------

  double seconds_now() const {
    return options_.seconds_now ? options_.seconds_now() : default_seconds_now();
  }

  // Solves `problem` and records the time spent.
  Expected<solver::SolveResult> timed_solve(const solver::Problem& problem) {
    // Every caller checks past_limits_ first; the solver's budget assumes a problem within them.
    assert(past_limits_.empty());
    const double start = seconds_now();
    // The solver stops at its next budget check when the controller stops: a solve abandoned
    // below does not run on to its end.
    solver::SolveOptions options = options_.solve;
    options.budget.stop = view_.stop;
    auto result = solve_unless_stopped(problem, options, view_.stop, options_.solve_function);
    const double took = seconds_now() - start;
    decision_.solve_seconds = std::max(0.0, decision_.solve_seconds) + took;
    if (result) {
      last_solve_seconds_ = took;
    }
    return result;
  }

  PlanRecord record_of(const solver::SolveResult& result, const solver::Problem& problem) const {
    PlanRecord r = to_record(result.plan, problem, result.figures);
    r.algorithm = solver::to_string(result.algorithm);
    r.solve_seconds = last_solve_seconds_;
    r.lower_bound = certified_bound(result);
    r.budget_limited = result.stopped != solver::BudgetStop::None;
    return r;
  }

  // The solver's lower bound on the cost of every plan of the problem it solved: DepL's
  // certificate, or OPT's own cost; none for EXP and FULL, which are not certified.
  static std::optional<double> certified_bound(const solver::SolveResult& result) {
    if (!result.feasible || (result.algorithm != solver::Algorithm::DepL &&
                             result.algorithm != solver::Algorithm::Opt)) {
      return std::nullopt;
    }
    return result.certificate.lower_bound;
  }

  void infeasible(const std::string& reason, bool running) {
    const bool already = condition_status(status_, conditions::kPlanned) == false &&
                         status_.value("message", "") == "no feasible plan: " + reason;
    condition(conditions::kPlanned, false, "Infeasible", reason);
    if (!running) {
      set_phase(phases::kPending, "no feasible plan: " + reason);
      condition(conditions::kRunning, false, "Infeasible", reason);
    }
    if (!already) event("Warning", "Infeasible", reason);
  }

  void adopt(PlanRecord record, const char* reason, int epoch) {
    const auto previous = plan_from_json(status_);
    record.revision = previous ? previous->revision + 1 : 1;
    std::string summary = fmt::format(
        "plan {}: {}; predicted cost {:.4g}, {:.0f} s, P(target) {:.4f}", record.revision,
        short_plan(record), record.cost, record.duration_seconds, record.probability);
    if (record.lower_bound && record.cost > 0) {
      summary += fmt::format("; within {:.2f}% of the least possible cost",
                             100 * (record.cost - *record.lower_bound) / record.cost);
    }
    if (record.budget_limited)
      summary += "; the solve's budget ran out: the best plan found by then";
    status_["plan"] = to_json(record);
    status_["plannedAtEpoch"] = epoch;
    status_.erase("replanRequested");
    condition(conditions::kPlanned, true, reason, summary);
    event("Normal", reason, summary);
    decision_.replanned = true;
  }

  // Plans (or re-plans) when needed, then drives the running phase. Returns false when the job
  // cannot run now.
  bool plan_and_run() {
    if (!status_.contains("plan") && !view_.unplanned_earlier_job.empty()) {
      // Placement across jobs follows creation order: planning now would count GPUs the
      // earlier job is about to claim. The message does not name that job: it changes with
      // every job placed, and a thousand waiting jobs would each rewrite their status every
      // time. The controller wakes the next job as soon as one is placed; the requeue is a
      // fallback only (a short one would have every waiting job poll, O(jobs^2) work).
      if (!original_status_.contains("phase")) {
        // No status yet: none is written for a wait shorter than waiting_status_after.
        const auto created = kube::parse_rfc3339(str(job_["metadata"], "creationTimestamp"));
        const auto show_at = created ? *created + options_.waiting_status_after : view_.now;
        if (view_.now < show_at) {
          hold_status_ = true;
          decision_.requeue_after = std::chrono::ceil<std::chrono::seconds>(show_at - view_.now);
          return false;
        }
      }
      set_phase(phases::kPending, kWaitingForEarlierJobs);
      decision_.requeue_after = std::chrono::seconds(30);
      return false;
    }
    std::vector<solver::Pool> pools;
    DiscoveredPools found = discover_pools(view_.nodes, view_.gpus_in_use, view_.catalog,
                                           options_.pool_defaults, view_.reservations);
    pool_labels_ = found.pool_label;
    add_vanished_pools(found.pools);
    auto full = solver::combine(problem_, found.pools);
    if (!full) {
      infeasible(fmt::format("no node pool with free GPUs{}{}", found.notes.empty() ? "" : ": ",
                             summarise(found.notes)),
                 false);
      return false;
    }
    full_ = std::move(*full);
    pools_known_ = true;
    // Time spent waiting for admission counts against the deadline: the plans fit in what is
    // left of it.
    if (full_.target.deadline_seconds) {
      const double queued = queued_seconds(queue_from_json(status_), view_.now);
      if (queued > 0) {
        full_.target.deadline_seconds = std::max(*full_.target.deadline_seconds - queued, 1e-3);
      }
    }

    ProgressRecord progress = progress_from_json(status_);
    std::optional<PlanRecord> plan = plan_from_json(status_);
    std::optional<solver::Plan> solver_plan;
    bool pool_lost = false;  // the running phase or a later one is on a pool that is gone
    if (plan) {
      auto mapped = to_solver_plan(*plan, full_);
      if (mapped) solver_plan = *mapped;
      const Position pos = position_of(*plan, progress);
      for (std::size_t i = pos.phase; i < plan->phases.size(); ++i) {
        const bool done = i == pos.phase && pos.done_in_phase >= plan->phases[i].epochs;
        if (!done && vanished_.count(plan->phases[i].pool) > 0) pool_lost = true;
      }
    }
    const bool spec_changed =
        status_.contains("observedGeneration") && status_["observedGeneration"] != generation_;
    const bool requested = status_.value("replanRequested", false);
    const bool running = plan && progress.epoch > 0;

    if (plan && solver_plan && progress.loss && *progress.loss <= full_.target.loss &&
        spec_.value("replan", "OnDeviation") == "OnDeviation" && !spec_changed) {
      // The observed loss meets the target: the cheapest continuation is none. The plan is cut
      // to what ran and the job ends now instead of paying for epochs it no longer needs.
      target_reached_early(*plan, *solver_plan, progress);
      return false;
    }

    const bool plan_needed = !plan || !solver_plan || spec_changed || requested || pool_lost;
    if (!past_limits_.empty()) {
      const bool keeps_plan = plan && solver_plan && !pool_lost;
      past_solver_limits(keeps_plan);
      return keeps_plan && run_phase();
    }
    if (plan_needed) {
      // A plan is needed: none yet, the spec changed, a pool it uses is gone, or asked for.
      if (!running || !solver_plan || pool_lost) {
        if (!replan_from_scratch(progress, plan)) return false;
      } else if (!replan_remaining(*plan, *solver_plan, progress, /*adopt_always=*/true)) {
        return false;
      }
    } else if (spec_.value("replan", "OnDeviation") == "OnDeviation" &&
               progress.epoch > status_.value("plannedAtEpoch", 0) && progress.loss) {
      replan_remaining(*plan, *solver_plan, progress, /*adopt_always=*/false);
    }
    return run_phase();
  }

  void target_reached_early(PlanRecord plan, const solver::Plan& solver_plan,
                            const ProgressRecord& progress) {
    const Position pos = position_of(plan, progress);
    update_spent(solver_plan, pos);
    const std::size_t ran = pos.phase + (pos.done_in_phase > 0 ? 1 : 0);
    const bool cut =
        ran < plan.phases.size() ||
        (ran > 0 && plan.phases[ran - 1].epochs != pos.done_in_phase && pos.done_in_phase > 0);
    if (cut) {
      plan.phases.resize(std::max<std::size_t>(ran, 1));
      if (pos.done_in_phase > 0) plan.phases[ran - 1].epochs = pos.done_in_phase;
      const ProgressRecord spent = progress_from_json(status_);
      plan.cost = spent.cost;
      plan.duration_seconds = spent.seconds;
      plan.loss_mean = *progress.loss;
      plan.loss_stddev = 0;
      plan.probability = 1;
      adopt(plan, "Replanned", progress.epoch);
    }
    terminal(true, "TargetReached",
             fmt::format("loss {:.4g} <= target {:.4g} after {} epochs", *progress.loss,
                         full_.target.loss, progress.epoch));
  }

  bool replan_from_scratch(const ProgressRecord& progress, const std::optional<PlanRecord>& old) {
    solver::Problem problem = full_;
    if (old && progress.epoch > 0) {
      // The plan in force names a pool that is gone: keep its data and continue from the
      // observed loss on what the cluster has now.
      std::vector<solver::Dataset> kept;
      for (const auto& name : old->datasets) {
        const int i = full_.dataset_index(name);
        if (i >= 0) kept.push_back(full_.datasets[static_cast<std::size_t>(i)]);
      }
      if (!kept.empty()) {
        problem.datasets = kept;
        problem.fixed_datasets = true;
      }
      const Position pos = position_of(*old, progress);
      const PhaseRecord& at = old->phases[pos.phase];
      problem.start = solver::StartState{at.model, "", progress.loss.value_or(0), 0.0};
      problem.training.max_epochs -= progress.epoch;
      if (problem.training.max_epochs < 1) {
        terminal(false, "TargetMissed", "the epoch horizon is used up");
        return false;
      }
    }
    auto result = timed_solve(problem);
    if (!result) {
      infeasible(result.error().message, false);
      return false;
    }
    if (!result->feasible) {
      infeasible(result->reason, false);
      return false;
    }
    PlanRecord record = record_of(*result, problem);
    if (old && progress.epoch > 0) {
      // Completed phases stay as run; the new plan continues after them.
      const Position pos = position_of(*old, progress);
      solver::Figures spent;
      if (auto mapped = to_solver_plan(*old, full_)) {
        solver::Problem scratch = full_;
        scratch.target.deadline_seconds.reset();
        scratch.target.budget.reset();
        spent = solver::evaluate(scratch, executed_prefix(*mapped, pos));
      }
      PlanRecord spliced = splice(*old, pos, spent, record);
      // The running phase's pool is gone: it ends where it is.
      adopt(spliced, "Replanned", progress.epoch);
    } else {
      adopt(record, "Planned", progress.epoch);
    }
    return true;
  }

  bool replan_remaining(const PlanRecord& plan, const solver::Plan& solver_plan,
                        const ProgressRecord& progress, bool adopt_always) {
    const Position pos = position_of(plan, progress);
    auto rest = remaining_problem(full_, solver_plan, pos, progress.loss);
    status_["plannedAtEpoch"] = progress.epoch;
    if (!rest) {
      if (adopt_always) infeasible(rest.error().message, true);
      return !adopt_always;
    }
    auto result = timed_solve(*rest);
    if (!result || !result->feasible) {
      const std::string why = result ? result->reason : result.error().message;
      if (adopt_always) {
        infeasible(why, true);
        return false;
      }
      // Keep the plan in force; say that the rest no longer meets the promise on its own.
      status_["message"] =
          fmt::format("re-plan at epoch {} found no feasible plan ({}); keeping plan {}",
                      progress.epoch, why, plan.revision);
      return true;
    }
    solver::Problem scratch = full_;
    scratch.target.deadline_seconds.reset();
    scratch.target.budget.reset();
    const solver::Figures spent = solver::evaluate(scratch, executed_prefix(solver_plan, pos));
    if (!adopt_always) {
      // Hysteresis: the plan in force, continued from the observed loss, is kept while it still
      // keeps the promise and the new plan is not clearly cheaper.
      const solver::Plan in_force = remainder_of(solver_plan, pos);
      if (!in_force.phases.empty()) {
        const solver::Figures kept = solver::evaluate(*rest, in_force);
        if (kept.feasible &&
            result->figures.cost >= kept.cost * (1.0 - options_.replan_min_savings)) {
          // The new solve's bound holds for every plan of the remaining problem, this one too.
          PlanRecord continued = to_record(in_force, *rest, kept);
          continued.lower_bound = certified_bound(*result);
          PlanRecord refreshed = splice(plan, pos, spent, continued);
          refreshed.revision = plan.revision;
          refreshed.algorithm = plan.algorithm;
          status_["plan"] = to_json(refreshed);
          return true;
        }
      }
    }
    PlanRecord next = splice(plan, pos, spent, record_of(*result, *rest));
    if (adopt_always || changes_course(plan, next, pos)) {
      adopt(next, "Replanned", progress.epoch);
    } else {
      // Same course: refresh the predicted figures only.
      next.revision = plan.revision;
      status_["plan"] = to_json(next);
    }
    return true;
  }

  // What is left of `plan` from `pos`, as a plan of the remaining problem (whose datasets are
  // the plan's, in order).
  static solver::Plan remainder_of(const solver::Plan& plan, const Position& pos) {
    solver::Plan rest;
    for (std::size_t i = 0; i < plan.datasets.size(); ++i) rest.datasets.push_back(i);
    for (std::size_t i = pos.phase; i < plan.phases.size(); ++i) {
      solver::Phase phase = plan.phases[i];
      if (i == pos.phase) phase.epochs -= pos.done_in_phase;
      if (phase.epochs > 0) rest.phases.push_back(phase);
    }
    return rest;
  }

  // ---- running ----------------------------------------------------------------------------

  bool run_phase() {
    PlanRecord plan = *plan_from_json(status_);
    ProgressRecord progress = progress_from_json(status_);
    auto mapped = to_solver_plan(plan, full_);
    if (!mapped) {
      status_["replanRequested"] = true;
      decision_.requeue_after = std::chrono::seconds(1);
      return false;
    }
    Position pos = position_of(plan, progress);
    const int stop_after = pos.phase_start_epoch + plan.phases[pos.phase].epochs;

    // Pods of other phases that still run are leftovers (a re-plan moved on): stop them first.
    // So are pods with this phase's number made for another plan (another pool or variant): they
    // hold the names this phase's pods need, and may wait for a pool that is gone.
    bool leftovers = false;
    std::vector<const json*> current;
    for (const auto& pod : view_.owned_pods) {
      const int phase = label_int(pod, kPhaseLabel);
      if (phase == static_cast<int>(pos.phase) && made_for(pod, plan.phases[pos.phase])) {
        current.push_back(&pod);
        continue;
      }
      if (phase == static_cast<int>(pos.phase)) {
        leftovers = true;
        if (!is_terminating(pod)) {
          decision_.remove.push_back(
              {"Pod", str(pod["metadata"], "name"), str(pod["metadata"], "uid")});
        }
        continue;
      }
      const std::string ph = pod_phase(pod);
      if (ph == "Succeeded" || ph == "Failed") continue;
      leftovers = true;
      if (!is_terminating(pod)) {
        decision_.remove.push_back(
            {"Pod", str(pod["metadata"], "name"), str(pod["metadata"], "uid")});
      }
    }
    for (const auto& svc : view_.owned_services) {
      if (label_int(svc, kPhaseLabel) != static_cast<int>(pos.phase) && !is_terminating(svc)) {
        decision_.remove.push_back(
            {"Service", str(svc["metadata"], "name"), str(svc["metadata"], "uid")});
      }
    }
    update_spent(*mapped, pos);
    if (leftovers) return true;

    const solver::Phase& phase = mapped->phases[pos.phase];
    progress.stop_after_epoch = stop_after;
    status_["progress"]["stopAfterEpoch"] = stop_after;
    status_["progress"]["phase"] = pos.phase;
    status_["progress"]["model"] = plan.phases[pos.phase].model;
    status_["progress"]["pool"] = plan.phases[pos.phase].pool;

    if (progress.epoch >= stop_after) {
      // The phase has done its epochs; finish it once its workers are gone. Running workers are
      // told to stop when they report; one that has not started (e.g. recreated just before its
      // node went away) never reports, so it is removed.
      bool busy = false;
      for (const json* pod : current) {
        const std::string ph = pod_phase(*pod);
        if (ph == "Succeeded" || ph == "Failed" || is_terminating(*pod)) continue;
        busy = true;
        if (ph == "Pending") {
          decision_.remove.push_back(
              {"Pod", str((*pod)["metadata"], "name"), str((*pod)["metadata"], "uid")});
        }
      }
      if (busy) return true;
      return advance(plan, progress, pos);
    }

    if (current.empty()) {
      start_round(plan, *mapped, progress, pos, stop_after - progress.epoch);
      return true;
    }

    int succeeded = 0, failed = 0, terminating = 0;
    for (const json* pod : current) {
      if (is_terminating(*pod)) {
        ++terminating;
        continue;
      }
      const std::string ph = pod_phase(*pod);
      if (ph == "Succeeded") ++succeeded;
      if (ph == "Failed") {
        ++failed;
        if (exit_code(*pod) == kExitProgressUnreachable) {
          count_unreachable(*pod);
        } else {
          count_failure(*pod);
        }
      }
    }
    if (terminating > 0) return true;  // wait until the old incarnations are gone
    const int limit = spec_.value("backoffLimit", 3);
    progress = progress_from_json(status_);
    if (failed > 0) {
      if (progress.failures > limit) {
        terminal(false, "BackoffLimitExceeded",
                 fmt::format("phase {} failed {} times (backoffLimit {})", pos.phase,
                             progress.failures, limit));
        return false;
      }
      if (const int rounds = unreachable_rounds(); rounds >= kMaxUnreachableRounds) {
        terminal(false, "ProgressUnreachable",
                 fmt::format("the workers of phase {} could not deliver a progress report to {} "
                             "in {} rounds in a row while the controller was running; check "
                             "--progress-advertise-url and the NetworkPolicies between the "
                             "job's namespace and the controller",
                             pos.phase, options_.progress_url, rounds));
        return false;
      }
      // Synchronous data-parallel ranks cannot continue without a peer: restart the phase
      // from the last checkpoint.
      for (const json* pod : current) {
        decision_.remove.push_back(
            {"Pod", str((*pod)["metadata"], "name"), str((*pod)["metadata"], "uid")});
      }
      return true;
    }
    if (succeeded == static_cast<int>(current.size()) && succeeded >= phase.workers) {
      // All workers exited 0 before the planned epochs: the plan grew after they started (or
      // they stopped early). Start another round of the same phase from the checkpoint.
      if (progress.round > limit + plan.phases[pos.phase].epochs) {
        terminal(
            false, "NoProgress",
            fmt::format("workers of phase {} keep exiting without reporting progress", pos.phase));
        return false;
      }
      for (const json* pod : current) {
        decision_.remove.push_back(
            {"Pod", str((*pod)["metadata"], "name"), str((*pod)["metadata"], "uid")});
      }
      decision_.needs_latest_job = true;
      return true;
    }
    // Running: make sure every rank exists (a rank may have been deleted by hand).
    std::vector<bool> present(static_cast<std::size_t>(phase.workers), false);
    for (const json* pod : current) {
      const int rank = label_int(*pod, kRankLabel);
      if (rank >= 0 && rank < phase.workers) present[static_cast<std::size_t>(rank)] = true;
    }
    const PhaseLaunch launch =
        launch_of(plan, *mapped, progress, pos, stop_after - progress.epoch, false);
    const std::size_t first_new = decision_.create.size();
    for (int rank = 0; rank < phase.workers; ++rank) {
      if (!present[static_cast<std::size_t>(rank)]) {
        decision_.create.push_back(build_worker_pod(launch, rank));
        decision_.needs_latest_job = true;  // it starts from the cached progress
      }
    }
    join_group(first_new, plan, pos, progress.round, phase.workers);
    note_admission(current, plan, progress, pos);
    return true;
  }

  // ---- admission through a queue (queue_admission.hpp) ------------------------------------

  // Puts the worker pods created from `first` on in the round's Kueue pod group.
  void join_group(std::size_t first, const PlanRecord& plan, const Position& pos, int round,
                  int workers) {
    if (queue_.empty()) return;
    const std::string group = pod_group_name(name_, plan.revision, pos.phase, round);
    for (std::size_t i = first; i < decision_.create.size(); ++i) {
      json& object = decision_.create[i];
      if (object.value("kind", "") == "Pod") join_pod_group(object, queue_, group, workers);
    }
  }

  // The round runs once no scheduling gate holds its workers; until then the job is Queued,
  // neither failed nor stuck, and the wait is recorded in status.queue.
  void note_admission(const std::vector<const json*>& current, const PlanRecord& plan,
                      const ProgressRecord& progress, const Position& pos) {
    std::string gates, created;  // of the earliest held pod: the wait started when it was made
    for (const json* pod : current) {
      std::string held = holding_gates(*pod);
      if (held.empty()) continue;
      const std::string made = str((*pod)["metadata"], "creationTimestamp");
      if (gates.empty() || (!made.empty() && made < created)) {
        gates = std::move(held);
        created = made;
      }
    }
    if (!gates.empty()) {
      wait_for_admission(gates, created, plan, progress, pos);
      return;
    }
    QueueRecord queue = queue_from_json(status_);
    if (!queue.since.empty()) {
      const double waited = queued_seconds(queue, view_.now) - queue.waited_seconds;
      queue.waited_seconds += waited;
      queue.since.clear();
      queue.replanned = false;
      status_["queue"] = to_json(queue);
      const std::string message =
          fmt::format("phase {} admitted after {:.0f}s waiting{}", pos.phase, waited,
                      queue_.empty() ? std::string() : " in queue " + queue_);
      condition(kQueued, false, "Admitted", message);
      condition(conditions::kRunning, true, "Admitted", message);
      event("Normal", "Admitted", message);
    }
    set_phase(phases::kRunning, running_message(plan, progress, pos));
  }

  void wait_for_admission(const std::string& gates, const std::string& created,
                          const PlanRecord& plan, const ProgressRecord& progress,
                          const Position& pos) {
    QueueRecord queue = queue_from_json(status_);
    const std::string by =
        queue_.empty() ? std::string("its scheduling gates") : fmt::format("queue {}", queue_);
    if (queue.since.empty()) {
      const auto made = kube::parse_rfc3339(created);
      queue.since = made && *made <= view_.now ? created : now_;
      event("Normal", "Queued",
            fmt::format("the workers of phase {} wait for admission by {} (held by {})", pos.phase,
                        by, gates));
    }
    const auto& rec = plan.phases[pos.phase];
    set_phase(kQueued, fmt::format("phase {}/{}: {} on {} ({} workers), epoch {}: waiting for "
                                   "admission by {} since {}",
                                   pos.phase + 1, plan.phases.size(), rec.model, rec.pool,
                                   rec.workers, progress.epoch, by, queue.since));
    const std::string held = fmt::format("held by {} since {}", gates, queue.since);
    condition(kQueued, true, "WaitingForAdmission", held);
    condition(conditions::kRunning, false, "Queued", held);
    // The wait counts against the deadline: once the time waited and the plan's predicted
    // duration no longer fit in it, the plan is made again (once per wait) with the time left.
    const double waited = queued_seconds(queue, view_.now);
    const auto left = seconds_until_wait_threatens_deadline(problem_.target.deadline_seconds,
                                                            plan.duration_seconds, waited);
    if (left && *left <= 0 && !queue.replanned) {
      queue.replanned = true;
      status_["replanRequested"] = true;
      event("Warning", "QueueDelay",
            fmt::format("phase {} has waited {:.0f}s for admission by {}; with the plan's {:.0f}s "
                        "it would miss the deadline of {:.0f}s: planning again for the time left",
                        pos.phase, waited, by, plan.duration_seconds,
                        *problem_.target.deadline_seconds));
      decision_.requeue_after = std::chrono::seconds(0);
    } else if (left && *left > 0) {
      const auto until = std::chrono::seconds(static_cast<long>(std::ceil(*left)));
      if (!decision_.requeue_after || *decision_.requeue_after > until) {
        decision_.requeue_after = until;
      }
    }
    status_["queue"] = to_json(queue);
  }

  // Whether a pod was made for `phase` of the plan in force: same pool (annotation) and variant
  // (DEPL_MODEL). Pods without these marks are taken as matching.
  static bool made_for(const json& pod, const PhaseRecord& phase) {
    const json& annotations = pod["metadata"].value("annotations", json::object());
    const std::string pool = str(annotations, "depl.dev/pool");
    if (!pool.empty() && pool != phase.pool) return false;
    const json& containers = pod.value("spec", json::object()).value("containers", json::array());
    if (containers.empty() || !containers[0].is_object()) return true;
    for (const auto& e : containers[0].value("env", json::array())) {
      if (e.is_object() && e.value("name", "") == "DEPL_MODEL" && e.contains("value"))
        return e["value"] == phase.model;
    }
    return true;
  }

  void count_failure(const json& pod) {
    const std::string uid = str(pod["metadata"], "uid");
    json& counted = status_["failedPods"];
    if (!counted.is_array()) counted = json::array();
    for (const auto& u : counted) {
      if (u == uid) return;
    }
    counted.push_back(uid);
    while (counted.size() > kMaxCountedFailures) counted.erase(counted.begin());
    const int failures = status_["progress"].value("failures", 0) + 1;
    status_["progress"]["failures"] = failures;
    std::string detail;
    const json& statuses = pod["status"].value("containerStatuses", json::array());
    for (const auto& cs : statuses) {
      const json& term = cs.value("state", json::object()).value("terminated", json::object());
      if (term.contains("exitCode"))
        detail = fmt::format(" (exit code {})", term["exitCode"].dump());
    }
    event("Warning", "WorkerFailed",
          fmt::format("pod {} failed{}; restarting the phase from its checkpoint (failure {} of "
                      "backoffLimit {})",
                      str(pod["metadata"], "name"), detail, failures,
                      spec_.value("backoffLimit", 3)));
  }

  // The exit code of the pod's worker container, or -1 when it has none.
  static int exit_code(const json& pod) {
    auto status = pod.find("status");
    if (status == pod.end() || !status->is_object()) return -1;
    for (const auto& cs : status->value("containerStatuses", json::array())) {
      const json& term = cs.value("state", json::object()).value("terminated", json::object());
      if (auto code = term.find("exitCode"); code != term.end() && code->is_number_integer())
        return code->get<int>();
    }
    return -1;
  }

  // status.progress.unreachable: {rounds, epoch, round}, the rounds in a row (at the same
  // recorded epoch) whose workers exited kExitProgressUnreachable.
  int unreachable_rounds() const {
    const json& progress = status_.value("progress", json::object());
    const json& u = progress.value("unreachable", json::object());
    if (!u.is_object() || u.value("epoch", -1) != progress.value("epoch", 0)) return 0;
    return u.value("rounds", 0);
  }

  // A worker that could not reach the progress endpoint restarts the phase like a failure, but is
  // not counted against backoffLimit: once per round, in a row while no epoch is recorded.
  void count_unreachable(const json& pod) {
    const std::string uid = str(pod["metadata"], "uid");
    json& counted = status_["failedPods"];
    if (!counted.is_array()) counted = json::array();
    for (const auto& u : counted) {
      if (u == uid) return;
    }
    counted.push_back(uid);
    while (counted.size() > kMaxCountedFailures) counted.erase(counted.begin());
    json& progress = status_["progress"];
    const int round = progress.value("round", 0);
    json& u = progress["unreachable"];
    if (!u.is_object()) u = json::object();
    if (u.value("round", -1) == round && u.value("epoch", -1) == progress.value("epoch", 0))
      return;  // another rank of a round already counted
    const int rounds = unreachable_rounds() + 1;
    u = json{{"rounds", rounds}, {"epoch", progress.value("epoch", 0)}, {"round", round}};
    event("Warning", "ProgressUnreachable",
          fmt::format("pod {} exited {}: it could not deliver a progress report within its retry "
                      "deadline; restarting the phase from its checkpoint, not counted as a "
                      "failure ({} of {} such rounds in a row)",
                      str(pod["metadata"], "name"), kExitProgressUnreachable, rounds,
                      kMaxUnreachableRounds));
  }

  PhaseLaunch launch_of(const PlanRecord& plan, const solver::Plan& mapped,
                        const ProgressRecord& progress, const Position& pos, int epochs, bool) {
    solver_plan_for_launch_ = mapped;
    PhaseLaunch l;
    l.job = &job_;
    l.problem = &full_;
    l.plan = &solver_plan_for_launch_;
    l.phase = pos.phase;
    l.start_epoch = progress.epoch;
    l.epochs = std::max(1, epochs);
    auto label = pool_labels_.find(plan.phases[pos.phase].pool);
    l.pool_label = label != pool_labels_.end() ? label->second : "depl.dev/pool";
    l.progress_url = options_.progress_url;
    l.checkpoint_root = options_.checkpoint_root;
    const auto token = progress_token_of(job_);
    l.token_secret = token ? token->secret : view_.new_token_secret;
    l.rendezvous = options_.rendezvous;
    return l;
  }

  void start_round(const PlanRecord& plan, const solver::Plan& mapped,
                   const ProgressRecord& progress, const Position& pos, int epochs) {
    const PhaseLaunch launch = launch_of(plan, mapped, progress, pos, epochs, true);
    const solver::Phase& phase = mapped.phases[pos.phase];
    bool has_service = false;
    for (const auto& svc : view_.owned_services) {
      has_service = has_service || label_int(svc, kPhaseLabel) == static_cast<int>(pos.phase);
    }
    if (!has_service) decision_.create.push_back(build_rendezvous_service(launch));
    const std::size_t first_pod = decision_.create.size();
    for (int rank = 0; rank < phase.workers; ++rank)
      decision_.create.push_back(build_worker_pod(launch, rank));
    const auto& rec = plan.phases[pos.phase];
    const auto& refused = view_.round_without_pods;
    const bool started_already = refused && refused->phase == static_cast<int>(pos.phase) &&
                                 refused->round == progress.round && progress.round > 0;
    join_group(first_pod, plan, pos, started_already ? progress.round : progress.round + 1,
               phase.workers);
    if (!started_already) {
      status_["progress"]["round"] = progress.round + 1;
      event("Normal", "PhaseStarted",
            fmt::format("phase {}: {} on {} with {} workers, epochs {} to {}", pos.phase, rec.model,
                        rec.pool, rec.workers, progress.epoch + 1, progress.epoch + epochs));
    }
    set_phase(phases::kRunning, running_message(plan, progress, pos));
    condition(conditions::kRunning, true, "PhaseStarted",
              fmt::format("phase {} ({} on {})", pos.phase, rec.model, rec.pool));
  }

  bool advance(PlanRecord plan, ProgressRecord progress, const Position& pos) {
    // The phase ran what it ran: record reality, then move on.
    plan.phases[pos.phase].epochs = progress.epoch - pos.phase_start_epoch;
    if (pos.phase + 1 < plan.phases.size()) {
      status_["plan"]["phases"] = to_json(plan)["phases"];
      status_["progress"]["phase"] = pos.phase + 1;
      status_["progress"]["failures"] = 0;
      status_["progress"]["round"] = 0;
      event("Normal", "PhaseCompleted",
            fmt::format("phase {} ({}) completed at epoch {}", pos.phase,
                        plan.phases[pos.phase].model, progress.epoch));
      decision_.requeue_after = std::chrono::seconds(0);
      return true;
    }
    status_["plan"]["phases"] = to_json(plan)["phases"];
    const double target = full_.target.loss;
    if (progress.loss && *progress.loss <= target) {
      terminal(true, "TargetReached",
               fmt::format("loss {:.4g} <= target {:.4g} after {} epochs", *progress.loss, target,
                           progress.epoch));
      return false;
    }
    const std::string observed = progress.loss ? fmt::format("{:.4g}", *progress.loss) : "unknown";
    if (spec_.value("replan", "OnDeviation") == "OnDeviation" && !past_limits_.empty()) {
      // The plan is done but the target is not: the job waits, not fails, for a spec that can be
      // planned on.
      past_solver_limits(false);
      return false;
    }
    if (spec_.value("replan", "OnDeviation") == "OnDeviation") {
      auto mapped = to_solver_plan(plan, full_);
      Position end = position_of(plan, progress);
      end.done_in_phase = plan.phases[pos.phase].epochs;
      if (mapped) {
        auto rest = remaining_problem(full_, *mapped, end, progress.loss, /*pods_running=*/false);
        if (rest) {
          auto result = timed_solve(*rest);
          if (result && result->feasible) {
            solver::Problem scratch = full_;
            scratch.target.deadline_seconds.reset();
            scratch.target.budget.reset();
            const solver::Figures spent = solver::evaluate(scratch, executed_prefix(*mapped, end));
            PlanRecord more = record_of(*result, *rest);
            PlanRecord next = plan;
            for (const auto& p : more.phases) next.phases.push_back(p);
            next.cost = spent.cost + more.cost;
            next.duration_seconds = spent.duration_seconds + more.duration_seconds;
            next.loss_mean = more.loss_mean;
            next.loss_stddev = more.loss_stddev;
            next.probability = more.probability;
            adopt(next, "Replanned", progress.epoch);
            status_["progress"]["phase"] = pos.phase + 1;
            status_["progress"]["failures"] = 0;
            status_["progress"]["round"] = 0;
            decision_.requeue_after = std::chrono::seconds(0);
            return true;
          }
        }
      }
    }
    terminal(false, "TargetMissed",
             fmt::format("the plan ran out with loss {} above target {:.4g}", observed, target));
    return false;
  }

  void update_spent(const solver::Plan& mapped, const Position& pos) {
    solver::Problem scratch = full_;
    scratch.target.deadline_seconds.reset();
    scratch.target.budget.reset();
    const solver::Plan prefix = executed_prefix(mapped, pos);
    double cost = 0, seconds = 0;
    if (!prefix.phases.empty()) {
      const solver::Figures spent = solver::evaluate(scratch, prefix);
      cost = spent.cost;
      seconds = spent.duration_seconds;
    }
    // Never report less than before: status must not go backwards.
    const ProgressRecord before = progress_from_json(status_);
    status_["progress"]["cost"] = std::max(cost, before.cost);
    status_["progress"]["seconds"] = std::max(seconds, before.seconds);
  }

  std::string running_message(const PlanRecord& plan, const ProgressRecord& progress,
                              const Position& pos) const {
    const auto& rec = plan.phases[pos.phase];
    return fmt::format("phase {}/{}: {} on {} ({} workers), epoch {}{}", pos.phase + 1,
                       plan.phases.size(), rec.model, rec.pool, rec.workers, progress.epoch,
                       progress.loss ? fmt::format(", loss {:.4g}", *progress.loss) : "");
  }

  const JobView& view_;
  const DecideOptions& options_;
  const json& job_;
  json spec_ = json::object();
  json status_;
  json original_status_;
  long generation_ = 1;
  std::string now_;
  std::string name_;
  std::string queue_;  // the queue the workers are admitted through; "" for none
  solver::Problem problem_;
  std::vector<std::string> past_limits_;  // the spec's fields past the solver's limits
  solver::Problem full_;
  solver::Plan solver_plan_for_launch_;
  std::map<std::string, std::string> pool_labels_;
  std::set<std::string> vanished_;  // pools of the plan rebuilt from status.poolFigures
  bool pools_known_ = false;        // full_ holds the cluster's pools
  bool hold_status_ = false;        // a short wait for its turn: write no status
  double last_solve_seconds_ = 0;
  Decision decision_;
};

}  // namespace

std::string rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Decision decide(const JobView& view, const DecideOptions& options) {
  return Decider(view, options).run();
}

}  // namespace depl::controller
