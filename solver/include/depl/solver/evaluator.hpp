// The exact evaluator of docs/depl-model.md section 2: the one place that says what a plan
// costs, how long it takes, where its loss ends up and whether it is feasible. Every figure the
// project prints comes from here. Pure functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

struct PhaseFigures {
  double epoch_seconds = 0;    // compute + all-reduce per epoch, uninterrupted
  double compute_seconds = 0;  // per epoch
  double comm_seconds = 0;     // per epoch
  double staging_seconds = 0;
  double switch_seconds = 0;
  double startup_seconds = 0;
  // Interruptions (spot pools; all 0 but expected_epoch_seconds = epoch_seconds otherwise).
  double interruptions_per_hour = 0;  // n * lambda_k: of the phase, per hour of training
  double restart_seconds = 0;         // R: what one interruption costs beyond the lost work
  double expected_epoch_seconds = 0;  // E[Y]: rework and restarts included
  double interruptions = 0;           // expected over the phase
  double seconds = 0;                 // whole phase, expected
  double cost = 0;                    // whole phase, expected
  double loss_mean = 0;        // at the end of the phase
  double loss_variance = 0;    // of the loss reported at the end of the phase (nu_v^2 included)
};

struct Figures {
  bool feasible = false;
  bool meets_guarantee = false;
  double cost = 0;              // expected
  double duration_seconds = 0;  // expected
  double loss_mean = 0;
  double loss_stddev = 0;  // of the loss reported after the last epoch: sqrt(s2_T + nu^2)
  double loss_state_variance = 0;  // s2_T alone: what a re-plan from here carries on with
  double probability = 0;  // P(target by the deadline) = loss_probability * on_time_probability
  double loss_probability = 0;     // P_loss: of the final loss alone
  double on_time_probability = 1;  // P_time (1 without a deadline or without interruptions)
  double interruptions = 0;        // expected, over the plan
  double kappa = 0;                // of the guarantee in force: kappa(p / P_time)
  std::vector<PhaseFigures> phases;
  // One line per violated constraint, naming it ("deadline: 5400 s > 3600 s"). Empty iff feasible.
  std::vector<std::string> violations;
};

// One point of the predicted loss trajectory: after `epoch` epochs in total.
struct LossPoint {
  int epoch = 0;
  std::size_t phase = 0;
  double mean = 0;
  double variance = 0;
};

// kappa for the job's guarantee: Phi^-1(p) (Gaussian) or sqrt(p/(1-p)) (Cantelli).
double guarantee_kappa(const Target& target);
// The same at another probability (p / P_time when the deadline takes its share); +infinity
// at 1 or more.
double guarantee_kappa(const Target& target, double probability);
// The probability the doc reports for a final state (m, s2).
double reach_probability(const Target& target, double mean, double variance);
// True iff m + kappa*sqrt(s2) <= L* (tolerance 1e-12).
bool meets_guarantee(const Target& target, double mean, double variance);
// The guarantee when the plan is on time with probability `on_time` (> p): the loss must reach
// the target with probability p / on_time.
bool meets_guarantee(const Target& target, double mean, double variance, double on_time);

// What interruptions do to the epochs of one phase (docs/depl-model.md section 2,
// "Interruptions"): attempts of epoch_seconds until one is not interrupted, each interrupted one
// losing the time it ran plus restart_seconds.
struct EpochInterruptions {
  double rate = 0;             // Lambda: interruptions per second of training (0: none)
  double restart_seconds = 0;  // R
  double epoch_seconds = 0;    // epoch_s, uninterrupted

  // E[Y]: epoch_seconds without interruptions; +infinity when too large to represent.
  double expected_seconds() const;
  // Expected interruptions per epoch: exp(Lambda * epoch_s) - 1.
  double expected_interruptions() const;
  // k(theta) = log E[exp(theta * Y)] for theta >= 0; +infinity where it diverges.
  double log_mgf(double theta) const;
  // The theta > 0 where k diverges (+infinity without interruptions).
  double divergence() const;
};
// Lambda = workers * lambda_k / 3600, R = u_k + C_v / beta_obj_k.
EpochInterruptions epoch_interruptions(const ModelVariant& model, const Pool& pool, int workers,
                                       double epoch_seconds);

// A plan's duration as independent terms: fixed seconds plus, per phase, its epochs.
struct DurationTerms {
  double fixed_seconds = 0;
  std::vector<std::pair<int, EpochInterruptions>> phases;  // (epochs, their interruptions)
};
// P_time: the probability of finishing by `deadline` by Chernoff's bound; 1 or 0 when no phase
// is interrupted (then the duration is deterministic).
double on_time_probability(const DurationTerms& terms, double deadline);

// Loss state after one epoch of variant `model` on data with `effective_samples` (E, clean
// samples) of which a share `wrong_label_share` (W / N) of all the samples' labels are wrong.
struct LossState {
  double mean = 0;
  double variance = 0;
};
LossState epoch_step(const ModelVariant& model, double effective_samples, double wrong_label_share,
                     LossState state);
// The variance of the loss the workers report in a state after an epoch of a variant with this
// profile: the state's (persistent) variance plus the report's own transient noise, nu_v^2.
double reported_variance(const LossProfile& profile, double state_variance);
// Where a plan starts whose first variant has this profile: its initial loss, with the spread of
// the curve's start between seeds.
LossState initial_loss_state(const LossProfile& profile);
// Where the loss's trajectory stands after a variant with this profile reported `loss`: at the
// reported value, up to that report's own transient noise (nu_v^2), which is all the spread a
// plan that continues from it starts with.
LossState observed_loss_state(const LossProfile& profile, double loss);
// The floor an epoch decays towards: f_v (N_ref_v / E)^alpha_v + beta_v W / N.
double loss_floor(const LossProfile& profile, double effective_samples, double wrong_label_share);
// Per-epoch time of `workers` workers of `model` in `pool` on `samples` (N) samples per epoch.
double epoch_seconds(const Problem& problem, const ModelVariant& model, const Pool& pool,
                     int workers, double samples);
// Staging time of the datasets in `datasets` into `pool`.
double staging_seconds(const Problem& problem, const std::vector<std::size_t>& datasets,
                       const Pool& pool);

// Samples per epoch (N), effective samples (E: q_d (1 - epsilon_d) n_d summed, the clean samples
// weighted by quality) and the share of wrong labels (W / N, W = epsilon_d n_d summed) of a
// dataset selection.
double total_samples(const Problem& problem, const std::vector<std::size_t>& datasets);
double effective_samples(const Problem& problem, const std::vector<std::size_t>& datasets);
double wrong_label_share(const Problem& problem, const std::vector<std::size_t>& datasets);
// One dataset's part of E and of W.
double effective_samples(const Dataset& dataset);
double wrong_labels(const Dataset& dataset);

// Evaluates a plan exactly. Structural errors in the plan (index out of range, no phases) are
// reported as violations, never as a crash.
Figures evaluate(const Problem& problem, const Plan& plan);

// The predicted loss after every epoch of the plan (epoch 0 = the start state).
std::vector<LossPoint> loss_trajectory(const Problem& problem, const Plan& plan);

}  // namespace depl::solver
