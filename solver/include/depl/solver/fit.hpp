// The estimation step (docs/depl-model.md section 6): fits a variant's loss profile from K
// profiling runs, and a switch's loss jump from losses measured around the switch.
#pragma once

#include <vector>

#include "depl/common/expected.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

// runs[k][t] = validation loss of run k after epoch t+1 (same data in every run); all runs the
// same length >= 3. `initial_loss` is the loss before training (epoch 0).
struct ProfileFit {
  LossProfile profile;  // reference_samples and data_exponent left for the caller to set
  double squared_error = 0;
};
Expected<ProfileFit> fit_loss_profile(const std::vector<std::vector<double>>& runs,
                                      double initial_loss);

// The profile's sensitivity to wrong labels, beta_v (`labelNoiseFloor`), from runs on data with
// `effective_samples` clean samples (E) of which a share `wrong_label_share` (W / N, > 0) of the
// labels are wrong: the least-squares fit of docs/depl-model.md section 2's mean curve from
// `profile.initial_loss` (the profile's other figures kept) to the runs' mean curve. The mean
// after t epochs is linear in beta, so the fit is closed-form; at least 0. runs[k][t] as above.
Expected<double> fit_label_noise_floor(const LossProfile& profile, double effective_samples,
                                       double wrong_label_share,
                                       const std::vector<std::vector<double>>& runs);

// before[k], after[k]: loss of run k right before and right after a switch.
struct JumpFit {
  double mean = 0;
  double stddev = 0;
};
Expected<JumpFit> fit_switch_jump(const std::vector<double>& before,
                                  const std::vector<double>& after);

}  // namespace depl::solver
