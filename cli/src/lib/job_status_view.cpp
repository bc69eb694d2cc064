#include "depl/cli/job_status_view.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "depl/cli/plan_report.hpp"
#include "depl/common/json_fields.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/parse.hpp"

namespace depl::cli {

using nlohmann::json;

namespace {

std::vector<ConditionView> conditions_of(const json& status) {
  std::vector<ConditionView> out;
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return out;
  for (const json& c : *it) {
    if (!c.is_object()) continue;
    out.push_back({json_string(c, "type"), json_string(c, "status"), json_string(c, "reason"),
                   json_string(c, "message"), json_string(c, "lastTransitionTime")});
  }
  return out;
}

// The spec's Problem with one placeholder pool per pool the plan names: the predicted loss
// depends on models, datasets and switches only, never on pool figures.
solver::Problem problem_for_plan(solver::Problem problem, const controller::PlanRecord& plan) {
  problem.pools.clear();
  std::set<std::string> seen;
  for (const auto& phase : plan.phases) {
    if (!seen.insert(phase.pool).second) continue;
    solver::Pool pool;
    pool.name = phase.pool;
    problem.pools.push_back(std::move(pool));
  }
  return problem;
}

// The observed loss per epoch: the last report wins (a phase restarted after a failure reports
// its epochs again).
std::map<int, double> observed_by_epoch(const controller::ProgressRecord& progress) {
  std::map<int, double> out;
  for (const auto& h : progress.history) {
    if (h.epoch >= 1) out[h.epoch] = h.loss;
  }
  return out;
}

void add_epochs(JobStatusView& view) {
  const std::map<int, double> observed = observed_by_epoch(view.progress);
  std::vector<solver::LossPoint> trajectory;
  if (view.problem && view.solver_plan) {
    trajectory = solver::loss_trajectory(*view.problem, *view.solver_plan);
  }
  int planned_epochs = 0;
  std::vector<std::pair<int, std::size_t>> phase_ends;  // (last epoch, phase index)
  if (view.plan) {
    for (std::size_t i = 0; i < view.plan->phases.size(); ++i) {
      planned_epochs += view.plan->phases[i].epochs;
      phase_ends.emplace_back(planned_epochs, i);
    }
  }
  const int last_observed = observed.empty() ? 0 : observed.rbegin()->first;
  const int last = std::max(planned_epochs, last_observed);
  for (int epoch = 1; epoch <= last; ++epoch) {
    EpochView e;
    e.epoch = epoch;
    for (const auto& [end, phase] : phase_ends) {
      if (epoch <= end) {
        e.phase = phase;
        e.model = view.plan->phases[phase].model;
        break;
      }
    }
    if (static_cast<std::size_t>(epoch) < trajectory.size()) {
      const solver::LossPoint& point = trajectory[static_cast<std::size_t>(epoch)];
      e.predicted_mean = point.mean;
      e.predicted_stddev = std::sqrt(std::max(0.0, point.variance));
    }
    if (auto it = observed.find(epoch); it != observed.end()) {
      e.observed = it->second;
      if (e.predicted_mean && *e.predicted_stddev > 0) {
        e.deviation = (*e.observed - *e.predicted_mean) / *e.predicted_stddev;
      }
    }
    view.epochs.push_back(std::move(e));
  }
}

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

Expected<JobStatusView> build_status_view(const json& job) {
  if (!job.is_object() || !job.contains("metadata") || !job["metadata"].is_object()) {
    return error("not a Kubernetes object: metadata is missing");
  }
  if (const std::string kind = json_string(job, "kind"); kind != "DependableTrainingJob") {
    return error(fmt::format("kind: expected DependableTrainingJob, got \"{}\"", kind));
  }
  JobStatusView view;
  view.name = json_string(job["metadata"], "name");
  view.namespace_ = json_string(job["metadata"], "namespace");
  const json status =
      job.contains("status") && job["status"].is_object() ? job["status"] : json::object();
  view.phase = json_string(status, "phase");
  view.message = json_string(status, "message");
  view.started_at = json_string(status, "startedAt");
  view.finished_at = json_string(status, "finishedAt");
  if (view.phase.empty()) {
    view.phase = "Pending";
    if (status.empty()) view.notes.emplace_back("the controller has not written a status yet");
  }
  view.conditions = conditions_of(status);
  view.plan = controller::plan_from_json(status);
  if (auto it = status.find("plannedAtEpoch"); it != status.end() && it->is_number_integer()) {
    view.planned_at_epoch = it->get<int>();
  }
  view.progress = controller::progress_from_json(status);
  if (auto it = status.find("progress"); it != status.end() && it->is_object()) {
    view.progress_model = json_string(*it, "model");
  }

  // As the controller reads it: a job stored past the solver's limits still has its prediction.
  auto problem = solver::parse_job_json(job, solver::JobLimits::Stored);
  if (problem) {
    view.target = problem->target;
  } else {
    view.notes.push_back("no prediction: the spec does not validate: " + problem.error().joined());
  }
  if (!view.plan) {
    if (status.contains("plan")) {
      view.notes.emplace_back("status.plan cannot be read; the controller will re-plan");
    } else {
      view.notes.emplace_back("no plan yet");
    }
  } else if (problem) {
    solver::Problem with_pools = problem_for_plan(std::move(*problem), *view.plan);
    auto plan = controller::to_solver_plan(*view.plan, with_pools);
    if (plan) {
      // A phase cut before it trained (a re-plan at its first epoch) has 0 epochs: it adds
      // nothing to the trajectory, and the evaluator rejects empty phases.
      std::erase_if(plan->phases, [](const solver::Phase& p) { return p.epochs < 1; });
    }
    if (plan && plan->phases.empty()) {
      view.notes.emplace_back("no prediction: the plan has no epochs");
    } else if (plan) {
      view.problem = std::move(with_pools);
      view.solver_plan = std::move(*plan);
    } else {
      view.notes.push_back("no prediction: " + plan.error().message);
    }
  }
  add_epochs(view);
  return view;
}

json status_view_to_json(const JobStatusView& view) {
  json conditions = json::array();
  for (const auto& c : view.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", c.last_transition}});
  }
  json target = nullptr;
  if (view.target) {
    target = {{"loss", view.target->loss},
              {"probability", view.target->probability},
              {"guarantee", guarantee_name(view.target->guarantee)}};
    if (view.target->deadline_seconds) target["deadlineSeconds"] = *view.target->deadline_seconds;
    if (view.target->budget) target["budget"] = *view.target->budget;
  }
  json plan = nullptr;
  if (view.plan) {
    plan = controller::to_json(*view.plan);
    plan["plannedAtEpoch"] = view.planned_at_epoch;
    int start = 0;
    for (json& phase : plan["phases"]) {
      phase["startEpoch"] = start;
      start += phase.value("epochs", 0);
    }
  }
  const controller::ProgressRecord& p = view.progress;
  json progress = {{"phase", p.phase},
                   {"model", view.progress_model},
                   {"epoch", p.epoch},
                   {"loss", optional_number(p.loss)},
                   {"cost", p.cost},
                   {"seconds", p.seconds},
                   {"failures", p.failures},
                   {"round", p.round},
                   {"preemptions", p.preemptions},
                   {"lostSeconds", p.lost_seconds}};
  json epochs = json::array();
  for (const auto& e : view.epochs) {
    epochs.push_back({{"epoch", e.epoch},
                      {"phase", e.phase ? json(*e.phase) : json(nullptr)},
                      {"model", e.model},
                      {"predictedMean", optional_number(e.predicted_mean)},
                      {"predictedStddev", optional_number(e.predicted_stddev)},
                      {"observed", optional_number(e.observed)},
                      {"deviation", optional_number(e.deviation)}});
  }
  return json{{"name", view.name},
              {"namespace", view.namespace_},
              {"phase", view.phase},
              {"message", view.message},
              {"startedAt", view.started_at},
              {"finishedAt", view.finished_at},
              {"conditions", conditions},
              {"target", target},
              {"plan", plan},
              {"progress", progress},
              {"epochs", epochs},
              {"notes", view.notes}};
}

Expected<std::string> status_plot_svg(const JobStatusView& view, const LossPlotOptions& options) {
  if (!view.problem || !view.solver_plan || !view.plan) {
    return error(view.notes.empty() ? std::string("nothing to draw") : view.notes.front());
  }
  LossPlotOptions o = options;
  if (o.algorithm.empty()) o.algorithm = view.plan->algorithm;
  if (o.title.empty())
    o.title =
        fmt::format("{}/{}: predicted vs observed validation loss", view.namespace_, view.name);
  // The title shows the figures the controller recorded: the pools here are names only, so the
  // evaluator cannot cost the plan again.
  solver::Figures recorded;
  recorded.feasible = true;
  recorded.cost = view.plan->cost;
  recorded.duration_seconds = view.plan->duration_seconds;
  recorded.loss_mean = view.plan->loss_mean;
  recorded.loss_stddev = view.plan->loss_stddev;
  recorded.probability = view.plan->probability;
  recorded.kappa = solver::guarantee_kappa(view.problem->target);
  o.recorded = recorded;
  for (const auto& e : view.epochs) {
    if (e.observed) o.observed.push_back({e.epoch, *e.observed});
  }
  return loss_plot_svg(*view.problem, *view.solver_plan, o);
}

}  // namespace depl::cli
