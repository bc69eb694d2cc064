// The table view of `kubectl depl status` (status_view_to_table): headings with aligned values,
// then kubectl-style tables for the conditions, the plan's phases and the loss per epoch.
#include <fmt/format.h>
#include <algorithm>

#include "depl/cli/human_units.hpp"
#include "depl/cli/job_status_view.hpp"
#include "depl/cli/plan_report.hpp"
#include "depl/cli/text_table.hpp"

namespace depl::cli {

namespace {

// Losses, cost and P(target) read as in status.display (the printer columns).
using controller::display_cost;
using controller::display_loss;
using controller::display_probability;

std::string target_line(const solver::Target& t) {
  // The required probability as the user wrote it: {:.4g} printed 0.99999999 as 1.
  std::string out = fmt::format("loss {:.4g} with P >= {} ({})", t.loss, t.probability,
                                guarantee_name(t.guarantee));
  if (t.deadline_seconds) out += ", deadline " + format_duration(*t.deadline_seconds);
  if (t.budget) out += ", budget " + format_money(*t.budget);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void conditions_section(std::string& out, const JobStatusView& view) {
  if (view.conditions.empty()) return;
  out += "\nConditions:\n";
  TextTable table({"TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"});
  for (const auto& c : view.conditions) {
    table.add_row({c.type, c.status, c.reason, c.last_transition, c.message});
  }
  out += table.render(2);
}

void plan_section(std::string& out, const JobStatusView& view) {
  if (!view.plan) return;
  const controller::PlanRecord& plan = *view.plan;
  out += fmt::format("\nPlan (revision {}{}{}):\n", plan.revision,
                     plan.algorithm.empty() ? "" : ", " + plan.algorithm,
                     view.phase == "Running" ? "; * = the phase running now" : "");
  out += fmt::format("  datasets: {}\n", join(plan.datasets));
  TextTable table({"PHASE", "MODEL", "POOL", "WORKERS", "EPOCHS", "FROM EPOCH"});
  for (std::size_t column : {3u, 4u, 5u}) table.align(column, TextTable::Align::Right);
  int start = 0;
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const auto& p = plan.phases[i];
    const bool running = static_cast<int>(i) == view.progress.phase && view.phase == "Running";
    table.add_row({fmt::format("{}{}", i, running ? " *" : ""), p.model, p.pool,
                   std::to_string(p.workers), std::to_string(p.epochs), std::to_string(start)});
    start += p.epochs;
  }
  out += table.render(2);
  const std::string as_of = view.planned_at_epoch > 0 ? fmt::format(" (given the loss at epoch {})",
                                                                    view.planned_at_epoch)
                                                      : "";
  out += fmt::format("  predicted{}: cost {}, duration {}, final loss {} ± {}, P(target) {}\n",
                     as_of, display_cost(plan.cost), format_duration(plan.duration_seconds),
                     display_loss(plan.loss_mean), display_loss(plan.loss_stddev),
                     display_probability(plan.probability));
}

void progress_section(std::string& out, const JobStatusView& view) {
  const controller::ProgressRecord& p = view.progress;
  int planned = 0;
  if (view.plan) {
    for (const auto& ph : view.plan->phases) planned += ph.epochs;
  }
  out += fmt::format("\nProgress: phase {}{}, epoch {}{}, loss {}, cost so far {}, time so far {}",
                     p.phase, view.progress_model.empty() ? "" : " (" + view.progress_model + ")",
                     p.epoch, planned > 0 ? fmt::format(" of {}", planned) : "",
                     p.loss ? display_loss(*p.loss) : "-", display_cost(p.cost),
                     format_duration(p.seconds));
  if (p.failures > 0) out += fmt::format(", {} pod failure(s) in this phase", p.failures);
  if (p.preemptions > 0) {
    out += fmt::format(", {} preemption(s) costing {}", p.preemptions,
                       format_duration(p.lost_seconds));
  }
  out += "\n";
}

void epochs_section(std::string& out, const JobStatusView& view) {
  if (view.epochs.empty()) return;
  out +=
      "\nLoss per epoch (predicted: the evaluator on the plan in force, from epoch 0; observed: "
      "the workers' reports):\n";
  TextTable table({"EPOCH", "PHASE", "MODEL", "PREDICTED", "OBSERVED", "DEVIATION"});
  table.align(0, TextTable::Align::Right);
  table.align(4, TextTable::Align::Right);
  table.align(5, TextTable::Align::Right);
  for (const auto& e : view.epochs) {
    const std::string predicted = e.predicted_mean
                                      ? fmt::format("{} ± {}", display_loss(*e.predicted_mean),
                                                    display_loss(*e.predicted_stddev))
                                      : "-";
    table.add_row({std::to_string(e.epoch), e.phase ? std::to_string(*e.phase) : "-",
                   e.model.empty() ? "-" : e.model, predicted,
                   e.observed ? display_loss(*e.observed) : "-",
                   e.deviation ? fmt::format("{:+.1f} sd", *e.deviation) : "-"});
  }
  out += table.render(2);
}

}  // namespace

std::string status_view_to_table(const JobStatusView& view) {
  std::string out;
  out += fmt::format("Job:      {}/{}\n", view.namespace_, view.name);
  out += fmt::format("Phase:    {}\n", view.phase);
  if (!view.message.empty()) out += fmt::format("Message:  {}\n", view.message);
  if (view.target) out += fmt::format("Target:   {}\n", target_line(*view.target));
  if (!view.started_at.empty()) {
    out += fmt::format("Started:  {}{}\n", view.started_at,
                       view.finished_at.empty() ? "" : ", finished " + view.finished_at);
  }
  conditions_section(out, view);
  plan_section(out, view);
  progress_section(out, view);
  epochs_section(out, view);
  if (!view.notes.empty()) {
    out += "\nNotes:\n";
    for (const auto& n : view.notes) out += "  - " + n + "\n";
  }
  return out;
}

}  // namespace depl::cli
