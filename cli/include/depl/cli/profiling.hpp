// `kubectl-depl profile`: the estimation step of docs/depl-model.md section 6 on any worker that
// follows the standalone half of the worker contract (docs/worker-contract.md section 6): the
// reference worker, or e.g. the PyTorch example. Runs K short seeded trainings per variant (on a
// clean shard of N Fashion-MNIST samples) through a ProfileRunExecutor (in this process, as a
// local command, or as pods), fits each variant's loss profile with solver::fit_loss_profile, and
// measures each requested switch (train FROM for EPOCH epochs, convert the checkpoint to TO,
// evaluate) to fit its loss jump with solver::fit_switch_jump.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "depl/cli/profile_runs.hpp"
#include "depl/common/expected.hpp"
#include "depl/solver/fit.hpp"

namespace depl::cli {

// `--switch FROM:TO@EPOCH`: switch after EPOCH epochs of FROM.
struct SwitchPoint {
  std::string from;
  std::string to;
  int epoch = 0;
};
Expected<SwitchPoint> parse_switch_point(std::string_view text);

struct ProfileRequest {
  std::vector<std::string> variants{"full", "half", "quarter", "eighth"};
  int runs = 3;        // K seeded runs per variant and per switch (seeds seed .. seed+K-1)
  int epochs = 12;     // epochs per profiling run (the fit needs >= 3)
  int samples = 2000;  // training samples per epoch: one clean shard of the training set
  // Also profile every variant at this many samples per epoch and fit dataExponent from the two
  // floors (0: don't; dataExponent is then 0).
  int exponent_samples = 0;
  // Also profile every variant on `samples` clean samples plus a shard of this many samples
  // with a share `noisy_label_share` of wrong labels, and fit labelNoiseFloor from that curve
  // (0: don't; labelNoiseFloor is then 0).
  int noisy_samples = 0;
  double noisy_label_share = 0.3;
  int validation_samples = 10000;  // the validation loss is over the first N test images
  std::uint64_t seed = 1;
  std::vector<SwitchPoint> switches;
  // Where the worker reads Fashion-MNIST: on this machine, or inside the pods in a cluster.
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string work_dir;  // local runs: switch checkpoints; must exist and be writable
  // The variants the worker knows (names are checked against them before any run); empty for a
  // worker the command does not know: any DNS-1123 label is a name then.
  std::vector<std::string> known_variants{"full", "half", "quarter", "eighth"};
  std::string worker = "depl-reference-worker";         // names the worker in the YAML's comments
  std::string image = "depl.dev/reference-worker:0.1";  // each model's `image` in the YAML
};

// The reference worker's variants (the default of ProfileRequest::known_variants).
const std::vector<std::string>& reference_worker_variants();

// Checks the numbers and names before any training starts (every problem, one per line).
Expected<void> validate_profile_request(const ProfileRequest& request);

struct VariantProfile {
  std::string name;
  double width = 0;  // the reference worker's hidden width as a fraction of full; 0: unknown
  double compute_per_sample_gflop = 0;    // forward + backward, as the worker's lines state it
  double parameter_bytes = 0;             // float32 gradients exchanged per step, likewise
  std::vector<double> initial_losses;     // per run, before the first epoch
  std::vector<std::vector<double>> runs;  // runs[k][t]: validation loss after epoch t+1
  double epoch_seconds = 0;               // mean wall time of one training epoch here
  // The fitted profile; reference_samples = the samples per epoch trained on (clean data, so
  // E = N). data_exponent: from the floor at exponent_samples when measured, else 0.
  solver::ProfileFit fit;
  int exponent_samples = 0;   // the second data size, 0 when not measured
  double exponent_floor = 0;  // the floor fitted there
  // label_noise_floor: from the runs with a noisy shard when measured (noisy_share > 0), else 0.
  double noisy_share = 0;       // W / N of those runs, 0 when not measured
  double noisy_final_loss = 0;  // their mean loss after the last epoch
};

// The model's floor is f * (N_ref / E)^alpha: with floor f at `samples` and `other_floor` at
// `other_samples`, alpha = ln(f / other_floor) / ln(other_samples / samples), at least 0.
void set_data_exponent(VariantProfile& variant, int samples, int other_samples, double other_floor);

// labelNoiseFloor from K runs on `samples` clean samples plus `noisy_samples` with a share
// `label_share` of wrong labels (solver::fit_label_noise_floor; 0 when it cannot be fitted).
void set_label_noise_floor(VariantProfile& variant, int samples, int noisy_samples,
                           double label_share, const std::vector<std::vector<double>>& runs);

struct SwitchProfile {
  SwitchPoint point;
  std::vector<double> before;  // per run: validation loss of FROM after EPOCH epochs
  std::vector<double> after;   // the same weights converted to TO, before any training
  solver::JumpFit jump;
};

struct ProfileResult {
  ProfileRequest request;
  std::vector<VariantProfile> variants;
  std::vector<SwitchProfile> switches;
};

// After every training run: runs done, runs in total, and what just ran ("full run 2/3").
using ProfileProgress = std::function<void(int done, int total, const std::string& what)>;

// Every run a (valid) request makes, in order: K runs per variant, then per variant at
// exponent_samples, then per variant with the noisy shard, then K runs per switch (two steps
// each: train FROM, convert to TO).
std::vector<ProfileRun> profile_runs(const ProfileRequest& request);

// Runs everything through `executor` and fits. Errors name the variant or switch and the step
// that failed (unknown variant, a worker or pod that failed, a fit that fails on the curve).
Expected<ProfileResult> run_profile(const ProfileRequest& request, ProfileRunExecutor& executor,
                                    const ProfileProgress& progress = {});

// In this process (LocalRunExecutor on request.work_dir, data from request.data_dir).
Expected<ProfileResult> run_profile(const ProfileRequest& request,
                                    const ProfileProgress& progress = {});

}  // namespace depl::cli
