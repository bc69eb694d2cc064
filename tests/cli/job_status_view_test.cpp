// The view of `kubectl depl status` on a status the controller wrote (tests/cli/data/
// job_status_running.json: the quickstart read back from the dev cluster at epoch 19 of 28 by
// `kubectl get dtj quickstart -o json` during `kubectl-depl demo`), and on partial or stale
// statuses. Predicted losses are checked against the model's formulas written out here, not
// against the evaluator the view calls.
#include "depl/cli/job_status_view.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "svg_check.hpp"

namespace depl::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json running_job() {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/tests/cli/data/job_status_running.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// The quickstart's loss model by hand (docs/depl-model.md section 2) on the plan's datasets
// curated (200000, q 1) and local-archive (100000, q 0.9); N_ref defaults to E of all datasets
// (web-crawl adds 150000 * 0.6).
struct HandModel {
  double e = 200000 + 100000 * 0.9;
  double n_ref = 200000 + 100000 * 0.9 + 150000 * 0.6;
  void step(double& mean, double& variance, double floor, double decay, double sigma) const {
    const double rho = std::pow(decay, e / n_ref);
    const double f = floor * std::pow(n_ref / e, 0.3);
    mean = f + (mean - f) * rho;
    variance = rho * rho * variance + sigma * sigma;
  }
};

TEST(JobStatusView, ReadsTheControllersStatus) {
  auto view = build_status_view(running_job());
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->name, "quickstart");
  EXPECT_EQ(view->namespace_, "default");
  EXPECT_EQ(view->phase, "Running");
  EXPECT_THAT(view->message, HasSubstr("epoch 19"));
  ASSERT_EQ(view->conditions.size(), 3u);
  EXPECT_EQ(view->conditions[1].type, "Planned");
  EXPECT_EQ(view->conditions[1].reason, "Planned");
  ASSERT_TRUE(view->target);
  EXPECT_DOUBLE_EQ(view->target->loss, 0.45);
  ASSERT_TRUE(view->plan);
  ASSERT_EQ(view->plan->phases.size(), 2u);
  EXPECT_EQ(view->plan->phases[0].model, "small");
  EXPECT_EQ(view->plan->phases[1].epochs, 12);
  EXPECT_EQ(view->plan->revision, 1);
  EXPECT_EQ(view->planned_at_epoch, 19);
  EXPECT_EQ(view->progress.epoch, 19);
  EXPECT_EQ(view->progress_model, "full");
  EXPECT_TRUE(view->notes.empty());
}

TEST(JobStatusView, PredictedLossFollowsTheModelAndObservedComesFromHistory) {
  const json job = running_job();
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->epochs.size(), 28u);  // 16 small + 12 full
  const HandModel model;
  double mean = 2.3;
  double variance = 0;
  for (int epoch = 1; epoch <= 28; ++epoch) {
    if (epoch == 17) {  // switch small -> full: jump 0.05 +- 0.02
      mean += 0.05;
      variance += 0.02 * 0.02;
    }
    if (epoch <= 16) {
      model.step(mean, variance, 0.6, 0.8, 0.02);
    } else {
      model.step(mean, variance, 0.25, 0.85, 0.02);
    }
    const EpochView& e = view->epochs[static_cast<std::size_t>(epoch - 1)];
    EXPECT_EQ(e.epoch, epoch);
    ASSERT_TRUE(e.phase);
    EXPECT_EQ(*e.phase, epoch <= 16 ? 0u : 1u);
    EXPECT_EQ(e.model, epoch <= 16 ? "small" : "full");
    ASSERT_TRUE(e.predicted_mean) << epoch;
    EXPECT_NEAR(*e.predicted_mean, mean, 1e-12) << epoch;
    EXPECT_NEAR(*e.predicted_stddev, std::sqrt(variance), 1e-12) << epoch;
  }
  const json& history = job["status"]["progress"]["history"];
  for (const json& h : history) {
    const EpochView& e = view->epochs[static_cast<std::size_t>(h["epoch"].get<int>() - 1)];
    ASSERT_TRUE(e.observed);
    EXPECT_DOUBLE_EQ(*e.observed, h["loss"].get<double>());
    ASSERT_TRUE(e.deviation);
    EXPECT_NEAR(*e.deviation, (*e.observed - *e.predicted_mean) / *e.predicted_stddev, 1e-12);
  }
  EXPECT_FALSE(view->epochs[19].observed);  // epoch 20 has not run yet
  EXPECT_FALSE(view->epochs[19].deviation);
}

TEST(JobStatusView, ALaterReportOfTheSameEpochWins) {
  json job = running_job();
  job["status"]["progress"]["history"].push_back({{"epoch", 19}, {"phase", 1}, {"loss", 0.61}});
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  EXPECT_DOUBLE_EQ(*view->epochs[18].observed, 0.61);
}

TEST(JobStatusView, ObservedEpochsPastThePlanAreListed) {
  json job = running_job();
  job["status"]["progress"]["history"].push_back({{"epoch", 30}, {"phase", 1}, {"loss", 0.41}});
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->epochs.size(), 30u);
  EXPECT_FALSE(view->epochs[29].phase);
  EXPECT_FALSE(view->epochs[29].predicted_mean);
  EXPECT_DOUBLE_EQ(*view->epochs[29].observed, 0.41);
}

TEST(JobStatusView, APhaseCutBeforeItTrainedIsSkipped) {
  json job = running_job();
  json& phases = job["status"]["plan"]["phases"];
  const json cut = {{"model", "medium"}, {"epochs", 0}, {"pool", "t4"}, {"workers", 2}};
  phases.insert(phases.begin() + 1, cut);
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  ASSERT_EQ(view->epochs.size(), 28u);
  EXPECT_TRUE(view->notes.empty()) << view->notes.front();
  EXPECT_EQ(view->epochs[16].model, "full");
  EXPECT_EQ(*view->epochs[16].phase, 2u);
  // Same prediction as without the empty phase: small -> full, not via medium.
  auto plain = build_status_view(running_job());
  EXPECT_DOUBLE_EQ(*view->epochs[27].predicted_mean, *plain->epochs[27].predicted_mean);
  EXPECT_TRUE(status_plot_svg(*view));
}

TEST(JobStatusView, JsonDocumentHasEveryPart) {
  auto view = build_status_view(running_job());
  ASSERT_TRUE(view);
  const json doc = status_view_to_json(*view);
  for (const char* key : {"name", "namespace", "phase", "message", "startedAt", "finishedAt",
                          "conditions", "target", "plan", "progress", "epochs", "notes"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["plan"]["phases"][1]["startEpoch"], 16);
  EXPECT_EQ(doc["plan"]["plannedAtEpoch"], 19);
  EXPECT_EQ(doc["plan"]["predicted"]["probability"], view->plan->probability);
  EXPECT_EQ(doc["progress"]["model"], "full");
  EXPECT_EQ(doc["target"]["guarantee"], "Gaussian");
  EXPECT_EQ(doc["target"]["deadlineSeconds"], 2400);
  ASSERT_EQ(doc["epochs"].size(), 28u);
  EXPECT_TRUE(doc["epochs"][0]["observed"].is_number());
  EXPECT_TRUE(doc["epochs"][27]["observed"].is_null());
  EXPECT_TRUE(doc["epochs"][27]["predictedMean"].is_number());
}

// A target probability close to 1 is shown as the user wrote it, not rounded to "P >= 1".
TEST(JobStatusView, TheTargetProbabilityIsShownAsWritten) {
  json job = running_job();
  job["spec"]["target"]["probability"] = 0.99999999;
  auto view = build_status_view(job);
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_THAT(status_view_to_table(*view), HasSubstr("with P >= 0.99999999 (Gaussian)"));
}

TEST(JobStatusView, TableShowsPlanProgressAndEveryEpoch) {
  auto view = build_status_view(running_job());
  ASSERT_TRUE(view);
  const std::string table = status_view_to_table(*view);
  EXPECT_THAT(table, HasSubstr("Job:      default/quickstart"));
  EXPECT_THAT(table, HasSubstr("Phase:    Running"));
  EXPECT_THAT(table, HasSubstr("Started:  2026-11-22T08:00:57Z\n"));
  EXPECT_THAT(table, HasSubstr("loss 0.45 with P >= 0.9 (Gaussian), deadline 40m 00s"));
  EXPECT_THAT(table, HasSubstr("PhaseStarted"));
  EXPECT_THAT(table, HasSubstr("Plan (revision 1, depl; * = the phase running now)"));
  EXPECT_THAT(table, HasSubstr("datasets: curated, local-archive"));
  EXPECT_THAT(table, HasSubstr("(given the loss at epoch 19)"));
  EXPECT_THAT(table, HasSubstr("Progress: phase 1 (full), epoch 19 of 28, loss 0.6444"));
  // One row per epoch: the observed loss of epoch 1 and a predicted-only row for epoch 28.
  const auto first = view->epochs[0];
  EXPECT_THAT(table,
              HasSubstr(fmt::format("{} ± {}", controller::display_loss(*first.predicted_mean),
                                    controller::display_loss(*first.predicted_stddev))));
  EXPECT_THAT(table, HasSubstr("2.025"));  // epoch 1's observed 2.0248..., to 4 digits
  EXPECT_THAT(table, HasSubstr(fmt::format("{:+.1f} sd", *first.deviation)));
  const std::regex epoch_row(R"(^\s+\d+\s+[01]\s+(small|full)\s+\d\.\d+ ± \d\.\d+\s.*)");
  std::istringstream lines(table);
  std::string line;
  int epoch_rows = 0;
  while (std::getline(lines, line)) epoch_rows += std::regex_match(line, epoch_row);
  EXPECT_EQ(epoch_rows, 28);
}

// The table shows the job's loss, cost and P(target) as the printer columns do (status.display,
// written by encode_status), not to a precision of its own; the JSON keeps the exact figures.
TEST(JobStatusView, TableShowsTheFiguresAsStatusDisplayDoes) {
  json job = running_job();
  job["status"]["progress"]["loss"] = 2.345678;
  job["status"]["progress"]["cost"] = 123.456;
  job["status"]["plan"]["predicted"]["cost"] = 1234.5678;
  job["status"]["plan"]["predicted"]["probability"] = 0.912345;
  auto view = build_status_view(job);
  ASSERT_TRUE(view) << view.error().message;
  const json display =
      controller::encode_status(controller::decode_status(job["status"]))["display"];
  ASSERT_EQ(display, (json{{"loss", "2.346"}, {"probability", "0.9123"}, {"cost", "123"}}));
  const std::string table = status_view_to_table(*view);
  EXPECT_THAT(table, HasSubstr("loss 2.346, cost so far 123, time so far"));
  EXPECT_THAT(table, HasSubstr("predicted (given the loss at epoch 19): cost 1235, "));
  EXPECT_THAT(table, HasSubstr(", P(target) 0.9123\n"));
  const json doc = status_view_to_json(*view);
  EXPECT_EQ(doc["progress"]["loss"], 2.345678);
  EXPECT_EQ(doc["progress"]["cost"], 123.456);
  EXPECT_EQ(doc["plan"]["predicted"]["cost"], 1234.5678);
}

// The preemptions of the job and the time they cost, in the table and the JSON; nothing of them
// for a job that had none.
TEST(JobStatusView, PreemptionsAndTheTimeTheyCostAreShown) {
  json job = running_job();
  auto quiet = build_status_view(job);
  ASSERT_TRUE(quiet);
  EXPECT_THAT(status_view_to_table(*quiet), ::testing::Not(HasSubstr("preemption")));
  job["status"]["progress"]["preemptions"] = 3;
  job["status"]["progress"]["lostSeconds"] = 754.0;
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  EXPECT_THAT(status_view_to_table(*view), HasSubstr(", 3 preemption(s) costing 12m 34s"));
  const json doc = status_view_to_json(*view);
  EXPECT_EQ(doc["progress"]["preemptions"], 3);
  EXPECT_EQ(doc["progress"]["lostSeconds"], 754.0);
}

TEST(JobStatusView, AJobWithoutStatusIsPending) {
  json job = running_job();
  job.erase("status");
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->phase, "Pending");
  EXPECT_TRUE(view->epochs.empty());
  EXPECT_FALSE(view->plan);
  EXPECT_THAT(view->notes, ::testing::Contains(HasSubstr("not written a status")));
  EXPECT_THAT(status_view_to_table(*view), HasSubstr("no plan yet"));
  EXPECT_FALSE(status_plot_svg(*view));
}

TEST(JobStatusView, ASpecThatNoLongerNamesThePlansModelKeepsTheObservations) {
  json job = running_job();
  job["spec"]["models"][2]["name"] = "tiny";  // "small" is gone
  job["spec"]["switching"][0]["from"] = "tiny";
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  EXPECT_THAT(view->notes, ::testing::Contains(HasSubstr("model \"small\"")));
  ASSERT_EQ(view->epochs.size(), 28u);
  EXPECT_FALSE(view->epochs[0].predicted_mean);
  EXPECT_TRUE(view->epochs[0].observed);
}

TEST(JobStatusView, AnInvalidSpecIsANoteNotAFailure) {
  json job = running_job();
  job["spec"]["target"]["probability"] = 1.5;
  auto view = build_status_view(job);
  ASSERT_TRUE(view);
  EXPECT_FALSE(view->target);
  EXPECT_THAT(view->notes, ::testing::Contains(HasSubstr("spec.target.probability")));
  EXPECT_THAT(status_view_to_table(*view), HasSubstr("Phase:    Running"));
}

TEST(JobStatusView, OtherObjectsAreRejected) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "x"}}}};
  auto view = build_status_view(pod);
  ASSERT_FALSE(view);
  EXPECT_THAT(view.error().message, HasSubstr("DependableTrainingJob"));
  EXPECT_FALSE(build_status_view(json::array()));
}

TEST(JobStatusView, PlotDrawsThePredictionAndEveryObservation) {
  auto view = build_status_view(running_job());
  ASSERT_TRUE(view);
  auto svg = status_plot_svg(*view);
  ASSERT_TRUE(svg) << svg.error().message;
  const auto xml = testing::check_xml(*svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  int observed = 0;
  int mean_lines = 0;
  for (const auto& e : xml.elements) {
    auto it = e.attributes.find("class");
    if (it == e.attributes.end()) continue;
    observed += it->second == "observed-loss";
    mean_lines += it->second == "mean-loss";
  }
  EXPECT_EQ(observed, 19);
  EXPECT_EQ(mean_lines, 1);
  EXPECT_THAT(*svg, HasSubstr("default/quickstart: predicted vs observed validation loss"));
  EXPECT_THAT(*svg, HasSubstr("observed loss"));
  // The title carries the controller's recorded figures, not a re-costing on nameless pools.
  EXPECT_THAT(*svg, HasSubstr(fmt::format("final loss {:.4g}", view->plan->loss_mean)));
  EXPECT_THAT(*svg, ::testing::Not(HasSubstr("infeasible")));
}

}  // namespace
}  // namespace depl::cli
