#include "sim/process_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

namespace depl::devcluster {

struct RunningProcess::Waiter {
  std::atomic<bool> exited{false};
  std::mutex mutex;  // held while reaping so signal_group never targets a recycled pid
  std::thread thread;
};

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Expected<std::unique_ptr<RunningProcess>> RunningProcess::start(
    const ProcessSpec& spec, std::function<void(ProcessExit)> on_exit) {
  if (spec.argv.empty()) return error("container has no executable to run");
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, spec.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Nothing else of ours leaks into a container: without this, every listening socket of the
  // process hosting the cluster (the API server, an in-process controller's endpoints) stays
  // open in each container, and a restarted server cannot bind its port again.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!spec.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, spec.working_dir.c_str());
  }
  // A fresh process group (so deletion can signal the whole tree), default signal handling and
  // an empty mask: the dev-cluster command blocks SIGINT/SIGTERM in its own threads.
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return error("cannot start " + spec.argv[0] + ": " + std::strerror(rc));
  }
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
