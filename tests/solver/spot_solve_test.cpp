// DepL and OPT with spot pools (docs/depl-model.md sections 2, 3 and 8): every pool of a small
// instance gets a spot twin at 30% of its price, interrupted 0.1 to 1 times per worker-hour.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <stop_token>
#include <vector>

#include "../../solver/src/lower_bound.hpp"
#include "depl/solver/solve.hpp"
#include "depl/solver/testing/instance_families.hpp"
#include "support/stepping_clock.hpp"

namespace depl::solver {
namespace {

using testing::SteppingClock;
using testing::with_spot_twins;

SolveResult run(const Problem& p, Algorithm a) {
  SolveOptions o;
  o.algorithm = a;
  auto r = solve(p, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : SolveResult{};
}

bool uses_spot(const Problem& p, const Plan& plan) {
  return std::any_of(plan.phases.begin(), plan.phases.end(),
                     [&](const Phase& ph) { return p.pools[ph.pool].interruptions_per_hour > 0; });
}

// DepL's plan on spot pools is feasible under the evaluator, never cheaper than OPT (which
// scores the deadline's chance constraint exactly), never dearer than DepL's plan on the
// on-demand pools alone, and at least 40% cheaper than it in the median (the target on
// a family with spot at 30% of the price). A deadline at 1.05 times the on-demand plan's
// duration leaves the spot plans little slack: they must take their share of the promise.
TEST(SpotPools, DepLIsFeasibleNotBelowOptAndCheaperThanOnDemand) {
  std::vector<double> ratios;
  int compared = 0, with_deadline = 0, spot_with_deadline = 0;
  for (int seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    Problem base = testing::small_instance(static_cast<std::uint64_t>(seed));
    for (ModelVariant& m : base.models) m.checkpoint_bytes = 2 * m.parameter_bytes;
    const SolveResult od = run(base, Algorithm::DepL);
    if (!od.feasible) continue;
    if (seed % 3 == 0) base.target.deadline_seconds = 1.05 * od.figures.duration_seconds;
    const Problem spot = with_spot_twins(base, static_cast<std::uint64_t>(seed));
    const SolveResult depl = run(spot, Algorithm::DepL);
    const SolveResult opt = run(spot, Algorithm::Opt);
    ASSERT_TRUE(depl.feasible) << depl.reason;
    const Figures f = evaluate(spot, depl.plan);
    EXPECT_TRUE(f.feasible) << (f.violations.empty() ? "" : f.violations.front());
    EXPECT_DOUBLE_EQ(f.cost, depl.figures.cost);
    EXPECT_LE(depl.figures.cost, od.figures.cost * (1 + 1e-9));
    ASSERT_TRUE(opt.feasible) << opt.reason;
    EXPECT_TRUE(evaluate(spot, opt.plan).feasible);
    EXPECT_GE(depl.figures.cost, opt.figures.cost * (1 - 1e-9));
    ++compared;
    if (base.target.deadline_seconds) {
      ++with_deadline;
      spot_with_deadline += uses_spot(spot, depl.plan);
      EXPECT_GT(f.on_time_probability, spot.target.probability);
    } else {
      ratios.push_back(depl.figures.cost / od.figures.cost);
    }
  }
  ASSERT_GE(compared, 12);
  ASSERT_GE(with_deadline, 4);
  EXPECT_GT(spot_with_deadline, 0) << "a deadline should not rule spot out everywhere";
  std::sort(ratios.begin(), ratios.end());
  EXPECT_LE(ratios[ratios.size() / 2], 0.6);
}

// One pool and its spot twin (the same GPUs at 30% of the price), one worker: without a deadline
// the job runs on spot; with a deadline barely above the on-demand plan's duration an
// interruption on spot makes it late: the spot plan breaks the deadline's chance constraint and
// the plan moves to on-demand, as OPT's does.
TEST(SpotPools, TightDeadlineMovesThePlanToOnDemand) {
  Problem base = testing::small_instance(4);
  base.pools.resize(1);
  base.training.min_workers = 1;
  base.training.max_workers = 1;
  for (Dataset& d : base.datasets) d.locality.clear();
  for (ModelVariant& m : base.models) m.checkpoint_bytes = 2 * m.parameter_bytes;
  Problem spot = with_spot_twins(base, 4);
  spot.pools[1].interruptions_per_hour = 0.5;
  const SolveResult free = run(spot, Algorithm::DepL);
  ASSERT_TRUE(free.feasible) << free.reason;
  EXPECT_EQ(free.plan.phases.size(),
            static_cast<std::size_t>(std::count_if(free.plan.phases.begin(), free.plan.phases.end(),
                                                   [](const Phase& ph) { return ph.pool == 1; })))
      << "all on spot";
  const SolveResult od = run(base, Algorithm::DepL);
  ASSERT_TRUE(od.feasible);
  spot.target.deadline_seconds = od.figures.duration_seconds * 1.001;
  const Figures late = evaluate(spot, free.plan);
  EXPECT_FALSE(late.feasible);
  ASSERT_FALSE(late.violations.empty());
  EXPECT_EQ(late.violations[0].rfind("deadline: P(done by", 0), 0u) << late.violations[0];
  const SolveResult tight = run(spot, Algorithm::DepL);
  ASSERT_TRUE(tight.feasible) << tight.reason;
  EXPECT_GT(tight.figures.on_time_probability, spot.target.probability);
  EXPECT_GT(tight.figures.cost, free.figures.cost);
  EXPECT_LE(tight.figures.cost, od.figures.cost * (1 + 1e-9));
  const SolveResult opt = run(spot, Algorithm::Opt);
  ASSERT_TRUE(opt.feasible) << opt.reason;
  EXPECT_GE(tight.figures.cost, opt.figures.cost * (1 - 1e-9));
  // OPT agrees: every epoch goes to on-demand capacity.
  EXPECT_FALSE(uses_spot(spot, tight.plan));
  EXPECT_FALSE(uses_spot(spot, opt.plan));
}

// The certificate with spot pools (docs/depl-model.md section 8): the bound search prices a spot
// epoch by its expectation and relaxes the deadline's chance constraint to the expected
// duration and the loss to p, both implied by the evaluator's test. Asked for a bound above
// OPT's cost (so that it cannot stop at the target), it proves one no higher than OPT's
// expected cost, with or without a deadline; so does the certificate DepL reports.
TEST(SpotPools, LowerBoundNeverAboveOpt) {
  int compared = 0, with_deadline = 0, below_on_demand = 0;
  for (int seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    Problem base = testing::small_instance(static_cast<std::uint64_t>(seed));
    for (ModelVariant& m : base.models) m.checkpoint_bytes = 2 * m.parameter_bytes;
    const SolveResult od = run(base, Algorithm::DepL);
    if (!od.feasible) continue;
    if (seed % 2 == 0) base.target.deadline_seconds = 1.02 * od.figures.duration_seconds;
    const Problem spot = with_spot_twins(base, static_cast<std::uint64_t>(seed));
    const SolveResult opt = run(spot, Algorithm::Opt);
    const SolveResult depl = run(spot, Algorithm::DepL);
    if (!opt.feasible || !depl.feasible) continue;
    ++compared;
    with_deadline += spot.target.deadline_seconds.has_value();
    const internal::SearchContext ctx = internal::make_context(spot, guarantee_kappa(spot.target));
    const internal::LowerBound bound =
        internal::certify_lower_bound(ctx, 2 * od.figures.cost, SolveOptions{}.eta, std::nullopt);
    EXPECT_TRUE(bound.complete);
    EXPECT_GT(bound.cost, 0);
    EXPECT_LE(bound.cost, opt.figures.cost * (1 + 1e-9));
    below_on_demand += bound.cost < od.figures.cost * 0.9;
    EXPECT_LE(depl.certificate.lower_bound, opt.figures.cost * (1 + 1e-9));
  }
  EXPECT_GE(compared, 12);
  EXPECT_GE(with_deadline, 5);
  EXPECT_GT(below_on_demand, compared / 2) << "the bound prices spot epochs, not on-demand ones";
}

Problem large_spot_instance(std::uint64_t seed) {
  Problem p = testing::large_instance(seed, 20, 6, 12, 300);
  p.target.deadline_seconds = 1e7;
  return with_spot_twins(std::move(p), seed);
}

// The budget holds across the searches DepL runs on pools with interruptions (the problem and
// its variants): a spent time budget stops them all soon and the plan found first is kept; a
// cancelled solve searches no graph.
TEST(SpotPools, BudgetAndCancellationStopEverySearch) {
  const Problem p = large_spot_instance(1);
  SteppingClock clock(std::chrono::milliseconds(1));
  SolveOptions timed;
  timed.budget.time = std::chrono::milliseconds(40);
  timed.budget.clock = &clock;
  auto r = solve(p, timed);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->stopped, BudgetStop::Time);
  EXPECT_LE(clock.reads(), 80);
  if (r->feasible) {
    EXPECT_TRUE(evaluate(p, r->plan).feasible);
  }
  EXPECT_FALSE(r->certificate.complete);

  std::stop_source source;
  source.request_stop();
  SolveOptions cancelled;
  cancelled.budget.stop = source.get_token();
  auto c = solve(p, cancelled);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->stopped, BudgetStop::Cancelled);
  EXPECT_EQ(c->stats.graph_states, 0u);
  EXPECT_LE(c->stats.plans_checked, 1u) << "one evaluation at most: no variant is searched";
}

}  // namespace
}  // namespace depl::solver
