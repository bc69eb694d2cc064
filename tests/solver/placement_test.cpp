// pareto_placements against the rule it implements, pair by pair: q is dropped when some p has
// no more epoch time and rate and a fixed part no longer (same pool, or p's startup + staging at
// most q's startup), unless q dominates p back and comes first. Seeded placement sets with
// many ties (shared prices, equal epoch times), and the order of what is kept.
#include "../../solver/src/placement.hpp"

#include <gtest/gtest.h>

#include <random>

namespace depl::solver::internal {
namespace {

bool dominates(const Problem& problem, const Placement& p, const Placement& q,
               const std::vector<double>& staging) {
  if (p.epoch_seconds > q.epoch_seconds || p.rate > q.rate) return false;
  if (p.pool == q.pool) return true;
  return problem.pools[p.pool].startup_seconds + staging[p.pool] <=
         problem.pools[q.pool].startup_seconds;
}

std::vector<Placement> reference(const Problem& problem, const std::vector<Placement>& all,
                                 const std::vector<double>& staging) {
  std::vector<Placement> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool dropped = false;
    for (std::size_t j = 0; j < all.size() && !dropped; ++j) {
      if (i == j || !dominates(problem, all[j], all[i], staging)) continue;
      dropped = !dominates(problem, all[i], all[j], staging) || j < i;
    }
    if (!dropped) out.push_back(all[i]);
  }
  return out;
}

TEST(ParetoPlacements, KeepsExactlyWhatThePairwiseRuleKeeps) {
  std::size_t kept = 0, total = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Problem problem;
    const int pools = pick(1, 6);
    std::vector<double> staging;
    for (int k = 0; k < pools; ++k) {
      Pool pool;
      pool.name = "p" + std::to_string(k);
      pool.startup_seconds = pick(0, 4) * 10.0;  // ties on purpose
      problem.pools.push_back(pool);
      staging.push_back(pick(0, 3) * 10.0);
    }
    std::vector<Placement> all;
    const int count = pick(1, 40);
    for (int i = 0; i < count; ++i) {
      Placement p;
      p.pool = static_cast<std::size_t>(pick(0, pools - 1));
      p.workers = pick(1, 8);
      p.rate = pick(1, 6) * 0.5;
      p.epoch_seconds = pick(1, 8) * 100.0;
      all.push_back(p);
    }
    const std::vector<Placement> expected = reference(problem, all, staging);
    const std::vector<Placement> got = pareto_placements(problem, all, staging);
    ASSERT_EQ(got.size(), expected.size()) << "seed " << seed;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].pool, expected[i].pool) << "seed " << seed << " at " << i;
      EXPECT_EQ(got[i].workers, expected[i].workers) << "seed " << seed << " at " << i;
      EXPECT_EQ(got[i].rate, expected[i].rate) << "seed " << seed << " at " << i;
      EXPECT_EQ(got[i].epoch_seconds, expected[i].epoch_seconds) << "seed " << seed;
    }
    kept += got.size();
    total += all.size();
  }
  EXPECT_LT(kept, total);  // the sets are not trivially all kept
}

}  // namespace
}  // namespace depl::solver::internal
