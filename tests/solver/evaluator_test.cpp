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

// The loss a report shows (section 2): the trajectory's variance, which starts at s0^2 and
// decays, plus the last variant's own transient nu^2, which carries into no later epoch.
TEST(Evaluator, ReportedLossAddsTheLastVariantsTransientNoise) {
  Problem p = hand_problem();
  p.models[0].loss.initial_stddev = 0.04;
  p.models[0].loss.validation_noise_stddev = 0.02;
  p.models[1].loss.validation_noise_stddev = 0.05;
  const Figures one = evaluate(p, Plan{{0}, {{0, 3, 0, 2}}});
  // s2: 0.04^2 = 1.6e-3 -> 0.25 * 1.6e-3 + 1e-4 = 5e-4 -> 2.25e-4 -> 1.5625e-4; plus nu^2 = 4e-4.
  EXPECT_NEAR(one.loss_state_variance, 1.5625e-4, 1e-15);
  EXPECT_NEAR(one.loss_stddev, std::sqrt(1.5625e-4 + 4e-4), 1e-15);
  EXPECT_NEAR(one.phases[0].loss_variance, 1.5625e-4 + 4e-4, 1e-15);
  EXPECT_NEAR(one.probability, normal_cdf((0.5 - 0.425) / std::sqrt(5.5625e-4)), 1e-15);
  // small's nu (0.05) is the first phase's; the plan ends on full, whose nu (0.02) it reports.
  // small's start has no spread (its s0 is 0): s2 = 4e-4 -> 0.36 * 4e-4 + 4e-4 = 5.44e-4 after
  // two epochs of small (rho 0.6 at E = 8000), + 0.03^2 for the jump, then an epoch of full.
  const Figures two = evaluate(p, Plan{{0}, {{1, 2, 1, 1}, {0, 1, 0, 1}}});
  const double after_small = 5.44e-4;
  EXPECT_NEAR(two.phases[0].loss_variance, after_small + 0.05 * 0.05, 1e-15);
  const double state = 0.25 * (after_small + 0.03 * 0.03) + 1e-4;
  EXPECT_NEAR(two.loss_state_variance, state, 1e-15);
  EXPECT_NEAR(two.loss_stddev, std::sqrt(state + 0.02 * 0.02), 1e-15);
  // The plotted trajectory is what the reports show, epoch by epoch.
  const auto points = loss_trajectory(p, Plan{{0}, {{1, 2, 1, 1}, {0, 1, 0, 1}}});
  ASSERT_EQ(points.size(), 4u);
  EXPECT_NEAR(points[2].variance, after_small + 0.05 * 0.05, 1e-15);
  EXPECT_NEAR(points[3].variance, state + 0.02 * 0.02, 1e-15);
}

// Wrong labels (docs/depl-model.md section 2): E counts the clean samples only and the floor
// rises by beta_v times the share of wrong labels in the selection.
TEST(Evaluator, WrongLabelsCountNoSamplesAndRaiseTheFloor) {
  Problem p = hand_problem();
  p.datasets.front().quality = 1.0;
  p.datasets.front().label_noise = 0.2;  // 2,000 of 10,000 labels wrong: E = 8000 = N_ref
  p.models[0].loss.label_noise_floor = 0.5;
  const Plan plan{{0}, {{0, 3, 0, 2}}};
  const Figures f = evaluate(p, plan);
  // rho = 0.5, floor = 0.2 + 0.5 * 0.2 = 0.3: m 2.0 -> 1.15 -> 0.725 -> 0.5125.
  EXPECT_NEAR(f.loss_mean, 0.5125, 1e-15);
  EXPECT_NEAR(f.loss_stddev, std::sqrt(1.3125e-4), 1e-15);
  EXPECT_FALSE(f.meets_guarantee);
  const auto trajectory = loss_trajectory(p, plan);
  ASSERT_EQ(trajectory.size(), 4u);
  EXPECT_NEAR(trajectory[1].mean, 1.15, 1e-15);
  EXPECT_NEAR(trajectory.back().mean, f.loss_mean, 1e-15);
  // The time is the samples' (N), not E's: wrong labels cost compute all the same.
  EXPECT_NEAR(f.phases[0].epoch_seconds, 10.4, 1e-12);
  // A clean dataset joining the selection dilutes the wrong labels: W / N = 2000 / 15000.
  p.datasets.push_back({"clean", 5000, 1.0, 0, {}});
  EXPECT_DOUBLE_EQ(wrong_label_share(p, {0, 1}), 2000.0 / 15000.0);
  EXPECT_DOUBLE_EQ(effective_samples(p, {0, 1}), 13000.0);
  EXPECT_DOUBLE_EQ(loss_floor(p.models[0].loss, 8000, 2000.0 / 15000.0),
                   0.2 + 0.5 * 2000.0 / 15000.0);
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

// The small variant alone on t4, made spot: 0.5 interruptions per worker-hour, a restart of
// 1 s (no startup; a 50 MB checkpoint read at 50 MB/s). Figures worked out from
// docs/depl-model.md section 2 (and P_time by an independent scan of Chernoff's exponent).
Problem spot_problem() {
  Problem p = hand_problem();
  p.pools[1].capacity_type = CapacityType::Spot;
  p.pools[1].interruptions_per_hour = 0.5;
  p.models[1].checkpoint_bytes = 5e7;
  p.target.loss = 1.1;
  return p;
}

TEST(Evaluator, SpotPhaseByHand) {
  Problem p = spot_problem();
  const Plan plan{{0}, {{1, 2, 1, 1}}};
  Figures f = evaluate(p, plan);
  ASSERT_EQ(f.phases.size(), 1u);
  const PhaseFigures& ph = f.phases[0];
  // epoch_s = 10000 * 0.5 / 100 = 50 s; Lambda = 0.5 / 3600 per s; R = 1 s;
  // E[Y] = (exp(Lambda * 50) - 1) * (1 / Lambda + 1).
  EXPECT_NEAR(ph.epoch_seconds, 50, 1e-12);
  EXPECT_NEAR(ph.interruptions_per_hour, 0.5, 1e-15);
  EXPECT_NEAR(ph.restart_seconds, 1, 1e-15);
  EXPECT_NEAR(ph.expected_epoch_seconds, 50.180982300369529, 1e-11);
  EXPECT_NEAR(ph.interruptions, 0.013937226024265944, 1e-15);
  // staging 1e9 / 5e7 = 20 s, then two epochs.
  EXPECT_NEAR(f.duration_seconds, 120.36196460073906, 1e-10);
  EXPECT_NEAR(f.cost, 0.012036196460073905, 1e-15);
  EXPECT_DOUBLE_EQ(f.on_time_probability, 1);  // no deadline
  EXPECT_TRUE(f.feasible);

  p.target.deadline_seconds = 150;
  f = evaluate(p, plan);
  EXPECT_NEAR(f.on_time_probability, 0.919250935468526, 1e-9);
  EXPECT_NEAR(f.probability, f.loss_probability * f.on_time_probability, 1e-15);
  EXPECT_NEAR(f.kappa, normal_quantile(0.9 / f.on_time_probability), 1e-12);
  EXPECT_TRUE(f.feasible) << f.violations.front();

  // Too likely to be late: the deadline is named; the loss alone still meets the promise.
  p.target.deadline_seconds = 130;
  f = evaluate(p, plan);
  EXPECT_NEAR(f.on_time_probability, 0.453539082773659, 1e-9);
  ASSERT_EQ(f.violations.size(), 1u);
  EXPECT_EQ(f.violations[0].rfind("deadline: P(done by 130 s) = 0.4535 <= 0.9", 0), 0u)
      << f.violations[0];
  EXPECT_TRUE(f.meets_guarantee);
}

// The deadline takes its share of the promise: a loss reaching the target with probability 0.95
// is enough without a deadline, not when the plan is on time with probability 0.919.
TEST(Evaluator, DeadlineRiskTightensTheGuarantee) {
  Problem p = spot_problem();
  const Plan plan{{0}, {{1, 2, 1, 1}}};
  const Figures before = evaluate(p, plan);
  p.target.loss = before.loss_mean + normal_quantile(0.95) * before.loss_stddev;
  Figures f = evaluate(p, plan);
  EXPECT_TRUE(f.feasible);
  EXPECT_NEAR(f.probability, 0.95, 1e-12);
  p.target.deadline_seconds = 150;
  f = evaluate(p, plan);
  EXPECT_FALSE(f.meets_guarantee);
  ASSERT_EQ(f.violations.size(), 1u);
  EXPECT_NE(f.violations[0].find("P(on time) 0.9193"), std::string::npos) << f.violations[0];
  EXPECT_NEAR(f.probability, 0.95 * 0.919250935468526, 1e-9);
  // On-demand capacity is never interrupted: the same plan there is on time for sure.
  p.pools[1].interruptions_per_hour = 0;
  f = evaluate(p, plan);
  EXPECT_TRUE(f.feasible);
  EXPECT_DOUBLE_EQ(f.on_time_probability, 1);
  EXPECT_NEAR(f.duration_seconds, 120, 1e-12);
}

// Chernoff's bound is a lower bound on the probability of finishing in time, and it tightens as
// the deadline moves out; the expected epoch grows with the rate.
TEST(Evaluator, OnTimeProbabilityIsMonotoneAndBelowOne) {
  EpochInterruptions e;
  e.rate = 2.0 / 3600;
  e.restart_seconds = 120;
  e.epoch_seconds = 600;
  DurationTerms terms;
  terms.fixed_seconds = 100;
  terms.phases.emplace_back(20, e);
  const double expected = 100 + 20 * e.expected_seconds();
  double previous = 0;
  for (double deadline : {expected * 0.99, expected * 1.1, expected * 1.3, expected * 2}) {
    const double p = on_time_probability(terms, deadline);
    EXPECT_GE(p, previous);
    EXPECT_LT(p, 1);
    previous = p;
  }
  EXPECT_EQ(on_time_probability(terms, expected * 0.99), 0);
  EXPECT_GT(previous, 0.99);
  EpochInterruptions more = e;
  more.rate *= 2;
  EXPECT_GT(more.expected_seconds(), e.expected_seconds());
  EXPECT_NEAR(e.log_mgf(0), 0, 1e-15);
  EXPECT_TRUE(std::isinf(e.log_mgf(e.divergence() * 1.01)));
  EXPECT_TRUE(std::isfinite(e.log_mgf(e.divergence() * 0.99)));
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
