// The short seeded runs of `kubectl-depl profile` as values, and the one interface that executes
// them: in this process (local_run_executor.hpp) or as pods in a cluster (pod_run_executor.hpp).
// Both build the worker's command line with worker_arguments() and read its output with
// parse_epoch_lines(), so the fit cannot tell where the runs happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl::cli {

// One invocation of a worker in its standalone mode (docs/worker-contract.md section 6).
struct WorkerStep {
  std::string what;  // for messages: "training eighth", "converting to full"
  std::string variant;
  int start_epoch = 0;  // epochs trained before (numbers the epochs)
  int epochs = 0;       // 0 with eval_initial: only evaluate
  bool eval_initial = false;
  // Write: train into the run's checkpoint directory; InitFrom: start from the checkpoint an
  // earlier step of the same run wrote there (converted to `variant`).
  enum class Checkpoint { None, Write, InitFrom } checkpoint = Checkpoint::None;
};

// One profiling run: its steps run in order and share a checkpoint directory.
struct ProfileRun {
  // Unique within a profile and deterministic (a DNS-1123 label: lower case, digits, '-'):
  // names the run's pods and its checkpoint directory. E.g. "full-n2000-s1".
  std::string name;
  std::string label;  // progress text: "full run 1/3", "switch eighth:full@4 run 2/3"
  std::uint64_t seed = 1;
  int samples = 0;  // the run trains on one clean shard "profile" of this many samples
  // and, when noisy_samples > 0, on a shard "noisy" of that many samples after it, a share
  // label_noise of whose labels are wrong (docs/worker-contract.md section 5).
  int noisy_samples = 0;
  double label_noise = 0;
  int validation_samples = 10000;
  std::string data_dir;  // where the worker finds Fashion-MNIST (inside the pod, in a cluster)
  std::vector<WorkerStep> steps;
  bool uses_checkpoint() const;
};

// The worker's flags for step `step` of `run` (without the program name). `checkpoint_dir` is
// the run's checkpoint directory as the worker sees it (ignored by steps that use none).
std::vector<std::string> worker_arguments(const ProfileRun& run, std::size_t step,
                                          const std::string& checkpoint_dir);

// One reported epoch: the worker's JSON line {"epoch","loss","seconds",...}, with the model's
// cost when the worker states it (computePerSampleGflop, parameterBytes).
struct EpochLine {
  int epoch = 0;
  double loss = 0;
  double seconds = 0;
  std::optional<double> compute_per_sample_gflop;
  std::optional<double> parameter_bytes;
};

// The epoch lines of a worker's output. Lines that start with '{' must be epoch lines; other
// lines are its log (a pod's log interleaves stderr with stdout) and are skipped.
Expected<std::vector<EpochLine>> parse_epoch_lines(std::string_view output);

using StepOutput = std::vector<EpochLine>;
using RunOutput = std::vector<StepOutput>;  // one per step, in order

class ProfileRunExecutor {
 public:
  virtual ~ProfileRunExecutor() = default;
  // Called once per finished run, with its index, on the thread that called execute().
  using RunFinished = std::function<void(std::size_t index)>;
  // Runs every run (in any order, possibly several at once) and returns their outputs in the
  // order of `runs`, or the first error, naming the run (and the pod, in a cluster). Every
  // output has one StepOutput per step.
  virtual Expected<std::vector<RunOutput>> execute(const std::vector<ProfileRun>& runs,
                                                   const RunFinished& finished) = 0;
};

}  // namespace depl::cli
