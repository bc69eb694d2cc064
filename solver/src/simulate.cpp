#include "depl/solver/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "depl/solver/evaluator.hpp"

namespace depl::solver {
namespace {

constexpr double kZ95 = 1.96;

// Standard noise draws from a 64-bit Mersenne Twister. The samplers are written out here rather
// than taken from <random>'s distributions, whose algorithms differ between standard libraries:
// a seed must replay the same runs on every platform.
class NoiseSource {
 public:
  NoiseSource(std::uint64_t seed, Noise noise) : engine_(seed), noise_(noise) {}

  // A draw with mean 0 and variance 1 from the chosen family.
  double unit() {
    if (noise_ == Noise::Gaussian) return normal();
    // Student t with 3 degrees of freedom is Z / sqrt(V / 3) with V ~ chi^2(3); its variance
    // is 3, so Z / sqrt(V) is the same shape scaled to variance 1.
    const double z = normal();
    double v = 0;
    for (int i = 0; i < 3; ++i) {
      const double y = normal();
      v += y * y;
    }
    return z / std::sqrt(v);
  }

  // An exponential draw with the given rate (> 0).
  double exponential(double rate) { return -std::log(uniform_open()) / rate; }

 private:
  // Uniform on (0, 1): the top 53 bits of one engine output, never exactly 0.
  double uniform_open() {
    return (static_cast<double>(engine_() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }

  // Marsaglia's polar method; keeps the second variate of each pair.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0;
    double v = 0;
    double s = 0;
    do {
      u = 2 * uniform_open() - 1;
      v = 2 * uniform_open() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    const double factor = std::sqrt(-2 * std::log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
  }

  std::mt19937_64 engine_;
  Noise noise_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// What one phase does to a run, precomputed once: the jump into it and its per-epoch update
// l = floor + (l - floor) * rho + sigma * eps, exactly the evaluator's epoch_step in mean, and
// the loss each epoch reports, l + nu * eps' (eps' drawn afresh every epoch, carried nowhere).
struct PhaseProcess {
  double jump_mean = 0;
  double jump_stddev = 0;
  double floor = 0;
  double rho = 1;
  double sigma = 0;
  double nu = 0;
  int epochs = 0;
  // Time and cost (section 2): the fixed part, each epoch's attempts, and the GPUs' rate.
  double fixed_seconds = 0;
  EpochInterruptions interruptions;
  double cost_per_second = 0;
};

std::vector<PhaseProcess> phase_processes(const Problem& problem, const Plan& plan,
                                          const Figures& figures,
                                          const ModelVariant*& first_model) {
  const double effective = effective_samples(problem, plan.datasets);
  const double wrong_share = wrong_label_share(problem, plan.datasets);
  std::vector<PhaseProcess> out;
  const ModelVariant* previous = nullptr;
  if (problem.start) {
    const int mi = problem.model_index(problem.start->model);
    if (mi >= 0) previous = &problem.models[static_cast<std::size_t>(mi)];
  }
  first_model = &problem.models[plan.phases.front().model];
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const Phase& phase = plan.phases[i];
    const ModelVariant& model = problem.models[phase.model];
    const Pool& pool = problem.pools[phase.pool];
    const PhaseFigures& pf = figures.phases[i];
    PhaseProcess pp;
    pp.fixed_seconds = pf.startup_seconds + pf.staging_seconds + pf.switch_seconds;
    pp.interruptions = epoch_interruptions(model, pool, phase.workers, pf.epoch_seconds);
    pp.cost_per_second = phase.workers * model.gpus_per_worker * pool.price_per_gpu_hour / 3600.0;
    // An unlisted switch gets no jump, as in the evaluator (which reports it as a violation).
    if (previous != nullptr && previous != &model) {
      if (const Switch* sw = problem.find_switch(previous->name, model.name)) {
        pp.jump_mean = sw->jump_mean;
        pp.jump_stddev = sw->jump_stddev;
      }
    }
    const LossProfile& lp = model.loss;
    pp.rho = std::pow(lp.decay_per_epoch, effective / lp.reference_samples);
    pp.floor = loss_floor(lp, effective, wrong_share);
    pp.sigma = lp.noise_stddev;
    pp.nu = lp.validation_noise_stddev;
    pp.epochs = phase.epochs;
    out.push_back(pp);
    previous = &model;
  }
  return out;
}

}  // namespace

Interval wilson_interval(int successes, int trials) {
  if (trials <= 0) return {0.0, 1.0};
  const double n = trials;
  const double p = static_cast<double>(successes) / n;
  const double z2 = kZ95 * kZ95;
  const double denominator = 1 + z2 / n;
  const double centre = (p + z2 / (2 * n)) / denominator;
  const double half = kZ95 / denominator * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

SimulationResult simulate(const Problem& problem, const Plan& plan,
                          const SimulationOptions& options) {
  SimulationResult result;
  const Figures figures = evaluate(problem, plan);
  result.predicted_probability = figures.probability;
  // A plan the evaluator cannot walk (no phases, indices out of range) has nothing to simulate.
  if (figures.phases.size() != plan.phases.size() || plan.phases.empty() || options.runs <= 0) {
    const Interval interval = wilson_interval(0, 0);
    result.interval_low = interval.low;
    result.interval_high = interval.high;
    return result;
  }

  const ModelVariant* first_model = nullptr;
  const std::vector<PhaseProcess> phases = phase_processes(problem, plan, figures, first_model);
  bool interrupted = false;
  for (const PhaseProcess& pp : phases) interrupted = interrupted || pp.interruptions.rate > 0;
  const std::optional<double> deadline = problem.target.deadline_seconds;
  double start_mean = first_model->loss.initial_loss;
  double start_stddev = first_model->loss.initial_stddev;
  if (problem.start) {
    start_mean = problem.start->loss_mean;
    start_stddev = std::sqrt(std::max(0.0, problem.start->loss_variance));
  }

  NoiseSource noise(options.seed, options.noise);
  // Interruptions come from their own stream: a plan's losses do not depend on its pools.
  NoiseSource reclaims(options.seed ^ 0x9E3779B97F4A7C15ull, Noise::Gaussian);
  const double target = problem.target.loss;
  double sum_final = 0;
  double sum_seconds = 0;
  double sum_cost = 0;
  double sum_cost_squared = 0;
  double sum_interruptions = 0;
  int reached = 0;
  int reached_stopping = 0;
  int on_time = 0;
  std::size_t total_epochs = 0;
  for (const PhaseProcess& pp : phases) total_epochs += static_cast<std::size_t>(pp.epochs);
  // When each epoch ends in this run (interrupted plans only): an epoch that meets the target
  // counts for the operator only if it ends by the deadline.
  std::vector<double> epoch_ends;
  epoch_ends.reserve(interrupted ? total_epochs : 0);
  for (int run = 0; run < options.runs; ++run) {
    double seconds = figures.duration_seconds;
    double cost = figures.cost;
    epoch_ends.clear();
    if (interrupted) {
      seconds = 0;
      cost = 0;
      for (const PhaseProcess& pp : phases) {
        double phase_seconds = pp.fixed_seconds;
        const EpochInterruptions& e = pp.interruptions;
        for (int epoch = 0; epoch < pp.epochs; ++epoch) {
          if (!(e.rate > 0)) {
            phase_seconds += e.epoch_seconds;
          } else {
            // Attempts until one runs a whole epoch; each interrupted one loses what it ran.
            for (;;) {
              const double x = reclaims.exponential(e.rate);
              if (x >= e.epoch_seconds) {
                phase_seconds += e.epoch_seconds;
                break;
              }
              phase_seconds += x + e.restart_seconds;
              sum_interruptions += 1;
            }
          }
          epoch_ends.push_back(seconds + phase_seconds);
        }
        seconds += phase_seconds;
        cost += pp.cost_per_second * phase_seconds;
      }
    }
    sum_seconds += seconds;
    sum_cost += cost;
    sum_cost_squared += cost * cost;
    const bool in_time = !interrupted || !deadline || seconds <= *deadline;
    if (in_time) ++on_time;
    double loss = start_mean;
    if (start_stddev > 0) loss += start_stddev * noise.unit();
    bool passed = false;  // some epoch reported a loss at or below the target, by the deadline
    double reported = loss;
    std::size_t epoch_index = 0;
    for (const PhaseProcess& pp : phases) {
      loss += pp.jump_mean;
      if (pp.jump_stddev > 0) loss += pp.jump_stddev * noise.unit();
      for (int e = 0; e < pp.epochs; ++e, ++epoch_index) {
        loss = pp.floor + (loss - pp.floor) * pp.rho;
        if (pp.sigma > 0) loss += pp.sigma * noise.unit();
        reported = pp.nu > 0 ? loss + pp.nu * noise.unit() : loss;
        if (!passed && reported <= target) {
          passed = epoch_ends.empty() || !deadline || epoch_ends[epoch_index] <= *deadline;
        }
      }
    }
    sum_final += reported;
    if (reported <= target && in_time) ++reached;
    if (passed) ++reached_stopping;
  }

  result.runs = options.runs;
  result.reached = reached;
  result.probability = static_cast<double>(reached) / options.runs;
  result.reached_stopping_at_target = reached_stopping;
  result.probability_stopping_at_target = static_cast<double>(reached_stopping) / options.runs;
  result.standard_error = std::sqrt(result.probability * (1 - result.probability) / options.runs);
  const Interval interval = wilson_interval(reached, options.runs);
  result.interval_low = interval.low;
  result.interval_high = interval.high;
  result.mean_final_loss = sum_final / options.runs;
  const double runs = options.runs;
  result.on_time = on_time;
  result.mean_seconds = sum_seconds / runs;
  result.mean_cost = sum_cost / runs;
  result.cost_stddev = std::sqrt(
      std::max(0.0, (sum_cost_squared - sum_cost * sum_cost / runs) / std::max(1.0, runs - 1)));
  result.cost_standard_error = result.cost_stddev / std::sqrt(runs);
  result.mean_interruptions = sum_interruptions / runs;
  result.predicted_cost = figures.cost;
  return result;
}

}  // namespace depl::solver
