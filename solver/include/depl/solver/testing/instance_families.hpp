// Seeded random DepL instances shared by the solver tests and the benchmark (bench/). Three
// families: small (OPT can enumerate them), paper-like (a full model and variants compressed to
// 0.5/0.25/0.1 of its compute, as in the DepL papers' setup) and large (for scaling). The same
// seed always gives the same Problem. Targets are set so that the full model alone can reach them
// within the horizon; deadlines and budgets are left to the caller (see with_deadline).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "depl/solver/evaluator.hpp"
#include "depl/solver/problem.hpp"

namespace depl::testing {

class InstanceRng {
 public:
  explicit InstanceRng(std::uint64_t seed) : engine_(seed * 0x9E3779B97F4A7C15ULL + 12345) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine_); }
  bool chance(double p) { return uniform(0, 1) < p; }

 private:
  std::mt19937_64 engine_;
};

struct InstanceShape {
  int datasets = 4;
  std::vector<double> compute_ratios{1.0, 0.5, 0.25, 0.1};  // variant compute / full compute
  int pools = 3;
  int horizon = 150;
  int max_switches = 2;
  int max_workers = 8;
  double decay = 0.9;            // full model's r at all data
  double gflop_per_sample = 30;  // full model
  double samples_low = 50'000, samples_high = 400'000;
  bool upgrades_only = true;  // switches only towards more compute
  double quality_low = 0.3;
};

namespace detail {

struct GpuKind {
  const char* type;
  double gflops;
  double price;
};

inline const std::vector<GpuKind>& gpu_kinds() {
  static const std::vector<GpuKind> kinds{{"NVIDIA-A100-SXM4-80GB", 150'000, 3.0},
                                          {"NVIDIA-V100-SXM2-32GB", 60'000, 2.1},
                                          {"NVIDIA-L4", 45'000, 0.8},
                                          {"NVIDIA-T4", 25'000, 0.45},
                                          {"NVIDIA-H100-SXM5-80GB", 380'000, 6.5}};
  return kinds;
}

}  // namespace detail

inline solver::Problem make_instance(std::uint64_t seed, const InstanceShape& shape) {
  using namespace solver;
  InstanceRng rng(seed);
  Problem p;
  // Pools.
  for (int k = 0; k < shape.pools; ++k) {
    const auto& kind = detail::gpu_kinds()[static_cast<std::size_t>(rng.integer(0, 4))];
    Pool pool;
    pool.name = "pool-" + std::to_string(k);
    pool.gpu_type = kind.type;
    pool.gpus = rng.integer(1, 4) * 4;
    pool.gpu_gflops = kind.gflops * rng.uniform(0.9, 1.1);
    pool.price_per_gpu_hour = kind.price * rng.uniform(0.8, 1.2);
    pool.bandwidth = rng.uniform(10e9, 100e9);
    pool.storage_bandwidth = rng.uniform(0.5e9, 2e9);
    pool.startup_seconds = rng.uniform(20, 120);
    p.pools.push_back(pool);
  }
  // Datasets: a few good ones and a tail of lower quality.
  for (int d = 0; d < shape.datasets; ++d) {
    Dataset ds;
    ds.name = "data-" + std::to_string(d);
    ds.samples = static_cast<std::int64_t>(rng.uniform(shape.samples_low, shape.samples_high));
    ds.quality = d == 0 ? rng.uniform(0.85, 1.0) : rng.uniform(shape.quality_low, 1.0);
    ds.size_bytes = static_cast<double>(ds.samples) * rng.uniform(50e3, 150e3);
    if (rng.chance(0.5))
      ds.locality.push_back(
          p.pools[static_cast<std::size_t>(rng.integer(0, shape.pools - 1))].name);
    p.datasets.push_back(ds);
  }
  double effective_all = 0;
  for (const auto& ds : p.datasets) effective_all += ds.quality * static_cast<double>(ds.samples);
  // Variants: compression lowers compute and raises the floor.
  const double l0 = rng.uniform(2.0, 2.5);
  const double floor_full = rng.uniform(0.15, 0.35);
  const double noise_full = rng.uniform(0.008, 0.02);
  for (std::size_t v = 0; v < shape.compute_ratios.size(); ++v) {
    const double ratio = shape.compute_ratios[v];
    ModelVariant m;
    m.name = v == 0 ? "full" : "c" + std::to_string(static_cast<int>(std::lround(ratio * 100)));
    m.image = "registry.local/train:" + m.name;
    m.compute_per_sample_gflop = shape.gflop_per_sample * ratio;
    m.parameter_bytes = 100e6 * ratio;
    m.gpus_per_worker = 1;
    m.loss.initial_loss = l0;
    m.loss.floor_loss = floor_full + (1 - ratio) * rng.uniform(0.3, 0.6);
    m.loss.decay_per_epoch =
        std::clamp(shape.decay - (1 - ratio) * rng.uniform(0.0, 0.1), 0.3, 0.98);
    m.loss.noise_stddev = noise_full * rng.uniform(0.8, 1.5);
    m.loss.reference_samples = effective_all;
    m.loss.data_exponent = rng.chance(0.5) ? rng.uniform(0.0, 0.2) : 0.0;
    p.models.push_back(m);
  }
  // Switches.
  for (std::size_t a = 0; a < p.models.size(); ++a) {
    for (std::size_t b = 0; b < p.models.size(); ++b) {
      if (a == b) continue;
      const bool upgrade =
          p.models[b].compute_per_sample_gflop > p.models[a].compute_per_sample_gflop;
      if (shape.upgrades_only ? !upgrade : !rng.chance(0.7)) continue;
      p.switching.push_back({p.models[a].name, p.models[b].name, rng.uniform(0.0, 0.06),
                             rng.uniform(0.0, 0.02), rng.uniform(30, 300)});
    }
  }
  p.training.batch_size = 256;
  p.training.max_epochs = shape.horizon;
  p.training.max_switches = shape.max_switches;
  p.training.min_workers = 1;
  p.training.max_workers = shape.max_workers;
  // Target: reachable by the full model on all data, with a margin the schedule has to earn.
  p.target.probability =
      std::vector<double>{0.8, 0.9, 0.95}[static_cast<std::size_t>(rng.integer(0, 2))];
  p.target.guarantee = rng.chance(0.2) ? Guarantee::DistributionFree : Guarantee::Gaussian;
  const ModelVariant& full = p.models.front();
  const double rho = full.loss.decay_per_epoch;
  const double stationary_sd = full.loss.noise_stddev / std::sqrt(1 - rho * rho);
  const double kappa = solver::guarantee_kappa(p.target);
  const double reachable = full.loss.floor_loss + kappa * stationary_sd;
  p.target.loss = reachable + rng.uniform(0.05, 0.25) * (l0 - reachable);
  return p;
}

// OPT-sized: 1-3 datasets, 2-3 variants, 1-2 pools, few workers, short horizon.
inline solver::Problem small_instance(std::uint64_t seed) {
  InstanceRng rng(seed ^ 0x5A5A5A5AULL);
  InstanceShape shape;
  shape.datasets = rng.integer(1, 3);
  const int variants = rng.integer(2, 3);
  shape.compute_ratios =
      variants == 2 ? std::vector<double>{1.0, 0.3} : std::vector<double>{1.0, 0.5, 0.2};
  shape.pools = rng.integer(1, 2);
  shape.max_switches = rng.integer(1, 2);
  shape.horizon = shape.max_switches == 2 ? rng.integer(8, 12) : rng.integer(10, 20);
  shape.max_workers = rng.integer(1, 2);
  shape.decay = rng.uniform(0.45, 0.7);
  shape.samples_low = 5'000;
  shape.samples_high = 40'000;
  shape.gflop_per_sample = 2000;  // epochs long enough that switching can pay for itself
  shape.upgrades_only = rng.chance(0.5);
  return make_instance(seed, shape);
}

// The instance with a spot twin of every pool: the same GPUs at 30% of the price, interrupted
// at a seeded rate of 0.1-1 per worker-hour (docs/depl-model.md section 2), and every variant's
// checkpoint at its default size (twice its parameters), which prices a restart.
inline solver::Problem with_spot_twins(solver::Problem p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> rate(0.1, 1.0);
  for (solver::ModelVariant& m : p.models) m.checkpoint_bytes = 2 * m.parameter_bytes;
  const std::size_t on_demand = p.pools.size();
  for (std::size_t k = 0; k < on_demand; ++k) {
    solver::Pool spot = p.pools[k];
    spot.name += "-spot";
    spot.price_per_gpu_hour *= 0.3;
    spot.capacity_type = solver::CapacityType::Spot;
    spot.interruptions_per_hour = rate(rng);
    p.pools.push_back(std::move(spot));
  }
  return p;
}

// The papers' setup: a full model and variants at 0.5/0.25/0.1 of its compute.
inline solver::Problem paper_like_instance(std::uint64_t seed) {
  InstanceRng rng(seed ^ 0xC0FFEEULL);
  InstanceShape shape;
  shape.datasets = rng.integer(4, 6);
  shape.pools = rng.integer(3, 4);
  shape.horizon = 150;
  shape.decay = rng.uniform(0.85, 0.93);
  return make_instance(seed, shape);
}

// Scaling: any number of datasets, variants (compute from 1 down to 0.1), pools and horizon.
inline solver::Problem large_instance(std::uint64_t seed, int datasets, int variants, int pools,
                                      int horizon) {
  InstanceShape shape;
  shape.datasets = datasets;
  shape.pools = pools;
  shape.horizon = horizon;
  shape.compute_ratios.clear();
  for (int v = 0; v < variants; ++v) {
    shape.compute_ratios.push_back(variants == 1 ? 1.0 : 1.0 - 0.9 * v / (variants - 1));
  }
  shape.decay = 0.93;
  return make_instance(seed, shape);
}

}  // namespace depl::testing

namespace depl::testing {

// The large family: instances drawn from four generators, so that a solver tuned on some of
// them is measured on others. Every instance has 10-40 datasets, 4-8 variants, 8-16 pools and a
// horizon of 100-300 epochs; the generator is seed % 4:
//   0  dataset mix: a few high-quality datasets and a long tail of poor ones, sizes spread over
//      two orders of magnitude;
//   1  deadlines and budgets: a deadline between the fastest and the cheapest time of the full
//      model alone, and on every other instance a budget between 0.6 and 1.2 times its cost;
//   2  inter-pool bandwidths: most data local to some pool, large, with a measured bandwidth
//      between most pairs of pools (staging decides where to train);
//   3  switch patterns: any switch with probability 0.5 (downgrades too), larger jumps and
//      overheads, two GPUs per worker for the larger variants.
// Seeds 1-40 are the tuning set; seeds 10001-10040 are held out (measured for the record,
// never used to choose a parameter).
inline constexpr std::uint64_t kLargeHeldOutSeed = 10001;

namespace detail {

// The full variant (index 0) alone on every dataset: the fewest epochs that meet the guarantee
// (0 when it never does within H), and the time and cost of that phase on the cheapest and on
// the fastest placement.
struct FullAlone {
  int epochs = 0;
  double cheapest_seconds = 0, cheapest_cost = 0, fastest_seconds = 0;
};

inline FullAlone full_alone(const solver::Problem& p) {
  using namespace solver;
  FullAlone out;
  std::vector<std::size_t> all(p.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const double e = effective_samples(p, all);
  LossState s{p.models[0].loss.initial_loss, 0.0};
  for (int t = 1; t <= p.training.max_epochs; ++t) {
    s = epoch_step(p.models[0], e, 0.0, s);
    if (meets_guarantee(p.target, s.mean, s.variance)) {
      out.epochs = t;
      break;
    }
  }
  if (out.epochs == 0) return out;
  bool first = true;
  for (std::size_t k = 0; k < p.pools.size(); ++k) {
    for (int n = p.training.min_workers; n <= p.training.max_workers; ++n) {
      if (n * p.models[0].gpus_per_worker > p.pools[k].gpus) break;
      Plan plan{all, {{0, out.epochs, k, n}}};
      const Figures f = evaluate(p, plan);
      if (first || f.cost < out.cheapest_cost) {
        out.cheapest_cost = f.cost;
        out.cheapest_seconds = f.duration_seconds;
      }
      if (first || f.duration_seconds < out.fastest_seconds)
        out.fastest_seconds = f.duration_seconds;
      first = false;
    }
  }
  return out;
}

}  // namespace detail

inline solver::Problem large_family_instance(std::uint64_t seed) {
  using namespace solver;
  InstanceRng rng(seed * 7919 + 17);
  const int kind = static_cast<int>(seed % 4);
  Problem p;
  const int pools = rng.integer(8, 16);
  const int datasets = rng.integer(10, 40);
  const int variants = rng.integer(4, 8);
  p.training.max_epochs = rng.integer(100, 300);
  p.training.max_switches = rng.integer(1, 3);
  p.training.min_workers = 1;
  p.training.max_workers = rng.integer(4, 16);
  p.training.batch_size = 256 * rng.integer(1, 4);

  for (int k = 0; k < pools; ++k) {
    const auto& gpu = detail::gpu_kinds()[static_cast<std::size_t>(rng.integer(0, 4))];
    Pool pool;
    pool.name = "pool-" + std::to_string(k);
    pool.gpu_type = gpu.type;
    pool.gpus = rng.integer(1, 8) * 4;
    pool.gpu_gflops = gpu.gflops * rng.uniform(0.85, 1.15);
    pool.price_per_gpu_hour = gpu.price * rng.uniform(0.7, 1.3);
    pool.bandwidth = rng.uniform(5e9, 200e9);
    pool.storage_bandwidth = rng.uniform(0.3e9, 3e9);
    pool.startup_seconds = rng.uniform(10, 180);
    p.pools.push_back(pool);
  }
  if (kind == 2) {
    for (auto& into : p.pools) {
      for (const auto& from : p.pools) {
        if (from.name != into.name && rng.chance(0.7)) {
          into.inter_pool[from.name] = rng.uniform(0.2e9, 10e9);
        }
      }
    }
  }

  for (int d = 0; d < datasets; ++d) {
    Dataset ds;
    ds.name = "data-" + std::to_string(d);
    if (kind == 0) {
      ds.samples = static_cast<std::int64_t>(std::exp(rng.uniform(std::log(10e3), std::log(1e6))));
      ds.quality = rng.chance(0.15) ? rng.uniform(0.85, 1.0) : rng.uniform(0.05, 0.5);
    } else {
      ds.samples = static_cast<std::int64_t>(rng.uniform(30e3, 300e3));
      ds.quality = rng.uniform(0.3, 1.0);
    }
    if (d == 0) ds.quality = std::max(ds.quality, 0.9);
    ds.size_bytes = static_cast<double>(ds.samples) *
                    (kind == 2 ? rng.uniform(200e3, 1e6) : rng.uniform(20e3, 150e3));
    if (rng.chance(kind == 2 ? 0.9 : 0.4)) {
      ds.locality.push_back(p.pools[static_cast<std::size_t>(rng.integer(0, pools - 1))].name);
    }
    p.datasets.push_back(ds);
  }
  double effective_all = 0;
  for (const auto& ds : p.datasets) effective_all += ds.quality * static_cast<double>(ds.samples);

  const double l0 = rng.uniform(1.5, 3.0);
  const double floor_full = rng.uniform(0.1, 0.4);
  const double noise_full = rng.uniform(0.005, 0.03);
  const double decay = rng.uniform(0.85, 0.95);
  const double gflop = rng.uniform(5, 60);
  for (int v = 0; v < variants; ++v) {
    const double ratio = 1.0 - 0.92 * v / (variants - 1);
    ModelVariant m;
    m.name = v == 0 ? "full" : "v" + std::to_string(v);
    m.image = "registry.local/train:" + m.name;
    m.compute_per_sample_gflop = gflop * ratio;
    m.parameter_bytes = rng.uniform(50e6, 500e6) * ratio;
    m.gpus_per_worker = kind == 3 && ratio > 0.6 ? 2 : 1;
    m.loss.initial_loss = l0;
    m.loss.floor_loss = floor_full + (1 - ratio) * rng.uniform(0.2, 0.8);
    m.loss.decay_per_epoch = std::clamp(decay - (1 - ratio) * rng.uniform(0.0, 0.12), 0.3, 0.98);
    m.loss.noise_stddev = noise_full * rng.uniform(0.7, 1.6);
    m.loss.reference_samples = effective_all * rng.uniform(0.5, 1.5);
    m.loss.data_exponent = rng.chance(0.5) ? rng.uniform(0.0, 0.25) : 0.0;
    p.models.push_back(m);
  }
  for (std::size_t a = 0; a < p.models.size(); ++a) {
    for (std::size_t b = 0; b < p.models.size(); ++b) {
      if (a == b) continue;
      const bool upgrade =
          p.models[b].compute_per_sample_gflop > p.models[a].compute_per_sample_gflop;
      const bool listed = kind == 3 ? rng.chance(0.5) : upgrade && rng.chance(0.8);
      if (!listed) continue;
      const double scale = kind == 3 ? 2.0 : 1.0;
      p.switching.push_back({p.models[a].name, p.models[b].name, rng.uniform(0.0, 0.05) * scale,
                             rng.uniform(0.0, 0.02) * scale, rng.uniform(20, 300) * scale});
    }
  }

  p.target.probability =
      std::vector<double>{0.8, 0.9, 0.95, 0.99}[static_cast<std::size_t>(rng.integer(0, 3))];
  p.target.guarantee = rng.chance(0.2) ? Guarantee::DistributionFree : Guarantee::Gaussian;
  const ModelVariant& full = p.models.front();
  std::vector<std::size_t> all(p.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const double e_all = effective_samples(p, all);
  const double rho = std::pow(full.loss.decay_per_epoch, e_all / full.loss.reference_samples);
  const double floor =
      full.loss.floor_loss * std::pow(full.loss.reference_samples / e_all, full.loss.data_exponent);
  const double stationary_sd = full.loss.noise_stddev / std::sqrt(1 - rho * rho);
  const double reachable = floor + guarantee_kappa(p.target) * stationary_sd;
  p.target.loss = reachable + rng.uniform(0.05, 0.3) * (l0 - reachable);

  if (kind == 1) {
    const detail::FullAlone f = detail::full_alone(p);
    if (f.epochs > 0) {
      p.target.deadline_seconds =
          f.fastest_seconds + rng.uniform(0.2, 0.9) * (f.cheapest_seconds - f.fastest_seconds);
      if (seed % 8 == 5) p.target.budget = f.cheapest_cost * rng.uniform(0.6, 1.2);
    }
  }
  return p;
}

}  // namespace depl::testing

namespace depl::testing {

// The largest job the solver admits (limits.hpp: 64 datasets, 12 variants with
// every switch listed, maxEpochs 1000, maxSwitches 4, 64 workers), on 16 pools of 1,024 GPUs.
// For the budget: a solve must end within its budget on it.
inline solver::Problem largest_admitted_instance(std::uint64_t seed) {
  InstanceShape shape;
  shape.datasets = 64;
  shape.pools = 16;
  shape.horizon = 1000;
  shape.max_switches = 4;
  shape.max_workers = 64;
  shape.upgrades_only = false;
  shape.compute_ratios.clear();
  for (int v = 0; v < 12; ++v) shape.compute_ratios.push_back(1.0 - 0.9 * v / 11);
  shape.decay = 0.95;
  solver::Problem p = make_instance(seed, shape);
  for (auto& pool : p.pools) pool.gpus = 1024;
  // Every switch: make_instance lists each with probability 0.7.
  p.switching.clear();
  for (const auto& a : p.models) {
    for (const auto& b : p.models) {
      if (a.name != b.name) p.switching.push_back({a.name, b.name, 0.01, 0.005, 60});
    }
  }
  return p;
}

}  // namespace depl::testing
