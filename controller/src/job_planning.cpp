// Planning and re-planning: the job's turn at placement, the pools it may use, the first plan,
// a fresh plan when the spec or the cluster changed, and a plan for the rest of the job from the
// observed loss (on deviation, or when the plan ran out short of the target).
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "decision_state.hpp"
#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/interruption_rate.hpp"
#include "depl/controller/queue_admission.hpp"
#include "depl/controller/stoppable_solve.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/parse.hpp"

namespace depl::controller {
namespace {

constexpr const char* kWaitingForEarlierJobs =
    "waiting for jobs created earlier to be placed first (placement follows creation order)";

// Pools the plan in force names that discovery no longer finds (their nodes were deleted or are
// not ready) come back from status.poolFigures with no GPUs.
void add_vanished_pools(DecisionState& state, std::vector<solver::Pool>& pools) {
  const auto& plan = state.status.plan;
  if (!plan) return;
  for (const auto& phase : plan->phases) {
    const bool present = std::any_of(pools.begin(), pools.end(),
                                     [&](const solver::Pool& p) { return p.name == phase.pool; });
    auto remembered = state.status.pool_figures.find(phase.pool);
    if (present || remembered == state.status.pool_figures.end()) continue;
    if (auto pool = pool_from_figures(phase.pool, remembered->second)) {
      pools.push_back(*pool);
      state.vanished.insert(phase.pool);
    }
  }
  std::sort(pools.begin(), pools.end(),
            [](const solver::Pool& a, const solver::Pool& b) { return a.name < b.name; });
}

// A pool with interruptions where the job had preemptions is planned with the rate it observed
// there where that is higher than the stated one (interruption_rate.hpp). Pools rebuilt from
// status.poolFigures keep the rate they were planned with.
void plan_with_observed_rates(DecisionState& state, std::vector<solver::Pool>& pools) {
  for (auto& pool : pools) {
    auto observed = state.status.preemptions.find(pool.name);
    if (observed == state.status.preemptions.end()) continue;
    pool.interruptions_per_hour = planning_interruption_rate(
        pool.interruptions_per_hour, observed->second, state.options.interruption_prior_events);
  }
}

// The pools of the plan in force still to run, from the running phase on, whose rate has risen
// above the one the plan was priced with (status.poolFigures), as "pool: from -> to" texts.
std::vector<std::string> risen_rates(const DecisionState& state, const PlanRecord& plan) {
  std::vector<std::string> risen;
  const Position pos = position_of(plan, state.status.progress);
  for (std::size_t i = pos.phase; i < plan.phases.size(); ++i) {
    const std::string& name = plan.phases[i].pool;
    auto priced = state.status.pool_figures.find(name);
    const int k = state.full.pool_index(name);
    if (priced == state.status.pool_figures.end() || k < 0) continue;
    const double was = priced->second.interruptions_per_hour;
    const double is = state.full.pools[static_cast<std::size_t>(k)].interruptions_per_hour;
    const std::string text = fmt::format("{}: {:.3g} -> {:.3g} per worker-hour", name, was, is);
    if (is > was * (1 + 1e-9) && std::find(risen.begin(), risen.end(), text) == risen.end()) {
      risen.push_back(text);
    }
  }
  return risen;
}

// Solves `problem` and records the time spent.
Expected<solver::SolveResult> timed_solve(DecisionState& state, const solver::Problem& problem) {
  // Every caller checks past_limits first; solve() itself refuses a problem past the solver's
  // limits, whose budget holds only within them.
  const double start = state.seconds_now();
  // The solver stops at its next budget check when the controller stops: a solve abandoned
  // below does not run on to its end.
  solver::SolveOptions options = state.options.solve;
  options.budget.stop = state.view.stop;
  auto result =
      solve_unless_stopped(problem, options, state.view.stop, state.options.solve_function);
  const double took = state.seconds_now() - start;
  state.decision.solve_seconds = std::max(0.0, state.decision.solve_seconds) + took;
  if (result) state.last_solve_seconds = took;
  return result;
}

// The solver's lower bound on the cost of every plan of the problem it solved: DepL's
// certificate, or OPT's own cost; none for EXP and FULL, which are not certified.
std::optional<double> certified_bound(const solver::SolveResult& result) {
  if (!result.feasible ||
      (result.algorithm != solver::Algorithm::DepL && result.algorithm != solver::Algorithm::Opt)) {
    return std::nullopt;
  }
  return result.certificate.lower_bound;
}

PlanRecord record_of(const DecisionState& state, const solver::SolveResult& result,
                     const solver::Problem& problem) {
  PlanRecord r = to_record(result.plan, problem, result.figures);
  r.algorithm = solver::to_string(result.algorithm);
  r.solve_seconds = state.last_solve_seconds;
  r.lower_bound = certified_bound(result);
  r.budget_limited = result.stopped != solver::BudgetStop::None;
  return r;
}

void infeasible(DecisionState& state, const std::string& reason, bool running) {
  const bool already = state.status.condition_is(conditions::kPlanned) == false &&
                       state.status.message == "no feasible plan: " + reason;
  state.condition(conditions::kPlanned, false, "Infeasible", reason);
  if (!running) {
    state.set_phase(phases::kPending, "no feasible plan: " + reason);
    state.condition(conditions::kRunning, false, "Infeasible", reason);
  }
  if (!already) state.event("Warning", "Infeasible", reason);
}

// Puts `record` in force (a new revision), with a Planned or Replanned condition and Event.
void adopt(DecisionState& state, PlanRecord record, const char* reason, int epoch) {
  JobStatus& status = state.status;
  record.revision = status.plan ? status.plan->revision + 1 : 1;
  std::string summary =
      fmt::format("plan {}: {}; predicted cost {:.4g}, {:.0f} s, P(target) {:.4f}", record.revision,
                  short_plan(record), record.cost, record.duration_seconds, record.probability);
  if (record.lower_bound && record.cost > 0) {
    // The certificate bounds the least possible cost from below; the gap is the share of this
    // plan's cost the bound leaves unexplained (status.plan.predicted.gap), not how much dearer
    // than the cheapest plan this one is.
    summary += fmt::format(
        "; the least possible cost is at least {:.4g} (certified gap {:.2f}% "
        "of this plan's cost)",
        *record.lower_bound, 100 * (record.cost - *record.lower_bound) / record.cost);
  }
  if (record.budget_limited) summary += "; the solve's budget ran out: the best plan found by then";
  status.plan = std::move(record);
  status.planned_at_epoch = epoch;
  status.replan_requested = false;
  state.condition(conditions::kPlanned, true, reason, summary);
  state.event("Normal", reason, summary);
  state.decision.replanned = true;
}

// What is left of `plan` from `pos`, as a plan of the remaining problem (whose datasets are the
// plan's, in order).
solver::Plan remainder_of(const solver::Plan& plan, const Position& pos) {
  solver::Plan rest;
  for (std::size_t i = 0; i < plan.datasets.size(); ++i) rest.datasets.push_back(i);
  for (std::size_t i = pos.phase; i < plan.phases.size(); ++i) {
    solver::Phase phase = plan.phases[i];
    if (i == pos.phase) phase.epochs -= pos.done_in_phase;
    if (phase.epochs > 0) rest.phases.push_back(phase);
  }
  return rest;
}

// The observed loss meets the target: the cheapest continuation is none. The plan is cut to what
// ran and the job ends now instead of paying for epochs it no longer needs.
void end_at_target(DecisionState& state, PlanRecord plan, const solver::Plan& solver_plan) {
  const ProgressRecord& progress = state.status.progress;
  const Position pos = position_of(plan, progress);
  record_spent(state, solver_plan, pos);
  const std::size_t ran = pos.phase + (pos.done_in_phase > 0 ? 1 : 0);
  const bool cut =
      ran < plan.phases.size() ||
      (ran > 0 && plan.phases[ran - 1].epochs != pos.done_in_phase && pos.done_in_phase > 0);
  if (cut) {
    plan.phases.resize(std::max<std::size_t>(ran, 1));
    if (pos.done_in_phase > 0) plan.phases[ran - 1].epochs = pos.done_in_phase;
    plan.cost = progress.cost;
    plan.duration_seconds = progress.seconds;
    plan.loss_mean = *progress.loss;
    plan.loss_stddev = 0;
    plan.probability = 1;
    adopt(state, plan, "Replanned", progress.epoch);
  }
  end_job(state, true, "TargetReached",
          fmt::format("loss {:.4g} <= target {:.4g} after {} epochs", *progress.loss,
                      state.full.target.loss, progress.epoch));
}

// A plan from what the cluster has now: the first one, or (`old` given and epochs run) one that
// continues from the observed loss on the data the job trains on after a pool of the plan in force
// went away. False when there is none.
bool plan_afresh(DecisionState& state, const std::optional<PlanRecord>& old) {
  const ProgressRecord& progress = state.status.progress;
  const bool continues = old && progress.epoch > 0;
  solver::Problem problem = state.full;
  if (continues) {
    std::vector<solver::Dataset> kept;
    for (const auto& name : old->datasets) {
      const int i = state.full.dataset_index(name);
      if (i >= 0) kept.push_back(state.full.datasets[static_cast<std::size_t>(i)]);
    }
    if (!kept.empty()) {
      problem.datasets = kept;
      problem.fixed_datasets = true;
    }
    const Position pos = position_of(*old, progress);
    const PhaseRecord& at = old->phases[pos.phase];
    const int running = state.full.model_index(at.model);
    const double loss = progress.loss.value_or(0);
    const solver::LossState from =
        running < 0 ? solver::LossState{loss, 0.0}
                    : solver::observed_loss_state(
                          state.full.models[static_cast<std::size_t>(running)].loss, loss);
    problem.start = solver::StartState{at.model, "", from.mean, from.variance};
    problem.training.max_epochs -= progress.epoch;
    if (problem.training.max_epochs < 1) {
      end_job(state, false, "TargetMissed", "the epoch horizon is used up");
      return false;
    }
  }
  auto result = timed_solve(state, problem);
  if (!result || !result->feasible) {
    infeasible(state, result ? result->reason : result.error().message, false);
    return false;
  }
  PlanRecord record = record_of(state, *result, problem);
  if (!continues) {
    adopt(state, record, "Planned", progress.epoch);
    return true;
  }
  // Completed phases stay as run; the running phase's pool is gone, so it ends where it is and
  // the new plan continues after it.
  const Position pos = position_of(*old, progress);
  solver::Figures spent;
  if (auto mapped = to_solver_plan(*old, state.full)) {
    spent = spent_so_far(state.full, *mapped, pos);
  }
  adopt(state, splice(*old, pos, spent, record), "Replanned", progress.epoch);
  return true;
}

// A plan for the rest of the job from the observed loss. `adopt_always`: the plan in force must
// change (the spec changed, or a re-plan was asked for); false when no plan can be made then.
// Otherwise (a re-plan on deviation) the plan in force is kept while it still keeps the promise
// and the new one is not clearly cheaper, and the job goes on whatever the solver finds.
bool replan_rest(DecisionState& state, const PlanRecord& plan, const solver::Plan& solver_plan,
                 bool adopt_always) {
  JobStatus& status = state.status;
  const ProgressRecord& progress = status.progress;
  const Position pos = position_of(plan, progress);
  auto rest = remaining_problem(state.full, solver_plan, pos, progress.loss);
  status.planned_at_epoch = progress.epoch;
  if (!rest) {
    if (adopt_always) infeasible(state, rest.error().message, true);
    return !adopt_always;
  }
  auto result = timed_solve(state, *rest);
  if (!result || !result->feasible) {
    const std::string why = result ? result->reason : result.error().message;
    if (adopt_always) {
      infeasible(state, why, true);
      return false;
    }
    // Keep the plan in force; say that the rest no longer meets the promise on its own.
    status.message = fmt::format("re-plan at epoch {} found no feasible plan ({}); keeping plan {}",
                                 progress.epoch, why, plan.revision);
    return true;
  }
  const solver::Figures spent = spent_so_far(state.full, solver_plan, pos);
  if (!adopt_always) {
    // Hysteresis: the plan in force, continued from the observed loss, is kept while it still
    // keeps the promise and the new plan is not clearly cheaper.
    const solver::Plan in_force = remainder_of(solver_plan, pos);
    if (!in_force.phases.empty()) {
      const solver::Figures kept = solver::evaluate(*rest, in_force);
      if (kept.feasible &&
          result->figures.cost >= kept.cost * (1.0 - state.options.replan_min_savings)) {
        // The new solve's bound holds for every plan of the remaining problem, this one too.
        PlanRecord continued = to_record(in_force, *rest, kept);
        continued.lower_bound = certified_bound(*result);
        PlanRecord refreshed = splice(plan, pos, spent, continued);
        refreshed.revision = plan.revision;
        refreshed.algorithm = plan.algorithm;
        status.plan = refreshed;
        return true;
      }
    }
  }
  PlanRecord next = splice(plan, pos, spent, record_of(state, *result, *rest));
  if (adopt_always || changes_course(plan, next, pos)) {
    adopt(state, next, "Replanned", progress.epoch);
  } else {
    // Same course: refresh the predicted figures only.
    next.revision = plan.revision;
    status.plan = next;
  }
  return true;
}

// The seconds the job has waited for spot capacity in all: the earlier waits and the running one
// up to `now`.
double capacity_waited_seconds(const CapacityWaitRecord& wait,
                               std::chrono::system_clock::time_point now) {
  return wait.waited_seconds + (wait.since.empty() ? 0.0 : seconds_since(wait.since, now));
}

// Waiting for spot capacity. The running phase's pool is a spot pool that discovery no longer
// finds (its nodes were reclaimed, or are tainted for reclaim or not Ready): the cloud's autoscaler
// (Karpenter, the cluster autoscaler, a managed node group) normally replaces reclaimed nodes
// within minutes, and planning without the pool at once would move the job off its cheapest
// capacity, or leave it Infeasible when that pool was all it could use. So the job waits for the
// pool while both hold:
// - the wait has lasted less than --spot-capacity-wait (DecideOptions::spot_capacity_wait);
// - with a deadline, the plan in force still fits in what is left of it: the time waited (for
//   spot capacity and for admission, which count against the deadline) plus the plan's
//   predicted duration is within the deadline.
// Meanwhile the job is Pending with Running=False (WaitingForSpotCapacity), status.capacityWait
// says since when and for which pool, and an Event tells of the wait once. Once the pool has a
// node the wait ends (SpotCapacityBack) and the round starts again there; once either bound is
// reached it ends too (SpotCapacityWaitOver) and the job is planned without the pool, as for any
// pool that is gone, once per wait (a job that then has no feasible plan is Infeasible until the
// pool comes back). `may_wait`: nothing else asks for a plan (the spec did not change, no re-plan
// was asked for). True while the job waits.
bool waits_for_spot_capacity(DecisionState& state, const PlanRecord& plan, bool may_wait) {
  JobStatus& status = state.status;
  if (plan.phases.empty()) return false;
  const Position pos = position_of(plan, status.progress);
  const PhaseRecord& phase = plan.phases[pos.phase];
  const bool missing = state.vanished.count(phase.pool) > 0 && pos.done_in_phase < phase.epochs;
  CapacityWaitRecord wait = status.capacity_wait.value_or(CapacityWaitRecord{});
  const auto now = state.view.now;
  // A wait that runs ends when the pool has nodes again or the phase runs elsewhere.
  if (!wait.since.empty() && (!missing || wait.pool != phase.pool)) {
    const double waited = seconds_since(wait.since, now);
    if (!missing && wait.pool == phase.pool) {
      state.event("Normal", "SpotCapacityBack",
                  fmt::format("pool {} has nodes again after {:.0f}s: phase {} resumes there from "
                              "epoch {}",
                              wait.pool, waited, pos.phase, status.progress.epoch));
    }
    wait.waited_seconds += waited;
    wait.since.clear();
  }
  if (!missing || wait.pool != phase.pool) {
    wait.replanned = false;
    if (wait.since.empty()) wait.pool.clear();
  }
  if (status.capacity_wait || !wait.pool.empty()) status.capacity_wait = wait;
  if (!missing || !may_wait) return false;
  auto figures = status.pool_figures.find(phase.pool);
  if (figures == status.pool_figures.end() ||
      figures->second.capacity_type != solver::CapacityType::Spot) {
    return false;
  }
  if (wait.pool == phase.pool && wait.replanned) return false;  // planned without it already

  const double elapsed = wait.since.empty() ? 0.0 : seconds_since(wait.since, now);
  const auto most = static_cast<double>(state.options.spot_capacity_wait.count());
  double left = most - elapsed;
  std::string bound = fmt::format("at most {:.0f}s (--spot-capacity-wait)", most);
  // The deadline already has every wait so far taken from it (look_at_cluster).
  if (const auto& deadline = state.full.target.deadline_seconds) {
    const double slack = *deadline - plan.duration_seconds;
    if (slack < left) {
      left = slack;
      bound = fmt::format("the deadline's slack: {:.0f}s left of it for the plan's {:.0f}s",
                          *deadline, plan.duration_seconds);
    }
  }
  if (left <= 0) {
    const double waited = wait.since.empty() ? 0.0 : elapsed;
    state.event("Warning", "SpotCapacityWaitOver",
                fmt::format("pool {} of phase {} has had no node for {:.0f}s ({}): planning "
                            "without it",
                            phase.pool, pos.phase, waited, bound));
    wait.pool = phase.pool;
    wait.waited_seconds += waited;
    wait.since.clear();
    wait.replanned = true;
    status.capacity_wait = wait;
    return false;
  }
  if (wait.since.empty()) {
    wait.pool = phase.pool;
    wait.since = state.now;
    state.event("Normal", "WaitingForSpotCapacity",
                fmt::format("pool {} of phase {} has no node (its spot capacity was reclaimed): "
                            "waiting up to {:.0f}s for it to come back ({}), then planning "
                            "without it",
                            phase.pool, pos.phase, left, bound));
  }
  status.capacity_wait = wait;
  const std::string why = fmt::format(
      "pool {} has no node since {}; waiting for it {:.0f}s more ({}), then planning "
      "without it",
      phase.pool, wait.since, left, bound);
  state.set_phase(phases::kPending,
                  fmt::format("phase {}/{}: {} on {} ({} workers), epoch {}: waiting for spot "
                              "capacity: {}",
                              pos.phase + 1, plan.phases.size(), phase.model, phase.pool,
                              phase.workers, status.progress.epoch, why));
  state.condition(conditions::kRunning, false, "WaitingForSpotCapacity", why);
  const auto until = std::chrono::seconds(static_cast<long>(std::ceil(left)));
  auto& requeue = state.decision.requeue_after;
  if (!requeue || *requeue > until) requeue = until;
  return true;
}

}  // namespace

bool waits_for_its_turn(DecisionState& state) {
  if (state.status.plan || state.view.unplanned_earlier_job.empty()) return false;
  // Placement across jobs follows creation order: planning now would count GPUs the earlier job
  // is about to claim. The message does not name that job: it changes with every job placed, and
  // a thousand waiting jobs would each rewrite their status every time. The controller wakes the
  // next job as soon as one is placed; the requeue is a fallback only (a short one would have
  // every waiting job poll, O(jobs^2) work).
  if (state.original.phase.empty()) {
    // No status yet: none is written for a wait shorter than waiting_status_after.
    const auto created =
        parse_rfc3339(json_string(json_member(state.job, "metadata"), "creationTimestamp"));
    const auto show_at = created ? *created + state.options.waiting_status_after : state.view.now;
    if (state.view.now < show_at) {
      state.hold_status = true;
      state.decision.requeue_after =
          std::chrono::ceil<std::chrono::seconds>(show_at - state.view.now);
      return true;
    }
  }
  state.set_phase(phases::kPending, kWaitingForEarlierJobs);
  state.decision.requeue_after = std::chrono::seconds(30);
  return true;
}

bool look_at_cluster(DecisionState& state) {
  const JobView& view = state.view;
  DiscoveredPools found = discover_pools(view.nodes, view.gpus_in_use, view.catalog,
                                         state.options.pool_defaults, view.reservations);
  state.pool_labels = found.pool_label;
  state.pool_tolerations = found.spot_tolerations;
  plan_with_observed_rates(state, found.pools);
  add_vanished_pools(state, found.pools);
  auto full = solver::combine(state.problem, found.pools);
  if (!full) {
    infeasible(state,
               fmt::format("no node pool with free GPUs{}{}", found.notes.empty() ? "" : ": ",
                           summarise(found.notes)),
               false);
    return false;
  }
  state.full = std::move(*full);
  state.pools_known = true;
  // Time spent waiting for admission or for spot capacity counts against the deadline: the plans
  // fit in what is left of it.
  if (auto& deadline = state.full.target.deadline_seconds) {
    double waited = 0;
    if (state.status.queue) waited += queued_seconds(*state.status.queue, view.now);
    if (state.status.capacity_wait) {
      waited += capacity_waited_seconds(*state.status.capacity_wait, view.now);
    }
    if (waited > 0) deadline = std::max(*deadline - waited, 1e-3);
  }
  return true;
}

bool plan_if_needed(DecisionState& state) {
  const JobStatus& status = state.status;
  const ProgressRecord& progress = status.progress;
  const std::optional<PlanRecord> plan = status.plan;
  std::optional<solver::Plan> solver_plan;
  bool pool_lost = false;  // the running phase or a later one is on a pool that is gone
  if (plan) {
    if (auto mapped = to_solver_plan(*plan, state.full)) solver_plan = *mapped;
    const Position pos = position_of(*plan, progress);
    for (std::size_t i = pos.phase; i < plan->phases.size(); ++i) {
      const bool done = i == pos.phase && pos.done_in_phase >= plan->phases[i].epochs;
      if (!done && state.vanished.count(plan->phases[i].pool) > 0) pool_lost = true;
    }
  }
  const bool spec_changed =
      status.observed_generation && *status.observed_generation != state.generation;
  const bool running = plan && progress.epoch > 0;

  // The first epoch at or below the target ends the job, whether or not it re-plans: the
  // promise is to reach the target (docs/depl-model.md section 2), and the epochs after it could
  // only cost more and, past the curve's bottom, lose the model that met it.
  if (plan && solver_plan && progress.loss && *progress.loss <= state.full.target.loss &&
      !spec_changed) {
    end_at_target(state, *plan, *solver_plan);
    return false;
  }
  if (!state.past_limits.empty()) {
    const bool keeps_plan = plan && solver_plan && !pool_lost;
    past_solver_limits(state, keeps_plan);
    return keeps_plan;
  }
  if (plan && solver_plan &&
      waits_for_spot_capacity(state, *plan, !spec_changed && !status.replan_requested)) {
    return false;
  }
  if (!plan || !solver_plan || spec_changed || status.replan_requested || pool_lost) {
    // A plan is needed: none yet, the spec changed, a pool it uses is gone, or asked for.
    if (!running || !solver_plan || pool_lost) return plan_afresh(state, plan);
    return replan_rest(state, *plan, *solver_plan, /*adopt_always=*/true);
  }
  if (state.replans_on_deviation() && progress.epoch > status.planned_at_epoch.value_or(0) &&
      progress.loss) {
    replan_rest(state, *plan, *solver_plan, /*adopt_always=*/false);
    return true;
  }
  if (const auto risen = risen_rates(state, *plan);
      !risen.empty() && state.replans_on_deviation()) {
    // A pool interrupts more than the plan was priced for: the plan in force is kept while it
    // keeps the promise at the observed rate, and the rest re-planned when it does not.
    state.event("Warning", "InterruptionRateRaised",
                fmt::format("preemptions above the stated rate; planning with the observed rate "
                            "({})",
                            summarise(risen)));
    if (running && progress.loss) {
      replan_rest(state, *plan, *solver_plan, /*adopt_always=*/false);
    } else if (!solver::evaluate(state.full, *solver_plan).feasible) {
      return plan_afresh(state, plan);
    }
  }
  return true;
}

void past_solver_limits(DecisionState& state, bool keeps_plan) {
  const std::string text = "past the solver's limits: " + summarise(state.past_limits);
  const std::string message =
      keeps_plan ? text + "; the plan in force runs on, a new plan waits for a spec within them"
                 : "cannot be planned: " + text;
  const Condition* planned = state.status.condition(conditions::kPlanned);
  const bool already =
      planned != nullptr && planned->status == "False" && planned->message == message;
  state.condition(conditions::kPlanned, false, "PastSolverLimits", message);
  if (!keeps_plan) {
    state.set_phase(phases::kPending, message);
    state.condition(conditions::kRunning, false, "PastSolverLimits", message);
  }
  if (!already) state.event("Warning", "PastSolverLimits", message);
}

bool extend_plan(DecisionState& state, const PlanRecord& plan, const Position& end) {
  if (!state.replans_on_deviation()) return false;
  const ProgressRecord& progress = state.status.progress;
  auto mapped = to_solver_plan(plan, state.full);
  if (!mapped) return false;
  auto rest = remaining_problem(state.full, *mapped, end, progress.loss, /*pods_running=*/false);
  if (!rest) return false;
  auto result = timed_solve(state, *rest);
  if (!result || !result->feasible) return false;
  const solver::Figures spent = spent_so_far(state.full, *mapped, end);
  PlanRecord more = record_of(state, *result, *rest);
  PlanRecord next = plan;
  for (const auto& p : more.phases) next.phases.push_back(p);
  next.cost = spent.cost + more.cost;
  next.duration_seconds = spent.duration_seconds + more.duration_seconds;
  next.loss_mean = more.loss_mean;
  next.loss_stddev = more.loss_stddev;
  next.probability = more.probability;
  adopt(state, next, "Replanned", progress.epoch);
  return true;
}

void record_spent(DecisionState& state, const solver::Plan& plan, const Position& position) {
  const solver::Figures spent = spent_so_far(state.full, plan, position);
  // Never report less than before: status must not go backwards.
  ProgressRecord& progress = state.status.progress;
  progress.cost = std::max(spent.cost, progress.cost);
  progress.seconds = std::max(spent.duration_seconds, progress.seconds);
}

}  // namespace depl::controller
