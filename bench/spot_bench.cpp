// depl-spot-bench: DepL with spot pools (docs/depl-model.md sections 2, 3 and 5). Every pool of a
// paper-like instance (depl/solver/testing/instance_families.hpp) gets a spot twin at 30% of its
// price, interrupted 0.1 to 1 times per worker-hour (seeded). Reports, per instance, DepL's cost
// on the on-demand pools alone and with the twins, without a deadline and with one at 1.1 times
// the on-demand plan's duration; and for the plan with the deadline, a Monte Carlo with sampled
// interruptions: the share of runs that reach the target by the deadline against the promise,
// and the mean cost against the model's expected cost; the certificate's gap of that plan; the
// solve times with and without the twins, side by side. Then re-planning at an observed rate
// above the stated one: for each plan with the deadline, the twins' rates multiplied by each
// --rate-factors entry (what a job observing that many preemptions plans with, docs/depl-model.md
// section 7), the stated plan evaluated at that rate (does it still keep the promise?) and the
// plan DepL makes for it: its cost against the stated plan's and the on-demand plan's, its spot
// share and certified gap, and a Monte Carlo of it at that rate. A report, not a timed test.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "depl/solver/evaluator.hpp"
#include "depl/solver/simulate.hpp"
#include "depl/solver/solve.hpp"
#include "depl/solver/testing/instance_families.hpp"

namespace {

using namespace depl::solver;
using depl::testing::with_spot_twins;

// Share of the plan's GPU-seconds on spot pools (expected).
double spot_share(const Problem& p, const SolveResult& r) {
  double spot = 0, all = 0;
  for (std::size_t i = 0; i < r.plan.phases.size(); ++i) {
    const Phase& ph = r.plan.phases[i];
    const double gpu_seconds =
        ph.workers * p.models[ph.model].gpus_per_worker * r.figures.phases[i].seconds;
    all += gpu_seconds;
    if (p.pools[ph.pool].interruptions_per_hour > 0) spot += gpu_seconds;
  }
  return all > 0 ? spot / all : 0;
}

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"DepL with spot pools: savings against on-demand and the Monte Carlo check"};
  int instances = 20;
  int runs = 20'000;
  std::uint64_t seed = 1;
  app.add_option("--instances", instances, "paper-like instances (default 20)");
  app.add_option("--runs", runs, "Monte Carlo runs per plan (default 20000)");
  app.add_option("--seed", seed, "first instance seed (default 1)");
  std::vector<double> rate_factors = {2, 4};
  app.add_option("--rate-factors", rate_factors,
                 "observed rate / stated rate of the spot twins to re-plan at (default 2 4)");
  CLI11_PARSE(app, argc, argv);

  // The plans with the deadline, kept for re-planning at higher rates.
  struct Kept {
    std::uint64_t seed;
    Problem problem;
    SolveResult plan;
    double on_demand_cost;
  };
  std::vector<Kept> kept;

  std::printf(
      "| seed | p | on-demand cost | spot cost | saving | spot share | with deadline: cost | "
      "saving | spot share | P(on time) | promise P | MC P(target by deadline) +- SE | MC >= "
      "P - 3 SE | MC cost / model | certified gap | solve ms: on-demand, deadline | with twins "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> savings, deadline_savings, cost_errors, gaps, slowdowns;
  int below = 0, infeasible = 0, compared = 0;
  for (std::uint64_t s = seed; s < seed + static_cast<std::uint64_t>(instances); ++s) {
    Problem base = depl::testing::paper_like_instance(s);
    for (ModelVariant& m : base.models) m.checkpoint_bytes = 2 * m.parameter_bytes;
    auto od = solve(base);
    if (!od || !od->feasible) continue;
    const Problem spot = with_spot_twins(base, s);
    auto sp = solve(spot);
    Problem base_deadline = base;
    base_deadline.target.deadline_seconds = 1.1 * od->figures.duration_seconds;
    const Problem spot_deadline = with_spot_twins(base_deadline, s);
    // The same problem with and without the twins, one after the other.
    auto start = std::chrono::steady_clock::now();
    auto odd = solve(base_deadline);
    const double od_ms = elapsed_ms(start);
    start = std::chrono::steady_clock::now();
    auto sd = solve(spot_deadline);
    const double ms = elapsed_ms(start);
    if (!sp || !sp->feasible || !sd || !sd->feasible || !odd || !odd->feasible) {
      ++infeasible;
      continue;
    }
    ++compared;
    const double saving = 1 - sp->figures.cost / od->figures.cost;
    const double saving_d = 1 - sd->figures.cost / od->figures.cost;
    savings.push_back(saving);
    deadline_savings.push_back(saving_d);
    SimulationOptions so;
    so.runs = runs;
    so.seed = s;
    so.noise = spot_deadline.target.guarantee == Guarantee::DistributionFree ? Noise::StudentT3
                                                                             : Noise::Gaussian;
    const SimulationResult mc = simulate(spot_deadline, sd->plan, so);
    const double se = std::sqrt(sd->figures.probability * (1 - sd->figures.probability) / runs);
    const bool ok = mc.probability >= sd->figures.probability - 3 * se;
    below += !ok;
    const double cost_ratio = mc.mean_cost / sd->figures.cost;
    cost_errors.push_back(std::abs(cost_ratio - 1));
    gaps.push_back(sd->certificate.gap);
    slowdowns.push_back(ms / od_ms);
    kept.push_back({s, spot_deadline, *sd, od->figures.cost});
    std::printf(
        "| %llu | %.2g | %.3f | %.3f | %.1f%% | %.2f | %.3f | %.1f%% | %.2f | %.4f | %.4f | "
        "%.4f +- %.4f | %s | %.4f | %.2f%%%s | %.1f | %.1f |\n",
        static_cast<unsigned long long>(s), base.target.probability, od->figures.cost,
        sp->figures.cost, 100 * saving, spot_share(spot, *sp), sd->figures.cost, 100 * saving_d,
        spot_share(spot_deadline, *sd), sd->figures.on_time_probability, sd->figures.probability,
        mc.probability, mc.standard_error, ok ? "yes" : "no", cost_ratio, 100 * sd->certificate.gap,
        sd->certificate.complete ? "" : " (cut)", od_ms, ms);
  }
  std::sort(savings.begin(), savings.end());
  std::sort(deadline_savings.begin(), deadline_savings.end());
  std::printf(
      "\n| metric | value |\n|---|---|\n| instances compared | %d (%d without a plan) |\n"
      "| saving vs on-demand, no deadline: median / min | %.1f%% / %.1f%% |\n"
      "| saving vs on-demand, deadline 1.1x: median / min | %.1f%% / %.1f%% |\n"
      "| Monte Carlo below promise - 3 SE | %d |\n"
      "| Monte Carlo mean cost vs model: median / max relative error | %.2f%% / %.2f%% |\n"
      "| certified gap with the deadline: median / worst | %.2f%% / %.2f%% |\n"
      "| solve time with the twins / without, deadline: median / max | %.1fx / %.1fx |\n",
      compared, infeasible, 100 * median(savings), savings.empty() ? 0.0 : 100 * savings.front(),
      100 * median(deadline_savings),
      deadline_savings.empty() ? 0.0 : 100 * deadline_savings.front(), below,
      100 * median(cost_errors),
      cost_errors.empty() ? 0.0 : 100 * *std::max_element(cost_errors.begin(), cost_errors.end()),
      100 * median(gaps), gaps.empty() ? 0.0 : 100 * *std::max_element(gaps.begin(), gaps.end()),
      median(slowdowns),
      slowdowns.empty() ? 0.0 : *std::max_element(slowdowns.begin(), slowdowns.end()));

  // Re-planning at an observed rate above the stated one.
  std::printf(
      "\n| seed | rate x | stated plan at that rate: cost | P(target) | keeps the promise | "
      "re-plan: cost | / stated plan at the stated rate | saving vs on-demand | spot share | P(on "
      "time) | certified gap | MC P(target by deadline) +- SE | MC >= P - 3 SE |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const double factor : rate_factors) {
    std::vector<double> ratios, re_savings, shares, re_gaps;
    int kept_promise = 0, replanned = 0, without = 0, re_below = 0;
    for (const Kept& k : kept) {
      Problem faster = k.problem;
      for (Pool& pool : faster.pools) pool.interruptions_per_hour *= factor;
      const Figures stated = evaluate(faster, k.plan.plan);
      kept_promise += stated.feasible;
      auto re = solve(faster);
      if (!re || !re->feasible) {
        ++without;
        std::printf("| %llu | %.3g | %.3f | %.4f | %s | no plan | | | | | | | |\n",
                    static_cast<unsigned long long>(k.seed), factor, stated.cost,
                    stated.probability, stated.feasible ? "yes" : "no");
        continue;
      }
      ++replanned;
      SimulationOptions so;
      so.runs = runs;
      so.seed = k.seed;
      so.noise = faster.target.guarantee == Guarantee::DistributionFree ? Noise::StudentT3
                                                                        : Noise::Gaussian;
      const SimulationResult mc = simulate(faster, re->plan, so);
      const double se = std::sqrt(re->figures.probability * (1 - re->figures.probability) / runs);
      const bool ok = mc.probability >= re->figures.probability - 3 * se;
      re_below += !ok;
      const double ratio = re->figures.cost / k.plan.figures.cost;
      const double saving = 1 - re->figures.cost / k.on_demand_cost;
      const double share = spot_share(faster, *re);
      ratios.push_back(ratio);
      re_savings.push_back(saving);
      shares.push_back(share);
      re_gaps.push_back(re->certificate.gap);
      std::printf(
          "| %llu | %.3g | %.3f | %.4f | %s | %.3f | %.3f | %.1f%% | %.2f | %.4f | %.2f%%%s | "
          "%.4f +- %.4f | %s |\n",
          static_cast<unsigned long long>(k.seed), factor, stated.cost, stated.probability,
          stated.feasible ? "yes" : "no", re->figures.cost, ratio, 100 * saving, share,
          re->figures.on_time_probability, 100 * re->certificate.gap,
          re->certificate.complete ? "" : " (cut)", mc.probability, mc.standard_error,
          ok ? "yes" : "no");
    }
    std::sort(re_savings.begin(), re_savings.end());
    std::printf(
        "\n| rate x %.3g | value |\n|---|---|\n"
        "| stated plans that still keep the promise | %d of %zu |\n"
        "| re-planned (no plan) | %d (%d) |\n"
        "| re-plan cost / stated plan's: median / max | %.3f / %.3f |\n"
        "| re-plan saving vs on-demand: median / min | %.1f%% / %.1f%% |\n"
        "| re-plan spot share: median | %.2f |\n"
        "| re-plan certified gap: median / worst | %.2f%% / %.2f%% |\n"
        "| Monte Carlo below promise - 3 SE | %d |\n",
        factor, kept_promise, kept.size(), replanned, without, median(ratios),
        ratios.empty() ? 0.0 : *std::max_element(ratios.begin(), ratios.end()),
        100 * median(re_savings), re_savings.empty() ? 0.0 : 100 * re_savings.front(),
        median(shares), 100 * median(re_gaps),
        re_gaps.empty() ? 0.0 : 100 * *std::max_element(re_gaps.begin(), re_gaps.end()), re_below);
    below += re_below;
  }
  return below == 0 ? 0 : 1;
}
