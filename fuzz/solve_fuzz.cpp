// Fuzz target: the solver on small problems drawn from the input bytes. DepL with its
// certificate and the exhaustive OPT run on each; the certificate must hold against OPT, and
// every plan DepL returns must be the evaluator's. Problems are kept small (at most 4 datasets,
// 3 variants, 3 pools, 24 epochs) so that OPT can enumerate them and one input solves in
// milliseconds; the input is read as a stream of fields (layout in docs/fuzzing.md), missing
// bytes read as zero.
#include <algorithm>
#include <cmath>
#include <string>

#include "depl/solver/evaluator.hpp"
#include "depl/solver/parse.hpp"
#include "depl/solver/solve.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

class Fields {
 public:
  Fields(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  // A value in [0, 1) from the next two bytes.
  double unit() {
    const unsigned hi = next(), lo = next();
    return static_cast<double>((hi << 8) | lo) / 65536.0;
  }
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  int count(int lo, int hi) { return lo + static_cast<int>(next() % (hi - lo + 1)); }
  bool flag() { return next() & 1; }

 private:
  unsigned next() { return at_ < size_ ? data_[at_++] : 0u; }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

solver::Problem problem_from(Fields& in) {
  using namespace solver;
  Problem p;
  const int pools = in.count(1, 3), datasets = in.count(1, 4), models = in.count(1, 3);
  p.training.max_epochs = in.count(1, 24);
  p.training.max_switches = in.count(0, 2);
  p.training.min_workers = 1;
  p.training.max_workers = in.count(1, 4);
  p.training.batch_size = 64 * in.count(1, 8);
  for (int k = 0; k < pools; ++k) {
    Pool pool;
    pool.name = "pool-" + std::to_string(k);
    pool.gpu_type = "gpu";
    pool.gpus = in.count(1, 8);
    pool.gpu_gflops = in.between(1e3, 4e5);
    pool.price_per_gpu_hour = in.between(0.1, 8);
    pool.bandwidth = in.between(1e8, 2e11);
    pool.storage_bandwidth = in.between(1e7, 3e9);
    pool.startup_seconds = in.between(0, 300);
    if (in.flag()) {
      pool.capacity_type = CapacityType::Spot;
      pool.interruptions_per_hour = in.between(0, 2);
    }
    p.pools.push_back(std::move(pool));
  }
  for (auto& into : p.pools) {
    for (const auto& from : p.pools) {
      if (from.name != into.name && in.flag()) into.inter_pool[from.name] = in.between(1e7, 1e10);
    }
  }
  for (int d = 0; d < datasets; ++d) {
    Dataset ds;
    ds.name = "data-" + std::to_string(d);
    ds.samples = 1 + static_cast<std::int64_t>(in.between(0, 5e5));
    ds.quality = std::max(1e-3, 1 - in.unit());
    ds.label_noise = in.flag() ? in.between(0, 0.7) : 0.0;
    ds.size_bytes = in.between(0, 1e11);
    if (in.flag())
      ds.locality.push_back(p.pools[static_cast<std::size_t>(in.count(0, pools - 1))].name);
    p.datasets.push_back(std::move(ds));
  }
  const double l0 = in.between(0.5, 4);
  for (int v = 0; v < models; ++v) {
    ModelVariant m;
    m.name = "v" + std::to_string(v);
    m.image = "example/" + m.name + ":1";
    m.compute_per_sample_gflop = in.between(0.01, 60);
    m.parameter_bytes = in.between(0, 1e9);
    m.gpus_per_worker = in.count(1, 2);
    m.loss.initial_loss = l0;
    m.loss.floor_loss = in.unit() * l0 * 0.9;
    m.loss.decay_per_epoch = in.between(0.3, 0.99);
    m.loss.noise_stddev = in.between(0, 0.1);
    m.loss.reference_samples = in.between(1e3, 1e6);
    m.loss.data_exponent = in.flag() ? in.between(0, 0.5) : 0.0;
    m.loss.label_noise_floor = in.flag() ? in.between(0, 2) : 0.0;
    p.models.push_back(std::move(m));
  }
  for (const auto& a : p.models) {
    for (const auto& b : p.models) {
      if (a.name == b.name || !in.flag()) continue;
      p.switching.push_back(
          {a.name, b.name, in.between(-0.2, 0.3), in.between(0, 0.1), in.between(0, 600)});
    }
  }
  p.target.guarantee = in.flag() ? Guarantee::DistributionFree : Guarantee::Gaussian;
  p.target.probability = in.between(0.5, 0.995);
  p.target.loss = in.between(0.01, 1.0) * l0;
  if (in.flag()) p.target.deadline_seconds = in.between(1, 1e5);
  if (in.flag()) p.target.budget = in.between(1e-3, 50);
  return p;
}

constexpr std::size_t kMemory = std::size_t{32} << 20;

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

}  // namespace

int solve(const std::uint8_t* data, std::size_t size) {
  Fields in(data, size);
  const solver::Problem problem = problem_from(in);
  if (!solver::past_solver_limits(problem).empty()) return 0;
  solver::SolveOptions options;
  // A problem this small never needs more: a solve that runs out of it (it stops and says so)
  // has let some search grow without need.
  options.budget.memory_bytes = kMemory;
  const auto depl = solver::solve(problem, options);
  check(depl.has_value(), "DepL solves every problem within the limits");
  check(depl->stopped != solver::BudgetStop::Memory, "a small problem is solved within 32 MiB");
  if (depl->feasible) {
    const solver::Figures figures = solver::evaluate(problem, depl->plan);
    check(figures.feasible, "DepL's plan is feasible under the evaluator");
    check(close(figures.cost, depl->figures.cost), "DepL reports the evaluator's cost");
    const auto& c = depl->certificate;
    check(c.lower_bound >= 0 && c.lower_bound <= depl->figures.cost * (1 + 1e-9),
          "0 <= lower bound <= cost");
    check(c.gap >= 0 && c.gap <= 1, "gap in [0, 1]");
  } else {
    check(!depl->reason.empty(), "an infeasible result says why");
  }
  options.algorithm = solver::Algorithm::Opt;
  options.opt_max_plans = 200'000;
  const auto opt = solver::solve(problem, options);
  if (!opt || !opt->feasible || opt->stopped != solver::BudgetStop::None) return 0;
  if (depl->feasible) {
    check(depl->figures.cost >= opt->figures.cost * (1 - 1e-9), "DepL is never cheaper than OPT");
    check(depl->certificate.lower_bound <= opt->figures.cost * (1 + 1e-9),
          "the certificate's lower bound is never above OPT's cost");
  }
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(solve)
