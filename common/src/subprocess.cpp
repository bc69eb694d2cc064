#include "depl/common/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

extern char** environ;

namespace depl {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Owns a pipe's two descriptors until they are handed out.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() = default;
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  int take_read() { return std::exchange(read, -1); }
  int take_write() { return std::exchange(write, -1); }
};

Expected<void> open_pipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return error(std::string("pipe: ") + std::strerror(errno));
  p.read = fds[0];
  p.write = fds[1];
  return {};
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::vector<std::string> environment(const SpawnOptions& options) {
  std::vector<std::string> out;
  if (options.inherit_env) {
    std::set<std::string, std::less<>> replaced;
    for (const auto& [name, value] : options.env) replaced.insert(name);
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      const std::string_view item(*entry);
      if (!replaced.contains(item.substr(0, item.find('=')))) out.emplace_back(item);
    }
  }
  for (const auto& [name, value] : options.env) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The file action that makes descriptor `fd` of the child what `redirect` says; `pipe_end` is the
// child's end when it is a pipe.
void add_redirect(posix_spawn_file_actions_t& actions, int fd, const Redirect& redirect,
                  int pipe_end) {
  switch (redirect.kind) {
    case Redirect::Kind::Inherit:
      break;
    case Redirect::Kind::Null:
      posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
      break;
    case Redirect::Kind::Pipe:
      posix_spawn_file_actions_adddup2(&actions, pipe_end, fd);
      break;
    case Redirect::Kind::File:
      posix_spawn_file_actions_addopen(
          &actions, fd, redirect.path.c_str(),
          fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (redirect.append ? O_APPEND : O_TRUNC), 0644);
      break;
    case Redirect::Kind::Stdout:
      posix_spawn_file_actions_adddup2(&actions, 1, fd);
      break;
  }
}

// Spawns with the child's ends of the pipes given (-1 where a stream is not a pipe).
Expected<pid_t> spawn_with(const SpawnOptions& options, int stdin_end, int stdout_end,
                           int stderr_end) {
  if (options.argv.empty() || options.argv[0].empty()) return error("no program to run");
  if (options.stdin_from.kind == Redirect::Kind::Stdout ||
      options.stdout_to.kind == Redirect::Kind::Stdout) {
    return error("cannot start " + options.argv[0] + ": only stderr can go where stdout goes");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  add_redirect(actions, 0, options.stdin_from, stdin_end);
  add_redirect(actions, 1, options.stdout_to, stdout_end);
  add_redirect(actions, 2, options.stderr_to, stderr_end);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!options.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.working_dir.c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&defaults, s);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> args = options.argv;
  std::vector<std::string> env = environment(options);
  auto argv = c_strings(args);
  auto envp = c_strings(env);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string where;
    if (!options.working_dir.empty()) where = " in " + options.working_dir;
    return error("cannot start " + options.argv[0] + where + ": " + std::strerror(rc));
  }
  return pid;
}

ExitStatus exit_status(int status, const rusage& usage) {
  ExitStatus out;
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.exit_code = 128 + out.signal;
  }
  out.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return out;
}

// A descriptor that becomes readable when the child ends, so that waiting with a timeout is a
// poll rather than a loop of sleeps; -1 where the kernel has none (before Linux 5.3).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#else
  (void)pid;
#endif
  return -1;
}

int poll_ms(steady_clock::time_point deadline) {
  const auto left = std::chrono::ceil<milliseconds>(deadline - steady_clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 1'000'000));
}

}  // namespace

Expected<pid_t> spawn_process(const SpawnOptions& options) {
  for (const Redirect* r : {&options.stdin_from, &options.stdout_to, &options.stderr_to}) {
    if (r->kind == Redirect::Kind::Pipe) {
      return error("spawn_process cannot give " + options.argv.at(0) + " a pipe: use Subprocess");
    }
  }
  return spawn_with(options, -1, -1, -1);
}

Expected<Subprocess> Subprocess::spawn(const SpawnOptions& options) {
  Pipe in, out, err;
  for (auto [stream, p] : {std::pair{&options.stdin_from, &in}, std::pair{&options.stdout_to, &out},
                           std::pair{&options.stderr_to, &err}}) {
    if (stream->kind != Redirect::Kind::Pipe) continue;
    if (auto opened = open_pipe(*p); !opened) return unexpected(opened.error());
  }
  auto pid = spawn_with(options, in.read, out.write, err.write);
  if (!pid) return unexpected(pid.error());
  Subprocess child;
  child.pid_ = *pid;
  child.pidfd_ = open_pidfd(*pid);
  child.group_ = options.own_process_group;
  child.stdin_fd_ = in.take_write();
  child.stdout_fd_ = out.take_read();
  child.stderr_fd_ = err.take_read();
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      group_(other.group_),
      reaped_(other.reaped_),
      status_(other.status_),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      stderr_fd_(std::exchange(other.stderr_fd_, -1)) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    group_ = other.group_;
    reaped_ = other.reaped_;
    status_ = other.status_;
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    stderr_fd_ = std::exchange(other.stderr_fd_, -1);
  }
  return *this;
}

Subprocess::~Subprocess() {
  release();
}

void Subprocess::release() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  if (pid_ > 0 && !reaped_) kill();
  close_fd(pidfd_);
  pid_ = -1;
}

void Subprocess::close_stdin() {
  close_fd(stdin_fd_);
}

void Subprocess::signal(int signal) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, signal);
}

void Subprocess::signal_group(int signal) {
  if (pid_ <= 0 || reaped_) return;
  if (group_) {
    ::killpg(pid_, signal);
  } else {
    ::kill(pid_, signal);
  }
}

std::optional<ExitStatus> Subprocess::try_wait() {
  if (pid_ <= 0) return std::nullopt;
  if (reaped_) return status_;
  int status = 0;
  rusage usage{};
  pid_t r;
  while ((r = ::wait4(pid_, &status, WNOHANG, &usage)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return std::nullopt;
  reaped_ = true;
  status_ = exit_status(status, usage);
  return status_;
}

ExitStatus Subprocess::wait() {
  if (pid_ <= 0 || reaped_) return status_;
  int status = 0;
  rusage usage{};
  while (::wait4(pid_, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  status_ = exit_status(status, usage);
  return status_;
}

std::optional<ExitStatus> Subprocess::wait_for(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    if (auto done = try_wait()) return done;
    if (pid_ <= 0 || steady_clock::now() >= deadline) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, poll_ms(deadline));
    } else {
      std::this_thread::sleep_for(
          std::min<steady_clock::duration>(milliseconds(5), deadline - steady_clock::now()));
    }
  }
}

ExitStatus Subprocess::kill() {
  signal_group(SIGKILL);
  return wait();
}

Expected<CommandResult> run_command(const SpawnOptions& options, const RunOptions& run) {
  auto child = Subprocess::spawn(options);
  if (!child) return unexpected(child.error());
  CommandResult result;
  const auto deadline =
      run.timeout ? steady_clock::now() + *run.timeout : steady_clock::time_point::max();
  auto cancel_if_asked = [&] {
    if (run.cancelled != nullptr && !result.cancelled && run.cancelled->load()) {
      child->signal_group(SIGTERM);
      result.cancelled = true;
    }
  };
  // How long one poll may wait: until the deadline, and 100 ms while a cancellation may come.
  auto step_ms = [&]() -> int {
    int ms = run.timeout ? poll_ms(deadline) : -1;
    if (run.cancelled != nullptr && !result.cancelled) ms = ms < 0 ? 100 : std::min(ms, 100);
    return ms;
  };

  const std::string_view input = run.input;
  std::size_t written = 0;
  if (child->stdin_fd() >= 0) {
    if (input.empty()) {
      child->close_stdin();
    } else {
      ::fcntl(child->stdin_fd(), F_SETFL, ::fcntl(child->stdin_fd(), F_GETFL) | O_NONBLOCK);
    }
  }
  pollfd fds[3] = {{child->stdin_fd(), POLLOUT, 0},
                   {child->stdout_fd(), POLLIN, 0},
                   {child->stderr_fd(), POLLIN, 0}};
  std::string* sinks[3] = {nullptr, &result.out, &result.err};
  auto open = [&] { return fds[0].fd >= 0 || fds[1].fd >= 0 || fds[2].fd >= 0; };
  char buffer[16384];
  while (open()) {
    cancel_if_asked();
    if (steady_clock::now() >= deadline) {
      result.timed_out = true;
      result.status = child->kill();
      return result;
    }
    const int ready = ::poll(fds, 3, step_ms());
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (fds[0].fd >= 0 && fds[0].revents != 0) {
      const ssize_t n = ::write(fds[0].fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        child->close_stdin();
        fds[0].fd = -1;
      }
    }
    for (int i = 1; i < 3; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // closed with the Subprocess
      }
    }
  }
  child->close_stdin();
  // The pipes are closed (or there were none): the child may still run.
  for (;;) {
    cancel_if_asked();
    const int ms = step_ms();
    if (ms < 0) {
      result.status = child->wait();
      return result;
    }
    if (auto status = child->wait_for(milliseconds(ms))) {
      result.status = *status;
      return result;
    }
    if (steady_clock::now() >= deadline) {
      result.timed_out = true;
      result.status = child->kill();
      return result;
    }
  }
}

}  // namespace depl
