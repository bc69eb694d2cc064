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
