// The interruption rate a job observes on a pool: the stated rate updated by the preemptions over
// the time trained there (Gamma-Poisson, docs/depl-model.md section 7).
#include "depl/controller/interruption_rate.hpp"

#include <gtest/gtest.h>

#include "depl/common/time.hpp"

namespace depl::controller {
namespace {

// The figures docs/depl-model.md gives for a stated 0.1 per worker-hour and a prior of two
// interruptions.
TEST(InterruptionRate, TheStatedRateIsAPriorOfTwoInterruptions) {
  EXPECT_NEAR(posterior_interruption_rate(0.1, 1, 1.0, 2.0), 3.0 / 21.0, 1e-12);
  EXPECT_NEAR(posterior_interruption_rate(0.1, 3, 2.0, 2.0), 5.0 / 22.0, 1e-12);
  EXPECT_NEAR(posterior_interruption_rate(0.1, 2, 20.0, 2.0), 0.1, 1e-12);
  EXPECT_NEAR(posterior_interruption_rate(0.1, 0, 0.0, 2.0), 0.1, 1e-12);
  // No preemption in a long time lowers the posterior; the plan keeps the stated rate.
  EXPECT_LT(posterior_interruption_rate(0.1, 0, 100.0, 2.0), 0.1);
  PreemptionRecord quiet;
  quiet.worker_seconds = 100 * 3600.0;
  EXPECT_EQ(planning_interruption_rate(0.1, quiet, 2.0), 0.1);
}

// One early preemption moves the rate by a bounded factor ((a0 + 1) / a0), however early; many
// move it in proportion.
TEST(InterruptionRate, OneEarlyPreemptionDoesNotSwingIt) {
  PreemptionRecord one{1, "", "", 0, 60};
  EXPECT_LE(planning_interruption_rate(0.5, one, 2.0), 0.5 * 1.5 + 1e-12);
  PreemptionRecord six{6, "", "", 0, 60};
  EXPECT_GT(planning_interruption_rate(0.5, six, 2.0), 0.5 * 3.9);
  // A heavier prior moves less.
  EXPECT_LT(planning_interruption_rate(0.5, six, 8.0), planning_interruption_rate(0.5, six, 2.0));
}

TEST(InterruptionRate, OnDemandPoolsAndAnOffPriorKeepTheStatedRate) {
  PreemptionRecord evicted{4, "", "", 0, 600};
  EXPECT_EQ(planning_interruption_rate(0.0, evicted, 2.0), 0.0);
  EXPECT_EQ(planning_interruption_rate(0.3, evicted, 0.0), 0.3);
}

TEST(InterruptionRate, TrainingTimeIsKeptForPoolsWithInterruptionsOrARecord) {
  JobStatus status;
  status.pool_figures["spot"].interruptions_per_hour = 0.2;
  status.pool_figures["od"];
  add_training_time(status, "spot", 120);
  add_training_time(status, "spot", 30);
  add_training_time(status, "od", 50);
  add_training_time(status, "spot", -5);
  EXPECT_EQ(status.preemptions.at("spot").worker_seconds, 150);
  EXPECT_EQ(status.preemptions.count("od"), 0u);
  status.preemptions["od"].count = 1;  // an eviction there
  add_training_time(status, "od", 50);
  EXPECT_EQ(status.preemptions.at("od").worker_seconds, 50);
}

TEST(InterruptionRate, SecondsSinceIsNeverNegative) {
  const auto at = *parse_rfc3339("2027-01-15T08:00:00Z");
  EXPECT_EQ(seconds_since("2027-01-15T07:59:00Z", at), 60);
  EXPECT_EQ(seconds_since("2027-01-15T08:01:00Z", at), 0);
  EXPECT_EQ(seconds_since("", at), 0);
}

}  // namespace
}  // namespace depl::controller
