// Executes profiling runs one after another in this process: the worker's own command-line
// parser reads worker_arguments() and depl::worker::run_worker trains, so a local run is the
// same run a pod makes with the same arguments.
#pragma once

#include <string>

#include "depl/cli/profile_runs.hpp"

namespace depl::cli {

class LocalRunExecutor final : public ProfileRunExecutor {
 public:
  // `work_dir` must exist and be writable: switch runs keep their checkpoints under it (and
  // remove them when done).
  explicit LocalRunExecutor(std::string work_dir);
  Expected<std::vector<RunOutput>> execute(const std::vector<ProfileRun>& runs,
                                           const RunFinished& finished) override;

 private:
  std::string work_dir_;
};

}  // namespace depl::cli
