#include "depl/cli/command_run_executor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace depl::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kLogTailLines = 15;

// The environment of this process without the worker contract's variables: a DEPL_JOB or a
// WORLD_SIZE in the caller's shell must not turn a profiling run into an operator worker or a rank
// of some other group.
std::vector<std::string> standalone_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("DEPL_", 0) == 0 || name == "WORLD_SIZE" || name == "RANK" ||
        name == "LOCAL_RANK" || name == "MASTER_ADDR" || name == "MASTER_PORT") {
      continue;
    }
    out.push_back(entry);
  }
  return out;
}

std::string tail(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) return "  (it printed nothing on stderr)";
  std::string out;
  const std::size_t first = lines.size() > kLogTailLines ? lines.size() - kLogTailLines : 0;
  for (std::size_t i = first; i < lines.size(); ++i)
    out += (out.empty() ? "  " : "\n  ") + lines[i];
  return out;
}

struct Finished {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// Runs argv to its end, reading stdout and stderr side by side (a chatty child never blocks on
// a full pipe); kills it when `cancelled` turns true.
Expected<Finished> run_child(const std::vector<std::string>& args,
                             const std::atomic<bool>* cancelled) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return error(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = standalone_environment();
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return error(fmt::format("cannot start {}: {}", args[0], std::strerror(rc)));
  }
  Finished done;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&done.out, &done.err};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    if (!killed && cancelled != nullptr && cancelled->load()) {
      kill(pid, SIGTERM);
      killed = true;
    }
    if (poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (auto i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return error("interrupted: the worker was stopped");
  if (WIFEXITED(status)) done.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) done.signal = WTERMSIG(status);
  return done;
}

}  // namespace

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::istringstream in(command);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

CommandRunExecutor::CommandRunExecutor(std::vector<std::string> command, std::string work_dir,
                                       const std::atomic<bool>* cancelled)
    : command_(std::move(command)), work_dir_(std::move(work_dir)), cancelled_(cancelled) {}

Expected<std::vector<RunOutput>> CommandRunExecutor::execute(const std::vector<ProfileRun>& runs,
                                                             const RunFinished& finished) {
  if (command_.empty()) return error("--worker: the command is empty");
  std::error_code ec;
  if (work_dir_.empty() || !fs::is_directory(work_dir_, ec)) {
    return error(fmt::format("work directory \"{}\" does not exist", work_dir_));
  }
  std::string shown;
  for (const auto& word : command_) shown += (shown.empty() ? "" : " ") + word;
  std::vector<RunOutput> outputs;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ProfileRun& run = runs[i];
    const fs::path checkpoints = fs::path(work_dir_) / run.name;
    if (run.uses_checkpoint()) {
      fs::remove_all(checkpoints, ec);  // a stale checkpoint would be resumed
      fs::create_directories(checkpoints, ec);
      if (ec) {
        return error(
            fmt::format("{}: cannot create {}: {}", run.label, checkpoints.string(), ec.message()));
      }
    }
    RunOutput output;
    for (std::size_t s = 0; s < run.steps.size(); ++s) {
      std::vector<std::string> args = command_;
      for (auto& a : worker_arguments(run, s, checkpoints.string())) args.push_back(std::move(a));
      const std::string what = fmt::format("{}: {}", run.label, run.steps[s].what);
      auto done = run_child(args, cancelled_);
      if (!done) {
        fs::remove_all(checkpoints, ec);
        return error(fmt::format("{}: {}", what, done.error().message));
      }
      if (done->exit_code != 0) {
        fs::remove_all(checkpoints, ec);
        const std::string how = done->signal != 0 ? fmt::format("signal {}", done->signal)
                                                  : fmt::format("exit code {}", done->exit_code);
        return error(fmt::format("{}: `{}` failed with {}; the end of its stderr:\n{}", what, shown,
                                 how, tail(done->err)));
      }
      auto lines = parse_epoch_lines(done->out);
      if (!lines) return error(fmt::format("{}: {}", what, lines.error().message));
      if (lines->empty()) {
        return error(fmt::format(
            "{}: `{}` exited 0 without printing an epoch line on stdout: does it follow the "
            "standalone worker contract (docs/worker-contract.md section 6)? The end of its "
            "stderr:\n{}",
            what, shown, tail(done->err)));
      }
      output.push_back(std::move(*lines));
    }
    if (run.uses_checkpoint()) fs::remove_all(checkpoints, ec);
    outputs.push_back(std::move(output));
    if (finished) finished(i);
  }
  return outputs;
}

}  // namespace depl::cli
