#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

extern char** environ;

namespace depl::devcluster::testing {

namespace {

std::vector<std::string> merged_env(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          int stdin_fd, int stdout_fd, int stderr_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_env(env);
  auto a = c_strings(args);
  auto e = c_strings(envs);
  pid_t pid = -1;
  if (posix_spawnp(&pid, a[0], &actions, &attr, a.data(), e.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return pid;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdin_text, std::chrono::milliseconds timeout) {
  CommandResult result;
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  const int pid = spawn(argv, env, in_pipe[0], out_pipe[1], out_pipe[1]);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (pid < 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    result.output = "cannot start " + argv[0];
    return result;
  }
  // Feed stdin from a thread so a chatty child cannot deadlock us.
  std::thread feeder([fd = in_pipe[1], stdin_text] {
    size_t off = 0;
    while (off < stdin_text.size()) {
      const ssize_t n = write(fd, stdin_text.data() + off, stdin_text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool killed = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      killpg(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (r <= 0) continue;
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  feeder.join();
  int status = 0;
  waitpid(pid, &status, 0);
  if (!killed) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return result;
}

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env, bool separate_stderr) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return;
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_ = spawn(argv, env, devnull, out_pipe[1], separate_stderr ? 2 : out_pipe[1]);
  close(devnull);
  close(out_pipe[1]);
  out_fd_ = out_pipe[0];
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    killpg(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

std::optional<std::string> Subprocess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || out_fd_ < 0) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) {
      close(out_fd_);
      out_fd_ = -1;
      return std::nullopt;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Subprocess::signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int Subprocess::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    const pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      killpg(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      return -1;
    }
    // Draining stdout keeps a chatty child from blocking on a full pipe.
    read_line(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

}  // namespace depl::devcluster::testing
