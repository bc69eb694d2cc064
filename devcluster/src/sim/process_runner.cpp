#include "sim/process_runner.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include "depl/common/subprocess.hpp"

namespace depl::devcluster {

struct RunningProcess::Waiter {
  std::atomic<bool> exited{false};
  std::mutex mutex;  // held while reaping so signal_group never targets a recycled pid
  std::thread thread;
};

Expected<std::unique_ptr<RunningProcess>> RunningProcess::start(
    const ProcessSpec& spec, std::function<void(ProcessExit)> on_exit) {
  if (spec.argv.empty()) return error("container has no executable to run");
  SpawnOptions options;
  options.argv = spec.argv;
  options.inherit_env = false;
  for (const auto& entry : spec.env) {
    const auto eq = entry.find('=');
    options.env.emplace_back(entry.substr(0, eq),
                             eq == std::string::npos ? "" : entry.substr(eq + 1));
  }
  options.working_dir = spec.working_dir;
  options.stdout_to = Redirect::file(spec.log_path);
  options.stderr_to = Redirect::to_stdout();
  // A group of its own, so that deletion signals the whole tree. spawn_process also closes every
  // other descriptor in the child (a container holding the API server's listening socket would
  // keep its port bound after a restart) and resets the signal handling that the dev-cluster
  // command blocks in its threads.
  options.own_process_group = true;
  auto spawned = spawn_process(options);
  if (!spawned) return unexpected(spawned.error());
  const pid_t pid = *spawned;
  auto waiter = std::make_unique<Waiter>();
  Waiter* w = waiter.get();
  waiter->thread = std::thread([w, pid, on_exit = std::move(on_exit)] {
    int status = 0;
    ProcessExit result;
    for (;;) {
      // WNOWAIT first: the pid stays reserved until we mark it exited under the mutex.
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0) break;
      if (errno != EINTR) break;
    }
    {
      std::lock_guard lock(w->mutex);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      w->exited = true;
    }
    if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.signal = WTERMSIG(status);
      result.exit_code = 128 + result.signal;
    }
    if (on_exit) on_exit(result);
  });
  return std::unique_ptr<RunningProcess>(new RunningProcess(pid, std::move(waiter)));
}

RunningProcess::RunningProcess(pid_t pid, std::unique_ptr<Waiter> waiter)
    : pid_(pid), waiter_(std::move(waiter)) {}

RunningProcess::~RunningProcess() {
  signal_group(SIGKILL);
  if (waiter_->thread.joinable()) waiter_->thread.join();
}

bool RunningProcess::exited() const {
  return waiter_->exited;
}

void RunningProcess::signal_group(int signal) const {
  // Even after the leader is reaped, children left in its group are signalled: Linux does not
  // hand out a pid that is still some group's id, so the group cannot be someone else's.
  std::lock_guard lock(waiter_->mutex);
  ::killpg(pid_, signal);
}

}  // namespace depl::devcluster
