// depl-dependability-bench: does the promise hold on real training?
//
// 1. Profiles the reference worker's variants on Fashion-MNIST (K seeded runs each, and the loss
//    jump of each allowed switch at two switch points) and fits the loss profiles and jumps with
//    the solver's estimation step (docs/depl-model.md section 6).
// 2. For two targets (the profiled mean of `full` after a few epochs) and P in {0.9, 0.95}, plans
//    with DepL, EXP and FULL on a one-worker pool over the profiled data.
// 3. Executes every plan for `--runs` fresh seeds with the real worker (phases in order, a
//    variant switch converts the checkpoint) and counts the runs whose final validation loss
//    meets the target, with a Wilson 95% interval, next to the predicted probability and cost.
//
// A report, not a timed test: docs/benchmarks.md records its output with the command.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "depl/solver/evaluator.hpp"
#include "depl/solver/fit.hpp"
#include "depl/solver/parse.hpp"
#include "depl/solver/simulate.hpp"
#include "depl/solver/solve.hpp"
#include "depl/worker/variant.hpp"
#include "depl/worker/worker_run.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Options {
  std::string data_dir = depl::worker::kDefaultFashionMnistDir;
  int runs = 40;               // executions per plan
  int profile_runs = 4;        // K
  int profile_epochs = 12;     // epochs per profiling run
  int samples_per_shard = 10000;
  int shards_used = 2;         // the job's datasets: shard0 .. shard<n-1>
  int test_samples = 10000;    // validation images (all: less measurement noise)
  int threads = 2;
  std::string guarantee = "Gaussian";
};

constexpr std::uint64_t kProfileSeedBase = 1000;  // profiling seeds never overlap the runs' seeds

// Runs `tasks` on `threads` threads; each task owns its result slot.
void parallel_for(std::size_t tasks, int threads, const std::function<void(std::size_t)>& body) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < tasks; i = next++) body(i);
    });
  }
  for (auto& th : pool) th.join();
}

class Workspace {
 public:
  Workspace() {
    char pattern[] = "/tmp/depl-dependability-XXXXXX";
    const char* dir = mkdtemp(pattern);
    if (dir == nullptr) throw std::runtime_error("cannot create a directory under /tmp");
    root_ = dir;
  }
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path dir(const std::string& name) const {
    fs::path p = root_ / name;
    fs::create_directories(p);
    return p;
  }

 private:
  fs::path root_;
};

depl::worker::WorkerConfig base_config(const Options& o) {
  depl::worker::WorkerConfig c;
  c.data_dir = o.data_dir;
  c.shards = std::to_string(60000 / o.samples_per_shard);
  for (int i = 0; i < o.shards_used; ++i) c.datasets.push_back(fmt::format("shard{}", i));
  c.test_samples = o.test_samples;
  return c;
}

// Losses of one run, one per line the worker printed (epoch 0 first when eval_initial).
std::vector<double> run_losses(const depl::worker::WorkerConfig& c) {
  std::ostringstream out;
  auto summary = depl::worker::run_worker(c, out);
  if (!summary) throw std::runtime_error("worker: " + summary.error().message);
  std::vector<double> losses;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) losses.push_back(json::parse(line).at("loss").get<double>());
  }
  return losses;
}

depl::worker::Variant variant(const std::string& name) {
  auto v = depl::worker::variant_from_name(name);
  if (!v) throw std::runtime_error(v.error().message);
  return *v;
}

struct Profiled {
  std::map<std::string, depl::solver::LossProfile> profiles;
  std::map<std::string, std::vector<double>> mean_curve;  // per epoch 0..E
  std::map<std::string, depl::solver::JumpFit> jumps;     // "from->to"
};

Profiled profile(const Options& o, const std::vector<std::string>& variants,
                 const std::vector<std::pair<std::string, std::string>>& switches,
                 const Workspace& ws) {
  Profiled p;
  // Variants: K runs of E epochs each, the loss before training included.
  std::vector<std::vector<double>> curves(variants.size() * o.profile_runs);
  parallel_for(curves.size(), o.threads, [&](std::size_t i) {
    auto c = base_config(o);
    c.variant = variant(variants[i / o.profile_runs]);
    c.seed = kProfileSeedBase + i % o.profile_runs;
    c.epochs = o.profile_epochs;
    c.eval_initial = true;
    curves[i] = run_losses(c);
  });
  for (std::size_t v = 0; v < variants.size(); ++v) {
    std::vector<std::vector<double>> runs;
    double initial = 0;
    std::vector<double> mean(static_cast<std::size_t>(o.profile_epochs) + 1, 0.0);
    for (int k = 0; k < o.profile_runs; ++k) {
      const auto& curve = curves[v * o.profile_runs + k];
      initial += curve.front() / o.profile_runs;
      runs.emplace_back(curve.begin() + 1, curve.end());
      for (std::size_t t = 0; t < curve.size() && t < mean.size(); ++t)
        mean[t] += curve[t] / o.profile_runs;
    }
    auto fit = depl::solver::fit_loss_profile(runs, initial);
    if (!fit) throw std::runtime_error(variants[v] + ": " + fit.error().message);
    p.profiles[variants[v]] = fit->profile;
    p.mean_curve[variants[v]] = mean;
  }
  // Switches: train `from` for s epochs, convert to `to`, measure the loss right after.
  const std::vector<int> points = {o.profile_epochs / 4, o.profile_epochs / 2};
  const std::size_t per_switch = points.size() * static_cast<std::size_t>(o.profile_runs);
  std::vector<std::pair<double, double>> measured(switches.size() * per_switch);
  parallel_for(measured.size(), o.threads, [&](std::size_t i) {
    const auto& [from, to] = switches[i / per_switch];
    const int at = points[(i % per_switch) / static_cast<std::size_t>(o.profile_runs)];
    auto c = base_config(o);
    c.seed = kProfileSeedBase + 100 + i;
    c.checkpoint_dir = ws.dir(fmt::format("switch-{}", i)).string();
    c.variant = variant(from);
    c.epochs = at;
    const double before = run_losses(c).back();
    c.variant = variant(to);
    c.start_epoch = at;
    c.epochs = 0;  // only evaluates the converted checkpoint
    c.eval_initial = true;
    measured[i] = {before, run_losses(c).front()};
  });
  for (std::size_t s = 0; s < switches.size(); ++s) {
    std::vector<double> before, after;
    for (std::size_t i = 0; i < per_switch; ++i) {
      before.push_back(measured[s * per_switch + i].first);
      after.push_back(measured[s * per_switch + i].second);
    }
    auto fit = depl::solver::fit_switch_jump(before, after);
    if (!fit) throw std::runtime_error(fit.error().message);
    p.jumps[switches[s].first + "->" + switches[s].second] = *fit;
  }
  return p;
}

// FLOPs of one training step per sample: forward and backward, ~6 per parameter.
double gflop_per_sample(const std::string& name) {
  const double width = variant(name).width;
  const double h = depl::worker::kFullHiddenUnits * width;
  const double params = 784 * h + h + h * h + h + h * 10 + 10;
  return 6 * params / 1e9;
}

depl::solver::Problem problem_for(const Options& o, const Profiled& p,
                                  const std::vector<std::string>& variants,
                                  const std::vector<std::pair<std::string, std::string>>& switches,
                                  double target, double probability) {
  json datasets = json::array();
  for (int i = 0; i < o.shards_used; ++i) {
    datasets.push_back({{"name", fmt::format("shard{}", i)},
                        {"samples", o.samples_per_shard},
                        {"quality", 1.0},
                        {"sizeBytes", o.samples_per_shard * 785}});
  }
  json models = json::array();
  for (const auto& v : variants) {
    const auto& lp = p.profiles.at(v);
    models.push_back({{"name", v},
                      {"image", "depl-reference-worker"},
                      {"computePerSampleGflop", gflop_per_sample(v)},
                      {"parameterBytes", 4e9 * gflop_per_sample(v) / 6},
                      {"lossProfile",
                       {{"initialLoss", lp.initial_loss},
                        {"floorLoss", lp.floor_loss},
                        {"decayPerEpoch", lp.decay_per_epoch},
                        {"noiseStddev", lp.noise_stddev},
                        {"dataExponent", 0.3}}}});
  }
  json switching = json::array();
  for (const auto& [from, to] : switches) {
    const auto& j = p.jumps.at(from + "->" + to);
    switching.push_back({{"from", from},
                         {"to", to},
                         {"lossJump", {{"mean", j.mean}, {"stddev", j.stddev}}},
                         {"overheadSeconds", 0}});
  }
  const json job = {
      {"apiVersion", "depl.dev/v1alpha1"},
      {"kind", "DependableTrainingJob"},
      {"metadata", {{"name", "dependability"}}},
      {"spec",
       {{"target", {{"loss", target}, {"probability", probability}, {"guarantee", o.guarantee}}},
        {"datasets", datasets},
        {"models", models},
        {"switching", switching},
        {"training",
         {{"batchSize", 128},
          // Plans never extrapolate beyond the profiled epochs: past them real validation loss
          // turns up (over-fitting), which the model's decay to a floor cannot describe.
          {"maxEpochs", o.profile_epochs},
          {"maxSwitches", 2},
          {"workers", {{"min", 1}, {"max", 1}}}}}}}};
  auto parsed = depl::solver::parse_job_json(job);
  if (!parsed) throw std::runtime_error("job: " + parsed.error().joined());
  depl::solver::Pool pool;
  pool.name = "cpu";
  pool.gpu_type = "one-core";
  pool.gpus = 1;
  pool.gpu_gflops = 1.0;  // model seconds; cost is in pool-hours
  pool.price_per_gpu_hour = 1.0;
  pool.bandwidth = 1e12;
  pool.storage_bandwidth = 1e12;
  auto combined = depl::solver::combine(*parsed, {pool});
  if (!combined) throw std::runtime_error("pools: " + combined.error().joined());
  combined->fixed_datasets = true;  // the profiled data: dataset choice is not under test here
  return *combined;
}

std::string describe(const depl::solver::Problem& problem, const depl::solver::Plan& plan) {
  std::string out;
  for (const auto& ph : plan.phases) {
    if (!out.empty()) out += " -> ";
    out += fmt::format("{} x{}", problem.models[ph.model].name, ph.epochs);
  }
  return out;
}

// Executes `plan` once with `seed`: its final validation loss.
double execute(const Options& o, const depl::solver::Problem& problem,
               const depl::solver::Plan& plan, std::uint64_t seed, const fs::path& dir) {
  auto c = base_config(o);
  c.seed = seed;
  c.checkpoint_dir = dir.string();
  double loss = 0;
  for (const auto& ph : plan.phases) {
    c.variant = variant(problem.models[ph.model].name);
    c.epochs = ph.epochs;
    loss = run_losses(c).back();
    c.start_epoch += ph.epochs;
  }
  return loss;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"depl-dependability-bench: profile the reference worker, plan with DepL/EXP/FULL, "
               "execute every plan on fresh seeds and count how often the target is reached"};
  app.add_option("--data-dir", o.data_dir, "Fashion-MNIST IDX directory")->capture_default_str();
  app.add_option("--runs", o.runs, "executions per plan")->capture_default_str()->check(
      CLI::Range(1, 10000));
  app.add_option("--profile-runs", o.profile_runs, "profiling runs per variant (K)")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app.add_option("--profile-epochs", o.profile_epochs, "epochs per profiling run")
      ->capture_default_str()
      ->check(CLI::Range(4, 200));
  app.add_option("--samples-per-shard", o.samples_per_shard, "training images per dataset")
      ->capture_default_str()
      ->check(CLI::Range(500, 30000));
  app.add_option("--test-samples", o.test_samples, "validation images")
      ->capture_default_str()
      ->check(CLI::Range(100, 10000));
  app.add_option("--threads", o.threads, "runs in parallel")->capture_default_str()->check(
      CLI::Range(1, 64));
  app.add_option("--guarantee", o.guarantee, "Gaussian or DistributionFree")
      ->capture_default_str()
      ->check(CLI::IsMember({"Gaussian", "DistributionFree"}));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  if (!fs::exists(fs::path(o.data_dir) / "train-images-idx3-ubyte.gz") &&
      !fs::exists(fs::path(o.data_dir) / "train-images-idx3-ubyte")) {
    fmt::print(stderr, "--data-dir {}: no Fashion-MNIST here (make deps installs "
               "dataset-fashion-mnist)\n", o.data_dir);
    return 2;
  }

  const std::vector<std::string> variants = {"full", "half", "quarter"};
  const std::vector<std::pair<std::string, std::string>> switches = {{"quarter", "full"},
                                                                     {"half", "full"}};
  try {
    Workspace ws;
    const auto started = std::chrono::steady_clock::now();
    const Profiled profiled = profile(o, variants, switches, ws);
    const double profile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    fmt::print("# depl-dependability-bench\n\n");
    fmt::print("Data: {} shards x {} Fashion-MNIST training images, validation on {} test "
               "images; guarantee {}; horizon {} epochs (the profiled range).\n\n",
               o.shards_used, o.samples_per_shard, o.test_samples, o.guarantee, o.profile_epochs);
    fmt::print("## Fitted profiles ({} runs x {} epochs each, {:.0f} s)\n\n", o.profile_runs,
               o.profile_epochs, profile_seconds);
    fmt::print("| variant | initial | floor | decay/epoch | noise sd | GFLOP/sample |\n");
    fmt::print("|---|---|---|---|---|---|\n");
    for (const auto& v : variants) {
      const auto& lp = profiled.profiles.at(v);
      fmt::print("| {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.6f} |\n", v, lp.initial_loss,
                 lp.floor_loss, lp.decay_per_epoch, lp.noise_stddev, gflop_per_sample(v));
    }
    fmt::print("\n| switch | jump mean | jump sd |\n|---|---|---|\n");
    for (const auto& [from, to] : switches) {
      const auto& j = profiled.jumps.at(from + "->" + to);
      fmt::print("| {} -> {} | {:+.4f} | {:.4f} |\n", from, to, j.mean, j.stddev);
    }

    // Targets: the profiled mean loss of `full` after a sixth and a quarter of the profiling run
    // (in the range where the curves still fall, so P = 0.95 is reachable inside the horizon).
    const auto& full_mean = profiled.mean_curve.at("full");
    const std::vector<double> targets = {
        std::round(full_mean[static_cast<std::size_t>(o.profile_epochs / 6)] * 1000) / 1000,
        std::round(full_mean[static_cast<std::size_t>(o.profile_epochs / 4)] * 1000) / 1000};
    struct Row {
      double target, probability;
      std::string algorithm, plan;
      bool feasible = false;
      depl::solver::Figures predicted;
      int successes = 0;
      double mean_final = 0;
    };
    std::vector<Row> rows;
    std::vector<std::pair<depl::solver::Problem, depl::solver::Plan>> plans;
    for (double target : targets) {
      for (double probability : {0.9, 0.95}) {
        const auto problem = problem_for(o, profiled, variants, switches, target, probability);
        for (auto algorithm : {depl::solver::Algorithm::DepL, depl::solver::Algorithm::Exp,
                               depl::solver::Algorithm::Full}) {
          depl::solver::SolveOptions so;
          so.algorithm = algorithm;
          auto result = depl::solver::solve(problem, so);
          Row row{target, probability, depl::solver::to_string(algorithm), "", false, {}, 0, 0};
          if (result && !result->plan.phases.empty()) {
            row.plan = describe(problem, result->plan);
            if (!result->feasible) row.plan += " (infeasible: best effort)";
            row.feasible = result->feasible;
            row.predicted = depl::solver::evaluate(problem, result->plan);
          } else {
            row.plan = result ? "none: " + result->reason : "error: " + result.error().message;
          }
          rows.push_back(row);
          plans.emplace_back(problem, result ? result->plan : depl::solver::Plan{});
        }
      }
    }

    // Execute: every (plan, seed) pair is one task.
    std::vector<double> finals(rows.size() * static_cast<std::size_t>(o.runs), NAN);
    parallel_for(finals.size(), o.threads, [&](std::size_t i) {
      const std::size_t r = i / static_cast<std::size_t>(o.runs);
      if (plans[r].second.phases.empty()) return;
      const std::uint64_t seed = 1 + i % static_cast<std::size_t>(o.runs);
      finals[i] = execute(o, plans[r].first, plans[r].second, seed, ws.dir(fmt::format("run-{}", i)));
      std::error_code ec;
      fs::remove_all(ws.dir(fmt::format("run-{}", i)), ec);
    });
    const double total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    fmt::print("\n## Plans executed {} times each (seeds 1..{})\n\n", o.runs, o.runs);
    fmt::print("| target | P | algorithm | plan | predicted P | cost | reached | 95% interval | "
               "mean final loss |\n");
    fmt::print("|---|---|---|---|---|---|---|---|---|\n");
    for (std::size_t r = 0; r < rows.size(); ++r) {
      Row& row = rows[r];
      int n = 0;
      for (int k = 0; k < o.runs; ++k) {
        const double f = finals[r * static_cast<std::size_t>(o.runs) + k];
        if (std::isnan(f)) continue;
        ++n;
        row.mean_final += f;
        if (f <= row.target) ++row.successes;
      }
      if (n == 0) {
        fmt::print("| {:.3f} | {} | {} | {} | - | - | - | - | - |\n", row.target,
                   row.probability, row.algorithm, row.plan);
        continue;
      }
      row.mean_final /= n;
      const auto ci = depl::solver::wilson_interval(row.successes, n);
      fmt::print("| {:.3f} | {} | {} | {} | {:.3f} | {:.4f} | {}/{} = {:.3f} | [{:.3f}, {:.3f}] | "
                 "{:.4f} |\n",
                 row.target, row.probability, row.algorithm, row.plan, row.predicted.probability,
                 row.predicted.cost, row.successes, n, static_cast<double>(row.successes) / n,
                 ci.low, ci.high, row.mean_final);
    }
    fmt::print("\nTotal: {:.0f} s on {} threads.\n", total_seconds, o.threads);
  } catch (const std::exception& e) {
    fmt::print(stderr, "depl-dependability-bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
