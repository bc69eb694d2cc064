// DominanceIndex answers exactly what a scan over every inserted label would: seeded random
// inserts and queries, cells inside and outside the indexed span, ties on every coordinate.
#include "../../solver/src/dominance_index.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace depl::solver::internal {
namespace {

struct Inserted {
  std::int32_t mean_cell;
  std::int32_t variance_cell;
  double weight;
};

bool scan(const std::vector<Inserted>& all, std::int32_t m, std::int32_t v, double w) {
  for (const Inserted& e : all) {
    if (e.mean_cell <= m && e.variance_cell <= v && e.weight <= w) return true;
  }
  return false;
}

TEST(DominanceIndex, AgreesWithAScanOverEveryInsertedLabel) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int32_t> mean(-5, 45), variance(0, 30), weight(0, 40);
    DominanceIndex index(0, 40);  // cells -5..-1 and 40..45 fall outside the span
    std::vector<Inserted> all;
    for (int step = 0; step < 400; ++step) {
      const std::int32_t m = mean(rng), v = variance(rng);
      const double w = weight(rng) * 0.25;
      ASSERT_EQ(index.covers(m, v, w), scan(all, m, v, w))
          << "seed " << seed << " step " << step << " query (" << m << ", " << v << ", " << w
          << ")";
      if (step % 2 == 0) {
        index.insert(m, v, w);
        all.push_back({m, v, w});
      }
    }
  }
}

TEST(DominanceIndex, EmptyUntilGivenASpan) {
  EXPECT_TRUE(DominanceIndex().empty());
  DominanceIndex index(0, 10);
  EXPECT_FALSE(index.empty());
  EXPECT_FALSE(index.covers(10, 10, 1e9));
  index.insert(3, 4, 2.0);
  EXPECT_TRUE(index.covers(3, 4, 2.0));
  EXPECT_FALSE(index.covers(2, 4, 2.0));
  EXPECT_FALSE(index.covers(3, 3, 2.0));
  EXPECT_FALSE(index.covers(3, 4, 1.999));
}

}  // namespace
}  // namespace depl::solver::internal
