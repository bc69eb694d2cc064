// depl-reference-worker: a real (small) distributed trainer for DepL. Standalone it trains from its
// flags and prints one JSON line per epoch; with DEPL_JOB set it follows the operator's worker
// contract (docs/worker-contract.md). Logs go to stderr, results to stdout.
#include <iostream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "depl/worker/progress_client.hpp"
#include "depl/worker/worker_config.hpp"
#include "depl/worker/worker_run.hpp"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_st("depl-reference-worker"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");

  auto parsed =
      depl::worker::parse_worker_command_line(argc, argv, depl::worker::process_environment());
  if (!parsed) {
    std::cerr << "depl-reference-worker: " << parsed.error().message << '\n';
    return 2;
  }
  if (!parsed->help.empty()) {
    std::cout << parsed->help;
    return 0;
  }
  const auto& config = parsed->config;
  if (config.bench) {
    auto ok = depl::worker::run_benchmark(config, std::cout);
    if (!ok) {
      std::cerr << "depl-reference-worker: " << ok.error().message << '\n';
      return 1;
    }
    return 0;
  }
  auto summary = depl::worker::run_worker(config, std::cout);
  if (!summary) {
    spdlog::error("event=failed error=\"{}\"", summary.error().message);
    std::cerr << "depl-reference-worker: " << summary.error().message << '\n';
    return 1;
  }
  if (summary->progress_unreachable) {
    spdlog::error("event=progress_unreachable rank={} last_epoch={} exit_code={}", config.rank,
                  summary->last_epoch, depl::worker::kExitProgressUnreachable);
    return depl::worker::kExitProgressUnreachable;
  }
  if (config.rank == 0) {
    spdlog::info("event=done first_epoch={} last_epoch={} stopped_by_controller={} loss={:.4f}",
                 summary->first_epoch, summary->last_epoch, summary->stopped_by_controller,
                 summary->last.loss);
  } else {  // only rank 0 evaluates
    spdlog::info("event=done rank={} first_epoch={} last_epoch={} stopped_by_controller={}",
                 config.rank, summary->first_epoch, summary->last_epoch,
                 summary->stopped_by_controller);
  }
  return 0;
}
