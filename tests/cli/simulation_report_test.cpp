// The simulate command's views: JSON keys and values from the simulator and the evaluator.
#include "depl/cli/simulation_report.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_problem.hpp"

namespace depl::cli {
namespace {

using ::testing::HasSubstr;

TEST(SimulationJson, KeysAndValues) {
  const solver::Problem p = testing::small_problem();
  const solver::SolveResult r = testing::result_for(p, testing::two_phase_plan());
  const solver::SimulationOptions options{5'000, 17, solver::Noise::StudentT3};
  const solver::SimulationResult s = solver::simulate(p, r.plan, options);
  const nlohmann::json j = simulation_to_json(p, r, options, s);
  EXPECT_EQ(j.at("predictedProbability").get<double>(), r.figures.probability);
  EXPECT_EQ(j.at("empiricalProbability").get<double>(), s.probability);
  ASSERT_EQ(j.at("interval").size(), 2u);
  EXPECT_EQ(j["interval"][0].get<double>(), s.interval_low);
  EXPECT_EQ(j["interval"][1].get<double>(), s.interval_high);
  EXPECT_EQ(j.at("runs"), 5'000);
  EXPECT_EQ(j.at("reached"), s.reached);
  EXPECT_EQ(j.at("reachedStoppingAtTarget"), s.reached_stopping_at_target);
  EXPECT_EQ(j.at("probabilityStoppingAtTarget").get<double>(), s.probability_stopping_at_target);
  EXPECT_EQ(j.at("seed"), 17);
  EXPECT_EQ(j.at("noise"), "student-t");
  EXPECT_EQ(j.at("plan").at("feasible"), true);
  EXPECT_EQ(j.at("plan").at("phases").size(), 2u);
}

TEST(SimulationTable, PredictedVersusSimulated) {
  const solver::Problem p = testing::small_problem();
  const solver::SolveResult r = testing::result_for(p, testing::two_phase_plan());
  const solver::SimulationOptions options{20'000, 1, solver::Noise::Gaussian};
  const solver::SimulationResult s = solver::simulate(p, r.plan, options);
  const std::string table = simulation_to_table(p, r, options, s);
  EXPECT_THAT(table, HasSubstr("Monte Carlo: 20,000 runs, seed 1, gaussian noise"));
  EXPECT_THAT(table, HasSubstr("Predicted"));
  EXPECT_THAT(table, HasSubstr("Simulated"));
  EXPECT_THAT(table, HasSubstr(fmt::format("[{:.4f}, {:.4f}]", s.interval_low, s.interval_high)));
  EXPECT_THAT(table, HasSubstr("Stopping at target"));
}

TEST(NoiseNames, RoundTripAndReject) {
  EXPECT_EQ(*parse_noise(noise_name(solver::Noise::Gaussian)), solver::Noise::Gaussian);
  EXPECT_EQ(*parse_noise(noise_name(solver::Noise::StudentT3)), solver::Noise::StudentT3);
  auto bad = parse_noise("cauchy");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message, HasSubstr("--noise"));
}

// On spot pools the simulation draws interruptions: the report gives the simulated cost against
// the model's and the runs done by the deadline.
TEST(SimulationTable, SpotPlanReportsCostAndDeadline) {
  solver::Problem p = testing::small_problem();
  p.pools[1].capacity_type = solver::CapacityType::Spot;
  p.pools[1].interruptions_per_hour = 30;
  p.target.deadline_seconds = 3600;
  const solver::SolveResult r = testing::result_for(p, testing::two_phase_plan());
  const solver::SimulationOptions options{2'000, 3, solver::Noise::Gaussian};
  const solver::SimulationResult s = solver::simulate(p, r.plan, options);
  ASSERT_GT(s.mean_interruptions, 0);
  const std::string table = simulation_to_table(p, r, options, s);
  EXPECT_THAT(table, HasSubstr("Reached the target by the deadline"));
  EXPECT_THAT(table, HasSubstr("Interruptions:"));
  EXPECT_THAT(table, HasSubstr("Cost:"));
  const nlohmann::json j = simulation_to_json(p, r, options, s);
  EXPECT_EQ(j.at("meanCost").get<double>(), s.mean_cost);
  EXPECT_EQ(j.at("predictedCost").get<double>(), r.figures.cost);
  EXPECT_EQ(j.at("onTime"), s.on_time);
  EXPECT_EQ(j.at("meanInterruptions").get<double>(), s.mean_interruptions);
}

}  // namespace
}  // namespace depl::cli
