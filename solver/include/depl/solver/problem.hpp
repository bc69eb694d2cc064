// The input of the DepL solver: a job (target, datasets, model variants, allowed switches,
// training limits) and the node pools it may use. Plain values; see docs/depl-model.md for the
// meaning of every field. A Problem is assumed valid (parse_problem validates it once).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace depl::solver {

enum class Guarantee { Gaussian, DistributionFree };

// Whether a pool's capacity can be reclaimed while a phase runs (docs/depl-model.md section 1).
enum class CapacityType { OnDemand, Spot };
// The interruption rate a pool is given when nothing says otherwise, per worker-hour.
inline constexpr double kDefaultSpotInterruptionsPerHour = 0.1;
double default_interruptions_per_hour(CapacityType type);
const char* to_string(CapacityType type);

struct Target {
  double loss = 0;                              // L*
  double probability = 0.9;                     // p
  std::optional<double> deadline_seconds;       // T_max
  std::optional<double> budget;                 // C_max
  Guarantee guarantee = Guarantee::Gaussian;
};

struct Dataset {
  std::string name;
  std::int64_t samples = 0;               // n_d
  double quality = 1.0;                   // q_d
  double size_bytes = 0;                  // b_d
  std::vector<std::string> locality;      // pools where d is local; empty = remote storage
  double label_noise = 0;                 // epsilon_d: the share of wrong labels, in [0, 1)
};

struct LossProfile {
  double initial_loss = 0;       // l0_v
  double floor_loss = 0;         // f_v
  double decay_per_epoch = 0.5;  // r_v
  double noise_stddev = 0;       // sigma_v: the persistent noise one epoch adds
  double reference_samples = 0;  // N_ref_v, resolved at parse time (default E(all datasets))
  double data_exponent = 0;      // alpha_v
  double label_noise_floor = 0;  // beta_v: loss added to the floor per unit share of wrong labels
  // nu_v: the transient noise of a reported loss (SGD's jitter around the trajectory, seen once)
  double validation_noise_stddev = 0;
  double initial_stddev = 0;  // s0_v: the spread of the curve's start between seeds
};

struct ModelVariant {
  std::string name;
  std::string image;
  double compute_per_sample_gflop = 0;  // w_v
  double parameter_bytes = 0;           // P_v
  int gpus_per_worker = 1;              // g_v
  LossProfile loss;
  double checkpoint_bytes = 0;  // C_v, resolved at parse time (default 2 * P_v)
};

struct Switch {
  std::string from;
  std::string to;
  double jump_mean = 0;         // j
  double jump_stddev = 0;       // s_j
  double overhead_seconds = 0;  // tau
};

struct Training {
  int batch_size = 256;  // B
  int max_epochs = 200;  // H
  int max_switches = 2;  // S
  int min_workers = 1;
  int max_workers = 8;
};

struct Pool {
  std::string name;
  std::string gpu_type;
  int gpus = 0;                          // G_k
  double gpu_gflops = 0;                 // F_k
  double price_per_gpu_hour = 0;         // pi_k
  double bandwidth = 0;                  // beta_k, bytes/s inside the pool
  double storage_bandwidth = 0;          // beta_obj_k, bytes/s from remote storage
  double startup_seconds = 0;            // u_k
  std::map<std::string, double> inter_pool;  // source pool name -> bytes/s into this pool
  int nodes = 0;                         // informational (0 = not given)
  int gpus_per_node = 0;                 // informational (0 = not given)
  CapacityType capacity_type = CapacityType::OnDemand;
  double interruptions_per_hour = 0;  // lambda_k, per worker-hour
};

// Where a job already is when it is re-planned mid-run: the variant and pool of the phase that
// was running and the observed loss (at an observed point the variance is that variant's
// nu^2: the report's own transient noise around the loss's trajectory). Epoch, switch, time and
// budget allowances in the Problem are then the *remaining* ones.
//
// `workers` is how many workers that phase runs with (0: none run now). A plan's first phase
// with the same variant, pool and workers *continues* the running phase: its pods keep running,
// so it pays no startup and no staging (and, being the same variant, no switch).
struct StartState {
  std::string model;
  std::string pool;  // empty: no pool yet (data must be staged)
  double loss_mean = 0;
  double loss_variance = 0;
  int workers = 0;
};

struct Problem {
  Target target;
  std::vector<Dataset> datasets;
  std::vector<ModelVariant> models;
  std::vector<Switch> switching;
  Training training;
  std::vector<Pool> pools;
  std::optional<StartState> start;
  // When true the solver trains on all of `datasets` instead of choosing a subset: a re-plan
  // keeps the data the job has already been training on.
  bool fixed_datasets = false;

  // Lookups by name; -1 when absent.
  int model_index(const std::string& name) const;
  int pool_index(const std::string& name) const;
  int dataset_index(const std::string& name) const;
  // The listed switch from -> to, or nullptr when that switch is not allowed.
  const Switch* find_switch(const std::string& from, const std::string& to) const;
  // True iff phase `phase_index` of a plan, placed as (model, pool, workers), continues the
  // running phase of `start` (see StartState): only a plan's first phase can.
  bool continues_start(std::size_t phase_index, std::size_t model, std::size_t pool,
                       int workers) const;
};

}  // namespace depl::solver
