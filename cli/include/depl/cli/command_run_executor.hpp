// Executes profiling runs one after another as child processes of a worker command (e.g.
// `/usr/bin/python3 examples/pytorch/train.py`): the command's words, then worker_arguments();
// the epoch lines are read from its stdout. Any worker that follows the standalone half of the
// worker contract (docs/worker-contract.md section 6) can be profiled this way.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "depl/cli/profile_runs.hpp"

namespace depl::cli {

// "a  b c" -> {"a", "b", "c"}: the words of a --worker command (no quoting; paths with spaces
// need a wrapper script).
std::vector<std::string> split_command(const std::string& command);

class CommandRunExecutor final : public ProfileRunExecutor {
 public:
  // `command` is the program and its leading arguments (the program is searched on PATH).
  // `work_dir` must exist and be writable: switch runs keep their checkpoints under it.
  // `cancelled`, when set (e.g. by a SIGINT handler), stops the child and fails execute().
  CommandRunExecutor(std::vector<std::string> command, std::string work_dir,
                     const std::atomic<bool>* cancelled = nullptr);
  Expected<std::vector<RunOutput>> execute(const std::vector<ProfileRun>& runs,
                                           const RunFinished& finished) override;

 private:
  std::vector<std::string> command_;
  std::string work_dir_;
  const std::atomic<bool>* cancelled_;
};

}  // namespace depl::cli
