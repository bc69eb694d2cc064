// The explanation of an infeasible result (why no plan meets the guarantee) within the solve's
// budget: it stops where the time and the memory end, says that it was cut, and does not make
// the plan's complete search look cut. Two problems from the solve fuzz target (fuzz/solve_fuzz.cpp
// builds problems from bytes; these are two of its inputs, written out).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../../solver/src/budget_meter.hpp"
#include "../../solver/src/explain.hpp"
#include "../../solver/src/reachability.hpp"
#include "../../solver/src/search_context.hpp"
#include "depl/solver/solve.hpp"
#include "support/stepping_clock.hpp"

namespace depl::solver {
namespace {

using testing::SteppingClock;

void add_pool(Problem& p, int gpus, double gflops, double price, double bandwidth,
              double storage_bandwidth, double startup, std::map<std::string, double> inter_pool,
              double interruptions_per_hour) {
  Pool& pool = p.pools.emplace_back();
  pool.name = fmt::format("pool-{}", p.pools.size() - 1);
  pool.gpu_type = "gpu";
  pool.gpus = gpus;
  pool.gpu_gflops = gflops;
  pool.price_per_gpu_hour = price;
  pool.bandwidth = bandwidth;
  pool.storage_bandwidth = storage_bandwidth;
  pool.startup_seconds = startup;
  pool.inter_pool = std::move(inter_pool);
  if (interruptions_per_hour > 0) {
    pool.capacity_type = CapacityType::Spot;
    pool.interruptions_per_hour = interruptions_per_hour;
  }
}

void add_dataset(Problem& p, std::int64_t samples, double quality, double label_noise, double bytes,
                 const std::string& local_to) {
  Dataset& d = p.datasets.emplace_back();
  d.name = fmt::format("data-{}", p.datasets.size() - 1);
  d.samples = samples;
  d.quality = quality;
  d.label_noise = label_noise;
  d.size_bytes = bytes;
  if (!local_to.empty()) d.locality.push_back(local_to);
}

struct Loss {
  double initial, floor, decay, noise, reference_samples, data_exponent, label_noise_floor;
};

void add_model(Problem& p, double gflop_per_sample, double parameter_bytes, int gpus_per_worker,
               const Loss& loss) {
  ModelVariant& m = p.models.emplace_back();
  m.name = fmt::format("v{}", p.models.size() - 1);
  m.image = fmt::format("example/{}:1", m.name);
  m.compute_per_sample_gflop = gflop_per_sample;
  m.parameter_bytes = parameter_bytes;
  m.gpus_per_worker = gpus_per_worker;
  m.loss.initial_loss = loss.initial;
  m.loss.floor_loss = loss.floor;
  m.loss.decay_per_epoch = loss.decay;
  m.loss.noise_stddev = loss.noise;
  m.loss.reference_samples = loss.reference_samples;
  m.loss.data_exponent = loss.data_exponent;
  m.loss.label_noise_floor = loss.label_noise_floor;
}

// No variant's floor on any selection, less every drop the switches allow, comes near the
// target: no number of epochs meets it. Its explanation once followed every path 50 times the
// horizon (about a million states per selection, 10 s and more than 32 MiB).
Problem unreachable_at_any_length() {
  Problem p;
  p.training = {512, 19, 2, 1, 1};
  add_pool(p, 6, 340219.40612792969, 6.3414291381835941, 1600714111.328125, 81173095.703125,
           204.2724609375, {{"pool-1", 9999847564.6972656}, {"pool-2", 9999847564.6972656}}, 0.0);
  add_pool(p, 5, 323561.93542480469, 0.20535583496093751, 199996949768.06641, 2999954376.2207031,
           299.99542236328125, {{"pool-0", 9999847564.6972656}, {"pool-2", 9999847564.6972656}},
           1.999969482421875);
  add_pool(p, 8, 399993.91174316406, 7.9998794555664059, 199996949768.06641, 2999954376.2207031,
           299.99542236328125, {{"pool-0", 1819102172.8515625}}, 1.999969482421875);
  add_dataset(p, 238526, 0.0942840576171875, 0.45332946777343747, 25392150878.90625, "");
  add_dataset(p, 11902, 0.319091796875, 0.0, 76876831054.6875, "pool-0");
  add_dataset(p, 208977, 0.001, 0.69998931884765625, 99998474121.09375, "pool-0");
  add_model(p, 59.999084625244137, 999984741.2109375, 2,
            {3.9999465942382812, 3.5998970039072447, 0.98998947143554683, 0.09999847412109375,
             999984.75646972656, 0.12694549560546875, 1.999969482421875});
  add_model(p, 59.999084625244137, 999984741.2109375, 2,
            {3.9999465942382812, 3.5998970039072447, 0.98998947143554683, 0.099679565429687506,
             893493.45397949219, 0.0, 0.0});
  add_model(p, 37.308775177001955, 347457885.7421875, 2,
            {3.9999465942382812, 2.7579160582157782, 0.74895904541015623, 0.04595947265625,
             122247.03979492188, 0.47397613525390625, 0.0});
  p.switching.push_back(
      {"v0", "v1", -0.015238952636718761, 0.017771911621093751, 287.0452880859375});
  p.switching.push_back({"v1", "v0", 0.27667694091796874, 0.0414276123046875, 88.6962890625});
  p.switching.push_back({"v1", "v2", -0.14110870361328126, 0.090338134765625008, 162.890625});
  p.switching.push_back({"v2", "v1", 0.29999237060546874, 0.09999847412109375, 599.74365234375});
  p.target.guarantee = Guarantee::DistributionFree;
  p.target.probability = 0.90756530761718746;
  p.target.loss = 2.5020961095683742;
  p.target.budget = 10.111271423339844;
  return p;
}

// The target is below where the loss can go within 50 times the horizon, but not provably out
// of reach: the explanation follows many states past the horizon.
Problem out_of_reach_past_the_horizon() {
  Problem p;
  p.training = {192, 19, 2, 1, 1};
  add_pool(p, 1, 362380.66101074219, 6.8163742065429691, 158031858825.68359, 32446899.4140625,
           7.14111328125, {{"pool-1", 4471019134.5214844}}, 0.0);
  add_pool(p, 1, 189224.54833984375, 6.4865646362304688, 2765902709.9609375, 2681226654.0527344,
           247.00927734375, {{"pool-0", 1785413970.9472656}}, 0.338623046875);
  add_pool(p, 4, 81681.57958984375, 1.0766510009765626, 101968595886.23047, 1973601837.1582031,
           21.66595458984375, {{"pool-0", 1521396026.6113281}}, 0.0);
  add_dataset(p, 30106, 0.9447479248046875, 0.0, 62936401367.1875, "pool-0");
  add_dataset(p, 133339, 0.499053955078125, 0.37055053710937497, 19163513183.59375, "");
  add_dataset(p, 452858, 0.1498260498046875, 0.0, 25392150878.90625, "");
  add_model(p, 40.857683105468752, 471740722.65625, 1,
            {0.58331298828125, 0.50244791423901913, 0.58810363769531249, 0.071023559570312506,
             783892.47131347656, 0.17372894287109375, 1.532196044921875});
  add_model(p, 39.02876434326172, 459594726.5625, 2,
            {0.58331298828125, 0.037914098147302865, 0.95408706665039067, 0.04465484619140625,
             370152.57263183594, 0.2489776611328125, 0.302581787109375});
  add_model(p, 57.201699371337888, 414276123.046875, 2,
            {0.58331298828125, 0.4442430046387017, 0.38126998901367187, 0.090338134765625008,
             272212.890625, 0.0, 1.0587158203125});
  p.switching.push_back({"v0", "v1", -0.16983337402343751, 0.023046875000000001, 0.0});
  p.target.guarantee = Guarantee::Gaussian;
  p.target.probability = 0.5;
  p.target.loss = 0.0058331298828125005;
  return p;
}

TEST(Explanation, AnUnreachableTargetIsExplainedWithinASmallBudget) {
  const Problem p = unreachable_at_any_length();
  SteppingClock clock(std::chrono::microseconds(1));
  SolveOptions options;
  options.budget.memory_bytes = std::size_t{32} << 20;  // the solve fuzz target's
  options.budget.time = std::chrono::seconds(10);
  options.budget.clock = &clock;
  const auto r = solve(p, options);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->feasible);
  EXPECT_EQ(r->stopped, BudgetStop::None);
  EXPECT_TRUE(r->infeasibility.complete);
  EXPECT_EQ(r->infeasibility.binding, "guarantee");
  EXPECT_NE(r->reason.find("No schedule reaches loss 2.502"), std::string::npos) << r->reason;
  EXPECT_NE(r->reason.find("even without a deadline or budget"), std::string::npos) << r->reason;
  // The work, counted in the budget's clock reads (one per 256 states): the states past the
  // horizon are never followed.
  EXPECT_LE(clock.reads(), 200);
}

internal::SelectionData every_dataset(const internal::SearchContext& ctx) {
  std::vector<std::size_t> all(ctx.problem->datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return internal::make_selection_data(ctx, all);
}

TEST(Explanation, ReachabilityStopsBeforeTheMemoryBudgetAndSaysSo) {
  const Problem p = out_of_reach_past_the_horizon();
  const internal::SearchContext unlimited = internal::make_context(p, guarantee_kappa(p.target));
  const internal::SelectionData data = every_dataset(unlimited);
  const internal::Reachability whole =
      internal::explore_reachability(unlimited, data, 0.005, false);
  EXPECT_EQ(whole.cut, internal::ReachabilityCut::None);
  EXPECT_TRUE(whole.horizon_done);
  EXPECT_TRUE(whole.open_past_limit);

  SolveBudget budget;
  budget.memory_bytes = 256 * 1024;
  internal::BudgetMeter meter(budget);
  const internal::SearchContext ctx = internal::make_context(p, guarantee_kappa(p.target), &meter);
  const internal::Reachability cut = internal::explore_reachability(ctx, data, 0.005, false);
  EXPECT_EQ(cut.cut, internal::ReachabilityCut::Memory);
  EXPECT_LE(meter.peak_memory(), budget.memory_bytes);
  EXPECT_EQ(meter.stopped(), BudgetStop::None);  // the solve is not marked as cut
  EXPECT_LE(cut.best_probability, whole.best_probability);
}

TEST(Explanation, ReachabilityStopsWhenTheTimeIsSpent) {
  const Problem p = out_of_reach_past_the_horizon();
  SteppingClock clock(std::chrono::milliseconds(1));
  SolveBudget budget;
  budget.time = std::chrono::milliseconds(20);
  budget.clock = &clock;
  internal::BudgetMeter meter(budget);
  const internal::SearchContext ctx = internal::make_context(p, guarantee_kappa(p.target), &meter);
  const internal::Reachability r =
      internal::explore_reachability(ctx, every_dataset(ctx), 0.005, false);
  EXPECT_EQ(r.cut, internal::ReachabilityCut::Time);
  EXPECT_LE(clock.reads(), 25);
  EXPECT_EQ(meter.stopped(), BudgetStop::None);
}

TEST(Explanation, ACutExplanationSaysSo) {
  const Problem p = out_of_reach_past_the_horizon();
  SolveBudget budget;
  budget.memory_bytes = 256 * 1024;
  internal::BudgetMeter meter(budget);
  const internal::SearchContext ctx = internal::make_context(p, guarantee_kappa(p.target), &meter);
  SolveResult result;
  internal::explain_infeasible(ctx, {}, 0.002, result);
  EXPECT_FALSE(result.feasible);
  EXPECT_FALSE(result.infeasibility.complete);
  EXPECT_EQ(result.infeasibility.binding, "guarantee");
  EXPECT_NE(result.reason.find("cut (it reached the solve's memory budget)"), std::string::npos)
      << result.reason;

  // With the memory it needs, the same explanation is complete: nothing within 50 times the
  // horizon meets the guarantee, and the reason says how far it looked.
  internal::BudgetMeter enough(SolveBudget{});
  SolveResult whole;
  internal::explain_infeasible(internal::make_context(p, guarantee_kappa(p.target), &enough), {},
                               0.002, whole);
  EXPECT_TRUE(whole.infeasibility.complete);
  EXPECT_NE(whole.reason.find("within 950 epochs, even without a deadline or budget"),
            std::string::npos)
      << whole.reason;
}

}  // namespace
}  // namespace depl::solver
