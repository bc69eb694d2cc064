// Profile fitting (docs/depl-model.md section 6). The mean curve of K runs follows
// m_t = f + A r^t exactly under the model (the noise is zero-mean and the update is linear), so
// f and r come from the mean curve of the measured epochs (1..E): for each candidate floor f
// below the smallest mean, log(m_t - f) is regressed on t, and the floor whose curve fits the
// means best in loss space wins. l0 is the fitted curve extended back to epoch 0.
//
// The noise comes from how the runs spread around their mean curve. A run's reported loss is
// y_t = l_t + e_t: l_t carries its deviation on (variance S_t = r^2t s0^2 + sigma^2 (1 + r^2 + ...
// + r^2(t-1)), the start's spread s0 decaying and each epoch's sigma^2 added), e_t is the
// report's own transient error (variance nu^2, independent between epochs). So across runs
// Var(y_t) = S_t + nu^2 and Cov(y_t, y_t+1) = r S_t: linear in (s0^2, sigma^2, nu^2), which are
// the non-negative least-squares fit to the runs' variances and lag-one covariances. One run has
// no spread to split: then sigma is the spread of its one-epoch residuals
// y_t+1 - (f + (y_t - f) r), all of it counted as persistent.
#include "depl/solver/fit.hpp"

#include "depl/solver/evaluator.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace depl::solver {
namespace {

struct CurveFit {
  double floor = 0;
  double decay = 0;
  double scale = 0;  // A: the fitted gap to the floor at epoch 0
  double squared_error = INFINITY;
};

// For a fixed floor: log(m_t - f) = log A + t log r by least squares weighted with
// (m_t - f)^2, which approximates least squares on the losses themselves (a plain log fit lets
// the noisy points near the floor dominate). Then A is refitted in loss space for that r.
CurveFit fit_for_floor(const std::vector<double>& mean, double floor) {
  CurveFit fit;
  fit.floor = floor;
  double sw = 0, st = 0, sy = 0, stt = 0, sty = 0;
  for (std::size_t t = 0; t < mean.size(); ++t) {
    const double gap = mean[t] - floor;
    if (!(gap > 0)) return fit;
    const double w = gap * gap;
    const double y = std::log(gap);
    const double x = static_cast<double>(t);
    sw += w, st += w * x, sy += w * y, stt += w * x * x, sty += w * x * y;
  }
  const double denominator = sw * stt - st * st;
  if (!(denominator > 0)) return fit;
  const double slope = (sw * sty - st * sy) / denominator;
  const double decay = std::exp(slope);
  if (!(decay > 0 && decay < 1)) return fit;
  double num = 0, den = 0, power = 1;
  for (double m : mean) {
    num += (m - floor) * power;
    den += power * power;
    power *= decay;
  }
  const double scale = num / den;
  double error = 0;
  power = 1;
  for (double m : mean) {
    const double residual = m - (floor + scale * power);
    error += residual * residual;
    power *= decay;
  }
  fit.decay = decay;
  fit.scale = scale;
  fit.squared_error = error;
  return fit;
}

// Searches floors in [0, smallest mean): a grid first, then golden-section refinement between
// the neighbours of the best grid point.
CurveFit fit_mean_curve(const std::vector<double>& mean) {
  const double top = *std::min_element(mean.begin(), mean.end());
  constexpr int kGrid = 400;
  CurveFit best;
  int best_index = -1;
  for (int i = 0; i < kGrid; ++i) {
    const CurveFit fit = fit_for_floor(mean, top * i / kGrid);
    if (fit.squared_error < best.squared_error) {
      best = fit;
      best_index = i;
    }
  }
  if (best_index < 0) return best;
  double low = top * std::max(0, best_index - 1) / kGrid;
  double high = top * (best_index + 1) / kGrid;
  const double golden = (std::sqrt(5.0) - 1) / 2;
  double a = high - golden * (high - low), b = low + golden * (high - low);
  CurveFit fa = fit_for_floor(mean, a), fb = fit_for_floor(mean, b);
  for (int iteration = 0; iteration < 60; ++iteration) {
    if (fa.squared_error <= fb.squared_error) {
      high = b, b = a, fb = fa;
      a = high - golden * (high - low);
      fa = fit_for_floor(mean, a);
    } else {
      low = a, a = b, fa = fb;
      b = low + golden * (high - low);
      fb = fit_for_floor(mean, b);
    }
  }
  for (const CurveFit& candidate : {fa, fb}) {
    if (candidate.squared_error < best.squared_error) best = candidate;
  }
  return best;
}

// Least squares min |A x - b| over x >= 0 for a few unknowns: the best of the unconstrained fits
// on every subset of the columns whose solution is non-negative (the optimum is one of them).
std::vector<double> nonnegative_least_squares(const std::vector<std::vector<double>>& a,
                                              const std::vector<double>& b) {
  const std::size_t n = a.empty() ? 0 : a.front().size();
  std::vector<double> best(n, 0.0);
  double best_error = INFINITY;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < n; ++j) {
      if (mask & (1u << j)) cols.push_back(j);
    }
    const std::size_t m = cols.size();
    // Normal equations on the chosen columns, solved by Gaussian elimination with pivoting.
    std::vector<std::vector<double>> g(m, std::vector<double>(m + 1, 0.0));
    for (std::size_t r = 0; r < a.size(); ++r) {
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < m; ++j) g[i][j] += a[r][cols[i]] * a[r][cols[j]];
        g[i][m] += a[r][cols[i]] * b[r];
      }
    }
    bool singular = false;
    for (std::size_t i = 0; i < m && !singular; ++i) {
      std::size_t pivot = i;
      for (std::size_t k = i + 1; k < m; ++k) {
        if (std::abs(g[k][i]) > std::abs(g[pivot][i])) pivot = k;
      }
      std::swap(g[i], g[pivot]);
      if (!(std::abs(g[i][i]) > 1e-300)) {
        singular = true;
        break;
      }
      for (std::size_t k = 0; k < m; ++k) {
        if (k == i) continue;
        const double factor = g[k][i] / g[i][i];
        for (std::size_t j = i; j <= m; ++j) g[k][j] -= factor * g[i][j];
      }
    }
    if (singular) continue;
    std::vector<double> x(n, 0.0);
    bool negative = false;
    for (std::size_t i = 0; i < m; ++i) {
      x[cols[i]] = g[i][m] / g[i][i];
      negative = negative || x[cols[i]] < 0;
    }
    if (negative) continue;
    double error = 0;
    for (std::size_t r = 0; r < a.size(); ++r) {
      double fitted = 0;
      for (std::size_t j = 0; j < n; ++j) fitted += a[r][j] * x[j];
      error += (fitted - b[r]) * (fitted - b[r]);
    }
    if (error < best_error) {
      best_error = error;
      best = x;
    }
  }
  return best;
}

// (s0^2, sigma^2, nu^2) from the runs' spread around their mean curve (the comment at the top).
std::vector<double> fit_noise(const std::vector<std::vector<double>>& runs,
                              const std::vector<double>& mean, double decay) {
  const std::size_t epochs = mean.size();
  const double k = static_cast<double>(runs.size());
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  double start = 1, accumulated = 0;  // r^2t and 1 + r^2 + ... + r^2(t-1), for t = 1..epochs
  for (std::size_t t = 0; t < epochs; ++t) {
    accumulated += start;
    start *= decay * decay;
    double variance = 0, covariance = 0;
    for (const auto& run : runs) {
      variance += (run[t] - mean[t]) * (run[t] - mean[t]) / (k - 1);
      if (t + 1 < epochs) covariance += (run[t] - mean[t]) * (run[t + 1] - mean[t + 1]) / (k - 1);
    }
    a.push_back({start, accumulated, 1.0});
    b.push_back(variance);
    if (t + 1 < epochs) {
      a.push_back({decay * start, decay * accumulated, 0.0});
      b.push_back(covariance);
    }
  }
  return nonnegative_least_squares(a, b);
}

}  // namespace

Expected<ProfileFit> fit_loss_profile(const std::vector<std::vector<double>>& runs,
                                      double initial_loss) {
  if (!std::isfinite(initial_loss) || initial_loss <= 0) {
    return error(fmt::format("initial loss must be a finite number > 0, got {}", initial_loss));
  }
  if (runs.empty()) return error("no profiling runs to fit");
  const std::size_t epochs = runs.front().size();
  if (epochs < 3) {
    return error(fmt::format("each run needs at least 3 epochs of losses, got {}", epochs));
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].size() != epochs) {
      return error(
          fmt::format("run {} has {} epochs but run 0 has {}: every run must cover the "
                      "same epochs",
                      k, runs[k].size(), epochs));
    }
    for (std::size_t t = 0; t < epochs; ++t) {
      if (!std::isfinite(runs[k][t])) {
        return error(fmt::format("run {} epoch {}: the loss is not a finite number", k, t + 1));
      }
    }
  }

  // mean[t] is the average loss after epoch t+1. The loss before training is not fitted: real
  // training drops much faster in its first epoch than in the later ones, and a curve forced
  // through that point decays too fast where targets lie (measured on the reference worker:
  // docs/benchmarks.md, "Dependability"). The profile's initial loss is instead the fitted
  // curve's value one epoch before the first measurement, so the evaluator reproduces the
  // fitted curve exactly from epoch 1 on.
  std::vector<double> mean(epochs, 0.0);
  for (const auto& run : runs) {
    for (std::size_t t = 0; t < epochs; ++t) mean[t] += run[t] / static_cast<double>(runs.size());
  }
  if (*std::min_element(mean.begin(), mean.end()) <= 0) {
    return error("the mean loss reaches 0 or below; the model needs losses above a floor >= 0");
  }
  const CurveFit curve = fit_mean_curve(mean);
  if (!std::isfinite(curve.squared_error)) {
    return error("the losses do not decrease towards a floor (no decay per epoch below 1 fits)");
  }

  ProfileFit fit;
  if (runs.size() >= 2) {
    const std::vector<double> noise = fit_noise(runs, mean, curve.decay);
    fit.profile.initial_stddev = std::sqrt(noise[0]);
    fit.profile.noise_stddev = std::sqrt(noise[1]);
    fit.profile.validation_noise_stddev = std::sqrt(noise[2]);
  }
  double sum_squares = 0;
  std::size_t count = 0;
  for (const auto& run : runs) {
    for (std::size_t t = 0; t + 1 < epochs; ++t) {
      const double predicted = curve.floor + (run[t] - curve.floor) * curve.decay;
      const double residual = run[t + 1] - predicted;
      sum_squares += residual * residual;
      ++count;
    }
  }

  // Capped at the measured loss before training: the model never starts above reality.
  fit.profile.initial_loss = std::min(initial_loss, curve.floor + curve.scale / curve.decay);
  fit.profile.floor_loss = curve.floor;
  fit.profile.decay_per_epoch = curve.decay;
  if (runs.size() < 2) fit.profile.noise_stddev = std::sqrt(sum_squares / static_cast<double>(count));
  fit.squared_error = curve.squared_error;
  return fit;
}

Expected<double> fit_label_noise_floor(const LossProfile& profile, double effective_samples,
                                       double wrong_label_share,
                                       const std::vector<std::vector<double>>& runs) {
  if (!(wrong_label_share > 0 && wrong_label_share < 1)) {
    return error(
        fmt::format("the share of wrong labels must be in (0, 1), got {}", wrong_label_share));
  }
  if (!(effective_samples > 0) || !(profile.reference_samples > 0)) {
    return error("the clean samples and the profile's referenceSamples must be > 0");
  }
  if (runs.empty() || runs.front().empty()) return error("no noisy runs to fit");
  const std::size_t epochs = runs.front().size();
  std::vector<double> mean(epochs, 0.0);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].size() != epochs) {
      return error(fmt::format("run {} has {} epochs, run 0 has {}: they must match", k,
                               runs[k].size(), epochs));
    }
    for (std::size_t t = 0; t < epochs; ++t) {
      if (!std::isfinite(runs[k][t])) {
        return error(fmt::format("run {} epoch {}: the loss must be a finite number", k, t + 1));
      }
      mean[t] += runs[k][t] / static_cast<double>(runs.size());
    }
  }
  // m_t = a_t + beta * b_t: a_t the curve without wrong labels, b_t = (W / N) (1 - rho^t).
  const double rho =
      std::pow(profile.decay_per_epoch, effective_samples / profile.reference_samples);
  LossProfile clean = profile;
  clean.label_noise_floor = 0;
  const double floor = loss_floor(clean, effective_samples, 0.0);
  double kept = 1, across = 0, along = 0;
  for (std::size_t t = 0; t < epochs; ++t) {
    kept *= rho;
    const double a = floor + (profile.initial_loss - floor) * kept;
    const double b = wrong_label_share * (1 - kept);
    across += (mean[t] - a) * b;
    along += b * b;
  }
  if (!(along > 0)) return error("the runs' curve says nothing about the floor (no decay)");
  return std::max(0.0, across / along);
}

Expected<JumpFit> fit_switch_jump(const std::vector<double>& before,
                                  const std::vector<double>& after) {
  if (before.empty()) return error("no switch measurements to fit");
  if (before.size() != after.size()) {
    return error(fmt::format("{} losses before the switch but {} after: they must pair up",
                             before.size(), after.size()));
  }
  std::vector<double> jumps;
  for (std::size_t k = 0; k < before.size(); ++k) {
    if (!std::isfinite(before[k]) || !std::isfinite(after[k])) {
      return error(fmt::format("run {}: the losses around the switch must be finite numbers", k));
    }
    jumps.push_back(after[k] - before[k]);
  }
  JumpFit fit;
  for (double jump : jumps) fit.mean += jump / static_cast<double>(jumps.size());
  if (jumps.size() >= 2) {
    double sum_squares = 0;
    for (double jump : jumps) sum_squares += (jump - fit.mean) * (jump - fit.mean);
    fit.stddev = std::sqrt(sum_squares / static_cast<double>(jumps.size() - 1));
  }
  return fit;
}

}  // namespace depl::solver
