// Everything one run of depl-reference-worker needs, from command-line flags (standalone, e.g. on
// a laptop) or, when DEPL_JOB is set, from the operator's environment contract
// (docs/worker-contract.md). The training code sees only this struct, so it cannot tell the two
// apart: the same binary runs unchanged in both places.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/worker/fashion_mnist.hpp"
#include "depl/worker/variant.hpp"

namespace depl::worker {

// What the operator set, present only in operator mode.
struct OperatorContext {
  std::string job;
  std::string ns;
  int phase = 0;
  std::string progress_url;
  std::string progress_token;
  std::string loss_profile;  // JSON, informational (the profile the plan assumed)
  // How long rank 0 retries a report the endpoint does not take (DEPL_PROGRESS_RETRY_SECONDS).
  std::chrono::milliseconds progress_retry{std::chrono::seconds(300)};
};

struct WorkerConfig {
  std::string data_dir = kDefaultFashionMnistDir;
  Variant variant{"full", 1.0};
  int start_epoch = 0;  // epochs completed before this run (numbers the epochs it trains)
  int epochs = 10;      // epochs this run trains: it stops after epoch start_epoch + epochs
  std::vector<std::string> datasets;  // shard names; empty = every shard
  std::string shards = "6";           // a shard count or a shards file (see shards.hpp)
  std::string label_noise;            // "shard=fraction,..."
  std::uint64_t seed = 1;
  std::string checkpoint_dir;  // resume from here if a checkpoint exists; write one every epoch
  std::string init_from;       // start from this checkpoint's weights (file or directory)
  int world_size = 1;
  int rank = 0;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  std::string listen_address = "0.0.0.0";
  std::function<void(std::uint16_t)> on_listening;  // rank 0, for callers that pick port 0
  // True once the worker has been told to stop (SIGTERM: its pod is being deleted, its node
  // reclaimed). Every rank then stops after the same step and rank 0 checkpoints it. Empty:
  // never asked.
  std::function<bool()> termination_requested;
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(120)};
  int batch_size = 128;  // global: samples per SGD step over all ranks
  float learning_rate = 0.05f;
  float momentum = 0.9f;
  int test_samples = 10000;   // validation: the first N images of the test set
  bool eval_initial = false;  // also report the loss before the first epoch (e.g. after a switch);
                              // with epochs = 0 the run only evaluates
  bool bench = false;         // time epochs instead of training a job
  std::optional<OperatorContext> operator_context;
};

// Looks up one environment variable; injectable so tests never touch the process environment.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentLookup process_environment();

struct ParsedCommandLine {
  WorkerConfig config;
  std::string help;  // non-empty when --help was asked for: print it and exit 0
};

// Flags first; then, when DEPL_JOB is set, the operator contract overrides them.
Expected<ParsedCommandLine> parse_worker_command_line(int argc, const char* const* argv,
                                                      const EnvironmentLookup& env);

// The operator contract: DEPL_* variables and the torch.distributed ones. Every error names the
// variable and says what is wrong with it.
Expected<void> apply_operator_environment(WorkerConfig& config, const EnvironmentLookup& env);

// Checks the ranges of the numeric settings (whichever source they came from).
Expected<void> validate_worker_config(const WorkerConfig& config);

}  // namespace depl::worker
