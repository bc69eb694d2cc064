// Runs a command for tests (kubectl, the dev-cluster CLI) on common's subprocess utility:
// captured stdout+stderr, an exit code, a hard timeout, and line-by-line reading for
// long-running commands like `kubectl get -w`. Each command leads a process group of its own.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "depl/common/subprocess.hpp"

namespace depl::devcluster::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed at the timeout, or it could not start
  std::string output;  // stdout and stderr interleaved, or why it could not start
};

// Runs `argv` to completion (killing it after `timeout`). `env` entries are added to (and
// override) the test's environment; `stdin_text` is fed on stdin.
CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& stdin_text = "",
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A running command whose output is read as it comes.
class Subprocess {
 public:
  Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             bool separate_stderr = false);
  ~Subprocess() = default;  // SIGKILL to its group and reap if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool started() const { return child_.has_value(); }
  int pid() const { return child_ ? child_->pid() : -1; }
  // The next complete line of stdout (without '\n'), or nullopt at EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Everything read so far that is not yet returned as a line.
  const std::string& pending() const { return buffer_; }
  void signal(int sig);
  // Waits for exit (killing after `timeout`), returns the exit code (128+signal if signalled),
  // -1 after the timeout. What it prints meanwhile is kept in pending().
  int wait(std::chrono::milliseconds timeout);

 private:
  // Reads what stdout has within `timeout` into buffer_; false at EOF.
  bool fill(std::chrono::milliseconds timeout);

  std::optional<depl::Subprocess> child_;
  std::string buffer_;
};

}  // namespace depl::devcluster::testing
