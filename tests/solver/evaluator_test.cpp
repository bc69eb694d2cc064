// The evaluator against numbers worked out by hand from docs/depl-model.md section 2.
#include "depl/solver/evaluator.hpp"

#include <cmath>
#include <gtest/gtest.h>

#include "depl/solver/normal.hpp"

namespace depl::solver {
namespace {

// One dataset of 10,000 samples (quality 0.8, 1 GB, remote), two variants, two pools.
Problem hand_problem() {
  Problem p;
  p.target.loss = 0.5;
  p.target.probability = 0.9;
  p.datasets.push_back({"a", 10000, 0.8, 1e9, {}});
  ModelVariant full{"full", "img/full", 2.0, 4e6, 1, {}};
  full.loss = {2.0, 0.2, 0.5, 0.01, 8000, 0};
  ModelVariant small{"small", "img/small", 0.5, 1e6, 1, {}};
  small.loss = {2.0, 0.4, 0.6, 0.02, 8000, 0};
  p.models = {full, small};
  p.switching.push_back({"small", "full", 0.05, 0.03, 10});
  p.training.batch_size = 100;
  Pool a{"a100", "A100", 8, 1000, 3.6, 1e9, 1e8, 5, {}, 0, 0};
  Pool t{"t4", "T4", 4, 100, 0.36, 1e8, 5e7, 0, {{"a100", 2e8}}, 0, 0};
  p.pools = {a, t};
  return p;
}

TEST(Evaluator, OnePhaseByHand) {
  Problem p = hand_problem();
  Plan plan{{0}, {{0, 3, 0, 2}}};
  Figures f = evaluate(p, plan);
  // E = 8000 = N_ref, so rho = 0.5 and the floor is 0.2.
  // m: 2.0 -> 1.1 -> 0.65 -> 0.425; s2: 1e-4 -> 1.25e-4 -> 1.3125e-4.
  EXPECT_NEAR(f.loss_mean, 0.425, 1e-15);
  EXPECT_NEAR(f.loss_stddev, std::sqrt(1.3125e-4), 1e-15);
  // compute = 10000*2/(2*1*1000) = 10 s; steps = 100; comm = 100*2*(1/2)*4e6/1e9 = 0.4 s.
  // staging = 1e9/1e8 = 10 s; startup 5 s; phase = 5 + 10 + 3*10.4 = 46.2 s.
  EXPECT_NEAR(f.phases[0].epoch_seconds, 10.4, 1e-12);
  EXPECT_NEAR(f.duration_seconds, 46.2, 1e-12);
  // cost = 2 workers * 1 GPU * 3.6/h * 46.2 s / 3600 = 0.0924
  EXPECT_NEAR(f.cost, 0.0924, 1e-15);
  const double kappa = normal_quantile(0.9);
  EXPECT_NEAR(kappa, 1.2815515655446004, 1e-13);
  EXPECT_TRUE(f.meets_guarantee);
  EXPECT_NEAR(f.probability, normal_cdf((0.5 - 0.425) / std::sqrt(1.3125e-4)), 1e-15);
  EXPECT_TRUE(f.feasible);
}

TEST(Evaluator, SwitchAddsJumpOverheadAndStaging) {
  Problem p = hand_problem();
  Plan plan{{0}, {{1, 2, 1, 1}, {0, 2, 0, 1}}};
  Figures f = evaluate(p, plan);
  ASSERT_EQ(f.phases.size(), 2u);
  // small on t4: rho = 0.6; m: 2 -> 0.4+1.6*0.6=1.36 -> 0.4+0.96*0.6=0.976
  // s2: 4e-4 -> 0.36*4e-4+4e-4 = 5.44e-4
  EXPECT_NEAR(f.phases[0].loss_mean, 0.976, 1e-14);
  EXPECT_NEAR(f.phases[0].loss_variance, 5.44e-4, 1e-17);
  // switch: m = 1.026, s2 = 5.44e-4 + 9e-4 = 1.444e-3; full: m -> 0.2+0.826*0.5 = 0.613
  // -> 0.2+0.413*0.5 = 0.4065; s2 -> 0.25*1.444e-3+1e-4 = 4.61e-4 -> 0.25*4.61e-4+1e-4 = 2.1525e-4
  EXPECT_NEAR(f.loss_mean, 0.4065, 1e-14);
  EXPECT_NEAR(f.loss_stddev * f.loss_stddev, 2.1525e-4, 1e-17);
  // phase 1 on t4, 1 worker: compute 10000*0.5/100 = 50 s, no comm; staging 1e9/5e7 = 20 s
  EXPECT_NEAR(f.phases[0].seconds, 20 + 2 * 50, 1e-12);
  EXPECT_NEAR(f.phases[0].cost, 1 * 0.36 * 120 / 3600, 1e-15);
  // phase 2 on a100 (pool changed): startup 5 + staging 10 + switch 10 + 2 * 20 s
  EXPECT_NEAR(f.phases[1].seconds, 65, 1e-12);
  EXPECT_NEAR(f.cost, 0.012 + 3.6 * 65 / 3600, 1e-15);
  EXPECT_TRUE(f.feasible) << (f.violations.empty() ? "" : f.violations[0]);
}

TEST(Evaluator, InterPoolBandwidthAndLocality) {
  Problem p = hand_problem();
  p.datasets[0].locality = {"a100"};
  // Local to a100: no staging there; from a100 into t4 the interPool bandwidth 2e8 applies.
  EXPECT_DOUBLE_EQ(staging_seconds(p, {0}, p.pools[0]), 0.0);
  EXPECT_DOUBLE_EQ(staging_seconds(p, {0}, p.pools[1]), 5.0);
}

TEST(Evaluator, ReportsEveryViolatedConstraint) {
  Problem p = hand_problem();
  p.target.deadline_seconds = 10;
  p.target.budget = 0.001;
  p.training.max_epochs = 2;
  p.training.max_switches = 0;
  Plan plan{{0}, {{0, 1, 1, 5}, {1, 2, 1, 5}}};
  Figures f = evaluate(p, plan);
  EXPECT_FALSE(f.feasible);
  std::string all;
  for (const auto& v : f.violations) all += v + "\n";
  for (const char* what : {"not listed", "GPUs", "guarantee", "deadline", "budget", "horizon",
                           "switches"}) {
    EXPECT_NE(all.find(what), std::string::npos) << what << " missing in:\n" << all;
  }
}

TEST(Evaluator, StructuralErrorsAreViolationsNotCrashes) {
  Problem p = hand_problem();
  EXPECT_FALSE(evaluate(p, Plan{}).feasible);
  EXPECT_FALSE(evaluate(p, Plan{{7}, {{9, 0, 9, 0}}}).feasible);
  EXPECT_EQ(evaluate(p, Plan{{7}, {{9, 0, 9, 0}}}).violations.size(), 5u);
}

TEST(Evaluator, DistributionFreeUsesCantelli) {
  Target t;
  t.loss = 1.0;
  t.probability = 0.8;
  t.guarantee = Guarantee::DistributionFree;
  EXPECT_DOUBLE_EQ(guarantee_kappa(t), 2.0);
  EXPECT_DOUBLE_EQ(reach_probability(t, 0.8, 0.01), 1 - 0.01 / (0.01 + 0.04));
  EXPECT_DOUBLE_EQ(reach_probability(t, 1.1, 0.01), 0.0);
  EXPECT_TRUE(meets_guarantee(t, 0.8, 0.01));
  EXPECT_FALSE(meets_guarantee(t, 0.8, 0.0101));
}

TEST(Evaluator, ZeroVarianceProbabilityIsAStep) {
  Target t;
  t.loss = 1.0;
  t.probability = 0.9;
  EXPECT_EQ(reach_probability(t, 1.0, 0), 1.0);
  EXPECT_EQ(reach_probability(t, 1.0 + 1e-9, 0), 0.0);
}

TEST(Evaluator, StartStateContinuesWithoutSwitchOrStaging) {
  Problem p = hand_problem();
  p.start = StartState{"full", "a100", 0.7, 0.0};
  Figures f = evaluate(p, Plan{{0}, {{0, 1, 0, 1}}});
  EXPECT_NEAR(f.loss_mean, 0.2 + 0.5 * 0.5, 1e-15);
  EXPECT_NEAR(f.phases[0].staging_seconds, 0, 0);
  EXPECT_NEAR(f.phases[0].switch_seconds, 0, 0);
  Figures g = evaluate(p, Plan{{0}, {{1, 1, 0, 1}}});  // full -> small is not listed
  EXPECT_FALSE(g.feasible);
}

TEST(Evaluator, RunningPhaseContinuesWithoutStartupOnlyWithTheSameWorkers) {
  Problem p = hand_problem();
  p.pools[0].startup_seconds = 100;
  p.start = StartState{"full", "a100", 0.7, 0.0, /*workers=*/1};
  // Same variant, pool and workers: the pods keep running, no startup.
  Figures same = evaluate(p, Plan{{0}, {{0, 1, 0, 1}}});
  EXPECT_EQ(same.phases[0].startup_seconds, 0);
  // Other workers: new pods, the pool's startup is paid.
  p.pools[0].gpus = std::max(p.pools[0].gpus, 2);
  Figures more = evaluate(p, Plan{{0}, {{0, 1, 0, 2}}});
  EXPECT_EQ(more.phases[0].startup_seconds, 100);
  // No running pods (workers 0, e.g. between phases): startup again.
  p.start->workers = 0;
  Figures restarted = evaluate(p, Plan{{0}, {{0, 1, 0, 1}}});
  EXPECT_EQ(restarted.phases[0].startup_seconds, 100);
  EXPECT_GT(restarted.cost, same.cost);
}

TEST(Normal, QuantileInvertsCdf) {
  for (double q : {1e-10, 1e-4, 0.01, 0.3, 0.5, 0.9, 0.95, 0.999, 1 - 1e-9}) {
    EXPECT_NEAR(normal_cdf(normal_quantile(q)), q, 1e-14 + q * 1e-12) << q;
  }
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-14);
}

TEST(Evaluator, TrajectoryEndsWhereEvaluatorEnds) {
  Problem p = hand_problem();
  Plan plan{{0}, {{1, 2, 1, 1}, {0, 2, 0, 1}}};
  auto traj = loss_trajectory(p, plan);
  ASSERT_EQ(traj.size(), 5u);
  Figures f = evaluate(p, plan);
  EXPECT_DOUBLE_EQ(traj.back().mean, f.loss_mean);
  EXPECT_DOUBLE_EQ(std::sqrt(traj.back().variance), f.loss_stddev);
}

}  // namespace
}  // namespace depl::solver
