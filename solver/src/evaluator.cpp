#include "depl/solver/evaluator.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>

#include "depl/solver/normal.hpp"

namespace depl::solver {
namespace {

constexpr double kGuaranteeTolerance = 1e-12;

bool is_local(const Dataset& d, const Pool& pool) {
  for (const auto& name : d.locality) {
    if (name == pool.name) return true;
  }
  return false;
}

}  // namespace

double guarantee_kappa(const Target& target) {
  return guarantee_kappa(target, target.probability);
}

double guarantee_kappa(const Target& target, double probability) {
  if (!(probability < 1)) return std::numeric_limits<double>::infinity();
  if (target.guarantee == Guarantee::DistributionFree) {
    return std::sqrt(probability / (1 - probability));
  }
  return normal_quantile(probability);
}

double reach_probability(const Target& target, double mean, double variance) {
  const double margin = target.loss - mean;
  if (target.guarantee == Guarantee::DistributionFree) {
    if (mean > target.loss) return 0.0;
    if (variance <= 0) return 1.0;
    return 1.0 - variance / (variance + margin * margin);
  }
  if (variance <= 0) return mean <= target.loss ? 1.0 : 0.0;
  return normal_cdf(margin / std::sqrt(variance));
}

bool meets_guarantee(const Target& target, double mean, double variance) {
  return mean + guarantee_kappa(target) * std::sqrt(std::max(0.0, variance)) <=
         target.loss + kGuaranteeTolerance;
}

bool meets_guarantee(const Target& target, double mean, double variance, double on_time) {
  if (on_time >= 1) return meets_guarantee(target, mean, variance);
  if (!(on_time > target.probability)) return false;
  const double spread = std::sqrt(std::max(0.0, variance));
  const double kappa = guarantee_kappa(target, target.probability / on_time);
  // An infinite kappa can only be met without spread (0 * inf is not a number).
  if (spread == 0) return mean <= target.loss + kGuaranteeTolerance;
  return mean + kappa * spread <= target.loss + kGuaranteeTolerance;
}

namespace {

// log((exp(d * t) - 1) / d) for t > 0, without overflow or cancellation; log(t) at d = 0.
double log_growth(double d, double t) {
  const double x = d * t;
  if (std::fabs(x) < 1e-8) return std::log(t) + x / 2;
  if (x > 0) return x + std::log(-std::expm1(-x)) - std::log(d);
  return std::log(std::expm1(x) / d);
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

double EpochInterruptions::expected_seconds() const {
  if (!(rate > 0)) return epoch_seconds;
  const double x = rate * epoch_seconds;
  if (x > 700) return kInfinity;
  return std::expm1(x) * (1 / rate + restart_seconds);
}

double EpochInterruptions::expected_interruptions() const {
  if (!(rate > 0)) return 0;
  const double x = rate * epoch_seconds;
  return x > 700 ? kInfinity : std::expm1(x);
}

double EpochInterruptions::log_mgf(double theta) const {
  if (!(rate > 0)) return theta * epoch_seconds;
  // a(theta) = Lambda exp(theta R) (exp((theta - Lambda) t) - 1) / (theta - Lambda): the chance
  // that an attempt is interrupted times E[exp(theta (X + R))].
  const double d = theta - rate;
  const double log_a = std::log(rate) + theta * restart_seconds + log_growth(d, epoch_seconds);
  if (!(log_a < 0)) return kInfinity;
  return d * epoch_seconds - std::log1p(-std::exp(log_a));
}

double EpochInterruptions::divergence() const {
  if (!(rate > 0)) return kInfinity;
  // log a(theta) rises with theta from log(1 - q) < 0; bisect for where it crosses 0.
  auto log_a = [&](double theta) {
    return std::log(rate) + theta * restart_seconds + log_growth(theta - rate, epoch_seconds);
  };
  double low = 0;
  double high = std::max(rate, 1 / (epoch_seconds + restart_seconds));
  while (log_a(high) < 0) {
    low = high;
    high *= 2;
  }
  for (int i = 0; i < 200 && high - low > 1e-15 * high; ++i) {
    const double mid = (low + high) / 2;
    (log_a(mid) < 0 ? low : high) = mid;
  }
  return low;
}

EpochInterruptions epoch_interruptions(const ModelVariant& model, const Pool& pool, int workers,
                                       double epoch_seconds) {
  EpochInterruptions e;
  e.epoch_seconds = epoch_seconds;
  if (pool.interruptions_per_hour > 0) {
    e.rate = workers * pool.interruptions_per_hour / 3600.0;
    e.restart_seconds = pool.startup_seconds + model.checkpoint_bytes / pool.storage_bandwidth;
  }
  return e;
}

double on_time_probability(const DurationTerms& terms, double deadline) {
  double expected = terms.fixed_seconds;
  double ceiling = kInfinity;  // where the log moment generating function diverges
  for (const auto& [epochs, e] : terms.phases) {
    expected += epochs * e.expected_seconds();
    if (e.rate > 0) ceiling = std::min(ceiling, e.divergence());
  }
  if (!std::isfinite(ceiling)) return expected <= deadline ? 1.0 : 0.0;
  // Chernoff: P(T > deadline) <= exp(K(theta) - theta * deadline) for every theta > 0; the
  // exponent g is convex with g(0) = 0 and g'(0) = E[T] - deadline.
  if (!(expected < deadline)) return 0.0;
  auto g = [&](double theta) {
    double k = theta * terms.fixed_seconds;
    for (const auto& [epochs, e] : terms.phases) k += epochs * e.log_mgf(theta);
    return k - theta * deadline;
  };
  // Golden-section search on [0, ceiling): g is +infinity at the ceiling.
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double low = 0;
  double high = ceiling;
  double x1 = high - phi * (high - low);
  double x2 = low + phi * (high - low);
  double g1 = g(x1);
  double g2 = g(x2);
  for (int i = 0; i < 300 && high - low > 1e-14 * high; ++i) {
    if (g1 <= g2) {
      high = x2;
      x2 = x1;
      g2 = g1;
      x1 = high - phi * (high - low);
      g1 = g(x1);
    } else {
      low = x1;
      x1 = x2;
      g1 = g2;
      x2 = low + phi * (high - low);
      g2 = g(x2);
    }
  }
  const double exponent = std::min({0.0, g1, g2});
  return std::max(0.0, -std::expm1(exponent));
}

double loss_floor(const LossProfile& lp, double effective, double wrong_share) {
  return lp.floor_loss * std::pow(lp.reference_samples / effective, lp.data_exponent) +
         lp.label_noise_floor * wrong_share;
}

LossState epoch_step(const ModelVariant& model, double effective, double wrong_share,
                     LossState state) {
  const LossProfile& lp = model.loss;
  const double rho = std::pow(lp.decay_per_epoch, effective / lp.reference_samples);
  const double floor = loss_floor(lp, effective, wrong_share);
  state.mean = floor + (state.mean - floor) * rho;
  state.variance = rho * rho * state.variance + lp.noise_stddev * lp.noise_stddev;
  return state;
}

double reported_variance(const LossProfile& lp, double state_variance) {
  return state_variance + lp.validation_noise_stddev * lp.validation_noise_stddev;
}

LossState initial_loss_state(const LossProfile& lp) {
  return {lp.initial_loss, lp.initial_stddev * lp.initial_stddev};
}

LossState observed_loss_state(const LossProfile& lp, double loss) {
  return {loss, reported_variance(lp, 0.0)};
}

double epoch_seconds(const Problem& problem, const ModelVariant& model, const Pool& pool,
                     int workers, double samples) {
  const double n = workers;
  const double compute = samples * model.compute_per_sample_gflop /
                         (n * model.gpus_per_worker * pool.gpu_gflops);
  double comm = 0;
  if (workers > 1) {
    const double steps = std::ceil(samples / problem.training.batch_size);
    comm = steps * 2 * (n - 1) / n * model.parameter_bytes / pool.bandwidth;
  }
  return compute + comm;
}

double staging_seconds(const Problem& problem, const std::vector<std::size_t>& datasets,
                       const Pool& pool) {
  double seconds = 0;
  for (std::size_t di : datasets) {
    const Dataset& d = problem.datasets[di];
    if (is_local(d, pool) || d.size_bytes <= 0) continue;
    double bw = pool.storage_bandwidth;
    if (!d.locality.empty()) {
      auto it = pool.inter_pool.find(d.locality.front());
      if (it != pool.inter_pool.end()) bw = it->second;
    }
    seconds += d.size_bytes / bw;
  }
  return seconds;
}

double total_samples(const Problem& problem, const std::vector<std::size_t>& datasets) {
  double n = 0;
  for (std::size_t di : datasets) n += static_cast<double>(problem.datasets[di].samples);
  return n;
}

double effective_samples(const Dataset& dataset) {
  return dataset.quality * (1 - dataset.label_noise) * static_cast<double>(dataset.samples);
}

double wrong_labels(const Dataset& dataset) {
  return dataset.label_noise * static_cast<double>(dataset.samples);
}

double effective_samples(const Problem& problem, const std::vector<std::size_t>& datasets) {
  double e = 0;
  for (std::size_t di : datasets) e += effective_samples(problem.datasets[di]);
  return e;
}

double wrong_label_share(const Problem& problem, const std::vector<std::size_t>& datasets) {
  double wrong = 0;
  for (std::size_t di : datasets) wrong += wrong_labels(problem.datasets[di]);
  if (wrong <= 0) return 0;
  return wrong / total_samples(problem, datasets);
}

namespace {

// Checks the plan's structure; returns false (with violations) when it cannot be evaluated.
bool check_structure(const Problem& problem, const Plan& plan, std::vector<std::string>& out) {
  bool ok = true;
  if (plan.datasets.empty()) {
    out.emplace_back("datasets: a plan needs at least one dataset");
    ok = false;
  }
  for (std::size_t i = 0; i < plan.datasets.size(); ++i) {
    if (plan.datasets[i] >= problem.datasets.size()) {
      out.push_back(fmt::format("datasets[{}]: index {} out of range", i, plan.datasets[i]));
      ok = false;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (plan.datasets[j] == plan.datasets[i]) {
        out.push_back(fmt::format("datasets[{}]: dataset listed twice", i));
        ok = false;
      }
    }
  }
  if (plan.phases.empty()) {
    out.emplace_back("phases: a plan needs at least one phase");
    ok = false;
  }
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const Phase& ph = plan.phases[i];
    if (ph.model >= problem.models.size()) {
      out.push_back(fmt::format("phases[{}].model: index {} out of range", i, ph.model));
      ok = false;
    }
    if (ph.pool >= problem.pools.size()) {
      out.push_back(fmt::format("phases[{}].pool: index {} out of range", i, ph.pool));
      ok = false;
    }
    if (ph.epochs < 1) {
      out.push_back(fmt::format("phases[{}].epochs: must be >= 1, got {}", i, ph.epochs));
      ok = false;
    }
    if (ph.workers < 1) {
      out.push_back(fmt::format("phases[{}].workers: must be >= 1, got {}", i, ph.workers));
      ok = false;
    }
  }
  return ok;
}

}  // namespace

Figures evaluate(const Problem& problem, const Plan& plan) {
  Figures fig;
  fig.kappa = guarantee_kappa(problem.target);
  if (!check_structure(problem, plan, fig.violations)) return fig;

  const double samples = total_samples(problem, plan.datasets);
  const double effective = effective_samples(problem, plan.datasets);
  const double wrong_share = wrong_label_share(problem, plan.datasets);
  const Training& tr = problem.training;

  LossState state;
  int switches = 0;
  int epochs_total = 0;
  DurationTerms duration;
  const ModelVariant* previous_model = nullptr;
  const Pool* previous_pool = nullptr;
  if (problem.start) {
    state.mean = problem.start->loss_mean;
    state.variance = problem.start->loss_variance;
    const int mi = problem.model_index(problem.start->model);
    const int pi = problem.pool_index(problem.start->pool);
    if (mi >= 0) previous_model = &problem.models[static_cast<std::size_t>(mi)];
    if (pi >= 0) previous_pool = &problem.pools[static_cast<std::size_t>(pi)];
  } else {
    state = initial_loss_state(problem.models[plan.phases.front().model].loss);
  }

  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const Phase& ph = plan.phases[i];
    const ModelVariant& model = problem.models[ph.model];
    const Pool& pool = problem.pools[ph.pool];
    PhaseFigures pf;

    if (previous_model != nullptr && previous_model != &model) {
      ++switches;
      const Switch* sw = problem.find_switch(previous_model->name, model.name);
      if (sw == nullptr) {
        fig.violations.push_back(fmt::format("phases[{}]: switch {} -> {} is not listed in "
                                             "spec.switching",
                                             i, previous_model->name, model.name));
      } else {
        state.mean += sw->jump_mean;
        state.variance += sw->jump_stddev * sw->jump_stddev;
        pf.switch_seconds = sw->overhead_seconds;
      }
    } else if (previous_model == &model && i > 0) {
      fig.violations.push_back(
          fmt::format("phases[{}]: same model {} as the phase before", i, model.name));
    }

    if (problem.continues_start(i, ph.model, ph.pool, ph.workers)) {
      // The running phase goes on: its pods keep running (no startup, nothing to stage).
    } else {
      if (previous_pool != &pool) {
        pf.staging_seconds = staging_seconds(problem, plan.datasets, pool);
      }
      pf.startup_seconds = pool.startup_seconds;
    }
    const double n = ph.workers;
    pf.compute_seconds = samples * model.compute_per_sample_gflop /
                         (n * model.gpus_per_worker * pool.gpu_gflops);
    pf.epoch_seconds = epoch_seconds(problem, model, pool, ph.workers, samples);
    pf.comm_seconds = pf.epoch_seconds - pf.compute_seconds;
    const EpochInterruptions interruptions =
        epoch_interruptions(model, pool, ph.workers, pf.epoch_seconds);
    pf.interruptions_per_hour = interruptions.rate * 3600.0;
    pf.restart_seconds = interruptions.restart_seconds;
    pf.expected_epoch_seconds = interruptions.expected_seconds();
    pf.interruptions = ph.epochs * interruptions.expected_interruptions();
    const double fixed = pf.startup_seconds + pf.staging_seconds + pf.switch_seconds;
    pf.seconds = fixed + ph.epochs * pf.expected_epoch_seconds;
    pf.cost = n * model.gpus_per_worker * pool.price_per_gpu_hour * pf.seconds / 3600.0;
    duration.fixed_seconds += fixed;
    duration.phases.emplace_back(ph.epochs, interruptions);
    if (!std::isfinite(pf.expected_epoch_seconds)) {
      fig.violations.push_back(fmt::format(
          "phases[{}]: {} workers in pool {} are interrupted {:.3g} times per hour: an epoch of "
          "{:.6g} s never ends",
          i, ph.workers, pool.name, pf.interruptions_per_hour, pf.epoch_seconds));
    }

    for (int e = 0; e < ph.epochs; ++e) state = epoch_step(model, effective, wrong_share, state);
    pf.loss_mean = state.mean;
    pf.loss_variance = reported_variance(model.loss, state.variance);

    const long gpus_needed = static_cast<long>(ph.workers) * model.gpus_per_worker;
    if (gpus_needed > pool.gpus) {
      fig.violations.push_back(fmt::format("phases[{}]: {} workers x {} GPUs = {} GPUs > {} free "
                                           "in pool {}",
                                           i, ph.workers, model.gpus_per_worker, gpus_needed,
                                           pool.gpus, pool.name));
    }
    if (ph.workers < tr.min_workers || ph.workers > tr.max_workers) {
      fig.violations.push_back(fmt::format("phases[{}]: {} workers outside [{}, {}]", i,
                                           ph.workers, tr.min_workers, tr.max_workers));
    }
    epochs_total += ph.epochs;
    fig.interruptions += pf.interruptions;
    fig.cost += pf.cost;
    fig.duration_seconds += pf.seconds;
    fig.phases.push_back(pf);
    previous_model = &model;
    previous_pool = &pool;
  }

  // The promise is about the loss the workers report: the state's variance and the report's own.
  const double variance = fig.phases.empty()
                              ? state.variance
                              : fig.phases.back().loss_variance;
  fig.loss_mean = state.mean;
  fig.loss_state_variance = state.variance;
  fig.loss_stddev = std::sqrt(std::max(0.0, variance));
  fig.loss_probability = reach_probability(problem.target, state.mean, variance);
  bool interrupted = false;
  for (const auto& [epochs, e] : duration.phases) interrupted = interrupted || e.rate > 0;
  const double p = problem.target.probability;
  bool late = false;
  if (problem.target.deadline_seconds) {
    const double deadline = *problem.target.deadline_seconds;
    if (!interrupted) {
      late = fig.duration_seconds > deadline;
      if (late) {
        fig.violations.push_back(
            fmt::format("deadline: {:.6g} s > {:.6g} s", fig.duration_seconds, deadline));
      }
    } else {
      fig.on_time_probability = on_time_probability(duration, deadline);
      late = !(fig.on_time_probability > p);
      if (late) {
        fig.violations.push_back(
            fmt::format("deadline: P(done by {:.6g} s) = {:.4f} <= {} with interruptions (expected "
                        "duration {:.6g} s)",
                        deadline, fig.on_time_probability, p, fig.duration_seconds));
      }
    }
  }
  // A plan that is late is judged on its loss alone, so that each violation names its cause.
  const double on_time = late ? 1.0 : fig.on_time_probability;
  fig.kappa = guarantee_kappa(problem.target, p / on_time);
  fig.probability = fig.loss_probability * fig.on_time_probability;
  fig.meets_guarantee = meets_guarantee(problem.target, state.mean, variance, on_time);
  if (!fig.meets_guarantee) {
    if (on_time < 1) {
      fig.violations.push_back(fmt::format(
          "guarantee: loss {:.6g} + {:.4g} x {:.6g} > target {:.6g} (P(target) = {:.4f} x "
          "P(on time) {:.4f} = {:.4f} < {})",
          state.mean, fig.kappa, fig.loss_stddev, problem.target.loss, fig.loss_probability,
          on_time, fig.probability, p));
    } else {
      fig.violations.push_back(fmt::format(
          "guarantee: loss {:.6g} + {:.4g} x {:.6g} > target {:.6g} (P(target) = {:.4f} < {})",
          state.mean, fig.kappa, fig.loss_stddev, problem.target.loss, fig.loss_probability, p));
    }
  }
  if (problem.target.budget && fig.cost > *problem.target.budget) {
    fig.violations.push_back(
        fmt::format("budget: cost {:.6g} > {:.6g}", fig.cost, *problem.target.budget));
  }
  if (epochs_total > tr.max_epochs) {
    fig.violations.push_back(
        fmt::format("horizon: {} epochs > maxEpochs {}", epochs_total, tr.max_epochs));
  }
  if (switches > tr.max_switches) {
    fig.violations.push_back(
        fmt::format("switches: {} > maxSwitches {}", switches, tr.max_switches));
  }
  fig.feasible = fig.violations.empty();
  return fig;
}

std::vector<LossPoint> loss_trajectory(const Problem& problem, const Plan& plan) {
  std::vector<LossPoint> points;
  std::vector<std::string> ignored;
  if (!check_structure(problem, plan, ignored)) return points;
  const double effective = effective_samples(problem, plan.datasets);
  const double wrong_share = wrong_label_share(problem, plan.datasets);
  LossState state;
  const ModelVariant* previous_model = nullptr;
  if (problem.start) {
    state.mean = problem.start->loss_mean;
    state.variance = problem.start->loss_variance;
    const int mi = problem.model_index(problem.start->model);
    if (mi >= 0) previous_model = &problem.models[static_cast<std::size_t>(mi)];
  } else {
    state = initial_loss_state(problem.models[plan.phases.front().model].loss);
  }
  int epoch = 0;
  points.push_back({0, 0, state.mean, state.variance});
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const ModelVariant& model = problem.models[plan.phases[i].model];
    if (previous_model != nullptr && previous_model != &model) {
      if (const Switch* sw = problem.find_switch(previous_model->name, model.name)) {
        state.mean += sw->jump_mean;
        state.variance += sw->jump_stddev * sw->jump_stddev;
      }
    }
    for (int e = 0; e < plan.phases[i].epochs; ++e) {
      state = epoch_step(model, effective, wrong_share, state);
      points.push_back({++epoch, i, state.mean, reported_variance(model.loss, state.variance)});
    }
    previous_model = &model;
  }
  return points;
}

}  // namespace depl::solver
