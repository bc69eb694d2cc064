// `kubectl depl status JOB`: a DependableTrainingJob as the controller left it, read for people
// and programs. Phase, conditions, the plan in force, progress, and predicted vs observed loss
// per epoch: observed from status.progress.history, predicted from the exact evaluator's
// trajectory (solver::loss_trajectory) of the plan in force on the job's spec.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/cli/loss_plot.hpp"
#include "depl/common/expected.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::cli {

struct ConditionView {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition;
};

// One epoch of the plan (or one observed past its end): what the plan predicted and what the
// workers reported.
struct EpochView {
  int epoch = 0;                     // global epoch number, 1-based
  std::optional<std::size_t> phase;  // plan phase the epoch belongs to (nullopt: past the plan)
  std::string model;
  std::optional<double> predicted_mean;  // nullopt when there is no prediction for it
  std::optional<double> predicted_stddev;
  std::optional<double> observed;   // last reported loss for this epoch, if any
  std::optional<double> deviation;  // (observed - mean) / stddev, when both exist and sd > 0
};

struct JobStatusView {
  std::string name;
  std::string namespace_;
  std::string phase;  // "Pending" when the controller has not written a status yet
  std::string message;
  std::string started_at;   // status.startedAt (RFC 3339), "" before the first phase
  std::string finished_at;  // status.finishedAt, "" while running
  std::vector<ConditionView> conditions;
  std::optional<solver::Target> target;  // from the spec (nullopt when the spec does not parse)
  std::optional<controller::PlanRecord> plan;
  int planned_at_epoch = 0;  // the epoch the plan's predicted figures are conditioned on
  controller::ProgressRecord progress;
  std::string progress_model;  // status.progress.model
  std::vector<EpochView> epochs;
  // Why part of the view is missing ("no plan yet", "the spec no longer names model x").
  std::vector<std::string> notes;
  // The prediction's inputs, for the plot: the spec's Problem (pools by name only: the loss does
  // not depend on them) and the plan in force against it.
  std::optional<solver::Problem> problem;
  std::optional<solver::Plan> solver_plan;
};

// Builds the view from the whole object (apiVersion, kind, metadata, spec, status). Never fails
// on a partial or odd status: what cannot be read is left out and explained in `notes`. Fails
// only when `job` is not a DependableTrainingJob object.
Expected<JobStatusView> build_status_view(const nlohmann::json& job);

// {"name","namespace","phase","message","startedAt","finishedAt","conditions":[...],"target":{...},"plan":{...}|null,
//  "progress":{...},"epochs":[{"epoch","phase","model","predictedMean","predictedStddev",
//  "observed","deviation"}],"notes":[...]}; documented in docs/cli.md.
nlohmann::json status_view_to_json(const JobStatusView& view);

// The table people read; ends with '\n'.
std::string status_view_to_table(const JobStatusView& view);

// The plan's predicted mean and guarantee band with the observed losses as points (the plot of
// `kubectl-depl plan --plot` plus observations). Fails when there is no prediction to draw.
Expected<std::string> status_plot_svg(const JobStatusView& view,
                                      const LossPlotOptions& options = {});

}  // namespace depl::cli
