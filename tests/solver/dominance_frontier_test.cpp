// DominanceFrontier answers exactly what a scan over every inserted label would, though it
// drops the labels another dominates: seeded random inserts and queries (blocks of its scan
// full, partial and empty), ties on every coordinate.
#include "../../solver/src/dominance_frontier.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace depl::solver::internal {
namespace {

struct Inserted {
  std::int32_t mean_cell;
  std::int32_t variance_cell;
  std::int32_t epochs;
  double weight;
};

bool scan(const std::vector<Inserted>& all, const Inserted& q) {
  for (const Inserted& e : all) {
    if (e.mean_cell <= q.mean_cell && e.variance_cell <= q.variance_cell && e.epochs <= q.epochs &&
        e.weight <= q.weight) {
      return true;
    }
  }
  return false;
}

TEST(DominanceFrontier, AgreesWithAScanOverEveryInsertedLabel) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int32_t> mean(-5, 45), variance(0, 30), epochs(1, 25),
        weight(0, 40);
    DominanceFrontier frontier;
    std::vector<Inserted> all;
    for (int step = 0; step < 1500; ++step) {
      const Inserted q{mean(rng), variance(rng), epochs(rng), weight(rng) * 0.25};
      ASSERT_EQ(frontier.covers(q.mean_cell, q.variance_cell, q.epochs, q.weight), scan(all, q))
          << "seed " << seed << " step " << step << " query (" << q.mean_cell << ", "
          << q.variance_cell << ", " << q.epochs << ", " << q.weight << ")";
      if (step % 2 == 0) {
        frontier.insert(q.mean_cell, q.variance_cell, q.epochs, q.weight);
        all.push_back(q);
      }
    }
    EXPECT_LT(frontier.size(), all.size());  // the dominated ones were dropped
  }
}

TEST(DominanceFrontier, EveryCriterionCounts) {
  DominanceFrontier frontier;
  EXPECT_FALSE(frontier.covers(10, 10, 10, 1e9));
  frontier.insert(3, 4, 5, 2.0);
  EXPECT_TRUE(frontier.covers(3, 4, 5, 2.0));
  EXPECT_FALSE(frontier.covers(2, 4, 5, 2.0));
  EXPECT_FALSE(frontier.covers(3, 3, 5, 2.0));
  EXPECT_FALSE(frontier.covers(3, 4, 4, 2.0));
  EXPECT_FALSE(frontier.covers(3, 4, 5, 1.999));
  frontier.insert(3, 4, 5, 1.0);  // dominates the first
  EXPECT_EQ(frontier.size(), 1u);
  EXPECT_TRUE(frontier.covers(3, 4, 5, 1.0));
  frontier.clear();
  EXPECT_FALSE(frontier.covers(3, 4, 5, 2.0));
}

}  // namespace
}  // namespace depl::solver::internal
