#include "depl/solver/fit.hpp"

#include "depl/solver/evaluator.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace depl::solver {
namespace {

using ::testing::HasSubstr;

// K runs of `epochs` epochs drawn from the model of docs/depl-model.md section 5:
// l = f + (l - f) r + eps, eps ~ N(0, sigma^2), starting at l0 + N(0, s0^2); each epoch reports
// l + N(0, nu^2).
std::vector<std::vector<double>> synthetic_runs(const LossProfile& p, int runs, int epochs,
                                                unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(runs));
  for (auto& run : out) {
    double loss = p.initial_loss + p.initial_stddev * unit(rng);
    for (int t = 0; t < epochs; ++t) {
      loss = p.floor_loss + (loss - p.floor_loss) * p.decay_per_epoch + p.noise_stddev * unit(rng);
      run.push_back(loss + p.validation_noise_stddev * unit(rng));
    }
  }
  return out;
}

LossProfile profile(double l0, double floor, double decay, double sigma) {
  LossProfile p;
  p.initial_loss = l0;
  p.floor_loss = floor;
  p.decay_per_epoch = decay;
  p.noise_stddev = sigma;
  return p;
}

double relative_error(double estimate, double truth) {
  return std::fabs(estimate - truth) / std::fabs(truth);
}

struct FitCase {
  LossProfile truth;
  int epochs;
};

class RecoversAKnownProfile : public ::testing::TestWithParam<unsigned> {};

// Tolerances: over 300 seeds the worst errors measured were 4.9% (floor) and 1.0% (decay), and
// over 200 seeds 28% (sigma, from the runs' variances and covariances); the floor is limited by
// the noise of the mean curve's tail itself.
TEST_P(RecoversAKnownProfile, FloorDecayAndNoiseFromTwentyRuns) {
  const unsigned seed = GetParam();
  for (const FitCase& c :
       {FitCase{profile(2.3, 0.25, 0.85, 0.01), 30}, FitCase{profile(2.3, 0.6, 0.8, 0.02), 25},
        FitCase{profile(1.0, 0.1, 0.7, 0.005), 15}}) {
    const auto runs = synthetic_runs(c.truth, 20, c.epochs, seed);
    auto fit = fit_loss_profile(runs, c.truth.initial_loss);
    ASSERT_TRUE(fit.has_value()) << fit.error().message;
    const LossProfile& got = fit->profile;
    SCOPED_TRACE(::testing::Message()
                 << "seed " << seed << " truth f=" << c.truth.floor_loss
                 << " r=" << c.truth.decay_per_epoch << " got f=" << got.floor_loss
                 << " r=" << got.decay_per_epoch << " sigma=" << got.noise_stddev);
    EXPECT_LT(relative_error(got.floor_loss, c.truth.floor_loss), 0.06);
    EXPECT_LT(relative_error(got.decay_per_epoch, c.truth.decay_per_epoch), 0.03);
    EXPECT_LT(relative_error(got.noise_stddev, c.truth.noise_stddev), 0.32);
    EXPECT_LT(got.validation_noise_stddev, 0.7 * c.truth.noise_stddev);
    // l0 is the fitted curve at epoch 0 (never above the measured one).
    EXPECT_LT(relative_error(got.initial_loss, c.truth.initial_loss), 0.03);
    EXPECT_LE(got.initial_loss, c.truth.initial_loss);
    EXPECT_GE(fit->squared_error, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RecoversAKnownProfile, ::testing::Values(1u, 2u, 3u, 42u, 2024u));

// The three noises have different signatures across runs: the start's spread decays, sigma's
// persists from epoch to epoch, nu's is new each epoch. Drawn with all three (40 runs, as many
// as the PyTorch bench runs per plan), the fit tells them apart; drawn with sigma alone it puts
// (almost) nothing in the other two. Tolerances: over seeds 1-200 the worst errors were 39% (s0),
// 55% (sigma, the smallest of the three) and 17% (nu); with sigma alone nu stayed below 0.0047
// and sigma's error below 22%.
class SplitsTheNoise : public ::testing::TestWithParam<unsigned> {};

TEST_P(SplitsTheNoise, StartPersistentAndTransientFromFortyRuns) {
  LossProfile truth = profile(0.8, 0.4, 0.75, 0.01);
  truth.validation_noise_stddev = 0.015;
  truth.initial_stddev = 0.05;
  const auto runs = synthetic_runs(truth, 40, 12, GetParam());
  auto fit = fit_loss_profile(runs, 2.3);
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  const LossProfile& got = fit->profile;
  SCOPED_TRACE(::testing::Message() << "s0=" << got.initial_stddev << " sigma=" << got.noise_stddev
                                    << " nu=" << got.validation_noise_stddev);
  EXPECT_LT(relative_error(got.initial_stddev, 0.05), 0.45);
  EXPECT_LT(relative_error(got.noise_stddev, 0.01), 0.6);
  EXPECT_LT(relative_error(got.validation_noise_stddev, 0.015), 0.2);

  truth.validation_noise_stddev = 0;
  truth.initial_stddev = 0;
  auto persistent = fit_loss_profile(synthetic_runs(truth, 40, 12, GetParam()), 2.3);
  ASSERT_TRUE(persistent.has_value());
  EXPECT_LT(persistent->profile.validation_noise_stddev, 0.006);
  EXPECT_LT(relative_error(persistent->profile.noise_stddev, 0.01), 0.25);
}

INSTANTIATE_TEST_SUITE_P(Seeds, SplitsTheNoise, ::testing::Values(1u, 2u, 3u, 42u, 2024u));

// One run has no spread between runs to split: its one-epoch residuals are all persistent.
TEST(FitLossProfile, OneRunCountsItsResidualsAsPersistent) {
  LossProfile truth = profile(1.0, 0.2, 0.8, 0.02);
  auto fit = fit_loss_profile(synthetic_runs(truth, 1, 60, 7), 2.3);
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  EXPECT_GT(fit->profile.noise_stddev, 0.01);
  EXPECT_EQ(fit->profile.validation_noise_stddev, 0);
  EXPECT_EQ(fit->profile.initial_stddev, 0);
}

// labelNoiseFloor: runs drawn from the model on 9,400 clean samples with 6% of the labels wrong
// (8,000 clean plus 2,000 with 30% wrong) give back the beta they were drawn with.
TEST(FitLabelNoiseFloor, RecoversTheBetaTheRunsWereDrawnWith) {
  LossProfile clean = profile(0.8, 0.4, 0.5, 0.0);
  clean.reference_samples = 8000;
  clean.data_exponent = 0.15;
  for (double beta : {0.0, 0.4, 1.1}) {
    ModelVariant noisy;
    noisy.loss = clean;
    noisy.loss.label_noise_floor = beta;
    std::vector<double> run;
    LossState s{clean.initial_loss, 0};
    for (int t = 0; t < 8; ++t) {
      s = epoch_step(noisy, 9400, 0.06, s);
      run.push_back(s.mean);
    }
    auto fit = fit_label_noise_floor(clean, 9400, 0.06, {run, run});
    ASSERT_TRUE(fit.has_value()) << fit.error().message;
    EXPECT_NEAR(*fit, beta, 1e-9);
  }
  // With noise: the mean curve's error is correlated across epochs (sd about 0.02 / 0.87 /
  // sqrt(K)), and beta's is that over the share 0.06: 0.027 with 200 runs, so 0.1 is 3.7 sd.
  LossProfile truth = clean;
  truth.noise_stddev = 0.02;
  truth.floor_loss = loss_floor(clean, 9400, 0) + 1.1 * 0.06;
  truth.decay_per_epoch = std::pow(clean.decay_per_epoch, 9400.0 / 8000.0);
  auto fit = fit_label_noise_floor(clean, 9400, 0.06, synthetic_runs(truth, 200, 8, 5));
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(*fit, 1.1, 0.1);
  // A curve below the clean model's gives no negative beta.
  std::vector<double> low(8, 0.3);
  EXPECT_EQ(*fit_label_noise_floor(clean, 9400, 0.06, {low}), 0.0);
}

TEST(FitLabelNoiseFloor, BadInputIsNamed) {
  LossProfile p = profile(0.8, 0.4, 0.5, 0.0);
  p.reference_samples = 8000;
  EXPECT_THAT(fit_label_noise_floor(p, 9400, 0, {{0.5, 0.4, 0.4}}).error().message,
              HasSubstr("share of wrong labels"));
  EXPECT_THAT(fit_label_noise_floor(p, 9400, 0.1, {{0.5, 0.4}, {0.5}}).error().message,
              HasSubstr("run 1 has 1 epochs"));
  EXPECT_THAT(fit_label_noise_floor(p, 9400, 0.1, {}).error().message, HasSubstr("no noisy runs"));
  EXPECT_THAT(fit_label_noise_floor(p, 9400, 0.1, {{0.5, std::nan("")}}).error().message,
              HasSubstr("run 0 epoch 2"));
}

TEST(FitLossProfile, NoiselessCurveIsRecoveredExactly) {
  const LossProfile truth = profile(3.0, 0.4, 0.9, 0.0);
  const auto runs = synthetic_runs(truth, 3, 40, 1);
  auto fit = fit_loss_profile(runs, truth.initial_loss);
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  EXPECT_NEAR(fit->profile.floor_loss, 0.4, 1e-6);
  EXPECT_NEAR(fit->profile.decay_per_epoch, 0.9, 1e-6);
  EXPECT_NEAR(fit->profile.initial_loss, 3.0, 1e-6);
  EXPECT_NEAR(fit->profile.noise_stddev, 0.0, 1e-6);
  EXPECT_NEAR(fit->profile.validation_noise_stddev, 0.0, 1e-6);
  EXPECT_NEAR(fit->profile.initial_stddev, 0.0, 1e-6);
  EXPECT_NEAR(fit->squared_error, 0.0, 1e-9);
}

// Real training (the reference worker on Fashion-MNIST) falls much faster in its first epoch
// than an exponential through the loss before training allows. The fit follows the measured
// epochs; the profile's initial loss is where that curve starts, not the untrained loss, so the
// model predicts the measured epochs instead of decaying too fast.
TEST(FitLossProfile, SteepFirstEpochDoesNotBendTheCurveOfTheLaterOnes) {
  const double untrained = 2.45;
  std::vector<double> curve;
  for (int t = 1; t <= 12; ++t) curve.push_back(0.40 + 0.30 * std::pow(0.75, t - 1));
  auto fit = fit_loss_profile({curve, curve}, untrained);
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  const LossProfile& p = fit->profile;
  EXPECT_NEAR(p.floor_loss, 0.40, 1e-6);
  EXPECT_NEAR(p.decay_per_epoch, 0.75, 1e-6);
  EXPECT_NEAR(p.initial_loss, 0.40 + 0.30 / 0.75, 1e-6);
  double loss = p.initial_loss;
  for (int t = 1; t <= 12; ++t) {
    loss = p.floor_loss + (loss - p.floor_loss) * p.decay_per_epoch;
    EXPECT_NEAR(loss, curve[static_cast<std::size_t>(t - 1)], 1e-6) << "epoch " << t;
  }
}

TEST(FitLossProfile, RejectsRaggedRuns) {
  auto fit = fit_loss_profile({{1.0, 0.8, 0.7, 0.65}, {1.0, 0.8, 0.7}}, 1.5);
  ASSERT_FALSE(fit.has_value());
  EXPECT_THAT(fit.error().message, HasSubstr("run 1 has 3 epochs but run 0 has 4"));
}

TEST(FitLossProfile, RejectsFewerThanThreeEpochs) {
  auto fit = fit_loss_profile({{1.0, 0.8}, {1.1, 0.9}}, 1.5);
  ASSERT_FALSE(fit.has_value());
  EXPECT_THAT(fit.error().message, HasSubstr("at least 3 epochs"));
}

TEST(FitLossProfile, RejectsNoRuns) {
  EXPECT_FALSE(fit_loss_profile({}, 1.5).has_value());
}

TEST(FitLossProfile, RejectsNonFiniteLosses) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto fit = fit_loss_profile({{1.0, 0.8, 0.7}, {1.0, nan, 0.7}}, 1.5);
  ASSERT_FALSE(fit.has_value());
  EXPECT_THAT(fit.error().message, HasSubstr("run 1 epoch 2"));
  auto inf = fit_loss_profile({{1.0, 0.8, std::numeric_limits<double>::infinity()}}, 1.5);
  EXPECT_FALSE(inf.has_value());
}

TEST(FitLossProfile, RejectsBadInitialLoss) {
  EXPECT_FALSE(fit_loss_profile({{1.0, 0.8, 0.7}}, 0).has_value());
  EXPECT_FALSE(fit_loss_profile({{1.0, 0.8, 0.7}}, std::nan("")).has_value());
}

TEST(FitLossProfile, RejectsLossesThatDoNotDecrease) {
  auto rising = fit_loss_profile({{1.0, 1.2, 1.5, 1.9}}, 0.8);
  ASSERT_FALSE(rising.has_value());
  EXPECT_THAT(rising.error().message, HasSubstr("do not decrease"));
  auto negative = fit_loss_profile({{0.5, -0.1, -0.2}}, 1.0);
  ASSERT_FALSE(negative.has_value());
  EXPECT_THAT(negative.error().message, HasSubstr("0 or below"));
}

TEST(FitSwitchJump, MeanAndSampleStddevOfTheChange) {
  auto fit = fit_switch_jump({1.0, 1.0, 1.0, 1.0}, {1.1, 1.3, 1.1, 1.3});
  ASSERT_TRUE(fit.has_value()) << fit.error().message;
  EXPECT_NEAR(fit->mean, 0.2, 1e-12);
  EXPECT_NEAR(fit->stddev, std::sqrt(0.04 / 3), 1e-12);
  auto one = fit_switch_jump({0.5}, {0.45});
  ASSERT_TRUE(one.has_value());
  EXPECT_NEAR(one->mean, -0.05, 1e-12);
  EXPECT_EQ(one->stddev, 0);
}

TEST(FitSwitchJump, RecoversASeededJump) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> jump(0.05, 0.02);
  std::uniform_real_distribution<double> level(0.6, 0.8);
  std::vector<double> before, after;
  for (int k = 0; k < 400; ++k) {
    before.push_back(level(rng));
    after.push_back(before.back() + jump(rng));
  }
  auto fit = fit_switch_jump(before, after);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->mean, 0.05, 0.004);
  EXPECT_NEAR(fit->stddev, 0.02, 0.003);
}

TEST(FitSwitchJump, RejectsBadInput) {
  EXPECT_FALSE(fit_switch_jump({}, {}).has_value());
  EXPECT_THAT(fit_switch_jump({1.0, 2.0}, {1.0}).error().message, HasSubstr("pair up"));
  EXPECT_FALSE(fit_switch_jump({1.0}, {std::numeric_limits<double>::infinity()}).has_value());
}

}  // namespace
}  // namespace depl::solver
