#include "depl/cli/local_run_executor.hpp"

#include <filesystem>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "depl/worker/worker_config.hpp"
#include "depl/worker/worker_run.hpp"

namespace depl::cli {

namespace fs = std::filesystem;

namespace {

// The worker's command-line parser turns the arguments into its config, exactly as in a pod.
Expected<StepOutput> run_step(const ProfileRun& run, std::size_t step,
                              const std::string& checkpoint_dir) {
  std::vector<std::string> args = worker_arguments(run, step, checkpoint_dir);
  args.insert(args.begin(), "depl-reference-worker");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  // No environment: DEPL_JOB in this shell must not turn the run into an operator worker.
  auto parsed = worker::parse_worker_command_line(
      static_cast<int>(argv.size()), argv.data(),
      [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
  if (!parsed) return unexpected(parsed.error());
  std::ostringstream out;
  auto ran = worker::run_worker(parsed->config, out);
  if (!ran) return unexpected(ran.error());
  return parse_epoch_lines(out.str());
}

}  // namespace

LocalRunExecutor::LocalRunExecutor(std::string work_dir) : work_dir_(std::move(work_dir)) {}

Expected<std::vector<RunOutput>> LocalRunExecutor::execute(const std::vector<ProfileRun>& runs,
                                                           const RunFinished& finished) {
  std::error_code ec;
  if (work_dir_.empty() || !fs::is_directory(work_dir_, ec)) {
    return error(fmt::format("work directory \"{}\" does not exist", work_dir_));
  }
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
      auto lines = run_step(run, s, checkpoints.string());
      if (!lines) {
        fs::remove_all(checkpoints, ec);
        return error(
            fmt::format("{}: {}: {}", run.label, run.steps[s].what, lines.error().message));
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
