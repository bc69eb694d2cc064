// The real depl-controller binary as a child process of an end-to-end test: its output goes to a
// log file the test can search, and it can be killed with SIGKILL at any moment, the way a
// crashed or OOM-killed pod dies (no shutdown code runs, the Lease is not released).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "depl/common/subprocess.hpp"

namespace depl::e2e {

class ControllerProcess {
 public:
  // Starts `binary` with `args`, stdout and stderr appended to `log_file`, stdin from /dev/null,
  // no descriptor of the test's but those, in a process group of its own. started() tells.
  ControllerProcess(const std::filesystem::path& binary, const std::vector<std::string>& args,
                    std::filesystem::path log_file);
  ~ControllerProcess() = default;  // SIGKILL and reap when still running
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;

  bool started() const { return child_.has_value(); }
  int pid() const { return child_ ? child_->pid() : -1; }
  // Whether it has not exited yet (reaps it when it has).
  bool running();
  void signal(int sig);
  // Reaps it, waiting at most `timeout` (then SIGKILL); the exit code, 128 + signal when
  // signalled, -1 after the timeout.
  int wait(std::chrono::milliseconds timeout);
  // Its output so far.
  std::string log() const;
  const std::filesystem::path& log_file() const { return log_file_; }

 private:
  std::optional<Subprocess> child_;
  std::filesystem::path log_file_;
};

// A loopback port that was free a moment ago, for a listener that must keep one address across
// restarts. It lies in [10000, 20000), below the kernel's ephemeral range and the controller's
// rendezvous ports, so that neither a port-0 listener nor an outgoing connection of a test
// running beside this one takes it before the listener binds it (as they could a port bound to 0
// and closed again); successive calls in one process give different ports. 0 when none is free.
std::uint16_t free_loopback_port();

}  // namespace depl::e2e
