// Runs one container of a simulated pod as a local process: argv and environment given, stdout
// and stderr appended to a log file, its own process group so a signal reaches its children too.
// The kubelet owns these; exit is reported once through a callback from a waiter thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl::devcluster {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the executable (a path, or a name found on PATH)
  std::vector<std::string> env;   // complete environment, "NAME=value" entries
  std::string working_dir;        // must exist
  std::string log_path;           // stdout and stderr are appended here
};

// How the process ended: exit_code is the exit status, or 128+signal when killed by a signal
// (what container runtimes report).
struct ProcessExit {
  int exit_code = 0;
  int signal = 0;  // 0 unless killed by a signal
};

class RunningProcess {
 public:
  // Starts the process; `on_exit` runs once on a private thread when it has exited and been
  // reaped. The callback must not destroy this object (post the work elsewhere instead).
  static Expected<std::unique_ptr<RunningProcess>> start(const ProcessSpec& spec,
                                                         std::function<void(ProcessExit)> on_exit);
  ~RunningProcess();  // kills the process group with SIGKILL if still running, joins the waiter

  RunningProcess(const RunningProcess&) = delete;
  RunningProcess& operator=(const RunningProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool exited() const;
  // Sends `signal` to the whole process group; harmless once the process has exited.
  void signal_group(int signal) const;

 private:
  struct Waiter;
  RunningProcess(pid_t pid, std::unique_ptr<Waiter> waiter);
  pid_t pid_;
  std::unique_ptr<Waiter> waiter_;
};

}  // namespace depl::devcluster
