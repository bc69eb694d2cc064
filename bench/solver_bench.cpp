// depl-bench: measures DepL against OPT, EXP and FULL on the seeded instance families of
// depl/solver/testing/instance_families.hpp and prints the report recorded in
// docs/benchmarks.md (section "Solver"). Times are wall-clock on one thread.
#include <fmt/format.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "depl/solver/simulate.hpp"
#include "depl/solver/solve.hpp"
#include "depl/solver/testing/instance_families.hpp"

namespace {

using namespace depl::solver;
using Clock = std::chrono::steady_clock;

struct Timed {
  SolveResult result;
  double ms = 0;
  bool ok = false;
};

bool g_certify = true;

Timed timed_solve(const Problem& p, Algorithm a, double eta = 0.002) {
  SolveOptions o;
  o.algorithm = a;
  o.eta = eta;
  o.certify = g_certify;
  const auto t0 = Clock::now();
  auto r = solve(p, o);
  Timed t;
  t.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  t.ok = r.has_value();
  if (r) t.result = std::move(*r);
  return t;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double median(std::vector<double> v) {
  return quantile(std::move(v), 0.5);
}

void small_family(std::uint64_t seed, int instances) {
  fmt::print("## Small family (OPT runs): {} instances, seeds {}..{}\n", instances, seed,
             seed + static_cast<std::uint64_t>(instances) - 1);
  fmt::print("Every third instance gets a deadline of 0.8 x OPT's unconstrained duration.\n\n");
  std::vector<double> ratios, time_ratios, depl_ms, opt_ms;
  int opt_feasible = 0, misses = 0, infeasible_returned = 0, below_opt = 0, deadlines = 0;
  int bound_above = 0;
  struct Worst {
    double ratio;
    std::uint64_t seed;
    bool deadline;
  };
  std::vector<Worst> worst;
  for (int i = 0; i < instances; ++i) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(i);
    Problem p = depl::testing::small_instance(s);
    if (i % 3 == 2) {
      const Timed free = timed_solve(p, Algorithm::Opt);
      if (free.result.feasible) {
        p.target.deadline_seconds = 0.8 * free.result.figures.duration_seconds;
        ++deadlines;
      }
    }
    const Timed opt = timed_solve(p, Algorithm::Opt);
    const Timed depl = timed_solve(p, Algorithm::DepL);
    if (depl.result.feasible && !evaluate(p, depl.result.plan).feasible) ++infeasible_returned;
    if (!opt.result.feasible) continue;
    ++opt_feasible;
    if (!depl.result.feasible) {
      ++misses;
      continue;
    }
    const double r = depl.result.figures.cost / opt.result.figures.cost;
    if (r < 1 - 1e-9) ++below_opt;
    if (depl.result.certificate.lower_bound > opt.result.figures.cost * (1 + 1e-9)) ++bound_above;
    if (r > 1.01) worst.push_back({r, s, p.target.deadline_seconds.has_value()});
    ratios.push_back(r);
    time_ratios.push_back(depl.ms / std::max(opt.ms, 1e-3));
    depl_ms.push_back(depl.ms);
    opt_ms.push_back(opt.ms);
  }
  fmt::print("| metric | value |\n|---|---|\n");
  fmt::print("| instances where OPT finds a plan | {} (of which {} with a deadline) |\n",
             opt_feasible, deadlines);
  fmt::print("| DepL cost / OPT cost: median | {:.4f} |\n", median(ratios));
  fmt::print("| DepL cost / OPT cost: p95 | {:.4f} |\n", quantile(ratios, 0.95));
  fmt::print("| DepL cost / OPT cost: max | {:.4f} |\n",
             ratios.empty() ? 0.0 : *std::max_element(ratios.begin(), ratios.end()));
  fmt::print("| feasibility misses (OPT finds a plan, DepL none) | {} ({:.1f}%) |\n", misses,
             opt_feasible ? 100.0 * misses / opt_feasible : 0.0);
  fmt::print("| DepL plans the evaluator rejects | {} |\n", infeasible_returned);
  fmt::print("| DepL cheaper than OPT (would be a bug) | {} |\n", below_opt);
  fmt::print("| DepL's lower bound above OPT's cost (would be a bug) | {} |\n", bound_above);
  fmt::print("| instances with DepL/OPT > 1.01 | {} |\n", worst.size());
  fmt::print("| DepL time / OPT time: median | {:.2f} |\n", median(time_ratios));
  fmt::print("| DepL time: median / max | {:.2f} ms / {:.2f} ms |\n", median(depl_ms),
             depl_ms.empty() ? 0.0 : *std::max_element(depl_ms.begin(), depl_ms.end()));
  fmt::print("| OPT time: median / max | {:.2f} ms / {:.2f} ms |\n\n", median(opt_ms),
             opt_ms.empty() ? 0.0 : *std::max_element(opt_ms.begin(), opt_ms.end()));
  std::sort(worst.begin(), worst.end(),
            [](const Worst& a, const Worst& b) { return a.ratio > b.ratio; });
  for (const Worst& w : worst) {
    fmt::print("- seed {}: DepL/OPT {:.4f}{}\n", w.seed, w.ratio, w.deadline ? " (deadline)" : "");
  }
  if (!worst.empty()) fmt::print("\n");
}

void paper_family(std::uint64_t seed, int instances, int runs) {
  fmt::print("## Paper-like family: {} instances, seeds {}..{}\n", instances, seed,
             seed + static_cast<std::uint64_t>(instances) - 1);
  fmt::print(
      "Full model + variants at 0.5/0.25/0.1 of its compute, 4-6 datasets, 3-4 pools, "
      "H = 150. Monte Carlo: {} runs per plan, Gaussian noise (Student-t(3) for "
      "DistributionFree jobs).\n\n",
      runs);
  fmt::print(
      "| seed | guarantee | p | DepL cost | FULL cost | saving | phases | EXP P(target) | "
      "MC P(target) +- SE | MC >= p - 3 SE | certified gap | DepL ms |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> savings, exp_probability, depl_ms, gaps;
  int mc_fail = 0, infeasible = 0;
  for (int i = 0; i < instances; ++i) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(i);
    const Problem p = depl::testing::paper_like_instance(s);
    const Timed depl = timed_solve(p, Algorithm::DepL);
    const Timed full = timed_solve(p, Algorithm::Full);
    const Timed exp = timed_solve(p, Algorithm::Exp);
    if (!depl.result.feasible) {
      ++infeasible;
      fmt::print("| {} | | {} | infeasible: {} | | | | | | | {:.1f} |\n", s, p.target.probability,
                 depl.result.reason, depl.ms);
      continue;
    }
    depl_ms.push_back(depl.ms);
    SimulationOptions so;
    so.runs = runs;
    so.seed = s;
    so.noise =
        p.target.guarantee == Guarantee::DistributionFree ? Noise::StudentT3 : Noise::Gaussian;
    const SimulationResult mc = simulate(p, depl.result.plan, so);
    const double se = std::sqrt(p.target.probability * (1 - p.target.probability) / runs);
    const bool mc_ok = mc.probability >= p.target.probability - 3 * se;
    mc_fail += !mc_ok;
    double saving = 0;
    if (full.result.feasible) {
      saving = 100.0 * (1 - depl.result.figures.cost / full.result.figures.cost);
      savings.push_back(saving);
    }
    if (!exp.result.plan.phases.empty()) exp_probability.push_back(exp.result.figures.probability);
    fmt::print(
        "| {} | {} | {} | {:.3f} | {} | {} | {} | {} | {:.4f} +- {:.4f} | {} | {} | {:.1f} |\n", s,
        p.target.guarantee == Guarantee::Gaussian ? "Gaussian" : "DistributionFree",
        p.target.probability, depl.result.figures.cost,
        full.result.feasible ? fmt::format("{:.3f}", full.result.figures.cost) : "-",
        full.result.feasible ? fmt::format("{:.1f}%", saving) : "-", depl.result.plan.phases.size(),
        exp.result.plan.phases.empty() ? "-"
                                       : fmt::format("{:.3f}", exp.result.figures.probability),
        mc.probability, se, mc_ok ? "yes" : "NO",
        fmt::format("{:.2f}%{}", 100 * depl.result.certificate.gap,
                    depl.result.certificate.complete ? "" : " (cut)"),
        depl.ms);
    gaps.push_back(depl.result.certificate.gap);
  }
  fmt::print("\n| metric | value |\n|---|---|\n");
  fmt::print("| DepL saving vs FULL: median / min | {:.1f}% / {:.1f}% |\n", median(savings),
             savings.empty() ? 0.0 : *std::min_element(savings.begin(), savings.end()));
  double exp_mean = 0;
  for (double x : exp_probability) exp_mean += x;
  fmt::print("| EXP P(target): mean / median | {:.3f} / {:.3f} |\n",
             exp_probability.empty() ? 0.0 : exp_mean / static_cast<double>(exp_probability.size()),
             median(exp_probability));
  fmt::print("| Monte Carlo below target - 3 SE | {} |\n", mc_fail);
  fmt::print("| DepL infeasible | {} |\n", infeasible);
  fmt::print("| certified gap: median / worst | {:.2f}% / {:.2f}% |\n", 100 * median(gaps),
             gaps.empty() ? 0.0 : 100 * *std::max_element(gaps.begin(), gaps.end()));
  fmt::print("| DepL time: median / max | {:.1f} ms / {:.1f} ms |\n\n", median(depl_ms),
             depl_ms.empty() ? 0.0 : *std::max_element(depl_ms.begin(), depl_ms.end()));
}

void scaling(std::uint64_t seed, int instances) {
  fmt::print("## Scaling: DepL time (median over {} seeds from {})\n\n", instances, seed);
  fmt::print(
      "Base: 6 datasets, 4 variants, 4 pools, H = 150, eta = 0.002; one parameter "
      "varies.\n\n| parameter | value | median ms | max ms |\n|---|---|---|---|\n");
  auto row = [&](const std::string& name, const std::string& value, int d, int v, int k, int h,
                 double eta) {
    std::vector<double> ms;
    for (int i = 0; i < instances; ++i) {
      const Problem p =
          depl::testing::large_instance(seed + static_cast<std::uint64_t>(i), d, v, k, h);
      ms.push_back(timed_solve(p, Algorithm::DepL, eta).ms);
    }
    fmt::print("| {} | {} | {:.1f} | {:.1f} |\n", name, value, median(ms),
               *std::max_element(ms.begin(), ms.end()));
    std::fflush(stdout);
  };
  for (int d : {2, 4, 6, 8, 10, 12}) row("datasets", std::to_string(d), d, 4, 4, 150, 0.002);
  for (int v : {2, 3, 4, 5, 6}) row("variants", std::to_string(v), 6, v, 4, 150, 0.002);
  for (int k : {2, 4, 8, 12}) row("pools", std::to_string(k), 6, 4, k, 150, 0.002);
  for (int h : {50, 100, 150, 300}) row("horizon H", std::to_string(h), 6, 4, 4, h, 0.002);
  for (double eta : {0.01, 0.005, 0.002, 0.001}) {
    row("1/eta", fmt::format("{:.0f}", 1 / eta), 6, 4, 4, 150, eta);
  }
  fmt::print("\n");
}

// The large family (instance_families.hpp): every instance solved `repeat` times (the median
// time is reported), with and without the certificate, alternated.
void large_family(std::uint64_t first, int instances, int repeat, bool verbose) {
  fmt::print("## Large family: {} instances, seeds {}..{}{}\n\n", instances, first,
             first + static_cast<std::uint64_t>(instances) - 1,
             first >= depl::testing::kLargeHeldOutSeed ? " (held out)" : " (tuning set)");
  if (verbose) {
    fmt::print(
        "| seed | generator | D/V/K/H | deadline | budget | feasible | cost | lower bound | gap | "
        "classes | ms (plan only) | ms (with certificate) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  static const char* kKinds[] = {"dataset mix", "deadline/budget", "inter-pool", "switches"};
  std::vector<double> plan_ms, total_ms, gaps;
  int feasible = 0, complete = 0;
  for (int i = 0; i < instances; ++i) {
    const std::uint64_t seed = first + static_cast<std::uint64_t>(i);
    const Problem p = depl::testing::large_family_instance(seed);
    std::vector<double> without, with;
    Timed certified;
    for (int r = 0; r < repeat; ++r) {
      const bool saved = g_certify;
      g_certify = false;
      without.push_back(timed_solve(p, Algorithm::DepL).ms);
      g_certify = true;
      certified = timed_solve(p, Algorithm::DepL);
      with.push_back(certified.ms);
      g_certify = saved;
    }
    const SolveResult& r = certified.result;
    plan_ms.push_back(median(without));
    total_ms.push_back(median(with));
    if (r.feasible) {
      ++feasible;
      gaps.push_back(r.certificate.gap);
      complete += r.certificate.complete;
    }
    if (verbose) {
      fmt::print("| {} | {} | {}/{}/{}/{} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} |\n",
                 seed, kKinds[seed % 4], p.datasets.size(), p.models.size(), p.pools.size(),
                 p.training.max_epochs, p.target.deadline_seconds ? "yes" : "",
                 p.target.budget ? "yes" : "",
                 r.feasible ? "yes" : "no: " + r.infeasibility.binding,
                 r.feasible ? fmt::format("{:.4f}", r.figures.cost) : "",
                 r.feasible ? fmt::format("{:.4f}", r.certificate.lower_bound) : "",
                 r.feasible ? fmt::format("{:.2f}%", 100 * r.certificate.gap) : "",
                 r.stats.bound_classes, median(without), median(with));
      std::fflush(stdout);
    }
  }
  auto worst = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  fmt::print("\n| metric | value |\n|---|---|\n");
  fmt::print("| feasible | {} of {} |\n", feasible, instances);
  fmt::print("| solve time with certificate: median / worst | {:.1f} ms / {:.1f} ms |\n",
             median(total_ms), worst(total_ms));
  fmt::print("| solve time without certificate: median / worst | {:.1f} ms / {:.1f} ms |\n",
             median(plan_ms), worst(plan_ms));
  fmt::print("| certified gap: median / worst | {:.2f}% / {:.2f}% |\n", 100 * median(gaps),
             100 * worst(gaps));
  fmt::print("| certified gap <= 1% | {} of {} |\n",
             std::count_if(gaps.begin(), gaps.end(), [](double g) { return g <= 0.01; }),
             gaps.size());
  fmt::print("| certificate searched to its end | {} of {} |\n\n", complete, gaps.size());
}

// The largest job the solver admits, under the default budget of the CLI and the controller: it
// must be planned, or declared over budget, within it. Peak RSS is the whole process's (run
// this family alone for it to mean the solve's).
void largest_admitted(std::uint64_t seed) {
  const Problem p = depl::testing::largest_admitted_instance(seed);
  SolveOptions o;
  o.budget.time = depl::solver::kDefaultTimeBudget;
  o.budget.memory_bytes = depl::solver::kDefaultMemoryBudget;
  const auto t0 = Clock::now();
  auto r = solve(p, o);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print(
      "## Largest admitted job (seed {}): {} datasets, {} variants, {} switches, {} pools, "
      "H = {}\n\n",
      seed, p.datasets.size(), p.models.size(), p.switching.size(), p.pools.size(),
      p.training.max_epochs);
  fmt::print("| metric | value |\n|---|---|\n");
  fmt::print("| budget | {} ms, {} MiB |\n", o.budget.time.count(), o.budget.memory_bytes >> 20);
  fmt::print("| solve time | {:.2f} s |\n", seconds);
  fmt::print("| peak RSS of the process | {:.0f} MiB |\n",
             static_cast<double>(usage.ru_maxrss) / 1024);
  if (!r) {
    fmt::print("| refused | {} |\n\n", r.error().message);
    return;
  }
  fmt::print("| stopped by the budget | {} |\n", depl::solver::to_string(r->stopped));
  fmt::print("| feasible | {} |\n", r->feasible ? "yes" : "no: " + r->reason);
  if (r->feasible) {
    fmt::print("| cost / lower bound / gap | {:.4f} / {:.4f} / {:.2f}%{} |\n", r->figures.cost,
               r->certificate.lower_bound, 100 * r->certificate.gap,
               r->certificate.complete ? "" : " (bound's search cut short)");
  }
  fmt::print("\n");
}

void target_instance(std::uint64_t seed) {
  const Problem p = depl::testing::large_instance(seed, 20, 6, 12, 300);
  const Timed depl = timed_solve(p, Algorithm::DepL);
  fmt::print("## Target instance: 20 datasets, 6 variants, 12 pools, H = 300 (seed {})\n\n", seed);
  fmt::print("| metric | value |\n|---|---|\n");
  fmt::print("| DepL time | {:.1f} ms (target < 100 ms) |\n", depl.ms);
  fmt::print("| feasible | {} |\n", depl.result.feasible ? "yes" : "no");
  fmt::print("| cost | {:.3f} |\n", depl.result.figures.cost);
  fmt::print("| dataset selections searched | {} |\n", depl.result.stats.dataset_sets);
  fmt::print("| graph states settled | {} |\n", depl.result.stats.graph_states);
  fmt::print("| lower bound / gap | {:.4f} / {:.3f}% ({}) |\n\n",
             depl.result.certificate.lower_bound, 100 * depl.result.certificate.gap,
             depl.result.certificate.complete ? "complete" : "incomplete");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"depl-bench: DepL against OPT, EXP and FULL on seeded instance families"};
  std::string family = "all";
  std::uint64_t seed = 1;
  int instances = 0;
  int runs = 10'000;
  app.add_option("--family", family,
                 "small | paper | scaling | target | large | largest | all (largest: not in all)")
      ->check(CLI::IsMember({"small", "paper", "scaling", "target", "large", "largest", "all"}));
  bool held_out = false;
  int repeat = 1;
  bool quiet = false;
  app.add_flag("--held-out", held_out,
               "large family: the held-out seeds (from 10001) instead of the tuning set");
  app.add_option("--repeat", repeat, "large family: solves per instance (median time)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--summary", quiet, "large family: the summary table only");
  app.add_option("--seed", seed, "first seed of each family");
  app.add_option("--instances", instances,
                 "instances per family (default: small 100, paper 20, scaling 3)");
  app.add_option("--runs", runs, "Monte Carlo runs per plan")->check(CLI::PositiveNumber);
  app.add_flag("!--no-certificate", g_certify, "DepL without its certificate (for timing)");
  CLI11_PARSE(app, argc, argv);
  fmt::print("# depl-bench (seed {})\n\n", seed);
  const bool all = family == "all";
  if (all || family == "small") small_family(seed, instances > 0 ? instances : 100);
  if (all || family == "paper") paper_family(seed, instances > 0 ? instances : 20, runs);
  if (all || family == "scaling") scaling(seed, instances > 0 ? instances : 3);
  if (all || family == "target") target_instance(seed);
  if (family == "largest") largest_admitted(seed);
  if (all || family == "large") {
    const std::uint64_t first = held_out ? depl::testing::kLargeHeldOutSeed + (seed - 1) : seed;
    large_family(first, instances > 0 ? instances : 40, repeat, !quiet);
  }
  return 0;
}
