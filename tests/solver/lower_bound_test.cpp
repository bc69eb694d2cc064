// The certificate: a class of selections has data no selection in it beats (samples, staging,
// one epoch of the loss from any state), the lower bound is never above OPT's cost on seeded
// instances (small ones, with and without deadlines, and ones with enough datasets for the
// branch and bound over classes), and the plans the bound's searches find only ever make DepL's
// plan cheaper.
#include "../../solver/src/lower_bound.hpp"

#include <gtest/gtest.h>

#include <random>

#include "depl/solver/solve.hpp"
#include "depl/solver/testing/instance_families.hpp"

namespace depl::solver {
namespace {

SolveResult run(const Problem& p, Algorithm a, bool certify = true) {
  SolveOptions o;
  o.algorithm = a;
  o.certify = certify;
  auto r = solve(p, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : SolveResult{};
}

Problem with_deadline(Problem p, double fraction) {
  const SolveResult opt = run(p, Algorithm::Opt);
  if (opt.feasible) p.target.deadline_seconds = fraction * opt.figures.duration_seconds;
  return p;
}

// Instances with 7 or 8 datasets (more than the certificate enumerates one by one, so its
// classes and their splits are used) that OPT can still enumerate.
Problem many_datasets_instance(std::uint64_t seed) {
  testing::InstanceShape shape;
  shape.datasets = 7 + static_cast<int>(seed % 2);
  shape.compute_ratios = {1.0, 0.3};
  shape.pools = 1;
  shape.max_switches = 1;
  shape.horizon = 8;
  shape.max_workers = 1;
  shape.decay = 0.6;
  shape.samples_low = 5'000;
  shape.samples_high = 40'000;
  shape.gflop_per_sample = 2000;
  return testing::make_instance(seed, shape);
}

// Label noise on about half the datasets and a floor that rises with it, so that adding data
// can raise the loss a plan reaches.
Problem with_label_noise(Problem p, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 1);
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() % 10'000) / 10'000.0;
  };
  for (Dataset& d : p.datasets) {
    if (rng() % 2 == 0) d.label_noise = uniform(0.05, 0.6);
  }
  for (ModelVariant& m : p.models) m.loss.label_noise_floor = uniform(0.2, 1.5);
  return p;
}

void expect_bound_below_opt(const Problem& p, const std::string& what, int& compared) {
  const SolveResult opt = run(p, Algorithm::Opt);
  const SolveResult depl = run(p, Algorithm::DepL);
  if (!opt.feasible || !depl.feasible) return;
  ++compared;
  EXPECT_LE(depl.certificate.lower_bound, opt.figures.cost * (1 + 1e-9)) << what;
  EXPECT_LE(depl.certificate.lower_bound, depl.figures.cost * (1 + 1e-9)) << what;
  EXPECT_GE(depl.certificate.gap, -1e-9) << what;
}

TEST(LowerBound, NeverAboveOptOnSmallInstances) {
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    Problem p = testing::small_instance(seed);
    if (seed % 3 == 0) p = with_deadline(p, 0.8);
    expect_bound_below_opt(p, "small seed " + std::to_string(seed), compared);
  }
  EXPECT_GT(compared, 100);
}

TEST(LowerBound, NeverAboveOptAcrossSelectionClasses) {
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    Problem p = many_datasets_instance(seed);
    if (seed % 4 == 0) p = with_deadline(p, 0.9);
    expect_bound_below_opt(p, "many datasets seed " + std::to_string(seed), compared);
  }
  EXPECT_GT(compared, 12);
}

TEST(LowerBound, NeverAboveOptWithNoisyDatasets) {
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    Problem p = with_label_noise(testing::small_instance(seed), seed);
    if (seed % 3 == 0) p = with_deadline(p, 0.8);
    expect_bound_below_opt(p, "noisy small seed " + std::to_string(seed), compared);
  }
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const Problem p = with_label_noise(many_datasets_instance(seed), seed);
    expect_bound_below_opt(p, "noisy many datasets seed " + std::to_string(seed), compared);
  }
  EXPECT_GT(compared, 30);
}

// Every selection of a class has at least the class's samples and staging, and one epoch from
// any state ends no lower under the selection's dynamics than under the class's (with label
// noise: the class's floor takes the least share of wrong labels of any of its selections).
TEST(LowerBound, ClassDataRelaxEverySelectionInTheClass) {
  std::size_t checked = 0, members_in_range = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Problem p = seed > 30 ? with_label_noise(many_datasets_instance(seed), seed)
                                : many_datasets_instance(seed);
    const internal::SearchContext ctx = internal::make_context(p, guarantee_kappa(p.target));
    const std::size_t n = p.datasets.size();
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 6; ++trial) {
      internal::SelectionClass cls{std::vector<bool>(n, false), std::vector<bool>(n, false), 0, 0};
      for (std::size_t d = 0; d < n; ++d) {
        const int r = static_cast<int>(rng() % 4);
        cls.in[d] = r == 0;
        cls.out[d] = r == 1;
      }
      std::vector<std::vector<std::size_t>> members;
      for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
        std::vector<std::size_t> d;
        bool fits = true;
        for (std::size_t i = 0; i < n; ++i) {
          const bool in = (mask >> i) & 1;
          fits = fits && !(cls.in[i] && !in) && !(cls.out[i] && in);
          if (in) d.push_back(i);
        }
        if (fits) members.push_back(d);
      }
      if (members.empty()) continue;
      // E ranges around some members (not all: the class is cut by E as well): a wide one, and
      // narrow ones around a member, down to that member's E alone, where most free datasets
      // are in every member or in none (the class data decide them so).
      std::vector<double> es;
      for (const auto& d : members) es.push_back(effective_samples(p, d));
      std::sort(es.begin(), es.end());
      const double mid = es[es.size() / 2];
      for (const auto& [low, high] : std::vector<std::pair<double, double>>{
               {es[es.size() / 4], es[es.size() * 3 / 4]}, {mid * 0.97, mid * 1.03}, {mid, mid}}) {
        cls.e_low = low;
        cls.e_high = high;
        const internal::SelectionData data = internal::make_class_data(ctx, cls);
        for (const auto& d : members) {
          const double e = effective_samples(p, d);
          if (e < cls.e_low || e > cls.e_high) continue;
          ++members_in_range;
          const internal::SelectionData exact = internal::make_selection_data(ctx, d);
          EXPECT_LE(data.samples, exact.samples * (1 + 1e-12));
          for (std::size_t k = 0; k < p.pools.size(); ++k) {
            EXPECT_LE(data.staging_seconds[k], exact.staging_seconds[k] * (1 + 1e-12) + 1e-12);
          }
          for (std::size_t v = 0; v < p.models.size(); ++v) {
            for (double mean : {0.05, 0.3, 0.6, 1.0, 1.7, 2.4}) {
              for (double variance : {0.0, 1e-4, 1e-2}) {
                const LossState relaxed = internal::step(data.dynamics[v], {mean, variance});
                const LossState real = internal::step(exact.dynamics[v], {mean, variance});
                EXPECT_LE(relaxed.mean, real.mean + 1e-12) << "seed " << seed << " v " << v;
                EXPECT_LE(relaxed.variance, real.variance + 1e-15) << "seed " << seed;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(members_in_range, 1000u);
}

// The certificate's searches may find a plan cheaper than the plan's search; DepL returns it,
// so its plan with the certificate is never dearer than without, and still feasible.
TEST(LowerBound, CertificateOnlyEverLowersThePlansCost) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Problem p = testing::paper_like_instance(seed);
    const SolveResult graph = run(p, Algorithm::DepL, false);
    const SolveResult certified = run(p, Algorithm::DepL, true);
    ASSERT_TRUE(graph.feasible && certified.feasible) << "seed " << seed;
    EXPECT_TRUE(evaluate(p, certified.plan).feasible) << "seed " << seed;
    EXPECT_LE(certified.figures.cost, graph.figures.cost * (1 + 1e-9)) << "seed " << seed;
    EXPECT_LE(certified.certificate.lower_bound, certified.figures.cost) << "seed " << seed;
    EXPECT_TRUE(certified.certificate.complete) << "seed " << seed;
    EXPECT_LE(certified.certificate.gap, 0.01) << "seed " << seed;
  }
}

// The branch and bound splits the class of least bound; a part's own search may be cut by the
// effort cap before it proves as much as its class did, and the class's bound holds for its
// selections all the same. On large-family seed 14 (25 datasets) the cap is reached: with each
// part reporting only its own search's bound the certificate said 3.888 (gap 9.7%); with the
// class's bound kept, 4.049 (5.9%).
TEST(LowerBound, APartOfAClassKeepsTheClassBound) {
  const Problem p = testing::large_family_instance(14);
  const SolveResult r = run(p, Algorithm::DepL);
  ASSERT_TRUE(r.feasible);
  EXPECT_FALSE(r.certificate.complete);  // the effort cap is what this is about
  EXPECT_GE(r.certificate.lower_bound, 4.0);
  EXPECT_LE(r.certificate.lower_bound, r.figures.cost);
}

}  // namespace
}  // namespace depl::solver
