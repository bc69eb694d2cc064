// The plan's JSON document and table: required keys and names, figures equal to the evaluator's,
// the reason when infeasible, human units in the table.
#include "depl/cli/plan_report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/solver/evaluator.hpp"
#include "test_problem.hpp"

namespace depl::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::result_for;
using testing::small_problem;
using testing::two_phase_plan;

TEST(PlanJson, HasTheDocumentedKeysWithTheEvaluatorsFigures) {
  const solver::Problem p = small_problem();
  const solver::SolveResult r = result_for(p, two_phase_plan());
  ASSERT_TRUE(r.feasible) << r.figures.violations.front();
  const nlohmann::json j = plan_to_json(p, r);
  const solver::Figures f = solver::evaluate(p, two_phase_plan());

  EXPECT_EQ(j.at("feasible"), true);
  EXPECT_EQ(j.at("datasets"), nlohmann::json({"imagenet-subset"}));
  ASSERT_EQ(j.at("phases").size(), 2u);
  EXPECT_EQ(j["phases"][0].at("model"), "resnet50-int8");
  EXPECT_EQ(j["phases"][0].at("epochs"), 2);
  EXPECT_EQ(j["phases"][0].at("pool"), "t4-pool");
  EXPECT_EQ(j["phases"][0].at("workers"), 1);
  EXPECT_EQ(j["phases"][1].at("model"), "resnet50");
  EXPECT_EQ(j["phases"][1].at("epochs"), 3);
  EXPECT_EQ(j["phases"][1].at("pool"), "a100-pool");
  EXPECT_EQ(j["phases"][1].at("workers"), 2);
  EXPECT_EQ(j["phases"][1].at("startEpoch"), 2);
  EXPECT_DOUBLE_EQ(j["phases"][1].at("seconds").get<double>(), f.phases[1].seconds);
  EXPECT_DOUBLE_EQ(j["phases"][1].at("cost").get<double>(), f.phases[1].cost);

  const nlohmann::json& pred = j.at("predicted");
  EXPECT_EQ(pred.at("cost").get<double>(), f.cost);
  EXPECT_EQ(pred.at("durationSeconds").get<double>(), f.duration_seconds);
  EXPECT_EQ(pred.at("lossMean").get<double>(), f.loss_mean);
  EXPECT_EQ(pred.at("lossStddev").get<double>(), f.loss_stddev);
  EXPECT_EQ(pred.at("probability").get<double>(), f.probability);
  EXPECT_GT(f.probability, 0.9);
  EXPECT_LT(f.probability, 0.95);

  EXPECT_EQ(j.at("algorithm"), solver::to_string(solver::Algorithm::DepL));
  EXPECT_EQ(j.at("target").at("loss"), 0.32);
  EXPECT_EQ(j.at("target").at("guarantee"), "Gaussian");
  EXPECT_FALSE(j.at("target").contains("budget"));
  EXPECT_TRUE(j.at("violations").empty());
  EXPECT_FALSE(j.contains("reason"));
  EXPECT_EQ(j.at("stats").at("graphStates"), 456);
}

TEST(PlanJson, FiguresSurviveTheRoundTripExactly) {
  // Doubles are written with enough digits to read back bit for bit.
  const solver::Problem p = small_problem();
  const solver::SolveResult r = result_for(p, two_phase_plan());
  const nlohmann::json back = nlohmann::json::parse(plan_to_json(p, r).dump());
  EXPECT_EQ(back["predicted"]["cost"].get<double>(), r.figures.cost);
  EXPECT_EQ(back["predicted"]["probability"].get<double>(), r.figures.probability);
}

TEST(PlanJson, InfeasibleCarriesReasonAndViolations) {
  solver::Problem p = small_problem();
  p.target.budget = 0.01;
  solver::SolveResult r = result_for(p, two_phase_plan());
  ASSERT_FALSE(r.feasible);
  r.reason = "no plan meets the budget of 0.01; the cheapest plan meeting the guarantee costs 0.05";
  r.infeasibility = {"budget", 0.95, 300, 0.05};
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("feasible"), false);
  EXPECT_EQ(j.at("reason"), r.reason);
  EXPECT_EQ(j.at("infeasibility").at("binding"), "budget");
  EXPECT_EQ(j.at("target").at("budget"), 0.01);
  ASSERT_FALSE(j.at("violations").empty());
  EXPECT_THAT(j["violations"][0].get<std::string>(), HasSubstr("budget"));
  // The closest plan is still shown.
  EXPECT_EQ(j.at("phases").size(), 2u);
}

TEST(PlanJson, InfeasibleWithoutAPlan) {
  const solver::Problem p = small_problem();
  solver::SolveResult r;
  r.reason = "no variant reaches the target loss within maxEpochs";
  r.infeasibility.binding = "guarantee";
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("feasible"), false);
  EXPECT_TRUE(j.at("phases").empty());
  EXPECT_TRUE(j.at("datasets").empty());
  EXPECT_EQ(j.at("reason"), r.reason);
  EXPECT_TRUE(j.at("predicted").contains("probability"));
}

TEST(PlanJson, SolverAndEvaluatorMustAgreeOnFeasibility) {
  solver::Problem p = small_problem();
  solver::SolveResult r = result_for(p, two_phase_plan());
  p.target.deadline_seconds = 10;  // the evaluator now says no, whatever the result claims
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("feasible"), false);
  EXPECT_FALSE(plan_is_feasible(p, r));
  EXPECT_TRUE(plan_is_feasible(small_problem(), r));
  EXPECT_THAT(j.at("reason").get<std::string>(), HasSubstr("deadline"));
}

TEST(PlanTable, ShowsPhasesTotalsAndHumanUnits) {
  solver::Problem p = small_problem();
  p.target.deadline_seconds = 3600;
  const solver::SolveResult r = result_for(p, two_phase_plan());
  const std::string table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("feasible"));
  EXPECT_THAT(table, HasSubstr("MODEL"));
  EXPECT_THAT(table, HasSubstr("resnet50-int8"));
  EXPECT_THAT(table, HasSubstr("t4-pool (NVIDIA-T4)"));
  EXPECT_THAT(table, HasSubstr("2 x 1 GPU"));
  // Phase 1: 20 s staging + 2 x 50 s = 2m 00s; phase 2: 5 + 10 + 10 + 3 x 10.4 s = 56 s.
  EXPECT_THAT(table, HasSubstr("2m 00s"));
  EXPECT_THAT(table, HasSubstr("56s"));
  EXPECT_THAT(table, HasSubstr("<= 1h 00m"));  // the deadline, in human units
  EXPECT_THAT(table, HasSubstr("P(target)"));
  EXPECT_THAT(table, HasSubstr(">= 0.9 (Gaussian)"));
  EXPECT_THAT(table, HasSubstr("±"));
  EXPECT_THAT(table, Not(HasSubstr("INFEASIBLE")));
}

// The data the loss model trains on: E (clean samples weighted by quality) and the share of
// wrong labels, in the JSON and, when some labels are wrong, on the table's datasets line.
TEST(PlanReport, StatesTheSelectionsCleanSamplesAndWrongLabels) {
  solver::Problem p = small_problem();
  const solver::SolveResult clean = result_for(p, two_phase_plan());
  EXPECT_THAT(plan_to_table(p, clean), Not(HasSubstr("labels wrong")));
  EXPECT_EQ(plan_to_json(p, clean).at("wrongLabelShare"), 0.0);
  p.datasets[0].label_noise = 0.125;
  const solver::SolveResult r = result_for(p, two_phase_plan());
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_DOUBLE_EQ(j.at("effectiveSamples").get<double>(), 10000 * 0.8 * 0.875);
  EXPECT_DOUBLE_EQ(j.at("wrongLabelShare").get<double>(), 0.125);
  EXPECT_THAT(plan_to_table(p, r),
              HasSubstr("(10,000 samples per epoch, 12.5% of the labels wrong)"));
}

// A phase on spot capacity: the pool says spot, the epoch shows its expectation with rework,
// and the totals the expected interruptions and P(on time) against the deadline.
TEST(PlanTable, SpotPhaseShowsInterruptionsAndTheChanceOfBeingOnTime) {
  solver::Problem p = small_problem();
  p.pools[1].capacity_type = solver::CapacityType::Spot;
  p.pools[1].interruptions_per_hour = 0.5;
  p.target.deadline_seconds = 240;  // about a minute of slack over the expected 2m 57s
  const solver::SolveResult r = result_for(p, two_phase_plan());
  ASSERT_TRUE(r.feasible) << r.figures.violations.front();
  const std::string table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("t4-pool (NVIDIA-T4, spot)"));
  EXPECT_THAT(table, HasSubstr("Duration (expected)"));
  EXPECT_THAT(table, HasSubstr("Interruptions"));
  EXPECT_THAT(table, HasSubstr("P(on time)"));
  EXPECT_THAT(table, HasSubstr("P(target by deadline)"));
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j["phases"][0].at("capacityType"), "Spot");
  EXPECT_EQ(j["phases"][1].at("capacityType"), "OnDemand");
  EXPECT_EQ(j["phases"][0].at("interruptionsPerHour").get<double>(),
            r.figures.phases[0].interruptions_per_hour);
  EXPECT_GT(j["phases"][0].at("expectedEpochSeconds").get<double>(),
            j["phases"][0].at("epochSeconds").get<double>());
  EXPECT_EQ(j.at("predicted").at("onTimeProbability").get<double>(), r.figures.on_time_probability);
  EXPECT_LT(r.figures.on_time_probability, 1);
  // On-demand only: none of it.
  const std::string steady =
      plan_to_table(small_problem(), result_for(small_problem(), two_phase_plan()));
  EXPECT_THAT(steady, Not(HasSubstr("spot")));
  EXPECT_THAT(steady, Not(HasSubstr("P(on time)")));
}

TEST(PlanTable, InfeasibleSaysWhy) {
  solver::Problem p = small_problem();
  p.target.budget = 0.01;
  solver::SolveResult r = result_for(p, two_phase_plan());
  r.reason = "the budget binds";
  r.infeasibility = {"budget", 0.95, 300, 0.05};
  const std::string table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("INFEASIBLE"));
  EXPECT_THAT(table, HasSubstr("Reason: the budget binds"));
  EXPECT_THAT(table, HasSubstr("Binding constraint: budget"));
  EXPECT_THAT(table, HasSubstr("least cost meeting it 0.0500"));
  EXPECT_THAT(table, HasSubstr("Violated:"));
}

// The certificate: beside DepL's and OPT's plans, not the baselines'; the table says when the
// bound's search was cut short.
TEST(PlanJson, CarriesTheCertificateOfCertifiedAlgorithmsOnly) {
  const solver::Problem p = small_problem();
  solver::SolveResult r = result_for(p, two_phase_plan());
  r.certificate = {0.8 * r.figures.cost, 0.2, true};
  nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("predicted").at("lowerBound").get<double>(), 0.8 * r.figures.cost);
  EXPECT_EQ(j.at("predicted").at("gap").get<double>(), 0.2);
  EXPECT_EQ(j.at("predicted").at("lowerBoundComplete"), true);
  EXPECT_EQ(j.at("budgetLimited"), false);
  EXPECT_FALSE(j.contains("budgetStop"));
  EXPECT_EQ(j.at("stats").at("boundClasses"), 0);

  for (const solver::Algorithm a : {solver::Algorithm::Exp, solver::Algorithm::Full}) {
    solver::SolveResult baseline = result_for(p, two_phase_plan(), a);
    baseline.certificate = r.certificate;
    j = plan_to_json(p, baseline);
    EXPECT_FALSE(j.at("predicted").contains("lowerBound")) << solver::to_string(a);
    EXPECT_FALSE(j.at("predicted").contains("gap")) << solver::to_string(a);
    EXPECT_THAT(plan_to_table(p, baseline), Not(HasSubstr("Certified"))) << solver::to_string(a);
  }
}

TEST(PlanTable, ShowsTheCertificateAndWhetherItsSearchWasCut) {
  const solver::Problem p = small_problem();
  solver::SolveResult r = result_for(p, two_phase_plan());
  r.certificate = {0.75, 0.0125, true};
  std::string table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("Certified: no plan costs less than 0.75 (this one is within "
                               "1.25% of the optimum)"));
  r.certificate.complete = false;
  table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("the bound's search was cut short"));
  EXPECT_THAT(table, Not(HasSubstr("Budget-limited")));
}

TEST(PlanReport, ABudgetLimitedSolveSaysSoWithItsPlan) {
  const solver::Problem p = small_problem();
  solver::SolveResult r = result_for(p, two_phase_plan());
  r.stopped = solver::BudgetStop::Memory;
  r.certificate = {0.5, 0.4, false};
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("feasible"), true);
  EXPECT_EQ(j.at("budgetLimited"), true);
  EXPECT_EQ(j.at("budgetStop"), "memory");
  EXPECT_EQ(j.at("predicted").at("lowerBoundComplete"), false);
  EXPECT_THAT(plan_to_table(p, r),
              HasSubstr("Budget-limited: the solve stopped early (memory); this is the best plan "
                        "it had found by then"));
}

TEST(PlanReport, ABudgetLimitedSolveWithoutAPlanSaysWhy) {
  const solver::Problem p = small_problem();
  solver::SolveResult r;
  r.stopped = solver::BudgetStop::Time;
  r.reason = "The solver's time budget (1 ms) ran out before it found a plan";
  r.infeasibility.binding = "solveBudget";
  const nlohmann::json j = plan_to_json(p, r);
  EXPECT_EQ(j.at("feasible"), false);
  EXPECT_EQ(j.at("budgetLimited"), true);
  EXPECT_EQ(j.at("budgetStop"), "time");
  EXPECT_EQ(j.at("infeasibility").at("binding"), "solveBudget");
  EXPECT_FALSE(j.at("predicted").contains("lowerBound"));
  const std::string table = plan_to_table(p, r);
  EXPECT_THAT(table, HasSubstr("Budget-limited: the solve stopped early (time); no plan was "
                               "found by then"));
  EXPECT_THAT(table, HasSubstr("Reason: The solver's time budget (1 ms) ran out"));
  EXPECT_THAT(table, Not(HasSubstr("Certified")));
}

}  // namespace
}  // namespace depl::cli
