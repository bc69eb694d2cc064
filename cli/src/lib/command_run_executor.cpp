#include "depl/cli/command_run_executor.hpp"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "depl/common/subprocess.hpp"

extern char** environ;

namespace depl::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kLogTailLines = 15;

// The environment of this process without the worker contract's variables: a DEPL_JOB or a
// WORLD_SIZE in the caller's shell must not turn a profiling run into an operator worker or a rank
// of some other group.
std::vector<std::pair<std::string, std::string>> standalone_environment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (name.rfind("DEPL_", 0) == 0 || name == "WORLD_SIZE" || name == "RANK" ||
        name == "LOCAL_RANK" || name == "MASTER_ADDR" || name == "MASTER_PORT") {
      continue;
    }
    out.emplace_back(name, eq == std::string::npos ? "" : entry.substr(eq + 1));
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

// Runs argv to its end, reading stdout and stderr side by side; stops it (SIGTERM) when
// `cancelled` turns true.
Expected<CommandResult> run_child(const std::vector<std::string>& args,
                                  const std::atomic<bool>* cancelled) {
  SpawnOptions options;
  options.argv = args;
  options.env = standalone_environment();
  options.inherit_env = false;
  options.stdout_to = Redirect::pipe();
  options.stderr_to = Redirect::pipe();
  auto done = run_command(options, {.cancelled = cancelled});
  if (done && done->cancelled) return error("interrupted: the worker was stopped");
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
      if (done->status.exit_code != 0) {
        fs::remove_all(checkpoints, ec);
        const ExitStatus& status = done->status;
        const std::string how = status.signal != 0 ? fmt::format("signal {}", status.signal)
                                                   : fmt::format("exit code {}", status.exit_code);
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
